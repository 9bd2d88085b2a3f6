/*
 * ingest: the drop box. A file created under ingest/<service>/<type>/[labels/]
 * collects its bytes in memory (bounded by INGEST_MAX and the process's memory
 * budget) and is parsed and stored when it is closed or flushed, so the result
 * of close() -- and cp's exit status -- tells whether it was stored.
 * Validation and storage are the store's; this module only buffers, names the
 * series from the path and reports the outcome in the log.
 *
 * Every open is its own ingest object: two writers of one name (two cp to the
 * same file) never share bytes, each stores what it wrote and hears its own
 * outcome. A second open of a name being written starts from a copy of the
 * newest writer's bytes (or empty with O_TRUNC), so `cat` of a file still
 * being copied shows what has arrived.
 *
 * Empty files: a close(2) while the file holds no byte stores nothing,
 * returns 0 and counts nothing. The shell's redirection (`cmd >
 * ingest/svc/cpu/f`, O_TRUNC) opens the file, dup2()s it onto the command's
 * output and closes the first descriptor before the command writes: that
 * close must not count as a failed upload. A file closed for the last time
 * without a byte (touch, `: > f`) is logged at info level as holding
 * nothing. Only a file created with O_EXCL -- cp, which copies its source
 * into a new file -- and closed empty is an upload of an empty file, which
 * fails with EINVAL like any other non-profile.
 *
 * A name whose last open closed stays resolvable, as an empty file, for
 * INGEST_GRACE after it was last resolved: the kernel keeps a name it looked
 * up for the entry timeout (10 s, fs.c) and stats it before opening it
 * again, so a writer of the same name right after (a loop of `cat > f`)
 * would otherwise fail with ENOENT. An open for writing of such a name
 * starts a new file (fs.c). Such names are not listed.
 *
 * The open files of a mount are its struct ingests (fs->ingests), made by
 * fs_main() with ingests_create(). Locking: its lock protects the list of
 * open files and every ingest's data, dirty flag, result and open count; an
 * ingest's store_lock is held across a store attempt (taken before the list's
 * lock), so a concurrent flush of the same open (a dup'd descriptor) waits
 * for the result of the attempt in progress.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "fs_int.h"

#define INGEST_MAX		(256u << 20)	/* bytes one ingest file may hold */
/* How long a write or a store attempt waits for memory before EAGAIN. */
#define BUDGET_WAIT_NS		(INT64_C(10) * 1000000000)

/* A file being written into ingest/, one per open. Protected by its list's lock. */
struct ingest {
	struct ingests	*igs;		/* the list it is on */
	struct ingest	*next;
	char		*path;
	struct fspath	 fp;
	struct buf	 data;
	pthread_mutex_t	 store_lock;	/* held across a store attempt */
	bool		 dirty;		/* written or truncated since the last store attempt */
	int		 result;	/* of the last store attempt */
	bool		 stored;	/* an attempt stored the bytes */
	bool		 excl;		/* O_EXCL (cp): closing it empty is an upload */
	int		 opens;
};

/* A name closed lately, resolvable until `until` (mono ns). */
struct ingest_gone {
	struct ingest_gone *next;
	int64_t		 until;
	char		 path[];
};

/* The kernel's entry timeout (fs.c), with a margin. */
#define INGEST_GRACE_NS		(FS_ENTRY_TIMEOUT_NS + INT64_C(1000) * 1000000)
#define INGEST_GONE_MAX		4096	/* names remembered at most */

/* The files being written into a mount's ingest/, and the names closed lately. */
struct ingests {
	pthread_mutex_t	 lock;
	struct ingest	*open;		/* newest first; protected by lock */
	struct ingest_gone *gone;	/* newest first; protected by lock */
	size_t		 ngone;		/* protected by lock */
	struct ingest_made *made;	/* newest first; protected by lock */
	size_t		 nmade;		/* protected by lock */
};

/* A directory mkdir made below ingest/ (listed, and there for mkdir). */
struct ingest_made {
	struct ingest_made *next;
	char		 path[];
};

#define INGEST_MADE_MAX		1024	/* directories remembered at most */

/*
 * The entry of a name closed lately, refreshed (a positive answer to a
 * lookup starts the kernel's timeout again), or NULL; expired entries are
 * dropped on the way. Called with igs->lock held.
 */
