/*
 * connect: Connect unary calls, and proto3's JSON mapping of replies over
 * protobuf-c's descriptors (see connect.h). A request's JSON is read by
 * pbjson.c, as OTLP's is, re-encoded as protobuf: JSON and protobuf requests
 * then unpack alike, under the memory budget (pbjson_unpack()).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "connect.h"
#include "pbjson.h"

/* A request body once gunzipped. */
#define CONNECT_MAX_DECODED	(16u << 20)
/* What the messages of one request may take once unpacked (pbjson_unpack()). */
#define CONNECT_MAX_MESSAGE	(64u << 20)

/*
 * A request's JSON (pbjson.h): the API's requests are a few fields and lists
 * of selectors and ids, 3 messages deep; these are far past them.
 */
static const struct pbjson_limits json_limits = {
	.max_text = CONNECT_MAX_DECODED,
	.max_depth = PBJSON_MAX_DEPTH,
	.max_elements = 256u << 10,
	.max_strings = CONNECT_MAX_DECODED,
};

const char *
connect_code(unsigned status)
{
	switch (status) {
	case 400:	return "invalid_argument";
	case 401:	return "unauthenticated";
	case 403:	return "permission_denied";
	case 404:	return "not_found";
	case 405:	return "unimplemented";
	case 408:	return "deadline_exceeded";
	case 409:	return "already_exists";
	case 412:	return "failed_precondition";
	case 413:	return "resource_exhausted";
	case 415:	return "invalid_argument";
	case 429:	return "resource_exhausted";
	case 499:	return "canceled";
	case 500:	return "internal";
	case 501:	return "unimplemented";
	case 503:	return "unavailable";
	case 504:	return "deadline_exceeded";
	}
	return "unknown";
}

bool
connect_is_json(struct http_req *r)
{
	const char *ct = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);

	return ct && strncasecmp(ct, "application/json", 16) == 0;
}

/* --- values --------------------------------------------------------------- */

static size_t
elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof(float);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 8;
	}
}

/* proto3's JSON name: underscores dropped, the next letter upper-cased. */
static void
json_name(const char *name, char *out, size_t n)
{
	size_t i = 0;
	bool up = false;

	for (; *name && i + 1 < n; name++) {
		if (*name == '_') {
			up = true;
			continue;
		}
		out[i++] = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
		up = false;
	}
	out[i] = '\0';
}

/* A bytes field as JSON: base64 (buf_add_base64()). NULL when out of memory. */
static json_t *
bytes_to_json(const uint8_t *p, size_t n)
{
	struct buf b = { 0 };
	json_t *j;

	j = buf_add_base64(&b, p, n) < 0 ? NULL : json_stringn(b.data ? b.data : "", b.len);
	buf_free(&b);
	return j;
}

/* --- messages to JSON ------------------------------------------------------ */

static json_t *
value_to_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	char num[32];

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
		snprintf(num, sizeof(num), "%lld", (long long)*(const int64_t *)p);
		return json_string(num);
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
		snprintf(num, sizeof(num), "%llu", (unsigned long long)*(const uint64_t *)p);
		return json_string(num);
	case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_DOUBLE: {
		double x = f->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)p :
		    *(const double *)p;

		if (isnan(x))
			return json_string("NaN");
		if (isinf(x))
			return json_string(x > 0 ? "Infinity" : "-Infinity");
		return json_real(x);
	}
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor,
		    *(const int32_t *)p);

		return ev ? json_string(ev->name) : json_integer(*(const int32_t *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return jsonw_str(s ? s : "");
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;

		return bytes_to_json(b->data, b->len);
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		return connect_to_json(*(ProtobufCMessage *const *)p);
	}
	return NULL;
}

/* Whether a singular proto3 field holds its default (left out of JSON). */
static bool
is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (elem_size(f->type)) {
	case 4:
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			return *(const float *)p == 0 && !signbit(*(const float *)p);
		return *(const uint32_t *)p == 0;
	case 8:
		if (f->type == PROTOBUF_C_TYPE_DOUBLE)
			return *(const double *)p == 0 && !signbit(*(const double *)p);
		return *(const uint64_t *)p == 0;
	}
	if (f->type == PROTOBUF_C_TYPE_STRING)
		return *(char *const *)p == NULL || **(char *const *)p == '\0';
	if (f->type == PROTOBUF_C_TYPE_BYTES)
		return ((const ProtobufCBinaryData *)p)->len == 0;
	return *(void *const *)p == NULL;
}

