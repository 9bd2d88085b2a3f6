/*
 * test_cache: the cache of generated content (fs/cache.c) with real threads.
 * References: an entry in use is never freed by eviction or invalidation,
 * only when its last reader lets go. Single flight: concurrent readers of one
 * key run the fill once and share its value. Eviction: by bytes, least
 * recently used first. Validity: the store generation and max-age. Failed
 * fills are remembered (except out of memory). Every value is freed exactly
 * once, which ASan checks as well as the counters here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base.h"
#include "cache.h"

#define NS	INT64_C(1000000000)
#define MS	INT64_C(1000000)

/* A cached value: the key it was made for, so a reader can tell it apart. */
struct val {
	char	key[64];
	int	serial;		/* which fill made it */
};

static atomic_int fills_run;	/* fill calls */
static atomic_int vals_freed;	/* free_fn calls */

static void
val_free(void *p)
{
	struct val *v = p;

	atomic_fetch_add(&vals_freed, 1);
	memset(v, 0xdd, sizeof(*v));
	free(v);
}

struct fillarg {
	const char	*key;
	size_t		 size;	/* bytes to charge */
	int		 rc;	/* what the fill returns */
	bool		 noval;	/* return no value (a failure) */
	/* Single flight: wait until `want` threads have entered cache_get. */
	atomic_int	*arrived;
	int		 want;
};

static int
fill(void *arg, void **valp, size_t *size, void (**free_fn)(void *))
{
	struct fillarg *fa = arg;
	struct val *v;
	int serial = atomic_fetch_add(&fills_run, 1) + 1;

	if (fa->arrived) {
		while (atomic_load(fa->arrived) < fa->want)
			sched_yield();
		/* Let the others reach the wait inside cache_get. */
		usleep(50000);
	}
	*size = fa->size;
	if (fa->noval)
		return fa->rc;
	/* Runs on the test's threads: no cmocka assertion here. */
	if ((v = calloc(1, sizeof(*v))) == NULL)
		abort();
	snprintf(v->key, sizeof(v->key), "%s", fa->key);
	v->serial = serial;
	*valp = v;
	*free_fn = val_free;
	return fa->rc;
}

static void
reset_counts(void)
{
	atomic_store(&fills_run, 0);
	atomic_store(&vals_freed, 0);
}

/* cache_get with a fill that makes a value of `size` bytes for key. */
static int
get(struct cache *c, const char *key, uint64_t gen, int64_t max_age, size_t size,
    struct cache_entry **out)
{
	struct fillarg fa = { .key = key, .size = size };

	return cache_get(c, key, gen, max_age, fill, &fa, out);
}

static const struct val *
valof(const struct cache_entry *e)
{
	assert_non_null(e);
	assert_non_null(e->val);
	return e->val;
}

static void
stats(struct cache *c, size_t *entries, size_t *bytes, uint64_t *fills, uint64_t *hits)
{
	cache_stats(c, entries, bytes, fills, hits);
}

static void
test_hit_and_release(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct cache_entry *e1, *e2;
	size_t entries, bytes;
	uint64_t fills, hits;

	(void)state;
	reset_counts();
	assert_int_equal(get(c, "svc/cpu/all/last-1h/merged.pb.gz", 1, 0, 100, &e1), 0);
	assert_string_equal(valof(e1)->key, "svc/cpu/all/last-1h/merged.pb.gz");
	assert_int_equal(e1->size, 100 + cache_overhead("svc/cpu/all/last-1h/merged.pb.gz"));
	assert_int_equal(e1->rc, 0);
	assert_string_equal(e1->key, "svc/cpu/all/last-1h/merged.pb.gz");
	cache_release(c, e1);
	assert_int_equal(get(c, "svc/cpu/all/last-1h/merged.pb.gz", 1, 0, 999, &e2), 0);
	/* A hit: the same value, not a second fill (the size asked is ignored). */
	assert_ptr_equal(e2->val, e1->val);
	assert_int_equal(e2->size, 100 + cache_overhead("svc/cpu/all/last-1h/merged.pb.gz"));
	cache_release(c, e2);
	stats(c, &entries, &bytes, &fills, &hits);
	assert_int_equal(entries, 1);
	assert_int_equal(bytes, 100 + cache_overhead("svc/cpu/all/last-1h/merged.pb.gz"));
	assert_int_equal(fills, 1);
	assert_int_equal(hits, 1);
	assert_int_equal(atomic_load(&fills_run), 1);
	/* Keys differ by bytes, not by prefix. */
	assert_int_equal(get(c, "svc/cpu/all/last-1h/merged.pb", 1, 0, 10, &e1), 0);
	assert_string_equal(valof(e1)->key, "svc/cpu/all/last-1h/merged.pb");
	cache_release(c, e1);
	assert_int_equal(atomic_load(&fills_run), 2);
	cache_release(c, NULL);		/* a no-op */
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), 2);
	cache_destroy(NULL);
}

