/*
 * targets: the scraper's targets file, Prometheus file_sd-style JSON:
 *
 *   [{"targets": ["10.0.0.5:6060"], "labels": {"service_name": "checkout"},
 *     "interval": "15s", "profiles": ["cpu", "heap"], "scheme": "http",
 *     "path_prefix": "", "timeout": "10s"}]
 *
 * targets_parse() turns it into one target_spec per (target, profile): what
 * to fetch, how often, and which series it goes to. Pure: no I/O besides
 * targets_load() reading the file. Errors name the line and the reason.
 */
#ifndef PROFILEFS_TARGETS_H
#define PROFILEFS_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

#define TARGETS_FILE_MAX	(4u << 20)
#define TARGETS_MAX_SPECS	10000
#define TARGETS_MIN_INTERVAL	(INT64_C(2) * 1000000000)	/* cpu needs interval - 1s >= 1s */
#define TARGETS_DEFAULT_INTERVAL (INT64_C(15) * 1000000000)
#define TARGETS_DEFAULT_TIMEOUT	(INT64_C(10) * 1000000000)

enum scrape_kind {
	SK_CPU,		/* ?seconds=interval-1, stored as is */
	SK_SNAPSHOT,	/* goroutine, threadcreate: stored as is */
	SK_CUMULATIVE,	/* heap, allocs, block, mutex: delta between scrapes */
	SK_DELTA,	/* godeltaprof endpoints: already deltas */
};

struct scrape_profile {
	const char	*name;		/* as written in "profiles" */
	const char	*path;		/* under path_prefix */
	const char	*type;		/* the store type */
	enum scrape_kind kind;
};

/* NULL-terminated (name == NULL) table of known profiles. */
extern const struct scrape_profile targets_profiles[];

struct target_spec {
	char		*key;		/* identity across reloads (everything below) */
	char		*url;		/* full URL, with ?seconds=N for cpu */
	char		*instance;	/* host:port */
	char		*service;
	struct labelset	 labels;	/* series labels, instance included */
	const struct scrape_profile *profile;
	int64_t		 interval;	/* ns */
	int64_t		 timeout;	/* ns, for the whole request (cpu: N s + this) */
};

struct target_list {
	struct target_spec	*v;
	size_t			 n;
};

/* Parse the file's text. *out is filled (free with targets_free()) only on success. */
int	targets_parse(const char *text, size_t len, struct target_list *out, struct buf *err);
/* Read and parse the file at path; -errno with the reason in err. */
int	targets_load(const char *path, struct target_list *out, struct buf *err);
void	targets_free(struct target_list *l);
/* The longest interval or timeout the targets file may give (clock_parse_duration). */
#define TARGETS_MAX_DURATION	(INT64_C(365) * 86400 * 1000000000)

#endif
