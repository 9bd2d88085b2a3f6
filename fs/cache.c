/*
 * cache: a hash table of entries with an LRU list; all state is protected by
 * c_lock and waiting for a fill in progress uses c_cond.
 *
 * Accounting: bytes counts every entry until its memory is freed -- also an
 * entry already replaced or evicted that an open file still holds -- and
 * charges each entry its key and bookkeeping besides what its fill reports,
 * so remembered failures cost what they take. When the process's memory
 * budget runs short (budget_pressed()), unreferenced entries are dropped at
 * the cache's own safe points: when an entry is added or released, and on
 * the tick of a sweeper thread (cache_sweeper_start()) that a refused
 * reservation wakes early. The budget itself never calls in here.
 *
 * Idle: an entry nobody asked for in its cache's idle time (cache_set_idle())
 * is dropped by the sweeper's tick even when memory is plenty, and glibc is
 * then asked to give the freed pages back (malloc_trim), so that a tree walk
 * (du, grep -r) leaves the daemon as small as it found it once it is over.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "base.h"
#include "pprof.h"
#include "store.h"

#define NBUCKETS	4096
/*
 * Entries freed since glibc was last asked to give free memory back: a du
 * over a week's tree renders and drops gigabytes in small pieces, which
 * malloc otherwise keeps (RSS three times what the caches hold).
 */
#define TRIM_BYTES	(64u << 20)
/* The sweeper's tick while memory is short (a refusal wakes it sooner). */
#define CACHE_SWEEP_NS	(INT64_C(1000) * 1000000)
/* No get for this long: the sweeper trims once (see sweeper_main()). */
#define CACHE_QUIET_NS	(INT64_C(10) * 1000000000)

struct ent {
	struct cache_entry	 pub;
	uint64_t		 gen;
	int64_t			 scope;		/* what its content covers (cache_get_scoped) */
	uint64_t		 hash;
	int64_t			 used;		/* clock_mono_ns() of its last get */
	int			 refs;
	bool			 ready;
	bool			 dead;		/* unlinked; freed when refs drop to 0 */
	void			(*free_fn)(void *);
	struct ent		*hnext;
	struct ent		*lprev, *lnext;	/* LRU, most recent at head */
};

struct cache {
	pthread_mutex_t	 c_lock;
	pthread_cond_t	 c_cond;
	struct ent	*buckets[NBUCKETS];
	struct ent	*lru_head, *lru_tail;
	size_t		 bytes, max_bytes, entries;
	size_t		 freed;		/* bytes of entries freed since the last trim */
	int64_t		 idle_ns;	/* drop entries unused this long (0: never) */
	uint64_t	 fills, hits;
	cache_changed_fn	 changed;
	void		*changed_arg;
};

struct cache_sweeper {
	pthread_t	 thread;
	_Atomic bool	 stop;
	struct cache	**caches;
	size_t		 n;
};

struct cache *
cache_create(size_t max_bytes)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->c_lock, NULL);
	pthread_cond_init(&c->c_cond, NULL);
	c->max_bytes = max_bytes;
	return c;
}

size_t
cache_overhead(const char *key)
{
	return sizeof(struct ent) + strlen(key) + 1;
}

static void
ent_free(struct ent *e)
{
	if (e->free_fn && e->pub.val)
		e->free_fn(e->pub.val);
	free((char *)e->pub.key);
	free(e);
}

/* Remove e from the table and the LRU list. Caller holds c_lock. */
static void
ent_unlink(struct cache *c, struct ent *e)
{
	struct ent **pp = &c->buckets[e->hash % NBUCKETS];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		c->lru_head = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		c->lru_tail = e->lprev;
	c->entries--;
	e->dead = true;
	/* Held by a reader: still counted until cache_release() frees it. */
	if (e->refs == 0) {
		c->bytes -= e->pub.size;
		c->freed += e->pub.size;
		ent_free(e);
	}
}

/* Whether enough was freed to trim, once the lock is dropped; resets the count. Under c_lock. */
static bool
trim_due(struct cache *c)
{
	if (c->freed < TRIM_BYTES)
		return false;
	c->freed = 0;
	return true;
}

/* Put e, not on the LRU list, at its head (most recently used). */
static void
lru_push(struct cache *c, struct ent *e)
{
	e->lprev = NULL;
	e->lnext = c->lru_head;
	if (c->lru_head)
		c->lru_head->lprev = e;
	c->lru_head = e;
	if (c->lru_tail == NULL)
		c->lru_tail = e;
}

static void
lru_front(struct cache *c, struct ent *e)
{
	if (c->lru_head == e)
		return;
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else if (c->lru_tail == e)
		c->lru_tail = e->lprev;
	lru_push(c, e);
}

