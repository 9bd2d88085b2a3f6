/*
 * scrape: pull mode for Go services that expose net/http/pprof. One job per
 * (target, profile) from the targets file (targets.c). One scheduler thread
 * drives every HTTP transfer through a libcurl multi handle, so a slow or
 * dead target holds nothing but its own transfer; finished bodies go to a
 * small pool of workers that check, decode, compute deltas and store, so a
 * slow disk never delays a scrape's start.
 *
 * Schedule: each job is due every interval at a fixed offset (a hash of its
 * identity, as Prometheus spreads targets), so many targets are not hit at
 * once. cpu asks for ?seconds=interval-1 and so covers its interval. After
 * k consecutive failures a job waits min(2^(k-1), 8) intervals. State changes
 * (up/down) are logged once each, not once per attempt.
 *
 * Bounds: a body over SCRAPE_BODY_MAX is cut off while it is received, and
 * all bodies in flight share SCRAPE_INFLIGHT_MAX; every request has a total
 * timeout (cpu: seconds + timeout), redirects are capped. The targets file is
 * polled every second and reloaded on change; a bad file is logged with its
 * line and the previous list stays. Jobs whose identity is unchanged keep
 * their schedule and delta base across reloads.
 *
 * Locking: sc_lock protects the job list, every job's state and status
 * fields and the work queue. A job's transfer fields (easy handle, body) are
 * the scheduler's while J_TRANSFER; its delta base (prev) and body are the
 * worker's while J_PROCESS. Workers never touch curl. Lock order:
 * sc_lock, then the metrics registry's own lock.
 */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "scrape.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "targets.h"

#define SCRAPE_BODY_MAX		(64u << 20)
#define SCRAPE_INFLIGHT_MAX	((size_t)512 << 20)
#define SCRAPE_WORKERS		2
#define SCRAPE_BACKOFF_MAX	8
#define LATENESS_RING		8192
#define NS			INT64_C(1000000000)

enum jstate { J_IDLE, J_TRANSFER, J_PROCESS };

struct job {
	struct job		*next;		/* sc->jobs */
	struct job		*qnext;		/* work queue */
	struct target_spec	 ts;		/* owned */
	enum jstate		 state;
	bool			 removed;	/* unlinked while J_PROCESS: the worker frees it */
	int64_t			 due;		/* monotonic ns of the next start */
	int64_t			 sched;		/* the slot the current transfer belongs to */
	int64_t			 start_mono, start_real, end_mono;

	/* transfer: the scheduler's while J_TRANSFER */
	CURL			*easy;
	struct buf		 body;
	bool			 too_big, no_budget;
	char			 curl_err[CURL_ERROR_SIZE];
	CURLcode		 cres;
	long			 http_code;
	char			 ctype[64];

	/* delta base: the worker's while J_PROCESS */
	struct profile		*prev;

	/* status, protected by sc_lock */
	int			 health;	/* -1 unknown, 0 down, 1 up */
	int			 fails;		/* consecutive */
	char			 last_error[256];
	int64_t			 last_scrape;	/* realtime ns */
	int64_t			 last_duration;	/* ns */
	int64_t			 last_lateness;	/* ns */
	uint64_t		 n_scrapes, n_failures, n_stored, n_missed, n_restarts;
	bool			 primed;
};

struct scraper {
	struct store		*st;
	char			*file;
	CURLM			*multi;
	pthread_t		 sched_thr;
	pthread_t		 workers[SCRAPE_WORKERS];
	int			 nworkers;
	bool			 sched_started;
	atomic_bool		 stop;

	pthread_mutex_t		 sc_lock;
	pthread_cond_t		 sc_cond;	/* work queued or stop */
	struct job		*jobs;		/* protected by sc_lock */
	size_t			 njobs;
	struct job		*qhead, **qtail;	/* work queue, protected by sc_lock */
	struct job		*dead;		/* removed jobs the scheduler frees; sc_lock */
	bool			 wstop;		/* workers: drain and exit */
	bool			 rescan;	/* a job became idle or changed: look at all */

	/* the scheduler's: epoll set of curl's sockets and the wake eventfd */
	int			 epfd, evfd;
	int64_t			 curl_due;	/* monotonic ns curl wants a call, -1 none */

	/* targets file, the scheduler's */
	struct timespec		 f_mtime;
	off_t			 f_size;
	ino_t			 f_ino;
	bool			 f_missing;
	/* status of the file, protected by sc_lock */
	char			 f_error[512];
	int64_t			 f_loaded;	/* realtime ns of the last good load */

