/*
 * series: the series index. Every (service, type, label set) has an id
 * ('S' and 'N' keys); memory holds them all, by id (series[]) and sorted by
 * service, type and labels (sorted[]), under st_lock. New series are
 * written in their own synced batch before any profile refers to them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

struct buf *
name_key(struct buf *k, const char *service, const char *type, const char *labels)
{
	buf_reset(k);
	if (buf_addc(k, 'N') < 0 || buf_add(k, service, strlen(service) + 1) < 0 ||
	    buf_add(k, type, strlen(type) + 1) < 0 || buf_adds(k, labels) < 0)
		return NULL;
	return k;
}

/* Order of the index: service, then type, then labels (NULL: any). */
static int
series_order(const struct series *x, const char *service, const char *type,
    const char *labels)
{
	int c;

	if ((c = strcmp(x->service, service)) != 0 || type == NULL)
		return c;
	if ((c = strcmp(x->type, type)) != 0 || labels == NULL)
		return c;
	return strcmp(x->labels, labels);
}

/*
 * The first position in sorted[] whose series is not ordered before
 * (service, type, labels); type and labels may be NULL to find the first of
 * a service or of a (service, type). Caller holds st_lock.
 */
/* Position of series id in series[], or -1. Caller holds st_lock. */
ssize_t
series_pos(const struct store *st, uint64_t id)
{
	size_t lo = 0, hi = st->nseries, mid;

	/* series[] is in id order (handed out rising, loaded in key order). */
	if (id < st->nseries && st->series[id]->id == id)
		return (ssize_t)id;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (st->series[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < st->nseries && st->series[lo]->id == id ? (ssize_t)lo : -1;
}

static size_t
series_lower(const struct store *st, const char *service, const char *type,
    const char *labels)
{
	size_t lo = 0, hi = st->nseries, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (series_order(st->sorted[mid], service, type, labels) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Add a series to memory. Caller holds st_lock for writing. */
int
series_add(struct store *st, uint64_t sid, const char *service, const char *type,
    const char *labels)
{
	struct series *s, **ns;
	struct series_state **nst;
	struct buf k = { 0 };
	size_t pos;
	int64_t idx;

	if (st->nseries == st->capseries) {
		size_t ncap = st->capseries ? st->capseries * 2 : 16;

		if ((ns = realloc(st->series, ncap * sizeof(*ns))) == NULL)
			return -ENOMEM;
		st->series = ns;
		if ((ns = realloc(st->sorted, ncap * sizeof(*ns))) == NULL)
			return -ENOMEM;
		st->sorted = ns;
		if ((nst = realloc(st->state, ncap * sizeof(*nst))) == NULL)
			return -ENOMEM;
		st->state = nst;
		st->capseries = ncap;
	}
	if ((st->state[st->nseries] = calloc(1, sizeof(struct series_state))) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&st->state[st->nseries]->sym_lock, NULL);
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->id = sid;
	s->service = strdup(service);
	s->type = strdup(type);
	s->labels = strdup(labels);
	if (!s->service || !s->type || !s->labels || labels_parse(labels, &s->ls, NULL) < 0 ||
	    name_key(&k, service, type, labels) == NULL ||
	    (idx = intern_put(st->names, k.data, k.len, NULL)) < 0) {
		buf_free(&k);
		free((char *)s->service);
		free((char *)s->type);
		free((char *)s->labels);
		labels_clear(&s->ls);
		free(s);
		return -ENOMEM;
	}
	buf_free(&k);
	pos = series_lower(st, service, NULL, NULL);
	if (pos == st->nseries || strcmp(st->sorted[pos]->service, service) != 0)
		st->nservices++;
	/* Insertion keeps sorted[] ordered: series are few and created rarely. */
	pos = series_lower(st, service, type, labels);
	memmove(st->sorted + pos + 1, st->sorted + pos, (st->nseries - pos) * sizeof(*ns));
	st->sorted[pos] = s;
	/* The smallest id of the service: fixed once set, ids only grow. */
	st->state[st->nseries]->space = sid;
	for (pos = series_lower(st, service, NULL, NULL); pos < st->nseries + 1 &&
	    strcmp(st->sorted[pos]->service, service) == 0; pos++)
		if (st->sorted[pos]->id < st->state[st->nseries]->space)
			st->state[st->nseries]->space = st->sorted[pos]->id;
	st->series[st->nseries++] = s;
	if (sid >= st->next_sid)
		st->next_sid = sid + 1;
	return 0;
}

static struct series *
series_find(struct store *st, const char *service, const char *type, const char *labels)
{
	struct buf k = { 0 };
	int64_t idx = -1;

	if (name_key(&k, service, type, labels))
		idx = intern_get(st->names, k.data, k.len);
	buf_free(&k);
	return idx < 0 ? NULL : st->series[idx];
}

/*
 * Whether a new service may be created: a producer that puts a pid, a build
 * number or a request id in the service name makes a service per process,
 * each with its series and symbol table. Services whose every series
 * retention emptied do not count. Caller holds st_lock for writing.
 */
static int
services_check(struct store *st, const char *service, struct buf *err)
{
	size_t i, live = 0;
	bool counted = false;

	if (st->max_services == 0 || st->nservices < st->max_services)
		return 0;
	for (i = 0; i < st->nseries; i++) {
		ssize_t at;

		if (i > 0 && strcmp(st->sorted[i]->service, st->sorted[i - 1]->service) != 0)
			counted = false;
		if (counted)
			continue;
		at = series_pos(st, st->sorted[i]->id);
		if (at < 0 || !st->state[at]->empty) {
			live++;
			counted = true;
		}
	}
	if (live < st->max_services)
		return 0;
	if (err)
		buf_printf(err, "service %s refused: %zu services are stored, the limit "
		    "(--max-services): leave pids, versions and ids out of service names",
		    service, live);
	return -EINVAL;
}

/* The series for (service, type, labels), created (durably) if new. */
int
series_get_or_create(struct store *st, const char *service, const char *type,
    const char *labels, uint64_t *sid, struct buf *err)
{
	struct buf k = { 0 }, v = { 0 };
	unsigned char skey[9];
	struct series *s;
	char *dberr = NULL;
	int rc = 0;

	pthread_rwlock_rdlock(&st->st_lock);
	s = series_find(st, service, type, labels);
	pthread_rwlock_unlock(&st->st_lock);
	if (s) {
		*sid = s->id;
		return 0;
	}
	pthread_rwlock_wrlock(&st->st_lock);
	if ((s = series_find(st, service, type, labels)) != NULL) {
		ssize_t pos = series_pos(st, s->id);

		if (pos >= 0)
			st->state[pos]->empty = false;
		*sid = s->id;
		goto out;
	}
	{
		/*
		 * A producer that puts a request id or a timestamp in a label
		 * makes a series per profile; every listing walks the series.
		 */
		size_t pos = series_lower(st, service, NULL, NULL), nsvc = 0;

		size_t end = pos, live = 0;

		while (end < st->nseries && strcmp(st->sorted[end]->service, service) == 0)
			end++;
		nsvc = end - pos;
		if (nsvc == 0 && (rc = services_check(st, service, err)) < 0)
			goto out;
		if (st->max_series && nsvc >= st->max_series) {
			/* Series retention emptied do not count. */
			for (; pos < end; pos++) {
				ssize_t at = series_pos(st, st->sorted[pos]->id);

				live += at < 0 || !st->state[at]->empty;
			}
			nsvc = live;
		}
		if (st->max_series && nsvc >= st->max_series) {
			if (err)
				buf_printf(err, "service %s already has %zu label sets, the limit "
				    "(--max-series): leave ids and times out of labels", service,
				    nsvc);
			rc = -EINVAL;
			goto out;
		}
	}
	*sid = st->next_sid;
	skey[0] = 'S';
	be64_put(skey + 1, *sid);
	if (name_key(&k, service, type, labels) == NULL ||
	    buf_add(&v, service, strlen(service) + 1) < 0 ||
	    buf_add(&v, type, strlen(type) + 1) < 0 || buf_adds(&v, labels) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	{
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
		unsigned char sidv[8];

		unsigned char nextv[8];

		be64_put(sidv, *sid);
		be64_put(nextv, *sid + 1);
		rocksdb_writebatch_put(wb, (char *)skey, sizeof(skey), v.data, v.len);
		rocksdb_writebatch_put(wb, k.data, k.len, (char *)sidv, 8);
		rocksdb_writebatch_put(wb, "Q", 1, (char *)nextv, 8);
		rocksdb_write(st->db, st->wsync, wb, &dberr);
		rocksdb_writebatch_destroy(wb);
	}
	if (dberr) {
		if (err)
			buf_printf(err, "database write failed: %s", dberr);
		free(dberr);
		rc = -EIO;
		goto out;
	}
	rc = series_add(st, *sid, service, type, labels);
out:
	pthread_rwlock_unlock(&st->st_lock);
	buf_free(&k);
	buf_free(&v);
	return rc;
}

void
store_set_max_series(struct store *st, size_t n)
{
	pthread_rwlock_wrlock(&st->st_lock);
	st->max_series = n;
	pthread_rwlock_unlock(&st->st_lock);
}

void
store_set_max_services(struct store *st, size_t n)
{
	pthread_rwlock_wrlock(&st->st_lock);
	st->max_services = n;
	pthread_rwlock_unlock(&st->st_lock);
}

int
store_series(struct store *st, const struct series ***out, size_t *n)
{
	const struct series **arr;

	pthread_rwlock_rdlock(&st->st_lock);
	arr = malloc((st->nseries + 1) * sizeof(*arr));
	if (arr == NULL) {
		pthread_rwlock_unlock(&st->st_lock);
		return -ENOMEM;
	}
	if (st->nseries)	/* st->sorted is NULL in an empty store */
		memcpy(arr, st->sorted, st->nseries * sizeof(*arr));
	*n = st->nseries;
	pthread_rwlock_unlock(&st->st_lock);
	*out = arr;
	return 0;
}

int
store_series_each(struct store *st, const char *service, const char *type,
    store_series_fn fn, void *arg)
{
	const struct series *small[64], **m = small, **nm;
	size_t i, n = 0, cap = 64;
	int rc = 0;

	/*
	 * The matches are taken under the index lock and fn runs without it,
	 * so fn may use the store freely (series never move nor go away).
	 */
	pthread_rwlock_rdlock(&st->st_lock);
	i = service ? series_lower(st, service, type, NULL) : 0;
	for (; i < st->nseries && rc == 0; i++) {
		const struct series *s = st->sorted[i];

		if (service && series_order(s, service, type, NULL) != 0)
			break;
		if (type && strcmp(s->type, type) != 0)
			continue;
		if (n == cap) {
			cap *= 2;
			if ((nm = malloc(cap * sizeof(*nm))) == NULL) {
				rc = -ENOMEM;
				break;
			}
			memcpy(nm, m, n * sizeof(*nm));
			if (m != small)
				free(m);
			m = nm;
		}
		m[n++] = s;
	}
	pthread_rwlock_unlock(&st->st_lock);
	for (i = 0; i < n && rc == 0; i++)
		rc = fn(arg, m[i]);
	if (m != small)
		free(m);
	return rc;
}

const struct series *
store_series_get(struct store *st, uint64_t id)
{
	return series_local(st, id);
}

/* store_series_get() of this store's own index, whatever the reads go to. */
const struct series *
series_local(struct store *st, uint64_t id)
{
	const struct series *s = NULL;
	ssize_t i;

	pthread_rwlock_rdlock(&st->st_lock);
	if ((i = series_pos(st, id)) >= 0)
		s = st->series[i];
	pthread_rwlock_unlock(&st->st_lock);
	return s;
}
