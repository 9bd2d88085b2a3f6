/*
 * base: the utilities every layer of profilefs builds on, and nothing that
 * knows about profiles or storage: the growable byte buffer, arenas, the
 * interning hash table, logging, the metrics registry, label sets in their
 * canonical text form, clocks and durations, and the allocation policy.
 *
 * Out of memory: small allocations (xmalloc() and friends, array growth,
 * arena chunks) abort the process as Redis does, since a daemon that cannot
 * get a few kilobytes cannot do anything useful; what outside input can make
 * large is bounded before it is allocated (decode budgets, body limits), and
 * struct buf keeps a sticky error that is checked once where a buffer is used.
 *
 * This is the one header of base/ that other layers include.
 */
#ifndef PROFILEFS_BASE_H
#define PROFILEFS_BASE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>


/* --- allocation (alloc.c): these abort on failure, see above --- */
void	*xmalloc(size_t n);
void	*xcalloc(size_t nmemb, size_t size);
void	*xreallocarray(void *p, size_t nmemb, size_t size);
char	*xstrdup(const char *s);
/*
 * Grow array p of elements of `size` bytes so it holds at least `need`:
 * *cap (in elements) doubles as needed. Returns the (possibly moved) array:
 *	v = xgrow(v, &cap, n + 1, sizeof(*v));
 */
void	*xgrow(void *p, size_t *cap, size_t need, size_t size);

/*
 * budget (budget.c): the one memory budget of the process. struct buf growth
 * and arena chunks reserve their bytes here and fail (-ENOMEM, NULL) past the
 * limit rather than let outside input take the host's memory; callers at the
 * edges tell their clients EAGAIN or 503. Thread-safe.
 */
/* The limit in bytes; 0 keeps the default (a quarter of RAM, 1-4 GiB). */
void	budget_set_limit(size_t bytes);
size_t	budget_limit(void);
/* Take n bytes of the budget: 0, or -ENOMEM (counted) when it would pass the limit. */
int	budget_reserve(size_t n);
/* Take n bytes whatever the limit (memory that is already allocated). */
void	budget_charge(size_t n);
void	budget_release(size_t n);
/* Wait up to timeout_ns until n bytes are free (nothing is taken). 0 or -ENOMEM. */
int	budget_wait(size_t n, int64_t timeout_ns);
/*
 * Whether memory runs short: a reservation was refused or waited for in the
 * last 2 s, or more than 7/8 of the limit is in use. Who holds memory it
 * could give back (caches, idle tables) evicts when this is true, at its own
 * safe points: nothing in the budget calls out to them.
 */
bool	budget_pressed(void);
/*
 * Sleep up to timeout_ns, less if room ran short since *seen (a count that
 * starts at 0 and that this updates), not at all once *stop is set; then
 * return budget_pressed(). The tick of an evicting thread.
 */
bool	budget_wait_pressure(uint64_t *seen, int64_t timeout_ns, const _Atomic bool *stop);
/* Wake every budget_wait_pressure(): call after setting its *stop. */
void	budget_wake_pressure(void);
/* Bytes in use, the most ever in use, reservations refused. Any may be NULL. */
void	budget_stats(size_t *used, size_t *peak, uint64_t *refused);

/* --- clocks and durations (clock.c) --- */
int64_t	clock_now_ns(void);	/* CLOCK_REALTIME, ns since the epoch */
int64_t	clock_mono_ns(void);	/* CLOCK_MONOTONIC, ns */

/*
 * cancel (cancel.c): whether a request's work should stop: past its CPU
 * time (cpu_limit_ns of the starting thread's CPU clock, 0: no limit), or
 * its client gone (fd, the client's socket, closed by the peer; -1: none).
 * cancel_check() is cheap enough for every step of a loop: 0 to go on,
 * -ETIMEDOUT or -ECONNRESET from then on. A NULL or zeroed struct never
 * cancels. Not shared between requests; no lock.
 */
