/*
 * pbjson: proto3's JSON mapping read as protobuf, under limits and the
 * memory budget (see pbjson.h); the messages unpacked from outside input,
 * charged to the budget. What a field's JSON form is comes from protobuf-c's
 * descriptors alone, so OTLP's and the Grafana API's messages share it; the
 * one difference, OTLP's hex ids, is a flag.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbjson.h"

/* --- the scan: limits checked before anything is allocated ----------------- */

int
pbjson_scan(const void *text, size_t len, const struct pbjson_limits *lim,
    struct pbjson_count *c, struct buf *err)
{
	const char *s = text;
	size_t i = 0, start;
	unsigned depth = 0;

	memset(c, 0, sizeof(*c));
	while (i < len) {
		switch (s[i]) {
		case '[': case '{':
			if (++depth > lim->max_depth) {
				buf_printf(err, "JSON nested deeper than %u levels", lim->max_depth);
				return -EFBIG;
			}
			if (s[i] == '[')
				c->arrays++;
			else
				c->objects++;
			i++;
			break;
		case ']': case '}':
			if (depth)
				depth--;
			i++;
			break;
		case ' ': case '\t': case '\n': case '\r': case ',': case ':':
			i++;
			break;
		case '"':
			/* As written: escapes only shrink, but for \u of 3-byte characters. */
			start = ++i;
			while (i < len && s[i] != '"')
				i += s[i] == '\\' ? 2 : 1;
			c->string_bytes += (i < len ? i : len) - start;
			i++;
			c->strings++;
			if (c->string_bytes > lim->max_strings) {
				buf_printf(err, "JSON strings hold more than %zu bytes",
				    lim->max_strings);
				return -EFBIG;
			}
			break;
		default:
			/* A number or a literal, or junk json_loadb() refuses. */
			while (i < len && s[i] != '\0' && !strchr(" \t\n\r,:[]{}\"", s[i]))
				i++;
			if (i < len && s[i] == '\0')
				i++;
			c->scalars++;
			break;
		}
		if (c->scalars + c->strings + c->arrays + c->objects > lim->max_elements) {
			buf_printf(err, "JSON has more than %zu elements", lim->max_elements);
			return -EFBIG;
		}
	}
	return 0;
}

/* Per kind, from jansson 2.14's structures on glibc (test_pbjson.c measures them). */
#define COST_SCALAR	64
#define COST_STRING	112
#define COST_ARRAY	192
#define COST_OBJECT	320

size_t
pbjson_cost(const struct pbjson_count *c)
{
	return c->scalars * COST_SCALAR + c->strings * COST_STRING + c->arrays * COST_ARRAY +
	    c->objects * COST_OBJECT + 4 * c->string_bytes + 4096;
}

/* --- JSON values to protobuf ---------------------------------------------- */

struct enc {
	unsigned	 flags;
	struct buf	*out;
	struct buf	*err;
};

static int	enc_message(struct enc *e, const ProtobufCMessageDescriptor *d, const json_t *obj);

static int
efail(struct enc *e, const ProtobufCFieldDescriptor *f, const char *what)
{
	buf_printf(e->err, "JSON field \"%s\": %s", f->name, what);
	return -EINVAL;
}

/* Whether key is field name in proto3 JSON's lowerCamelCase, or the name itself. */
static bool
name_is(const char *name, const char *key)
{
	if (strcmp(name, key) == 0)
		return true;
	for (; *name; name++, key++) {
		if (*name == '_' && name[1]) {
			name++;
			if (*key != (name[0] >= 'a' && name[0] <= 'z' ? name[0] - 32 : name[0]))
				return false;
		} else if (*key != *name)
			return false;
	}
	return *key == '\0';
}

