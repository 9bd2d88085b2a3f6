/*
 * json: a recursive-descent JSON reader (RFC 8259) producing a tree of
 * struct json. Recursion is bounded by JSON_MAX_DEPTH and strings by
 * JSON_MAX_STRING; every error names the line it was found on. Duplicate
 * object keys are refused (a config file with two "interval"s is a mistake).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct parser {
	const char	*p, *end;
	int		 line;
	struct buf	*err;
};

static int
perr(struct parser *ps, const char *what)
{
	if (ps->err) {
		buf_reset(ps->err);
		buf_printf(ps->err, "line %d: %s", ps->line, what);
	}
	return -EINVAL;
}

static void
skip_ws(struct parser *ps)
{
	while (ps->p < ps->end) {
		char c = *ps->p;

		if (c == '\n')
			ps->line++;
		else if (c != ' ' && c != '\t' && c != '\r')
			break;
		ps->p++;
	}
}

static int
hex4(struct parser *ps, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (ps->end - ps->p < 4)
		return perr(ps, "truncated \\u escape");
	for (i = 0; i < 4; i++) {
		char c = *ps->p++;

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return perr(ps, "bad \\u escape");
	}
	*out = v;
	return 0;
}

static int
put_utf8(struct buf *b, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_add(b, u, n);
}

/* A string starting at the opening quote; the unescaped text goes to b. */
static int
parse_string(struct parser *ps, struct buf *b)
{
	unsigned cp, lo;
	int rc;

	ps->p++;	/* '"' */
	for (;;) {
		char c;

		if (ps->p >= ps->end)
			return perr(ps, "unterminated string");
		if (b->len > JSON_MAX_STRING)
			return perr(ps, "string too long");
		c = *ps->p++;
		if (c == '"')
			break;
		if ((unsigned char)c < 0x20)
			return perr(ps, c == '\n' ? "unterminated string (newline inside)" :
			    "control character in string");
		if (c != '\\') {
			if ((rc = buf_addc(b, c)) < 0)
				return rc;
			continue;
		}
		if (ps->p >= ps->end)
			return perr(ps, "unterminated string");
		c = *ps->p++;
		switch (c) {
		case '"': case '\\': case '/':
			rc = buf_addc(b, c);
			break;
		case 'b': rc = buf_addc(b, '\b'); break;
		case 'f': rc = buf_addc(b, '\f'); break;
		case 'n': rc = buf_addc(b, '\n'); break;
		case 'r': rc = buf_addc(b, '\r'); break;
		case 't': rc = buf_addc(b, '\t'); break;
		case 'u':
			if ((rc = hex4(ps, &cp)) < 0)
				return rc;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
					return perr(ps, "unpaired surrogate in \\u escape");
				ps->p += 2;
				if ((rc = hex4(ps, &lo)) < 0)
					return rc;
				if (lo < 0xdc00 || lo > 0xdfff)
					return perr(ps, "unpaired surrogate in \\u escape");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				return perr(ps, "unpaired surrogate in \\u escape");
			}
			if (cp == 0)
				return perr(ps, "\\u0000 is not allowed");
			rc = put_utf8(b, cp);
			break;
		default:
			return perr(ps, "bad escape in string");
		}
		if (rc < 0)
			return rc;
	}
	return buf_reserve(b, 0);
}

static int parse_value(struct parser *ps, int depth, struct json **out);

static int
parse_number(struct parser *ps, struct json *j)
{
	const char *s = ps->p;
	char tmp[64];
	size_t n;
	char *end;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return perr(ps, "bad number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return perr(ps, "bad number");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			return perr(ps, "bad number");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	n = (size_t)(ps->p - s);
	if (n >= sizeof(tmp))
		return perr(ps, "number too long");
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	j->type = JSON_NUMBER;
	j->num = strtod(tmp, &end);
	return 0;
}

static int
literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return perr(ps, "unexpected character (not a JSON value)");
	ps->p += n;
	return 0;
}