	/* lateness of starts vs schedule, seconds; protected by sc_lock */
	double			 late[LATENESS_RING];
	size_t			 nlate;		/* total recorded */
};


/* Prometheus label text for a job: instance, profile, service (escaped). */
static void
job_mlabels(const struct job *j, struct buf *out)
{
	const char *vals[3] = { j->ts.instance, j->ts.profile->name, j->ts.service };
	const char *names[3] = { "instance", "profile", "service" };
	const char *c;
	int i;

	for (i = 0; i < 3; i++) {
		buf_printf(out, "%s%s=\"", i ? "," : "", names[i]);
		for (c = vals[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				buf_addc(out, '\\');
			if (*c == '\n')
				buf_adds(out, "\\n");
			else
				buf_addc(out, *c);
		}
		buf_addc(out, '"');
	}
}

/* --- transfers (scheduler thread) --------------------------------------- */

/* Bytes of bodies held by all jobs, against SCRAPE_INFLIGHT_MAX. */
static atomic_size_t inflight_bytes;

/* libcurl's write callback: collect the body, refusing what exceeds the caps. */
static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct job *j = arg;
	size_t n = size * nmemb;

	if (j->body.len + n > SCRAPE_BODY_MAX) {
		j->too_big = true;
		return 0;
	}
	if (j->body.len + n + 1 > j->body.cap) {
		/* Charge growth against the shared budget before allocating it. */
		size_t old = j->body.cap, want = old ? old : 16384;

		while (want < j->body.len + n + 1)
			want *= 2;
		if (atomic_fetch_add(&inflight_bytes, want - old) + (want - old) >
		    SCRAPE_INFLIGHT_MAX || buf_reserve(&j->body, want - j->body.len - 1) < 0) {
			atomic_fetch_sub(&inflight_bytes, want - old);
			j->no_budget = true;
			return 0;
		}
		/* buf_reserve may round up: charge exactly what it holds. */
		if (j->body.cap > want)
			atomic_fetch_add(&inflight_bytes, j->body.cap - want);
		else if (j->body.cap < want)
			atomic_fetch_sub(&inflight_bytes, want - j->body.cap);
	}
	if (buf_add(&j->body, data, n) < 0)
		return 0;
	return n;
}

static void
body_release(struct job *j)
{
	atomic_fetch_sub(&inflight_bytes, j->body.cap);
	buf_free(&j->body);
}

static int
job_easy(struct job *j)
{
	CURL *e;
	long to_ms = (long)(j->ts.timeout / 1000000);

	if ((e = curl_easy_init()) == NULL)
		return -ENOMEM;
	curl_easy_setopt(e, CURLOPT_URL, j->ts.url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, j);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->curl_err);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, to_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, to_ms < 5000 ? to_ms : 5000L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 3L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)SCRAPE_BODY_MAX);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "profilefs/" PROFILEFS_VERSION);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	/* Targets are reached directly, as Prometheus does, not via $http_proxy. */
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	j->easy = e;
	return 0;
}

/* Record a start's lateness; sc_lock held. */
static void
lateness_add(struct scraper *sc, struct job *j, int64_t late)
{
	j->last_lateness = late;
	sc->late[sc->nlate % LATENESS_RING] = (double)late / 1e9;
	sc->nlate++;
}

/* Start job j's transfer now; sc_lock held. */
static void
job_start(struct scraper *sc, struct job *j, int64_t now)
{
	int64_t iv = j->ts.interval, late;

	/* Slots missed entirely (busy or asleep) are counted and skipped. */
	if (now - j->due >= iv) {
		int64_t k = (now - j->due) / iv;

		j->n_missed += (uint64_t)k;
		j->due += k * iv;
	}
	late = now - j->due;
	j->sched = j->due;
	j->due += iv;
	if (j->easy == NULL && job_easy(j) < 0)
		return;
	j->curl_err[0] = '\0';
	j->too_big = j->no_budget = false;
	j->http_code = 0;
	j->ctype[0] = '\0';
	j->start_mono = now;
	j->start_real = clock_now_ns();
	if (curl_multi_add_handle(sc->multi, j->easy) != CURLM_OK)
		return;
	j->state = J_TRANSFER;
	lateness_add(sc, j, late);
	metrics_observe("profilefs_scrape_lateness_seconds", NULL, (double)late / 1e9);
}