/* An integer from a JSON number or decimal string (proto3 JSON writes 64-bit ones as strings). */
static int
json_int(const json_t *v, bool is_unsigned, uint64_t *out)
{
	const char *s;
	char *end;

	if (json_is_integer(v)) {
		*out = (uint64_t)json_integer_value(v);
		return is_unsigned && json_integer_value(v) < 0 ? -EINVAL : 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		/* Range first: converting a double out of int64's range is undefined. */
		if (!(d >= -9.2e18 && d <= 9.2e18) || d != (double)(int64_t)d ||
		    (is_unsigned && d < 0))
			return -EINVAL;
		*out = (uint64_t)(int64_t)d;
		return 0;
	}
	if (!json_is_string(v) || (s = json_string_value(v))[0] == '\0')
		return -EINVAL;
	errno = 0;
	if (is_unsigned) {
		if (s[0] == '-')
			return -EINVAL;
		*out = strtoull(s, &end, 10);
	} else
		*out = (uint64_t)strtoll(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* A floating point value: a number, or a string of one, "NaN", "Infinity", "-Infinity". */
static int
json_double(const json_t *v, double *out)
{
	const char *s;
	char *end;

	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (!json_is_string(v) || (s = json_string_value(v))[0] == '\0')
		return -EINVAL;
	if (strcmp(s, "NaN") == 0)
		*out = NAN;
	else if (strcmp(s, "Infinity") == 0)
		*out = INFINITY;
	else if (strcmp(s, "-Infinity") == 0)
		*out = -INFINITY;
	else {
		*out = strtod(s, &end);
		if (*end)
			return -EINVAL;
	}
	return 0;
}

static bool
is_hex_id(const struct enc *e, const ProtobufCFieldDescriptor *f)
{
	return (e->flags & PBJSON_HEX_IDS) && (strcmp(f->name, "trace_id") == 0 ||
	    strcmp(f->name, "span_id") == 0 || strcmp(f->name, "profile_id") == 0);
}

/* Bytes from hex digits (OTLP's ids). */
static int
add_hex(struct buf *out, const char *s, size_t n)
{
	size_t i;

	if (n % 2)
		return -EINVAL;
	for (i = 0; i < n; i += 2) {
		int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		if (buf_addc(out, hi << 4 | lo) < 0)
			return buf_error(out);
	}
	return 0;
}

static int
add_fixed(struct buf *out, uint64_t v, unsigned n)
{
	unsigned char b[8];
	unsigned i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	return buf_add(out, b, n);
}

/*
 * Insert, at start, the length of what follows it in out as a varint: a
 * length-delimited field's content is written in place and its length put
 * before it, so nesting costs no copy of the content per level.
 */
static int
put_length(struct buf *out, size_t start)
{
	unsigned char v[VARINT_MAX];
	size_t n = out->len - start, k = varint_put(v, n);
	int rc;

	if ((rc = buf_add(out, v, k)) < 0)
		return rc;
	memmove(out->data + start + k, out->data + start, n);
	memcpy(out->data + start, v, k);
	return 0;
}

/* Append field f's value v (one element of a repeated field) as protobuf. */
static int
enc_field(struct enc *e, const ProtobufCFieldDescriptor *f, const json_t *v)
{
	struct buf *out = e->out;
	uint64_t u = 0, tag = (uint64_t)f->id << 3;
	size_t start;
	double d;
	int rc;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: {
		bool uns = f->type == PROTOBUF_C_TYPE_UINT32 || f->type == PROTOBUF_C_TYPE_FIXED32 ||
		    f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_FIXED64;
		bool is32 = f->type == PROTOBUF_C_TYPE_INT32 || f->type == PROTOBUF_C_TYPE_SINT32 ||
		    f->type == PROTOBUF_C_TYPE_SFIXED32 || f->type == PROTOBUF_C_TYPE_UINT32 ||
		    f->type == PROTOBUF_C_TYPE_FIXED32;
		int64_t sv;

		if (json_int(v, uns, &u) < 0)
			return efail(e, f, "not an integer (a number or a decimal string)");
		sv = (int64_t)u;
		if (is32 && (uns ? u > UINT32_MAX : sv != (int32_t)sv))
			return efail(e, f, "out of the range of a 32-bit integer");
		switch (f->type) {
		case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SINT64:
			u = ((uint64_t)sv << 1) ^ (uint64_t)(sv >> 63);	/* zigzag */
			break;
		case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FIXED32:
			if ((rc = buf_add_varint(out, tag | 5)) < 0)
				return rc;
			return add_fixed(out, u, 4);
		case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_FIXED64:
			if ((rc = buf_add_varint(out, tag | 1)) < 0)
				return rc;
			return add_fixed(out, u, 8);
		default:
			break;
		}
		if ((rc = buf_add_varint(out, tag)) < 0)
			return rc;
		return buf_add_varint(out, u);
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return efail(e, f, "not a boolean");
		if ((rc = buf_add_varint(out, tag)) < 0)
			return rc;
		return buf_add_varint(out, json_is_true(v));
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *ed = f->descriptor;
		const ProtobufCEnumValue *ev;
		int32_t x;

		if (json_is_string(v)) {
			ev = protobuf_c_enum_descriptor_get_value_by_name(ed, json_string_value(v));
			if (ev == NULL) {
				buf_printf(e->err, "JSON field \"%s\": no value %s in %s", f->name,
				    json_string_value(v), ed->name);
				return -EINVAL;
			}
			x = ev->value;
		} else if (json_is_integer(v) && json_integer_value(v) >= INT32_MIN &&
		    json_integer_value(v) <= INT32_MAX)
			x = (int32_t)json_integer_value(v);
		else
			return efail(e, f, "not a value's name or a 32-bit integer");
		if ((rc = buf_add_varint(out, tag)) < 0)
			return rc;
		return buf_add_varint(out, (uint64_t)(int64_t)x);
	}
	case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_DOUBLE:
		if (json_double(v, &d) < 0)
			return efail(e, f, "not a number");
		if (f->type == PROTOBUF_C_TYPE_FLOAT) {
			float fl = (float)d;
			uint32_t w;

			memcpy(&w, &fl, 4);
			if ((rc = buf_add_varint(out, tag | 5)) < 0)
				return rc;
			return add_fixed(out, w, 4);
		}
		memcpy(&u, &d, 8);
		if ((rc = buf_add_varint(out, tag | 1)) < 0)
			return rc;
		return add_fixed(out, u, 8);
	case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE:
		if (f->type == PROTOBUF_C_TYPE_MESSAGE ? !json_is_object(v) : !json_is_string(v))
			return efail(e, f, f->type == PROTOBUF_C_TYPE_MESSAGE ? "not an object" :
			    "not a string");
		if ((rc = buf_add_varint(out, tag | 2)) < 0)
			return rc;
		start = out->len;
		if (f->type == PROTOBUF_C_TYPE_MESSAGE)
			rc = enc_message(e, f->descriptor, v);
		else if (f->type == PROTOBUF_C_TYPE_STRING)
			rc = buf_add(out, json_string_value(v), json_string_length(v));
		else if (is_hex_id(e, f)) {
			if ((rc = add_hex(out, json_string_value(v), json_string_length(v))) ==
			    -EINVAL)
				return efail(e, f, "not hex digits");
		} else if ((rc = buf_add_base64_decoded(out, json_string_value(v),
		    json_string_length(v))) == -EINVAL)
			return efail(e, f, "not base64");
		if (rc < 0)
			return rc;
		return put_length(out, start);
	}
	return efail(e, f, "of a type this reader does not know");
}

/* Encode JSON object obj as message d in protobuf. Unknown keys are skipped, as proto3 JSON readers do. */
static int
enc_message(struct enc *e, const ProtobufCMessageDescriptor *d, const json_t *obj)
{
	const char *key;
	json_t *v;
	unsigned i;
	int rc;

	json_object_foreach((json_t *)obj, key, v) {
		const ProtobufCFieldDescriptor *f = NULL;
		size_t k;
		json_t *el;

		for (i = 0; i < d->n_fields && f == NULL; i++)
			if (name_is(d->fields[i].name, key))
				f = &d->fields[i];
		if (f == NULL || json_is_null(v))
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			if (!json_is_array(v))
				return efail(e, f, "not an array");
			json_array_foreach(v, k, el)
				if ((rc = enc_field(e, f, el)) < 0)
					return rc;
		} else if ((rc = enc_field(e, f, v)) < 0)
			return rc;
	}
	return 0;
}

