/*
 * httpparse: the pure parsers behind the HTTP API, kept apart from the server
 * so that unit tests and fuzzers reach them without a socket: profefe's label
 * and time parameters, Pyroscope's application name and from/until times,
 * the --http HOST:PORT argument, and the time format of the JSON replies.
 * Every parser is bounded by the NUL of its input and reports bad input with
 * -EINVAL and a reason; none of them allocates except into the caller's buf
 * or labelset.
 */
#ifndef PROFILEFS_HTTPPARSE_H
#define PROFILEFS_HTTPPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

/*
 * profefe's labels parameter "k=v,k2=v2" (as profefe's Labels.FromString):
 * split on ',', then on the first '='; keys and values are trimmed of spaces
 * and query-unescaped ('%XX', '+' is a space); pairs with an empty key are
 * dropped. The pairs are added to ls (copies; free with labels_clear()).
 * -EINVAL with a reason in err for a bad escape, a duplicate key or a label
 * over the limits of label sets (base.h).
 */
int	httpparse_labels(const char *s, struct labelset *ls, struct buf *err);

/*
 * profefe's time parameter, layout 2006-01-02T15:04:05 in UTC, optionally
 * followed by a fraction of a second (".5", up to 9 digits) and a 'Z'.
 * *ns: nanoseconds since the epoch. -EINVAL for anything else.
 */
int	httpparse_time(const char *s, int64_t *ns);

/*
 * Pyroscope's from/until: digits are a unix time whose unit follows the
 * digit count (13: ms, 16: us, 19: ns, 8: YYYYMMDD when that is a date,
 * anything else: seconds); "now", "now-1h", "now-1h30m", "-15m" count from
 * now_ns (units s, min/m, h, d, w, mon/M, y). *ns: nanoseconds since the
 * epoch. -EINVAL for what Pyroscope would silently read as "now".
 */
int	httpparse_attime(const char *s, int64_t now_ns, int64_t *ns);

/*
 * Pyroscope's name parameter "app.name{k=v,k2=v2}": the application name
 * (trimmed) is appended to app, the labels added to ls. -EINVAL with a reason
 * for an empty name, unbalanced braces, a pair without '=' or an empty key.
 */
int	httpparse_appname(const char *s, struct buf *app, struct labelset *ls,
	    struct buf *err);

/*
 * --http's "HOST:PORT" or "[IPV6]:PORT": host and port copied out, NUL
 * terminated. -EINVAL with a reason for an empty host, a missing or
 * non-numeric port or one over 65535, or a field too long for its output.
 */
int	httpparse_listen(const char *s, char *host, size_t hostlen, char *port,
	    size_t portlen, struct buf *err);

/*
 * ns since the epoch as Go's time.Time marshals to JSON in UTC
 * ("2006-01-02T15:04:05.123456789Z", trailing zeros of the fraction dropped).
 */
void	httpparse_format_time(int64_t ns, char out[40]);

#endif
