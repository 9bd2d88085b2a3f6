/*
 * mallocprof: the user side of --ebpf-malloc (see mallocprof.h and
 * bpf/malloc.bpf.h). Three tables: the processes looked at (by pid: not
 * selected, probed, or waiting for their C library to be mapped), the
 * sampled blocks held (by pid and address), and their stacks (by pid and
 * frames, packed: the frames used, not the fixed arrays, held while a block
 * refers to them). The kernel's malloc_live is the truth about which
 * blocks are still allocated: at each flush the blocks held here that it
 * no longer has were freed. Memory held is charged to the daemon's memory
 * budget; a block that finds no room is counted in alloc_* only.
 */
#define _GNU_SOURCE	/* pthread_setname_np */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base.h"
#include "mallocprof.h"
#include "profile.skel.h"

#define MP_BUCKETS	1024		/* processes; a power of two */
#define MP_LBUCKETS	16384		/* blocks; a power of two */
#define MP_SBUCKETS	4096		/* stacks; a power of two */
#define MP_SCAN_NS	(1000LL * 1000 * 1000)	/* /proc looked at this often */
#define MP_WAIT_TRIES	50		/* looks a selected process may map no C library */
#define MP_WAIT_NS	(100LL * 1000 * 1000)	/* between them */
#define MP_BATCH	1024		/* malloc_live entries read per system call */
#define MP_OFFS_CACHE	16		/* C libraries whose symbols were read */
#define MP_EXEC_SCAN_NS	(100LL * 1000 * 1000)	/* /proc looked at this soon after an exec */
/*
 * Processes probed at once, at most. Each holds 13 uprobe links (and their
 * file descriptors) and makes every allocation call of its own a trap: a
 * selector is meant for a few services, and a local user who starts
 * thousands of processes it matches must not exhaust the daemon's file
 * descriptors or the kernel's memory. Past it a process waits (T_FULL)
 * until a probed one exits.
 */
#define MP_MAX_PROBED	32
/*
 * Threads that destroy links. Closing a uprobe's link waits for the
 * kernel's grace periods (about 170 ms each here, under a mutex the kernel
 * holds across them, so more threads do not help): done on the sampler's
 * thread, the exit of many probed processes at once stalled it for
 * minutes. A process's slot is free again once its links are gone, so
 * the backlog too is bounded by MP_MAX_PROBED.
 */
#define MP_DETACHERS	1
#define MP_FULL_LOG_NS	(60LL * 1000 * 1000 * 1000)	/* one log line about refusals per minute */

/* The functions probed, and their programs (entry; return, or NULL: none). */
enum { F_MALLOC, F_CALLOC, F_REALLOC, F_FREE, F_POSIX_MEMALIGN, F_ALIGNED_ALLOC, F_MEMALIGN,
    F_N };
static const char *const fnames[F_N] = { "malloc", "calloc", "realloc", "free",
    "posix_memalign", "aligned_alloc", "memalign" };
#define MP_LINKS	(2 * F_N)

enum { T_OFF, T_ON, T_WAIT, T_FULL };

struct target {
	struct target	*next;
	uint32_t	 pid;
	int		 state;
	uint32_t	 scan;		/* the last scan that saw it */
	uint32_t	 tries;		/* scans in T_WAIT */
	struct bpf_link	*links[MP_LINKS];
	int		 nlinks;
};

/* A stack held: the sample's bytes up to kstack, nu user frames, its runtime part. */
struct mstack {
	struct mstack	*next;
	uint64_t	 hash;
	uint32_t	 refs;		/* blocks held in it */
	uint32_t	 nu, rt_len, size;
	double		 acc_n, acc_b;	/* inuse at this flush */
	unsigned char	 data[];
};

struct mlive {
	struct mlive	*next;
	uint32_t	 pid;
	uint32_t	 seen;		/* the flush that found it in malloc_live */
	uint64_t	 addr, size;
	struct mstack	*st;
};

/* The file offsets of fnames in one C library (0: not there). */
struct offs {
	uint64_t	 dev, ino;
	uint64_t	 off[F_N];
	bool		 used;
};

struct rule {
	char		 kind;		/* 'p' pid, 'u' unit, 'c' container, 'm' comm, 's' service */
	uint32_t	 pid;
	char		 pat[128];
};

/* Links waiting to be destroyed, and the threads that destroy them. */
struct detacher {
	pthread_mutex_t		 mu;
	pthread_cond_t		 work;
	struct bpf_link		*q[MP_MAX_PROBED * MP_LINKS];	/* a ring */
	size_t			 head, n;
	size_t			 busy;		/* taken from q, being destroyed */
	bool			 stop;
	pthread_t		 th[MP_DETACHERS];
	int			 nth;
};