struct cancel {
	bool		 on;
	int		 fd;
	int		 why;		/* 0, or the sticky reason */
	clockid_t	 clock;		/* the starting thread's CPU clock */
	int64_t		 cpu_start_ns, cpu_limit_ns;
	int64_t		 last_ns;	/* clock_mono_ns() of the last look */
};
void	cancel_start(struct cancel *c, int64_t cpu_limit_ns, int fd);
int	cancel_check(struct cancel *c);
/* CPU time the starting thread has used since cancel_start() (0 for NULL). */
int64_t	cancel_cpu_ns(const struct cancel *c);
/*
 * A duration as Go and Prometheus write them: one or more <number><unit>
 * ("90s", "1m30s", "1.5h", "500ms"), units ns us ms s m h d w. A unit is
 * required; the result is > 0 and <= max_ns. -EINVAL otherwise.
 */
int	clock_parse_duration(const char *s, int64_t max_ns, int64_t *ns);
/*
 * The one parser of ISO 8601 dates and times, in UTC:
 * YYYY-MM-DD[THH[:MM[:SS]]] (extended form) or YYYY-MM-DD[THH[MM[SS]]]
 * (basic form, the one the tree lists: no ':' in names), each with an
 * optional trailing 'Z' (len bytes of s, no more, no less); with
 * CLOCK_ISO_FRACTION the seconds may be followed by a fraction (".5" or
 * ",5", 1 to 9 digits). Dates are checked as Go's time.Parse does
 * (no 2026-02-30); the time and a day after it must fit int64 nanoseconds
 * (1677-09-22 to 2262-04-10).
 * *ns: ns since the epoch; *unit (may be NULL): the length of the period the
 * text names (a day, an hour, a minute, a second, or 1 ns with a fraction).
 * -EINVAL otherwise.
 */
#define CLOCK_ISO_FRACTION	1u
int	clock_parse_iso(const char *s, size_t len, unsigned flags, int64_t *ns, int64_t *unit);
/* A date and time of day (validated as above, frac in ns) as ns since the epoch. -EINVAL. */
int	clock_civil_ns(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t se,
	    int64_t frac, int64_t *ns);
/* The proleptic Gregorian date of a count of days since 1970-01-01. */
void	clock_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/* a / b rounded toward negative infinity (b > 0): the window a time falls in. */
static inline int64_t
floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* --- hex digits (buf.c) --- */
static inline char
hex_digit(unsigned v, bool upper)
{
	return (upper ? "0123456789ABCDEF" : "0123456789abcdef")[v & 15];
}
/* The value of hex digit c (either case), or -1. */
int	hex_value(int c);

/* --- %XX decoding (buf.c): the one decoder, for labels, URLs and ClickHouse text --- */
#define PCT_PLUS_SPACE	1u	/* '+' is a space (a URL's query, Go's url.Values) */
#define PCT_NUL_OK	2u	/* %00 is a NUL byte (else refused: it would cut a string) */
#define PCT_LENIENT	4u	/* a bad escape or %00 stays as it is: never -EINVAL */
/*
 * Decode n bytes of s (%XX in either case) into dst, which has room for n
 * bytes: decoding never grows, and dst may be s. The decoded length, or
 * -EINVAL for a bad or cut escape or %00 (unless flags allow them).
 */
long	pct_decode(char *dst, const char *s, size_t n, unsigned flags);

/* --- varints (buf.c): protobuf's, LEB128 unsigned --- */
#define VARINT_MAX	10	/* bytes of the longest */
/* Inline: the store's packed profiles decode millions of them per merge. */
/* Write v at p (room for VARINT_MAX bytes); the bytes written. */
static inline size_t
varint_put(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

/* Read one at *p (before end), advancing *p. 0, or -EINVAL if cut or too long. */
static inline int
varint_get(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
		shift += 7;
	}
	return -EINVAL;
}

/* --- searching sorted tables (search.c) --- */
/*
 * In an array of n elements of `size` bytes, sorted by the uint64_t at
 * `offset` in each, the number of leading elements whose key is <= key (so
 * element [result - 1], if any, is the last one starting at or below key).
 */
