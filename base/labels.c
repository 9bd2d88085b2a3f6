/*
 * labels: parsing, escaping and matching of label sets. Pure functions, no
 * storage; the store and the path grammar both use them.
 */
#include <errno.h>
#include <math.h>
#include <regex.h>
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

/* --- matchers ----------------------------------------------------------- */

const char *
matcher_op_str(enum matcher_op op)
{
	switch (op) {
	case MATCH_EQ:	return "=";
	case MATCH_NE:	return "!=";
	case MATCH_RE:	return "=~";
	case MATCH_NRE:	return "!~";
	}
	return "?";
}

void
matchers_clear(struct matchers *ms)
{
	size_t i;

	for (i = 0; i < ms->n; i++) {
		free(ms->m[i].key);
		free(ms->m[i].value);
		if (ms->m[i].re) {
			regfree(ms->m[i].re);
			free(ms->m[i].re);
		}
	}
	ms->n = 0;
}

/*
 * Nodes regcomp() builds for re, about: it copies the atom under '+' and
 * {n,m} (n or m times), so nested repetitions multiply. Counting them bounds
 * the memory and time of a selector's regex before regcomp() sees it.
 */
#define RE_MAX_NODES	20000
#define RE_MAX_DEPTH	32

static double
re_cost(const char *re)
{
	double stack[RE_MAX_DEPTH], cur = 0, atom = 0;
	size_t depth = 0;
	const char *p = re;
	bool rep = false;	/* the last token was a repetition */

	while (*p) {
		char c = *p++;

		/* A repetition of a repetition ("a**", "a+*"): RE2 refuses it, regcomp() chokes. */
		if ((c == '*' || c == '+' || c == '?' ||
		    (c == '{' && *p >= '0' && *p <= '9')) && rep)
			return INFINITY;
		rep = c == '*' || c == '+' || c == '?';

		if (c == '(') {
			if (depth == RE_MAX_DEPTH)
				return INFINITY;
			stack[depth++] = cur;
			cur = 0;
			atom = 0;
			continue;
		}
		if (c == ')' && depth > 0) {
			atom = cur + 1;
			cur = stack[--depth] + atom;
			continue;
		}
		if (c == '+') {
			cur += atom;
			atom *= 2;
			continue;
		}
		if (c == '{') {
			unsigned long n = 0, m = 0;
			char *end;

			n = strtoul(p, &end, 10);
			m = n;
			if (*end == ',') {
				m = strtoul(end + 1, &end, 10);
				if (m < n)
					m = n + 1;
			}
			if (*end == '}') {
				p = end + 1;
				rep = true;
				if (m > 1) {
					cur += atom * (double)(m - 1);
					atom *= (double)m;
				}
				continue;
			}
		}
		if (c == '[') {
			/* A bracket expression is one node: skip to its ']'. */
			if (*p == '^')
				p++;
			if (*p == ']')
				p++;
			while (*p && *p != ']') {
				if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
					const char *close = strchr(p + 2, p[1]);

					p = close && close[1] == ']' ? close + 2 : p + 1;
				} else
					p++;
			}
			if (*p)
				p++;
		} else if (c == '\\' && *p)
			p++;
		if (c != '*' && c != '?' && c != '|') {
			atom = 1;
			cur += 1;
		}
		if (cur > RE_MAX_NODES)
			return cur;
	}
	while (depth > 0)
		cur += stack[--depth];
	return cur;
}

int
matchers_add(struct matchers *ms, const char *key, enum matcher_op op, const char *value,
    struct buf *err)
{
	struct matcher *m;
	struct buf anchored = { 0 };
	size_t vmax = op == MATCH_RE || op == MATCH_NRE ? MATCHER_RE_MAX : LABEL_MAX_LEN;
	int rc;

	if (key[0] == '\0') {
		if (err)
			buf_adds(err, "matcher with an empty label name");
		return -EINVAL;
	}
	if (strlen(key) > LABEL_MAX_LEN || strlen(value) > vmax) {
		if (err)
			buf_printf(err, "matcher on \"%.64s\": name or value longer than %zu bytes",
			    key, strlen(key) > LABEL_MAX_LEN ? (size_t)LABEL_MAX_LEN : vmax);
		return -EINVAL;
	}
	if (ms->n == LABELS_MAX) {
		if (err)
			buf_printf(err, "more than %d matchers", LABELS_MAX);
		return -EINVAL;
	}
	m = &ms->m[ms->n];
	memset(m, 0, sizeof(*m));
	m->op = op;
	if (op == MATCH_RE || op == MATCH_NRE) {
		if (!(re_cost(value) <= RE_MAX_NODES)) {
			if (err)
				buf_printf(err, "regular expression for %.64s too complex (nested "
				    "repetitions expanding past %d nodes, or a repetition of a "
				    "repetition such as a**)", key, RE_MAX_NODES);
			return -EINVAL;
		}
		/* Prometheus matches the whole value. */
		if ((m->re = calloc(1, sizeof(regex_t))) == NULL)
			return -ENOMEM;
		buf_printf(&anchored, "^(%s)$", value);
		if (buf_error(&anchored) < 0) {
			free(m->re);
			m->re = NULL;
			return -ENOMEM;
		}
		if ((rc = regcomp(m->re, anchored.data, REG_EXTENDED | REG_NOSUB)) != 0) {
			char why[128];

			regerror(rc, m->re, why, sizeof(why));
			if (err)
				buf_printf(err, "bad regular expression \"%.64s\" for %.64s: %s",
				    value, key, why);
			free(m->re);
			m->re = NULL;
			buf_free(&anchored);
			return -EINVAL;
		}
		buf_free(&anchored);
	}
	m->key = strdup(key);
	m->value = strdup(value);
	if (m->key == NULL || m->value == NULL) {
		free(m->key);
		free(m->value);
		if (m->re) {
			regfree(m->re);
			free(m->re);
		}
		return -ENOMEM;
	}
	ms->n++;
	return 0;
}

