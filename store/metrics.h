/*
 * metrics: process-wide counters, gauges and histograms that any module
 * records and the HTTP server renders in Prometheus text format. Series are
 * created on first use; names follow Prometheus conventions (profilefs_*).
 * Thread-safe (protected by mx_lock inside).
 */
#ifndef PROFILEFS_METRICS_H
#define PROFILEFS_METRICS_H

#include "buf.h"

/* labels: Prometheus label text without braces, e.g. source="http",outcome="ok"; may be NULL. */
void	metrics_describe(const char *name, const char *type, const char *help);
void	metrics_add(const char *name, const char *labels, double v);
void	metrics_set(const char *name, const char *labels, double v);
/* A histogram observation in seconds (fixed buckets from 1 ms to 60 s). */
void	metrics_observe(const char *name, const char *labels, double seconds);
/* Drop a series (a scrape target that was removed), so it is not rendered stale. */
void	metrics_remove(const char *name, const char *labels);
/* Append every series in the text exposition format. */
int	metrics_render(struct buf *out);

#endif