struct mallocprof {
	struct profile_bpf	*skel;
	struct detacher		 det;
	struct proctab		*pt;
	int			 live_fd;
	uint32_t		 live_cap;
	double			 rate;
	struct rule		*rules;
	size_t			 nrules;
	bool			 names;		/* a rule needs the process's names */
	uint32_t		 self;
	int64_t			 next_scan;
	uint32_t		 scan;
	uint32_t		 flushes;
	struct target		*targets[MP_BUCKETS];
	size_t			 ntargets_on;
	struct mlive		*live[MP_LBUCKETS];
	size_t			 nlive;
	struct mstack		*stacks[MP_SBUCKETS];
	size_t			 nstacks, stack_bytes;
	struct offs		 offs[MP_OFFS_CACHE];
	size_t			 offs_next;
	uint64_t		 attach_failures, untracked, unknown;
	uint64_t		 full;		/* looks refused: MP_MAX_PROBED probed already */
	uint64_t		 full_said;	/* of them, told in the log */
	int64_t			 full_log;	/* when the log last told of them */
	struct prof_sample	*s;		/* unpacked stacks */
	struct prof_malloc_key	*keys;		/* MP_BATCH */
	__u64			*vals;		/* MP_BATCH */
	struct prof_malloc_key	*dels;
	size_t			 ndels, dels_cap;
};

int
mallocprof_check_rule(const char *rule, const char **bad)
{
	char *end;
	unsigned long v;

	if (strncmp(rule, "pid:", 4) == 0) {
		errno = 0;
		v = strtoul(rule + 4, &end, 10);
		if (rule[4] == '\0' || *end != '\0' || errno != 0 || v == 0 || v > 4194304) {
			*bad = "pid:N wants a process id (1 to 4194304)";
			return -EINVAL;
		}
		return 0;
	}
	if (proctab_filter_check(rule, bad) < 0) {
		*bad = "not pid:N, unit:NAME, container:NAME, comm:NAME or service:NAME";
		return -EINVAL;
	}
	return 0;
}

void
mallocprof_configure(struct profile_bpf *skel, bool enabled, int64_t rate, uint32_t live_cap)
{
	struct bpf_program *progs[] = { skel->progs.malloc_in, skel->progs.malloc_calloc_in,
	    skel->progs.malloc_realloc_in, skel->progs.malloc_aligned_in,
	    skel->progs.malloc_memalign_in, skel->progs.malloc_free_in, skel->progs.malloc_out,
	    skel->progs.malloc_memalign_out };
	double sum = 0, q[MALLOC_DRAWS], scale;
	size_t i;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		bpf_program__set_autoload(progs[i], enabled);
	if (!enabled)
		return;
	bpf_map__set_max_entries(skel->maps.malloc_live, live_cap);
	/*
	 * Quantiles at the middle of MALLOC_DRAWS equal slices of the
	 * exponential distribution, scaled so that their mean is rate
	 * exactly (the middles alone fall short of the far tail).
	 */
	for (i = 0; i < MALLOC_DRAWS; i++) {
		q[i] = -log(((double)i + 0.5) / MALLOC_DRAWS);
		sum += q[i];
	}
	scale = (double)rate * MALLOC_DRAWS / sum;
	for (i = 0; i < MALLOC_DRAWS; i++) {
		double d = q[i] * scale;

		skel->rodata->malloc_draws[i] = d >= 4e9 ? 4000000000u : (uint32_t)llround(d);
	}
}

static int
rule_parse(struct rule *r, const char *text)
{
	const char *c = strchr(text, ':');

	memset(r, 0, sizeof(*r));
	if (c == NULL)
		return -EINVAL;
	if (strncmp(text, "pid:", 4) == 0) {
		r->kind = 'p';
		r->pid = (uint32_t)strtoul(text + 4, NULL, 10);
		return 0;
	}
	r->kind = strncmp(text, "comm:", 5) == 0 ? 'm' : text[0];
	snprintf(r->pat, sizeof(r->pat), "%s", c + 1);
	return 0;
}

struct mallocprof *
mallocprof_create(struct profile_bpf *skel, struct proctab *pt, const char *const *rules,
    size_t nrules, int64_t rate, uint32_t live_cap)
{
	struct mallocprof *m = calloc(1, sizeof(*m));
	size_t i;

	if (m == NULL)
		return NULL;
	pthread_mutex_init(&m->det.mu, NULL);
	pthread_cond_init(&m->det.work, NULL);
	m->skel = skel;
	m->pt = pt;
	m->live_fd = bpf_map__fd(skel->maps.malloc_live);
	m->live_cap = live_cap;
	m->rate = (double)rate;
	m->self = (uint32_t)getpid();
	m->rules = calloc(nrules ? nrules : 1, sizeof(*m->rules));
	m->s = calloc(1, sizeof(*m->s));
	m->keys = calloc(MP_BATCH, sizeof(*m->keys));
	m->vals = calloc(MP_BATCH, sizeof(*m->vals));
	if (m->rules == NULL || m->s == NULL || m->keys == NULL || m->vals == NULL) {
		mallocprof_destroy(m);
		return NULL;
	}
	for (i = 0; i < nrules; i++) {
		if (rule_parse(&m->rules[m->nrules], rules[i]) < 0)
			continue;
		if (m->rules[m->nrules].kind != 'p')
			m->names = true;
		m->nrules++;
	}
	elf_version(EV_CURRENT);
	return m;
}

