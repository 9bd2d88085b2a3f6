/*
 * http: the HTTP API server (docs/http-api.md) on libmicrohttpd, which
 * does all of the HTTP parsing. This file owns the listening socket, the
 * request lifecycle, routing, the limits (body size, connections), the
 * optional bearer token, the reply envelope and the metrics of requests; the
 * endpoints themselves live in profefe.c and pyroscope.c.
 *
 * Threads: libmicrohttpd runs one thread per connection, so a handler may
 * block in store_put() (a synced write) while the others go on; concurrent
 * writers are group-committed by RocksDB. (A pool of 2 or 4 epoll threads,
 * measured with scripts/bench-http.sh, stored ~1,850 profiles/s with a p99 of
 * 67 ms against ~3,000/s and 25 ms here: each synced put holds its thread.)
 * The connection count is kept in nconns (atomic); everything else of a
 * request belongs to its thread.
 *
 * Connections: at most PER_IP from one address, and once half of max_conns
 * are open, an address gets a fair share: max_conns divided by one more
 * than the addresses holding connections (at least SHARE_MIN); so all shares
 * together stay under max_conns. A new connection past its address's
 * share is doomed: answered 503 if it sends a request, closed by the reaper
 * within a second (not at once, which would only make a client that
 * reconnects at once spin the accept loop), and not counted against the
 * global cap. So clients holding sockets from many addresses cannot starve
 * a new one (a probe of /healthz, a push): the newcomer's address holds
 * nothing, so it is within its share, and when every slot is taken the
 * address holding the most loses a connection still sending headers.
 * libmicrohttpd's own limit is set far above ours, so it never refuses
 * before the shares are applied.
 * Slowloris: a connection must finish its request headers within
 * HEADER_DEADLINE_SECS of connecting (KEEPALIVE_DEADLINE_SECS after its
 * previous request ended), and within HEADER_DEADLINE_BUSY_SECS while more
 * than three quarters of max_conns are open, however slowly it dribbles
 * bytes; a reaper thread shuts down the socket of one that does not
 * (libmicrohttpd's own timeout is reset by every byte). Time spent on a body
 * is bounded by the idle timeout.
 *
 * Memory: bodies grow within the process's memory budget (base/budget.c);
 * a body or a decode the budget refuses is answered 503 with Retry-After.
 *
 * Body limits: a Content-Length over max_body is refused with 413 before any
 * of the body is read; a chunked body that grows past it is discarded as it
 * arrives and refused at its end (libmicrohttpd queues no reply earlier), and
 * the connection is dropped if it goes on far past the limit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api_int.h"
#include "httpparse.h"
#include "peer.h"
#include "qcache.h"
#include "base.h"
#include "pprof.h"
#include "store.h"

#define DEFAULT_MAX_BODY	(64u << 20)
#define DEFAULT_MAX_CONNS	256
/* Connections past max_conns that are still accepted, to be told 503. */
#define CONN_SLACK		16
#define IDLE_TIMEOUT_SECS	60
#define PER_IP			32
#define HEADER_DEADLINE_SECS	10
#define HEADER_DEADLINE_BUSY_SECS 3
#define SHARE_MIN		2
#define KEEPALIVE_DEADLINE_SECS	60
/* The query API's reply cache (qcache.h): a Grafana dashboard's panels, a few times over. */
#define QCACHE_ENTRIES		64
#define QCACHE_BYTES		(64u << 20)

/* A connection tracked for the header deadline (its socket_context). */
struct http_conn {
	struct http_conn	*next;
	int			 fd;
	int64_t			 since;		/* mono ns: connected, or its last request ended */
	bool			 in_request;	/* headers are in: no deadline */
	bool			 reused;	/* a request ended on it before */
	bool			 reaped;
	bool			 doomed;	/* over its address's share */
	struct sockaddr_storage	 peer;		/* its client's address (port 0) */
	/*
	 * The owner of the client's socket, looked up once as the connection
	 * starts (peer_uid(): 0, or why it is unknown), when the access rules
	 * apply. Set before the connection's first request, then only read.
	 */
	int			 peer_rc;
	uid_t			 peer_uid;
};

/* Connections open from one client address (http_server.addrs). */
struct http_addr {
	struct sockaddr_storage	 addr;		/* port 0 */
	unsigned		 n;
};
/* Bytes of an oversized chunked body read (and discarded) to still answer 413. */
#define DISCARD_MAX		(64u << 20)
/* The largest body read (and discarded) to send a refusal made from the headers. */
#define HOLD_MAX		(64u << 10)

enum { M_GET = 1, M_POST = 2, M_DELETE = 4 };

struct http_route {
	const char	*path;
	bool		 prefix;	/* path is a prefix (ends in '/') */
	unsigned	 methods;	/* M_GET also allows HEAD */
	const char	*allow;		/* the Allow header of a 405 */
	const char	*label;		/* handler="..." in metrics */
	const char	*source;	/* ingest source of POSTs, for metrics */
	bool		 open;		/* served without the token */
	http_handler_fn	 fn;
};

/* The Connect queries: POSTs that only read, errors in Connect's form. */
#define ROUTE_IS_CONNECT(rt)	((rt) != NULL && (rt)->fn == querier_handle)

static void	handle_metrics(struct http_req *r);
static void	handle_healthz(struct http_req *r);
static bool	conn_mark(struct http_server *h, struct MHD_Connection *conn, bool begin);

