/*
 * test_metrics: the metrics registry (base/metrics.c). Every rendering is
 * parsed by a checker of the Prometheus text exposition format (names, label
 * syntax and escapes, HELP/TYPE before a family's samples, families
 * contiguous, no duplicate series, histogram buckets cumulative and ending in
 * +Inf equal to _count) before values are looked up in it. Counters, gauges,
 * histogram bucket boundaries, label rendering, metrics_remove, and exact sums
 * when several threads record at once.
 *
 * The registry is process-wide: each test uses names of its own.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base.h"

/* --- a checker of the text exposition format ----------------------------- */

#define NAMELEN		128
#define LBLLEN		1024

struct sample {
	char	 name[NAMELEN];
	char	 labels[LBLLEN];	/* as rendered between the braces, le removed */
	bool	 has_le;
	double	 le;
	double	 value;
};

struct family {
	char	 name[NAMELEN];
	char	 type[16];
	bool	 help, typed, seen, closed;
};

struct expo {
	struct sample	*s;
	size_t		 n, cap;
	struct family	*f;
	size_t		 nf;
	char		 err[2560];
};

static bool
is_name(const char *s, size_t n, bool colon)
{
	size_t i;

	if (n == 0 || n >= NAMELEN)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!(isalpha(c) || c == '_' || (colon && c == ':') || (i > 0 && isdigit(c))))
			return false;
	}
	return true;
}

static struct family *
family(struct expo *x, const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < x->nf; i++)
		if (strlen(x->f[i].name) == n && memcmp(x->f[i].name, name, n) == 0)
			return &x->f[i];
	/* Also runs on a renderer thread: no cmocka assertion. */
	if ((x->f = realloc(x->f, (x->nf + 1) * sizeof(*x->f))) == NULL)
		abort();
	memset(&x->f[x->nf], 0, sizeof(*x->f));
	memcpy(x->f[x->nf].name, name, n);
	return &x->f[x->nf++];
}

/* The family a sample belongs to: histogram suffixes name their histogram. */
static struct family *
family_of(struct expo *x, const char *name)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	size_t n = strlen(name), i, k;

	for (i = 0; i < 3; i++) {
		k = strlen(sfx[i]);
		if (n > k && strcmp(name + n - k, sfx[i]) == 0) {
			struct family *f = family(x, name, n - k);

			if (f->typed && strcmp(f->type, "histogram") == 0)
				return f;
		}
	}
	return family(x, name, n);
}

static bool
parse_value(const char *s, size_t n, double *v)
{
	char tmp[64], *end;

	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	/* Go's ParseFloat, which Prometheus uses, also reads Inf and NaN. */
	*v = strtod(tmp, &end);
	return *end == '\0';
}

#define BAD(...) do { snprintf(x->err, sizeof(x->err), __VA_ARGS__); return -1; } while (0)

/* Parse the labels of a sample from p (at '{'); *pp is left after '}'. */
static int
parse_labels(struct expo *x, const char **pp, struct sample *sm, int lineno)
{
	const char *p = *pp + 1;
	char seen[LABELS_MAX][NAMELEN];
	size_t nseen = 0, i, o = 0;

	for (;;) {
		const char *k = p;
		char val[LBLLEN];
		size_t vn = 0;
		bool is_le;

		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		if (!is_name(k, (size_t)(p - k), false))
			BAD("line %d: bad label name", lineno);
		for (i = 0; i < nseen; i++)
			if (strlen(seen[i]) == (size_t)(p - k) && memcmp(seen[i], k, (size_t)(p - k)) == 0)
				BAD("line %d: label %.*s twice", lineno, (int)(p - k), k);
		if (nseen == LABELS_MAX)
			BAD("line %d: too many labels", lineno);
		snprintf(seen[nseen++], NAMELEN, "%.*s", (int)(p - k), k);
		is_le = p - k == 2 && memcmp(k, "le", 2) == 0;
		if (p[0] != '=' || p[1] != '"')
			BAD("line %d: label %.*s without =\"", lineno, (int)(p - k), k);
		p += 2;
		while (*p != '"') {
			if (*p == '\0' || *p == '\n')
				BAD("line %d: unterminated label value", lineno);
			if (*p == '\\') {
				p++;
				if (*p != '\\' && *p != '"' && *p != 'n')
					BAD("line %d: bad escape \\%c in a label value", lineno, *p);
				val[vn++] = *p == 'n' ? '\n' : *p;
			} else {
				val[vn++] = *p;
			}
			p++;
			if (vn >= sizeof(val) - 1)
				BAD("line %d: label value too long", lineno);
		}
		val[vn] = '\0';
		if (is_le) {
			sm->has_le = true;
			if (!parse_value(val, vn, &sm->le))
				BAD("line %d: le=\"%s\" is not a number", lineno, val);
		} else {
			/* Keep the rendered (escaped) form, for lookups. */
			o += (size_t)snprintf(sm->labels + o, LBLLEN - o, "%s%.*s", o ? "," : "",
			    (int)(p + 1 - k), k);
			if (o >= LBLLEN)
				BAD("line %d: labels too long", lineno);
		}
		p++;
		if (*p == '}')
			break;
		if (*p != ',')
			BAD("line %d: expected , or } after a label", lineno);
		p++;
	}
	*pp = p + 1;
	return 0;
}