static struct ingest_gone *
gone_find(struct ingests *igs, const char *path, int64_t now)
{
	struct ingest_gone **pp = &igs->gone, *g, *found = NULL;

	while ((g = *pp) != NULL) {
		if (g->until <= now) {
			*pp = g->next;
			free(g);
			igs->ngone--;
			continue;
		}
		if (found == NULL && path && strcmp(g->path, path) == 0) {
			g->until = now + INGEST_GRACE_NS;
			found = g;
		}
		pp = &g->next;
	}
	return found;
}

/* Remember that path was closed. Called with igs->lock held. */
static void
gone_add(struct ingests *igs, const char *path)
{
	int64_t now = clock_mono_ns();
	struct ingest_gone *g, **pp;
	size_t n = strlen(path);

	if (gone_find(igs, path, now) != NULL)
		return;
	if (igs->ngone >= INGEST_GONE_MAX) {	/* drop the oldest */
		for (pp = &igs->gone; (*pp)->next; pp = &(*pp)->next)
			;
		free(*pp);
		*pp = NULL;
		igs->ngone--;
	}
	if ((g = malloc(sizeof(*g) + n + 1)) == NULL)
		return;		/* only the next writer's convenience is lost */
	memcpy(g->path, path, n + 1);
	g->until = now + INGEST_GRACE_NS;
	g->next = igs->gone;
	igs->gone = g;
	igs->ngone++;
}

int
ingests_create(struct ingests **out)
{
	struct ingests *igs = calloc(1, sizeof(*igs));

	*out = NULL;
	if (igs == NULL)
		return -ENOMEM;
	pthread_mutex_init(&igs->lock, NULL);
	*out = igs;
	return 0;
}

void
ingests_destroy(struct ingests *igs)
{
	struct ingest *ig, *next;

	if (igs == NULL)
		return;
	/* Opens the kernel never released (a lazy unmount): nothing to answer to. */
	for (ig = igs->open; ig; ig = next) {
		next = ig->next;
		buf_free(&ig->data);
		pthread_mutex_destroy(&ig->store_lock);
		free(ig->path);
		free(ig);
	}
	while (igs->gone) {
		struct ingest_gone *g = igs->gone;

		igs->gone = g->next;
		free(g);
	}
	while (igs->made) {
		struct ingest_made *d = igs->made;

		igs->made = d->next;
		free(d);
	}
	pthread_mutex_destroy(&igs->lock);
	free(igs);
}

/* The newest open file at path, or NULL. Called with igs->lock held. */
static struct ingest *
find(struct ingests *igs, const char *path)
{
	struct ingest *ig;

	for (ig = igs->open; ig; ig = ig->next)
		if (strcmp(ig->path, path) == 0)
			return ig;
	return NULL;
}

/* A new object for path, added to the list. Called with igs->lock held. */
static struct ingest *
ingest_new(struct ingests *igs, const char *path, const struct fspath *fp)
{
	struct ingest *ig = xcalloc(1, sizeof(*ig));

	ig->igs = igs;
	ig->path = xstrdup(path);
	pthread_mutex_init(&ig->store_lock, NULL);
	ig->fp = *fp;
	ig->opens = 1;
	ig->data.max = INGEST_MAX;
	ig->next = igs->open;
	igs->open = ig;
	return ig;
}

int
ingest_create(struct fsctx *fs, const char *path, const struct fspath *fp, bool excl,
    struct ingest **out)
{
	struct ingests *igs = fs->ingests;

	pthread_mutex_lock(&igs->lock);
	*out = ingest_new(igs, path, fp);
	/* Such a create is an upload even if no byte follows (see above). */
	(*out)->dirty = (*out)->excl = excl;
	pthread_mutex_unlock(&igs->lock);
	return 0;
}

int
ingest_open(struct fsctx *fs, const char *path, bool trunc, struct ingest **out)
{
	struct ingests *igs = fs->ingests;
	struct ingest *ig, *prev;
	int rc = 0;

	*out = NULL;
	pthread_mutex_lock(&igs->lock);
	if ((prev = find(igs, path)) == NULL) {
		pthread_mutex_unlock(&igs->lock);
		return -ENOENT;
	}
	ig = ingest_new(igs, path, &prev->fp);
	if (trunc)
		ig->dirty = true;
	else if (prev->data.len && (rc = buf_add(&ig->data, prev->data.data, prev->data.len)) < 0) {
		/* No memory for the copy: this open fails, the writer goes on. */
		igs->open = ig->next;
		buf_free(&ig->data);
		pthread_mutex_destroy(&ig->store_lock);
		free(ig->path);
		free(ig);
		ig = NULL;
	}
	pthread_mutex_unlock(&igs->lock);
	if (rc < 0) {
		log_warnx("ingest: cannot open %s again: the memory budget of %zu MiB is in use",
		    path, budget_limit() >> 20);
		return -EAGAIN;
	}
	*out = ig;
	return 0;
}

