/*
 * symtab: the per-service symbol tables in memory (loaded from 'Y' records
 * on first use) and the lock (sym_lock) each is used under. Which entries
 * a pack adds, and their layout, is pack.c's business.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

struct symtab *
symtab_create(void)
{
	struct symtab *t = calloc(1, sizeof(*t));
	int i;

	if (t == NULL)
		return NULL;
	for (i = 0; i < SYM_NKINDS; i++) {
		/* Small at first: a service of a few stacks costs a few KiB. */
		if ((t->k[i].t = intern_create(16)) == NULL) {
			symtab_free(t);
			return NULL;
		}
	}
	return t;
}

void
symtab_free(struct symtab *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < SYM_NKINDS; i++) {
		intern_destroy(t->k[i].t);
		free(t->k[i].durable);
		free(t->k[i].stamp);
	}
	buf_free(&t->key);
	free(t);
}

bool
symtab_pending(const struct symtab *t)
{
	size_t i, n;
	int kind;

	for (kind = 0; kind < SYM_NKINDS; kind++)
		for (i = 0, n = intern_count(t->k[kind].t); i < n; i++)
			if (i >= t->k[kind].cap || !t->k[kind].durable[i])
				return true;
	return false;
}

size_t
symtab_bytes(const struct symtab *t)
{
	size_t n = sizeof(*t) + t->key.cap;
	int kind;

	for (kind = 0; kind < SYM_NKINDS; kind++)
		n += intern_bytes(t->k[kind].t) + t->k[kind].cap * (1 + sizeof(uint32_t));
	return n;
}

size_t
symtab_count(const struct symtab *t, int kind)
{
	return intern_count(t->k[kind].t);
}

/* Room for per-id state up to id n - 1. */
static int
kind_grow(struct symkind *k, size_t n)
{
	size_t ncap = k->cap ? k->cap : 32;
	uint8_t *d;
	uint32_t *s;

	if (n <= k->cap)
		return 0;
	while (ncap < n)
		ncap *= 2;
	if ((d = realloc(k->durable, ncap)) == NULL)
		return -ENOMEM;
	k->durable = d;
	if ((s = realloc(k->stamp, ncap * sizeof(*s))) == NULL)
		return -ENOMEM;
	k->stamp = s;
	memset(d + k->cap, 0, ncap - k->cap);
	memset(s + k->cap, 0, (ncap - k->cap) * sizeof(*s));
	k->cap = ncap;
	return 0;
}

/* Intern a tagged key into kind; *id set. 1 if added. */
int
kind_put(struct symtab *t, int kind, uint8_t tag, const void *data, size_t len,
    uint32_t *id)
{
	struct symkind *k = &t->k[kind];
	int64_t i;
	int added = 0, rc;

	buf_reset(&t->key);
	if ((rc = buf_addc(&t->key, (char)tag)) < 0 || (rc = buf_add(&t->key, data, len)) < 0)
		return rc;
	if ((i = intern_put(k->t, t->key.data, t->key.len, &added)) < 0)
		return (int)i;
	if (i >= UINT32_MAX)
		return -EOVERFLOW;
	if ((rc = kind_grow(k, (size_t)i + 1)) < 0)
		return rc;
	*id = (uint32_t)i;
	return added;
}

int
symtab_load(struct symtab *t, int kind, uint32_t id, const void *data, size_t len)
{
	struct symkind *k = &t->k[kind];
	uint32_t got;
	int rc;

	if (kind < 0 || kind >= SYM_NKINDS || id < intern_count(k->t))
		return -EINVAL;
	while (intern_count(k->t) < id) {
		uint32_t hole = (uint32_t)intern_count(k->t);

		if ((rc = kind_put(t, kind, TAG_HOLE, &hole, sizeof(hole), &got)) < 0)
			return rc;
		k->durable[got] = 1;
	}
	if ((rc = kind_put(t, kind, TAG_REAL, data, len, &got)) < 0)
		return rc;
	if (rc == 0 || got != id)
		return -EINVAL;	/* a duplicate entry: the table is corrupt */
	k->durable[got] = 1;
	return 0;
}

int
symtab_load_run(struct symtab *t, int kind, uint32_t first, uint32_t n, const void *val,
    size_t len)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t l;
	uint32_t i;
	int rc;

	if (kind < 0 || kind >= SYM_NKINDS || n == 0 || first > UINT32_MAX - n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (varint_get(&p, end, &l) < 0 || l > (uint64_t)(end - p))
			return -EINVAL;
		/* Loaded already: an overlapping record of another profile of its batch. */
		if (first + i >= intern_count(t->k[kind].t)) {
			if ((rc = symtab_load(t, kind, first + i, p, (size_t)l)) < 0)
				return rc;
		}
		p += l;
	}
	return p == end ? 0 : -EINVAL;
}

const void *
symtab_entry(const struct symtab *t, int kind, uint32_t id, size_t *len)
{
	const unsigned char *p;
	size_t n;

	if (id >= intern_count(t->k[kind].t))
		return NULL;
	p = intern_key(t->k[kind].t, id, &n);
	if (n < 1 || p[0] != TAG_REAL)
		return NULL;
	*len = n - 1;
	return p + 1;
}

void
symtab_durable(struct symtab *t, const struct sym_new *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (e[i].kind < SYM_NKINDS && e[i].id < t->k[e[i].kind].cap)
			t->k[e[i].kind].durable[e[i].id] = 1;
}