bool
matcher_match(const struct matcher *m, const char *value)
{
	const char *v = value ? value : "";

	switch (m->op) {
	case MATCH_EQ:	return strcmp(v, m->value) == 0;
	case MATCH_NE:	return strcmp(v, m->value) != 0;
	case MATCH_RE:	return regexec(m->re, v, 0, NULL, 0) == 0;
	case MATCH_NRE:	return regexec(m->re, v, 0, NULL, 0) != 0;
	}
	return false;
}

bool
matchers_match(const struct matchers *ms, const char *service, const struct labelset *ls)
{
	size_t i, j;

	for (i = 0; ms && i < ms->n; i++) {
		const char *v = NULL;

		for (j = 0; ls && j < ls->n; j++)
			if (strcmp(ls->pairs[j].key, ms->m[i].key) == 0) {
				v = ls->pairs[j].value;
				break;
			}
		if (v == NULL && strcmp(ms->m[i].key, "service_name") == 0)
			v = service;
		if (!matcher_match(&ms->m[i], v))
			return false;
	}
	return true;
}

bool
matchers_only_eq(const struct matchers *ms)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (ms->m[i].op != MATCH_EQ)
			return false;
	return true;
}

static bool
name_char(int c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    (!first && ((c >= '0' && c <= '9') || c == '.'));
}

/* A quoted string at *pp ('"', '\'' or '`'): unescaped into out, *pp past it. */
static int
prom_string(const char **pp, struct buf *out, struct buf *err)
{
	const char *p = *pp;
	char q = *p++;

	while (*p && *p != q) {
		if (out->len > MATCHER_RE_MAX) {
			if (err)
				buf_printf(err, "value longer than %d bytes", MATCHER_RE_MAX);
			return -EINVAL;
		}
		if (*p == '\\' && q != '`') {
			p++;
			switch (*p) {
			case 'n':  buf_addc(out, '\n'); break;
			case 't':  buf_addc(out, '\t'); break;
			case 'r':  buf_addc(out, '\r'); break;
			case '\\': case '"': case '\'':
				buf_addc(out, *p);
				break;
			default:
				if (err)
					buf_printf(err, "unknown escape \"\\%c\" in a quoted value "
					    "(write \\\\ for a backslash)", *p ? *p : ' ');
				return -EINVAL;
			}
			p++;
			continue;
		}
		buf_addc(out, *p++);
	}
	if (*p != q) {
		if (err)
			buf_adds(err, "unterminated quoted value");
		return -EINVAL;
	}
	*pp = p + 1;
	if (out->data == NULL)
		buf_reserve(out, 0);
	return buf_error(out);
}

static const char *
skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