size_t	search_u64_le(const void *base, size_t n, size_t size, size_t offset, uint64_t key);
#define SEARCH_LE(arr, n, field, key) \
	search_u64_le((arr), (n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), (key))

/*
 * buf: the one growable byte buffer of profilefs, for request bodies, encoded
 * profiles and generated file contents. Binary-safe and always NUL-terminated
 * (so text can be handed to string functions). A zeroed struct buf is empty and
 * valid; buf_free() on it is a no-op. Its storage is counted in the memory
 * budget: growth past 64 KiB fails with -ENOMEM when the budget is used up
 * (smaller buffers are counted, never refused), and a buf must be freed with
 * buf_free() (or its storage taken with buf_steal()), never with free().
 */
/* --- the byte buffer (buf.c) --- */
struct buf {
	char	*data;
	size_t	 len;
	size_t	 cap;
	size_t	 max;	/* 0: no limit; else appends past max bytes fail (-EFBIG) */
	int	 err;	/* sticky: the first failed append's -errno, 0 if none */
};

/* The first failure of an append to b (-ENOMEM, -EFBIG), or 0: check once, when b is used. */
static inline int
buf_error(const struct buf *b)
{
	return b->err;
}

/*
 * Appends return 0 or b's sticky error (set by this or an earlier failure);
 * buf_reset() and buf_free() clear it. Make room for `more` bytes past len.
 */