/* A transfer ended: collect what the worker needs and queue it; sc_lock held. */
static void
job_finished(struct scraper *sc, struct job *j, CURLcode res)
{
	char *ct = NULL;

	j->cres = res;
	j->end_mono = clock_mono_ns();
	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &j->http_code);
	if (curl_easy_getinfo(j->easy, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(j->ctype, sizeof(j->ctype), "%s", ct);
	curl_multi_remove_handle(sc->multi, j->easy);
	j->state = J_PROCESS;
	j->qnext = NULL;
	*sc->qtail = j;
	sc->qtail = &j->qnext;
	pthread_cond_signal(&sc->sc_cond);
}

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (j->easy)
		curl_easy_cleanup(j->easy);
	body_release(j);
	profile_free(j->prev);
	free(j->ts.key);
	free(j->ts.url);
	free(j->ts.instance);
	free(j->ts.service);
	labels_clear(&j->ts.labels);
	free(j);
}

/* Unlink and free (or hand to the worker to free) one job; sc_lock held. */
static void
job_drop(struct scraper *sc, struct job *j)
{
	static const char *const series[] = { "profilefs_scrape_up",
	    "profilefs_scrape_duration_seconds", "profilefs_scrape_errors_total", NULL };
	static const char *const outcomes[] = { "error", "stored", "primed", NULL };
	struct buf ml = { 0 };
	size_t i, len;

	/* Its metrics go with it (metrics has its own lock, taken after sc_lock). */
	job_mlabels(j, &ml);
	for (i = 0; series[i] && ml.data; i++)
		metrics_remove(series[i], ml.data);
	len = ml.len;
	for (i = 0; outcomes[i] && ml.data; i++) {
		ml.len = len;
		buf_printf(&ml, ",outcome=\"%s\"", outcomes[i]);
		metrics_remove("profilefs_scrapes_total", ml.data);
	}
	buf_free(&ml);

	if (j->state == J_TRANSFER) {
		curl_multi_remove_handle(sc->multi, j->easy);
		j->state = J_IDLE;
	}
	if (j->state == J_PROCESS)
		j->removed = true;
	else
		job_free(j);
}

/* --- the targets file --------------------------------------------------- */

/*
 * Apply a new list: jobs whose identity is unchanged stay as they are (their
 * schedule and delta base included), the others are dropped or created.
 */
static void
jobs_apply(struct scraper *sc, struct target_list *tl)
{
	struct intern *keys = intern_create(tl->n + 1);
	struct job **old = NULL, *j, *head = NULL, **tail = &head;
	size_t i, nold = 0, added = 0, kept = 0;
	int64_t now = clock_mono_ns();
	int64_t ix;

	if (keys == NULL)
		return;
	pthread_mutex_lock(&sc->sc_lock);
	for (j = sc->jobs; j; j = j->next)
		nold++;
	old = calloc(tl->n + 1, sizeof(*old));
	for (i = 0; old && i < tl->n; i++)
		intern_put(keys, tl->v[i].key, strlen(tl->v[i].key), NULL);
	/* Old jobs that are still wanted move to their new place. */
	while (old && (j = sc->jobs) != NULL) {
		sc->jobs = j->next;
		ix = intern_get(keys, j->ts.key, strlen(j->ts.key));
		if (ix >= 0 && old[ix] == NULL) {
			old[ix] = j;
			kept++;
		} else {
			job_drop(sc, j);
		}
	}
	for (i = 0; old && i < tl->n; i++) {
		if ((j = old[i]) == NULL) {
			if ((j = calloc(1, sizeof(*j))) == NULL)
				continue;
			j->ts = tl->v[i];
			memset(&tl->v[i], 0, sizeof(tl->v[i]));
			j->health = -1;
			/* Spread starts over the interval by a stable hash. */
			j->due = now + (int64_t)(hash_bytes(j->ts.key, strlen(j->ts.key)) %
			    (uint64_t)j->ts.interval);
			added++;
		}
		j->next = NULL;
		*tail = j;
		tail = &j->next;
	}
	if (old) {
		sc->jobs = head;
		sc->njobs = tl->n;
		sc->rescan = true;
	}
	pthread_mutex_unlock(&sc->sc_lock);
	if (old)
		log_info("scrape: %zu jobs (%zu new, %zu kept, %zu removed)", tl->n, added, kept,
		    nold - kept);
	else
		log_warnx("scrape: out of memory applying the targets file");
	metrics_set("profilefs_scrape_jobs", NULL, (double)tl->n);
	free(old);
	intern_destroy(keys);
}