/* *last: the index of the family of the previous sample, -1 at first. */
static int
parse_line(struct expo *x, const char *p, const char *eol, int lineno, long *last)
{
	static const char *const types[] = { "counter", "gauge", "histogram", "summary",
	    "untyped", NULL };
	struct sample *sm;
	struct family *f;
	const char *q;
	size_t i;

	if (p[0] == '#') {
		bool help = strncmp(p, "# HELP ", 7) == 0, type = strncmp(p, "# TYPE ", 7) == 0;

		if (!help && !type)
			return 0;	/* a plain comment */
		p += 7;
		for (q = p; q < eol && *q != ' '; q++)
			;
		if (!is_name(p, (size_t)(q - p), true))
			BAD("line %d: bad metric name in # %s", lineno, help ? "HELP" : "TYPE");
		f = family(x, p, (size_t)(q - p));
		if (f->seen)
			BAD("line %d: # %s %s after its samples", lineno, help ? "HELP" : "TYPE", f->name);
		if (help) {
			if (f->help)
				BAD("line %d: second # HELP for %s", lineno, f->name);
			f->help = true;
			return 0;
		}
		if (f->typed)
			BAD("line %d: second # TYPE for %s", lineno, f->name);
		if (q >= eol)
			BAD("line %d: # TYPE without a type", lineno);
		for (i = 0; types[i]; i++)
			if ((size_t)(eol - q - 1) == strlen(types[i]) &&
			    memcmp(q + 1, types[i], strlen(types[i])) == 0)
				break;
		if (types[i] == NULL)
			BAD("line %d: unknown type %.*s", lineno, (int)(eol - q - 1), q + 1);
		f->typed = true;
		snprintf(f->type, sizeof(f->type), "%s", types[i]);
		return 0;
	}
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 256;
		if ((x->s = realloc(x->s, x->cap * sizeof(*x->s))) == NULL)
			abort();
	}
	sm = &x->s[x->n];
	memset(sm, 0, sizeof(*sm));
	for (q = p; q < eol && *q != '{' && *q != ' '; q++)
		;
	if (!is_name(p, (size_t)(q - p), true))
		BAD("line %d: bad metric name", lineno);
	memcpy(sm->name, p, (size_t)(q - p));
	if (*q == '{' && parse_labels(x, &q, sm, lineno) < 0)
		return -1;
	if (*q != ' ')
		BAD("line %d: expected a space before the value", lineno);
	p = q + 1;
	for (q = p; q < eol && *q != ' '; q++)
		;
	if (!parse_value(p, (size_t)(q - p), &sm->value))
		BAD("line %d: bad value %.*s", lineno, (int)(q - p), p);
	if (q < eol) {
		double ts;

		if (!parse_value(q + 1, (size_t)(eol - q - 1), &ts) || ts != floor(ts))
			BAD("line %d: bad timestamp", lineno);
	}
	/* A family's samples are one contiguous group. */
	f = family_of(x, sm->name);
	if (f->closed)
		BAD("line %d: %s appears again after other families", lineno, f->name);
	if (*last >= 0 && &x->f[*last] != f)
		x->f[*last].closed = true;
	f->seen = true;
	*last = f - x->f;
	if (sm->has_le && strcmp(f->type, "histogram") != 0)
		BAD("line %d: le outside a histogram", lineno);
	for (i = 0; i < x->n; i++)
		if (strcmp(x->s[i].name, sm->name) == 0 && strcmp(x->s[i].labels, sm->labels) == 0 &&
		    x->s[i].has_le == sm->has_le && (!sm->has_le || x->s[i].le == sm->le))
			BAD("line %d: duplicate series %s{%s}", lineno, sm->name, sm->labels);
	x->n++;
	return 0;
}