/*
 * pprof's string_table is `repeated string` in pprof/profile.proto, as in
 * Pyroscope's schema (google.v1.Profile), but the C codec is generated from a
 * copy declaring it bytes (see the Makefile), so that names which are not
 * UTF-8, or hold a NUL, survive protobuf-c's unpacker (its strings are C
 * strings). The descriptor therefore says bytes, which proto3's JSON writes as
 * base64 (a client would read "Y3B1" as a name): this one field is written
 * as the strings the schema declares, invalid UTF-8 repaired as everywhere.
 * The check is by message and number, which the copy keeps.
 */
static bool
bytes_as_string(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f)
{
	return f->type == PROTOBUF_C_TYPE_BYTES && f->id == 6 &&
	    strcmp(d->name, "perftools.profiles.Profile") == 0;
}

/*
 * Fields of pprof/profile.proto that Pyroscope's schema (an older copy of
 * pprof's) lacks: Profile.doc_url and Line.column. Protobuf readers skip
 * unknown fields, and so do Connect's clients in JSON, but proto3's JSON
 * parsers refuse an unknown key by default (protobuf-es fromJson, Go's
 * protojson.Unmarshal): the JSON form is Pyroscope's schema exactly and
 * leaves them out; the protobuf form keeps them.
 */
static bool
json_left_out(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f)
{
	return (f->id == 15 && strcmp(d->name, "perftools.profiles.Profile") == 0) ||
	    (f->id == 3 && strcmp(d->name, "perftools.profiles.Line") == 0);
}

json_t *
connect_to_json(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d;
	json_t *o, *v;
	char jn[128];
	unsigned i;

	if (m == NULL || (o = json_object()) == NULL)
		return NULL;
	d = m->descriptor;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *member = (const char *)m + f->offset;

		if (json_left_out(d, f))
			continue;
		json_name(f->name, jn, sizeof(jn));
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)((const char *)m + f->quantifier_offset), k;
			const char *arr = *(char *const *)member;
			size_t es = elem_size(f->type);

			if (n == 0)
				continue;
			if ((v = json_array()) == NULL)
				goto oom;
			for (k = 0; k < n; k++) {
				const ProtobufCBinaryData *b = (const void *)(arr + k * es);
				json_t *e = bytes_as_string(d, f) ?
				    jsonw_strn(b->data ? (const char *)b->data : "", b->len) :
				    value_to_json(f, arr + k * es);

				if (json_array_append_new(v, e) < 0) {
					json_decref(v);
					goto oom;
				}
			}
		} else {
			if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
			    !*(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset))
				continue;
			if (f->label != PROTOBUF_C_LABEL_OPTIONAL && is_default(f, member))
				continue;
			if ((v = value_to_json(f, member)) == NULL)
				goto oom;
		}
		if (json_object_set_new(o, jn, v) < 0)
			goto oom;
	}
	return o;
oom:
	json_decref(o);
	return NULL;
}

/* --- calls ---------------------------------------------------------------- */

/* The reply for a request refused by pbjson.c's rc, the reason in err. */
static void
decode_fail(struct http_req *r, const ProtobufCMessageDescriptor *d, int rc,
    const struct buf *err)
{
	const char *why = err->data ? err->data : "out of memory";

	if (rc == -EFBIG)
		http_reply_error(r, 413, "%s", why);
	else if (rc == -ENOMEM) {
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		http_reply_error(r, 503, "%s", why);
	} else
		http_reply_error(r, 400, "bad %s: %s", d->name, why);
}

