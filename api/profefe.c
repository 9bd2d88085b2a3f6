/*
 * profefe: profefe's collector API under /api/0/ (the reference is profefe's
 * own collector: parameters, JSON envelope, status codes), on top of the
 * store and the same query code the filesystem uses, so that a merge over
 * HTTP equals merged.pb.gz of the same range. Request plumbing and replies
 * are http.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "httpparse.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"

/*
 * GET /api/0/profiles/<id>+<id>+...: at most MAX_IDS ids, a repeated id
 * counted once (a merge of a profile with itself is not a different
 * question), and at most MAX_IDS_BYTES of stored profiles decoded for one
 * request, so a short URL cannot buy minutes of CPU; larger merges go
 * through /api/0/profiles/merge, whose ranges the store answers.
 */
#define MAX_IDS		1000
#define MAX_IDS_BYTES	(64u << 20)

/* One profile's metadata as profefe's JSON object; a new reference, NULL when out of memory. */
static json_t *
meta_json(uint64_t id, const char *service, const char *type, const struct labelset *ls,
    int64_t time)
{
	char idh[17], ts[40];
	json_t *labels = json_array();
	size_t i;

	store_id_format(id, idh);
	httpparse_format_time(time, ts);
	for (i = 0; labels && ls && i < ls->n; i++)
		if (json_array_append_new(labels, json_pack("{s:o,s:o}",
		    "key", jsonw_str(ls->pairs[i].key),
		    "value", jsonw_str(ls->pairs[i].value))) < 0) {
			json_decref(labels);
			return NULL;
		}
	/* Field order as profefe's own collector writes it. */
	return json_pack("{s:s,s:s,s:o,s:o,s:o,s:s}", "id", idh, "profile_id", idh,
	    "service", jsonw_str(service), "type", jsonw_str(type), "labels", labels,
	    "created_at", ts);
}

/* POST /api/0/profiles */
static void
create(struct http_req *r)
{
	const char *service = http_arg(r, "service"), *type = http_arg(r, "type");
	const char *labels = http_arg(r, "labels"), *created = http_arg(r, "created_at");
	struct labelset ls = { .n = 0 };
	struct store_input in;
	struct store_ref ref;
	struct buf err = { 0 };
	int64_t created_at = 0;
	int rc;

	if (service == NULL || service[0] == '\0') {
		http_reply_error(r, 400, "bad request: missing service");
		goto out;
	}
	if (store_check_service_name(service, &err) < 0) {
		http_reply_error(r, 400, "bad request: bad service: %s",
		    http_why(&err, "not a valid service name"));
		goto out;
	}
	if (type == NULL || type[0] == '\0') {
		http_reply_error(r, 400, "bad request: missing type (one of cpu heap block mutex "
		    "goroutine threadcreate other allocs wall, or auto)");
		goto out;
	}
	if (store_check_known_type(type, &err) < 0) {
		http_reply_error(r, 400, "bad request: %s", http_why(&err, "unknown profile type"));
		goto out;
	}
	if (labels && httpparse_labels(labels, &ls, &err) < 0) {
		http_reply_error(r, 400, "bad request: bad labels \"%s\": %s", labels,
		    err.data ? err.data : "out of memory");
		goto out;
	}
	if (created && created[0] && (httpparse_time(created, &created_at) < 0 ||
	    !store_time_sane(created_at, clock_now_ns()))) {
		http_reply_error(r, 400, "bad request: bad created_at \"%s\": use 2006-01-02T15:04:05 "
		    "(UTC), from 2000-01-01 to a day from now", created);
		goto out;
	}
	if (r->body.len == 0) {
		http_reply_error(r, 400, "bad request: empty body: send the pprof profile as the "
		    "body (curl --data-binary @FILE)");
		goto out;
	}
	memset(&in, 0, sizeof(in));
	in.service = service;
	in.type = type;
	in.labels = &ls;
	in.created_at = created_at;
	in.source = "http";
	if ((rc = http_store(r, "http", &in, r->body.data, r->body.len, &ref, &err)) < 0) {
		http_reply_store_error(r, rc, rc == -EINVAL || rc == -EFBIG ?
		    "bad request: not a valid profile" : "failed to create profile", &err);
		goto out;
	}
	http_reply_ok(r, meta_json(ref.id, service, ref.type, &ls, ref.time));
out:
	labels_clear(&ls);
	buf_free(&err);
}

/* The parameters of GET /api/0/profiles and /merge. */
struct find {
	struct query	 q;
	struct labelset	 sel;
	struct matchers	 ms;		/* labels with !=, =~, !~: the tree's matchers */
};