/* Exact paths before the prefix that contains them. */
static const struct http_route routes[] = {
	{ "/api/0/profiles/merge", false, M_GET, "GET, HEAD", "/api/0/profiles/merge", NULL,
	    false, profefe_merge },
	{ "/api/0/profiles", false, M_GET | M_POST, "GET, HEAD, POST", "/api/0/profiles", "http",
	    false, profefe_profiles },
	{ "/api/0/profiles/", true, M_GET | M_DELETE, "GET, HEAD, DELETE", "/api/0/profiles/{id}",
	    NULL, false, profefe_get },
	{ "/api/0/services", false, M_GET, "GET, HEAD", "/api/0/services", NULL,
	    false, profefe_services },
	{ "/api/0/services/", true, M_DELETE, "DELETE", "/api/0/services/{service}", NULL,
	    false, http_delete_service },
	{ "/api/0/version", false, M_GET, "GET, HEAD", "/api/0/version", NULL,
	    false, profefe_version },
	{ "/ingest", false, M_POST, "POST", "/ingest", "pyroscope", false, pyroscope_ingest },
	{ "/v1development/profiles", false, M_POST, "POST", "/v1development/profiles", "otlp",
	    false, otlp_profiles },
	{ "/querier.v1.QuerierService/", true, M_POST, "POST", "/querier.v1.QuerierService",
	    NULL, false, querier_handle },
	{ "/metrics", false, M_GET, "GET, HEAD", "/metrics", NULL, false, handle_metrics },
	{ "/healthz", false, M_GET, "GET, HEAD", "/healthz", NULL, true, handle_healthz },
};

/* --- replies ------------------------------------------------------------ */

void
http_add_header(struct http_req *r, const char *name, const char *value)
{
	if (r->nhdrs >= sizeof(r->hdrs) / sizeof(r->hdrs[0]))
		return;
	snprintf(r->hdrs[r->nhdrs].name, sizeof(r->hdrs[0].name), "%s", name);
	snprintf(r->hdrs[r->nhdrs].value, sizeof(r->hdrs[0].value), "%s", value);
	r->nhdrs++;
}

void
http_reply(struct http_req *r, unsigned status, const char *content_type, struct buf *body,
    const char *disposition)
{
	struct MHD_Response *resp;
	char *data = NULL;
	size_t len = 0;
	unsigned i;
	int e;

	if (body && (e = buf_error(body)) < 0 && !r->replied) {
		/* The body could not be built whole: never send part of it as a success. */
		buf_free(body);
		http_reply_error(r, 500, "the reply could not be built: %s", strerror(-e));
		return;
	}
	if (r->replied) {
		log_warnx("http: second reply to %s %s dropped", r->method, r->path);
		if (body)
			buf_free(body);
		return;
	}
	r->replied = true;
	r->status = status;
	if (r->hold && status != 503) {
		/* Refused from the headers: sent at the body's end (on_request). */
		r->held_status = status;
		r->held_type = content_type;
		if (body) {
			r->held = *body;
			memset(body, 0, sizeof(*body));
		}
		return;
	}
	if (body && body->len)
		data = buf_steal(body, &len);
	else if (body)
		buf_free(body);
	if (data)
		resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	else
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (resp == NULL) {
		free(data);
		r->fatal = true;
		return;
	}
	if (content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (disposition)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
	for (i = 0; i < r->nhdrs; i++)
		MHD_add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
	if (MHD_queue_response(r->conn, status, resp) != MHD_YES) {
		log_warnx("http: cannot queue the %u reply to %s %s", status, r->method, r->path);
		r->fatal = true;
	}
	MHD_destroy_response(resp);
}

void
http_reply_ok(struct http_req *r, json_t *body)
{
	json_t *doc = body ? json_pack("{s:i,s:o}", "code", 200, "body", body) : NULL;
	struct buf b = { 0 };

	if (jsonw_dump(&b, doc, JSON_COMPACT) < 0 || buf_addc(&b, '\n') < 0) {
		json_decref(doc);
		buf_free(&b);
		http_reply_error(r, 500, "out of memory");
		return;
	}
	json_decref(doc);
	http_reply(r, 200, "application/json", &b, NULL);
}

void
http_reply_error(struct http_req *r, unsigned status, const char *fmt, ...)
{
	struct buf msg = { 0 }, b = { 0 };
	json_t *doc;
	va_list ap;

	if (fmt == NULL)
		fmt = status >= 500 ? "the request failed on the server" : "the request was refused";
	va_start(ap, fmt);
	buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	/* The message may quote a request's bytes: jsonw_strn() repairs them. */
	if (ROUTE_IS_CONNECT(r->route))
		doc = json_pack("{s:s,s:o}", "code", connect_code(status), "message",
		    jsonw_strn(msg.data ? msg.data : "", msg.len));
	else
		doc = json_pack("{s:i,s:o}", "code", (int)status, "error",
		    jsonw_strn(msg.data ? msg.data : "", msg.len));
	if (jsonw_dump(&b, doc, JSON_COMPACT) < 0 || buf_addc(&b, '\n') < 0) {
		/* Out of memory: the status alone still tells the client. */
		buf_free(&b);
	}
	json_decref(doc);
	if (status >= 500)
		log_warnx("http: %s %s: %u %s", r->method, r->path, status, msg.data ? msg.data : "");
	else
		log_debug("http: %s %s: %u %s", r->method, r->path, status, msg.data ? msg.data : "");
	buf_free(&msg);
	http_reply(r, status, b.data ? "application/json" : NULL, &b, NULL);
}

void
http_reply_store_error(struct http_req *r, int rc, const char *what, const struct buf *err)
{
	const char *why = http_why(err, rc < 0 ? strerror(-rc) : "unknown error");

	if (what == NULL)
		what = "the request failed";
	/* The request's cancel (its CPU time used up, its client gone) stopped the work. */
	if (rc < 0 && rc == r->cancel.why) {
		if (rc == -ETIMEDOUT)
			http_reply_error(r, 503, "%s: the request used more than %.3g s of CPU "
			    "(--query-cpu-limit); narrow its range or selector", what,
			    (double)r->srv->query_cpu_ns / 1e9);
		else	/* nobody reads it: for the logs and metrics (nginx's 499) */
			http_reply_error(r, 499, "%s: the client closed the connection", what);
		return;
	}
	switch (rc) {
	case -EINVAL:
		http_reply_error(r, 400, "%s: %s", what, why);
		break;
	case -EFBIG:
		http_reply_error(r, 413, "%s: %s", what, why);
		break;
	case -ENOENT:
		http_reply_error(r, 404, "%s: %s", what, why);
		break;
	case -ENOMEM:
	case -EAGAIN:
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		http_reply_error(r, 503, "%s: the server's memory budget (%zu MiB) is in use; "
		    "try again", what, budget_limit() >> 20);
		break;
	case -EIO:	/* storage that cannot answer now (a ClickHouse shard down) */
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "5");
		http_reply_error(r, 503, "%s: %s", what, why);
		break;
	case -ENOSPC:	/* 507 Insufficient Storage: retry once space returns */
		http_reply_error(r, 507, "%s: %s", what, why);
		break;
	default:
		http_reply_error(r, 500, "%s: %s", what, why);
		break;
	}
}

