/*
 * pin: the versions of generated files that open handles read. An open
 * pins the content it got from the file cache, so every read of that open,
 * and every stat of the process that holds it, sees one version while newer
 * ones are generated for new opens. Opens within PIN_QUIET of the last one
 * share its version (a reader that opens a file several times, as go tool
 * pprof does, reads one). A superseded pin stays until its last reader
 * closes. The pins of a mount are its struct pins (fs->pins), made by
 * fs_main() with pins_create().
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "store.h"
#include "cache.h"
#include "fs_int.h"

#define PIN_QUIET		(INT64_C(200) * 1000000)
#define PIN_BUCKETS		256

/*
 * A version of a generated file that open handles read. The table holds the
 * current pin of each open path and the superseded ones still open, newest
 * first; holders are the processes (thread group ids) that opened it.
 */
struct pin {
	struct pin		*next;		/* in its bucket */
	char			*path;
	struct cache_entry	*ce;		/* one cache reference, held by the pin */
	int			 opens;
	bool			 current;	/* the version new opens get */
	int64_t			 last_open;	/* mono ns */
	pid_t			*holders;	/* one per open */
	size_t			 nholders, capholders;
};

/* The pins of one mount (fs->pins). */
struct pins {
	pthread_mutex_t	 lock;
	struct pin	*bucket[PIN_BUCKETS];	/* protected by lock */
};

/* The slot of path's current pin (NULL in it if none). Called with pins->lock held. */
static struct pin **
pin_find(struct pins *pins, const char *path)
{
	struct pin **pp = &pins->bucket[hash_bytes(path, strlen(path)) % PIN_BUCKETS];

	while (*pp && (!(*pp)->current || strcmp((*pp)->path, path) != 0))
		pp = &(*pp)->next;
	return pp;
}

/* Whether path has a pin (is open). Called with pins->lock held. */
static bool
pin_any(struct pins *pins, const char *path)
{
	struct pin *p;

	for (p = pins->bucket[hash_bytes(path, strlen(path)) % PIN_BUCKETS]; p; p = p->next)
		if (strcmp(p->path, path) == 0)
			return true;
	return false;
}

/*
 * The size and birth of the version of path that the calling process reads
 * (the newest it holds open), else of the current pin; false if path is not
 * open (then stat generates as usual).
 */
bool
pin_stat(struct fsctx *fs, const char *path, off_t *size, int64_t *born)
{
	struct pins *pins = fs->pins;
	struct pin *p, *found = NULL;
	pid_t pid;
	size_t i;
	bool any;

	pthread_mutex_lock(&pins->lock);
	any = pin_any(pins, path);
	pthread_mutex_unlock(&pins->lock);
	if (!any)
		return false;
	pid = fs_caller();		/* reads /proc: not under the lock */
	pthread_mutex_lock(&pins->lock);
	for (p = pins->bucket[hash_bytes(path, strlen(path)) % PIN_BUCKETS]; p && !found;
	    p = p->next) {
		if (strcmp(p->path, path) != 0)
			continue;
		for (i = 0; i < p->nholders; i++)
			if (p->holders[i] == pid) {
				found = p;
				break;
			}
	}
	if (found == NULL)
		found = *pin_find(pins, path);
	if (found) {
		*size = (off_t)((struct buf *)found->ce->val)->len;
		*born = found->ce->born;
	}
	pthread_mutex_unlock(&pins->lock);
	return found != NULL;
}

/* One more open of p by pid. Called with pins->lock held. */
static void
pin_hold(struct pin *p, pid_t pid, int64_t now)
{
	p->holders = xgrow(p->holders, &p->capholders, p->nholders + 1, sizeof(*p->holders));
	p->holders[p->nholders++] = pid;
	p->opens++;
	p->last_open = now;
}

/* Open path's content for pid: the pinned version, or a new one that becomes the pin. */
int
pin_open(struct fsctx *fs, const char *path, const struct fspath *fp, pid_t pid,
    struct pin **out)
{
	struct pins *pins = fs->pins;
	struct cache_entry *ce = NULL;
	struct pin **pp, *p;
	int64_t now = clock_mono_ns();
	int rc;

	*out = NULL;
	pthread_mutex_lock(&pins->lock);
	pp = pin_find(pins, path);
	if ((p = *pp) != NULL && now - p->last_open < PIN_QUIET) {
		pin_hold(p, pid, now);
		pthread_mutex_unlock(&pins->lock);
		*out = p;
		return 0;
	}
	/* Generating may take long: not under the lock (a racing open may pin first). */
	pthread_mutex_unlock(&pins->lock);
	rc = fs_content(fs, path, fp, &ce);
	if (rc < 0) {
		if (ce)
			cache_release(fs->files, ce);
		return rc;
	}
	pthread_mutex_lock(&pins->lock);
	pp = pin_find(pins, path);
	if ((p = *pp) != NULL && (p->ce == ce || now - p->last_open < PIN_QUIET)) {
		/* The same version, or another open pinned one meanwhile. */
		pin_hold(p, pid, now);
		pthread_mutex_unlock(&pins->lock);
		cache_release(fs->files, ce);
		*out = p;
		return 0;
	}
	/* A superseded pin stays in the table for its readers until they close. */
	if (p != NULL)
		p->current = false;
	p = xcalloc(1, sizeof(*p));
	p->path = xstrdup(path);
	p->ce = ce;
	p->current = true;
	pin_hold(p, pid, now);
	pp = &pins->bucket[hash_bytes(path, strlen(path)) % PIN_BUCKETS];
	p->next = *pp;
	*pp = p;
	pthread_mutex_unlock(&pins->lock);
	*out = p;
	return 0;
}

/* The open of p by pid ends. */
void
pin_close(struct fsctx *fs, struct pin *p, pid_t pid)
{
	struct pins *pins = fs->pins;
	struct pin **pp;
	size_t i;

	pthread_mutex_lock(&pins->lock);
	for (i = 0; i < p->nholders; i++)
		if (p->holders[i] == pid) {
			p->holders[i] = p->holders[--p->nholders];
			break;
		}
	if (--p->opens > 0) {
		pthread_mutex_unlock(&pins->lock);
		return;
	}
	for (pp = &pins->bucket[hash_bytes(p->path, strlen(p->path)) % PIN_BUCKETS];
	    *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
	pthread_mutex_unlock(&pins->lock);
	cache_release(fs->files, p->ce);
	free(p->holders);
	free(p->path);
	free(p);
}

int
pins_create(struct pins **out)
{
	struct pins *pins = calloc(1, sizeof(*pins));

	*out = NULL;
	if (pins == NULL)
		return -ENOMEM;
	pthread_mutex_init(&pins->lock, NULL);
	*out = pins;
	return 0;
}

void
pins_destroy(struct fsctx *fs, struct pins *pins)
{
	struct pin *p, *next;
	size_t i;

	if (pins == NULL)
		return;
	/* Opens the kernel never released (a lazy unmount): their pins go too. */
	for (i = 0; i < PIN_BUCKETS; i++)
		for (p = pins->bucket[i]; p; p = next) {
			next = p->next;
			cache_release(fs->files, p->ce);
			free(p->holders);
			free(p->path);
			free(p);
		}
	pthread_mutex_destroy(&pins->lock);
	free(pins);
}

struct cache_entry *
pin_entry(const struct pin *p)
{
	return p->ce;
}
