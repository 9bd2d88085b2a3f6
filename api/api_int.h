/*
 * api_int: what the HTTP server (http.c) shares with its handler modules,
 * profefe.c (/api/0/...), pyroscope.c (/ingest) and otlp.c
 * (/v1development/profiles). http.c owns the
 * connection, the request body and the reply; a handler reads parameters,
 * does its work against the store and ends in exactly one http_reply*() call.
 * Handlers run on the connection's own thread (libmicrohttpd's
 * thread-per-connection mode), so they may block on the store.
 */
#ifndef PROFILEFS_API_INT_H
#define PROFILEFS_API_INT_H

#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api.h"
#include "base.h"
#include "pprof.h"
#include "store.h"

struct MHD_Connection;
struct http_req;

typedef void (*http_handler_fn)(struct http_req *r);

/* One request, from its headers to the completion of its reply. */
struct http_req {
	struct http_server	*srv;
	struct MHD_Connection	*conn;
	const struct http_route	*route;
	const char		*method;	/* libmicrohttpd's, valid during the request */
	const char		*path;		/* unescaped, without query, trailing '/' dropped */
	char			*path_copy;	/* owns path */
	struct buf		 body;		/* the raw request body */
	uint64_t		 body_seen;	/* bytes received, kept or not */
	bool			 too_large;	/* the body passed max_body: discarded */
	bool			 replied;
	bool			 fatal;		/* no reply could be made: drop the connection */
	bool			 stored;	/* reached http_store() (counted there) */
	bool			 doomed;	/* its connection is over its address's share */
	unsigned		 status;	/* of the queued reply, for metrics */
	/*
	 * A refusal made from the headers of a request whose small body is
	 * still to come: sent once the body is read (and discarded), so that
	 * the client gets it rather than a reset connection. See http_reply().
	 */
	bool			 hold;		/* req_begin() runs and may hold */
	unsigned		 held_status;	/* 0: nothing held */
	const char		*held_type;
	struct buf		 held;
	int64_t			 start_ns;
	/* The handler's deadline and its client's presence: struct query.cancel. */
	struct cancel		 cancel;
	/* Set by the handler: connect.c puts a 200 reply's message there in
	 * protobuf, whatever the reply's encoding, and sets captured
	 * (querier.c's reply cache). */
	struct buf		*capture;
	bool			 captured;
	unsigned		 nhdrs;		/* extra reply headers, see http_add_header() */
	struct {
		char	 name[48];
		char	 value[208];
	}			 hdrs[4];
};

struct http_server {
	struct store		*st;		/* where pushes are stored */
	const struct reader	*rd;		/* where queries read (http_opts.reader) */
	struct qcache		*qcache;	/* the query API's replies (qcache.h); may be NULL */
	struct MHD_Daemon	*mhd;
	size_t			 max_body;
	size_t			 max_decoded;	/* 0: the store's own limit only */
	int64_t			 query_cpu_ns;	/* a request's CPU time, 0: no limit */
	bool		(*health)(void *arg, struct buf *out);	/* optional, see http_opts */
	void		*health_arg;
	unsigned		 max_conns;
	char			*token;		/* NULL: no auth */
	bool			 open;		/* no access rule without a token */
	uid_t			 owner;		/* the mount's rules, see http_opts */
	bool			 allow_other, group_set, group_write;
	gid_t			 group;
	char			 addr[128];	/* as bound, for logs */
	_Atomic unsigned	 nconns;	/* open connections */
	/* The header deadline (http.c): connections still sending headers. */
	pthread_mutex_t		 conn_lock;
	pthread_cond_t		 conn_cond;
	struct http_conn	*conns;		/* protected by conn_lock */
	struct http_addr	*addrs;		/* connections per client address, ditto */
	size_t			 naddrs, addrs_cap;
	unsigned		 ntracked;	/* connections in conns, ditto */
	pthread_t		 reaper;
	bool			 reaper_on, stopping;	/* protected by conn_lock */
};