static const struct sample *
find(const struct expo *x, const char *name, const char *labels)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		if (!x->s[i].has_le && strcmp(x->s[i].name, name) == 0 &&
		    strcmp(x->s[i].labels, labels) == 0)
			return &x->s[i];
	return NULL;
}

/* Histograms: buckets ascending, cumulative, the last +Inf equal to _count. */
static int
check_histograms(struct expo *x)
{
	size_t i, j;
	char name[NAMELEN + 8];

	for (i = 0; i < x->nf; i++) {
		const struct family *f = &x->f[i];

		if (!f->typed || strcmp(f->type, "histogram") != 0)
			continue;
		snprintf(name, sizeof(name), "%s_bucket", f->name);
		for (j = 0; j < x->n; j++) {
			const struct sample *c = &x->s[j], *cnt, *sum;
			double prev_le = -INFINITY, prev = 0;
			char cname[NAMELEN + 8];
			size_t k;

			if (strcmp(c->name, name) != 0 || (j > 0 && strcmp(x->s[j - 1].name, name) == 0 &&
			    strcmp(x->s[j - 1].labels, c->labels) == 0))
				continue;	/* not the first bucket of a series */
			for (k = j; k < x->n && strcmp(x->s[k].name, name) == 0 &&
			    strcmp(x->s[k].labels, c->labels) == 0; k++) {
				if (!x->s[k].has_le)
					BAD("%s{%s}: a bucket without le", name, c->labels);
				if (!(x->s[k].le > prev_le))
					BAD("%s{%s}: le not ascending", name, c->labels);
				if (x->s[k].value < prev)
					BAD("%s{%s}: buckets not cumulative", name, c->labels);
				prev_le = x->s[k].le;
				prev = x->s[k].value;
			}
			if (!isinf(prev_le))
				BAD("%s{%s}: no le=\"+Inf\" bucket", name, c->labels);
			snprintf(cname, sizeof(cname), "%s_count", f->name);
			if ((cnt = find(x, cname, c->labels)) == NULL || cnt->value != prev)
				BAD("%s{%s}: _count missing or not the +Inf bucket", f->name, c->labels);
			snprintf(cname, sizeof(cname), "%s_sum", f->name);
			if ((sum = find(x, cname, c->labels)) == NULL)
				BAD("%s{%s}: no _sum", f->name, c->labels);
		}
	}
	return 0;
}

/* Parse text into x; -1 with x->err set when it is not valid exposition. */
static int
expo_parse(struct expo *x, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *eol;
	long last = -1;
	int lineno = 0;

	memset(x, 0, sizeof(*x));
	if (len > 0 && text[len - 1] != '\n')
		BAD("the text does not end with a newline");
	for (; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		lineno++;
		if (eol == p)
			BAD("line %d: empty line", lineno);
		if (parse_line(x, p, eol, lineno, &last) < 0)
			return -1;
	}
	return check_histograms(x);
}

static void
expo_free(struct expo *x)
{
	free(x->s);
	free(x->f);
}

/* Render the registry, check it, and keep the text (in b) and its parse. */
static void
render(struct expo *x, struct buf *b)
{
	buf_reset(b);
	assert_int_equal(metrics_render(b), 0);
	assert_non_null(b->data);
	if (expo_parse(x, b->data, b->len) < 0)
		fail_msg("invalid exposition: %s\n%s", x->err, b->data);
}

static double
value(const struct expo *x, const char *name, const char *labels)
{
	const struct sample *s = find(x, name, labels);

	if (s == NULL)
		fail_msg("no sample %s{%s}", name, labels);
	return s->value;
}

static double
bucket(const struct expo *x, const char *name, const char *labels, double le)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		if (x->s[i].has_le && x->s[i].le == le && strcmp(x->s[i].name, name) == 0 &&
		    strcmp(x->s[i].labels, labels) == 0)
			return x->s[i].value;
	fail_msg("no bucket %s{%s} le=%g", name, labels, le);
	return -1;
}