const char *
http_arg(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *
http_header(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* --- storing, with metrics ---------------------------------------------- */

/* The outcome label of a store_put() result (<= 0) or an HTTP status (> 0). */
static const char *
outcome_of(int rc_or_status)
{
	switch (rc_or_status) {
	case 0:
	case 200:
		return "ok";
	case 1:		/* no reply was sent: the connection broke or was dropped */
		return "aborted";
	case -EINVAL:
	case 400:
		return "invalid";
	case -EFBIG:
	case 413:
		return "too_large";
	case 415:
		return "unsupported";
	case 401:
		return "unauthorized";
	default:
		return "error";
	}
}

static void
count_ingest(const char *source, const char *outcome)
{
	char l[96];

	snprintf(l, sizeof(l), "source=\"%s\",outcome=\"%s\"", source, outcome);
	metrics_add(METRIC_INGESTED_PROFILES, l, 1);
}

int
http_store(struct http_req *r, const char *source, const struct store_input *in,
    const void *data, size_t len, struct store_ref *ref, struct buf *err)
{
	struct store_input sin = *in;

	/* The store counts what it is given (store.h). */
	r->stored = true;
	sin.source = source;
	sin.max_decoded = r->srv->max_decoded;
	return store_put(r->srv->st, &sin, data, len, ref, err);
}

/* --- /metrics and /healthz ---------------------------------------------- */

static void
handle_metrics(struct http_req *r)
{
	struct store_stats s;
	struct buf b = { 0 };
	size_t used, peak;
	uint64_t refused;

	store_get_stats(r->srv->st, &s);
	metrics_set(METRIC_STORE_PROFILES, NULL, (double)s.profiles);
	metrics_set(METRIC_STORE_REJECTED, NULL, (double)s.rejected);
	metrics_set(METRIC_STORE_BYTES, NULL, (double)s.bytes);
	metrics_set(METRIC_STORE_SERIES, NULL, (double)s.series);
	metrics_set(METRIC_STORE_DISK_BYTES, NULL, (double)s.disk_bytes);
	metrics_set(METRIC_STORE_WINDOWS_PENDING, NULL, (double)s.windows_pending);
	metrics_set(METRIC_SPAN_IDS_CUT, NULL, (double)s.span_ids_cut);
	metrics_set(METRIC_SPAN_IDS_REFUSED, NULL, (double)s.span_ids_refused);
	metrics_set("profilefs_http_connections", NULL, (double)atomic_load(&r->srv->nconns));
	budget_stats(&used, &peak, &refused);
	metrics_set(METRIC_BUDGET_BYTES, "kind=\"used\"", (double)used);
	metrics_set(METRIC_BUDGET_BYTES, "kind=\"peak\"", (double)peak);
	metrics_set(METRIC_BUDGET_BYTES, "kind=\"limit\"", (double)budget_limit());
	metrics_set(METRIC_BUDGET_REFUSALS, NULL, (double)refused);
	if (metrics_render(&b) < 0) {
		buf_free(&b);
		http_reply_error(r, 500, "out of memory");
		return;
	}
	http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", &b, NULL);
}

static void
handle_healthz(struct http_req *r)
{
	struct buf b = { 0 };
	bool up = true;

	buf_adds(&b, "ok\n");
	if (r->srv->health) {
		up = r->srv->health(r->srv->health_arg, &b);
		buf_addc(&b, '\n');
	}
	http_reply(r, up ? 200 : 503, "text/plain; charset=utf-8", &b, NULL);
}

static void
describe_metrics(void)
{
	metrics_describe("profilefs_http_requests_total", "counter",
	    "HTTP requests answered, by handler, method and status code.");
	metrics_describe("profilefs_http_request_duration_seconds", "histogram",
	    "Time from a request's headers to its reply being sent, by handler.");
	metrics_describe("profilefs_http_connections", "gauge", "Open HTTP connections.");
	metrics_describe("profilefs_http_header_timeouts_total", "counter",
	    "Connections closed for not sending complete request headers in time.");
	metrics_describe("profilefs_http_share_refusals_total", "counter",
	    "Connections refused (503, closed within a second) or closed to make room: "
	    "their address held more than its fair share.");
	metrics_describe("profilefs_http_denied_total", "counter",
	    "Requests refused by the access rules (a local user the mount does not let in).");
	metrics_describe(METRIC_BUDGET_BYTES, "gauge",
	    "The memory budget for buffers, decoding and rendering (used, peak, limit).");
	metrics_describe(METRIC_BUDGET_REFUSALS, "counter",
	    "Reservations the memory budget refused (answered EAGAIN or 503).");
	metrics_describe(METRIC_INGESTED_PROFILES, "counter",
	    "Profiles pushed, by source (http: profefe API, pyroscope: /ingest, ingest: "
	    "the ingest directory) and outcome.");
	metrics_describe(METRIC_INGESTED_BYTES, "counter",
	    "Bytes of the profiles stored, by source.");
	metrics_describe(METRIC_INGEST_DURATION, "histogram",
	    "Time to validate and durably store one pushed profile, by source.");
	metrics_describe(METRIC_MERGE_DURATION, "histogram",
	    "Time to merge and encode the answer of a merge query, by source.");
	metrics_describe(METRIC_STORE_PROFILES, "counter",
	    "Profiles stored, by every source (counts from 0 when the daemon starts).");
	metrics_describe(METRIC_STORE_REJECTED, "counter",
	    "Profiles refused by the store (counts from 0 when the daemon starts).");
	metrics_describe(METRIC_STORE_BYTES, "counter",
	    "Bytes of profiles stored (counts from 0 when the daemon starts).");
	metrics_describe(METRIC_STORE_SERIES, "gauge",
	    "Series (service, type, label set) in the store.");
	metrics_describe(METRIC_FUSE_REQUESTS, "counter",
	    "Filesystem requests, by operation (op: lookup is getattr; readdir, open, read, "
	    "create, write, release, ...).");
	metrics_describe(METRIC_FUSE_ERRORS, "counter",
	    "Filesystem requests that failed other than with ENOENT, by operation.");
	metrics_describe(METRIC_STORE_WINDOWS_PENDING, "gauge",
	    "Series-days whose pre-aggregated windows the last compaction pass rebuilt (0: caught up).");
	metrics_describe(METRIC_SPAN_IDS_CUT, "counter",
	    "Spans stored profiles could not tag (past the 65,536 a profile may tag): their "
	    "samples kept untagged (counts from 0 when the daemon starts).");
	metrics_describe(METRIC_SPAN_IDS_REFUSED, "counter",
	    "Samples of stored profiles whose span or trace id was not accepted: kept untagged "
	    "(counts from 0 when the daemon starts).");
	metrics_describe(METRIC_STORE_DISK_BYTES, "gauge",
	    "Size of the database on disk (live SST files and WAL), as RocksDB estimates it.");
}

/* --- the request lifecycle ---------------------------------------------- */

static const struct http_route *
route_find(const char *path)
{
	size_t i, n;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		n = strlen(routes[i].path);
		if (routes[i].prefix ? strncmp(path, routes[i].path, n) == 0 && path[n] != '\0' :
		    strcmp(path, routes[i].path) == 0)
			return &routes[i];
	}
	return NULL;
}

/* Whether the m bytes at s are the token: constant time in the token's content. */
static bool
token_equal(const char *s, size_t m, const char *token)
{
	size_t i, n = strlen(token);
	unsigned char d = 0;

	for (i = 0; i < n; i++)
		d |= (unsigned char)(token[i] ^ (i < m ? s[i] : 0));
	return d == 0 && m == n;
}

/*
 * Whether an Authorization header carries the token: "Bearer TOKEN", or
 * "Basic base64(USER:TOKEN)" with any user name, since some clients can send
 * no header of their own but put a URL's user:password in Basic auth (go tool
 * pprof, Go's net/http; Grafana data sources offer Basic auth too).
 */
static bool
token_ok(const char *auth, const char *token)
{
	struct buf b = { 0 };
	const char *colon;
	size_t m;
	bool ok = false;

	if (auth == NULL)
		return false;
	if (strncasecmp(auth, "Bearer ", 7) == 0) {
		auth += 7;
		while (*auth == ' ')
			auth++;
		m = strlen(auth);
		while (m > 0 && auth[m - 1] == ' ')
			m--;
		return token_equal(auth, m, token);
	}
	if (strncasecmp(auth, "Basic ", 6) != 0)
		return false;
	auth += 6;
	while (*auth == ' ')
		auth++;
	m = strlen(auth);
	while (m > 0 && auth[m - 1] == ' ')
		m--;
	if (m > 4096 || buf_add_base64_decoded(&b, auth, m) < 0 || b.data == NULL)
		goto out;
	if ((colon = memchr(b.data, ':', b.len)) == NULL)
		goto out;
	ok = token_equal(colon + 1, b.len - (size_t)(colon + 1 - b.data), token);
out:
	if (b.data)
		explicit_bzero(b.data, b.cap);
	buf_free(&b);
	return ok;
}

/*
 * Without a token, whether the client may use r's route: the mount's rules
 * applied to the owner of the loopback socket it connects from, as looked up
 * when its connection started (on_connection()); a client whose owner is
 * unknown is refused, with why in *why_rc. /healthz and /metrics are open to
 * every local client (probes, Prometheus).
 */
static bool
peer_may(struct http_req *r, bool write, uid_t *who, int *why_rc)
{
	struct http_server *h = r->srv;
	const union MHD_ConnectionInfo *ci;
	const struct http_conn *c;
	uid_t uid;

	*who = (uid_t)-1;
	*why_rc = 0;
	if (h->open || r->route->open || strcmp(r->route->path, "/metrics") == 0)
		return true;
	/*
	 * Never asked now: the client may have closed its socket since, and a
	 * closed socket has no owner (peer.c).
	 */
	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci == NULL || (c = ci->socket_context) == NULL) {
		*why_rc = -ENOMEM;	/* on_connection() could not keep its context */
		return false;
	}
	if (c->peer_rc < 0) {
		*why_rc = c->peer_rc;
		return false;
	}
	uid = c->peer_uid;
	*who = uid;
	if (uid == 0 || uid == h->owner)
		return true;
	if (write)
		return h->group_set && h->group_write && peer_in_group(uid, h->group);
	return h->allow_other || (h->group_set && peer_in_group(uid, h->group));
}

