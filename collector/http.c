/* http: placeholder until the HTTP API lands; refuses --http clearly. */
#include <errno.h>

#include "collector.h"

int
http_start(struct store *st, const struct http_opts *o, struct http_server **out)
{
	(void)st;
	(void)o;
	*out = NULL;
	log_warnx("--http: the HTTP API is not part of this build yet");
	return -ENOSYS;
}

void
http_stop(struct http_server *h)
{
	(void)h;
}