static bool
has_line(const struct buf *b, const char *line)
{
	size_t n = strlen(line);
	const char *p = b->data;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == b->data || p[-1] == '\n') && p[n] == '\n')
			return true;
		p += n;
	}
	return false;
}

/* --- the checker refuses what it should ---------------------------------- */

static void
test_checker_refuses(void **state)
{
	static const char *const bad[] = {
		"a 1",					/* no final newline */
		"a{b=\"c\" 1\n",			/* unterminated labels */
		"a{b=\"c\\t\"} 1\n",			/* bad escape */
		"a{b=\"1\",b=\"2\"} 1\n",		/* label twice */
		"1a 1\n",				/* bad name */
		"a one\n",				/* bad value */
		"a 1\nb 1\na 2\n",			/* family not contiguous */
		"a 1\n# TYPE a counter\n",		/* TYPE after samples */
		"# TYPE a counter\n# TYPE a gauge\na 1\n",
		"# TYPE a meter\na 1\n",
		"a 1\na 2\n",				/* duplicate series */
		"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
		"# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
		    "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		NULL
	};
	const char *good = "# HELP a Some help.\n# TYPE a counter\na 1\na{x=\"q\\\"\\\\\\n\"} 2.5\n"
	    "# TYPE h histogram\nh_bucket{k=\"v\",le=\"0.5\"} 1\nh_bucket{k=\"v\",le=\"+Inf\"} 3\n"
	    "h_sum{k=\"v\"} 7\nh_count{k=\"v\"} 3\ng -Inf\n# just a comment\n";
	struct expo x;
	size_t i;

	(void)state;
	for (i = 0; bad[i]; i++) {
		if (expo_parse(&x, bad[i], strlen(bad[i])) == 0)
			fail_msg("the checker accepts %s", bad[i]);
		expo_free(&x);
	}
	if (expo_parse(&x, good, strlen(good)) < 0)
		fail_msg("the checker refuses valid text: %s", x.err);
	assert_true(value(&x, "a", "x=\"q\\\"\\\\\\n\"") == 2.5);
	assert_true(bucket(&x, "h_bucket", "k=\"v\"", INFINITY) == 3);
	expo_free(&x);
}

/* --- the registry -------------------------------------------------------- */

static void
test_counters(void **state)
{
	struct buf b = { 0 };
	struct expo x;

	(void)state;
	metrics_add("tm_requests_total", NULL, 1);
	metrics_add("tm_requests_total", "", 1);	/* "" and NULL: the same series */
	metrics_add("tm_requests_total", NULL, 1);
	metrics_add("tm_requests_total", "code=\"200\"", 2.5);
	metrics_add("tm_requests_total", "code=\"500\"", 0);
	render(&x, &b);
	assert_true(value(&x, "tm_requests_total", "") == 3);
	assert_true(value(&x, "tm_requests_total", "code=\"200\"") == 2.5);
	assert_true(value(&x, "tm_requests_total", "code=\"500\"") == 0);
	assert_true(has_line(&b, "# TYPE tm_requests_total counter"));
	assert_true(has_line(&b, "tm_requests_total 3"));
	assert_true(has_line(&b, "tm_requests_total{code=\"200\"} 2.5"));
	expo_free(&x);

	/* Large counts stay exact (printed with every digit). */
	metrics_add("tm_bytes_total", NULL, 9007199254740000.0);
	metrics_add("tm_bytes_total", NULL, 992);
	render(&x, &b);
	assert_true(value(&x, "tm_bytes_total", "") == 9007199254740992.0);
	assert_true(has_line(&b, "tm_bytes_total 9007199254740992"));
	expo_free(&x);
	buf_free(&b);
}

static void
test_gauges(void **state)
{
	struct buf b = { 0 };
	struct expo x;

	(void)state;
	metrics_set("tm_queue_depth", NULL, 5);
	metrics_set("tm_queue_depth", NULL, -2.25);
	metrics_set("tm_queue_depth", "queue=\"scrape\"", 1e-3);
	render(&x, &b);
	assert_true(value(&x, "tm_queue_depth", "") == -2.25);
	assert_true(value(&x, "tm_queue_depth", "queue=\"scrape\"") == 1e-3);
	assert_true(has_line(&b, "# TYPE tm_queue_depth gauge"));
	expo_free(&x);
	buf_free(&b);
}