/* The first call of a request: its headers are in. May reply at once. */
static void
req_begin(struct http_req *r)
{
	struct http_server *h = r->srv;
	const char *cl;
	unsigned m = 0;
	uid_t who;
	int why;
	bool busy;

	if (strcmp(r->method, MHD_HTTP_METHOD_GET) == 0 ||
	    strcmp(r->method, MHD_HTTP_METHOD_HEAD) == 0)
		m = M_GET;
	else if (strcmp(r->method, MHD_HTTP_METHOD_POST) == 0)
		m = M_POST;
	else if (strcmp(r->method, MHD_HTTP_METHOD_DELETE) == 0)
		m = M_DELETE;
	r->route = route_find(r->path);
	if (r->doomed) {
		http_add_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		http_reply_error(r, 503, "too many connections from this address (its share of "
		    "the %u of --http-max-conns while others wait)", h->max_conns);
		return;
	}
	pthread_mutex_lock(&h->conn_lock);
	busy = h->ntracked > h->max_conns + CONN_SLACK;	/* doomed ones not counted */
	pthread_mutex_unlock(&h->conn_lock);
	if (busy) {
		http_add_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		http_reply_error(r, 503, "too many connections (the limit is %u, --http-max-conns)",
		    h->max_conns);
		return;
	}
	if (r->route == NULL && (strcmp(r->path, "/v1/profiles") == 0 ||
	    strcmp(r->path, "/v1/profiles/") == 0)) {
		otlp_elsewhere(r);	/* the path of OTLP's stable signals */
		return;
	}
	if (r->route == NULL) {
		http_reply_error(r, 404, "no such endpoint: %s", r->path);
		return;
	}
	if ((r->route->methods & m) == 0) {
		http_add_header(r, MHD_HTTP_HEADER_ALLOW, r->route->allow);
		http_reply_error(r, 405, "method %s not allowed on %s (allowed: %s)", r->method,
		    r->path, r->route->allow);
		return;
	}
	if (h->token && !r->route->open &&
	    !token_ok(http_header(r, MHD_HTTP_HEADER_AUTHORIZATION), h->token)) {
		http_add_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"profilefs\"");
		http_reply_error(r, 401, "%s", http_header(r, MHD_HTTP_HEADER_AUTHORIZATION) ?
		    "wrong token in the Authorization header (\"Bearer TOKEN\", or Basic auth "
		    "with the token as the password)" :
		    "missing \"Authorization: Bearer TOKEN\" header (or Basic auth with the "
		    "token as the password, e.g. http://profilefs:TOKEN@host:port/...)");
		return;
	}
	/* Pushes and deletions are writes (ingest/, rm); Connect queries are reads. */
	if (h->token == NULL && !peer_may(r, (m == M_POST && !ROUTE_IS_CONNECT(r->route)) ||
	    m == M_DELETE, &who, &why)) {
		if (who == (uid_t)-1 && why != -ENOENT && why != -ENOTCONN && why != -EAFNOSUPPORT)
			http_reply_error(r, 403, "the API serves local users the mount lets in; %s "
			    "(%s), so it is refused (give the daemon --http-token-file and send "
			    "\"Authorization: Bearer TOKEN\")", peer_strerror(why), strerror(-why));
		else if (who == (uid_t)-1)
			http_reply_error(r, 403, "the API serves local users the mount lets in; %s, so "
			    "it is refused (give the daemon --http-token-file and send "
			    "\"Authorization: Bearer TOKEN\")", peer_strerror(why));
		else
			http_reply_error(r, 403, "uid %u may not %s: the API follows the mount's "
			    "access rules (--group, --group-write, --allow-other), or send the token "
			    "of --http-token-file", (unsigned)who,
			    m == M_POST && !ROUTE_IS_CONNECT(r->route) ? "push profiles" :
			    m == M_DELETE ? "delete profiles" : "read profiles");
		metrics_add("profilefs_http_denied_total", NULL, 1);
		return;
	}
	if (m == M_POST) {
		cl = http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl) {
			char *end;
			unsigned long long n;

			errno = 0;
			n = strtoull(cl, &end, 10);
			if (errno == 0 && *end == '\0' && n > h->max_body) {
				http_reply_error(r, 413, "body of %llu bytes is over the limit of %zu bytes "
				    "(--http-max-body)", n, h->max_body);
				return;
			}
			if (errno == 0 && *end == '\0' && n > 0 && buf_reserve(&r->body,
			    /* claims are not bytes: grow as the body arrives */
			    (size_t)n < (1u << 20) ? (size_t)n : (1u << 20)) < 0) {
				http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
				http_reply_error(r, 503, "no memory for a body of %llu bytes "
				    "(the memory budget is in use); try again", n);
				return;
			}
		}
	}
	/*
	 * The handler runs at the request's end, also for a GET: a reply queued
	 * before then would cost the connection its keep-alive.
	 */
}

