/*
 * metrics: a small registry. Series are found through a hash of (name,
 * labels), so per-target series of the scraper (thousands) stay cheap;
 * recording takes mx_lock for a few instructions.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static const double buckets[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60
};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

enum mkind { M_COUNTER, M_GAUGE, M_HISTOGRAM };

struct mseries {
	struct mseries	*next;
	struct mseries	*hnext;			/* hash chain */
	char		*name;
	char		*labels;
	enum mkind	 kind;
	double		 value;			/* counter, gauge; histogram sum */
	unsigned long	 counts[NBUCKETS + 1];	/* histogram; last is +Inf */
};

struct mdesc {
	struct mdesc	*next;
	char		*name, *type, *help;
};

static pthread_mutex_t mx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mseries *mx_series;	/* protected by mx_lock */
#define MX_HASH		4096
static struct mseries *mx_hash[MX_HASH];	/* protected by mx_lock */

static unsigned
mx_hashof(const char *name, const char *labels)
{
	unsigned h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (; *labels; labels++)
		h = (h ^ (unsigned char)*labels) * 16777619u;
	return h % MX_HASH;
}
static struct mdesc *mx_descs;		/* protected by mx_lock */

void
metrics_describe(const char *name, const char *type, const char *help)
{
	struct mdesc *d;

	pthread_mutex_lock(&mx_lock);
	for (d = mx_descs; d; d = d->next)
		if (strcmp(d->name, name) == 0)
			break;
	if (d == NULL && (d = calloc(1, sizeof(*d))) != NULL) {
		d->name = strdup(name);
		d->type = strdup(type);
		d->help = strdup(help);
		d->next = mx_descs;
		mx_descs = d;
	}
	pthread_mutex_unlock(&mx_lock);
}

/* Find or create. Caller holds mx_lock. */
static struct mseries *
get(const char *name, const char *labels, enum mkind kind)
{
	struct mseries *s, **pp;
	unsigned h;

	if (labels == NULL)
		labels = "";
	h = mx_hashof(name, labels);
	for (s = mx_hash[h]; s; s = s->hnext)
		if (strcmp(s->name, name) == 0 && strcmp(s->labels, labels) == 0)
			return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->name = strdup(name);
	s->labels = strdup(labels);
	if (s->name == NULL || s->labels == NULL) {
		free(s->name);
		free(s->labels);
		free(s);
		return NULL;
	}
	s->kind = kind;
	/* Keep series of one name together, in creation order. */
	for (pp = &mx_series; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			break;
	while (*pp && strcmp((*pp)->name, name) == 0)
		pp = &(*pp)->next;
	s->next = *pp;
	*pp = s;
	s->hnext = mx_hash[h];
	mx_hash[h] = s;
	return s;
}

void
metrics_add(const char *name, const char *labels, double v)
{
	struct mseries *s;

	pthread_mutex_lock(&mx_lock);
	if ((s = get(name, labels, M_COUNTER)) != NULL)
		s->value += v;
	pthread_mutex_unlock(&mx_lock);
}

void
metrics_set(const char *name, const char *labels, double v)
{
	struct mseries *s;

	pthread_mutex_lock(&mx_lock);
	if ((s = get(name, labels, M_GAUGE)) != NULL)
		s->value = v;
	pthread_mutex_unlock(&mx_lock);
}

void
metrics_observe(const char *name, const char *labels, double seconds)
{
	struct mseries *s;
	size_t i;

	pthread_mutex_lock(&mx_lock);
	if ((s = get(name, labels, M_HISTOGRAM)) != NULL) {
		s->value += seconds;
		for (i = 0; i < NBUCKETS && seconds > buckets[i]; i++)
			;
		s->counts[i]++;
	}
	pthread_mutex_unlock(&mx_lock);
}

void
metrics_remove(const char *name, const char *labels)
{
	struct mseries *s, **pp;
	unsigned h;

	if (labels == NULL)
		labels = "";
	h = mx_hashof(name, labels);
	pthread_mutex_lock(&mx_lock);
	for (pp = &mx_hash[h]; (s = *pp) != NULL; pp = &s->hnext)
		if (strcmp(s->name, name) == 0 && strcmp(s->labels, labels) == 0)
			break;
	if (s) {
		*pp = s->hnext;
		for (pp = &mx_series; *pp != s; pp = &(*pp)->next)
			;
		*pp = s->next;
		free(s->name);
		free(s->labels);
		free(s);
	}
	pthread_mutex_unlock(&mx_lock);
}

static void
put_labels(struct buf *b, const char *labels, const char *extra)
{
	if (!labels[0] && !extra)
		return;
	buf_addc(b, '{');
	buf_adds(b, labels);
	if (extra) {
		if (labels[0])
			buf_addc(b, ',');
		buf_adds(b, extra);
	}
	buf_addc(b, '}');
}

int
metrics_render(struct buf *b)
{
	struct mseries *s;
	struct mdesc *d;
	const char *last = "";
	char le[48];
	unsigned long cum;
	size_t i;

	pthread_mutex_lock(&mx_lock);
	for (s = mx_series; s; s = s->next) {
		if (strcmp(s->name, last) != 0) {
			for (d = mx_descs; d; d = d->next)
				if (strcmp(d->name, s->name) == 0)
					break;
			if (d)
				buf_printf(b, "# HELP %s %s\n", d->name, d->help);
			/*
			 * The described type wins: a counter kept elsewhere
			 * and copied in with metrics_set() is still a counter.
			 */
			buf_printf(b, "# TYPE %s %s\n", s->name, d ? d->type :
			    s->kind == M_COUNTER ? "counter" :
			    s->kind == M_GAUGE ? "gauge" : "histogram");
			last = s->name;
		}
		if (s->kind != M_HISTOGRAM) {
			buf_adds(b, s->name);
			put_labels(b, s->labels, NULL);
			buf_printf(b, " %.17g\n", s->value);
			continue;
		}
		cum = 0;
		for (i = 0; i <= NBUCKETS; i++) {
			cum += s->counts[i];
			if (i < NBUCKETS)
				snprintf(le, sizeof(le), "le=\"%g\"", buckets[i]);
			else
				snprintf(le, sizeof(le), "le=\"+Inf\"");
			buf_printf(b, "%s_bucket", s->name);
			put_labels(b, s->labels, le);
			buf_printf(b, " %lu\n", cum);
		}
		buf_printf(b, "%s_sum", s->name);
		put_labels(b, s->labels, NULL);
		buf_printf(b, " %.17g\n%s_count", s->value, s->name);
		put_labels(b, s->labels, NULL);
		buf_printf(b, " %lu\n", cum);
	}
	pthread_mutex_unlock(&mx_lock);
	return b->data ? 0 : buf_reserve(b, 0);
}