static void
test_histogram_buckets(void **state)
{
	/* The documented boundaries: 1 ms to 60 s. */
	static const double les[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
	    0.5, 1, 2.5, 5, 10, 30, 60 };
	/* On, just above and far from the boundaries; le is "less or equal". */
	static const double obs[] = { 0, 0.001, 0.0010001, 0.0025, 0.007, 1, 1.0000001,
	    59.999, 60, 60.5, 1e9 };
	const size_t nles = sizeof(les) / sizeof(les[0]), nobs = sizeof(obs) / sizeof(obs[0]);
	struct buf b = { 0 };
	struct expo x;
	double sum = 0, want;
	size_t i, j, nb = 0;

	(void)state;
	for (i = 0; i < nobs; i++) {
		metrics_observe("tm_latency_seconds", "op=\"read\"", obs[i]);
		sum += obs[i];
	}
	render(&x, &b);
	assert_true(has_line(&b, "# TYPE tm_latency_seconds histogram"));
	for (i = 0; i < x.n; i++)
		if (strcmp(x.s[i].name, "tm_latency_seconds_bucket") == 0) {
			/* Exactly the documented boundaries, then +Inf. */
			assert_true(x.s[i].le == (nb < nles ? les[nb] : INFINITY));
			nb++;
		}
	assert_int_equal(nb, nles + 1);
	for (i = 0; i < nles; i++) {
		want = 0;
		for (j = 0; j < nobs; j++)
			want += obs[j] <= les[i];
		if (bucket(&x, "tm_latency_seconds_bucket", "op=\"read\"", les[i]) != want)
			fail_msg("le=%g: %g, want %g", les[i],
			    bucket(&x, "tm_latency_seconds_bucket", "op=\"read\"", les[i]), want);
	}
	assert_true(bucket(&x, "tm_latency_seconds_bucket", "op=\"read\"", INFINITY) == (double)nobs);
	assert_true(value(&x, "tm_latency_seconds_count", "op=\"read\"") == (double)nobs);
	assert_true(value(&x, "tm_latency_seconds_sum", "op=\"read\"") == sum);
	/* The boundaries print as Prometheus clients print them. */
	assert_true(has_line(&b, "tm_latency_seconds_bucket{op=\"read\",le=\"0.001\"} 2"));
	assert_true(has_line(&b, "tm_latency_seconds_bucket{op=\"read\",le=\"0.0025\"} 4"));
	assert_true(has_line(&b, "tm_latency_seconds_bucket{op=\"read\",le=\"60\"} 9"));
	expo_free(&x);
	buf_free(&b);
}

static void
test_label_rendering(void **state)
{
	struct buf b = { 0 };
	struct expo x;

	(void)state;
	metrics_add("tm_plain_total", NULL, 1);
	metrics_add("tm_multi_total", "service=\"checkout\",instance=\"10.0.0.1:6060\"", 1);
	/* Callers escape values as the format asks: quote, backslash, newline. */
	metrics_add("tm_escaped_total", "path=\"a\\\"b\\\\c\\nd\"", 1);
	metrics_observe("tm_plain_seconds", NULL, 0.3);
	metrics_describe("tm_plain_seconds", "histogram", "Time taken.");
	render(&x, &b);
	assert_true(has_line(&b, "tm_plain_total 1"));
	assert_true(has_line(&b, "tm_multi_total{service=\"checkout\",instance=\"10.0.0.1:6060\"} 1"));
	assert_true(has_line(&b, "tm_escaped_total{path=\"a\\\"b\\\\c\\nd\"} 1"));
	/* Without labels of its own a bucket carries le alone. */
	assert_true(has_line(&b, "tm_plain_seconds_bucket{le=\"0.5\"} 1"));
	assert_true(has_line(&b, "tm_plain_seconds_sum 0.29999999999999999"));
	assert_true(has_line(&b, "tm_plain_seconds_count 1"));
	assert_true(value(&x, "tm_plain_seconds_sum", "") == 0.3);
	expo_free(&x);
	buf_free(&b);
}

