/*
 * connect: Connect unary calls and proto3's JSON mapping over protobuf-c's
 * descriptors (see connect.h). Messages built from JSON are allocated as
 * protobuf-c's unpacker would (malloc, strings and arrays owned by their
 * message), so protobuf_c_message_free_unpacked() frees both kinds.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "connect.h"

/* Nesting of messages in a JSON request: the API's are 3 deep. */
#define JSON_MAX_DEPTH		16
/* A request body once gunzipped. */
#define CONNECT_MAX_DECODED	(16u << 20)

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

static ProtobufCMessage *connect_from_json_depth(const ProtobufCMessageDescriptor *d,
    const json_t *j, int depth, struct buf *err);

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

static const ProtobufCFieldDescriptor *
field_by_json(const ProtobufCMessageDescriptor *d, const char *key)
{
	char jn[128];
	unsigned i;

	for (i = 0; i < d->n_fields; i++) {
		if (strcmp(d->fields[i].name, key) == 0)
			return &d->fields[i];
		json_name(d->fields[i].name, jn, sizeof(jn));
		if (strcmp(jn, key) == 0)
			return &d->fields[i];
	}
	return NULL;
}

/* A bytes field from its JSON form (base64, buf_add_base64_decoded()). */
static int
bytes_from_json(const char *s, ProtobufCBinaryData *out)
{
	struct buf b = { 0 };
	int rc;

	out->data = NULL;
	out->len = 0;
	if ((rc = buf_add_base64_decoded(&b, s, strlen(s))) < 0) {
		buf_free(&b);
		return rc;
	}
	out->data = (uint8_t *)buf_steal(&b, &out->len);
	return 0;
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

static int
json_int(const json_t *v, bool is_unsigned, int64_t lo, int64_t hi, uint64_t *out)
{
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x < lo || x > hi)
			return -ERANGE;
		*out = (uint64_t)x;
		return 0;
	}
	if (json_is_real(v)) {
		double x = json_real_value(v);

		if (x != floor(x) || x < (double)lo || x > (double)hi)
			return -ERANGE;
		*out = (uint64_t)(int64_t)x;
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;

		errno = 0;
		if (is_unsigned) {
			unsigned long long x = strtoull(s, &end, 10);

			if (errno || *end || !*s || s[0] == '-' || (hi != INT64_MAX && x > (uint64_t)hi))
				return -ERANGE;
			*out = x;
		} else {
			long long x = strtoll(s, &end, 10);

			if (errno || *end || !*s || x < lo || x > hi)
				return -ERANGE;
			*out = (uint64_t)x;
		}
		return 0;
	}
	return -EINVAL;
}

/* One value of field f from v into the element at p. */
static int
value_from_json(const ProtobufCFieldDescriptor *f, const json_t *v, void *p, int depth,
    struct buf *err)
{
	uint64_t u = 0;
	int rc = 0;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
		if ((rc = json_int(v, false, INT32_MIN, INT32_MAX, &u)) == 0)
			*(int32_t *)p = (int32_t)(int64_t)u;
		break;
	case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
		if ((rc = json_int(v, true, 0, UINT32_MAX, &u)) == 0)
			*(uint32_t *)p = (uint32_t)u;
		break;
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
		if ((rc = json_int(v, false, INT64_MIN, INT64_MAX, &u)) == 0)
			*(int64_t *)p = (int64_t)u;
		break;
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
		if ((rc = json_int(v, true, 0, INT64_MAX, &u)) == 0)
			*(uint64_t *)p = u;
		break;
	case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_DOUBLE: {
		double x;

		if (json_is_number(v))
			x = json_number_value(v);
		else if (json_is_string(v) && strcmp(json_string_value(v), "NaN") == 0)
			x = NAN;
		else if (json_is_string(v) && strcmp(json_string_value(v), "Infinity") == 0)
			x = INFINITY;
		else if (json_is_string(v) && strcmp(json_string_value(v), "-Infinity") == 0)
			x = -INFINITY;
		else if (json_is_string(v)) {
			char *end;

			x = strtod(json_string_value(v), &end);
			if (*end || !*json_string_value(v))
				rc = -EINVAL;
		} else
			rc = -EINVAL;
		if (rc == 0 && f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)p = (float)x;
		else if (rc == 0)
			*(double *)p = x;
		break;
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (json_is_boolean(v))
			*(protobuf_c_boolean *)p = json_is_true(v);
		else
			rc = -EINVAL;
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *ed = f->descriptor;
		const ProtobufCEnumValue *ev = NULL;

		if (json_is_string(v))
			ev = protobuf_c_enum_descriptor_get_value_by_name(ed, json_string_value(v));
		else if (json_is_integer(v) && json_integer_value(v) >= INT32_MIN &&
		    json_integer_value(v) <= INT32_MAX) {
			*(int32_t *)p = (int32_t)json_integer_value(v);
			break;
		}
		if (ev == NULL) {
			buf_printf(err, "field %s: no such value of %s", f->name, ed->name);
			return -EINVAL;
		}
		*(int32_t *)p = ev->value;
		break;
	}
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(v))
			rc = -EINVAL;
		else if ((*(char **)p = strdup(json_string_value(v))) == NULL)
			return -ENOMEM;
		break;
	case PROTOBUF_C_TYPE_BYTES:
		if (!json_is_string(v))
			rc = -EINVAL;
		else
			rc = bytes_from_json(json_string_value(v), p);
		break;
	case PROTOBUF_C_TYPE_MESSAGE: {
		ProtobufCMessage *sub;

		if (depth >= JSON_MAX_DEPTH) {
			buf_printf(err, "field %s: messages nested more than %d deep", f->name,
			    JSON_MAX_DEPTH);
			return -EINVAL;
		}
		if (!json_is_object(v)) {
			rc = -EINVAL;
			break;
		}
		if ((sub = connect_from_json_depth(f->descriptor, v, depth + 1, err)) == NULL)
			return -EINVAL;
		*(ProtobufCMessage **)p = sub;
		break;
	}
	}
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0 && err->len == 0)
		buf_printf(err, "field %s: value of the wrong type or out of range", f->name);
	return rc < 0 ? -EINVAL : 0;
}

