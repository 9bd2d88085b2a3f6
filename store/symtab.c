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
		if ((t->k[i].t = intern_create(i == SYM_MAP ? 16 : 1024)) == NULL) {
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

size_t
symtab_count(const struct symtab *t, int kind)
{
	return intern_count(t->k[kind].t);
}

/* Room for per-id state up to id n - 1. */
static int
kind_grow(struct symkind *k, size_t n)
{
	size_t ncap = k->cap ? k->cap : 256;
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

/* Fill t with the 'Y' records of series sid. */
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

		if (kl != 14 || k[9] >= SYM_NKINDS)
			continue;
		rc = symtab_load(t, k[9], (uint32_t)be64_get(k + 6) & UINT32_MAX, v, vl);
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
	return ss;
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