static void
test_describe(void **state)
{
	struct buf b = { 0 };
	struct expo x;
	const char *help, *type, *sample;

	(void)state;
	metrics_describe("tm_described_total", "counter", "Things that happened.");
	metrics_describe("tm_described_total", "counter", "A second description is ignored.");
	metrics_describe("tm_undescribed_total", "counter", "No series: not rendered.");
	render(&x, &b);
	assert_null(strstr(b.data, "tm_described_total"));
	assert_null(strstr(b.data, "tm_undescribed_total"));
	expo_free(&x);
	metrics_add("tm_described_total", NULL, 4);
	render(&x, &b);
	help = strstr(b.data, "# HELP tm_described_total Things that happened.\n");
	type = strstr(b.data, "# TYPE tm_described_total counter\n");
	sample = strstr(b.data, "\ntm_described_total 4\n");
	assert_non_null(help);
	assert_non_null(type);
	assert_non_null(sample);
	assert_true(help < type && type < sample);
	assert_null(strstr(b.data, "A second description"));
	expo_free(&x);
	buf_free(&b);
}

static void
test_remove(void **state)
{
	struct buf b = { 0 };
	struct expo x;

	(void)state;
	metrics_set("tm_target_up", "instance=\"a\"", 1);
	metrics_set("tm_target_up", "instance=\"b\"", 0);
	metrics_set("tm_target_up", "instance=\"c\"", 1);
	metrics_observe("tm_target_seconds", "instance=\"b\"", 0.01);
	metrics_set("tm_other", NULL, 1);
	metrics_remove("tm_target_up", "instance=\"b\"");
	metrics_remove("tm_target_seconds", "instance=\"b\"");
	metrics_remove("tm_target_up", "instance=\"nope\"");	/* absent: nothing happens */
	metrics_remove("tm_no_such_metric", NULL);
	render(&x, &b);
	assert_null(find(&x, "tm_target_up", "instance=\"b\""));
	assert_true(value(&x, "tm_target_up", "instance=\"a\"") == 1);
	assert_true(value(&x, "tm_target_up", "instance=\"c\"") == 1);
	assert_null(strstr(b.data, "tm_target_seconds"));	/* not even # TYPE */
	expo_free(&x);

	/* The family disappears with its last series; added again, it starts over. */
	metrics_remove("tm_target_up", "instance=\"a\"");
	metrics_remove("tm_target_up", "instance=\"c\"");
	render(&x, &b);
	assert_null(strstr(b.data, "tm_target_up"));
	assert_true(value(&x, "tm_other", "") == 1);
	expo_free(&x);
	metrics_add("tm_target_seconds_total", "instance=\"b\"", 2);
	metrics_observe("tm_target_seconds", "instance=\"b\"", 0.02);
	metrics_remove("tm_other", "");
	render(&x, &b);
	assert_true(value(&x, "tm_target_seconds_count", "instance=\"b\"") == 1);
	assert_true(value(&x, "tm_target_seconds_sum", "instance=\"b\"") == 0.02);
	assert_true(value(&x, "tm_target_seconds_total", "instance=\"b\"") == 2);
	assert_null(find(&x, "tm_other", ""));
	expo_free(&x);
	buf_free(&b);
}

static void
test_many_series_grouped(void **state)
{
	struct buf b = { 0 }, l = { 0 };
	struct expo x;
	int i;

	(void)state;
	/* Two families created interleaved, thousands of series (hash chains). */
	for (i = 0; i < 3000; i++) {
		buf_reset(&l);
		buf_printf(&l, "instance=\"host%d:6060\"", i);
		metrics_add(i % 2 ? "tm_odd_total" : "tm_even_total", l.data, i);
		metrics_set("tm_all_up", l.data, i % 3);
	}
	for (i = 0; i < 3000; i += 3) {
		buf_reset(&l);
		buf_printf(&l, "instance=\"host%d:6060\"", i);
		metrics_remove("tm_all_up", l.data);
	}
	render(&x, &b);	/* the checker refuses families that are not contiguous */
	for (i = 0; i < 3000; i++) {
		buf_reset(&l);
		buf_printf(&l, "instance=\"host%d:6060\"", i);
		assert_true(value(&x, i % 2 ? "tm_odd_total" : "tm_even_total", l.data) == i);
		if (i % 3 == 0)
			assert_null(find(&x, "tm_all_up", l.data));
		else
			assert_true(value(&x, "tm_all_up", l.data) == i % 3);
	}
	expo_free(&x);
	for (i = 0; i < 3000; i++) {
		buf_reset(&l);
		buf_printf(&l, "instance=\"host%d:6060\"", i);
		metrics_remove(i % 2 ? "tm_odd_total" : "tm_even_total", l.data);
		metrics_remove("tm_all_up", l.data);
	}
	render(&x, &b);
	assert_null(strstr(b.data, "tm_odd_total"));
	assert_null(strstr(b.data, "tm_all_up"));
	expo_free(&x);
	buf_free(&l);
	buf_free(&b);
}