/* 0, or -EINVAL after replying 400. */
static int
find_parse(struct http_req *r, struct find *f, bool need_type)
{
	const char *service = http_arg(r, "service"), *type = http_arg(r, "type");
	const char *labels = http_arg(r, "labels"), *from = http_arg(r, "from");
	const char *to = http_arg(r, "to"), *limit = http_arg(r, "limit");
	struct buf err = { 0 };
	char fs[40], ts[40];
	int64_t tfrom, tto;
	int rc;

	memset(f, 0, sizeof(*f));
	if (service == NULL || service[0] == '\0') {
		http_reply_error(r, 400, "bad request: missing service");
		return -EINVAL;
	}
	f->q.service = service;
	f->q.cancel = &r->cancel;
	if (type && type[0]) {
		if (!store_type_known(type)) {
			store_check_known_type(type, &err);
			http_reply_error(r, 400, "bad request: %s", err.data ? err.data :
			    "unknown profile type");
			buf_free(&err);
			return -EINVAL;
		}
		f->q.type = type;
	} else if (need_type) {
		http_reply_error(r, 400, "bad request: missing type: profiles of different types "
		    "do not merge");
		return -EINVAL;
	}
	if (labels && matchers_has_ops(labels)) {
		if ((rc = matchers_parse_path(labels, &f->ms, &err)) < 0) {
			if (rc == -ENOMEM)
				http_add_header(r, "Retry-After", "1");
			http_reply_error(r, rc == -ENOMEM ? 503 : 400, "bad request: bad label "
			    "matchers \"%s\": %s", labels, err.data ? err.data : "out of memory");
			buf_free(&err);
			return -EINVAL;
		}
		f->q.match = &f->ms;
	} else if (labels && httpparse_labels(labels, &f->sel, &err) < 0) {
		http_reply_error(r, 400, "bad request: bad labels \"%s\": %s", labels,
		    err.data ? err.data : "out of memory");
		buf_free(&err);
		labels_clear(&f->sel);
		return -EINVAL;
	}
	f->q.sel = &f->sel;
	if (from == NULL || from[0] == '\0' || to == NULL || to[0] == '\0') {
		http_reply_error(r, 400, "bad request: missing %s (format 2006-01-02T15:04:05, UTC)",
		    from == NULL || from[0] == '\0' ? "from" : "to");
		goto bad;
	}
	/* Also what /ingest takes: now, now-1h, -15m, unix times. */
	if (httpparse_time(from, &tfrom) < 0 &&
	    httpparse_attime(from, clock_now_ns(), &tfrom) < 0) {
		http_reply_error(r, 400, "bad request: bad \"from\" timestamp \"%s\": use "
		    "2006-01-02T15:04:05 (UTC), now-1h or a unix time", from);
		goto bad;
	}
	if (httpparse_time(to, &tto) < 0 && httpparse_attime(to, clock_now_ns(), &tto) < 0) {
		http_reply_error(r, 400, "bad request: bad \"to\" timestamp \"%s\": use "
		    "2006-01-02T15:04:05 (UTC), now or a unix time", to);
		goto bad;
	}
	if (tfrom > tto) {
		httpparse_format_time(tfrom, fs);
		httpparse_format_time(tto, ts);
		http_reply_error(r, 400, "bad request: from %s is after to %s", fs, ts);
		goto bad;
	}
	f->q.from = tfrom;
	f->q.to = tto + 1;	/* profefe's "to" is inclusive */
	if (limit && limit[0]) {
		char *end;
		long v;

		errno = 0;
		v = strtol(limit, &end, 10);
		if (errno || *end || v < 0) {
			http_reply_error(r, 400, "bad request: bad limit \"%s\"", limit);
			goto bad;
		}
		f->q.limit = (size_t)v;
	}
	return 0;
bad:
	labels_clear(&f->sel);
	matchers_clear(&f->ms);
	return -EINVAL;
}

