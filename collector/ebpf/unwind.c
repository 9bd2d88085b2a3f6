/*
 * unwind: table cache and BPF map upkeep for the CFI stack walker.
 *
 * The row array (unw_rows) is mmap'd a table's pages at a time: a table is
 * copied in with memcpy, no syscall per row, and unmapped again (mapped, the
 * whole array would count in the daemon's resident memory). Space in it is handed out first-fit from a sorted list of
 * free extents, coalesced on free. Order of updates, so the BPF side never
 * follows a dangling reference: rows are written before any unw_maps entry
 * points at them, and unw_maps entries are deleted before their rows are
 * freed (a table is freed only with no reference left, i.e. no entry). A walk
 * already under way on another CPU may still read rows being replaced: every
 * read in the walker is bounded, so the worst is one wrong frame in one sample.
 *
 * A process's unw_maps entries carry a generation; unw_procs[pid] names the
 * current one. A process loaded again (its maps changed, or a table it waited
 * for was built: at start-up, every build finishing reloads every process
 * that waited) keeps its generation: the entries that went are deleted, then
 * those new or changed are written, the others left as they are. Should that
 * fail, or for a process not installed yet, its entries are replaced whole:
 * the old ones deleted first (its frames fall back to frame pointers for that
 * moment), then the new ones written with a new generation, then the
 * generation.
 */
#include <endian.h>
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cfi.h"
#include "symbolize.h"
#include "base.h"
#include "unwind.h"

#define NO_ROOM_RETRY_SECS	60	/* a table that did not fit is tried again after */
#define MAX_QUEUED		1024	/* builds requested and not loaded yet */
#define BUILDERS		2	/* one can be deep in a big file while the other serves the rest */
#define SMALL_FILE		(16u << 20)	/* bytes: what the second build thread takes */
#define MAX_KEYS_PER_PROC	65536
#define KEYS_PER_CALL		4096	/* unw_maps entries written or deleted per system call */

struct utable {
	uint64_t	 dev, ino;
	char		 build_id[41];
	uint32_t	 first, nrows;	/* nrows 0: no table (walk by frame pointer) */
	unsigned	 refs;		/* processes mapping it */
	time_t		 used;		/* monotonic seconds, last time refs dropped or rose */
	int		 err;		/* why there is no table */
	bool		 pending;	/* being built: not to be freed */
	char		 name[96];
};

struct build_req {
	struct build_req *next;
	struct utable	*t;		/* the sampler thread's: only handed back */
	int		 fd;		/* -1: the vdso */
	uint64_t	 size;		/* of the file: small ones are built first */
	int		 rc;
	struct cfi_table c;
	double		 t0, secs;
};

struct uproc {
	struct uproc	*prev, *next;	/* all of them, in u->uprocs */
	struct proc	*p;
	uint32_t	 pid, gen;
	bool		 pending;	/* some of its tables were being built */
	uint64_t	 tgen;		/* u->tgen when last loaded */
	struct unw_map_key *keys;
	struct unw_map_val *vals;	/* keys[i]'s value as written */
	size_t		 nkeys;
	struct utable	**tabs;
	size_t		 ntabs;
	bool		 installed;	/* unw_procs[pid] = gen was written */
};

struct extent {
	uint32_t	 off, len;
};

struct unwinder {
	int		 rows_fd, maps_fd, procs_fd;
	size_t		 map_bytes;
	long		 page;
	uint32_t	 cap;		/* rows */
	struct extent	*free;
	size_t		 nfree;
	struct utable	**tabs;
	size_t		 ntabs, tcap;
	uint32_t	 gen;
	struct utable	 none;		/* "no table this time", never cached */
	size_t		 procs;
	uint64_t	 used, builds, build_failures, evictions, no_room, deferred;
	double		 build_seconds;
	uint64_t	 tgen;		/* bumped whenever a build finishes */
	size_t		 queued;
	struct uproc	*uprocs;
	bool		 no_batch;	/* the kernel has no batch updates of unw_maps */
	/* shared with the build thread, under lock */
	pthread_mutex_t	 lock;
	pthread_cond_t	 cond;
	struct build_req *todo, *done;
	bool		 stopping;
	struct builder {
		struct unwinder	*u;
		pthread_t	 thread;
		bool		 small_only;
	}		 builders[BUILDERS];
	int		 nbuilders;
};