/* Reload the file if it changed since the last look. force: at start. */
static int
targets_check(struct scraper *sc, bool force)
{
	struct target_list tl;
	struct buf err = { 0 };
	struct stat st;
	int rc;

	if (stat(sc->file, &st) < 0) {
		if (!sc->f_missing) {
			log_warn("scrape: %s (keeping the current targets)", sc->file);
			sc->f_missing = true;
		}
		return force ? -errno : 0;
	}
	sc->f_missing = false;
	if (!force && st.st_mtim.tv_sec == sc->f_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == sc->f_mtime.tv_nsec && st.st_size == sc->f_size &&
	    st.st_ino == sc->f_ino)
		return 0;
	sc->f_mtime = st.st_mtim;
	sc->f_size = st.st_size;
	sc->f_ino = st.st_ino;
	if ((rc = targets_load(sc->file, &tl, &err)) < 0) {
		log_warnx("scrape: %s: %s%s", sc->file, err.data ? err.data : strerror(-rc),
		    force ? "" : " (keeping the previous targets)");
		pthread_mutex_lock(&sc->sc_lock);
		snprintf(sc->f_error, sizeof(sc->f_error), "%s", err.data ? err.data :
		    strerror(-rc));
		pthread_mutex_unlock(&sc->sc_lock);
		metrics_add("profilefs_scrape_reload_errors_total", NULL, 1);
		buf_free(&err);
		return rc;
	}
	pthread_mutex_lock(&sc->sc_lock);
	sc->f_error[0] = '\0';
	sc->f_loaded = clock_now_ns();
	pthread_mutex_unlock(&sc->sc_lock);
	jobs_apply(sc, &tl);
	targets_free(&tl);
	buf_free(&err);
	return 0;
}

/* --- the scheduler thread ----------------------------------------------- */

/*
 * libcurl's socket interface on epoll: each wake handles only the sockets
 * that have events, so hundreds of long-polling cpu transfers cost nothing
 * while they wait.
 */