/* Some body bytes. 0, or -1 to drop the connection. */
static int
req_body(struct http_req *r, const char *data, size_t n)
{
	size_t max = r->srv->max_body;

	r->body_seen += n;
	if (r->replied)		/* a held refusal: the body is discarded */
		return r->body_seen > HOLD_MAX ? -1 : 0;
	if (r->too_large || r->body_seen > max) {
		if (!r->too_large) {
			r->too_large = true;
			buf_free(&r->body);
		}
		/*
		 * libmicrohttpd takes no reply before the body's end: read on, to
		 * answer 413, but drop a connection that will not stop.
		 */
		return r->body_seen > 2 * (uint64_t)max + DISCARD_MAX ? -1 : 0;
	}
	if (buf_add(&r->body, data, n) < 0) {
		r->too_large = true;	/* reported as out of memory at the end */
		buf_free(&r->body);
	}
	return 0;
}

static void
req_end(struct http_req *r)
{
	const union MHD_ConnectionInfo *ci;

	if (r->too_large) {
		if (r->body_seen > r->srv->max_body)
			http_reply_error(r, 413, "body of more than %zu bytes is over the limit "
			    "(--http-max-body)", r->srv->max_body);
		else {
			http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
			http_reply_error(r, 503, "no memory for the body (the memory budget of "
			    "%zu MiB is in use); try again", budget_limit() >> 20);
		}
		return;
	}
	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	cancel_start(&r->cancel, r->srv->query_cpu_ns, ci ? ci->connect_fd : -1);
	r->route->fn(r);
	if (!r->replied)
		http_reply_error(r, 500, "the handler gave no reply");
}