/* A changed function that says changes since generation 1 touched times >= 50. */
static bool
changed_from_50(void *arg, uint64_t then, int64_t scope)
{
	(void)arg;
	return then < 1 || scope >= 50;
}

/* Scoped entries outlive new generations while the data they cover did not change. */
static void
test_scoped(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct fillarg fa = { .key = "past", .size = 10 };
	struct cache_entry *e1, *e2;

	(void)state;
	reset_counts();
	cache_set_changed(c, changed_from_50, NULL);
	assert_int_equal(cache_get_scoped(c, "past", 1, 40, 0, fill, &fa, &e1), 0);
	cache_release(c, e1);
	/* Generation 2, but nothing at or before 40 changed: a hit. */
	assert_int_equal(cache_get_scoped(c, "past", 2, 40, 0, fill, &fa, &e2), 0);
	assert_ptr_equal(e2->val, e1->val);
	cache_release(c, e2);
	assert_int_equal(atomic_load(&fills_run), 1);
	/* A range reaching 60 was touched: made again. */
	fa.key = "present";
	assert_int_equal(cache_get_scoped(c, "present", 2, 60, 0, fill, &fa, &e1), 0);
	cache_release(c, e1);
	assert_int_equal(cache_get_scoped(c, "present", 3, 60, 0, fill, &fa, &e2), 0);
	cache_release(c, e2);
	assert_int_equal(atomic_load(&fills_run), 3);
	/* Without a scope (cache_get), any new generation is a miss. */
	fa.key = "any";
	assert_int_equal(get(c, "any", 3, 0, 10, &e1), 0);
	cache_release(c, e1);
	assert_int_equal(get(c, "any", 4, 0, 10, &e2), 0);
	cache_release(c, e2);
	assert_int_equal(atomic_load(&fills_run), 5);
	cache_destroy(c);
}

static void
test_in_use_not_freed_by_eviction(void **state)
{
	/* Room for one entry of 80 bytes (plus its bookkeeping), not two. */
	struct cache *c = cache_create(100 + cache_overhead("a"));
	struct cache_entry *a, *b, *a2;
	size_t entries, bytes;

	(void)state;
	reset_counts();
	assert_int_equal(get(c, "a", 1, 0, 80, &a), 0);
	/* b pushes the cache over its 100 bytes while a is held: nothing goes. */
	assert_int_equal(get(c, "b", 1, 0, 80, &b), 0);
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(entries, 2);
	assert_int_equal(bytes, 160 + cache_overhead("a") + cache_overhead("b"));
	assert_int_equal(atomic_load(&vals_freed), 0);
	/* Releasing b evicts the only entry nobody holds: b itself. */
	cache_release(c, b);
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(entries, 1);
	assert_int_equal(bytes, 80 + cache_overhead("a"));
	assert_int_equal(atomic_load(&vals_freed), 1);
	assert_string_equal(valof(a)->key, "a");
	cache_release(c, a);
	/* a fits: it stays and is a hit. */
	assert_int_equal(get(c, "a", 1, 0, 80, &a2), 0);
	assert_ptr_equal(a2, a);
	assert_int_equal(atomic_load(&fills_run), 2);
	cache_release(c, a2);
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), 2);
}

