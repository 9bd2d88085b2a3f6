/*
 * pyroscope: Pyroscope's push endpoint POST /ingest, for the pprof uploads of
 * its SDKs and agents: either multipart/form-data with the profile in a part
 * named "profile" (what grafana/pyroscope-go sends, with an optional
 * "sample_type_config" part and, from old clients, "prev_profile"), or the
 * raw pprof as the body with format=pprof. The multipart body is parsed by
 * libmicrohttpd's post processor. Other formats (folded text, trie, jfr,
 * speedscope) are refused with 415. The service is the application name, the
 * labels come from name's {k=v,...}, the type is inferred from the sample
 * types and the time is `from`. An application name ending in one of
 * Pyroscope's profile type suffixes (app.cpu, app.inuse_space, ...) names
 * the service without it, and the type, which the samples must then fit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "api_int.h"
#include "httpparse.h"

/* sample_type_config is a small JSON object; anything larger is not one. */
#define MAX_CONFIG_PART	(64u << 10)

struct form {
	struct buf	 profile;
	struct buf	 config;
	bool		 have_profile;
	bool		 config_too_large;
};

static enum MHD_Result
on_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
    const char *content_type, const char *transfer_encoding, const char *data,
    uint64_t off, size_t size)
{
	struct form *f = cls;

	(void)kind;
	(void)filename;
	(void)content_type;
	(void)transfer_encoding;
	(void)off;
	if (key == NULL)
		return MHD_YES;
	if (strcmp(key, "profile") == 0) {
		f->have_profile = true;
		if (size && buf_add(&f->profile, data, size) < 0)
			return MHD_NO;
	} else if (strcmp(key, "sample_type_config") == 0) {
		if (f->config.len + size > MAX_CONFIG_PART) {
			f->config_too_large = true;
			return MHD_YES;
		}
		if (size && buf_add(&f->config, data, size) < 0)
			return MHD_NO;
	}
	/* prev_profile (old clients' base for server-side deltas) and the rest: ignored. */
	return MHD_YES;
}

/* Parse the multipart body; 0, or -EINVAL after replying. */
static int
form_parse(struct http_req *r, struct form *f)
{
	struct MHD_PostProcessor *pp;
	enum MHD_Result ok;

	pp = MHD_create_post_processor(r->conn, 16 * 1024, on_part, f);
	if (pp == NULL) {
		http_reply_error(r, 400, "multipart/form-data body without a usable boundary");
		return -EINVAL;
	}
	ok = r->body.len ? MHD_post_process(pp, r->body.data, r->body.len) : MHD_YES;
	if (MHD_destroy_post_processor(pp) != MHD_YES || ok != MHD_YES) {
		http_reply_error(r, 400, "malformed multipart/form-data body");
		return -EINVAL;
	}
	if (!f->have_profile || f->profile.len == 0) {
		http_reply_error(r, 400, "multipart body has no \"profile\" part with the pprof "
		    "profile");
		return -EINVAL;
	}
	if (f->config_too_large) {
		http_reply_error(r, 400, "sample_type_config part larger than %u bytes",
		    MAX_CONFIG_PART);
		return -EINVAL;
	}
	return 0;
}

/* Pyroscope's suffixes of application names, and the types they mean. */
static const struct {
	const char	*suffix;
	const char	*type;
} suffixes[] = {
	{ ".cpu", "cpu" }, { ".itimer", "cpu" }, { ".wall", "wall" },
	{ ".alloc_objects", "allocs" }, { ".alloc_space", "allocs" },
	{ ".inuse_objects", "heap" }, { ".inuse_space", "heap" },
	{ ".goroutines", "goroutine" },
	{ ".mutex_count", "mutex" }, { ".mutex_duration", "mutex" },
	{ ".block_count", "block" }, { ".block_duration", "block" },
};

/* Cut a type suffix off app; its type, or NULL (inferred). */
static const char *
app_type(struct buf *app)
{
	size_t i, n;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		n = strlen(suffixes[i].suffix);
		if (app->len > n && strcmp(app->data + app->len - n, suffixes[i].suffix) == 0) {
			app->len -= n;
			app->data[app->len] = '\0';
			return suffixes[i].type;
		}
	}
	return NULL;
}

void
pyroscope_ingest(struct http_req *r)
{
	const char *name = http_arg(r, "name"), *from = http_arg(r, "from");
	const char *until = http_arg(r, "until"), *format = http_arg(r, "format");
	const char *ctype = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE), *type;
	struct form f = { 0 };
	struct labelset ls = { .n = 0 };
	struct buf app = { 0 }, err = { 0 };
	struct store_input in;
	struct store_ref ref;
	const void *data;
	size_t len;
	int64_t tfrom = 0, tuntil;
	bool multipart = ctype && strncasecmp(ctype, "multipart/form-data", 19) == 0;
	int rc;

	if (name == NULL || name[0] == '\0') {
		http_reply_error(r, 400, "missing name (write name=APP{k=v,...})");
		goto out;
	}
	if (httpparse_appname(name, &app, &ls, &err) < 0) {
		http_reply_error(r, 400, "bad name \"%s\": %s", name,
		    http_why(&err, "not APP{k=v,...}"));
		goto out;
	}
	buf_reset(&err);
	type = app_type(&app);
	if (store_check_service_name(app.data, &err) < 0) {
		http_reply_error(r, 400, "bad name \"%s\": %s", name,
		    http_why(&err, "not a valid service name"));
		goto out;
	}
	if (from && from[0] && (httpparse_attime(from, clock_now_ns(), &tfrom) < 0 ||
	    !store_time_sane(tfrom, clock_now_ns()))) {
		http_reply_error(r, 400, "bad from \"%s\": give unix seconds, ms, us or ns, "
		    "or now-1h, from 2000-01-01 to a day from now", from);
		goto out;
	}
	if (until && until[0] && httpparse_attime(until, clock_now_ns(), &tuntil) < 0) {
		http_reply_error(r, 400, "bad until \"%s\": give unix seconds, ms, us or ns, "
		    "or now-1h", until);
		goto out;
	}
	if (format && format[0] && strcmp(format, "pprof") != 0) {
		http_reply_error(r, 415, "format=%s is not supported: profilefs stores pprof; send "
		    "format=pprof", format);
		goto out;
	}
	if (multipart) {
		if (form_parse(r, &f) < 0)
			goto out;
		data = f.profile.data;
		len = f.profile.len;
	} else {
		if (format == NULL || format[0] == '\0') {
			http_reply_error(r, 415, "no format given, which Pyroscope reads as folded "
			    "text: profilefs stores pprof; send format=pprof or a multipart "
			    "\"profile\" part");
			goto out;
		}
		if (r->body.len == 0) {
			http_reply_error(r, 400, "empty body: send the pprof profile");
			goto out;
		}
		data = r->body.data;
		len = r->body.len;
	}
	memset(&in, 0, sizeof(in));
	in.service = app.data;
	in.type = type;		/* NULL: inferred from the sample types */
	in.labels = &ls;
	in.created_at = tfrom;
	in.source = "pyroscope";
	buf_reset(&err);
	if ((rc = http_store(r, "pyroscope", &in, data, len, &ref, &err)) < 0) {
		http_reply_store_error(r, rc, rc == -EINVAL || rc == -EFBIG ?
		    "not a valid pprof profile" : "failed to store the profile", &err);
		goto out;
	}
	http_reply(r, 200, NULL, NULL, NULL);
out:
	buf_free(&f.profile);
	buf_free(&f.config);
	buf_free(&app);
	buf_free(&err);
	labels_clear(&ls);
}
