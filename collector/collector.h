/*
 * collector: the producers that fill the store besides ingest/: the HTTP API
 * (http.c), the Go pprof scraper (scrape.c) and the eBPF CPU sampler
 * (ebpf.c). Each runs its own threads between *_start() and *_stop(); all
 * they know of storage is store.h.
 */
#ifndef PROFILEFS_COLLECTOR_H
#define PROFILEFS_COLLECTOR_H

#include <stddef.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

/* --- HTTP API (http.c) --- */
struct http_server;
struct http_opts {
	const char	*listen;	/* HOST:PORT, bound exactly */
	size_t		 max_body;	/* bytes, 0: default 64 MiB */
	unsigned	 max_conns;	/* 0: default */
	size_t		 max_decoded;	/* bytes of a gunzipped profile, 0: the store's limit */
	const char	*token;		/* NULL: no auth; else Bearer token required */
	/*
	 * Optional: more of /healthz. Appends one line about a dependency to
	 * out; false makes /healthz answer 503 (called on a connection thread).
	 */
	bool		(*health)(void *arg, struct buf *out);
	void		*health_arg;
};
/* Start serving; -errno with a reason logged (e.g. address in use). */
int	http_start(struct store *st, const struct http_opts *o, struct http_server **out);
void	http_stop(struct http_server *h);

/* --- Go pprof scraper (scrape.c) --- */
struct scraper;
/*
 * Read targets_file (format in targets.h) and start scraping: one scheduler
 * thread running every transfer, a few workers storing. A missing or malformed
 * file at start is refused (-errno, reason logged); later changes are picked
 * up within a second. *out is the caller's, freed by scrape_stop().
 */
int	scrape_start(struct store *st, const char *targets_file, struct scraper **out);
/* Stop the threads, cancel transfers in flight, free s; NULL is a no-op. */
void	scrape_stop(struct scraper *s);
/*
 * Per-target status of scraper s as JSON (MOUNTPOINT/.targets.json), appended
 * to out. -ENOENT when s is NULL (no scraper runs).
 */
int	scrape_status_json(struct scraper *s, struct buf *out);

/* --- eBPF CPU sampler (ebpf.c) --- */
struct ebpf_sampler;
struct ebpf_opts {
	int		 hz;		/* 1..99 */
	unsigned	 flush_secs;	/* profile period, default 10 */
	long		 unwind_mib;	/* unwind table memory: 0 default (64), < 0 none */
};
int	ebpf_start(struct store *st, const struct ebpf_opts *o, struct ebpf_sampler **out);
/*
 * Stops the sampler: its thread gets a few seconds to end (and store the
 * period); one stuck in the kernel is left behind and nothing is freed.
 */
void	ebpf_stop(struct ebpf_sampler *e);
/*
 * Whether ebpf_stop left a thread behind, stuck in the kernel (the sampler's
 * or a memory reader's): the process should then end with _exit, since
 * exit handlers (a leak checker stopping every thread) could wait on it.
 */
bool	ebpf_threads_left(void);
/*
 * For /healthz (any thread): appends one line about the sampler to out;
 * false when it has completed no period in 3 periods (and 20 s): stalled.
 */
bool	ebpf_health(struct ebpf_sampler *e, struct buf *out);

#endif