static void *
detacher_main(void *arg)
{
	struct detacher *d = arg;
	struct bpf_link *l;

	pthread_setname_np(pthread_self(), "pf-unprobe");
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (d->n == 0 && !d->stop)
			pthread_cond_wait(&d->work, &d->mu);
		if (d->n == 0)
			break;
		l = d->q[d->head];
		d->head = (d->head + 1) % (sizeof(d->q) / sizeof(d->q[0]));
		d->n--;
		d->busy++;
		pthread_mutex_unlock(&d->mu);
		bpf_link__destroy(l);
		pthread_mutex_lock(&d->mu);
		d->busy--;
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* Probed processes' worth of links still to destroy, rounded up. */
static size_t
detach_pending(struct mallocprof *m)
{
	size_t n;

	pthread_mutex_lock(&m->det.mu);
	n = m->det.n + m->det.busy;
	pthread_mutex_unlock(&m->det.mu);
	return (n + MP_LINKS - 1) / MP_LINKS;
}

/* Whether one more process may be probed: those probed and those whose links are being destroyed. */
static bool
room(struct mallocprof *m)
{
	return m->ntargets_on + detach_pending(m) < MP_MAX_PROBED;
}

static void
target_detach(struct mallocprof *m, struct target *t)
{
	struct detacher *d = &m->det;
	int i;

	pthread_mutex_lock(&d->mu);
	while (d->nth < MP_DETACHERS && d->nth < t->nlinks &&
	    pthread_create(&d->th[d->nth], NULL, detacher_main, d) == 0)
		d->nth++;
	for (i = 0; i < t->nlinks; i++) {
		if (d->nth == 0 || d->n == sizeof(d->q) / sizeof(d->q[0])) {
			bpf_link__destroy(t->links[i]);	/* no thread; or (not by room()) no space */
			continue;
		}
		d->q[(d->head + d->n) % (sizeof(d->q) / sizeof(d->q[0]))] = t->links[i];
		d->n++;
	}
	pthread_cond_broadcast(&d->work);
	pthread_mutex_unlock(&d->mu);
	if (t->state == T_ON)
		m->ntargets_on--;
	t->nlinks = 0;
	t->state = T_OFF;
}

static void
stack_put(struct mallocprof *m, struct mstack *st)
{
	struct mstack **sp;

	if (st == NULL || --st->refs > 0)
		return;
	for (sp = &m->stacks[st->hash & (MP_SBUCKETS - 1)]; *sp != NULL; sp = &(*sp)->next)
		if (*sp == st) {
			*sp = st->next;
			break;
		}
	m->nstacks--;
	m->stack_bytes -= sizeof(*st) + st->size;
	budget_release(sizeof(*st) + st->size);
	free(st);
}

static void
live_free(struct mallocprof *m, struct mlive *l)
{
	stack_put(m, l->st);
	m->nlive--;
	budget_release(sizeof(*l));
	free(l);
}

/* Let go of the blocks of pid (all: every one). */
static void
live_drop(struct mallocprof *m, uint32_t pid, bool all)
{
	struct mlive **lp, *l;
	size_t b;

	for (b = 0; b < MP_LBUCKETS && m->nlive > 0; b++)
		for (lp = &m->live[b]; (l = *lp) != NULL;) {
			if (all || l->pid == pid) {
				*lp = l->next;
				live_free(m, l);
			} else {
				lp = &l->next;
			}
		}
}

void
mallocprof_destroy(struct mallocprof *m)
{
	struct target *t, *next;
	size_t b;
	int i;

	if (m == NULL)
		return;
	for (b = 0; b < MP_BUCKETS; b++)
		for (t = m->targets[b]; t != NULL; t = next) {
			next = t->next;
			target_detach(m, t);
			free(t);
		}
	/* The links left are destroyed before the threads end. */
	pthread_mutex_lock(&m->det.mu);
	m->det.stop = true;
	pthread_cond_broadcast(&m->det.work);
	pthread_mutex_unlock(&m->det.mu);
	for (i = 0; i < m->det.nth; i++)
		pthread_join(m->det.th[i], NULL);
	pthread_cond_destroy(&m->det.work);
	pthread_mutex_destroy(&m->det.mu);
	live_drop(m, 0, true);
	free(m->rules);
	free(m->s);
	free(m->keys);
	free(m->vals);
	free(m->dels);
	free(m);
}

/* --- which processes ------------------------------------------------------ */

static const char *
label_value(const struct proc *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->labels.n; i++)
		if (strcmp(p->labels.pairs[i].key, key) == 0)
			return p->labels.pairs[i].value;
	return NULL;
}