static void	*builder_main(void *arg);

static time_t
mono_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static double
mono_f(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
unwind_configure(struct bpf_map *rows, size_t mem_bytes)
{
	size_t n = mem_bytes / sizeof(struct unw_row);

	if (n < 4096)
		n = 4096;
	if (n > (1u << 24))	/* the BPF binary search takes 24 steps */
		n = 1u << 24;
	return bpf_map__set_max_entries(rows, (uint32_t)n);
}

struct unwinder *
unwind_create(struct bpf_map *rows, struct bpf_map *maps, struct bpf_map *procs)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	long page = sysconf(_SC_PAGESIZE);
	int saved, i;

	if (u == NULL)
		return NULL;
	u->rows_fd = bpf_map__fd(rows);
	u->maps_fd = bpf_map__fd(maps);
	u->procs_fd = bpf_map__fd(procs);
	u->cap = bpf_map__max_entries(rows);
	u->page = page;
	u->map_bytes = ((size_t)u->cap * sizeof(struct unw_row) + (size_t)page - 1) &
	    ~((size_t)page - 1);
	/* The array must be mmap-able: tried once here rather than at each table. */
	{
		void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED,
		    u->rows_fd, 0);

		if (m == MAP_FAILED) {
			saved = errno;
			free(u);
			errno = saved;
			return NULL;
		}
		munmap(m, (size_t)page);
	}
	if ((u->free = malloc(sizeof(*u->free))) == NULL) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->free[0].off = 0;
	u->free[0].len = u->cap;
	u->nfree = 1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	for (i = 0; i < BUILDERS; i++) {
		u->builders[i].u = u;
		u->builders[i].small_only = i > 0;
		if ((saved = pthread_create(&u->builders[i].thread, NULL, builder_main,
		    &u->builders[i])) != 0) {
			unwind_destroy(u);
			errno = saved;
			return NULL;
		}
		u->nbuilders++;
	}
	return u;
}

/* --- row space ------------------------------------------------------------ */

static int
space_alloc(struct unwinder *u, uint32_t n, uint32_t *off)
{
	size_t i;

	for (i = 0; i < u->nfree; i++) {
		if (u->free[i].len < n)
			continue;
		*off = u->free[i].off;
		u->free[i].off += n;
		u->free[i].len -= n;
		if (u->free[i].len == 0) {
			memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
			u->nfree--;
		}
		u->used += n;
		return 0;
	}
	return -ENOSPC;
}

static int
space_free(struct unwinder *u, uint32_t off, uint32_t n)
{
	struct extent *nf;
	size_t i = 0;

	while (i < u->nfree && u->free[i].off < off)
		i++;
	/* Join the neighbour before, the one after, or both. */
	if (i > 0 && u->free[i - 1].off + u->free[i - 1].len == off) {
		u->free[i - 1].len += n;
		if (i < u->nfree && off + n == u->free[i].off) {
			u->free[i - 1].len += u->free[i].len;
			memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
			u->nfree--;
		}
		goto done;
	}
	if (i < u->nfree && off + n == u->free[i].off) {
		u->free[i].off = off;
		u->free[i].len += n;
		goto done;
	}
	if ((nf = realloc(u->free, (u->nfree + 1) * sizeof(*nf))) == NULL)
		return -ENOMEM;	/* the space is lost, not corrupted */
	u->free = nf;
	memmove(&u->free[i + 1], &u->free[i], (u->nfree - i) * sizeof(*u->free));
	u->free[i].off = off;
	u->free[i].len = n;
	u->nfree++;
done:
	u->used -= n;
	return 0;
}

/* --- tables --------------------------------------------------------------- */

static void
table_drop(struct unwinder *u, size_t i)
{
	struct utable *t = u->tabs[i];

	if (t->nrows)
		space_free(u, t->first, t->nrows);
	free(t);
	u->tabs[i] = u->tabs[--u->ntabs];
}