/*
 * Fill t with the 'Y' records of series sid: single entries (14-byte keys)
 * and runs (18-byte keys, symtab_load_run()). Keys sort by first id, so an
 * entry an earlier record held already is skipped, not refused.
 */
static int
symtab_read(struct store *st, uint64_t sid, struct symtab *t)
{
	unsigned char lo[9], hi[9];
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	int rc = 0;

	lo[0] = hi[0] = 'Y';
	be64_put(lo + 1, sid);
	be64_put(hi + 1, sid + 1);
	rocksdb_readoptions_set_iterate_upper_bound(ro, (char *)hi, sizeof(hi));
	it = rocksdb_create_iterator(st->db, ro);
	for (rocksdb_iter_seek(it, (char *)lo, sizeof(lo)); rocksdb_iter_valid(it) && rc == 0;
	    rocksdb_iter_next(it)) {
		size_t kl, vl;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &kl);
		const char *v = rocksdb_iter_value(it, &vl);

		uint32_t id;

		if ((kl != 14 && kl != 18) || k[9] >= SYM_NKINDS)
			continue;
		id = (uint32_t)be64_get(k + 6) & UINT32_MAX;
		if (kl == 18)
			rc = symtab_load_run(t, k[9], id, (uint32_t)be64_get(k + 10) & UINT32_MAX,
			    v, vl);
		else if (id >= intern_count(t->k[k[9]].t))
			rc = symtab_load(t, k[9], id, v, vl);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

/*
 * The state holding series sid's symbols, loaded, with its sym_lock held.
 * Lock order: db_lock (read, held by the caller), then sym_lock.
 */
struct series_state *
series_state_lock(struct store *st, uint64_t sid, int *rc)
{
	struct series_state *ss = NULL;
	ssize_t pos;

	*rc = 0;
	pthread_rwlock_rdlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0 &&
	    (pos = series_pos(st, st->state[pos]->space)) >= 0)
		ss = st->state[pos];
	pthread_rwlock_unlock(&st->st_lock);
	if (ss == NULL) {
		*rc = -ENOENT;
		return NULL;
	}
	pthread_mutex_lock(&ss->sym_lock);
	if (ss->sym == NULL) {
		if ((ss->sym = symtab_create()) == NULL)
			*rc = -ENOMEM;
		else	/* the caller holds db_lock: always taken before sym_lock */
			*rc = symtab_read(st, ss->space, ss->sym);
		if (*rc < 0 && ss->sym) {
			log_warnx("store: the symbols of series %llu cannot be loaded",
			    (unsigned long long)sid);
			symtab_free(ss->sym);
			ss->sym = NULL;
		}
		if (*rc < 0) {
			pthread_mutex_unlock(&ss->sym_lock);
			return NULL;
		}
	}
	ss->sym_used = clock_mono_ns();
	return ss;
}

/*
 * Free the symbol tables nobody used for idle_ns: a service that stopped
 * sending costs nothing until it is read or written again (then its 'Y'
 * records are loaded anew). A table with entries not durable yet stays:
 * their ids are not on disk. Takes st_lock (read), then each sym_lock
 * without waiting: a table in use is in use.
 */
static void
symtab_sweep(struct store *st, int64_t idle_ns)
{
	int64_t now = clock_mono_ns();
	size_t i, freed = 0;

	pthread_rwlock_rdlock(&st->st_lock);
	for (i = 0; i < st->nseries; i++) {
		struct series_state *ss = st->state[i];

		if (ss->space != st->series[i]->id || pthread_mutex_trylock(&ss->sym_lock) != 0)
			continue;
		if (ss->sym && now - ss->sym_used >= idle_ns && !symtab_pending(ss->sym)) {
			symtab_free(ss->sym);
			ss->sym = NULL;
			freed++;
		}
		pthread_mutex_unlock(&ss->sym_lock);
	}
	pthread_rwlock_unlock(&st->st_lock);
	st->sym_swept = now;
	if (freed)
		log_debug("store: freed the symbol tables of %zu idle services", freed);
}

/* Sweep when due: every SYM_SWEEP_NS, and at once when memory runs short. */
void
symtab_sweep_due(struct store *st)
{
	bool pressed = budget_pressed();

	if (pressed || clock_mono_ns() - st->sym_swept >= SYM_SWEEP_NS)
		symtab_sweep(st, pressed ? SYM_IDLE_PRESSED_NS : SYM_IDLE_NS);
}

const struct symtab *
store_symtab_acquire(struct store *st, uint64_t sid, int *rc)
{
	struct series_state *ss;

	pthread_rwlock_rdlock(&st->db_lock);
	if ((ss = series_state_lock(st, sid, rc)) == NULL)
		pthread_rwlock_unlock(&st->db_lock);
	return ss ? ss->sym : NULL;
}

void
store_symtab_release(struct store *st, uint64_t sid)
{
	struct series_state *ss = NULL;
	ssize_t pos;

	pthread_rwlock_rdlock(&st->st_lock);
	if ((pos = series_pos(st, sid)) >= 0 &&
	    (pos = series_pos(st, st->state[pos]->space)) >= 0)
		ss = st->state[pos];
	pthread_rwlock_unlock(&st->st_lock);
	if (ss)
		pthread_mutex_unlock(&ss->sym_lock);
	pthread_rwlock_unlock(&st->db_lock);
}