/* As proctab's filter rules match, from what the process table keeps of p. */
static bool
rule_match(const struct rule *r, const struct proc *p)
{
	const char *v, *base;
	char unit[256];

	switch (r->kind) {
	case 'p':
		return p->pid == r->pid;
	case 'u':
		if ((v = label_value(p, "unit")) == NULL)
			return false;
		snprintf(unit, sizeof(unit), "%s", v);
		if (strlen(unit) > 8 && strcmp(unit + strlen(unit) - 8, ".service") == 0)
			unit[strlen(unit) - 8] = '\0';
		return fnmatch(r->pat, v, 0) == 0 || fnmatch(r->pat, unit, 0) == 0;
	case 'c':
		/* A container by its id or, as its service is named, by its name. */
		if ((v = label_value(p, "container")) == NULL)
			return false;
		return fnmatch(r->pat, v, 0) == 0 || fnmatch(r->pat, p->service, 0) == 0;
	case 'm':
		base = p->exe ? (strrchr(p->exe, '/') ? strrchr(p->exe, '/') + 1 : p->exe) : NULL;
		return fnmatch(r->pat, p->comm, 0) == 0 || (base && fnmatch(r->pat, base, 0) == 0);
	case 's':
		return fnmatch(r->pat, p->service, 0) == 0;
	}
	return false;
}

static bool
is_libc(const char *name)
{
	const char *b = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	size_t n = strlen(b);

	return strcmp(b, "libc.so.6") == 0 || strcmp(b, "libc.so") == 0 ||
	    (strncmp(b, "libc-", 5) == 0 && n > 8 && strcmp(b + n - 3, ".so") == 0) ||
	    strncmp(b, "ld-musl-", 8) == 0;
}

/* The file offsets of fnames in the ELF file fd; -errno, or 0 with at least malloc's. */
static int
elf_offsets(int fd, uint64_t off[F_N])
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf_Data *d;
	size_t nph, i, k, n;
	const char *name;
	int f, rc = -ENOENT;

	memset(off, 0, F_N * sizeof(*off));
	if (elf == NULL)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0) {
		rc = -EINVAL;
		goto out;
	}
	/* The dynamic symbols first (what the dynamic linker binds), then the static ones. */
	for (k = 0; k < 2; k++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) != NULL) {
			if (gelf_getshdr(scn, &sh) == NULL || sh.sh_entsize == 0 ||
			    sh.sh_type != (k == 0 ? SHT_DYNSYM : SHT_SYMTAB) ||
			    (d = elf_getdata(scn, NULL)) == NULL)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (i = 0; i < n; i++) {
				if (gelf_getsym(d, (int)i, &sym) == NULL ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
				    sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
				    (name = elf_strptr(elf, sh.sh_link, sym.st_name)) == NULL)
					continue;
				for (f = 0; f < F_N; f++)
					if (off[f] == 0 && strcmp(name, fnames[f]) == 0)
						break;
				if (f == F_N)
					continue;
				/* Its address to an offset in the file, through its segment. */
				for (size_t j = 0; j < nph; j++) {
					if (gelf_getphdr(elf, (int)j, &ph) == NULL ||
					    ph.p_type != PT_LOAD || sym.st_value < ph.p_vaddr ||
					    sym.st_value >= ph.p_vaddr + ph.p_memsz)
						continue;
					off[f] = sym.st_value - ph.p_vaddr + ph.p_offset;
					break;
				}
			}
		}
	}
	rc = off[F_MALLOC] != 0 && off[F_FREE] != 0 ? 0 : -ENOENT;
out:
	elf_end(elf);
	return rc;
}

/* The offsets for mapping pm (its file read once for all the processes that map it). */
static int
lib_offsets(struct mallocprof *m, const struct proc_mapping *pm, uint64_t out[F_N])
{
	struct offs *o;
	size_t i;
	int fd, rc;

	for (i = 0; i < MP_OFFS_CACHE; i++) {
		o = &m->offs[i];
		if (o->used && o->dev == pm->dev && o->ino == pm->ino) {
			memcpy(out, o->off, sizeof(o->off));
			return out[F_MALLOC] ? 0 : -ENOENT;
		}
	}
	if ((fd = proctab_open_mapping(pm)) < 0)
		return fd;
	rc = elf_offsets(fd, out);
	close(fd);
	if (rc == -ENOENT || rc == 0) {
		o = &m->offs[m->offs_next++ % MP_OFFS_CACHE];
		o->used = true;
		o->dev = pm->dev;
		o->ino = pm->ino;
		memcpy(o->off, out, sizeof(o->off));
	}
	return rc;
}

