/*
 * labels: parsing, escaping and matching of label sets. Pure functions, no
 * storage; the store and the path grammar both use them. The matchers'
 * regular expressions are RE2's (re2shim.cc), as Prometheus's: compiled
 * within a memory cap charged to the budget (budget.c), matched in time
 * linear in the value.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "re2shim.h"

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
			re2shim_free(ms->m[i].re);
			budget_release(ms->m[i].re_mem);
		}
	}
	ms->n = 0;
}

size_t
matchers_re_mem(const struct matchers *ms)
{
	size_t i, sum = 0;

	for (i = 0; i < ms->n; i++)
		sum += ms->m[i].re_mem;
	return sum;
}

/*
 * Memory of one compiled regex: RE2 keeps its program and the caches of its
 * matching (the DFA's states, filled lazily by the values matched) within
 * max_mem, which is what the budget is charged. A pattern is compiled with
 * the largest allowance first, to learn its program's size, then again
 * with room for that program and a modest cache, so "api-.*" holds 68 KiB
 * of the budget and not a megabyte. Each of RE2's instructions takes 16
 * bytes (the DFA's work lists as many again); the cache gets the rest of
 * two thirds of max_mem, the reverse program RE2 may build the last third.
 */
#define RE_MEM_SMALL	((size_t)64 << 10)	/* the cache of a small program */
#define RE_INST_COST	48			/* bytes per instruction, x3 for the 2/3 */

static size_t
re_mem_for(int ninst)
{
	size_t m = (size_t)(ninst > 0 ? ninst : 1) * RE_INST_COST + RE_MEM_SMALL;

	m = (m + 4095) & ~(size_t)4095;
	return m < MATCHER_RE_MEM ? m : MATCHER_RE_MEM;
}

/* The reason RE2 refused value (as a matcher on key) into err. */
static void
re_refusal(struct buf *err, const char *key, const char *value, enum re2shim_error e,
    const char *why)
{
	const char *bs = strchr(why, '\\');

	if (err == NULL)
		return;
	buf_printf(err, "bad regular expression \"%.64s\" for %.64s: ", value, key);
	if (e == RE2SHIM_BAD_ESCAPE && bs && bs[1] >= '0' && bs[1] <= '9')
		buf_printf(err, "back-references (\\%c) are not supported (matchers are RE2 "
		    "syntax, as Prometheus's: matching takes time linear in the value)", bs[1]);
	else if (e == RE2SHIM_BAD_REPEAT)
		buf_printf(err, "%s: a repetition count is at most 1000, nested counts "
		    "multiplied", why);
	else if (e == RE2SHIM_BAD_REPEAT_OP)
		buf_printf(err, "%s (a repetition of a repetition)", why);
	else if (e == RE2SHIM_TOO_LARGE)
		buf_printf(err, "it compiles to more than %zu KiB (fewer or smaller "
		    "repetitions, fewer alternatives)", (size_t)MATCHER_RE_MEM >> 10);
	else
		buf_printf(err, "%s (RE2 syntax, as Prometheus's)", why);
}

/*
 * Compile value for m (charged to the budget, m->re_mem). -EINVAL with the
 * reason for a pattern RE2 refuses or that would take the selector past
 * MATCHERS_RE_MEM_MAX (spent: what ms holds already), -ENOMEM when the
 * budget has no room.
 */
static int
re_compile(struct matcher *m, const char *key, const char *value, size_t spent,
    struct buf *err)
{
	struct re2shim *re = NULL, *small = NULL;
	enum re2shim_error e;
	char why[256];
	size_t want;

	if (spent + RE_MEM_SMALL > MATCHERS_RE_MEM_MAX)
		goto too_much;
	if (budget_reserve(MATCHER_RE_MEM) < 0) {
		if (err)
			buf_printf(err, "no memory to compile the regular expression for %.64s "
			    "(the memory budget of %zu MiB is in use); try again", key,
			    budget_limit() >> 20);
		return -ENOMEM;
	}
	e = re2shim_compile(value, strlen(value), (int64_t)MATCHER_RE_MEM, &re, why, sizeof(why));
	if (e != RE2SHIM_OK) {
		budget_release(MATCHER_RE_MEM);
		if (e == RE2SHIM_NOMEM) {
			if (err)
				buf_printf(err, "out of memory compiling the regular expression for "
				    "%.64s", key);
			return -ENOMEM;
		}
		re_refusal(err, key, value, e, why);
		return -EINVAL;
	}
	want = re_mem_for(re2shim_program_size(re));
	if (want < MATCHER_RE_MEM && re2shim_compile(value, strlen(value), (int64_t)want,
	    &small, why, sizeof(why)) == RE2SHIM_OK) {
		re2shim_free(re);
		re = small;
		budget_release(MATCHER_RE_MEM - want);
	} else
		want = MATCHER_RE_MEM;
	if (spent + want > MATCHERS_RE_MEM_MAX) {
		re2shim_free(re);
		budget_release(want);
		goto too_much;
	}
	m->re = re;
	m->re_mem = want;
	return 0;
too_much:
	if (err)
		buf_printf(err, "the regular expressions of the selector would take more than "
		    "%zu MiB (at %.64s): use fewer or simpler ones",
		    (size_t)MATCHERS_RE_MEM_MAX >> 20, key);
	return -EINVAL;
}

int
matchers_add(struct matchers *ms, const char *key, enum matcher_op op, const char *value,
    struct buf *err)
{
	struct matcher *m;
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
	if ((op == MATCH_RE || op == MATCH_NRE) &&
	    (rc = re_compile(m, key, value, matchers_re_mem(ms), err)) < 0)
		return rc;
	m->key = strdup(key);
	m->value = strdup(value);
	if (m->key == NULL || m->value == NULL) {
		free(m->key);
		free(m->value);
		if (m->re) {
			re2shim_free(m->re);
			budget_release(m->re_mem);
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
	/* RE2 out of memory (-1): neither holds, the series is not selected. */
	case MATCH_RE:	return re2shim_full_match(m->re, v, strlen(v)) == 1;
	case MATCH_NRE:	return re2shim_full_match(m->re, v, strlen(v)) == 0;
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
