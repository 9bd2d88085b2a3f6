/*
 * timeline: the total of a range per time step, to find the spike. The
 * caller adds each profile's total at its time; this module picks a round
 * step (at most TIMELINE_MAX_STEPS of them, aligned to UTC) and writes the
 * series as CSV or as an SVG bar chart with axes and UTC times. Counters sum
 * per step; gauges average over the step's snapshots.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render.h"

#define NS		INT64_C(1000000000)

/* Round steps, smallest first. */
static const int64_t steps[] = {
	1000000, 2000000, 5000000, 10000000, 20000000, 50000000, 100000000,
	200000000, 500000000, NS, 2 * NS, 5 * NS, 10 * NS, 15 * NS, 30 * NS,
	60 * NS, 120 * NS, 300 * NS, 600 * NS, 900 * NS, 1800 * NS, 3600 * NS,
	2 * 3600 * NS, 3 * 3600 * NS, 6 * 3600 * NS, 12 * 3600 * NS, 86400 * NS,
	2 * 86400 * NS, 7 * 86400 * NS,
};

int
timeline_init(struct timeline *tl, int64_t from, int64_t to, bool gauge)
{
	size_t i;
	int64_t span, step = 0, start;

	memset(tl, 0, sizeof(*tl));
	/*
	 * Keep the arithmetic below far from int64's ends: a timeline spans at
	 * most 1897..2043 (times outside are left out of it).
	 */
	if (from < -(INT64_MAX / 4))
		from = -(INT64_MAX / 4);
	if (to > INT64_MAX / 4)
		to = INT64_MAX / 4;
	if (to <= from)
		to = from + 1;
	if (__builtin_sub_overflow(to, from, &span))
		span = INT64_MAX;
	/*
	 * The first step starts at from rounded down to the step, so the steps
	 * cover up to one step more than the span: count them from there.
	 */
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		start = floor_div(from, steps[i]) * steps[i];
		if ((to - start + steps[i] - 1) / steps[i] <= TIMELINE_MAX_STEPS) {
			step = steps[i];
			break;
		}
	}
	if (step == 0)	/* longer than 120 weeks: whole weeks, one to spare */
		step = (span / (TIMELINE_MAX_STEPS - 1) / (7 * 86400 * NS) + 1) * 7 * 86400 * NS;
	start = floor_div(from, step) * step;
	tl->from = start;
	tl->step = step;
	tl->nsteps = (size_t)((to - start + step - 1) / step);
	if (tl->nsteps == 0)
		tl->nsteps = 1;
	tl->to = start + (int64_t)tl->nsteps * step;
	tl->gauge = gauge;
	tl->sum = calloc(tl->nsteps, sizeof(*tl->sum));
	tl->count = calloc(tl->nsteps, sizeof(*tl->count));
	if (tl->sum == NULL || tl->count == NULL) {
		timeline_free(tl);
		return -ENOMEM;
	}
	return 0;
}

void
timeline_add(struct timeline *tl, int64_t t, int64_t total)
{
	timeline_add_n(tl, t, total, 1);
}

void
timeline_add_n(struct timeline *tl, int64_t t, int64_t total, uint32_t n)
{
	size_t i;

	if (t < tl->from || t >= tl->to)
		return;
	i = (size_t)((t - tl->from) / tl->step);
	tl->sum[i] += total;
	tl->count[i] += n;
}

int64_t
timeline_value(const struct timeline *tl, size_t i)
{
	if (tl->gauge)
		return tl->count[i] ? tl->sum[i] / (int64_t)tl->count[i] : 0;
	return tl->sum[i];
}

void
timeline_free(struct timeline *tl)
{
	free(tl->sum);
	free(tl->count);
	memset(tl, 0, sizeof(*tl));
}

