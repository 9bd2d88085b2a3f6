/*
 * jsonw: writing JSON with jansson. Every JSON document profilefs produces
 * (the HTTP API's replies, meta.json, .targets.json) is built as a jansson
 * tree and dumped into a struct buf here, so escaping is jansson's. jansson
 * refuses strings that are not UTF-8, and names from outside may be anything,
 * so strings that did not come from the program itself go through
 * jsonw_str(), which repairs them (utf8.c) instead of failing the document.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "base.h"

json_t *
jsonw_strn(const char *s, size_t n)
{
	struct buf fixed = { 0 };
	json_t *v;

	if (s == NULL)
		return json_null();
	if (utf8_valid(s, n))
		return json_stringn_nocheck(s, n);
	if (utf8_repair(&fixed, s, n) < 0) {
		buf_free(&fixed);
		return NULL;
	}
	v = json_stringn_nocheck(fixed.data, fixed.len);
	buf_free(&fixed);
	return v;
}

json_t *
jsonw_str(const char *s)
{
	return jsonw_strn(s, s ? strlen(s) : 0);
}

json_t *
jsonw_fixed(double v, unsigned decimals)
{
	double scale = 1;

	while (decimals--)
		scale *= 10;
	return json_real(round(v * scale) / scale);
}

static int
add_chunk(const char *p, size_t n, void *arg)
{
	return buf_add(arg, p, n) < 0 ? -1 : 0;
}

int
jsonw_dump(struct buf *out, const json_t *v, size_t flags)
{
	size_t len = out->len;

	if (out->err)
		return out->err;
	/* A build that failed is out of memory: the buffer remembers it like its own. */
	if (v == NULL)
		return out->err = -ENOMEM;
	/* 15 significant digits: what jsonw_fixed() rounded prints without noise. */
	if ((flags & JSON_REAL_PRECISION(31)) == 0)
		flags |= JSON_REAL_PRECISION(15);
	if (json_dump_callback(v, add_chunk, out, flags | JSON_ENCODE_ANY) < 0) {
		/* No half document: what was appended goes, the error stays. */
		out->len = len;
		if (out->data)
			out->data[len] = '\0';
		return out->err ? out->err : (out->err = -ENOMEM);
	}
	return 0;
}