/*
 * Probe p's C library (else its executable, statically linked): 0 done,
 * -EAGAIN none mapped yet, -errno.
 */
static int probe(struct mallocprof *m, struct target *t, const char *path,
    const uint64_t off[F_N]);

static int
target_attach(struct mallocprof *m, struct target *t, struct proc *p)
{
	static const char *const others[] = { "jemalloc", "tcmalloc", "mimalloc", "hoard" };
	struct proc_mapping pm, found;
	uint64_t off[F_N];
	const char *paths[3], *other = NULL;
	bool have = false, libc = false;
	size_t i, k;
	int rc = -ENOENT;

	for (i = 0; proctab_mapping(p, i, &pm) == 0; i++) {
		for (k = 0; k < sizeof(others) / sizeof(others[0]) && other == NULL; k++)
			if (strstr(pm.name, others[k]) != NULL)
				other = others[k];
		if (is_libc(pm.name) && !libc) {
			found = pm;
			have = libc = true;
		}
		if (!have && p->exe && strcmp(pm.name, p->exe) == 0) {
			found = pm;	/* a static executable's own malloc, unless a libc comes */
			have = true;
		}
	}
	if (!have)
		return -EAGAIN;
	if (other != NULL)
		log_warnx("ebpf: --ebpf-malloc: pid %u (%s) maps %s, which may replace the C "
		    "library's malloc: its allocations are then not seen", p->pid, p->comm, other);
	if ((rc = lib_offsets(m, &found, off)) < 0)
		return is_libc(found.name) ? rc : -EAGAIN;
	/*
	 * The file the process maps, whatever namespace it is in: its
	 * /proc/PID/map_files link first (the kernel follows it to the file
	 * without a lookup in the process's file system), then the name in
	 * the process's root, then the name as we see it.
	 */
	paths[0] = found.open_path;
	paths[1] = found.alt_path;
	paths[2] = found.name;
	for (k = 0; k < 3 && t->state != T_ON; k++)
		if (paths[k][0] == '/' && (rc = probe(m, t, paths[k], off)) < 0)
			log_debug("ebpf: --ebpf-malloc: pid %u: uprobes on %s: %s", p->pid,
			    paths[k], strerror(-rc));
	if (t->state != T_ON)
		return rc;
	log_info("ebpf: --ebpf-malloc: pid %u (%s, service %s): allocations sampled in %s",
	    p->pid, p->comm, p->service, found.name);
	return 0;
}

/* Probe off's functions in the file at path for t: 0, or -errno (none left attached). */
static int
probe(struct mallocprof *m, struct target *t, const char *path, const uint64_t off[F_N])
{
	struct bpf_program *in[F_N] = { m->skel->progs.malloc_in, m->skel->progs.malloc_calloc_in,
	    m->skel->progs.malloc_realloc_in, m->skel->progs.malloc_free_in,
	    m->skel->progs.malloc_memalign_in, m->skel->progs.malloc_aligned_in,
	    m->skel->progs.malloc_aligned_in };
	struct bpf_program *out[F_N] = { m->skel->progs.malloc_out, m->skel->progs.malloc_out,
	    m->skel->progs.malloc_out, NULL, m->skel->progs.malloc_memalign_out,
	    m->skel->progs.malloc_out, m->skel->progs.malloc_out };
	int f, rc;

	for (f = 0; f < F_N; f++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo);

		if (off[f] == 0)
			continue;
		/* The return first: an entry without it would leave its call pending. */
		if (out[f] != NULL) {
			uo.retprobe = true;
			if ((t->links[t->nlinks] = bpf_program__attach_uprobe_opts(out[f],
			    (pid_t)t->pid, path, off[f], &uo)) == NULL)
				goto fail;
			t->nlinks++;
		}
		uo.retprobe = false;
		if ((t->links[t->nlinks] = bpf_program__attach_uprobe_opts(in[f], (pid_t)t->pid,
		    path, off[f], &uo)) == NULL)
			goto fail;
		t->nlinks++;
	}
	t->state = T_ON;
	m->ntargets_on++;
	return 0;
fail:
	rc = -errno;
	target_detach(m, t);
	return rc < 0 ? rc : -EIO;
}

