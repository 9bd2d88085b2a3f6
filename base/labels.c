/*
 * labels: parsing, escaping and matching of label sets. Pure functions, no
 * storage; the store and the path grammar both use them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static bool
needs_escape(unsigned char c)
{
	return c <= 0x20 || c >= 0x7f || c == '%' || c == '/' || c == ',' || c == '=';
}

int
labels_escape(struct buf *out, const char *s, size_t n)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		unsigned char c = (unsigned char)s[i];

		if (needs_escape(c)) {
			char e[3] = { '%', hex_digit(c >> 4, true), hex_digit(c, true) };
			rc = buf_add(out, e, 3);
		} else
			rc = buf_addc(out, c);
	}
	return rc;
}

int
labels_unescape(struct buf *out, const char *s, size_t n)
{
	return buf_add_pct_decoded(out, s, n, 0);
}

static int
pair_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->value, y->value);
}

void
labels_clear(struct labelset *ls)
{
	size_t i;

	for (i = 0; i < ls->n; i++) {
		free(ls->pairs[i].key);
		free(ls->pairs[i].value);
	}
	ls->n = 0;
}

int
labels_add(struct labelset *ls, const char *key, const char *value, struct buf *err)
{
	size_t i;

	if (key[0] == '\0') {
		if (err)
			buf_adds(err, "label with an empty key");
		return -EINVAL;
	}
	if (strlen(key) > LABEL_MAX_LEN || strlen(value) > LABEL_MAX_LEN) {
		if (err)
			buf_printf(err, "label key or value longer than %d bytes", LABEL_MAX_LEN);
		return -EINVAL;
	}
	for (i = 0; i < ls->n; i++) {
		if (strcmp(ls->pairs[i].key, key) == 0) {
			if (err)
				buf_printf(err, "label key \"%s\" given twice", key);
			return -EINVAL;
		}
	}
	if (ls->n == LABELS_MAX) {
		if (err)
			buf_printf(err, "more than %d labels", LABELS_MAX);
		return -EINVAL;
	}
	ls->pairs[ls->n].key = strdup(key);
	ls->pairs[ls->n].value = strdup(value);
	if (!ls->pairs[ls->n].key || !ls->pairs[ls->n].value) {
		free(ls->pairs[ls->n].key);
		free(ls->pairs[ls->n].value);
		return -ENOMEM;
	}
	ls->n++;
	qsort(ls->pairs, ls->n, sizeof(ls->pairs[0]), pair_cmp);
	return 0;
}

int
labels_parse(const char *s, struct labelset *ls, struct buf *err)
{
	struct buf k = { 0 }, v = { 0 };
	const char *p = s, *end, *eq;
	int rc = 0;

	ls->n = 0;
	while (*p && rc == 0) {
		end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq == NULL) {
			if (err)
				buf_printf(err, "label \"%.*s\" has no '=' (write key=value)",
				    (int)(end - p), p);
			rc = -EINVAL;
			break;
		}
		buf_reset(&k);
		buf_reset(&v);
		if (labels_unescape(&k, p, (size_t)(eq - p)) < 0 ||
		    labels_unescape(&v, eq + 1, (size_t)(end - eq - 1)) < 0) {
			if (err)
				buf_printf(err, "bad %%XX escape in label \"%.*s\"",
				    (int)(end - p), p);
			rc = -EINVAL;
			break;
		}
		rc = labels_add(ls, k.data ? k.data : "", v.data ? v.data : "", err);
		p = *end ? end + 1 : end;
	}
	buf_free(&k);
	buf_free(&v);
	if (rc < 0)
		labels_clear(ls);
	return rc;
}

int
labels_format(const struct labelset *ls, struct buf *out)
{
	size_t i;
	int rc = buf_reserve(out, 0);

	for (i = 0; i < ls->n && rc == 0; i++) {
		if (i)
			rc = buf_addc(out, ',');
		if (rc == 0)
			rc = labels_escape(out, ls->pairs[i].key, strlen(ls->pairs[i].key));
		if (rc == 0)
			rc = buf_addc(out, '=');
		if (rc == 0)
			rc = labels_escape(out, ls->pairs[i].value, strlen(ls->pairs[i].value));
	}
	return rc;
}

bool
labels_match(const struct labelset *sel, const struct labelset *set)
{
	size_t i, j;

	for (i = 0; i < sel->n; i++) {
		for (j = 0; j < set->n; j++)
			if (strcmp(sel->pairs[i].key, set->pairs[j].key) == 0 &&
			    strcmp(sel->pairs[i].value, set->pairs[j].value) == 0)
				break;
		if (j == set->n)
			return false;
	}
	return true;
}