/* GET /api/0/profiles */
static void
list(struct http_req *r)
{
	struct query_result res;
	struct find f;
	const struct series *s;
	json_t *arr;
	size_t i;
	int rc;

	if (find_parse(r, &f, false) < 0)
		return;
	if ((rc = reader_list(r->srv->rd, &f.q, &res)) < 0) {
		http_reply_store_error(r, rc, "failed to find profiles", NULL);
		labels_clear(&f.sel);
		matchers_clear(&f.ms);
		return;
	}
	if (res.nrefs == 0) {
		http_reply_error(r, 404, "nothing found");
		goto out;
	}
	arr = json_array();
	for (i = 0; arr && i < res.nrefs; i++) {
		if ((s = reader_series_get(r->srv->rd, res.refs[i].series)) == NULL)
			continue;
		if (json_array_append_new(arr, meta_json(res.refs[i].id, s->service, s->type,
		    &s->ls, res.refs[i].time)) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	http_reply_ok(r, arr);
out:
	query_result_free(&res);
	labels_clear(&f.sel);
	matchers_clear(&f.ms);
}

void
profefe_profiles(struct http_req *r)
{
	if (strcmp(r->method, "POST") == 0)
		create(r);
	else
		list(r);
}

/*
 * Kernel text addresses are never served: they would undo KASLR for a client
 * that /proc/kallsyms shows zeros (kaddr_hide(), query.h).
 */
static void
reply_profile(struct http_req *r, struct profile *p, const char *filename)
{
	struct buf out = { 0 };
	char cd[120];

	kaddr_hide(p);
	if (profile_encode(p, true, &out) < 0) {
		buf_free(&out);
		http_reply_store_error(r, -ENOMEM, "failed to encode the profile", NULL);
		return;
	}
	snprintf(cd, sizeof(cd), "attachment; filename=\"%s\"", filename);
	http_reply(r, 200, "application/octet-stream", &out, cd);
}

/* GET /api/0/profiles/merge */
void
profefe_merge(struct http_req *r)
{
	struct query_result res;
	struct find f;
	char n[32];
	int rc;

	if (find_parse(r, &f, true) < 0)
		return;
	if ((rc = query_merge_timed(r->srv->rd, &f.q, "http", &res)) < 0) {
		http_reply_store_error(r, rc, "failed to merge profiles", NULL);
		labels_clear(&f.sel);
		matchers_clear(&f.ms);
		return;
	}
	if (res.merged == NULL) {
		http_reply_error(r, 404, "nothing found");
		goto out;
	}
	snprintf(n, sizeof(n), "%zu", res.nmerged);
	http_add_header(r, "X-Profilefs-Merged", n);
	snprintf(n, sizeof(n), "%zu", res.nskipped);
	http_add_header(r, "X-Profilefs-Skipped", n);
	if (res.nskipped)
		http_add_header(r, "X-Profilefs-Skipped-Reason", res.skipped[0].reason);
	reply_profile(r, res.merged, "pprof.pb.gz");
out:
	query_result_free(&res);
	labels_clear(&f.sel);
	matchers_clear(&f.ms);
}

/* GET /api/0/profiles/<id> and /<id1>+<id2>+...: the stored profile, or their merge. */
void
profefe_get(struct http_req *r)
{
	const char *spec = r->path + strlen("/api/0/profiles/"), *p, *e;
	struct buf gz = { 0 }, err = { 0 };
	struct merge *m = NULL;
	struct profile *pf = NULL, *merged = NULL;
	struct store_ref ref;
	uint64_t id, *ids = xcalloc(MAX_IDS, sizeof(*ids));
	size_t nids = 0, i, bytes = 0;
	int64_t t0 = clock_mono_ns();
	char tok[64], fn[40], idh[17];
	int rc;

	if (strcmp(r->method, "DELETE") == 0) {
		free(ids);
		http_delete_profile(r);
		return;
	}

	/* '+' arrives as a space: the query unescaping reads it so. */
	for (p = spec; *p; p = *e ? e + 1 : e) {
		if ((e = strpbrk(p, "+ ")) == NULL)
			e = p + strlen(p);
		if (e == p || (size_t)(e - p) >= sizeof(tok)) {
			http_reply_error(r, 400, "bad profile id list \"%.64s\"", spec);
			goto out;
		}
		memcpy(tok, p, (size_t)(e - p));
		tok[e - p] = '\0';
		if (store_id_parse(tok, &id) < 0) {
			http_reply_error(r, 400, "bad profile id \"%s\"", tok);
			goto out;
		}
		for (i = 0; i < nids && ids[i] != id; i++)
			;
		if (i < nids)
			continue;	/* a repeat */
		if (nids == MAX_IDS) {
			http_reply_error(r, 400, "more than %d profile ids", MAX_IDS);
			goto out;
		}
		ids[nids++] = id;
	}
	for (i = 0; i < nids; i++) {
		id = ids[i];
		store_id_format(id, idh);
		if ((rc = cancel_check(&r->cancel)) < 0) {
			http_reply_store_error(r, rc, "failed to merge profiles", NULL);
			goto out;
		}
		buf_reset(&gz);
		if ((rc = reader_get(r->srv->rd, id, &ref, &gz)) < 0) {
			if (rc == -ENOENT)
				http_reply_error(r, 404, "nothing found: no profile %s", idh);
			else
				http_reply_store_error(r, rc, "failed to get profile", NULL);
			goto out;
		}
		if (nids == 1) {
			/* One profile: the stored bytes as they are, unless they hold kernel addresses. */
			snprintf(fn, sizeof(fn), "%s.pb.gz", idh);
			if (profile_decode(gz.data, gz.len, &pf, &err) == 0 && kaddr_hide(pf) > 0) {
				buf_reset(&gz);
				if (profile_encode(pf, true, &gz) < 0) {
					http_reply_store_error(r, -ENOMEM, "failed to encode the profile",
					    NULL);
					goto out;
				}
			}
			profile_free(pf);
			pf = NULL;
			snprintf(tok, sizeof(tok), "attachment; filename=\"%s\"", fn);
			http_reply(r, 200, "application/octet-stream", &gz, tok);
			goto out;
		}
		if ((bytes += gz.len) > MAX_IDS_BYTES) {
			http_reply_error(r, 413, "the ids name more than %u MiB of stored profiles; "
			    "merge a range with /api/0/profiles/merge instead", MAX_IDS_BYTES >> 20);
			goto out;
		}
		if (m == NULL && (m = merge_create()) == NULL) {
			http_reply_store_error(r, -ENOMEM, "failed to merge profiles", NULL);
			goto out;
		}
		buf_reset(&err);
		if ((rc = profile_decode(gz.data, gz.len, &pf, &err)) < 0) {
			http_reply_store_error(r, rc == -EINVAL ? -EIO : rc, "stored profile cannot "
			    "be decoded", &err);
			goto out;
		}
		if ((rc = merge_add(m, pf, &err)) < 0) {
			if (rc == -ENOMEM)
				http_reply_store_error(r, rc, "failed to merge profiles", NULL);
			else
				http_reply_error(r, 400, "profile %s cannot be merged with the ones "
				    "before it: %s", idh, err.data ? err.data : strerror(-rc));
			goto out;
		}
		profile_free(pf);
		pf = NULL;
	}
	if (nids == 0) {
		http_reply_error(r, 400, "no profile id");
		goto out;
	}
	if ((rc = merge_finish(m, true, &merged)) < 0) {
		http_reply_store_error(r, rc, "failed to merge profiles", NULL);
		goto out;
	}
	/* A merge of ids is timed as a merge of a range is (query_merge_timed()). */
	metrics_observe(METRIC_MERGE_DURATION, "source=\"http\"",
	    (double)(clock_mono_ns() - t0) / 1e9);
	reply_profile(r, merged, "pprof.pb.gz");
out:
	profile_free(pf);
	profile_free(merged);
	merge_free(m);
	buf_free(&gz);
	buf_free(&err);
	free(ids);
}

/* GET /api/0/services */
void
profefe_services(struct http_req *r)
{
	const char **svc;
	json_t *names;
	size_t n, i;
	int rc;

	/* Every service the series index knows, as profefe lists them. */
	if ((rc = query_services(r->srv->rd, false, &svc, &n)) < 0) {
		http_reply_store_error(r, rc, "failed to list services", NULL);
		return;
	}
	names = json_array();
	for (i = 0; names && i < n; i++)
		if (json_array_append_new(names, jsonw_str(svc[i])) < 0) {
			json_decref(names);
			names = NULL;
		}
	free(svc);
	if (names && n == 0) {
		json_decref(names);
		http_reply_error(r, 404, "nothing found");
		return;
	}
	http_reply_ok(r, names);
}

/* __DATE__ "Nov 22 2026" and __TIME__ as RFC 3339. */
static void
build_time(char out[32])
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	const char *d = __DATE__, *m = strstr(months, (char[4]){ d[0], d[1], d[2], 0 });

	snprintf(out, 32, "%.4s-%02d-%02dT%sZ", d + 7, m ? (int)(m - months) / 3 + 1 : 1,
	    atoi(d + 4), __TIME__);
}

/* GET /api/0/version */
void
profefe_version(struct http_req *r)
{
	char bt[32];

	build_time(bt);
	http_reply_ok(r, json_pack("{s:s,s:s,s:s}", "version", PROFILEFS_VERSION,
	    "commit", PROFILEFS_COMMIT, "build_time", bt));
}