int
matchers_parse_prom(const char *s, struct matchers *ms, struct buf *err)
{
	struct buf k = { 0 }, v = { 0 };
	const char *p = skip_space(s);
	bool brace = false;
	enum matcher_op op;
	int rc = 0;

	ms->n = 0;
	if (strlen(s) > 16384) {
		if (err)
			buf_adds(err, "selector longer than 16384 bytes");
		return -EINVAL;
	}
	if (*p == '{') {
		brace = true;
		p = skip_space(p + 1);
	}
	while (*p && *p != '}' && rc == 0) {
		buf_reset(&k);
		buf_reset(&v);
		if (!name_char((unsigned char)*p, true)) {
			if (err)
				buf_printf(err, "expected a label name at \"%.32s\"", p);
			rc = -EINVAL;
			break;
		}
		while (name_char((unsigned char)*p, false))
			buf_addc(&k, *p++);
		p = skip_space(p);
		if (p[0] == '=' && p[1] == '~')
			op = MATCH_RE, p += 2;
		else if (p[0] == '!' && p[1] == '~')
			op = MATCH_NRE, p += 2;
		else if (p[0] == '!' && p[1] == '=')
			op = MATCH_NE, p += 2;
		else if (p[0] == '=')
			op = MATCH_EQ, p += 1;
		else {
			if (err)
				buf_printf(err, "expected =, !=, =~ or !~ after \"%.64s\"",
				    k.data ? k.data : "");
			rc = -EINVAL;
			break;
		}
		p = skip_space(p);
		if (*p != '"' && *p != '\'' && *p != '`') {
			if (err)
				buf_printf(err, "the value of \"%.64s\" must be quoted (%s\"...\")",
				    k.data, matcher_op_str(op));
			rc = -EINVAL;
			break;
		}
		if ((rc = prom_string(&p, &v, err)) < 0)
			break;
		if ((rc = buf_error(&k)) < 0 ||
		    (rc = matchers_add(ms, k.data, op, v.data, err)) < 0)
			break;
		p = skip_space(p);
		if (*p == ',')
			p = skip_space(p + 1);
		else if (*p && *p != '}') {
			if (err)
				buf_printf(err, "expected ',' or '}' at \"%.32s\"", p);
			rc = -EINVAL;
		}
	}
	if (rc == 0 && brace && *p != '}') {
		if (err)
			buf_adds(err, "selector without its closing '}'");
		rc = -EINVAL;
	} else if (rc == 0 && !brace && *p == '}') {
		if (err)
			buf_adds(err, "'}' without an opening '{'");
		rc = -EINVAL;
	} else if (rc == 0 && *p == '}' && *skip_space(p + 1)) {
		if (err)
			buf_printf(err, "text after the selector's '}': \"%.32s\"", p + 1);
		rc = -EINVAL;
	}
	buf_free(&k);
	buf_free(&v);
	if (rc < 0)
		matchers_clear(ms);
	return rc;
}

int
matchers_parse_path(const char *s, struct matchers *ms, struct buf *err)
{
	struct buf k = { 0 }, v = { 0 };
	const char *p = s, *end, *eq, *kend, *vstart;
	enum matcher_op op;
	int rc = 0;

	ms->n = 0;
	while (*p && rc == 0) {
		if ((end = strchr(p, ',')) == NULL)
			end = p + strlen(p);
		/* The first operator: "!=", "!~", "=~" or "=". */
		for (eq = p; eq < end; eq++)
			if (*eq == '=' || (*eq == '!' && eq + 1 < end && (eq[1] == '=' || eq[1] == '~')))
				break;
		if (eq == end) {
			if (err)
				buf_printf(err, "matcher \"%.*s\" has no operator (write key=value, "
				    "key!=value, key=~regex or key!~regex)", (int)(end - p), p);
			rc = -EINVAL;
			break;
		}
		kend = eq;
		if (eq[0] == '!') {
			op = eq[1] == '=' ? MATCH_NE : MATCH_NRE;
			vstart = eq + 2;
		} else if (eq + 1 < end && eq[1] == '~') {
			op = MATCH_RE;
			vstart = eq + 2;
		} else {
			op = MATCH_EQ;
			vstart = eq + 1;
		}
		buf_reset(&k);
		buf_reset(&v);
		if (labels_unescape(&k, p, (size_t)(kend - p)) < 0 ||
		    labels_unescape(&v, vstart, (size_t)(end - vstart)) < 0) {
			if (err)
				buf_printf(err, "bad %%XX escape in matcher \"%.*s\"", (int)(end - p), p);
			rc = -EINVAL;
			break;
		}
		buf_reserve(&k, 0);
		buf_reserve(&v, 0);
		if ((rc = buf_error(&k)) < 0 || (rc = buf_error(&v)) < 0)
			break;
		rc = matchers_add(ms, k.data, op, v.data, err);
		p = *end ? end + 1 : end;
	}
	buf_free(&k);
	buf_free(&v);
	if (rc < 0)
		matchers_clear(ms);
	return rc;
}

int
matchers_format(const struct matchers *ms, struct buf *out)
{
	const char *k;
	size_t i;
	int rc = buf_reserve(out, 0);

	for (i = 0; i < ms->n && rc == 0; i++) {
		if (i)
			rc = buf_addc(out, ',');
		/* A '!' in a key would read as an operator. */
		for (k = ms->m[i].key; rc == 0 && *k; k++)
			rc = *k == '!' ? buf_adds(out, "%21") : labels_escape(out, k, 1);
		if (rc == 0)
			rc = buf_adds(out, matcher_op_str(ms->m[i].op));
		/* A value starting with '~' after '=' or '!=' would read as a regex. */
		if (rc == 0 && (ms->m[i].op == MATCH_EQ || ms->m[i].op == MATCH_NE) &&
		    ms->m[i].value[0] == '~')
			rc = buf_adds(out, "%7E") < 0 ? -ENOMEM :
			    labels_escape(out, ms->m[i].value + 1, strlen(ms->m[i].value) - 1);
		else if (rc == 0)
			rc = labels_escape(out, ms->m[i].value, strlen(ms->m[i].value));
	}
	return rc;
}

bool
matchers_has_ops(const char *text)
{
	return strstr(text, "!=") != NULL || strstr(text, "=~") != NULL ||
	    strstr(text, "!~") != NULL;
}