static struct http_req *
req_new(struct http_server *h, struct MHD_Connection *conn, const char *url, const char *method)
{
	struct http_req *r = calloc(1, sizeof(*r));
	size_t n;

	if (r == NULL)
		return NULL;
	r->srv = h;
	r->conn = conn;
	r->method = method;
	r->start_ns = clock_mono_ns();
	if ((r->path_copy = strdup(url)) == NULL) {
		free(r);
		return NULL;
	}
	/* profefe cleans the path: trailing slashes do not matter. */
	n = strlen(r->path_copy);
	while (n > 1 && r->path_copy[n - 1] == '/')
		r->path_copy[--n] = '\0';
	r->path = r->path_copy;
	return r;
}

/*
 * Whether a POST announces a body of at most HOLD_MAX bytes, or a chunked one
 * (read up to HOLD_MAX): a refusal from its headers is then held until the
 * body is read. Answered at once, it makes libmicrohttpd close the connection
 * with the body unread, and the client's write of the body fails before it
 * reads the reply (EPIPE).
 */
static bool
body_small(struct MHD_Connection *conn, const char *method)
{
	const char *cl;
	char *end;
	unsigned long long n;

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return false;
	if ((cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH)) == NULL)
		return MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
	errno = 0;
	n = strtoull(cl, &end, 10);
	return errno == 0 && end != cl && *end == '\0' && n > 0 && n <= HOLD_MAX;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct http_req *r = *con_cls;

	(void)version;
	if (r == NULL) {
		bool doomed = conn_mark(cls, conn, true);

		if ((r = req_new(cls, conn, url, method)) == NULL)
			return MHD_NO;
		*con_cls = r;
		r->doomed = doomed;
		r->hold = body_small(conn, method);
		req_begin(r);
		r->hold = false;
		return r->fatal ? MHD_NO : MHD_YES;
	}
	if (*upload_data_size > 0) {
		int rc = req_body(r, upload_data, *upload_data_size);

		*upload_data_size = 0;
		return rc < 0 ? MHD_NO : MHD_YES;
	}
	if (r->held_status) {
		unsigned st = r->held_status;

		r->held_status = 0;
		r->replied = false;
		http_reply(r, st, r->held_type, &r->held, NULL);
	} else if (!r->replied)
		req_end(r);
	return r->fatal ? MHD_NO : MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *con_cls;
	const char *label;
	char l[160];

	(void)toe;
	conn_mark(cls, conn, false);
	if (r == NULL)
		return;
	label = r->route ? r->route->label : "other";
	snprintf(l, sizeof(l), "handler=\"%s\",method=\"%s\",code=\"%u\"", label,
	    strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0 ||
	    strcmp(r->method, "POST") == 0 ? r->method : "other", r->status);
	metrics_add("profilefs_http_requests_total", l, 1);
	snprintf(l, sizeof(l), "handler=\"%s\"", label);
	metrics_observe("profilefs_http_request_duration_seconds", l,
	    (double)(clock_mono_ns() - r->start_ns) / 1e9);
	/* Pushes refused before they reached the store count as ingest outcomes too. */
	if (r->route && r->route->source && strcmp(r->method, "POST") == 0 && !r->stored)
		count_ingest(r->route->source, outcome_of(r->status ? (int)r->status : 1));
	buf_free(&r->body);
	buf_free(&r->held);
	free(r->path_copy);
	free(r);
	*con_cls = NULL;
}

/*
 * Headers of a request are in (begin), or it ended (the deadline starts
 * again). Returns whether the connection is over its address's share.
 */
static bool
conn_mark(struct http_server *h, struct MHD_Connection *conn, bool begin)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct http_conn *c = ci ? ci->socket_context : NULL;
	bool doomed;

	if (c == NULL)
		return false;
	pthread_mutex_lock(&h->conn_lock);
	c->in_request = begin;
	if (!begin) {
		c->reused = true;
		c->since = clock_mono_ns();
	}
	doomed = c->doomed;
	pthread_mutex_unlock(&h->conn_lock);
	return doomed;
}

/* The client address of conn, port cleared, into ss (zeroed when unknown). */
static void
peer_addr(struct MHD_Connection *conn, struct sockaddr_storage *ss)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	memset(ss, 0, sizeof(*ss));
	if (ci == NULL || ci->client_addr == NULL)
		return;
	if (ci->client_addr->sa_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		memcpy(s4, ci->client_addr, sizeof(*s4));
		s4->sin_port = 0;
	} else if (ci->client_addr->sa_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		memcpy(s6, ci->client_addr, sizeof(*s6));
		s6->sin6_port = 0;
		s6->sin6_flowinfo = 0;
	}
}

/* The entry of addr in h->addrs, added when add; NULL if none. Under conn_lock. */
static struct http_addr *
addr_find(struct http_server *h, const struct sockaddr_storage *addr, bool add)
{
	size_t i;

	for (i = 0; i < h->naddrs; i++)
		if (memcmp(&h->addrs[i].addr, addr, sizeof(*addr)) == 0)
			return &h->addrs[i];
	if (!add)
		return NULL;
	if (h->naddrs == h->addrs_cap) {
		size_t cap = h->addrs_cap ? h->addrs_cap * 2 : 64;
		struct http_addr *a = realloc(h->addrs, cap * sizeof(*a));

		if (a == NULL)
			return NULL;
		h->addrs = a;
		h->addrs_cap = cap;
	}
	h->addrs[h->naddrs].addr = *addr;
	h->addrs[h->naddrs].n = 0;
	return &h->addrs[h->naddrs++];
}