static void
test_stale_entry_in_use_survives(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct cache_entry *old, *new;
	size_t entries, bytes;

	(void)state;
	reset_counts();
	assert_int_equal(get(c, "k", 1, 0, 10, &old), 0);
	/* New data (generation 2) replaces the entry while a reader holds it. */
	assert_int_equal(get(c, "k", 2, 0, 20, &new), 0);
	assert_ptr_not_equal(old, new);
	assert_int_equal(valof(new)->serial, 2);
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(entries, 1);
	/* The old value is unlinked but still readable, still counted, and freed on release. */
	assert_int_equal(bytes, 30 + 2 * cache_overhead("k"));
	assert_int_equal(atomic_load(&vals_freed), 0);
	assert_string_equal(valof(old)->key, "k");
	assert_int_equal(valof(old)->serial, 1);
	cache_release(c, old);
	assert_int_equal(atomic_load(&vals_freed), 1);
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(bytes, 20 + cache_overhead("k"));
	cache_release(c, new);
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), 2);
}

static bool
cached(struct cache *c, const char *key)
{
	uint64_t before, after;
	struct cache_entry *e;

	stats(c, NULL, NULL, &before, NULL);
	assert_int_equal(get(c, key, 1, 0, 300, &e), 0);
	assert_string_equal(valof(e)->key, key);
	cache_release(c, e);
	stats(c, NULL, NULL, &after, NULL);
	return after == before;
}

static void
test_eviction_by_bytes_lru(void **state)
{
	/* Room for three entries of 300 bytes (keys of two bytes), not four. */
	size_t max = 1000 + 3 * cache_overhead("k0");
	struct cache *c = cache_create(max);
	struct cache_entry *e;
	size_t entries, bytes;
	char key[16];
	int i;

	(void)state;
	reset_counts();
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(get(c, key, 1, 0, 300, &e), 0);
		cache_release(c, e);
		stats(c, &entries, &bytes, NULL, NULL);
		assert_true(bytes <= max);
		assert_int_equal(entries, i < 3 ? i + 1 : 3);
	}
	assert_int_equal(atomic_load(&vals_freed), 7);
	/* The three most recent are kept; a hit makes k7 recent again. */
	assert_true(cached(c, "k7"));
	/* k0 is refilled, evicting the least recently used: k8. */
	assert_false(cached(c, "k0"));
	assert_false(cached(c, "k8"));		/* refilled, evicting k9 */
	assert_true(cached(c, "k7"));
	assert_true(cached(c, "k0"));
	assert_false(cached(c, "k9"));
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(entries, 3);
	assert_int_equal(bytes, 900 + 3 * cache_overhead("k0"));

	/* An entry larger than the whole cache is served, then dropped. */
	assert_int_equal(get(c, "huge", 1, 0, 5000, &e), 0);
	assert_string_equal(valof(e)->key, "huge");
	/* Everything else made room; it is held, so it stays over the limit. */
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(entries, 1);
	assert_int_equal(bytes, 5000 + cache_overhead("huge"));
	cache_release(c, e);
	stats(c, &entries, &bytes, NULL, NULL);
	assert_true(bytes <= max);
	assert_false(cached(c, "huge"));
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), atomic_load(&fills_run));
}

