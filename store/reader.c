/*
 * reader: the read interface of store.h that fs/ and the HTTP API use, and
 * the store's own implementation of it (its RocksDB data, through the store
 * calls of the same names; deletion through store_delete_*()). Another
 * module may offer its own reader; the store never forwards to one.
 */
#include <errno.h>

#include "store_int.h"

static int
local_series(void *arg, const struct series ***out, size_t *n)
{
	return store_series(arg, out, n);
}

static int
local_series_each(void *arg, const char *service, const char *type, store_series_fn fn,
    void *fnarg)
{
	return store_series_each(arg, service, type, fn, fnarg);
}

static const struct series *
local_series_get(void *arg, uint64_t id)
{
	return store_series_get(arg, id);
}

static int
local_hours(void *arg, uint64_t sid, int64_t **out, size_t *n)
{
	return store_hours(arg, sid, out, n);
}

static bool
local_has_data(void *arg, uint64_t sid, int64_t from, int64_t to)
{
	return store_has_data(arg, sid, from, to);
}

static int
local_newest(void *arg, uint64_t sid, int64_t *t)
{
	return store_newest(arg, sid, t);
}

static int
local_get(void *arg, uint64_t id, struct store_ref *ref, struct buf *out)
{
	return store_get(arg, id, ref, out);
}

static int
local_get_size(void *arg, uint64_t id, struct store_ref *ref, uint64_t *size)
{
	return store_get_size(arg, id, ref, size);
}

static int
local_list(void *arg, const struct query *q, struct query_result *res)
{
	return query_list(arg, q, res);
}

static int
local_merge(void *arg, const struct query *q, struct query_result *res)
{
	return query_merge(arg, q, res);
}

static uint64_t
local_generation(void *arg)
{
	return store_generation(arg);
}

static bool
local_changed_since(void *arg, uint64_t gen, int64_t upto)
{
	return store_changed_since(arg, gen, upto);
}

static int
local_delete_profile(void *arg, uint64_t id, struct store_ref *ref, struct buf *err)
{
	return store_delete_profile(arg, id, ref, err);
}

static int
local_delete_series(void *arg, const struct query *q, uint64_t *nseries,
    uint64_t *nprofiles, struct buf *err)
{
	return store_delete_series(arg, q, nseries, nprofiles, err);
}

void
store_reader_init(struct store *st)
{
	st->reader = (struct reader){
		.arg = st,
		.series = local_series,
		.series_each = local_series_each,
		.series_get = local_series_get,
		.hours = local_hours,
		.has_data = local_has_data,
		.newest = local_newest,
		.get = local_get,
		.get_size = local_get_size,
		.list = local_list,
		.merge = local_merge,
		.generation = local_generation,
		.changed_since = local_changed_since,
		.delete_profile = local_delete_profile,
		.delete_series = local_delete_series,
	};
}

const struct reader *
store_reader(struct store *st)
{
	return &st->reader;
}

int
reader_series(const struct reader *r, const struct series ***out, size_t *n)
{
	return r->series(r->arg, out, n);
}

int
reader_series_each(const struct reader *r, const char *service, const char *type,
    store_series_fn fn, void *arg)
{
	return r->series_each(r->arg, service, type, fn, arg);
}

const struct series *
reader_series_get(const struct reader *r, uint64_t id)
{
	return r->series_get(r->arg, id);
}

int
reader_hours(const struct reader *r, uint64_t sid, int64_t **out, size_t *n)
{
	return r->hours(r->arg, sid, out, n);
}

bool
reader_has_data(const struct reader *r, uint64_t sid, int64_t from, int64_t to)
{
	return r->has_data(r->arg, sid, from, to);
}

int
reader_newest(const struct reader *r, uint64_t sid, int64_t *t)
{
	return r->newest ? r->newest(r->arg, sid, t) : -ENOTSUP;
}

int
reader_get(const struct reader *r, uint64_t id, struct store_ref *ref, struct buf *out)
{
	return r->get(r->arg, id, ref, out);
}

int
reader_get_size(const struct reader *r, uint64_t id, struct store_ref *ref, uint64_t *size)
{
	return r->get_size(r->arg, id, ref, size);
}

int
reader_list(const struct reader *r, const struct query *q, struct query_result *res)
{
	return r->list(r->arg, q, res);
}

int
reader_merge(const struct reader *r, const struct query *q, struct query_result *res)
{
	return r->merge(r->arg, q, res);
}

uint64_t
reader_generation(const struct reader *r)
{
	return r->generation(r->arg);
}

bool
reader_changed_since(const struct reader *r, uint64_t gen, int64_t upto)
{
	return r->changed_since(r->arg, gen, upto);
}

bool
reader_missed(const struct reader *r)
{
	return r->missed ? r->missed(r->arg) : false;
}

int
reader_delete_profile(const struct reader *r, uint64_t id, struct store_ref *ref,
    struct buf *err)
{
	if (r->delete_profile == NULL) {
		if (err)
			buf_adds(err, "this reader cannot delete");
		return -EROFS;
	}
	return r->delete_profile(r->arg, id, ref, err);
}

int
reader_delete_series(const struct reader *r, const struct query *q, uint64_t *nseries,
    uint64_t *nprofiles, struct buf *err)
{
	if (r->delete_series == NULL) {
		if (err)
			buf_adds(err, "this reader cannot delete");
		return -EROFS;
	}
	return r->delete_series(r->arg, q, nseries, nprofiles, err);
}
