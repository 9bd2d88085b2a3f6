/* scrape: placeholder until the scraper lands; refuses --scrape clearly. */
#include <errno.h>

#include "collector.h"

int
scrape_start(struct store *st, const char *targets_file, struct scraper **out)
{
	(void)st;
	(void)targets_file;
	*out = NULL;
	log_warnx("--scrape: the Go pprof scraper is not part of this build yet");
	return -ENOSYS;
}

void
scrape_stop(struct scraper *s)
{
	(void)s;
}