static void
test_generation_and_max_age(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct cache_entry *e;
	int64_t t0;
	struct timespec ts;

	(void)state;
	reset_counts();
	assert_int_equal(get(c, "g", 7, 0, 1, &e), 0);
	assert_int_equal(valof(e)->serial, 1);
	cache_release(c, e);
	assert_int_equal(get(c, "g", 7, 0, 1, &e), 0);
	assert_int_equal(valof(e)->serial, 1);
	cache_release(c, e);
	/* Any other generation, even an older one, refills. */
	assert_int_equal(get(c, "g", 8, 0, 1, &e), 0);
	assert_int_equal(valof(e)->serial, 2);
	cache_release(c, e);
	assert_int_equal(get(c, "g", 7, 0, 1, &e), 0);
	assert_int_equal(valof(e)->serial, 3);
	cache_release(c, e);
	assert_int_equal(atomic_load(&vals_freed), 2);

	/* max_age: born is stamped before the fill runs. */
	clock_gettime(CLOCK_REALTIME, &ts);
	t0 = (int64_t)ts.tv_sec * NS + ts.tv_nsec;
	assert_int_equal(get(c, "m", 1, 3600 * NS, 1, &e), 0);
	assert_true(e->born >= t0);
	assert_int_equal(valof(e)->serial, 4);
	cache_release(c, e);
	assert_int_equal(get(c, "m", 1, 3600 * NS, 1, &e), 0);	/* young enough */
	assert_int_equal(valof(e)->serial, 4);
	cache_release(c, e);
	usleep(30 * 1000);
	/* 30 ms old: too old for a 10 ms max-age, fine without one. */
	assert_int_equal(get(c, "m", 1, 0, 1, &e), 0);
	assert_int_equal(valof(e)->serial, 4);
	cache_release(c, e);
	assert_int_equal(get(c, "m", 1, 10 * MS, 1, &e), 0);
	assert_int_equal(valof(e)->serial, 5);
	cache_release(c, e);
	assert_int_equal(atomic_load(&vals_freed), 3);
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), 5);
}

static void
test_failed_fill_cached(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct fillarg bad = { .key = "bad", .size = 64, .rc = -EINVAL, .noval = true };
	struct fillarg oom = { .key = "oom", .size = 0, .rc = -ENOMEM, .noval = true };
	struct cache_entry *e;
	size_t entries, bytes;
	uint64_t fills, hits;

	(void)state;
	reset_counts();
	/* A refused computation (a corrupt profile) is an answer: it is kept. */
	assert_int_equal(cache_get(c, "bad", 1, 0, fill, &bad, &e), -EINVAL);
	assert_non_null(e);
	assert_int_equal(e->rc, -EINVAL);
	assert_null(e->val);
	cache_release(c, e);
	assert_int_equal(cache_get(c, "bad", 1, 0, fill, &bad, &e), -EINVAL);
	assert_int_equal(e->rc, -EINVAL);
	cache_release(c, e);
	assert_int_equal(atomic_load(&fills_run), 1);
	stats(c, &entries, &bytes, &fills, &hits);
	assert_int_equal(entries, 1);
	assert_int_equal(bytes, 64 + cache_overhead("bad"));	/* charged like a value */
	assert_int_equal(hits, 1);
	/* It is still dropped on new data. */
	assert_int_equal(cache_get(c, "bad", 2, 0, fill, &bad, &e), -EINVAL);
	cache_release(c, e);
	assert_int_equal(atomic_load(&fills_run), 2);

	/* Out of memory is not kept: the next reader tries again. */
	assert_int_equal(cache_get(c, "oom", 1, 0, fill, &oom, &e), -ENOMEM);
	assert_non_null(e);
	cache_release(c, e);
	assert_int_equal(cache_get(c, "oom", 1, 0, fill, &oom, &e), -ENOMEM);
	cache_release(c, e);
	assert_int_equal(atomic_load(&fills_run), 4);
	stats(c, &entries, &bytes, NULL, NULL);
	assert_int_equal(entries, 1);
	assert_int_equal(bytes, 64 + cache_overhead("bad"));
	/* Once memory is back, the value is computed and kept. */
	oom.rc = 0;
	oom.noval = false;
	assert_int_equal(cache_get(c, "oom", 1, 0, fill, &oom, &e), 0);
	assert_string_equal(valof(e)->key, "oom");
	cache_release(c, e);
	assert_int_equal(cache_get(c, "oom", 1, 0, fill, &oom, &e), 0);
	cache_release(c, e);
	assert_int_equal(atomic_load(&fills_run), 5);
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), 1);
}