static int
parse_container(struct parser *ps, int depth, struct json *j)
{
	bool obj = *ps->p == '{';
	char close = obj ? '}' : ']';
	struct json **tail = &j->child, *e;
	struct buf key = { 0 };
	int rc = 0;

	j->type = obj ? JSON_OBJECT : JSON_ARRAY;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		if (obj) {
			const struct json *dup;

			if (ps->p >= ps->end || *ps->p != '"') {
				rc = perr(ps, ps->p >= ps->end ? "unexpected end of file in object" :
				    "expected a quoted member name");
				goto out;
			}
			buf_reset(&key);
			if ((rc = parse_string(ps, &key)) < 0)
				goto out;
			if ((dup = json_get(j, key.data)) != NULL) {
				if (ps->err) {
					buf_reset(ps->err);
					buf_printf(ps->err, "line %d: duplicate key \"%s\"",
					    ps->line, key.data);
				}
				rc = -EINVAL;
				goto out;
			}
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				rc = perr(ps, "expected ':' after member name");
				goto out;
			}
			ps->p++;
		}
		if ((rc = parse_value(ps, depth + 1, &e)) < 0)
			goto out;
		if (obj)
			e->key = buf_steal(&key, NULL);
		*tail = e;
		tail = &e->next;
		skip_ws(ps);
		if (ps->p >= ps->end) {
			rc = perr(ps, obj ? "unexpected end of file: missing '}'" :
			    "unexpected end of file: missing ']'");
			goto out;
		}
		if (*ps->p == ',') {
			ps->p++;
			skip_ws(ps);
			if (ps->p < ps->end && *ps->p == close) {
				rc = perr(ps, "trailing comma");
				goto out;
			}
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			break;
		}
		rc = perr(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
		goto out;
	}
out:
	buf_free(&key);
	return rc;
}

static int
parse_value(struct parser *ps, int depth, struct json **out)
{
	struct json *j;
	struct buf s = { 0 };
	int rc = 0;

	*out = NULL;
	skip_ws(ps);
	if (depth > JSON_MAX_DEPTH)
		return perr(ps, "nested too deeply");
	if (ps->p >= ps->end)
		return perr(ps, "unexpected end of file, expected a value");
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return -ENOMEM;
	j->line = ps->line;
	switch (*ps->p) {
	case '{':
	case '[':
		rc = parse_container(ps, depth, j);
		break;
	case '"':
		j->type = JSON_STRING;
		if ((rc = parse_string(ps, &s)) == 0)
			j->str = buf_steal(&s, &j->len);
		break;
	case 't':
		j->type = JSON_BOOL;
		j->b = true;
		rc = literal(ps, "true");
		break;
	case 'f':
		j->type = JSON_BOOL;
		rc = literal(ps, "false");
		break;
	case 'n':
		rc = literal(ps, "null");
		break;
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			rc = parse_number(ps, j);
		else
			rc = perr(ps, "unexpected character (not a JSON value)");
		break;
	}
	buf_free(&s);
	if (rc < 0) {
		json_free(j);
		return rc;
	}
	*out = j;
	return 0;
}

int
json_parse(const char *text, size_t len, struct json **out, struct buf *err)
{
	struct parser ps = { .p = text, .end = text + len, .line = 1, .err = err };
	struct json *j;
	int rc;

	*out = NULL;
	/* A UTF-8 byte order mark is tolerated. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		ps.p += 3;
	if ((rc = parse_value(&ps, 0, &j)) < 0)
		return rc;
	skip_ws(&ps);
	if (ps.p < ps.end) {
		json_free(j);
		return perr(&ps, "unexpected text after the JSON value");
	}
	*out = j;
	return 0;
}

void
json_free(struct json *j)
{
	struct json *next;

	while (j) {
		next = j->next;
		json_free(j->child);
		free(j->key);
		free(j->str);
		free(j);
		j = next;
	}
}

const struct json *
json_get(const struct json *obj, const char *key)
{
	const struct json *e;

	if (obj == NULL || obj->type != JSON_OBJECT)
		return NULL;
	for (e = obj->child; e; e = e->next)
		if (e->key && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

const char *
json_type_name(enum json_type t)
{
	switch (t) {
	case JSON_NULL:		return "null";
	case JSON_BOOL:		return "boolean";
	case JSON_NUMBER:	return "number";
	case JSON_STRING:	return "string";
	case JSON_ARRAY:	return "array";
	case JSON_OBJECT:	return "object";
	}
	return "value";
}