static void
evict_to(struct cache *c, size_t max)
{
	struct ent *e = c->lru_tail, *prev;

	while (c->bytes > max && e) {
		prev = e->lprev;
		if (e->ready && e->refs == 0)
			ent_unlink(c, e);
		e = prev;
	}
}

/* Within max_bytes; nothing unreferenced kept while memory runs short. */
static void
evict(struct cache *c)
{
	evict_to(c, budget_pressed() ? 0 : c->max_bytes);
}

void
cache_destroy(struct cache *c)
{
	struct ent *e, *n;

	if (c == NULL)
		return;
	for (e = c->lru_head; e; e = n) {
		n = e->lnext;
		ent_free(e);
	}
	pthread_mutex_destroy(&c->c_lock);
	pthread_cond_destroy(&c->c_cond);
	free(c);
}

void
cache_set_idle(struct cache *c, int64_t idle_ns)
{
	pthread_mutex_lock(&c->c_lock);
	c->idle_ns = idle_ns;
	pthread_mutex_unlock(&c->c_lock);
}

/*
 * Drop the unreferenced entries unused since before its idle time; whether
 * any went. The LRU list is in order of use: stop at the first recent one.
 * Caller holds c_lock.
 */
static bool
evict_idle(struct cache *c, int64_t now)
{
	struct ent *e = c->lru_tail, *prev;
	bool any = false;

	if (c->idle_ns <= 0)
		return false;
	while (e && now - e->used >= c->idle_ns) {
		prev = e->lprev;
		if (e->ready && e->refs == 0) {
			ent_unlink(c, e);
			any = true;
		}
		e = prev;
	}
	return any;
}

void
cache_set_changed(struct cache *c, cache_changed_fn changed, void *arg)
{
	c->changed = changed;
	c->changed_arg = arg;
}

int
cache_get(struct cache *c, const char *key, uint64_t gen, int64_t max_age_ns,
    cache_fill_fn fill, void *arg, struct cache_entry **out)
{
	return cache_get_scoped(c, key, gen, INT64_MAX, max_age_ns, fill, arg, out);
}

/*
 * Whether e, ready, is current at gen for scope and max_age_ns; made at
 * another generation, it is when nothing it covers changed since (then it
 * moves to gen). Caller holds c_lock.
 */
static bool
ent_current(struct cache *c, struct ent *e, uint64_t gen, int64_t scope, int64_t max_age_ns)
{
	if (e->gen != gen && e->scope == scope && c->changed &&
	    e->gen < gen && !c->changed(c->changed_arg, e->gen, scope))
		e->gen = gen;
	return e->gen == gen && (max_age_ns == 0 || clock_now_ns() - e->pub.born < max_age_ns);
}

int
cache_peek_scoped(struct cache *c, const char *key, uint64_t gen, int64_t scope,
    int64_t max_age_ns, struct cache_entry **out)
{
	uint64_t h = hash_bytes(key, strlen(key));
	struct ent *e;

	*out = NULL;
	pthread_mutex_lock(&c->c_lock);
	for (e = c->buckets[h % NBUCKETS]; e; e = e->hnext)
		if (e->hash == h && strcmp(e->pub.key, key) == 0)
			break;
	if (e == NULL || !e->ready || !ent_current(c, e, gen, scope, max_age_ns)) {
		pthread_mutex_unlock(&c->c_lock);
		return -ENOENT;
	}
	e->refs++;
	c->hits++;
	e->used = clock_mono_ns();
	lru_front(c, e);
	pthread_mutex_unlock(&c->c_lock);
	*out = &e->pub;
	return 0;
}