/* Whether pid is selected; *pp its process when the table was asked. */
static bool
selected(struct mallocprof *m, uint32_t pid, struct proc **pp)
{
	struct proc *p;
	size_t i;

	*pp = NULL;
	if (pid == m->self)
		return false;
	for (i = 0; i < m->nrules; i++)
		if (m->rules[i].kind == 'p' && m->rules[i].pid == pid)
			break;
	if (i == m->nrules && !m->names)
		return false;
	if ((p = proctab_get(m->pt, pid, NULL)) == NULL || p->gone || p->kthread || p->excluded)
		return false;
	*pp = p;
	if (i < m->nrules)
		return true;
	for (i = 0; i < m->nrules; i++)
		if (m->rules[i].kind != 'p' && rule_match(&m->rules[i], p))
			return true;
	return false;
}

static struct target *
target_get(struct mallocprof *m, uint32_t pid, bool create)
{
	struct target **b = &m->targets[pid & (MP_BUCKETS - 1)], *t;

	for (t = *b; t != NULL; t = t->next)
		if (t->pid == pid)
			return t;
	if (!create || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->pid = pid;
	t->state = T_WAIT;	/* looked at below */
	t->next = *b;
	*b = t;
	return t;
}

static void
target_look(struct mallocprof *m, struct target *t)
{
	struct proc *p;
	int rc;

	if (!selected(m, t->pid, &p)) {
		t->state = T_OFF;
		return;
	}
	if (!room(m)) {
		t->state = T_FULL;
		m->full++;
		if (m->full_log == 0 || clock_mono_ns() - m->full_log >= MP_FULL_LOG_NS) {
			log_warnx("ebpf: --ebpf-malloc: pid %u (%s) is selected but not probed: %d "
			    "processes are probed already (or their probes are being removed), the "
			    "most at once (%llu refusals since the last such line); narrow the "
			    "selector. It is probed when a probed one exits", t->pid, p->comm,
			    MP_MAX_PROBED,
			    (unsigned long long)(m->full - m->full_said - 1));
			m->full_said = m->full;
			m->full_log = clock_mono_ns();
		}
		return;
	}
	if ((rc = target_attach(m, t, p)) == 0)
		return;
	if (rc == -EAGAIN && ++t->tries < MP_WAIT_TRIES) {
		/* Just exec'd, most likely: the dynamic linker maps the library in a moment. */
		t->state = T_WAIT;
		if (m->next_scan > clock_mono_ns() + MP_WAIT_NS)
			m->next_scan = clock_mono_ns() + MP_WAIT_NS;
		proctab_refresh(m->pt, p, 0);	/* its libraries may be mapped by the next look */
		return;
	}
	t->state = T_OFF;
	m->attach_failures++;
	log_warnx("ebpf: --ebpf-malloc: pid %u (%s): cannot probe its allocator: %s", t->pid,
	    p->comm, rc == -EAGAIN ? "it maps no C library, and its executable has no malloc" :
	    strerror(-rc));
}

void
mallocprof_poll(struct mallocprof *m)
{
	struct target **tp, *t;
	struct dirent *de;
	int64_t now = clock_mono_ns();
	char *end;
	DIR *d;
	size_t b;

	if (now < m->next_scan)
		return;
	m->next_scan = now + MP_SCAN_NS;
	if ((d = opendir("/proc")) == NULL)
		return;
	m->scan++;
	while ((de = readdir(d)) != NULL) {
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end != '\0' || pid == 0 || pid > UINT32_MAX)
			continue;
		if ((t = target_get(m, (uint32_t)pid, true)) == NULL)
			break;
		if (t->scan == 0 || t->state == T_WAIT ||
		    (t->state == T_FULL && room(m)))
			target_look(m, t);
		t->scan = m->scan;
	}
	closedir(d);
	/* Processes gone without an exit notice (lost, or before the start). */
	for (b = 0; b < MP_BUCKETS; b++)
		for (tp = &m->targets[b]; (t = *tp) != NULL;) {
			if (t->scan != m->scan) {
				*tp = t->next;
				if (t->state == T_ON)
					live_drop(m, t->pid, false);
				target_detach(m, t);
				free(t);
			} else {
				tp = &t->next;
			}
		}
}

uint32_t
mallocprof_live_cap(void)
{
	static bool said;
	const char *v = getenv("PROFILEFS_EBPF_MALLOC_LIVE");
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0')
		return MALLOC_LIVE_DEFAULT;
	n = strtoul(v, &end, 10);
	if (*end != '\0' || n < 16 || n > 4194304) {
		if (!said)	/* once, however often asked */
			log_warnx("PROFILEFS_EBPF_MALLOC_LIVE=%s: not 16..4194304; using %u", v,
			    MALLOC_LIVE_DEFAULT);
		said = true;
		return MALLOC_LIVE_DEFAULT;
	}
	return (uint32_t)n;
}