/* Set ig's length to size, zero-filling a hole. Called with igs->lock held. */
static int
resize(struct ingest *ig, size_t size)
{
	struct buf *b = &ig->data;
	int rc;

	if (size <= b->len) {
		b->len = size;
		if (b->data)
			b->data[size] = '\0';
		return 0;
	}
	b->err = 0;	/* a refused growth is retried, not sticky */
	if ((rc = buf_reserve(b, size - b->len)) < 0) {
		b->err = 0;
		return rc;
	}
	memset(b->data + b->len, 0, size - b->len);
	b->len = size;
	b->data[size] = '\0';
	return 0;
}

/* resize(), waiting once for the memory budget. Called with igs->lock held. */
static int
resize_wait(struct ingest *ig, size_t size)
{
	struct ingests *igs = ig->igs;
	size_t more;
	int rc;

	if ((rc = resize(ig, size)) != -ENOMEM)
		return rc;
	more = size - ig->data.len;
	pthread_mutex_unlock(&igs->lock);
	rc = budget_wait(more, BUDGET_WAIT_NS);
	pthread_mutex_lock(&igs->lock);
	if (rc == 0 && (rc = resize(ig, size)) == 0)
		return 0;
	log_warnx("ingest: %s: no memory for %zu more bytes (the memory budget of %zu MiB "
	    "is in use); try again", ig->path, more, budget_limit() >> 20);
	return -EAGAIN;
}

int
ingest_write(struct ingest *ig, const char *data, size_t size, off_t off)
{
	struct ingests *igs = ig->igs;
	int rc = 0;

	if (off < 0 || (uint64_t)off + size > INGEST_MAX) {
		log_warnx("ingest: %s is larger than the limit of %u MiB", ig->path,
		    INGEST_MAX >> 20);
		return -EFBIG;
	}
	pthread_mutex_lock(&igs->lock);
	if ((size_t)off + size > ig->data.len)
		rc = resize_wait(ig, (size_t)off + size);
	if (rc == 0) {
		if (size)
			memcpy(ig->data.data + off, data, size);
		ig->dirty = true;
	}
	pthread_mutex_unlock(&igs->lock);
	return rc < 0 ? rc : (int)size;
}

int
ingest_read(struct ingest *ig, char *out, size_t size, off_t off)
{
	struct ingests *igs = ig->igs;
	const struct buf *b;
	size_t n;

	pthread_mutex_lock(&igs->lock);
	b = &ig->data;
	n = off < 0 || (size_t)off >= b->len ? 0 : b->len - (size_t)off;
	n = n < size ? n : size;
	if (n)
		memcpy(out, b->data + off, n);
	pthread_mutex_unlock(&igs->lock);
	return (int)n;
}

int
ingest_truncate(struct fsctx *fs, const char *path, struct ingest *ig, off_t size)
{
	struct ingests *igs = fs->ingests;
	int rc;

	pthread_mutex_lock(&igs->lock);
	if (ig == NULL && (ig = find(igs, path)) == NULL) {
		pthread_mutex_unlock(&igs->lock);
		return -ENOENT;
	}
	if (size < 0 || (uint64_t)size > INGEST_MAX)
		rc = -EFBIG;
	else if ((rc = resize_wait(ig, (size_t)size)) == 0)
		ig->dirty = true;
	pthread_mutex_unlock(&igs->lock);
	return rc;
}

int
ingest_size(struct fsctx *fs, const char *path, struct ingest *ig, off_t *size)
{
	struct ingests *igs = fs->ingests;
	bool gone = false;

	pthread_mutex_lock(&igs->lock);
	if (ig == NULL)
		ig = find(igs, path);
	if (ig)
		*size = (off_t)ig->data.len;
	else if ((gone = gone_find(igs, path, clock_mono_ns()) != NULL))
		*size = 0;
	pthread_mutex_unlock(&igs->lock);
	return ig || gone ? 0 : -ENOENT;
}