int
cache_get_scoped(struct cache *c, const char *key, uint64_t gen, int64_t scope,
    int64_t max_age_ns, cache_fill_fn fill, void *arg, struct cache_entry **out)
{
	size_t klen = strlen(key);
	uint64_t h = hash_bytes(key, klen);
	struct ent *e;
	void *val = NULL;
	void (*free_fn)(void *) = NULL;
	size_t size = 0;
	bool trim;
	int rc;

	*out = NULL;
	pthread_mutex_lock(&c->c_lock);
	/* A safe point: room for what the fill may make. */
	if (budget_pressed())
		evict_to(c, 0);
again:
	for (e = c->buckets[h % NBUCKETS]; e; e = e->hnext)
		if (e->hash == h && strcmp(e->pub.key, key) == 0)
			break;
	if (e) {
		if (!e->ready) {
			pthread_cond_wait(&c->c_cond, &c->c_lock);
			goto again;
		}
		if (ent_current(c, e, gen, scope, max_age_ns)) {
			e->refs++;
			c->hits++;
			e->used = clock_mono_ns();
			lru_front(c, e);
			pthread_mutex_unlock(&c->c_lock);
			*out = &e->pub;
			return e->pub.rc;
		}
		ent_unlink(c, e);
	}
	if ((e = calloc(1, sizeof(*e))) == NULL || (e->pub.key = strdup(key)) == NULL) {
		free(e);
		pthread_mutex_unlock(&c->c_lock);
		return -ENOMEM;
	}
	e->hash = h;
	e->used = clock_mono_ns();
	e->gen = gen;
	e->scope = scope;
	e->refs = 1;
	e->hnext = c->buckets[h % NBUCKETS];
	c->buckets[h % NBUCKETS] = e;
	lru_push(c, e);
	c->entries++;
	c->fills++;
	pthread_mutex_unlock(&c->c_lock);

	e->pub.born = clock_now_ns();
	rc = fill(arg, &val, &size, &free_fn);

	pthread_mutex_lock(&c->c_lock);
	e->pub.val = val;
	e->pub.size = size + cache_overhead(e->pub.key);
	e->pub.rc = rc;
	e->free_fn = free_fn;
	e->ready = true;
	c->bytes += e->pub.size;
	/* Out-of-memory is not an answer worth keeping. */
	if (rc == -ENOMEM && !e->dead)
		ent_unlink(c, e);
	evict(c);
	trim = trim_due(c);
	pthread_cond_broadcast(&c->c_cond);
	pthread_mutex_unlock(&c->c_lock);
	if (trim)
		malloc_trim(0);
	*out = &e->pub;
	return rc;
}

void
cache_release(struct cache *c, struct cache_entry *pe)
{
	struct ent *e = (struct ent *)pe;
	bool trim;

	if (pe == NULL)
		return;
	pthread_mutex_lock(&c->c_lock);
	if (--e->refs == 0 && e->dead) {
		c->bytes -= e->pub.size;
		c->freed += e->pub.size;
		ent_free(e);
	} else
		evict(c);
	trim = trim_due(c);
	pthread_mutex_unlock(&c->c_lock);
	if (trim)
		malloc_trim(0);
}

void
cache_stats(struct cache *c, size_t *entries, size_t *bytes, uint64_t *fills, uint64_t *hits)
{
	pthread_mutex_lock(&c->c_lock);
	if (entries)
		*entries = c->entries;
	if (bytes)
		*bytes = c->bytes;
	if (fills)
		*fills = c->fills;
	if (hits)
		*hits = c->hits;
	pthread_mutex_unlock(&c->c_lock);
}

static void *
sweeper_main(void *arg)
{
	struct cache_sweeper *sw = arg;
	uint64_t seen = 0, ops, ops_seen = 0;
	int64_t quiet_since = clock_mono_ns();
	bool pressed, trim, trimmed = true;
	size_t i;

	while (!atomic_load(&sw->stop)) {
		pressed = budget_wait_pressure(&seen, CACHE_SWEEP_NS, &sw->stop);
		trim = false;
		ops = 0;
		for (i = 0; i < sw->n && !atomic_load(&sw->stop); i++) {
			struct cache *c = sw->caches[i];

			pthread_mutex_lock(&c->c_lock);
			ops += c->fills + c->hits;
			if (pressed)
				evict_to(c, 0);
			/* Gone idle: whatever it freed, however little, goes back. */
			else if (evict_idle(c, clock_mono_ns()) && c->freed > 0)
				c->freed = TRIM_BYTES;
			trim |= trim_due(c);
			pthread_mutex_unlock(&c->c_lock);
		}
		/*
		 * Once the files stop being asked for, what the requests freed
		 * outside the caches (libfuse's nodes of the entries the kernel
		 * forgot, listings, decoding) goes back too, once.
		 */
		if (ops != ops_seen) {
			ops_seen = ops;
			quiet_since = clock_mono_ns();
			trimmed = false;
		} else if (!trimmed && clock_mono_ns() - quiet_since >= CACHE_QUIET_NS) {
			trim = true;
			trimmed = true;
		}
		if (trim)
			malloc_trim(0);
	}
	return NULL;
}

int
cache_sweeper_start(struct cache **caches, size_t n, struct cache_sweeper **out)
{
	struct cache_sweeper *sw = xcalloc(1, sizeof(*sw));
	int rc;

	sw->caches = xreallocarray(NULL, n, sizeof(*caches));
	memcpy(sw->caches, caches, n * sizeof(*caches));
	sw->n = n;
	if ((rc = pthread_create(&sw->thread, NULL, sweeper_main, sw)) != 0) {
		free(sw->caches);
		free(sw);
		return -rc;
	}
	*out = sw;
	return 0;
}

void
cache_sweeper_stop(struct cache_sweeper *sw)
{
	if (sw == NULL)
		return;
	atomic_store(&sw->stop, true);
	budget_wake_pressure();
	pthread_join(sw->thread, NULL);
	free(sw->caches);
	free(sw);
}