void
mallocprof_forget(struct mallocprof *m, uint32_t pid, bool exec)
{
	int64_t soon;

	struct target **tp, *t;

	for (tp = &m->targets[pid & (MP_BUCKETS - 1)]; (t = *tp) != NULL; tp = &t->next)
		if (t->pid == pid) {
			*tp = t->next;
			if (t->state == T_ON)
				live_drop(m, pid, false);
			target_detach(m, t);
			free(t);
			break;
		}
	/*
	 * An exec'd process is looked at again soon: its new image may be
	 * selected (a scan a tenth of a second at most, however many execs).
	 */
	soon = clock_mono_ns() + MP_EXEC_SCAN_NS;
	if (exec && m->next_scan > soon)
		m->next_scan = soon;
}

/* --- samples and blocks -------------------------------------------------- */

/* Go's scaling: how many allocations of size bytes one sample stands for. */
static double
weight(const struct mallocprof *m, uint64_t size)
{
	double x = (double)(size ? size : 1) / m->rate;

	if (m->rate <= 0)
		return 1;
	return 1 / -expm1(-x);
}

static uint32_t
user_frames(const struct prof_sample *s)
{
	uint32_t nu = s->ustack_len > 0 ? (uint32_t)s->ustack_len / 8 : 0;

	return nu > PROF_MAX_USTACK ? PROF_MAX_USTACK : nu;
}

static uint64_t
stack_hash(const struct prof_sample *s, uint32_t nu, uint32_t rt_len)
{
	uint64_t h = hash_bytes(s->ustack, nu * sizeof(uint64_t));

	h ^= hash_bytes((const unsigned char *)s + PROF_SAMPLE_BASE, rt_len) * 0x9e3779b97f4a7c15ULL;
	return (h ^ ((uint64_t)s->hdr.pid << 17) ^ s->rt) * 0xc2b2ae3d27d4eb4fULL;
}

/* The stack of s, held (a reference more), or NULL: no room. */
static struct mstack *
stack_get(struct mallocprof *m, const struct prof_sample *s)
{
	size_t head = offsetof(struct prof_sample, kstack), size;
	uint32_t nu = user_frames(s), rt_len = prof_sample_size(s) - (uint32_t)PROF_SAMPLE_BASE;
	uint64_t h = stack_hash(s, nu, rt_len);
	struct mstack **sp = &m->stacks[h & (MP_SBUCKETS - 1)], *st;
	const struct prof_sample *x;
	unsigned char *d;

	for (st = *sp; st != NULL; st = st->next) {
		x = (const struct prof_sample *)(const void *)st->data;
		if (st->hash == h && st->nu == nu && st->rt_len == rt_len &&
		    x->hdr.pid == s->hdr.pid &&
		    memcmp(st->data + head, s->ustack, nu * sizeof(uint64_t)) == 0) {
			st->refs++;
			return st;
		}
	}
	size = head + nu * sizeof(uint64_t) + rt_len;
	if (budget_reserve(sizeof(*st) + size) < 0)
		return NULL;
	if ((st = malloc(sizeof(*st) + size)) == NULL) {
		budget_release(sizeof(*st) + size);
		return NULL;
	}
	st->hash = h;
	st->refs = 1;
	st->nu = nu;
	st->rt_len = rt_len;
	st->size = (uint32_t)size;
	st->acc_n = st->acc_b = 0;
	d = st->data;
	memcpy(d, s, head);
	memcpy(d + head, s->ustack, nu * sizeof(uint64_t));
	memcpy(d + head + nu * sizeof(uint64_t), (const unsigned char *)s + PROF_SAMPLE_BASE,
	    rt_len);
	st->next = *sp;
	*sp = st;
	m->nstacks++;
	m->stack_bytes += sizeof(*st) + size;
	return st;
}

static void
stack_unpack(const struct mstack *st, struct prof_sample *s)
{
	size_t head = offsetof(struct prof_sample, kstack);

	memcpy(s, st->data, head);
	s->kstack_len = 0;
	memcpy(s->ustack, st->data + head, st->nu * sizeof(uint64_t));
	memcpy((unsigned char *)s + PROF_SAMPLE_BASE, st->data + head + st->nu * sizeof(uint64_t),
	    st->rt_len);
}

static struct mlive **
live_slot(struct mallocprof *m, uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr >> 4) * 0x9e3779b97f4a7c15ULL ^ pid;
	struct mlive **lp = &m->live[(h >> 20) & (MP_LBUCKETS - 1)];

	while (*lp != NULL && ((*lp)->pid != pid || (*lp)->addr != addr))
		lp = &(*lp)->next;
	return lp;
}