int
pbjson_encode(const ProtobufCMessageDescriptor *d, const void *text, size_t len,
    const struct pbjson_limits *lim, unsigned flags, struct buf *out, struct buf *err)
{
	struct enc e = { .flags = flags, .out = out, .err = err };
	struct pbjson_count cnt;
	size_t cost;
	json_error_t jerr;
	json_t *doc;
	int rc;

	if (len > lim->max_text) {
		buf_printf(err, "a JSON body of %zu bytes: at most %zu", len, lim->max_text);
		return -EFBIG;
	}
	if ((rc = pbjson_scan(text, len, lim, &cnt, err)) < 0)
		return rc;
	/* What jansson's tree may take, held in the budget while it lives. */
	cost = pbjson_cost(&cnt);
	if (budget_reserve(cost) < 0) {
		buf_printf(err, "no room in the memory budget (%zu MiB) for a JSON document of "
		    "%zu elements (%zu MiB as a tree); try again", budget_limit() >> 20,
		    cnt.scalars + cnt.strings + cnt.arrays + cnt.objects, cost >> 20);
		return -ENOMEM;
	}
	/* JSON_ALLOW_NUL off: a string's "\u0000" would cut it short in protobuf-c. */
	if ((doc = json_loadb(text, len, 0, &jerr)) == NULL) {
		if (json_error_code(&jerr) == json_error_out_of_memory) {
			buf_adds(err, "out of memory parsing JSON");
			rc = -ENOMEM;
		} else {
			buf_printf(err, "not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
			    jerr.column);
			rc = -EINVAL;
		}
		goto out;
	}
	if (!json_is_object(doc)) {
		buf_printf(err, "the JSON is not an object (a %s)", d->short_name);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = enc_message(&e, d, doc)) < 0 && err->len == 0)
		buf_adds(err, rc == -ENOMEM ? "out of memory for the protobuf form of the JSON" :
		    "the protobuf form of the JSON is too large");