/* Evict unreferenced tables, least recently used first, until n rows fit. */
static int
make_room(struct unwinder *u, uint32_t n, uint32_t *off)
{
	while (space_alloc(u, n, off) < 0) {
		size_t i, best = u->ntabs;

		for (i = 0; i < u->ntabs; i++)
			if (u->tabs[i]->refs == 0 && u->tabs[i]->nrows > 0 &&
			    (best == u->ntabs || u->tabs[i]->used < u->tabs[best]->used))
				best = i;
		if (best == u->ntabs)
			return -ENOSPC;
		table_drop(u, best);
		u->evictions++;
	}
	return 0;
}

/* Open m's file (proctab_open_mapping); -1 if none can be opened now. */
static int
open_mapped(const struct proc_mapping *m)
{
	int fd = proctab_open_mapping(m);

	return fd < 0 ? -1 : fd;
}

/* --- the build thread ----------------------------------------------------- */

/*
 * Requests go to the build thread with the file already open (opened here,
 * while the process that maps it surely exists); results come back on the
 * done list and are loaded by unwind_poll on the sampler's thread. Build
 * threads touch nothing but their request.
 */
/*
 * The request a build thread takes next, or NULL: the smallest file first,
 * since most processes wait for small files (gzip: 1 ms) which a big one
 * (libLLVM: half a second, far more on a loaded host) must not hold up. The
 * second thread takes small files only, so that one is always free for them
 * while the first is deep in big ones. Under u->lock.
 */
static struct build_req **
pick(struct unwinder *u, bool small_only)
{
	struct build_req **pp, **best = NULL;

	for (pp = &u->todo; *pp; pp = &(*pp)->next)
		if ((!small_only || (*pp)->size < SMALL_FILE) &&
		    (best == NULL || (*pp)->size < (*best)->size))
			best = pp;
	return best;
}

