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

int
query_sel_parse(const char *text, struct query_sel *s, struct buf *err)
{
	memset(s, 0, sizeof(*s));
	if (matchers_has_ops(text)) {
		s->matchers = true;
		return matchers_parse_path(text, &s->ms, err);
	}
	return labels_parse(text, &s->ls, err);
}

void
query_sel_apply(const struct query_sel *s, struct query *q)
{
	q->sel = s->matchers ? NULL : &s->ls;
	q->match = s->matchers ? &s->ms : NULL;
}

void
query_sel_free(struct query_sel *s)
{
	labels_clear(&s->ls);
	matchers_clear(&s->ms);
}