out:
	json_decref(doc);
	budget_release(cost);
	return rc;
}

/* --- budgeted messages ------------------------------------------------------ */

/*
 * Each allocation is preceded by its size, so that freeing gives its bytes
 * back to the budget without the unpacker's context: 16 bytes keep malloc's
 * alignment.
 */
#define HDR	16

struct unpack_ctx {
	size_t	 used, max;
	bool	 over, refused;
};

static void *
msg_alloc(void *data, size_t size)
{
	struct unpack_ctx *c = data;
	size_t *p;

	if (c) {
		if (size > c->max || c->used > c->max - size) {
			c->over = true;
			return NULL;
		}
		c->used += size;
	}
	if (size > SIZE_MAX - HDR || budget_reserve(size + HDR) < 0) {
		if (c)
			c->refused = true;
		return NULL;
	}
	if ((p = malloc(size + HDR)) == NULL) {
		budget_release(size + HDR);
		return NULL;
	}
	*p = size;
	return (char *)p + HDR;
}

static void
msg_free(void *data, void *ptr)
{
	char *p = ptr;

	(void)data;
	if (p == NULL)
		return;
	p -= HDR;
	budget_release(*(size_t *)(void *)p + HDR);
	free(p);
}

static ProtobufCAllocator msg_allocator = { msg_alloc, msg_free, NULL };

int
pbjson_unpack(const ProtobufCMessageDescriptor *d, const void *data, size_t len,
    size_t max_bytes, ProtobufCMessage **out, struct buf *err)
{
	struct unpack_ctx c = { .max = max_bytes };
	ProtobufCAllocator a = { msg_alloc, msg_free, &c };

	*out = protobuf_c_message_unpack(d, &a, len, data);
	if (*out)
		return 0;
	if (c.over) {
		buf_printf(err, "the message decodes to more than %zu MiB", max_bytes >> 20);
		return -EFBIG;
	}
	if (c.refused) {
		buf_printf(err, "no room in the memory budget (%zu MiB) for the message; try "
		    "again", budget_limit() >> 20);
		return -ENOMEM;
	}
	buf_printf(err, "not a %s in protobuf (truncated, or fields of another type)", d->name);
	return -EINVAL;
}

void
pbjson_free(ProtobufCMessage *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, &msg_allocator);
}
