/*
 * debuginfod: separate debug files fetched by GNU build id from debuginfod
 * servers (GET URL/buildid/HEX/debuginfo), in the background, into a bounded
 * cache directory under the data directory. The symbolizer asks (never
 * waiting), a worker thread fetches, validates (an ELF file of bounded size
 * whose build id is the one asked for) and stores; what to do with the file
 * is symbolize.c's business.
 *
 * Cache directory layout (DIR = <data>/debuginfo, the data directory's owner's):
 *   HEX.debug   a validated debug file; evicted oldest first past the size cap
 *   HEX.none    empty: every server said 404; asked again after NONE_RETRY
 *   .tmp-HEX    a download in progress (removed at start and on failure)
 * Names are made only from hex build ids; files are opened with openat()
 * relative to the directory's fd and O_NOFOLLOW, so the cache never follows
 * a link or leaves its directory.
 *
 * Thread-safe: dbginfod_open/_request/_generation may be called from any thread.
 */
#ifndef PROFILEFS_DEBUGINFOD_H
#define PROFILEFS_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dbginfod;

#define DBGINFOD_CACHE_DEFAULT	(1ull << 30)	/* bytes of the cache directory */
#define DBGINFOD_FILE_MAX	(512ull << 20)	/* one debug file */

/*
 * Parse a server list: URLs separated by commas or spaces (DEBUGINFOD_URLS
 * uses spaces), each http:// or https://, no control bytes. The result (one
 * URL per line, trailing '/' removed) is malloc'ed into *out. 0, or -EINVAL
 * with *bad pointing at a static reason.
 */
int	dbginfod_parse_urls(const char *list, char **out, const char **bad);
/*
 * Whether a server's redirect from URL from to URL to may be followed (0) or
 * not (-EPERM, *why a static reason): http or https only, never from https
 * (the server's or from's) to http, and not to this host (localhost, a
 * loopback, unspecified or own address written out) unless to the
 * configured server's own host and port (*same_server then).
 */
int	dbginfod_redirect_check(const char *server, const char *from, const char *to,
	    bool *same_server, const char **why);
struct sockaddr;
/*
 * Whether an address is this host's: loopback (127.0.0.0/8, ::1), unspecified
 * (0.0.0.0/8, ::), the IPv4-mapped forms of those, or an address of one of its
 * interfaces. What a redirect's connection may not reach.
 */
bool	dbginfod_addr_local(const struct sockaddr *sa);
/*
 * Start the fetcher: urls as from dbginfod_parse_urls (copied), the cache in
 * <datadir>/debuginfo (made if missing, owned like datadir), at most
 * cache_bytes (0: default) on disk. 0 and *out, or -errno (logged).
 */
int	dbginfod_create(const char *urls, const char *datadir, uint64_t cache_bytes,
	    struct dbginfod **out);
/* Stop the worker (an ongoing download is cut) and free everything. NULL is fine. */
void	dbginfod_destroy(struct dbginfod *d);

/* What is known of a build id. */
enum dbginfod_state {
	DBGINFOD_READY,		/* *fd: the cached file, open read-only (the caller closes it) */
	DBGINFOD_PENDING,	/* queued or being fetched: ask again later */
	DBGINFOD_NONE,		/* not to be had now (404, failures, queue full, bad id) */
};
/*
 * The cached debug file of build id hex (lowercase, 2..40 digits) or, when
 * there is none and request is true, a fetch queued (unless a negative answer
 * or a recent failure is remembered). Never blocks on the network.
 */
enum dbginfod_state dbginfod_lookup(struct dbginfod *d, const char *hex, bool request,
	    int *fd);
/* Bumped each time a fetch ends (file stored, or given up): ask again then. */
uint64_t dbginfod_generation(struct dbginfod *d);

/*
 * The GNU build id (hex, at most 20 bytes) in the SHT_NOTE sections of the
 * ELF file open at fd: 0, -ENOEXEC (not ELF) or -ENOENT (none).
 */
int	dbginfod_build_id(int fd, char out[41]);
/*
 * Whether the file open at fd is a usable answer for build id hex: a regular
 * file of at most max bytes, ELF, with a GNU build-id note equal to hex.
 * 0, or -EINVAL/-ENOEXEC/-EFBIG with *why set to a static reason.
 */
int	dbginfod_validate(int fd, const char *hex, uint64_t max, const char **why);

#endif