/* UTC time, shortened to what the step needs. */
static void
fmt_time(int64_t ns, int64_t step, char *out, size_t n)
{
	time_t secs = (time_t)floor_div(ns, NS);
	struct tm tm;

	gmtime_r(&secs, &tm);
	if (step < NS) {
		size_t l = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(out + l, n - l, ".%03dZ", (int)(ns - (int64_t)secs * NS) / 1000000);
	} else
		strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A short axis label of ticks every `every` ns: time of day, with the date when the range spans days. */
static void
tick_label(const struct timeline *tl, int64_t every, int64_t ns, char *out, size_t n)
{
	time_t secs = (time_t)floor_div(ns, NS);
	struct tm tm;
	size_t l;

	gmtime_r(&secs, &tm);
	if (tl->to - tl->from > 180 * 86400 * NS)
		strftime(out, n, "%Y-%m-%d", &tm);	/* long ranges: the year matters */
	else if (tl->to - tl->from > 86400 * NS)
		strftime(out, n, "%m-%d %H:%M", &tm);
	else if (every >= 60 * NS)
		strftime(out, n, "%H:%M", &tm);
	else if (every >= NS)
		strftime(out, n, "%H:%M:%S", &tm);
	else {
		l = strftime(out, n, "%H:%M:%S", &tm);
		snprintf(out + l, n - l, ".%03d", (int)(ns - (int64_t)secs * NS) / 1000000);
	}
}

/* Append s as a CSV column name part: letters, digits and '_' only. */
static void
add_column(struct buf *out, const char *s)
{
	for (; *s; s++)
		buf_addc(out, (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') ? *s : '_');
}

/*
 * Whether values of type and unit read better as cores: CPU time per step
 * (ns) over the step's wall time (ns) is the CPUs busy on average.
 */
static bool
in_cores(const struct timeline *tl, const char *type, const char *unit)
{
	return !tl->gauge && type && unit && strcmp(type, "cpu") == 0 &&
	    strcmp(unit, "nanoseconds") == 0;
}

int
timeline_csv(const struct timeline *tl, const char *type, const char *unit, struct buf *out)
{
	bool cores = in_cores(tl, type, unit);
	char t[64];
	size_t i;

	/* "time,cpu_nanoseconds": the value's sample type and unit, one word for scripts. */
	buf_adds(out, "time,");
	add_column(out, type && type[0] ? type : "value");
	if (unit && unit[0]) {
		buf_addc(out, '_');
		add_column(out, unit);
	}
	if (cores)
		buf_adds(out, ",cpu_cores");
	buf_addc(out, '\n');
	for (i = 0; i < tl->nsteps; i++) {
		fmt_time(tl->from + (int64_t)i * tl->step, tl->step, t, sizeof(t));
		if (tl->gauge && tl->count[i] == 0)
			buf_printf(out, "%s,\n", t);	/* no snapshot: unknown, not zero */
		else if (cores)
			buf_printf(out, "%s,%" PRId64 ",%.4f\n", t, timeline_value(tl, i),
			    (double)timeline_value(tl, i) / (double)tl->step);
		else
			buf_printf(out, "%s,%" PRId64 "\n", t, timeline_value(tl, i));
	}
	return out->data ? 0 : -ENOMEM;
}

/* A y-axis label of v: a value in unit, or cores. */
static void
y_label(struct buf *b, double v, bool cores, const char *unit)
{
	if (cores)
		buf_printf(b, "%.3g cores", v);
	else
		render_value(b, (int64_t)v, unit);
}

#define TW	1000
#define TH	360
#define ML	90	/* left margin: y labels */
#define MR	20
#define MT	40
#define MB	50

int
timeline_svg(const struct timeline *tl, const char *where, const char *type, const char *unit,
    struct buf *out)
{
	bool cores = in_cores(tl, type, unit);
	/* CPU time per step over the step's length: cores */
	double scale = cores ? 1.0 / (double)tl->step : 1.0;
	double pw = TW - ML - MR, ph = TH - MT - MB, bw, x, h, max = 0, v;
	int64_t tick_every, tt;
	size_t i;
	char t[64];
	int k;

	for (i = 0; i < tl->nsteps; i++)
		if ((v = (double)timeline_value(tl, i) * scale) > max)
			max = v;
	/* Round the axis up to 4 ticks of 1, 2, 2.5 or 5 x 10^k: readable labels. */
	if (max > 0) {
		double raw = max / 4, mag = 1, tick;

		while (mag * 10 <= raw)
			mag *= 10;
		while (mag > raw && mag > 1e-6)
			mag /= 10;
		tick = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 2.5 * mag ?
		    2.5 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
		if (cores || tick * 4 < (double)INT64_MAX)
			max = tick * 4;
		if (!cores && max < 4)
			max = 4;	/* whole units */
	}
	bw = pw / (double)tl->nsteps;
	buf_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	    "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	    "xmlns=\"http://www.w3.org/2000/svg\">\n<style type=\"text/css\">"
	    "text { font-family: monospace; font-size: 11px; } "
	    ".title { font-size: 14px; text-anchor: middle; } "
	    "rect.bar:hover { fill: #c33; }</style>\n"
	    "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
	    "<text class=\"title\" x=\"%d\" y=\"22\">", TW, TH, TW, TH, TW, TH, TW / 2);
	buf_add_xml(out, where, strlen(where));
	if (cores)
		buf_adds(out, ": cpu in cores (CPU time per second)");
	else {
		buf_printf(out, ": ");
		buf_add_xml(out, type ? type : "value", strlen(type ? type : "value"));
		buf_adds(out, " (");
		buf_add_xml(out, unit ? unit : "", strlen(unit ? unit : ""));
		buf_printf(out, ") per step, %s", tl->gauge ? "average" : "sum");
	}
	buf_adds(out, "</text>\n");
	/* y axis: 0, max/4, ..., max */
	for (k = 0; k <= 4; k++) {
		double y = MT + ph - ph * k / 4;
		struct buf lab = { 0 };

		y_label(&lab, max * k / 4, cores, unit);
		buf_printf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
		    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", ML, y, TW - MR, y, ML - 6, y + 4);
		buf_add_xml(out, lab.data ? lab.data : "", lab.len);
		buf_adds(out, "</text>\n");
		buf_free(&lab);
	}
	for (i = 0; i < tl->nsteps; i++) {
		struct buf lab = { 0 };

		v = (double)timeline_value(tl, i) * scale;
		h = max > 0 && v > 0 ? ph * v / max : 0;
		x = ML + bw * (double)i;
		fmt_time(tl->from + (int64_t)i * tl->step, tl->step, t, sizeof(t));
		render_value(&lab, timeline_value(tl, i), unit);
		if (cores)
			buf_printf(&lab, ", %.3g cores", v);
		buf_printf(out, "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
		    "height=\"%.2f\" fill=\"#4a7ab5\"><title>%s: ", x + bw * 0.1,
		    MT + ph - h, bw * 0.8, h, t);
		buf_add_xml(out, lab.data ? lab.data : "", lab.len);
		buf_printf(out, " (%u profiles)</title></rect>\n", tl->count[i]);
		buf_free(&lab);
	}
	buf_printf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n"
	    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n",
	    ML, MT + ph, TW - MR, MT + ph, ML, MT, ML, MT + ph);
	/* x axis: ticks on round times (a multiple of the step), six or so */
	tick_every = tl->step;
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i] >= tl->step && steps[i] % tl->step == 0 &&
		    (tl->to - tl->from) / steps[i] <= 7) {
			tick_every = steps[i];
			break;
		}
	if (i == sizeof(steps) / sizeof(steps[0]))	/* past the list: whole steps */
		tick_every = tl->step * (int64_t)((tl->nsteps + 5) / 6);
	for (tt = floor_div(tl->from + tick_every - 1, tick_every) * tick_every; tt <= tl->to;
	    tt += tick_every) {
		x = ML + pw * (double)(tt - tl->from) / (double)(tl->to - tl->from);
		tick_label(tl, tick_every, tt, t, sizeof(t));
		buf_printf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#000\"/>"
		    "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
		    x, MT + ph, x, MT + ph + 5, x, MT + ph + 18, t);
	}
	fmt_time(tl->from, NS, t, sizeof(t));
	buf_printf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">UTC, from %s; step ",
	    TW - MR, TH - 8, t);
	if (tl->step >= NS)
		render_value(out, tl->step, "nanoseconds");
	else
		buf_printf(out, "%" PRId64 " ms", tl->step / 1000000);
	buf_printf(out, "; %s</text>\n</svg>\n", cores ? "cores: CPU time over the step's length" :
	    tl->gauge ? "average per step" : "sum per step");
	return out->data ? 0 : -ENOMEM;
}