int	buf_reserve(struct buf *b, size_t more);
int	buf_add(struct buf *b, const void *p, size_t n);
int	buf_addc(struct buf *b, int c);
int	buf_adds(struct buf *b, const char *s);
int	buf_printf(struct buf *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Append s escaped for XML text and attributes; invalid UTF-8 becomes U+FFFD. */
int	buf_add_xml(struct buf *b, const char *s, size_t n);
/* Append a protobuf varint (varint_put()). */
int	buf_add_varint(struct buf *b, uint64_t v);
/* Append n bytes of s %XX-decoded (pct_decode()). 0, -EINVAL, or b's error. */
int	buf_add_pct_decoded(struct buf *b, const char *s, size_t n, unsigned flags);
/* Append n bytes of p in base64 (the standard alphabet, padded). 0 or b's error. */
int	buf_add_base64(struct buf *b, const void *p, size_t n);
/*
 * Append the bytes that n characters of base64 s stand for, as proto3's
 * JSON readers take them: either alphabet (standard or URL-safe), the
 * padding optional (decoding stops at the first '='). 0, -EINVAL for a
 * character of neither alphabet (b then holds what came before), or b's error.
 */
int	buf_add_base64_decoded(struct buf *b, const char *s, size_t n);
/* A decimal integer; a number with dec (0..4) digits after the point ("%.<dec>f"). */
int	buf_add_i64(struct buf *b, int64_t v);
int	buf_add_fixed(struct buf *b, double v, int dec);
void	buf_reset(struct buf *b);
void	buf_free(struct buf *b);
/* Hand the storage to the caller (who frees it with free()); b becomes empty. */
char	*buf_steal(struct buf *b, size_t *len);

/* Read a whole file into b, refusing files over `limit` bytes (-EFBIG). */
int	buf_read_file(struct buf *b, const char *path, size_t limit);

/*
 * utf8: well-formed UTF-8 (RFC 3629) for output that must hold it (JSON,
 * XML) when the text came from outside and may hold any bytes.
 */

/* Length (1-4) of the well-formed sequence at s, of at most n bytes; 0 if none. */
size_t	utf8_seqlen(const char *s, size_t n);
bool	utf8_valid(const char *s, size_t n);
/* Append s with each byte that does not start a well-formed sequence replaced by U+FFFD. */
int	utf8_repair(struct buf *out, const char *s, size_t n);
/*
 * The longest string stored from outside (a function, system or file name,
 * a label key or value: any entry of a profile's string table), in bytes,
 * whatever the producer (HTTP pushes, ingest/, the scraper, the eBPF agent).
 * A longer one is cut at a UTF-8 character boundary and ends in
 * STR_CUT_MARK, the whole within STR_MAX_STORED.
 */
#define STR_MAX_STORED	4096
#define STR_CUT_MARK	"\xe2\x80\xa6[cut]"	/* "…[cut]" */
/*
 * How many bytes of s[0..n) to keep so that they and STR_CUT_MARK fit in
 * max bytes (n itself when s fits whole): never half of a multi-byte
 * character. max must exceed the mark's length.
 */
size_t	utf8_cut(const char *s, size_t n, size_t max);
/* Append s[0..n) to out, cut as utf8_cut() says and marked when it is longer than max. */
int	utf8_add_cut(struct buf *out, const char *s, size_t n, size_t max);

/*
 * jsonw: JSON output built with jansson (<jansson.h> for the tree functions).
 * Strings from outside go through jsonw_str(), never json_string(): jansson
 * refuses invalid UTF-8, jsonw_str() repairs it, so documents always encode.
 */

struct json_t;

/*
 * A new JSON string holding s (n bytes) with invalid UTF-8 repaired, JSON null
 * for s == NULL. The caller owns the reference; NULL only when out of memory,
 * which jansson's builders (json_pack's "o", json_*_set_new) turn into a failure.
 */
struct json_t	*jsonw_str(const char *s);
struct json_t	*jsonw_strn(const char *s, size_t n);
/* A JSON real rounded to `decimals` places (seconds to the ms: 3). */
struct json_t	*jsonw_fixed(double v, unsigned decimals);
/*
 * Append v encoded with jansson's dump flags (JSON_COMPACT, JSON_INDENT(n), ...)
 * to out; v is not consumed. On failure nothing is appended and out's sticky
 * error is returned: -ENOMEM when v is NULL (a failed build) or memory runs
 * out, -EFBIG past out's max.
 */
int	jsonw_dump(struct buf *out, const struct json_t *v, size_t flags);

/*
 * arena: bump allocator for per-request work (decoding and merging many
 * profiles). Everything allocated from an arena is freed at once by
 * arena_destroy(). Not thread-safe: one arena belongs to one thread at a time.
 */

struct arena;

struct arena	*arena_create(void);
void		 arena_destroy(struct arena *a);
/* 16-byte aligned, uninitialised; NULL on allocation failure or overflow. */
void		*arena_alloc(struct arena *a, size_t n);
void		*arena_calloc(struct arena *a, size_t nmemb, size_t size);
void		*arena_memdup(struct arena *a, const void *p, size_t n);
/* Bytes handed out so far (for limits and statistics). */
size_t		 arena_used(const struct arena *a);

/*
 * intern: a hash table that gives each distinct byte string a dense index
 * 0, 1, 2, ... in first-seen order. The merge uses one per kind of object
 * (strings, functions, mappings, locations, samples) to find identical ones.
 * Keys are copied into the table's own arena; the table is single-threaded.
 */

struct intern;

struct intern	*intern_create(size_t hint);
void		 intern_destroy(struct intern *t);
/*
 * Index of key, adding it if new (*added set to 1 then). Returns -ENOMEM on
 * allocation failure, otherwise the index (>= 0).
 */
int64_t		 intern_put(struct intern *t, const void *key, size_t len, int *added);
/* Index of key, or -1 if absent. */
int64_t		 intern_get(const struct intern *t, const void *key, size_t len);
size_t		 intern_count(const struct intern *t);
/* Memory the table holds (keys, slots, index), for caches that charge it. */
size_t		 intern_bytes(const struct intern *t);
/* The key of index i (valid until the table is destroyed). */
const void	*intern_key(const struct intern *t, size_t i, size_t *len);

/* The in-memory tables' hash; may change between builds: never store it. */
uint64_t	 hash_bytes(const void *p, size_t n);

/*
 * digest: the stable hashes of what is stored (see base/digest.c for their
 * definitions). pfhash64() is the local store's 64-bit tag, fixed forever;
 * digest128() writes the collision-resistant content address of p (the
 * first 16 bytes of SHA-256) as 32 hex digits and a NUL into out.
 */
#define DIGEST128_HEX	32
uint64_t	 pfhash64(const void *p, size_t n);
void		 digest128(const void *p, size_t n, char out[DIGEST128_HEX + 1]);

/*
 * log: the one logging module. Messages go to stderr (the daemon runs in the
 * foreground) with a UTC timestamp and level. warn() appends strerror(errno),
 * warnx() does not, fatal() exits 1, debug() prints only when verbose.
 */

extern int log_verbose;

void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What stops the daemon, said as an error (the caller exits). */
void	log_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/*
 * metrics: process-wide counters, gauges and histograms that any module
 * records and the HTTP server renders in Prometheus text format. Series are
 * created on first use; names follow Prometheus conventions (profilefs_*).
 * Thread-safe (protected by mx_lock inside).
 */

/*
 * The names of the metrics more than one layer writes or describes, one
 * definition each (the producers' own, named in one file, stay there):
 * profiles offered by every source and how storing them went, merges made
 * by the tree and by the API, FUSE requests, the store's gauges and the
 * memory budget. /metrics (api/http.c) describes them.
 */
#define METRIC_INGESTED_PROFILES	"profilefs_ingested_profiles_total"
#define METRIC_INGESTED_BYTES		"profilefs_ingested_bytes_total"
#define METRIC_INGEST_DURATION		"profilefs_ingest_duration_seconds"
#define METRIC_MERGE_DURATION		"profilefs_merge_duration_seconds"
#define METRIC_FUSE_REQUESTS		"profilefs_fuse_requests_total"
#define METRIC_FUSE_ERRORS		"profilefs_fuse_errors_total"
#define METRIC_STORE_PROFILES		"profilefs_store_profiles_total"
#define METRIC_STORE_REJECTED		"profilefs_store_rejected_total"
#define METRIC_STORE_BYTES		"profilefs_store_bytes_total"
#define METRIC_STORE_SERIES		"profilefs_store_series"
#define METRIC_STORE_DISK_BYTES		"profilefs_store_disk_bytes"
#define METRIC_STORE_WINDOWS_PENDING	"profilefs_store_windows_pending"
#define METRIC_SPAN_IDS_CUT		"profilefs_span_ids_cut_total"
#define METRIC_SPAN_IDS_REFUSED		"profilefs_span_ids_refused_total"
#define METRIC_BUDGET_BYTES		"profilefs_memory_budget_bytes"
#define METRIC_BUDGET_REFUSALS		"profilefs_memory_budget_refusals_total"

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

/*
 * labels: label sets in their canonical text form "k=v,k2=v2": pairs sorted by
 * key (then value), keys and values escaped so that '%', '/', ',', '=' and
 * bytes outside printable ASCII appear as %XX. The same text names a label
 * set in the tree, in the store's series index and in selectors.
 */

#define LABELS_MAX		64	/* pairs in one set */
#define LABEL_MAX_LEN		256	/* bytes of one key or value, unescaped */

struct label {
	char	*key;
	char	*value;
};

struct labelset {
	struct label	pairs[LABELS_MAX];
	size_t		n;
};

/* Append s escaped for a label key/value or a path segment. */
int	labels_escape(struct buf *out, const char *s, size_t n);
/* Undo %XX escapes into out; -EINVAL on a malformed escape. */
int	labels_unescape(struct buf *out, const char *s, size_t n);

/*
 * Parse "k=v,k2=v2" (escaped form; "" is the empty set). The pairs are
 * malloc'd copies, unescaped, sorted; free with labels_clear(). -EINVAL with
 * a reason in err on a malformed set (no '=', empty key, duplicate key, too
 * many or too long).
 */
int	labels_parse(const char *s, struct labelset *ls, struct buf *err);
/* Add one pair (copied); the set is re-sorted. Duplicate keys: -EINVAL. */
int	labels_add(struct labelset *ls, const char *key, const char *value, struct buf *err);
void	labels_clear(struct labelset *ls);
/* Append the canonical text of ls to out. */
int	labels_format(const struct labelset *ls, struct buf *out);
/* Whether every pair of sel is in set (the "all" selector is the empty set). */
bool	labels_match(const struct labelset *sel, const struct labelset *set);

/*
 * matchers: Prometheus label matchers, one parser for the HTTP API's
 * selectors ({service_name="checkout", pod=~"api-.*", region!="eu"}) and the
 * tree's (pod=~api-.*,region!=eu, %XX-escaped). Operators = != =~ !~; a
 * regular expression is RE2 syntax, as Prometheus's (Go's regexp: no
 * back-references, repetition counts at most 1000), matched against the
 * whole value as Prometheus anchors it (^(?:re)$) in time linear in the
 * value; a label a series lacks has the value "", so region!="eu" selects
 * series without region. All matchers must hold.
 *
 * A compiled regex holds at most MATCHER_RE_MEM bytes (RE2's program and
 * matching caches), charged to the memory budget until matchers_clear();
 * one selector's regexes together at most MATCHERS_RE_MEM_MAX.
 */
struct re2shim;

enum matcher_op { MATCH_EQ, MATCH_NE, MATCH_RE, MATCH_NRE };

#define MATCHER_RE_MAX		1024	/* bytes of one regular expression */
#define MATCHER_RE_MEM		((size_t)1 << 20)	/* memory of one compiled */
#define MATCHERS_RE_MEM_MAX	((size_t)32 << 20)	/* of one selector's, or request's */

struct matcher {
	char		*key;
	char		*value;		/* unescaped */
	enum matcher_op	 op;
	struct re2shim	*re;		/* compiled for =~ and !~ (re2shim.h) */
	size_t		 re_mem;	/* of the budget, held for re */
};

struct matchers {
	struct matcher	m[LABELS_MAX];
	size_t		n;
};

/*
 * Parse a Prometheus selector "{k="v", k2=~"re"}" (braces optional; values
 * double-quoted with Go-style escapes \ \" \n \t; "" and "{}" select all)
 * into ms, which the caller frees with matchers_clear(). -EINVAL with the
 * reason in err: bad syntax, an empty key, a bad regex (or one RE2 refuses:
 * a back-reference, a count over 1000, a program over MATCHER_RE_MEM),
 * regexes over MATCHERS_RE_MEM_MAX together, more than LABELS_MAX matchers,
 * a key or value over LABEL_MAX_LEN (MATCHER_RE_MAX for a regex); -ENOMEM,
 * with a reason, when the memory budget has no room for a regex.
 */
int	matchers_parse_prom(const char *s, struct matchers *ms, struct buf *err);
/* The tree's form "k=v,k2!=v2,k3=~re" (keys and values %XX-escaped); the same errors. */
int	matchers_parse_path(const char *s, struct matchers *ms, struct buf *err);
/* Append one matcher (copied; the regex compiled). Errors as the parsers. */
int	matchers_add(struct matchers *ms, const char *key, enum matcher_op op,
	    const char *value, struct buf *err);
void	matchers_clear(struct matchers *ms);
/* Bytes of the budget ms's compiled regexes hold (a request adds its selectors'). */
size_t	matchers_re_mem(const struct matchers *ms);
/* Whether value (NULL: the label is absent, read as "") satisfies m. */
bool	matcher_match(const struct matcher *m, const char *value);
/*
 * Whether the series of service with labels ls satisfies every matcher;
 * the key service_name is the service unless ls has a label of that name.
 */
bool	matchers_match(const struct matchers *ms, const char *service,
	    const struct labelset *ls);
/*
 * Whether a tree selector's text holds a matcher operator (!=, =~, !~) and
 * so is matchers, not a label set. A key ending in '!' or a value starting
 * with '~' is written %21 / %7E there.
 */
bool	matchers_has_ops(const char *text);
/* Whether ms holds only = matchers (a plain label set selects the same). */
bool	matchers_only_eq(const struct matchers *ms);
/* Append the tree's form of ms (canonical: as matchers_parse_path reads it). */
int	matchers_format(const struct matchers *ms, struct buf *out);
/* The operator's text: "=", "!=", "=~", "!~". */
const char *matcher_op_str(enum matcher_op op);

#endif