void
mallocprof_sample(struct mallocprof *m, const struct prof_sample *s, int64_t vals[4])
{
	uint64_t size = s->offcpu_ns;
	double w = weight(m, size);
	struct mlive **lp, *l;
	struct mstack *st;

	vals[0] = llround(w);
	vals[1] = llround(w * (double)size);
	vals[2] = vals[3] = 0;
	if (s->waits & PROF_MALLOC_UNTRACKED)
		return;		/* counted by the BPF side */
	lp = live_slot(m, s->hdr.pid, s->mem_addr);
	if ((l = *lp) != NULL) {
		/* The address came back: the block held before was freed. */
		stack_put(m, l->st);
		l->st = NULL;
	} else {
		if (m->nlive >= m->live_cap || budget_reserve(sizeof(*l)) < 0) {
			m->untracked++;
			return;
		}
		if ((l = calloc(1, sizeof(*l))) == NULL) {
			budget_release(sizeof(*l));
			m->untracked++;
			return;
		}
		l->pid = s->hdr.pid;
		l->addr = s->mem_addr;
		*lp = l;
		m->nlive++;
	}
	l->size = size;
	l->seen = 0;	/* until the next flush finds it in malloc_live */
	if ((st = stack_get(m, s)) == NULL) {
		*lp = l->next;
		live_free(m, l);
		m->untracked++;
		return;
	}
	l->st = st;
}

/* Read malloc_live: mark the blocks it has, note the keys of processes not probed. */
static void
read_live(struct mallocprof *m)
{
	uint64_t in = 0, out = 0;
	uint32_t count, i;
	struct mlive *l;
	struct target *t;
	bool first = true, done = false;

	m->ndels = 0;
	while (!done) {
		count = MP_BATCH;
		if (bpf_map_lookup_batch(m->live_fd, first ? NULL : &in, &out, m->keys, m->vals,
		    &count, NULL) < 0) {
			if (errno != ENOENT) {
				log_warnx("ebpf: --ebpf-malloc: reading malloc_live: %s",
				    strerror(errno));
				return;
			}
			done = true;
		}
		first = false;
		in = out;
		for (i = 0; i < count && i < MP_BATCH; i++) {
			if ((l = *live_slot(m, m->keys[i].pid, m->keys[i].addr)) != NULL &&
			    l->size == m->vals[i]) {
				l->seen = m->flushes;
				continue;
			}
			t = target_get(m, m->keys[i].pid, false);
			if (t != NULL && t->state == T_ON) {
				m->unknown++;	/* its sample was lost, or comes next */
				continue;
			}
			/* Of a process no longer probed: its room is freed. */
			if (m->ndels == m->dels_cap) {
				size_t cap = m->dels_cap ? 2 * m->dels_cap : 256;
				struct prof_malloc_key *n = reallocarray(m->dels, cap, sizeof(*n));

				if (n == NULL)
					continue;
				m->dels = n;
				m->dels_cap = cap;
			}
			m->dels[m->ndels++] = m->keys[i];
		}
	}
}

void
mallocprof_flush(struct mallocprof *m,
    void (*add)(void *arg, const struct prof_sample *s, const int64_t vals[4]), void *arg)
{
	struct mlive **lp, *l;
	struct mstack *st;
	double w;
	int64_t vals[4];
	size_t b, i;

	m->flushes++;
	read_live(m);
	for (i = 0; i < m->ndels; i++)
		bpf_map_delete_elem(m->live_fd, &m->dels[i]);
	for (b = 0; b < MP_LBUCKETS && m->nlive > 0; b++)
		for (lp = &m->live[b]; (l = *lp) != NULL;) {
			if (l->seen != m->flushes) {
				*lp = l->next;	/* freed */
				live_free(m, l);
				continue;
			}
			w = weight(m, l->size);
			l->st->acc_n += w;
			l->st->acc_b += w * (double)l->size;
			lp = &l->next;
		}
	for (b = 0; b < MP_SBUCKETS; b++)
		for (st = m->stacks[b]; st != NULL; st = st->next) {
			if (st->acc_n <= 0)
				continue;
			vals[0] = vals[1] = 0;
			vals[2] = llround(st->acc_n);
			vals[3] = llround(st->acc_b);
			st->acc_n = st->acc_b = 0;
			stack_unpack(st, m->s);
			add(arg, m->s, vals);
		}
}

void
mallocprof_get_stats(const struct mallocprof *m, struct mallocprof_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (m == NULL)
		return;
	st->procs = m->ntargets_on;
	st->live = m->nlive;
	st->stacks = m->nstacks;
	st->stack_bytes = m->stack_bytes;
	st->attach_failures = m->attach_failures;
	st->full = m->full;
	pthread_mutex_lock((pthread_mutex_t *)&m->det.mu);
	st->removing = m->det.n + m->det.busy;
	pthread_mutex_unlock((pthread_mutex_t *)&m->det.mu);
	st->untracked = m->untracked;
	st->unknown = m->unknown;
}