/* An address's fair share: max_conns / (addresses + 1), one kept for a newcomer. */
static unsigned
conn_share(const struct http_server *h)
{
	unsigned share = h->max_conns / (unsigned)(h->naddrs + 1);

	return share < SHARE_MIN ? SHARE_MIN : share;
}

/*
 * Full, and a connection within its address's share came: make room by
 * closing one connection still sending its headers from the address that
 * holds the most, if that one is past its share. Under conn_lock.
 */
static void
conn_evict(struct http_server *h)
{
	struct http_addr *big = NULL;
	struct http_conn *c;
	size_t i;

	for (i = 0; i < h->naddrs; i++)
		if (big == NULL || h->addrs[i].n > big->n)
			big = &h->addrs[i];
	if (big == NULL || big->n <= conn_share(h))
		return;
	for (c = h->conns; c; c = c->next)
		if (!c->in_request && !c->reaped && !c->doomed &&
		    memcmp(&c->peer, &big->addr, sizeof(c->peer)) == 0) {
			shutdown(c->fd, SHUT_RDWR);
			c->reaped = true;
			metrics_add("profilefs_http_share_refusals_total", NULL, 1);
			return;
		}
}

/*
 * Whether a new connection from a (a->n counts it already) may stay: within
 * its address's share always (when full, a hog's connection makes room),
 * past it only while half of max_conns are free. Under conn_lock.
 */
static bool
conn_fair(struct http_server *h, const struct http_addr *a)
{
	if (a == NULL)
		return h->ntracked <= h->max_conns;
	if (a->n <= conn_share(h)) {
		if (h->ntracked > h->max_conns)
			conn_evict(h);
		return true;
	}
	return h->ntracked <= h->max_conns / 2;
}

static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *ci;
	struct http_conn *c, **pp;
	struct http_addr *a;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		atomic_fetch_add(&h->nconns, 1);
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci == NULL || (c = calloc(1, sizeof(*c))) == NULL)
			return;
		c->fd = ci->connect_fd;
		c->since = clock_mono_ns();
		peer_addr(conn, &c->peer);
		/*
		 * Who the client is, decided now, while it waits for its first
		 * answer: a client that sends its request and closes at once leaves
		 * a socket without owner, refused rather than taken for root.
		 */
		c->peer_rc = -ENOENT;
		if (h->token == NULL && !h->open)
			c->peer_rc = peer_uid(c->fd, &c->peer_uid);
		pthread_mutex_lock(&h->conn_lock);
		c->next = h->conns;
		h->conns = c;
		h->ntracked++;
		if ((a = addr_find(h, &c->peer, true)) != NULL)
			a->n++;
		if (!conn_fair(h, a)) {
			c->doomed = true;
			h->ntracked--;
			metrics_add("profilefs_http_share_refusals_total", NULL, 1);
		}
		pthread_mutex_unlock(&h->conn_lock);
		*socket_context = c;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		atomic_fetch_sub(&h->nconns, 1);
		/* Unlinked before libmicrohttpd closes the socket: the reaper never sees a stale fd. */
		if ((c = *socket_context) == NULL)
			return;
		pthread_mutex_lock(&h->conn_lock);
		for (pp = &h->conns; *pp && *pp != c; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = c->next;
		if (!c->doomed)
			h->ntracked--;
		if ((a = addr_find(h, &c->peer, false)) != NULL && --a->n == 0)
			*a = h->addrs[--h->naddrs];	/* the last moves into its place */
		pthread_mutex_unlock(&h->conn_lock);
		free(c);
		*socket_context = NULL;
	}
}

/* Once a second: shut down connections past their header deadline. */
static void *
reaper_main(void *arg)
{
	struct http_server *h = arg;
	struct http_conn *c;
	struct timespec ts;
	unsigned n;

	pthread_mutex_lock(&h->conn_lock);
	while (!h->stopping) {
		int64_t now = clock_mono_ns();

		bool busy = h->ntracked > h->max_conns / 4 * 3;

		n = 0;
		for (c = h->conns; c; c = c->next) {
			int64_t limit = (int64_t)(busy ? HEADER_DEADLINE_BUSY_SECS :
			    c->reused ? KEEPALIVE_DEADLINE_SECS : HEADER_DEADLINE_SECS) * 1000000000;

			if (c->reaped || (!c->doomed && (c->in_request || now - c->since < limit)))
				continue;
			shutdown(c->fd, SHUT_RDWR);
			c->reaped = true;
			n += !c->doomed;	/* those were counted as share refusals */
		}
		if (n) {
			metrics_add("profilefs_http_header_timeouts_total", NULL, n);
			log_debug("http: closed %u connections that sent no complete request "
			    "headers within %d s", n, HEADER_DEADLINE_SECS);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->conn_cond, &h->conn_lock, &ts);
	}
	pthread_mutex_unlock(&h->conn_lock);
	return NULL;
}

/*
 * URL unescaping for the path and the query: %XX, and '+' as a space as Go's
 * url.Values (what profefe and Pyroscope clients send) means it. A bad
 * escape and %00 stay as they are.
 */
static size_t
on_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	long n = pct_decode(s, s, strlen(s), PCT_PLUS_SPACE | PCT_LENIENT);

	(void)cls;
	(void)conn;
	s[n] = '\0';
	return (size_t)n;
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_debug("http: libmicrohttpd: %s", msg);
}

/* --- start / stop ------------------------------------------------------- */

