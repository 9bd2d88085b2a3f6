/*
 * httpdelete: deletion over HTTP, with the token rules of every other
 * endpoint (without a token, the mount's writers may: a DELETE is a write
 * like a push). DELETE /api/0/profiles/<id> deletes one stored profile;
 * DELETE /api/0/services/<service>[?type=&labels=] deletes every series of
 * the service (of that type, whose labels include those pairs). The work is
 * the reader's (reader_delete_profile(), reader_delete_series()): the
 * store's, and the fleet's with --clickhouse, whose ids the API shows;
 * replies are profefe's JSON envelope with what went, 404 when nothing
 * matched.
 */
#include <errno.h>
#include <string.h>

#include "api_int.h"
#include "httpparse.h"

void
http_delete_profile(struct http_req *r)
{
	const char *spec = r->path + strlen("/api/0/profiles/");
	struct buf err = { 0 };
	struct store_ref ref;
	char idh[17];
	uint64_t id;
	int rc;

	if (store_id_parse(spec, &id) < 0) {
		http_reply_error(r, 400, "bad profile id \"%.64s\": one id of 16 hex digits", spec);
		return;
	}
	rc = reader_delete_profile(r->srv->rd, id, &ref, &err);
	if (rc == -ENOENT)
		http_reply_error(r, 404, "no profile %s", spec);
	else if (rc < 0)
		http_reply_store_error(r, rc, "failed to delete the profile", &err);
	else {
		store_id_format(id, idh);
		log_info("http: deleted profile %s", idh);
		http_reply_ok(r, json_pack("{s:s,s:i}", "id", idh, "deleted", 1));
	}
	buf_free(&err);
}

void
http_delete_service(struct http_req *r)
{
	const char *service = r->path + strlen("/api/0/services/");
	const char *type = http_arg(r, "type"), *labels = http_arg(r, "labels");
	struct labelset sel = { .n = 0 };
	struct buf err = { 0 };
	struct query q;
	uint64_t ns = 0, np = 0;
	int rc;

	memset(&q, 0, sizeof(q));
	if (store_check_service(service, &err) < 0) {
		http_reply_error(r, 400, "bad service: %s", http_why(&err, "not a valid service name"));
		goto out;
	}
	q.service = service;
	if (type && type[0]) {
		if (store_check_type(type, &err) < 0) {
			http_reply_error(r, 400, "bad type: %s", http_why(&err, "not a profile type"));
			goto out;
		}
		q.type = type;
	}
	if (labels && labels[0]) {
		if (httpparse_labels(labels, &sel, &err) < 0) {
			http_reply_error(r, 400, "bad labels \"%s\": %s", labels,
			    http_why(&err, "out of memory"));
			goto out;
		}
		q.sel = &sel;
	}
	if ((rc = reader_delete_series(r->srv->rd, &q, &ns, &np, &err)) < 0) {
		http_reply_store_error(r, rc, "failed to delete", &err);
		goto out;
	}
	if (ns == 0) {
		http_reply_error(r, 404, "nothing found for service %s%s%s%s%s", service,
		    q.type ? ", type " : "", q.type ? q.type : "", q.sel ? ", labels " : "",
		    q.sel ? labels : "");
		goto out;
	}
	log_info("http: deleted %llu profiles of %llu label sets of service %s",
	    (unsigned long long)np, (unsigned long long)ns, service);
	http_reply_ok(r, json_pack("{s:s,s:I,s:I}", "service", service, "label_sets",
	    (json_int_t)ns, "profiles", (json_int_t)np));
out:
	labels_clear(&sel);
	buf_free(&err);
}