/* --- threads ------------------------------------------------------------- */

#define NTHREADS	8

struct sf {
	struct cache		*c;
	pthread_barrier_t	*start;
	atomic_int		*arrived;
	struct cache_entry	*got;
	void			*val;	/* as cache_get returned it */
	int			 rc;
};

static void *
sf_thread(void *arg)
{
	struct sf *t = arg;
	struct fillarg fa = { .key = "one", .size = 10, .arrived = t->arrived, .want = NTHREADS };

	pthread_barrier_wait(t->start);
	atomic_fetch_add(t->arrived, 1);
	t->rc = cache_get(t->c, "one", 1, 0, fill, &fa, &t->got);
	/* What a reader sees on return, not later: the fill must be complete. */
	t->val = t->got ? t->got->val : NULL;
	return NULL;
}

static void
test_single_flight(void **state)
{
	struct cache *c = cache_create(1 << 20);
	pthread_barrier_t start;
	atomic_int arrived = 0;
	struct sf t[NTHREADS];
	pthread_t th[NTHREADS];
	uint64_t fills, hits;
	int i;

	(void)state;
	reset_counts();
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		t[i] = (struct sf){ .c = c, .start = &start, .arrived = &arrived };
		assert_int_equal(pthread_create(&th[i], NULL, sf_thread, &t[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	/* The fill waited for every thread to ask, and still ran once. */
	assert_int_equal(atomic_load(&fills_run), 1);
	for (i = 0; i < NTHREADS; i++) {
		assert_int_equal(t[i].rc, 0);
		assert_ptr_equal(t[i].got, t[0].got);
		assert_non_null(t[i].val);
		assert_ptr_equal(t[i].val, t[0].got->val);
		assert_string_equal(valof(t[i].got)->key, "one");
	}
	stats(c, NULL, NULL, &fills, &hits);
	assert_int_equal(fills, 1);
	assert_int_equal(hits, NTHREADS - 1);
	for (i = 0; i < NTHREADS; i++)
		cache_release(c, t[i].got);
	assert_int_equal(atomic_load(&vals_freed), 0);
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), 1);
}

#define NKEYS		40
#define ROUNDS		4000

struct stress {
	struct cache	*c;
	unsigned	 seed;
	uint64_t	 gen;		/* 0: vary the generation too */
	int		 bad;		/* values that did not match their key */
};

static void *
stress_thread(void *arg)
{
	struct stress *t = arg;
	struct cache_entry *e, *held = NULL;
	char key[16];
	int i, k;

	for (i = 0; i < ROUNDS; i++) {
		uint64_t gen = t->gen ? t->gen : (uint64_t)(rand_r(&t->seed) % 3);

		k = rand_r(&t->seed) % NKEYS;
		snprintf(key, sizeof(key), "key%d", k);
		if (get(t->c, key, gen, 0, 100 + (size_t)k, &e) != 0 || e->val == NULL ||
		    strcmp(((struct val *)e->val)->key, key) != 0)
			t->bad++;
		/* Keep some entries across other gets, so eviction meets readers. */
		if (held) {
			if (strncmp(((struct val *)held->val)->key, "key", 3) != 0)
				t->bad++;
			cache_release(t->c, held);
			held = NULL;
		}
		if (i % 3 == 0)
			held = e;
		else
			cache_release(t->c, e);
	}
	cache_release(t->c, held);
	return NULL;
}

static void
run_stress(size_t max_bytes, uint64_t gen, uint64_t *fills_out)
{
	struct cache *c = cache_create(max_bytes);
	struct stress t[NTHREADS];
	pthread_t th[NTHREADS];
	size_t entries, bytes;
	int i;

	reset_counts();
	for (i = 0; i < NTHREADS; i++) {
		t[i] = (struct stress){ .c = c, .seed = 1234u + (unsigned)i, .gen = gen };
		assert_int_equal(pthread_create(&th[i], NULL, stress_thread, &t[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].bad, 0);
	}
	cache_stats(c, &entries, &bytes, fills_out, NULL);
	assert_true(bytes <= max_bytes);
	assert_true(entries <= NKEYS);
	assert_int_equal(*fills_out, (uint64_t)atomic_load(&fills_run));
	/* Everything evicted so far was freed once; the rest goes with the cache. */
	assert_int_equal(atomic_load(&vals_freed) + (int)entries, atomic_load(&fills_run));
	cache_destroy(c);
	assert_int_equal(atomic_load(&vals_freed), atomic_load(&fills_run));
}

static void
test_threads_no_eviction(void **state)
{
	uint64_t fills;

	(void)state;
	/* Room for every key and one generation: each key is filled exactly once. */
	run_stress(1 << 20, 1, &fills);
	assert_int_equal(fills, NKEYS);
}

static void
test_threads_eviction_and_generations(void **state)
{
	uint64_t fills;

	(void)state;
	/* Room for about ten keys, generations changing under the readers. */
	run_stress(1100, 0, &fills);
	assert_true(fills > NKEYS);
}

/* cache_peek_scoped: serves what is there and current, never fills. */
static void
test_peek(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct cache_entry *e;

	(void)state;
	reset_counts();
	assert_int_equal(cache_peek_scoped(c, "/p", 1, INT64_MAX, 0, &e), -ENOENT);
	assert_null(e);
	assert_int_equal(atomic_load(&fills_run), 0);
	assert_int_equal(get(c, "/p", 1, 0, 10, &e), 0);
	cache_release(c, e);
	assert_int_equal(cache_peek_scoped(c, "/p", 1, INT64_MAX, 0, &e), 0);
	assert_string_equal(valof(e)->key, "/p");
	cache_release(c, e);
	/* Another generation: stale, and a peek does not make it again. */
	assert_int_equal(cache_peek_scoped(c, "/p", 2, INT64_MAX, 0, &e), -ENOENT);
	assert_int_equal(atomic_load(&fills_run), 1);
	cache_destroy(c);
}

/*
 * Idle entries go on the sweeper's tick with memory plenty; one in use
 * stays until released, then goes at a later tick.
 */
static void
test_idle_sweep(void **state)
{
	struct cache *c = cache_create(1 << 20);
	struct cache_sweeper *sw;
	struct cache_entry *a, *b;
	size_t entries = 9;
	int i;

	(void)state;
	reset_counts();
	cache_set_idle(c, 200 * MS);
	assert_int_equal(get(c, "/a", 1, 0, 10, &a), 0);
	cache_release(c, a);
	assert_int_equal(get(c, "/b", 1, 0, 10, &b), 0);	/* held */
	assert_int_equal(cache_sweeper_start(&c, 1, &sw), 0);
	for (i = 0; i < 50 && entries != 1; i++) {
		usleep(100000);
		stats(c, &entries, NULL, NULL, NULL);
	}
	assert_int_equal(entries, 1);
	assert_int_equal(atomic_load(&vals_freed), 1);
	cache_release(c, b);
	for (i = 0; i < 50 && entries != 0; i++) {
		usleep(100000);
		stats(c, &entries, NULL, NULL, NULL);
	}
	assert_int_equal(entries, 0);
	assert_int_equal(atomic_load(&vals_freed), 2);
	cache_sweeper_stop(sw);
	cache_destroy(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_and_release),
		cmocka_unit_test(test_scoped),
		cmocka_unit_test(test_in_use_not_freed_by_eviction),
		cmocka_unit_test(test_stale_entry_in_use_survives),
		cmocka_unit_test(test_eviction_by_bytes_lru),
		cmocka_unit_test(test_generation_and_max_age),
		cmocka_unit_test(test_failed_fill_cached),
		cmocka_unit_test(test_single_flight),
		cmocka_unit_test(test_threads_no_eviction),
		cmocka_unit_test(test_threads_eviction_and_generations),
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_idle_sweep),
	};

	return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