/* --- JSON to messages ------------------------------------------------------ */

static ProtobufCMessage *
connect_from_json_depth(const ProtobufCMessageDescriptor *d, const json_t *j, int depth,
    struct buf *err)
{
	ProtobufCMessage *m;
	const char *key;
	json_t *v;

	if (!json_is_object(j)) {
		buf_printf(err, "%s: expected a JSON object", d->name);
		return NULL;
	}
	if ((m = calloc(1, d->sizeof_message)) == NULL) {
		buf_adds(err, "out of memory");
		return NULL;
	}
	protobuf_c_message_init(d, m);
	json_object_foreach((json_t *)j, key, v) {
		const ProtobufCFieldDescriptor *f = field_by_json(d, key);
		char *member;

		if (f == NULL || json_is_null(v))
			continue;	/* unknown fields are ignored, as Connect servers do */
		member = (char *)m + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t *n = (size_t *)((char *)m + f->quantifier_offset), i, es;
			char *arr;

			if (!json_is_array(v)) {
				buf_printf(err, "field %s: expected an array", f->name);
				goto bad;
			}
			if (json_array_size(v) == 0)
				continue;
			es = elem_size(f->type);
			if ((arr = calloc(json_array_size(v), es)) == NULL) {
				buf_adds(err, "out of memory");
				goto bad;
			}
			*(void **)member = arr;
			for (i = 0; i < json_array_size(v); i++) {
				if (value_from_json(f, json_array_get(v, i), arr + i * es, depth,
				    err) < 0)
					goto bad;
				(*n)++;
			}
			continue;
		}
		if (f->type == PROTOBUF_C_TYPE_STRING &&
		    *(char **)member != (const char *)f->default_value &&
		    *(char **)member != protobuf_c_empty_string)
			free(*(char **)member);	/* a key given twice */
		if (f->type == PROTOBUF_C_TYPE_STRING)
			*(char **)member = NULL;
		if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage **)member) {
			protobuf_c_message_free_unpacked(*(ProtobufCMessage **)member, NULL);
			*(ProtobufCMessage **)member = NULL;
		}
		if (value_from_json(f, v, member, depth, err) < 0) {
			if (f->type == PROTOBUF_C_TYPE_STRING && *(char **)member == NULL)
				*(char **)member = (char *)protobuf_c_empty_string;
			goto bad;
		}
		if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
			*(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
	}
	return m;
bad:
	protobuf_c_message_free_unpacked(m, NULL);
	return NULL;
}

ProtobufCMessage *
connect_from_json(const ProtobufCMessageDescriptor *d, const json_t *j, struct buf *err)
{
	return connect_from_json_depth(d, j, 0, err);
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

int
connect_decode(struct http_req *r, const ProtobufCMessageDescriptor *d, ProtobufCMessage **out)
{
	const char *ct = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *ce = http_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
	struct buf plain = { 0 }, err = { 0 };
	const void *body = r->body.data;
	size_t len = r->body.len;
	json_error_t jerr;
	json_t *doc;
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
		if ((rc = profile_gunzip(body, len, &plain, &err)) < 0 ||
		    plain.len > CONNECT_MAX_DECODED) {
			buf_free(&plain);
			if (rc == -ENOMEM || rc == -EAGAIN) {
				/* The memory budget refused: not the client's fault. */
				http_add_header(r, "Retry-After", "1");
				http_reply_error(r, 503, "no memory to gunzip the body (the memory "
				    "budget of %zu MiB is in use); try again", budget_limit() >> 20);
			} else if (rc == -EFBIG || rc == 0)
				http_reply_error(r, 413, "bad gzip body: %s", http_why(&err,
				    "over the limit once gunzipped"));
			else
				http_reply_error(r, 400, "bad gzip body: %s", http_why(&err,
				    "not gzip data"));
			buf_free(&err);
			return rc == -ENOMEM || rc == -EAGAIN ? rc : -EINVAL;
		}
		body = plain.data;
		len = plain.len;
	}
	if (connect_is_json(r)) {
		doc = json_loadb(len ? body : "{}", len ? len : 2, 0, &jerr);
		if (doc == NULL) {
			http_reply_error(r, 400, "malformed JSON body: %s (line %d)", jerr.text,
			    jerr.line);
			rc = -EINVAL;
		} else if ((*out = connect_from_json(d, doc, &err)) == NULL) {
			http_reply_error(r, 400, "bad %s: %s", d->name,
			    http_why(&err, "not its JSON form"));
			rc = -EINVAL;
		}
		json_decref(doc);
	} else if ((*out = protobuf_c_message_unpack(d, NULL, len, body)) == NULL) {
		http_reply_error(r, 400, "malformed %s in the protobuf body", d->name);
		rc = -EINVAL;
	}
	buf_free(&plain);
	buf_free(&err);
	return rc;
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
