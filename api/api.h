/*
 * api: the HTTP API, a second view of the store beside fs/. It takes pushed
 * profiles (profefe's /api/0/profiles, Pyroscope's /ingest) and answers
 * profefe's queries (listings, merges, single profiles). http.c owns the
 * server and the connections, httpparse.c the parameter parsers, and one
 * file per protocol (profefe.c, pyroscope.c) its handlers. The server runs
 * its own threads between http_start() and http_stop(); all it knows of
 * storage is store.h.
 */
#ifndef PROFILEFS_API_H
#define PROFILEFS_API_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

struct http_server;
struct http_opts {
	const char	*listen;	/* HOST:PORT, bound exactly */
	size_t		 max_body;	/* bytes, 0: default 64 MiB */
	unsigned	 max_conns;	/* 0: default */
	size_t		 max_decoded;	/* bytes of a gunzipped profile, 0: the store's limit */
	const char	*token;		/* NULL: no auth; else Bearer token required */
	/*
	 * Without a token, the API (all but /healthz and /metrics) follows the
	 * mount's access rules, checked on the loopback client's socket owner
	 * (peer.c): root and owner always; members of group read (group_set)
	 * and push (group_write); allow_other: every local user reads. A client
	 * on another host is refused, and so is one whose socket has no owner
	 * when its connection starts (closed at once: peer.h). open: everyone
	 * may do everything.
	 */
	bool		 open;
	uid_t		 owner;
	bool		 allow_other, group_set, group_write;
	gid_t		 group;
	/*
	 * Optional: more of /healthz. Appends one line about a dependency to
	 * out; false makes /healthz answer 503 (called on a connection thread).
	 */
	bool		(*health)(void *arg, struct buf *out);
	void		*health_arg;
	/* Where queries read (store.h); NULL: the store's own reader. */
	const struct reader *reader;
	/*
	 * CPU time one request may use (ns; 0: HTTP_QUERY_CPU_DEFAULT, < 0: no
	 * limit); a query past it, or whose client has gone, stops (503, 499).
	 */
	int64_t		 query_cpu_ns;
};
#define HTTP_QUERY_CPU_DEFAULT	(INT64_C(30) * 1000000000)
/* Start serving; -errno with a reason logged (e.g. address in use). */
int	http_start(struct store *st, const struct http_opts *o, struct http_server **out);
void	http_stop(struct http_server *h);

#endif