int
connect_decode(struct http_req *r, const ProtobufCMessageDescriptor *d, ProtobufCMessage **out)
{
	const char *ct = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *ce = http_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
	struct buf plain = { 0 }, pb = { 0 }, err = { 0 };
	const void *body = r->body.data;
	size_t len = r->body.len;
	int rc = 0;

	*out = NULL;
	if (ct == NULL || (strncasecmp(ct, "application/proto", 17) != 0 &&
	    strncasecmp(ct, "application/json", 16) != 0)) {
		http_add_header(r, "Accept-Post", "application/json, application/proto");
		http_reply_error(r, 415, "Content-Type %s is not served: send application/proto or "
		    "application/json (the Connect protocol)", ct ? ct : "(none)");
		return -EINVAL;
	}
	if (ce && strcasecmp(ce, "identity") != 0) {
		if (strcasecmp(ce, "gzip") != 0) {
			http_add_header(r, "Accept-Encoding", "gzip");
			http_reply_error(r, 501, "Content-Encoding %s is not served (gzip or none)", ce);
			return -EINVAL;
		}
		/* Inflated no further than the limit: a bomb costs that, not its ratio. */
		if ((rc = profile_gunzip_max(body, len, CONNECT_MAX_DECODED, &plain, &err)) < 0) {
			if (rc == -EFBIG) {
				http_reply_error(r, 413, "decompressed body larger than %u MiB",
				    CONNECT_MAX_DECODED >> 20);
			} else if (rc == -ENOMEM || rc == -EAGAIN) {
				/* The memory budget refused: not the client's fault. */
				http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
				http_reply_error(r, 503, "no memory to gunzip the body (the memory "
				    "budget of %zu MiB is in use); try again", budget_limit() >> 20);
			} else {
				http_reply_error(r, 400, "bad gzip body: %s", http_why(&err,
				    "not gzip data"));
			}
			rc = -EINVAL;
			goto out;
		}
		body = plain.data;
		len = plain.len;
	}
	if (connect_is_json(r)) {
		if ((rc = pbjson_encode(d, len ? body : "{}", len ? len : 2, &json_limits, 0, &pb,
		    &err)) < 0) {
			decode_fail(r, d, rc, &err);
			rc = -EINVAL;
			goto out;
		}
		body = pb.data;
		len = pb.len;
	}
	if ((rc = pbjson_unpack(d, len ? body : "", len, CONNECT_MAX_MESSAGE, out, &err)) < 0) {
		if (rc == -EINVAL && !connect_is_json(r)) {
			buf_reset(&err);
			buf_printf(&err, "malformed %s in the protobuf body", d->name);
			http_reply_error(r, 400, "%s", err.data);
		} else
			decode_fail(r, d, rc, &err);
		rc = -EINVAL;
	}
out:
	buf_free(&plain);
	buf_free(&pb);
	buf_free(&err);
	return rc;
}

void
connect_free(ProtobufCMessage *m)
{
	pbjson_free(m);
}

/* The reply's message in protobuf to r->capture, when the caller asked for it. */
static void
capture(struct http_req *r, const void *data, size_t len)
{
	if (r->capture && buf_add(r->capture, data, len) == 0)
		r->captured = true;
}

static void
reply_json(struct http_req *r, json_t *doc)
{
	struct buf b = { 0 };

	if (doc == NULL || jsonw_dump(&b, doc, JSON_COMPACT) < 0) {
		json_decref(doc);
		buf_free(&b);
		http_reply_error(r, 500, "out of memory for the reply");
		return;
	}
	json_decref(doc);
	http_reply(r, 200, "application/json", &b, NULL);
}

void
connect_reply(struct http_req *r, const ProtobufCMessage *m)
{
	struct buf b = { 0 };
	bool json = connect_is_json(r);
	size_t n;

	if (json && r->capture == NULL) {
		reply_json(r, connect_to_json(m));
		return;
	}
	n = protobuf_c_message_get_packed_size(m);
	if (buf_reserve(&b, n + 1) < 0) {
		http_reply_error(r, 500, "out of memory for the reply");
		return;
	}
	b.len = protobuf_c_message_pack(m, (uint8_t *)b.data);
	capture(r, b.data, b.len);
	if (json) {
		buf_free(&b);
		reply_json(r, connect_to_json(m));
		return;
	}
	http_reply(r, 200, "application/proto", &b, NULL);
}

void
connect_reply_packed(struct http_req *r, const ProtobufCMessageDescriptor *d, struct buf *body)
{
	ProtobufCMessage *m;

	if (buf_error(body) == 0)
		capture(r, body->data ? body->data : "", body->len);
	if (!connect_is_json(r)) {
		http_reply(r, 200, "application/proto", body, NULL);
		return;
	}
	m = protobuf_c_message_unpack(d, NULL, body->len, (const uint8_t *)body->data);
	buf_free(body);
	if (m == NULL) {
		http_reply_error(r, 500, "the reply does not decode as %s", d->name);
		return;
	}
	reply_json(r, connect_to_json(m));
	protobuf_c_message_free_unpacked(m, NULL);
}