void
ingest_list(struct fsctx *fs, const char *dir, struct buf *names)
{
	struct ingests *igs = fs->ingests;
	struct ingest *ig, *o;
	struct ingest_made *d;
	size_t plen = strlen(dir);

	pthread_mutex_lock(&igs->lock);
	for (d = igs->made; d; d = d->next)
		if (strncmp(d->path, dir, plen) == 0 && d->path[plen] == '/' &&
		    strchr(d->path + plen + 1, '/') == NULL)
			buf_add(names, d->path + plen + 1, strlen(d->path + plen + 1) + 1);
	for (ig = igs->open; ig; ig = ig->next) {
		if (strncmp(ig->path, dir, plen) != 0 || ig->path[plen] != '/' ||
		    strchr(ig->path + plen + 1, '/') != NULL)
			continue;
		/* A name several opens write is listed once. */
		for (o = igs->open; o != ig && strcmp(o->path, ig->path) != 0; o = o->next)
			;
		if (o == ig)
			buf_add(names, ig->path + plen + 1, strlen(ig->path + plen + 1) + 1);
	}
	pthread_mutex_unlock(&igs->lock);
}

int
ingest_flush(struct fsctx *fs, struct ingest *ig)
{
	struct ingests *igs = ig->igs;
	struct labelset ls = { .n = 0 };
	struct store_input in;
	struct store_ref ref;
	struct buf err = { 0 }, data = { 0 };
	char idh[17];
	size_t want;
	int rc;

	memset(&in, 0, sizeof(in));
	pthread_mutex_lock(&ig->store_lock);
	pthread_mutex_lock(&igs->lock);
	/*
	 * Nothing to store (yet): no attempt, no count, no error (see the top
	 * of the file); a write through another descriptor stores later.
	 */
	if (!ig->dirty || (ig->data.len == 0 && !ig->excl)) {
		rc = ig->dirty ? 0 : ig->result;
		pthread_mutex_unlock(&igs->lock);
		pthread_mutex_unlock(&ig->store_lock);
		return rc;
	}
	ig->dirty = false;
	/* The bytes move out for the attempt (no copy) and back after it. */
	data = ig->data;
	memset(&ig->data, 0, sizeof(ig->data));
	ig->data.max = INGEST_MAX;
	pthread_mutex_unlock(&igs->lock);
	/* Decoding takes memory too: wait until some of the budget is free. */
	want = data.len < (1u << 20) ? (1u << 20) : data.len;
	if (budget_wait(want < budget_limit() / 4 ? want : budget_limit() / 4,
	    BUDGET_WAIT_NS) < 0) {
		buf_printf(&err, "the memory budget of %zu MiB is in use; try again",
		    budget_limit() >> 20);
		rc = -EAGAIN;
		goto out;
	}
	if (ig->fp.ingest_labels[0] && labels_parse(ig->fp.ingest_labels, &ls, &err) < 0) {
		rc = -EINVAL;
		goto out;
	}
	in.service = ig->fp.service;
	in.type = ig->fp.type;
	in.labels = &ls;
	in.source = "ingest";
	rc = store_put(fs->st, &in, data.data ? data.data : "", data.len, &ref, &err); /* counts it */
	if (rc == -ENOMEM) {
		buf_reset(&err);
		buf_printf(&err, "the memory budget of %zu MiB is in use; try again",
		    budget_limit() >> 20);
		rc = -EAGAIN;
	}
	if (rc == 0) {
		store_id_format(ref.id, idh);
		log_info("ingest: stored %s as %s/%s profile %s (%zu bytes)", ig->path,
		    ig->fp.service, ref.type, idh, data.len);
	}
out:
	if (rc < 0) {
		errlog_note("ingest: refused %s: %s", ig->path,
		    err.data ? err.data : strerror(-rc));
		if (rc == -EINVAL && in.service == NULL)	/* refused before the store */
			metrics_add(METRIC_INGESTED_PROFILES,
			    "source=\"ingest\",outcome=\"invalid\"", 1);
		/*
		 * EIO for storage trouble, EAGAIN for memory, EFBIG for size,
		 * ENOSPC for a full disk, EINVAL for everything else the file did wrong.
		 */
		if (rc != -EIO && rc != -EAGAIN && rc != -EFBIG && rc != -ENOSPC)
			rc = -EINVAL;
	}
	pthread_mutex_lock(&igs->lock);
	if (ig->data.len == 0 && !ig->dirty) {
		buf_free(&ig->data);
		ig->data = data;
		memset(&data, 0, sizeof(data));
	}
	ig->result = rc;
	ig->stored |= rc == 0;
	pthread_mutex_unlock(&igs->lock);
	pthread_mutex_unlock(&ig->store_lock);
	labels_clear(&ls);
	buf_free(&err);
	buf_free(&data);
	return rc;
}