/* A listening socket bound exactly to spec; its address as bound into addr. */
static int
listen_on(const char *spec, int *out, char *addr, size_t addrlen)
{
	struct addrinfo hints, *res = NULL, *ai, *pick = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[8], hs[INET6_ADDRSTRLEN];
	struct buf err = { 0 };
	int fd = -1, one = 1, rc;

	if (httpparse_listen(spec, host, sizeof(host), port, sizeof(port), &err) < 0) {
		log_errx("--http %s", err.data ? err.data : "bad address");
		buf_free(&err);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		log_errx("--http %s: cannot resolve \"%s\": %s", spec, host, gai_strerror(rc));
		return -EINVAL;
	}
	/* A name with both families (localhost) binds its IPv4 address, as Go does. */
	for (ai = res; ai && pick == NULL; ai = ai->ai_next)
		if (ai->ai_family == AF_INET)
			pick = ai;
	for (ai = res; ai && pick == NULL; ai = ai->ai_next)
		if (ai->ai_family == AF_INET6)
			pick = ai;
	if (pick == NULL) {
		log_errx("--http %s: \"%s\" has no IPv4 or IPv6 address", spec, host);
		rc = -EINVAL;
		goto out;
	}
	if ((fd = socket(pick->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		rc = -errno;
		log_errx("--http %s: socket: %s", spec, strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (pick->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, pick->ai_addr, pick->ai_addrlen) < 0) {
		rc = -errno;
		if (errno == EADDRINUSE)
			log_errx("--http %s: address already in use: another program listens there",
			    spec);
		else if (errno == EADDRNOTAVAIL)
			log_errx("--http %s: cannot bind: \"%s\" is not an address of this host",
			    spec, host);
		else
			log_errx("--http %s: cannot bind: %s", spec, strerror(errno));
		goto out;
	}
	if (listen(fd, 1024) < 0) {
		rc = -errno;
		log_errx("--http %s: listen: %s", spec, strerror(errno));
		goto out;
	}
	rc = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, hs, sizeof(hs));
		snprintf(addr, addrlen, "[%s]:%u", hs, ntohs(s6->sin6_port));
	} else if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, hs, sizeof(hs));
		snprintf(addr, addrlen, "%s:%u", hs, ntohs(s4->sin_port));
	} else {
		snprintf(addr, addrlen, "%s", spec);
	}
	*out = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return rc;
}

int
http_start(struct store *st, const struct http_opts *o, struct http_server **out)
{
	struct http_server *h;
	int fd = -1, rc;

	*out = NULL;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return -ENOMEM;
	h->st = st;
	h->rd = o->reader ? o->reader : store_reader(st);
	h->max_body = o->max_body ? o->max_body : DEFAULT_MAX_BODY;
	h->max_conns = o->max_conns ? o->max_conns : DEFAULT_MAX_CONNS;
	if (o->max_decoded && o->max_decoded < PROFILE_MAX_DECODED)
		h->max_decoded = o->max_decoded;
	h->query_cpu_ns = o->query_cpu_ns == 0 ? HTTP_QUERY_CPU_DEFAULT :
	    o->query_cpu_ns < 0 ? 0 : o->query_cpu_ns;
	h->health = o->health;
	h->health_arg = o->health_arg;
	h->open = o->open;
	h->owner = o->owner;
	h->allow_other = o->allow_other;
	h->group_set = o->group_set;
	h->group_write = o->group_write;
	h->group = o->group;
	if (o->token && o->token[0] && (h->token = strdup(o->token)) == NULL) {
		free(h);
		return -ENOMEM;
	}
	describe_metrics();
	h->qcache = qcache_create(QCACHE_ENTRIES, QCACHE_BYTES);
	pthread_mutex_init(&h->conn_lock, NULL);
	pthread_cond_init(&h->conn_cond, NULL);
	if ((rc = listen_on(o->listen, &fd, h->addr, sizeof(h->addr))) < 0)
		goto fail;
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_POLL | MHD_USE_ERROR_LOG,
	    0, NULL, NULL, on_request, h,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
	    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
	    /* Far above ours: conn_fair() decides, with the client's address known. */
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(h->max_conns * 2 + CONN_SLACK * 4),
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)PER_IP,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_SECS,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, h,
	    MHD_OPTION_END);
	if (h->mhd == NULL) {
		log_warnx("--http %s: libmicrohttpd could not start", o->listen);
		close(fd);
		rc = -EIO;
		goto fail;
	}
	if ((rc = -pthread_create(&h->reaper, NULL, reaper_main, h)) < 0) {
		MHD_stop_daemon(h->mhd);
		goto fail;
	}
	h->reaper_on = true;
	log_info("http: listening on http://%s (max body %zu bytes, max decoded %zu bytes, "
	    "max %u connections, %d per address%s)", h->addr, h->max_body,
	    h->max_decoded ? h->max_decoded : (size_t)PROFILE_MAX_DECODED, h->max_conns,
	    PER_IP, h->token ? ", bearer token required" : h->open ? ", open to every client" :
	    ", local users as the mount's access rules");
	*out = h;
	return 0;
fail:
	pthread_mutex_destroy(&h->conn_lock);
	pthread_cond_destroy(&h->conn_cond);
	qcache_destroy(h->qcache);
	free(h->token);
	free(h);
	return rc;
}

void
http_stop(struct http_server *h)
{
	if (h == NULL)
		return;
	if (h->reaper_on) {
		pthread_mutex_lock(&h->conn_lock);
		h->stopping = true;
		pthread_cond_signal(&h->conn_cond);
		pthread_mutex_unlock(&h->conn_lock);
		pthread_join(h->reaper, NULL);
	}
	MHD_stop_daemon(h->mhd);
	pthread_mutex_destroy(&h->conn_lock);
	pthread_cond_destroy(&h->conn_cond);
	free(h->addrs);
	qcache_destroy(h->qcache);
	free(h->token);
	free(h);
}