static void *
builder_main(void *arg)
{
	struct builder *b = arg;
	struct unwinder *u = b->u;
	struct build_req *r, **pp;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		while (!u->stopping && (pp = pick(u, b->small_only)) == NULL)
			pthread_cond_wait(&u->cond, &u->lock);
		if (u->stopping)
			break;
		r = *pp;
		*pp = r->next;
		pthread_mutex_unlock(&u->lock);

		r->t0 = mono_f();
		if (r->fd < 0) {
			/* Every 64-bit process maps the kernel's one vdso: read ours. */
			const void *img;
			size_t size;
			Elf *e;

			r->rc = -ENOTSUP;
			if (symbolize_vdso_image(&img, &size) == 0 &&
			    (e = elf_memory((char *)img, size)) != NULL) {
				r->rc = cfi_build_elf(e, &r->c);
				elf_end(e);
			}
		} else {
			r->rc = cfi_build_fd(r->fd, &r->c);
		}
		r->secs = mono_f() - r->t0;

		pthread_mutex_lock(&u->lock);
		r->next = u->done;
		u->done = r;
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

static void
req_free(struct build_req *r)
{
	if (r->fd >= 0)
		close(r->fd);
	cfi_free(&r->c);
	free(r);
}

/* Copy n rows to unw_rows[first...] through a mapping of their pages alone. -1 and errno. */
static int
rows_write(struct unwinder *u, uint32_t first, const struct unw_row *rows, size_t n)
{
	size_t pg = (size_t)u->page, at = (size_t)first * sizeof(*rows);
	size_t off = at & ~(pg - 1), len = ((at + n * sizeof(*rows) + pg - 1) & ~(pg - 1)) - off;
	char *m;

	if (off + len > u->map_bytes) {
		errno = ERANGE;
		return -1;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, (off_t)off);
	if (m == MAP_FAILED)
		return -1;
	memcpy(m + (at - off), rows, n * sizeof(*rows));
	munmap(m, len);
	return 0;
}

/* Load one finished build into the row array. */
static void
table_load(struct unwinder *u, struct build_req *r)
{
	struct utable *t = r->t;
	struct cfi_table *c = &r->c;

	t->pending = false;
	u->builds++;
	u->build_seconds += r->secs;
	u->tgen++;
	if (r->rc < 0) {
		t->err = -r->rc;
		if (r->rc != -ENOTSUP)
			u->build_failures++;
		log_debug("ebpf: %s: no unwind table (%s): frame pointers", t->name,
		    r->rc == -ENOTSUP ? "no usable CFI, or Go" : strerror(-r->rc));
		return;
	}
	if (c->nrows > UINT32_MAX || make_room(u, (uint32_t)c->nrows, &t->first) < 0) {
		t->err = ENOSPC;
		u->no_room++;
		log_debug("ebpf: %s: no room for %zu unwind rows (--ebpf-unwind-mem)", t->name,
		    c->nrows);
		return;
	}
	if (c->nrows > 0 && rows_write(u, t->first, c->rows, c->nrows) < 0) {
		t->err = errno;
		u->build_failures++;
		log_debug("ebpf: %s: writing unwind rows: %s", t->name, strerror(errno));
		space_free(u, t->first, (uint32_t)c->nrows);
		return;
	}
	t->nrows = (uint32_t)c->nrows;
	log_debug("ebpf: %s: unwind table of %zu rows (%zu FDEs, %s, %zu refused) at row %u, "
	    "built in %.3f s", t->name, c->nrows, c->nfdes, c->source, c->unsupported, t->first,
	    r->secs);
}

void
unwind_poll(struct unwinder *u)
{
	struct build_req *r, *next;
	struct uproc *q;
	bool big = false;

	pthread_mutex_lock(&u->lock);
	r = u->done;
	u->done = NULL;
	pthread_mutex_unlock(&u->lock);
	if (r == NULL)
		return;
	for (; r; r = next) {
		next = r->next;
		table_load(u, r);
		big |= r->c.nrows >= (1u << 17);
		u->queued--;
		req_free(r);
	}
	/*
	 * A big table's build memory went back to a build thread's malloc
	 * arena, which keeps it: give it back to the system.
	 */
	if (big)
		malloc_trim(0);
	/* Processes that waited for a table get it now, not at their next sample. */
	for (q = u->uprocs; q; q = q->next)
		if (q->pending)
			unwind_proc(u, q->p);
}

/*
 * The table of m's file from the cache; else a build is requested and
 * &u->none returned with *pending set (the process is loaded again once the
 * table is there). &u->none without *pending: no table to be had now (the
 * file could not be opened: not remembered, the next mapping tries again).
 */
static struct utable *
table_get(struct unwinder *u, const struct proc_mapping *m, bool *pending)
{
	struct build_req *r;
	struct utable *t;
	time_t now = mono_secs();
	bool vdso = m->ino == 0 && strcmp(m->name, "[vdso]") == 0;
	struct stat st;
	size_t i;
	int fd = -1;

	for (i = 0; i < u->ntabs; i++) {
		t = u->tabs[i];
		/*
		 * The same file, or a copy of it (another inode, another
		 * container's layer): the same build id is the same code.
		 */
		if (strcmp(t->build_id, m->build_id) != 0 ||
		    (m->build_id[0] == '\0' && (t->dev != m->dev || t->ino != m->ino)))
			continue;
		/* No room last time: try again once in a while, unreferenced. */
		if (t->err == ENOSPC && t->refs == 0 && now - t->used >= NO_ROOM_RETRY_SECS) {
			table_drop(u, i);
			break;
		}
		if (t->pending)
			*pending = true;
		return t->pending ? &u->none : t;
	}
	if (u->queued >= MAX_QUEUED) {
		*pending = true;	/* asked again at a later sample */
		return &u->none;
	}
	if (!vdso && (fd = open_mapped(m)) < 0)
		return &u->none;
	if (u->ntabs == u->tcap) {
		size_t nc = u->tcap ? u->tcap * 2 : 64;
		struct utable **nt = realloc(u->tabs, nc * sizeof(*nt));

		if (nt == NULL)
			goto fail;
		u->tabs = nt;
		u->tcap = nc;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		goto fail;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(t);
		goto fail;
	}
	t->dev = m->dev;
	t->ino = m->ino;
	t->used = now;
	t->pending = true;
	snprintf(t->build_id, sizeof(t->build_id), "%s", m->build_id);
	snprintf(t->name, sizeof(t->name), "%s", m->name);
	u->tabs[u->ntabs++] = t;
	r->t = t;
	r->fd = fd;
	if (fd >= 0 && fstat(fd, &st) == 0)
		r->size = (uint64_t)st.st_size;
	pthread_mutex_lock(&u->lock);
	r->next = u->todo;
	u->todo = r;
	pthread_cond_broadcast(&u->cond);	/* the threads wait for different requests */
	pthread_mutex_unlock(&u->lock);
	u->queued++;
	*pending = true;
	return &u->none;
fail:
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* --- processes ------------------------------------------------------------ */

/* Whether a batch call failed only for want of the kernel's support. */
static bool
batch_unsupported(int err)
{
	return err == EOPNOTSUPP || err == 524 /* ENOTSUPP */ || err == EINVAL;
}

/*
 * Write the n entries k[i] -> v[i] of unw_maps, KEYS_PER_CALL a system call
 * (one call per entry is most of what loading a process costs). Returns how
 * many were written, in order; *err the reason the next was not.
 */
static size_t
keys_put(struct unwinder *u, const struct unw_map_key *k, const struct unw_map_val *v,
    size_t n, int *err)
{
	size_t done = 0;
	uint32_t cnt, want;

	*err = 0;
	while (!u->no_batch && done < n) {
		cnt = want = (uint32_t)(n - done < KEYS_PER_CALL ? n - done : KEYS_PER_CALL);
		if (bpf_map_update_batch(u->maps_fd, &k[done], &v[done], &cnt, NULL) == 0) {
			done += want;
			continue;
		}
		*err = -errno;
		if (cnt > want)
			cnt = 0;
		done += cnt;
		if (done > 0 || cnt > 0 || !batch_unsupported(errno))
			return done;
		u->no_batch = true;
		*err = 0;
	}
	for (; done < n; done++) {
		if (bpf_map_update_elem(u->maps_fd, &k[done], &v[done], BPF_ANY) != 0) {
			*err = -errno;
			break;
		}
	}
	return done;
}

/* Delete the n entries k[i] of unw_maps (those not there are no matter). */
static void
keys_delete(struct unwinder *u, const struct unw_map_key *k, size_t n)
{
	size_t done = 0, i;
	uint32_t cnt, want;

	while (done < n) {
		cnt = want = (uint32_t)(n - done < KEYS_PER_CALL ? n - done : KEYS_PER_CALL);
		if (!u->no_batch && bpf_map_delete_batch(u->maps_fd, &k[done], &cnt, NULL) == 0) {
			done += want;
			continue;
		}
		/* Past the first that failed (or without batches): one by one. */
		if (u->no_batch || cnt > want)
			cnt = 0;
		for (i = done + cnt; i < done + want; i++)
			bpf_map_delete_elem(u->maps_fd, &k[i]);
		done += want;
	}
}

static void
uproc_clear(struct unwinder *u, struct uproc *q)
{
	time_t now = mono_secs();
	struct unw_proc up;
	size_t i;

	if (q->installed && bpf_map_lookup_elem(u->procs_fd, &q->pid, &up) == 0 &&
	    up.gen == q->gen)
		bpf_map_delete_elem(u->procs_fd, &q->pid);
	keys_delete(u, q->keys, q->nkeys);
	for (i = 0; i < q->ntabs; i++) {
		q->tabs[i]->refs--;
		q->tabs[i]->used = now;
	}
	if (q->installed && q->ntabs > 0)
		u->procs--;
	free(q->keys);
	free(q->vals);
	free(q->tabs);
	q->keys = NULL;
	q->vals = NULL;
	q->tabs = NULL;
	q->nkeys = q->ntabs = 0;
	q->installed = false;
}

/* Add k -> v to q's entries (cap: room in q->keys and q->vals). */
static int
add_key(struct uproc *q, const struct unw_map_key *k, const struct unw_map_val *v,
    size_t *cap)
{
	if (q->nkeys >= MAX_KEYS_PER_PROC)
		return -E2BIG;
	if (q->nkeys == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct unw_map_key *nk = realloc(q->keys, nc * sizeof(*nk));
		struct unw_map_val *nv;

		if (nk == NULL)
			return -ENOMEM;
		q->keys = nk;
		if ((nv = realloc(q->vals, nc * sizeof(*nv))) == NULL)
			return -ENOMEM;
		q->vals = nv;
		*cap = nc;
	}
	q->vals[q->nkeys] = *v;
	q->keys[q->nkeys++] = *k;
	return 0;
}

/*
 * Point [start, end) of q's process at table t: the range cut into aligned
 * power-of-two blocks, one LPM prefix each (added to q's entries, written
 * with the others).
 */
static int
map_range(struct uproc *q, uint64_t start, uint64_t end, const struct unw_map_val *v,
    size_t *cap)
{
	struct unw_map_key k;
	int rc;

	while (start < end) {
		unsigned bits = start ? (unsigned)__builtin_ctzll(start) : 63;

		while (bits > 0 && (bits >= 64 || end - start < (1ULL << bits)))
			bits--;
		k.prefixlen = 32 + 64 - bits;
		k.pid_be = htobe32(q->pid);
		k.addr_be = htobe64(start);
		if ((rc = add_key(q, &k, v, cap)) < 0)
			return rc;
		start += 1ULL << bits;
	}
	return 0;
}

/* An entry of unw_maps with its value, to compare two sets of them. */
struct kv {
	struct unw_map_key k;
	struct unw_map_val v;
};

static int
kv_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct kv *)a)->k, &((const struct kv *)b)->k,
	    sizeof(struct unw_map_key));
}

