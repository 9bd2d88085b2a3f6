/*
 * query: what the tree and the HTTP API both ask of the store (see query.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "query.h"

int
query_services(const struct reader *rd, bool with_data, const char ***out, size_t *n)
{
	const struct series **all;
	const char **names, *last = NULL;
	size_t nall, i;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = reader_series(rd, &all, &nall)) < 0)
		return rc;
	if ((names = malloc((nall ? nall : 1) * sizeof(*names))) == NULL) {
		free(all);
		return -ENOMEM;
	}
	/* Sorted by service: each name once. */
	for (i = 0; i < nall; i++) {
		if (last && strcmp(last, all[i]->service) == 0)
			continue;
		if (with_data && !reader_has_data(rd, all[i]->id, INT64_MIN, INT64_MAX))
			continue;
		names[(*n)++] = last = all[i]->service;
	}
	free(all);
	*out = names;
	return 0;
}

int
query_merge_timed(const struct reader *rd, const struct query *q, const char *source,
    struct query_result *res)
{
	int64_t t0 = clock_mono_ns();
	char label[48];
	int rc;

	rc = reader_merge(rd, q, res);
	snprintf(label, sizeof(label), "source=\"%s\"", source);
	metrics_observe(METRIC_MERGE_DURATION, label, (double)(clock_mono_ns() - t0) / 1e9);
	return rc;
}

/* Whether key names spans (never a series label). */
static bool
span_key(const char *key)
{
	return strcmp(key, "span_id") == 0 || strcmp(key, "trace_id") == 0;
}

/* Add the ids of one span_id= or trace_id= value ('+' between ids) to s. */
static int
sel_span_value(struct query_sel *s, const char *key, const char *value, struct buf *err)
{
	bool trace = strcmp(key, "trace_id") == 0;
	char id[40];
	const char *p = value, *e;
	size_t n;

	for (;;) {
		e = strchr(p, '+');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n >= sizeof(id))
			goto bad;
		memcpy(id, p, n);
		id[n] = '\0';
		if (trace) {
			if (s->spans.ntraces == QUERY_SEL_SPANS)
				goto many;
			if (span_trace_parse(id, s->trace_ids[s->spans.ntraces]) < 0)
				goto bad;
			s->spans.ntraces++;
		} else {
			if (s->spans.nids == QUERY_SEL_SPANS)
				goto many;
			if (span_id_parse(id, &s->span_ids[s->spans.nids]) < 0)
				goto bad;
			s->spans.nids++;
		}
		if (e == NULL)
			break;
		p = e + 1;
	}
	return 0;
bad:
	if (err)
		buf_printf(err, "%s=%.64s: %s", key, value, trace ?
		    "a trace id is 32 hex digits ('+' between several)" :
		    "a span id is 1 to 16 hex digits ('+' between several)");
	return -EINVAL;
many:
	if (err)
		buf_printf(err, "%s: at most %d ids in one selector", key, QUERY_SEL_SPANS);
	return -EINVAL;
}

/* Move span_id and trace_id out of the selection into s->spans. */
static int
sel_spans(struct query_sel *s, struct buf *err)
{
	size_t i, j;
	int rc;

	for (i = j = 0; i < s->ls.n; i++) {
		struct label *l = &s->ls.pairs[i];

		if (!span_key(l->key)) {
			s->ls.pairs[j++] = *l;
			continue;
		}
		rc = sel_span_value(s, l->key, l->value, err);
		free(l->key);
		free(l->value);
		s->has_spans = true;
		if (rc < 0) {
			for (i++; i < s->ls.n; i++)
				s->ls.pairs[j++] = s->ls.pairs[i];
			s->ls.n = j;
			return rc;
		}
	}
	s->ls.n = j;
	/* Span matchers move to gone (freed as matchers are); = alone is accepted. */
	{
		struct matchers gone;

		gone.n = 0;
		rc = 0;
		for (i = j = 0; i < s->ms.n; i++) {
			struct matcher *m = &s->ms.m[i];

			if (!span_key(m->key)) {
				s->ms.m[j++] = *m;
				continue;
			}
			s->has_spans = true;
			if (rc == 0 && m->op != MATCH_EQ) {
				if (err)
					buf_printf(err, "%s takes only =: it selects samples, not "
					    "series", m->key);
				rc = -EINVAL;
			} else if (rc == 0)
				rc = sel_span_value(s, m->key, m->value, err);
			gone.m[gone.n++] = *m;
		}
		s->ms.n = j;
		matchers_clear(&gone);
		if (rc < 0)
			return rc;
	}
	if (s->has_spans) {
		s->spans.ids = s->span_ids;
		s->spans.traces = (const unsigned char (*)[16])s->trace_ids;
	}
	return 0;
}

int
query_sel_parse(const char *text, struct query_sel *s, struct buf *err)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (matchers_has_ops(text)) {
		s->matchers = true;
		rc = matchers_parse_path(text, &s->ms, err);
	} else
		rc = labels_parse(text, &s->ls, err);
	if (rc == 0)
		rc = sel_spans(s, err);
	return rc;
}

void
query_sel_apply(const struct query_sel *s, struct query *q)
{
	q->sel = s->matchers ? NULL : &s->ls;
	q->match = s->matchers ? &s->ms : NULL;
	q->spans = s->has_spans ? &s->spans : NULL;
}

void
query_sel_free(struct query_sel *s)
{
	labels_clear(&s->ls);
	matchers_clear(&s->ms);
}