/* --- threads ------------------------------------------------------------- */

#define NTHREADS	8
#define ROUNDS		20000

struct worker {
	int		 id;
	atomic_bool	*stop;
	int		 invalid;	/* renderer: renderings the checker refused */
	int		 renders;
};

static void *
recorder(void *arg)
{
	struct worker *w = arg;
	char l[64], churn[64];
	int i;

	snprintf(l, sizeof(l), "thread=\"%d\"", w->id);
	for (i = 0; i < ROUNDS; i++) {
		metrics_add("tm_conc_total", NULL, 1);
		metrics_add("tm_conc_total", l, 1);
		metrics_observe("tm_conc_seconds", NULL, 0.25);
		metrics_set("tm_conc_gauge", l, i);
		/* Series come and go while others record and render. */
		snprintf(churn, sizeof(churn), "thread=\"%d\",n=\"%d\"", w->id, i % 50);
		metrics_add("tm_churn_total", churn, 1);
		if (i % 7 == 0)
			metrics_remove("tm_churn_total", churn);
	}
	return NULL;
}

static void *
renderer(void *arg)
{
	struct worker *w = arg;
	struct buf b = { 0 };
	struct expo x;

	/* cmocka assertions belong to the main thread: count, check later. */
	while (!atomic_load(w->stop)) {
		buf_reset(&b);
		if (metrics_render(&b) != 0 || b.data == NULL ||
		    expo_parse(&x, b.data, b.len) < 0)
			w->invalid++;
		expo_free(&x);
		w->renders++;
	}
	buf_free(&b);
	return NULL;
}

static void
test_threads_sum_exactly(void **state)
{
	struct worker w[NTHREADS + 1];
	pthread_t th[NTHREADS + 1];
	atomic_bool stop = false;
	struct buf b = { 0 };
	struct expo x;
	char l[64];
	int i;

	(void)state;
	for (i = 0; i <= NTHREADS; i++) {
		w[i] = (struct worker){ .id = i, .stop = &stop };
		assert_int_equal(pthread_create(&th[i], NULL, i < NTHREADS ? recorder : renderer,
		    &w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, true);
	pthread_join(th[NTHREADS], NULL);
	assert_int_equal(w[NTHREADS].invalid, 0);
	assert_true(w[NTHREADS].renders > 0);

	render(&x, &b);
	assert_true(value(&x, "tm_conc_total", "") == NTHREADS * ROUNDS);
	for (i = 0; i < NTHREADS; i++) {
		snprintf(l, sizeof(l), "thread=\"%d\"", i);
		assert_true(value(&x, "tm_conc_total", l) == ROUNDS);
		assert_true(value(&x, "tm_conc_gauge", l) == ROUNDS - 1);
	}
	assert_true(value(&x, "tm_conc_seconds_count", "") == NTHREADS * ROUNDS);
	assert_true(value(&x, "tm_conc_seconds_sum", "") == 0.25 * NTHREADS * ROUNDS);
	assert_true(bucket(&x, "tm_conc_seconds_bucket", "", 0.25) == NTHREADS * ROUNDS);
	assert_true(bucket(&x, "tm_conc_seconds_bucket", "", 0.1) == 0);
	/* Each churn series holds what was added since its last removal. */
	for (i = 0; i < NTHREADS; i++) {
		int n, k, want;

		for (n = 0; n < 50; n++) {
			snprintf(l, sizeof(l), "thread=\"%d\",n=\"%d\"", i, n);
			want = 0;
			for (k = n; k < ROUNDS; k += 50)
				want = k % 7 == 0 ? 0 : want + 1;
			if (want == 0)
				assert_null(find(&x, "tm_churn_total", l));
			else
				assert_true(value(&x, "tm_churn_total", l) == want);
		}
	}
	expo_free(&x);
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker_refuses),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_gauges),
		cmocka_unit_test(test_histogram_buckets),
		cmocka_unit_test(test_label_rendering),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_many_series_grouped),
		cmocka_unit_test(test_threads_sum_exactly),
	};

	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