static int
on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
	struct scraper *sc = arg;
	struct epoll_event ev = { 0 };

	(void)e;
	(void)sockp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(sc->epfd, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	ev.data.fd = fd;
	if (epoll_ctl(sc->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
		epoll_ctl(sc->epfd, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

static int
on_timer(CURLM *m, long ms, void *arg)
{
	struct scraper *sc = arg;

	(void)m;
	sc->curl_due = ms < 0 ? -1 : clock_mono_ns() + (int64_t)ms * 1000000;
	return 0;
}

/* Wake the scheduler (from any thread). */
static void
sched_wake(struct scraper *sc)
{
	uint64_t one = 1;

	if (write(sc->evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: a wake is pending already. */
	}
}

/* Collect finished transfers; sc_lock held. */
static void
collect_done(struct scraper *sc)
{
	CURLMsg *msg;
	struct job *j;
	int left;

	while ((msg = curl_multi_info_read(sc->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		j = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		if (j)
			job_finished(sc, j, msg->data.result);
	}
}

static void *
sched_main(void *arg)
{
	struct scraper *sc = arg;
	struct epoll_event evs[64];
	int64_t next_check = clock_mono_ns() + NS, next_due = 0;
	int running_n, n, i;

	while (!atomic_load(&sc->stop)) {
		int64_t now = clock_mono_ns(), wait;
		struct job *j;

		if (now >= next_check) {
			targets_check(sc, false);
			next_check = now + NS;
			next_due = 0;
		}
		/* Start what is due; scan the jobs only when something may be. */
		pthread_mutex_lock(&sc->sc_lock);
		while ((j = sc->dead) != NULL) {
			sc->dead = j->next;
			job_free(j);
		}
		if (sc->rescan || now >= next_due) {
			sc->rescan = false;
			next_due = INT64_MAX;
			for (j = sc->jobs; j; j = j->next) {
				if (j->state != J_IDLE)
					continue;
				if (j->due <= now)
					job_start(sc, j, now);
				if (j->state == J_IDLE && j->due < next_due)
					next_due = j->due;
			}
		}
		pthread_mutex_unlock(&sc->sc_lock);

		wait = (next_due < next_check ? next_due : next_check) - clock_mono_ns();
		if (sc->curl_due >= 0 && sc->curl_due - clock_mono_ns() < wait)
			wait = sc->curl_due - clock_mono_ns();
		if (wait < 0)
			wait = 0;
		/* Round up so a due job is not woken for a few times early. */
		n = epoll_wait(sc->epfd, evs, 64, (int)((wait + 999999) / 1000000));
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd, f = 0;

			if (fd == sc->evfd) {
				uint64_t v;

				if (read(sc->evfd, &v, sizeof(v)) < 0) {
					/* EAGAIN: drained already. */
				}
				continue;
			}
			if (evs[i].events & (EPOLLIN | EPOLLHUP))
				f |= CURL_CSELECT_IN;
			if (evs[i].events & EPOLLOUT)
				f |= CURL_CSELECT_OUT;
			if (evs[i].events & EPOLLERR)
				f |= CURL_CSELECT_ERR;
			curl_multi_socket_action(sc->multi, fd, f, &running_n);
		}
		if (sc->curl_due >= 0 && clock_mono_ns() >= sc->curl_due) {
			sc->curl_due = -1;
			curl_multi_socket_action(sc->multi, CURL_SOCKET_TIMEOUT, 0, &running_n);
		}
		pthread_mutex_lock(&sc->sc_lock);
		collect_done(sc);
		pthread_mutex_unlock(&sc->sc_lock);
	}
	return NULL;
}

/* --- workers: check, decode, delta, store ------------------------------- */

static void
describe_curl_error(const struct job *j, struct buf *why)
{
	if (j->too_big || j->cres == CURLE_FILESIZE_EXCEEDED)
		buf_printf(why, "answer larger than %u MiB, refused", SCRAPE_BODY_MAX >> 20);
	else if (j->no_budget)
		buf_adds(why, "too many large answers in flight, refused");
	else if (j->cres == CURLE_OPERATION_TIMEDOUT)
		buf_printf(why, "timed out after %.1f s (%s)", (double)j->ts.timeout / 1e9,
		    j->curl_err[0] ? j->curl_err : "no complete answer");
	else if (j->cres == CURLE_TOO_MANY_REDIRECTS)
		buf_adds(why, "too many redirects");
	else
		buf_printf(why, "%s", j->curl_err[0] ? j->curl_err : curl_easy_strerror(j->cres));
}

/* Whether a body is obviously not pprof (text, HTML) and why. */
static bool
not_pprof(const struct job *j, struct buf *why)
{
	const unsigned char *d = (const unsigned char *)j->body.data;
	size_t i, n = j->body.len;

	if (n == 0) {
		buf_adds(why, "empty answer, not a pprof profile");
		return true;
	}
	if (strncasecmp(j->ctype, "text/html", 9) == 0) {
		buf_adds(why, "answer is HTML (Content-Type text/html), not a pprof profile");
		return true;
	}
	if (profile_is_gzip(d, n))
		return false;
	for (i = 0; i < n && i < 64 && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' ||
	    d[i] == '\t'); i++)
		;
	if (i < n && d[i] == '<') {
		buf_adds(why, "answer is HTML/XML, not a pprof profile");
		return true;
	}
	return false;
}

/* The first line of a text body, for an HTTP error's reason. */
static void
add_snippet(const struct job *j, struct buf *why)
{
	size_t i;

	if (j->body.len == 0 || strncasecmp(j->ctype, "text/plain", 10) != 0)
		return;
	buf_adds(why, ": ");
	for (i = 0; i < j->body.len && i < 120; i++) {
		unsigned char c = (unsigned char)j->body.data[i];

		if (c == '\n' || c == '\r')
			break;
		buf_addc(why, c >= 0x20 && c < 0x7f ? (char)c : '?');
	}
}

/* Process one finished transfer. Returns 0 (stored or primed) or -errno with why. */
static int
job_process(struct scraper *sc, struct job *j, struct buf *why, bool *stored,
    bool *restarted)
{
	struct store_input in = { .service = j->ts.service, .type = j->ts.profile->type,
	    .labels = &j->ts.labels, .created_at = j->start_real, .source = "scrape" };
	struct profile *cur = NULL, *delta = NULL;
	int rc;

	*stored = false;
	*restarted = false;
	if (j->cres != CURLE_OK) {
		describe_curl_error(j, why);
		return -EIO;
	}
	if (j->http_code != 200) {
		buf_printf(why, "HTTP status %ld", j->http_code);
		add_snippet(j, why);
		return -EIO;
	}
	if (not_pprof(j, why))
		return -EINVAL;
	if (j->ts.profile->kind != SK_CUMULATIVE) {
		if ((rc = store_put(sc->st, &in, j->body.data, j->body.len, NULL, why)) == 0)
			*stored = true;
		return rc;
	}
	if ((rc = profile_decode(j->body.data, j->body.len, &cur, why)) < 0)
		return rc;
	if (j->prev == NULL) {
		j->prev = cur;		/* the first scrape only primes */
		return 0;
	}
	rc = profile_delta(cur, j->prev, &delta, why);
	if (rc == -ERANGE || rc == -EINVAL) {
		/* A restart (or a new binary with other sample types): start over. */
		log_info("scrape %s %s: %s; starting over", j->ts.instance, j->ts.profile->name,
		    why->data ? why->data : "counters went down");
		buf_reset(why);
		*restarted = true;
		profile_free(j->prev);
		j->prev = cur;
		return 0;
	}
	if (rc == 0 && (rc = store_put_profile(sc->st, &in, delta, NULL, why)) == 0)
		*stored = true;
	profile_free(delta);
	profile_free(j->prev);
	j->prev = cur;
	return rc;
}

static void
job_done(struct scraper *sc, struct job *j, int rc, struct buf *why, bool stored,
    bool restarted)
{
	struct buf ml = { 0 };
	int64_t dur = j->end_mono - j->start_mono;
	int was = j->health;

	job_mlabels(j, &ml);
	pthread_mutex_lock(&sc->sc_lock);
	j->n_scrapes++;
	j->last_scrape = j->start_real;
	j->last_duration = dur;
	if (restarted)
		j->n_restarts++;
	if (rc == 0) {
		j->health = 1;
		j->fails = 0;
		j->last_error[0] = '\0';
		if (stored)
			j->n_stored++;
		else
			j->primed = true;
	} else {
		j->health = 0;
		j->fails++;
		j->n_failures++;
		snprintf(j->last_error, sizeof(j->last_error), "%s",
		    why->data && why->data[0] ? why->data : strerror(-rc));
		if (j->fails > 1) {
			/* Back off: the next attempt waits 2^(k-1) slots, at most 8. */
			int64_t k = j->fails - 1 < 4 ? (INT64_C(1) << (j->fails - 1)) :
			    SCRAPE_BACKOFF_MAX;

			if (k > SCRAPE_BACKOFF_MAX)
				k = SCRAPE_BACKOFF_MAX;
			j->due = j->sched + k * j->ts.interval;
		}
	}
	if (j->health != was) {
		if (j->health == 1)
			log_info("scrape %s %s: up", j->ts.url, j->ts.profile->name);
		else
			log_warnx("scrape %s %s: down: %s", j->ts.url, j->ts.profile->name,
			    j->last_error);
	}
	log_debug("scrape %s: %s in %.1f ms, started %.1f ms late%s%s", j->ts.url,
	    rc < 0 ? "failed" : stored ? "stored" : "primed", (double)dur / 1e6,
	    (double)j->last_lateness / 1e6, rc < 0 ? ": " : "", rc < 0 ? j->last_error : "");
	/* Under sc_lock, so a job being removed cannot get its series back. */
	if (!j->removed && ml.data) {
		metrics_set("profilefs_scrape_up", ml.data, rc == 0 ? 1 : 0);
		metrics_set("profilefs_scrape_duration_seconds", ml.data, (double)dur / 1e9);
		if (rc < 0)
			metrics_add("profilefs_scrape_errors_total", ml.data, 1);
		buf_printf(&ml, ",outcome=\"%s\"", rc < 0 ? "error" : stored ? "stored" :
		    "primed");
		metrics_add("profilefs_scrapes_total", ml.data, 1);
	}
	j->state = J_IDLE;
	sc->rescan = true;
	body_release(j);
	if (j->removed) {
		/* curl handles are the scheduler's to free. */
		j->next = sc->dead;
		sc->dead = j;
	}
	pthread_mutex_unlock(&sc->sc_lock);
	sched_wake(sc);
	buf_free(&ml);
}

static void *
worker_main(void *arg)
{
	struct scraper *sc = arg;
	struct buf why = { 0 };

	pthread_mutex_lock(&sc->sc_lock);
	for (;;) {
		struct job *j;
		bool stored, restarted;
		int rc;

		while (sc->qhead == NULL && !sc->wstop)
			pthread_cond_wait(&sc->sc_cond, &sc->sc_lock);
		if ((j = sc->qhead) == NULL)
			break;
		if ((sc->qhead = j->qnext) == NULL)
			sc->qtail = &sc->qhead;
		pthread_mutex_unlock(&sc->sc_lock);
		buf_reset(&why);
		rc = job_process(sc, j, &why, &stored, &restarted);
		job_done(sc, j, rc, &why, stored, restarted);
		pthread_mutex_lock(&sc->sc_lock);
	}
	pthread_mutex_unlock(&sc->sc_lock);
	buf_free(&why);
	return NULL;
}

/* --- start, stop, status ------------------------------------------------ */

int
scrape_start(struct store *st, const char *targets_file, struct scraper **out)
{
	struct scraper *sc;
	int rc, i;

	*out = NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_warnx("scrape: libcurl failed to initialise");
		return -ENOMEM;
	}
	if ((sc = calloc(1, sizeof(*sc))) == NULL || (sc->file = strdup(targets_file)) == NULL) {
		free(sc);
		return -ENOMEM;
	}
	sc->st = st;
	sc->qtail = &sc->qhead;
	sc->curl_due = -1;
	sc->epfd = epoll_create1(EPOLL_CLOEXEC);
	sc->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&sc->sc_lock, NULL);
	pthread_cond_init(&sc->sc_cond, NULL);
	if (sc->epfd < 0 || sc->evfd < 0 || (sc->multi = curl_multi_init()) == NULL) {
		rc = sc->epfd < 0 || sc->evfd < 0 ? -errno : -ENOMEM;
		log_warn("scrape: cannot set up the event loop");
		goto fail;
	}
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = sc->evfd };

		epoll_ctl(sc->epfd, EPOLL_CTL_ADD, sc->evfd, &ev);
	}
	curl_multi_setopt(sc->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(sc->multi, CURLMOPT_SOCKETDATA, sc);
	curl_multi_setopt(sc->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(sc->multi, CURLMOPT_TIMERDATA, sc);
	metrics_describe("profilefs_scrape_up", "gauge",
	    "1 if the last scrape of this target and profile succeeded");
	metrics_describe("profilefs_scrape_duration_seconds", "gauge",
	    "duration of the last scrape of this target and profile");
	metrics_describe("profilefs_scrape_errors_total", "counter", "failed scrapes");
	metrics_describe("profilefs_scrapes_total", "counter", "scrapes by outcome");
	metrics_describe("profilefs_scrape_lateness_seconds", "histogram",
	    "how late scrapes started against their schedule");
	metrics_describe("profilefs_scrape_jobs", "gauge", "target-profile pairs scraped");
	metrics_describe("profilefs_scrape_reload_errors_total", "counter",
	    "targets file reloads refused");
	if ((rc = targets_check(sc, true)) < 0) {
		log_warnx("scrape: cannot start without a valid targets file %s", targets_file);
		goto fail;
	}
	for (i = 0; i < SCRAPE_WORKERS; i++) {
		if ((rc = -pthread_create(&sc->workers[i], NULL, worker_main, sc)) < 0)
			goto fail;
		sc->nworkers++;
	}
	if ((rc = -pthread_create(&sc->sched_thr, NULL, sched_main, sc)) < 0)
		goto fail;
	sc->sched_started = true;
	log_info("scrape: targets from %s", targets_file);
	*out = sc;
	return 0;
fail:
	scrape_stop(sc);
	return rc;
}

void
scrape_stop(struct scraper *sc)
{
	struct job *j;
	int i;

	if (sc == NULL)
		return;
	atomic_store(&sc->stop, true);
	if (sc->sched_started) {
		sched_wake(sc);
		pthread_join(sc->sched_thr, NULL);
	}
	pthread_mutex_lock(&sc->sc_lock);
	sc->wstop = true;
	pthread_cond_broadcast(&sc->sc_cond);
	pthread_mutex_unlock(&sc->sc_lock);
	for (i = 0; i < sc->nworkers; i++)
		pthread_join(sc->workers[i], NULL);
	while ((j = sc->jobs) != NULL) {
		sc->jobs = j->next;
		job_drop(sc, j);
	}
	while ((j = sc->dead) != NULL) {
		sc->dead = j->next;
		job_free(j);
	}
	if (sc->multi)
		curl_multi_cleanup(sc->multi);
	if (sc->epfd >= 0)
		close(sc->epfd);
	if (sc->evfd >= 0)
		close(sc->evfd);
	pthread_cond_destroy(&sc->sc_cond);
	pthread_mutex_destroy(&sc->sc_lock);
	free(sc->file);
	free(sc);
	curl_global_cleanup();
}

/* "2006-01-02T15:04:05.000Z", or null for 0 (never). */
static json_t *
json_time(int64_t ns)
{
	time_t t = (time_t)(ns / NS);
	struct tm tm;
	char d[32], s[48];

	if (ns == 0)
		return json_null();
	gmtime_r(&t, &tm);
	strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(s, sizeof(s), "%s.%03dZ", d, (int)(ns % NS / 1000000));
	return json_string(s);
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One job's line of .targets.json; a new reference, NULL when out of memory. */
static json_t *
job_json(const struct job *j, int64_t now)
{
	struct buf lt = { 0 };
	json_t *o;

	labels_format(&j->ts.labels, &lt);
	o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:b,s:o,s:o,s:o,s:o,s:o,"
	    "s:I,s:I,s:i,s:I,s:I,s:I}",
	    "instance", jsonw_str(j->ts.instance),
	    "profile", jsonw_str(j->ts.profile->name),
	    "service", jsonw_str(j->ts.service),
	    "type", jsonw_str(j->ts.profile->type),
	    "labels", jsonw_str(lt.data ? lt.data : ""),
	    "url", jsonw_str(j->ts.url),
	    "interval_seconds", jsonw_fixed((double)j->ts.interval / 1e9, 3),
	    "timeout_seconds", jsonw_fixed((double)j->ts.timeout / 1e9, 3),
	    "health", j->health < 0 ? "unknown" : j->health ? "up" : "down",
	    "up", j->health == 1,
	    "last_scrape", json_time(j->last_scrape),
	    "last_duration_seconds", jsonw_fixed((double)j->last_duration / 1e9, 6),
	    "last_lateness_seconds", jsonw_fixed((double)j->last_lateness / 1e9, 6),
	    "last_error", jsonw_str(j->last_error[0] ? j->last_error : NULL),
	    "next_scrape_in_seconds",
	    jsonw_fixed(j->state == J_IDLE ? (double)(j->due - now) / 1e9 : 0.0, 3),
	    "scrapes", (json_int_t)j->n_scrapes, "failures", (json_int_t)j->n_failures,
	    "consecutive_failures", j->fails, "stored", (json_int_t)j->n_stored,
	    "missed_slots", (json_int_t)j->n_missed, "restarts", (json_int_t)j->n_restarts);
	buf_free(&lt);
	return o;
}

int
scrape_status_json(struct scraper *sc, struct buf *b)
{
	struct job *j;
	double *late = NULL;
	json_t *doc, *lateness, *targets;
	size_t n;
	int64_t now;
	int rc;

	if (sc == NULL)
		return -ENOENT;
	now = clock_mono_ns();
	pthread_mutex_lock(&sc->sc_lock);
	n = sc->nlate < LATENESS_RING ? sc->nlate : LATENESS_RING;
	if (n && (late = malloc(n * sizeof(*late))) != NULL) {
		memcpy(late, sc->late, n * sizeof(*late));
		qsort(late, n, sizeof(*late), dbl_cmp);
	}
	lateness = late ? json_pack("{s:I,s:I,s:o,s:o,s:o}", "starts", (json_int_t)sc->nlate,
	    "window", (json_int_t)n, "p50", jsonw_fixed(late[(n - 1) / 2], 6),
	    "p99", jsonw_fixed(late[(size_t)ceil(0.99 * (double)n) - 1], 6),
	    "max", jsonw_fixed(late[n - 1], 6)) :
	    json_pack("{s:I}", "starts", (json_int_t)sc->nlate);
	targets = json_array();
	for (j = sc->jobs; j && targets; j = j->next)
		if (json_array_append_new(targets, job_json(j, now)) < 0) {
			json_decref(targets);
			targets = NULL;
		}
	/* The file's error may quote anything from the file: jsonw_str() repairs it. */
	doc = json_pack("{s:o,s:o,s:o,s:I,s:o,s:o}",
	    "targets_file", jsonw_str(sc->file),
	    "loaded", json_time(sc->f_loaded),
	    "error", jsonw_str(sc->f_error[0] ? sc->f_error : NULL),
	    "jobs", (json_int_t)sc->njobs,
	    "lateness_seconds", lateness,
	    "targets", targets);
	pthread_mutex_unlock(&sc->sc_lock);
	free(late);
	if ((rc = jsonw_dump(b, doc, JSON_INDENT(2))) == 0)
		rc = buf_addc(b, '\n');
	json_decref(doc);
	return rc;
}
