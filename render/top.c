/*
 * top: the functions of a profile by flat value (samples whose leaf frame is
 * the function) and cumulative value (samples with the function anywhere on
 * the stack, counted once however often it recurs), as `go tool pprof -top`
 * shows them. Computed from the stack tree, so functions are named exactly
 * as in the flame graph; inlined functions count as their own frames. Names
 * are written with control bytes escaped (render_add_text).
 */
#define _GNU_SOURCE	/* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "render.h"

struct fn_sum {
	int64_t		 flat, cum, bflat, bcum;
};

struct todo {
	uint32_t	 node;
	bool		 leave;
};

struct sort_ctx {
	const struct render_tree *t;
	const struct fn_sum	*s;
	bool			 by_cum;
};

static int64_t
abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static int
row_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct fn_sum *p = &c->s[x], *q = &c->s[y];
	int64_t k1 = c->by_cum ? abs64(p->cum - p->bcum) : abs64(p->flat - p->bflat);
	int64_t k2 = c->by_cum ? abs64(q->cum - q->bcum) : abs64(q->flat - q->bflat);
	size_t l;

	if (k1 != k2)
		return k1 > k2 ? -1 : 1;
	k1 = c->by_cum ? abs64(p->flat - p->bflat) : abs64(p->cum - p->bcum);
	k2 = c->by_cum ? abs64(q->flat - q->bflat) : abs64(q->cum - q->bcum);
	if (k1 != k2)
		return k1 > k2 ? -1 : 1;
	return strcmp(intern_key(c->t->names, x, &l), intern_key(c->t->names, y, &l));
}

static void
cell(struct buf *out, int64_t v, const char *unit, int width)
{
	struct buf tmp = { 0 };

	render_value(&tmp, v, unit);
	buf_printf(out, "%*s", width, tmp.data ? tmp.data : "");
	buf_free(&tmp);
}

static void
table(struct buf *out, const struct render_tree *t, const struct fn_sum *s,
    uint32_t *rows, size_t nrows, bool by_cum, const char *unit, int64_t denom)
{
	struct sort_ctx c = { t, s, by_cum };
	double sum = 0, d = denom ? (double)denom : 1;
	size_t i, l;

	qsort_r(rows, nrows, sizeof(*rows), row_cmp, &c);
	buf_printf(out, "%16s %7s %7s %16s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%",
	    by_cum ? "(by cum)" : "(by flat)");
	for (i = 0; i < nrows && i < TOP_ROWS; i++) {
		const struct fn_sum *f = &s[rows[i]];
		int64_t flat = f->flat - f->bflat, cum = f->cum - f->bcum;

		sum += (double)flat;
		cell(out, flat, unit, 16);
		buf_printf(out, " %6.2f%% %6.2f%% ", 100.0 * (double)flat / d, 100.0 * sum / d);
		cell(out, cum, unit, 16);
		buf_printf(out, " %6.2f%%  ", 100.0 * (double)cum / d);
		render_add_text(out, (const char *)intern_key(t->names, rows[i], &l));
		buf_addc(out, '\n');
	}
	if (nrows > TOP_ROWS)
		buf_printf(out, "(%zu more functions)\n", nrows - TOP_ROWS);
}

static int
top_do(const struct render_tree *t, const char *title, const char *unit, bool norm,
    struct buf *out)
{
	size_t nnames = t->names ? intern_count(t->names) : 0, sp = 0, nrows = 0, i;
	struct fn_sum *s = calloc(nnames ? nnames : 1, sizeof(*s));
	uint32_t *onpath = calloc(nnames ? nnames : 1, sizeof(*onpath));
	uint32_t *rows = malloc((nnames ? nnames : 1) * sizeof(*rows));
	struct todo *stack = malloc((2 * t->n + 1) * sizeof(*stack));
	int64_t cur = t->n ? t->cur[0] : 0, base = t->n && t->has_base ? t->base[0] : 0;
	int rc = 0;

	if (s == NULL || onpath == NULL || rows == NULL || stack == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* Walk the tree; a name counts towards cum only where it is not already on the path. */
	for (i = t->n > 1 ? t->kid_start[0] : 0; t->n > 1 && i < t->kid_start[1]; i++)
		stack[sp++] = (struct todo){ t->kids[i], false };
	while (sp > 0) {
		struct todo td = stack[--sp];
		uint32_t n = td.node, nm = t->name[n], k;

		if (td.leave) {
			onpath[nm]--;
			continue;
		}
		s[nm].flat += t->cur_self[n];
		s[nm].bflat += t->base_self[n];
		if (onpath[nm]++ == 0) {
			s[nm].cum += t->cur[n];
			s[nm].bcum += t->base[n];
		}
		stack[sp++] = (struct todo){ n, true };
		for (k = t->kid_start[n]; k < t->kid_start[n + 1]; k++)
			stack[sp++] = (struct todo){ t->kids[k], false };
	}
	if (norm && t->has_base) {
		double r = render_norm_scale(t);

		for (i = 0; i < nnames; i++) {
			s[i].flat = render_scale_value(s[i].flat, r);
			s[i].cum = render_scale_value(s[i].cum, r);
		}
	}
	/* A diff lists what changed, as pprof does. */
	for (i = 0; i < nnames; i++)
		if (s[i].flat != s[i].bflat || s[i].cum != s[i].bcum ||
		    (!t->has_base && (s[i].cum || s[i].bcum)))
			rows[nrows++] = (uint32_t)i;
	buf_printf(out, "%s\n", title);
	if (t->has_base && norm) {
		buf_adds(out, "Total: before ");
		render_value(out, base, unit);
		buf_adds(out, ", after ");
		render_value(out, cur, unit);
		buf_adds(out, "\nNormalized: shares compared; the after values are scaled by ");
		buf_add_fixed(out, render_norm_scale(t), 4);
		buf_adds(out, " to the base's total,\n"
		    "as pprof -normalize -diff_base shows them; percentages of the base total\n\n");
	} else if (t->has_base) {
		buf_adds(out, "Total: before ");
		render_value(out, base, unit);
		buf_adds(out, ", after ");
		render_value(out, cur, unit);
		buf_adds(out, ", delta ");
		render_value(out, cur - base, unit);
		buf_adds(out, "; percentages of the base total, as pprof -diff_base shows them\n\n");
	} else {
		buf_adds(out, "Total: ");
		render_value(out, cur, unit);
		buf_printf(out, "; %zu functions\n\n", nrows);
	}
	table(out, t, s, rows, nrows, false, unit, t->has_base ? base : cur);
	buf_adds(out, "\n");
	table(out, t, s, rows, nrows, true, unit, t->has_base ? base : cur);
	if (out->data == NULL)
		rc = -ENOMEM;
out:
	free(s);
	free(onpath);
	free(rows);
	free(stack);
	return rc;
}

int
top_render(const struct render_tree *t, const char *title, const char *unit,
    struct buf *out)
{
	return top_do(t, title, unit, false, out);
}

int
top_render_normalized(const struct render_tree *t, const char *title, const char *unit,
    struct buf *out)
{
	return top_do(t, title, unit, true, out);
}
