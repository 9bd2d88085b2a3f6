/*
 * scrape: the Go pprof scraper, a producer that fills the store by pulling
 * /debug/pprof from the targets a file names (targets.c reads the file,
 * scrape.c schedules the transfers and stores the answers). It runs its own
 * threads between scrape_start() and scrape_stop(); all it knows of storage
 * is store.h.
 */
#ifndef PROFILEFS_SCRAPE_H
#define PROFILEFS_SCRAPE_H

#include "base.h"
#include "store.h"

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

#endif