/* The n entries keys[i] -> vals[i], sorted by key, into *out (caller frees). */
static int
kv_sorted(const struct unw_map_key *keys, const struct unw_map_val *vals, size_t n,
    struct kv **out)
{
	size_t i;

	if ((*out = malloc((n ? n : 1) * sizeof(**out))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		memset(&(*out)[i], 0, sizeof((*out)[i]));
		(*out)[i].k = keys[i];
		(*out)[i].v = vals[i];
	}
	qsort(*out, n, sizeof(**out), kv_cmp);
	return 0;
}

int
unwind_diff(const struct unw_map_key *ok, const struct unw_map_val *ov, size_t on,
    const struct unw_map_key *nk, const struct unw_map_val *nv, size_t nn,
    struct unw_map_key **del, size_t *ndel, struct unw_map_key **put,
    struct unw_map_val **putv, size_t *nput)
{
	struct kv *a = NULL, *b = NULL;
	size_t i = 0, j = 0;
	int c, rc;

	*del = NULL;
	*put = NULL;
	*putv = NULL;
	*ndel = *nput = 0;
	if ((rc = kv_sorted(ok, ov, on, &a)) < 0 || (rc = kv_sorted(nk, nv, nn, &b)) < 0 ||
	    (*del = malloc((on ? on : 1) * sizeof(**del))) == NULL ||
	    (*put = malloc((nn ? nn : 1) * sizeof(**put))) == NULL ||
	    (*putv = malloc((nn ? nn : 1) * sizeof(**putv))) == NULL) {
		free(*del);
		free(*put);
		*del = *put = NULL;
		rc = -ENOMEM;
		goto out;
	}
	while (i < on || j < nn) {
		c = i == on ? 1 : j == nn ? -1 : kv_cmp(&a[i], &b[j]);
		if (c < 0) {
			(*del)[(*ndel)++] = a[i++].k;
			continue;
		}
		if (c > 0 || memcmp(&a[i].v, &b[j].v, sizeof(a[i].v)) != 0) {
			(*put)[*nput] = b[j].k;
			(*putv)[(*nput)++] = b[j].v;
		}
		if (c == 0)
			i++;
		j++;
	}
out:
	free(a);
	free(b);
	return rc;
}

/*
 * q's entries (keys, vals, tabs) written, those of the old set o that are
 * not among them deleted first: 0, or -errno with nothing written (then the
 * caller replaces them whole).
 */
static int
update_in_place(struct unwinder *u, struct uproc *q, const struct uproc *o)
{
	struct unw_map_key *del, *put;
	struct unw_map_val *putv;
	size_t ndel, nput, written;
	int rc, werr;

	if ((rc = unwind_diff(o->keys, o->vals, o->nkeys, q->keys, q->vals, q->nkeys, &del,
	    &ndel, &put, &putv, &nput)) < 0)
		return rc;
	keys_delete(u, del, ndel);
	written = keys_put(u, put, putv, nput, &werr);
	if (written < nput) {
		/* Half done: what was written goes with the rest. */
		keys_delete(u, put, written);
		rc = werr < 0 ? werr : -EIO;
	}
	free(del);
	free(put);
	free(putv);
	return rc;
}

/* Let go of n tables whose entries left the map. */
static void
tabs_release(struct utable **tabs, size_t n)
{
	time_t now = mono_secs();
	size_t i;

	for (i = 0; i < n; i++) {
		tabs[i]->refs--;
		tabs[i]->used = now;
	}
}

int
unwind_proc(struct unwinder *u, struct proc *p)
{
	struct uproc *q = p->unw, o;
	bool pending = false, in_place;
	struct proc_mapping m;
	struct unw_map_val v;
	struct unw_proc up;
	struct timespec ts;
	size_t i, kcap = 0, tcap = 0, written, *tkey = NULL;	/* tkey[j]: tabs[j]'s first key */
	int rc = 0, werr;

	/* Loaded, unless the maps changed or a table it waited for is built. */
	if (q != NULL && p->unw_gen == p->maps_gen && (!q->pending || q->tgen == u->tgen))
		return 0;
	if (q == NULL) {
		if ((q = calloc(1, sizeof(*q))) == NULL)
			return -ENOMEM;
		q->pid = p->pid;
		q->p = p;
		p->unw = q;
		if ((q->next = u->uprocs) != NULL)
			q->next->prev = q;
		u->uprocs = q;
	}
	/* Its entries in the map now: updated in place, or replaced whole. */
	in_place = q->installed && q->nkeys > 0;
	memset(&o, 0, sizeof(o));
	if (in_place) {
		o = *q;
		q->keys = NULL;
		q->vals = NULL;
		q->tabs = NULL;
		q->nkeys = q->ntabs = 0;
	} else {
		uproc_clear(u, q);
		q->gen = ++u->gen ? u->gen : ++u->gen;	/* 0: no process's (the BPF walker's) */
	}
	p->unw_gen = p->maps_gen;
	q->tgen = u->tgen;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++) {
		struct utable *t = table_get(u, &m, &pending), **nt;
		size_t *ntk;

		if (t == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (t->nrows == 0)
			continue;
		if (q->ntabs == tcap) {
			tcap = tcap ? tcap * 2 : 16;
			if ((nt = realloc(q->tabs, tcap * sizeof(*nt))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			q->tabs = nt;
			if ((ntk = realloc(tkey, tcap * sizeof(*ntk))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			tkey = ntk;
		}
		memset(&v, 0, sizeof(v));
		v.bias = m.bias;
		v.first = t->first;
		v.nrows = t->nrows;
		v.gen = q->gen;
		tkey[q->ntabs] = q->nkeys;
		q->tabs[q->ntabs++] = t;
		t->refs++;
		t->used = mono_secs();
		if ((rc = map_range(q, m.start, m.end, &v, &kcap)) < 0) {
			log_debug("ebpf: pid %u: unwind map full (%s): %s by frame pointer",
			    p->pid, strerror(-rc), m.name);
			break;
		}
	}
	if (in_place) {
		werr = update_in_place(u, q, &o);
		if (werr == 0) {
			if (o.ntabs == 0 && q->ntabs > 0)
				u->procs++;
			else if (o.ntabs > 0 && q->ntabs == 0)
				u->procs--;
			tabs_release(o.tabs, o.ntabs);
			free(o.keys);
			free(o.vals);
			free(o.tabs);
			goto installed;
		}
		/* Replaced whole: the old entries go, the new ones get a new generation. */
		if (bpf_map_lookup_elem(u->procs_fd, &q->pid, &up) == 0 && up.gen == q->gen)
			bpf_map_delete_elem(u->procs_fd, &q->pid);
		keys_delete(u, o.keys, o.nkeys);
		tabs_release(o.tabs, o.ntabs);
		if (o.ntabs > 0)
			u->procs--;
		free(o.keys);
		free(o.vals);
		free(o.tabs);
		q->installed = false;
		q->gen = ++u->gen ? u->gen : ++u->gen;	/* 0: no process's (the BPF walker's) */
		for (i = 0; i < q->nkeys; i++)
			q->vals[i].gen = q->gen;
	}
	/* All of them written at once; those that could not be are let go. */
	if ((written = keys_put(u, q->keys, q->vals, q->nkeys, &werr)) < q->nkeys) {
		time_t now = mono_secs();

		for (i = 0; i + 1 < q->ntabs && tkey[i + 1] <= written; i++)
			;
		if (i < q->ntabs)
			log_debug("ebpf: pid %u: unwind map full (%s): %s by frame pointer",
			    p->pid, strerror(-werr), q->tabs[i]->name);
		while (q->ntabs > 0 && tkey[q->ntabs - 1] >= written) {
			q->tabs[--q->ntabs]->refs--;
			q->tabs[q->ntabs]->used = now;
		}
		q->nkeys = written;
		rc = werr;
	}
installed:
	free(tkey);
	q->pending = pending;
	u->deferred += pending;
	/* Without any table the process is walked by bpf_get_stack, as before. */
	memset(&up, 0, sizeof(up));
	up.gen = q->gen;
	up.flags = q->ntabs > 0 ? 0 : UNW_PROC_NO_TABLES;
	clock_gettime(CLOCK_MONOTONIC, &ts);	/* bpf_ktime_get_ns's clock */
	up.since_ns = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
	if (bpf_map_update_elem(u->procs_fd, &q->pid, &up, BPF_ANY) == 0) {
		if (!q->installed)
			u->procs += q->ntabs > 0;
		q->installed = true;
	}
	return rc;
}

void
unwind_prefetch(struct unwinder *u, struct proc *p)
{
	struct proc_mapping m;
	bool pending = false;
	size_t i;

	for (i = 0; proctab_mapping(p, i, &m) == 0; i++)
		table_get(u, &m, &pending);
}

void
unwind_forget(struct unwinder *u, struct proc *p)
{
	struct uproc *q = p->unw;

	if (q == NULL)
		return;
	uproc_clear(u, q);
	if (q->prev)
		q->prev->next = q->next;
	else
		u->uprocs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	free(q);
	p->unw = NULL;
}

void
unwind_expire(struct unwinder *u, time_t before)
{
	size_t i = 0;

	while (i < u->ntabs) {
		if (u->tabs[i]->refs == 0 && !u->tabs[i]->pending && u->tabs[i]->used < before) {
			if (u->tabs[i]->nrows)
				u->evictions++;
			table_drop(u, i);
		} else {
			i++;
		}
	}
}

void
unwind_get_stats(const struct unwinder *u, struct unwind_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < u->ntabs; i++)
		st->tables += u->tabs[i]->nrows > 0;
	st->procs = u->procs;
	st->bytes_used = u->used * sizeof(struct unw_row);
	st->bytes_cap = (uint64_t)u->cap * sizeof(struct unw_row);
	st->builds = u->builds;
	st->build_failures = u->build_failures;
	st->evictions = u->evictions;
	st->no_room = u->no_room;
	st->build_seconds = u->build_seconds;
	st->deferred = u->deferred;
}

void
unwind_destroy(struct unwinder *u)
{
	size_t i;

	struct build_req *r, *next;

	if (u == NULL)
		return;
	if (u->nbuilders > 0) {
		pthread_mutex_lock(&u->lock);
		u->stopping = true;
		pthread_cond_broadcast(&u->cond);
		pthread_mutex_unlock(&u->lock);
		for (i = 0; i < (size_t)u->nbuilders; i++)
			pthread_join(u->builders[i].thread, NULL);
	}
	for (r = u->todo; r; r = next) {
		next = r->next;
		req_free(r);
	}
	for (r = u->done; r; r = next) {
		next = r->next;
		req_free(r);
	}
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	for (i = 0; i < u->ntabs; i++)
		free(u->tabs[i]);
	free(u->tabs);
	free(u->free);
	free(u);
}