void
ingest_release(struct fsctx *fs, struct ingest *ig)
{
	struct ingests *igs = ig->igs;
	struct ingest **pp;

	pthread_mutex_lock(&igs->lock);
	if (--ig->opens > 0) {
		pthread_mutex_unlock(&igs->lock);
		return;
	}
	for (pp = &igs->open; *pp && *pp != ig; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = ig->next;
	if (find(igs, ig->path) == NULL)
		gone_add(igs, ig->path);
	pthread_mutex_unlock(&igs->lock);
	/* Written but never flushed (a writer that died): store it now. */
	if (ig->dirty)
		ingest_flush(fs, ig);
	if (ig->data.len == 0 && !ig->stored && !ig->excl)
		log_info("ingest: %s was created and closed without data; nothing stored",
		    ig->path);
	buf_free(&ig->data);
	pthread_mutex_destroy(&ig->store_lock);
	free(ig->path);
	free(ig);
}

/* A lookup the kernel repeats is noted once: errlog.c counts a note equal to the newest. */
void
ingest_explain(const char *path)
{
	char seg[256];
	const char *p, *e;
	struct buf err = { 0 };
	int depth;

	/* path is /ingest/<service>/<type>/...: the first segment that fails. */
	p = path + strlen("/ingest");
	for (depth = 0; depth < 2 && *p == '/'; depth++) {
		p++;
		if ((e = strchr(p, '/')) == NULL)
			e = p + strlen(p);
		if (e == p || (size_t)(e - p) >= sizeof(seg))
			break;
		memcpy(seg, p, (size_t)(e - p));
		seg[e - p] = '\0';
		if ((depth == 0 ? store_check_service_name(seg, &err) :
		    store_check_known_type(seg, &err)) < 0) {
			errlog_note("ingest: %s: %s; files go in "
			    "ingest/<service>/<type>/[<k=v,...>/]<file>", path,
			    err.data ? err.data : "not a valid name");
			buf_free(&err);
			return;
		}
		p = e;
	}
	errlog_note("ingest: %s: files go in ingest/<service>/<type>/[<k=v,...>/]<file>", path);
}

/*
 * Directories made below ingest/. Every well-formed one exists on lookup (cp
 * into ingest/<service>/<type>/ needs no mkdir), but the kernel answers
 * mkdir of an existing name with EEXIST before asking: so to mkdir(2) a
 * directory exists once made (or, up to ingest/ itself, always), and ls
 * lists the made ones. Kept in memory, INGEST_MADE_MAX at most.
 */
bool
ingest_made(struct fsctx *fs, const char *path)
{
	struct ingests *igs = fs->ingests;
	struct ingest_made *d;

	pthread_mutex_lock(&igs->lock);
	for (d = igs->made; d && strcmp(d->path, path) != 0; d = d->next)
		;
	pthread_mutex_unlock(&igs->lock);
	return d != NULL;
}

void
ingest_mkdir(struct fsctx *fs, const char *path)
{
	struct ingests *igs = fs->ingests;
	struct ingest_made *d, **pp;
	size_t n = strlen(path) + 1;

	if (ingest_made(fs, path))
		return;
	d = xmalloc(sizeof(*d) + n);
	memcpy(d->path, path, n);
	pthread_mutex_lock(&igs->lock);
	d->next = igs->made;
	igs->made = d;
	if (++igs->nmade > INGEST_MADE_MAX) {
		for (pp = &igs->made; (*pp)->next; pp = &(*pp)->next)
			;
		free(*pp);	/* the oldest */
		*pp = NULL;
		igs->nmade--;
	}
	pthread_mutex_unlock(&igs->lock);
}

int
ingest_rmdir(struct fsctx *fs, const char *path)
{
	struct ingests *igs = fs->ingests;
	struct ingest_made **pp, *d;
	size_t n = strlen(path);
	int rc = -ENOENT;

	pthread_mutex_lock(&igs->lock);
	for (d = igs->made; d; d = d->next)
		if (strncmp(d->path, path, n) == 0 && d->path[n] == '/')
			rc = -ENOTEMPTY;	/* a directory made below it */
	for (pp = &igs->made; *pp && rc == -ENOENT; pp = &(*pp)->next)
		if (strcmp((*pp)->path, path) == 0) {
			d = *pp;
			*pp = d->next;
			free(d);
			igs->nmade--;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&igs->lock);
	return rc;
}