/* --- replies (http.c): each returns nothing; failures are logged --- */

/* Reply with body (ownership of its storage taken; may be NULL for none). */
void	http_reply(struct http_req *r, unsigned status, const char *content_type,
	    struct buf *body, const char *disposition);
/*
 * {"code":200,"body":<body>}, profefe's envelope. The reference to body is
 * taken (json_decref'd here); NULL, from a build that ran out of memory,
 * gives a 500.
 */
void	http_reply_ok(struct http_req *r, json_t *body);
/* {"code":N,"error":"..."}: profefe's error envelope; fmt NULL gives a generic message. */
void	http_reply_error(struct http_req *r, unsigned status, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * The reply for a store error: -EINVAL 400, -EFBIG 413, -ENOENT 404, the
 * memory budget (-ENOMEM, -EAGAIN) 503, else 500. what and err may be NULL.
 */
void	http_reply_store_error(struct http_req *r, int rc, const char *what,
	    const struct buf *err);

/*
 * The message err holds, or fallback when it holds none: a failure's reason
 * is appended to a buffer the memory budget may refuse, leaving err->data
 * NULL. For every reply that quotes err.
 */
static inline const char *
http_why(const struct buf *err, const char *fallback)
{
	return err && err->data && err->data[0] ? err->data : fallback ? fallback : "";
}

/* Add a header to the coming reply (copied; at most 4, longer values cut). */
void	http_add_header(struct http_req *r, const char *name, const char *value);
/* A query parameter (unescaped, '+' read as a space) or a header; NULL if absent. */
const char	*http_arg(struct http_req *r, const char *name);
const char	*http_header(struct http_req *r, const char *name);

/* Store one pushed profile, with metrics under source; the result as store_put(). */
int	http_store(struct http_req *r, const char *source, const struct store_input *in,
	    const void *data, size_t len, struct store_ref *ref, struct buf *err);

/* --- handlers --- */
void	profefe_profiles(struct http_req *r);	/* GET list, POST create */
void	profefe_merge(struct http_req *r);
void	profefe_get(struct http_req *r);	/* /api/0/profiles/<id>[+<id>...] */
void	profefe_services(struct http_req *r);
/* httpdelete.c: DELETE /api/0/profiles/<id>, DELETE /api/0/services/<service>[?type=&labels=] */
void	http_delete_profile(struct http_req *r);
void	http_delete_service(struct http_req *r);
void	profefe_version(struct http_req *r);
void	pyroscope_ingest(struct http_req *r);
void	otlp_profiles(struct http_req *r);	/* POST /v1development/profiles */
/* /v1/profiles: a 404 whose Status says profiles are at /v1development/profiles. */
void	otlp_elsewhere(struct http_req *r);

/* --- otlp.c: OTLP profiles, decoded apart from HTTP (the fuzz harness) --- */

/* What one OTLP request stores: n profiles and what store_put_profiles() needs. */
struct otlp_batch {
	struct profile		**p;
	struct store_input	 *in;		/* in[i].labels and .service point below */
	size_t			  n;
	char			**services;	/* per group of the request */
	struct labelset		 *ls;
	size_t			  ngroups;
};
/*
 * Decode an ExportProfilesServiceRequest (protobuf, or its JSON form when
 * json) of data[0..len), already gunzipped, into *ob, which the caller frees
 * with otlp_batch_free() (also after a failure). -EINVAL with the reason in
 * err for a malformed request or one of another release's layout, -EFBIG for
 * one over the limits, -ENOMEM.
 */
int	otlp_decode(const void *data, size_t len, bool json, struct otlp_batch *ob,
	    struct buf *err);
void	otlp_batch_free(struct otlp_batch *ob);

void	querier_handle(struct http_req *r);	/* /querier.v1.QuerierService/<Method> */

/* --- connect.c: the Connect protocol's unary calls --- */

/* The Connect error code of an HTTP status ("invalid_argument" for 400, ...). */
const char	*connect_code(unsigned status);

#endif
