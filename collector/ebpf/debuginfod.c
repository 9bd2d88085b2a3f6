/*
 * debuginfod: debug files by build id from debuginfod servers, fetched by
 * one worker thread with plain HTTP (libcurl, already linked for the
 * scraper and the cluster): libdebuginfod would bring its own cache, which
 * lives where its environment says, follows its own eviction (by age, not
 * size) and writes files we could not hold to the rules below. Here the
 * cache is a directory of the data directory, bounded in bytes, entered
 * only relative to its fd with O_NOFOLLOW, with names made of hex digits.
 *
 * The symbolizer asks dbginfod_lookup() when it loads a file without a
 * symbol table; the answer comes from the cache or is queued. What is known
 * of each build id asked (pending, not found, failing) is kept in memory, a
 * 404 from every server also on disk (HEX.none) so a restart does not ask
 * again at once. Metrics: profilefs_ebpf_debuginfod_*.
 *
 * Redirects are followed here, not by curl, at most MAX_REDIRS of them, each
 * checked first: a server could otherwise send the daemon, which runs as
 * root, to its own HTTP API or to anything else listening on the host. A
 * redirect goes to http or https only, never from https back to http, and
 * never to this host (a loopback, unspecified or own address, by name or as
 * connected to) unless to the configured server's own host and port.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <ifaddrs.h>
#include <libelf.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "debuginfod.h"

#define QUEUE_MAX	1024		/* build ids waiting to be fetched */
#define KNOWN_MAX	4096		/* build ids remembered in memory */
#define NONE_RETRY	(6 * 3600)	/* s: a 404 is asked again after this */
#define FAIL_RETRY	300		/* s: a failed fetch (server down, timeout) */
#define CONNECT_SECS	10
#define TOTAL_SECS	600		/* one download, whatever its speed */
#define LOW_SPEED	1024		/* bytes/s below which ... */
#define LOW_SPEED_SECS	30		/* ... for this long a download is cut */
#define MAX_REDIRS	3

enum known_state { K_PENDING, K_NONE, K_FAILED, K_DONE };

struct known {
	char		 hex[41];
	enum known_state state;
	int64_t		 retry_at;	/* monotonic s, for K_NONE and K_FAILED */
};

struct dbginfod {
	char		*urls;		/* one per line */
	int		 dirfd;
	uint64_t	 cap;		/* bytes of the directory */
	uint64_t	 file_max;
	pthread_t	 thread;
	bool		 running;
	atomic_bool	 stop;
	atomic_uint_fast64_t gen;
	pthread_mutex_t	 lock;
	pthread_cond_t	 cond;
	/* protected by lock */
	char		 queue[QUEUE_MAX][41];
	size_t		 qhead, qlen;
	struct known	*known;
	size_t		 nknown;
	/* the worker's own */
	bool		 failing;	/* the last fetch failed: said once in the log */
};

static int64_t
mono_secs(void)
{
	return clock_mono_ns() / 1000000000;
}

static bool
hex_ok(const char *hex)
{
	size_t n = strlen(hex);

	return n >= 2 && n <= 40 && n % 2 == 0 && strspn(hex, "0123456789abcdef") == n;
}

int
dbginfod_parse_urls(const char *list, char **out, const char **bad)
{
	struct buf b = { 0 };
	const char *p = list, *e;
	size_t n, i;

	*out = NULL;
	*bad = NULL;
	while (*p) {
		while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e && *e != ',' && *e != ' ' && *e != '\t' && *e != '\n'; e++)
			;
		n = (size_t)(e - p);
		if (!(n > 7 && strncmp(p, "http://", 7) == 0) &&
		    !(n > 8 && strncmp(p, "https://", 8) == 0)) {
			*bad = "a server URL must start with http:// or https://";
			goto bad;
		}
		for (i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x21 || p[i] == 0x7f) {
				*bad = "control bytes in a server URL";
				goto bad;
			}
		if (n > 1024) {
			*bad = "a server URL is longer than 1024 bytes";
			goto bad;
		}
		while (n > 0 && p[n - 1] == '/')
			n--;
		buf_add(&b, p, n);
		buf_addc(&b, '\n');
		p = e;
	}
	if (buf_error(&b) < 0) {
		buf_free(&b);
		return -ENOMEM;
	}
	if (b.len == 0) {
		*out = strdup("");
		buf_free(&b);
		return *out ? 0 : -ENOMEM;
	}
	*out = b.data;
	return 0;
bad:
	buf_free(&b);
	return -EINVAL;
}

/* --- validation ---------------------------------------------------------- */

#define NT_GNU_BUILD_ID_	3

/* The GNU build id in the notes of data, hex into out; true if found. */
static bool
note_build_id(Elf_Data *d, char out[41])
{
	size_t off = 0, noff, name_off, desc_off, i;
	GElf_Nhdr nh;

	if (d == NULL || d->d_buf == NULL)
		return false;
	while ((noff = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID_ && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= 20) {
			const unsigned char *p = (const unsigned char *)d->d_buf + desc_off;

			for (i = 0; i < nh.n_descsz; i++)
				snprintf(out + 2 * i, 3, "%02x", p[i]);
			return true;
		}
		off = noff;
	}
	return false;
}

int
dbginfod_build_id(int fd, char out[41])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *e;
	int rc = -ENOEXEC;

	out[0] = '\0';
	elf_version(EV_CURRENT);
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL || elf_kind(e) != ELF_K_ELF)
		goto out;
	rc = -ENOENT;
	while ((scn = elf_nextscn(e, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_NOTE &&
		    sh.sh_size <= (1u << 20) && note_build_id(elf_getdata(scn, NULL), out)) {
			rc = 0;
			break;
		}
out:
	if (e)
		elf_end(e);
	return rc;
}

int
dbginfod_validate(int fd, const char *hex, uint64_t max, const char **why)
{
	char id[41];
	struct stat st;
	int rc;

	*why = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		*why = "too big";
		return -EFBIG;
	}
	if ((rc = dbginfod_build_id(fd, id)) == -ENOEXEC) {
		*why = "not an ELF file";
	} else if (rc < 0) {
		*why = "no build id note";
		rc = -ENOEXEC;
	} else if (strcmp(id, hex) != 0) {
		*why = "another build id";
		rc = -ENOEXEC;
	}
	return rc;
}

/* --- the cache directory ------------------------------------------------- */

struct cfile {
	char		 name[48];
	uint64_t	 bytes;
	int64_t		 mtime;
};

static int
cfile_cmp(const void *a, const void *b)
{
	const struct cfile *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/*
 * Remove leftovers of downloads and stale negative answers, then the oldest
 * debug files until the directory is within its cap. Sets the size gauge.
 */
static void
cache_trim(struct dbginfod *d)
{
	struct cfile *v = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *dir;
	int fd;

	if ((fd = dup(d->dirfd)) < 0 || (dir = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(dir);
	while ((de = readdir(dir)) != NULL) {
		const char *nm = de->d_name, *dot = strrchr(nm, '.');

		if (nm[0] == '.' && strncmp(nm, ".tmp-", 5) != 0)
			continue;
		if (fstatat(d->dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (strncmp(nm, ".tmp-", 5) == 0) {
			/* Only the worker downloads, and not while it trims. */
			unlinkat(d->dirfd, nm, 0);
			continue;
		}
		if (dot && strcmp(dot, ".none") == 0 && now - st.st_mtime > NONE_RETRY) {
			unlinkat(d->dirfd, nm, 0);
			continue;
		}
		if (!S_ISREG(st.st_mode) || dot == NULL || strcmp(dot, ".debug") != 0 ||
		    strlen(nm) >= sizeof(v->name))
			continue;
		v = xgrow(v, &cap, n + 1, sizeof(*v));
		memcpy(v[n].name, nm, strlen(nm) + 1);	/* shorter: checked above */
		v[n].bytes = (uint64_t)st.st_size;
		v[n].mtime = st.st_mtime;
		total += v[n].bytes;
		n++;
	}
	closedir(dir);
	if (total > d->cap && n > 1)
		qsort(v, n, sizeof(*v), cfile_cmp);
	for (i = 0; i < n && total > d->cap; i++) {
		if (unlinkat(d->dirfd, v[i].name, 0) == 0) {
			total -= v[i].bytes;
			log_debug("ebpf: debuginfod cache: evicted %s (%llu bytes)", v[i].name,
			    (unsigned long long)v[i].bytes);
			metrics_add("profilefs_ebpf_debuginfod_evictions_total", NULL, 1);
		}
	}
	free(v);
	metrics_set("profilefs_ebpf_debuginfod_cache_bytes", NULL, (double)total);
}

/* --- fetching ------------------------------------------------------------ */

struct dl {
	struct dbginfod	*d;
	int		 fd;
	uint64_t	 bytes;
	bool		 too_big;
};

static size_t
dl_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct dl *x = arg;
	size_t n = size * nmemb, off = 0;
	ssize_t w;

	if (x->bytes + n > x->d->file_max) {
		x->too_big = true;
		return 0;	/* cuts the transfer */
	}
	while (off < n) {
		if ((w = write(x->fd, p + off, n - off)) < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		off += (size_t)w;
	}
	x->bytes += n;
	return n;
}

static int
dl_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct dl *x = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(&x->d->stop) ? 1 : 0;
}

enum fetch_result { F_FOUND, F_NOTFOUND, F_FAILED };

/* --- redirects ------------------------------------------------------------- */

static bool
v4_local(const struct in_addr *a, const struct ifaddrs *ifs)
{
	uint32_t h = ntohl(a->s_addr);
	const struct ifaddrs *i;

	if ((h >> 24) == 127 || (h >> 24) == 0)	/* loopback, "this host" (0.0.0.0) */
		return true;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a->s_addr)
			return true;
	return false;
}

bool
dbginfod_addr_local(const struct sockaddr *sa)
{
	struct ifaddrs *ifs = NULL;
	const struct ifaddrs *i;
	const struct in6_addr *a6;
	struct in_addr a4;
	bool r = false;

	/* The host's own addresses: asked only for a redirect's connection. */
	if (getifaddrs(&ifs) < 0)
		ifs = NULL;
	if (sa->sa_family == AF_INET) {
		r = v4_local(&((const struct sockaddr_in *)(const void *)sa)->sin_addr, ifs);
	} else if (sa->sa_family == AF_INET6) {
		a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_UNSPECIFIED(a6)) {
			r = true;
		} else if (IN6_IS_ADDR_V4MAPPED(a6) || IN6_IS_ADDR_V4COMPAT(a6)) {
			memcpy(&a4.s_addr, a6->s6_addr + 12, 4);
			r = v4_local(&a4, ifs);
		} else {
			for (i = ifs; i && !r; i = i->ifa_next)
				r = i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 &&
				    memcmp(&((const struct sockaddr_in6 *)(const void *)
				    i->ifa_addr)->sin6_addr, a6, sizeof(*a6)) == 0;
		}
	} else {
		r = true;	/* not an internet address: not where a redirect goes */
	}
	if (ifs)
		freeifaddrs(ifs);
	return r;
}

/* Whether a URL's host names this host: localhost, or a local address written out. */
static bool
host_local(const char *host)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	char h[256];
	size_t n = strlen(host);

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		snprintf(h, sizeof(h), "%.*s", (int)(n - 2), host + 1);
		return inet_pton(AF_INET6, h, &s6.sin6_addr) == 1 ?
		    dbginfod_addr_local((struct sockaddr *)&s6) : true;	/* a zone id: refused */
	}
	if (strcasecmp(host, "localhost") == 0 || strcasecmp(host, "localhost.") == 0 ||
	    (n > 10 && (strcasecmp(host + n - 10, ".localhost") == 0)) ||
	    (n > 11 && (strcasecmp(host + n - 11, ".localhost.") == 0)))
		return true;
	if (inet_pton(AF_INET, host, &s4.sin_addr) == 1)
		return dbginfod_addr_local((struct sockaddr *)&s4);
	return false;
}

/* A URL's scheme, host (lowercase) and port (the scheme's when none is given). */
struct url_parts {
	char	 scheme[8];
	char	 host[256];
	long	 port;
};

static int
url_split(const char *url, struct url_parts *u)
{
	char *scheme = NULL, *host = NULL, *port = NULL;
	CURLU *h;
	int rc = -EINVAL;
	size_t i;

	memset(u, 0, sizeof(*u));
	if ((h = curl_url()) == NULL)
		return -ENOMEM;
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    strlen(scheme) >= sizeof(u->scheme) || strlen(host) >= sizeof(u->host))
		goto out;
	for (i = 0; scheme[i]; i++)
		u->scheme[i] = (char)tolower((unsigned char)scheme[i]);
	for (i = 0; host[i]; i++)
		u->host[i] = (char)tolower((unsigned char)host[i]);
	u->port = strtol(port, NULL, 10);
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
	return rc;
}

int
dbginfod_redirect_check(const char *server, const char *from, const char *to,
    bool *same_server, const char **why)
{
	struct url_parts s, f, t;

	*why = NULL;
	*same_server = false;
	if (url_split(to, &t) < 0) {
		*why = "not a URL";
		return -EPERM;
	}
	if (strcmp(t.scheme, "http") != 0 && strcmp(t.scheme, "https") != 0) {
		*why = "only http and https are followed";
		return -EPERM;
	}
	if (url_split(from, &f) < 0 || url_split(server, &s) < 0) {
		*why = "not a URL";
		return -EPERM;
	}
	if ((strcmp(f.scheme, "https") == 0 || strcmp(s.scheme, "https") == 0) &&
	    strcmp(t.scheme, "http") == 0) {
		*why = "from https to plain http";
		return -EPERM;
	}
	*same_server = strcmp(t.host, s.host) == 0 && t.port == s.port;
	if (!*same_server && host_local(t.host)) {
		*why = "it leads to this host";
		return -EPERM;
	}
	return 0;
}

/* What the socket opener checks on a redirect's connection. */
struct sock_check {
	bool		 on;		/* a redirect's (not the configured server's) */
	bool		 refused;	/* it went to this host: not connected */
	char		 addr[INET6_ADDRSTRLEN];
};

static curl_socket_t
open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct sock_check *k = arg;
	const void *ip;

	if (purpose == CURLSOCKTYPE_IPCXN && k->on && dbginfod_addr_local(&a->addr)) {
		ip = a->family == AF_INET6 ?
		    (const void *)&((struct sockaddr_in6 *)(void *)&a->addr)->sin6_addr :
		    (const void *)&((struct sockaddr_in *)(void *)&a->addr)->sin_addr;
		if (inet_ntop(a->family, ip, k->addr, sizeof(k->addr)) == NULL)
			snprintf(k->addr, sizeof(k->addr), "?");
		k->refused = true;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Whether curl connects through a proxy (its environment variables): then it connects there. */
static bool
proxied(void)
{
	static const char *const v[] = { "http_proxy", "https_proxy", "HTTPS_PROXY",
	    "all_proxy", "ALL_PROXY" };
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (getenv(v[i]) && *getenv(v[i]))
			return true;
	return false;
}

/* A redirect's body went to the file: it starts again empty. */
static int
dl_restart(struct dl *x)
{
	x->bytes = 0;
	if (ftruncate(x->fd, 0) < 0 || lseek(x->fd, 0, SEEK_SET) < 0)
		return -errno;
	return 0;
}

/* One server: 200 with a valid file (renamed into place), 404, or a failure. */
static enum fetch_result
fetch_one(struct dbginfod *d, const char *url, const char *hex)
{
	char tmp[64], final[64], full[1200], errbuf[CURL_ERROR_SIZE] = "", *to = NULL;
	struct dl x = { .d = d, .fd = -1 };
	struct sock_check sk = { 0 };
	enum fetch_result r = F_FAILED;
	int64_t deadline = clock_mono_ns() + (int64_t)TOTAL_SECS * 1000000000, left;
	const char *why, *loc = NULL;
	bool same, via_proxy = proxied();
	long code = 0;
	int hops;
	CURLcode cc;
	CURL *c;

	snprintf(tmp, sizeof(tmp), ".tmp-%s", hex);
	snprintf(final, sizeof(final), "%s.debug", hex);
	snprintf(full, sizeof(full), "%s/buildid/%s/debuginfo", url, hex);
	if ((x.fd = openat(d->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600)) < 0) {
		log_warn("ebpf: debuginfod cache: %s", tmp);
		return F_FAILED;
	}
	if ((c = curl_easy_init()) == NULL)
		goto out;
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);	/* followed below, checked */
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &sk);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_SECS);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, (long)LOW_SPEED);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)LOW_SPEED_SECS);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)d->file_max);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "profilefs/" PROFILEFS_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, dl_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, dl_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	for (hops = 0;; hops++) {
		left = (deadline - clock_mono_ns()) / 1000000;
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left > 1 ? (long)left : 1L);
		cc = curl_easy_perform(c);
		code = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		loc = NULL;
		if (cc != CURLE_OK || (code != 301 && code != 302 && code != 303 && code != 307 &&
		    code != 308) || curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) != CURLE_OK ||
		    loc == NULL || atomic_load(&d->stop))
			break;
		if (hops == MAX_REDIRS) {
			log_warnx("ebpf: debuginfod %s: more than %d redirects for %s: not followed",
			    url, MAX_REDIRS, hex);
			cc = CURLE_TOO_MANY_REDIRECTS;
			break;
		}
		if (dbginfod_redirect_check(url, to ? to : full, loc, &same, &why) < 0) {
			log_warnx("ebpf: debuginfod %s: the redirect of %s to %.200s is refused: %s",
			    url, hex, loc, why);
			metrics_add("profilefs_ebpf_debuginfod_requests_total",
			    "result=\"redirect_refused\"", 1);
			r = F_NOTFOUND;	/* as good as not found there */
			curl_easy_cleanup(c);
			goto out;
		}
		free(to);
		if ((to = strdup(loc)) == NULL || dl_restart(&x) < 0) {
			curl_easy_cleanup(c);
			goto out;
		}
		/* Where it connects, checked (a name may resolve to this host), unless proxied. */
		sk.on = !same && !via_proxy;
		log_debug("ebpf: debuginfod %s: %s redirected to %s", url, hex, to);
		curl_easy_setopt(c, CURLOPT_URL, to);
	}
	curl_easy_cleanup(c);
	if (sk.refused) {
		log_warnx("ebpf: debuginfod %s: the redirect of %s to %.200s is refused: it "
		    "leads to this host (%s)", url, hex, to ? to : "?", sk.addr);
		metrics_add("profilefs_ebpf_debuginfod_requests_total",
		    "result=\"redirect_refused\"", 1);
		r = F_NOTFOUND;
		goto out;
	}
	if (atomic_load(&d->stop))
		goto out;
	if (cc == CURLE_OK && code == 404) {
		r = F_NOTFOUND;
		metrics_add("profilefs_ebpf_debuginfod_requests_total", "result=\"not_found\"", 1);
		goto out;
	}
	if (cc != CURLE_OK || code != 200) {
		if (!d->failing)
			log_warnx("ebpf: debuginfod %s: %s; files without symbols stay unnamed "
			    "until it answers (asked again every %d s)", url,
			    cc != CURLE_OK ? (x.too_big ? "file too big" : errbuf[0] ? errbuf :
			    curl_easy_strerror(cc)) : "unexpected HTTP status", FAIL_RETRY);
		if (cc == CURLE_OK)
			log_debug("ebpf: debuginfod %s: HTTP %ld for %s", url, code, hex);
		d->failing = true;
		metrics_add("profilefs_ebpf_debuginfod_requests_total", "result=\"error\"", 1);
		metrics_add("profilefs_ebpf_debuginfod_failures_total", NULL, 1);
		metrics_set("profilefs_ebpf_debuginfod_up", NULL, 0);
		goto out;
	}
	if (d->failing)
		log_info("ebpf: debuginfod %s answers again", url);
	d->failing = false;
	metrics_set("profilefs_ebpf_debuginfod_up", NULL, 1);
	if (dbginfod_validate(x.fd, hex, d->file_max, &why) < 0) {
		/* The server answered, wrongly: as good as not found there. */
		log_warnx("ebpf: debuginfod %s: the answer for %s is refused: %s", url, hex, why);
		metrics_add("profilefs_ebpf_debuginfod_requests_total", "result=\"invalid\"", 1);
		r = F_NOTFOUND;
		goto out;
	}
	if (renameat(d->dirfd, tmp, d->dirfd, final) < 0) {
		log_warn("ebpf: debuginfod cache: %s", final);
		goto out;
	}
	metrics_add("profilefs_ebpf_debuginfod_requests_total", "result=\"found\"", 1);
	metrics_add("profilefs_ebpf_debuginfod_bytes_total", NULL, (double)x.bytes);
	log_info("ebpf: debuginfod: debug file of %s from %s (%llu bytes)", hex, url,
	    (unsigned long long)x.bytes);
	r = F_FOUND;
out:
	free(to);
	close(x.fd);
	if (r != F_FOUND)
		unlinkat(d->dirfd, tmp, 0);
	return r;
}

static enum fetch_result
fetch(struct dbginfod *d, const char *hex)
{
	enum fetch_result r = F_NOTFOUND, one;
	const char *p = d->urls, *nl;
	char url[1100], none[64];
	int fd;

	while (*p && !atomic_load(&d->stop)) {
		nl = strchr(p, '\n');
		snprintf(url, sizeof(url), "%.*s", (int)(nl - p), p);
		p = nl + 1;
		one = fetch_one(d, url, hex);
		if (one == F_FOUND)
			return F_FOUND;
		if (one == F_FAILED)
			r = F_FAILED;
	}
	if (r == F_NOTFOUND && !atomic_load(&d->stop)) {
		snprintf(none, sizeof(none), "%s.none", hex);
		if ((fd = openat(d->dirfd, none, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		    0600)) >= 0) {
			futimens(fd, NULL);
			close(fd);
		}
	}
	return r;
}

static struct known *
known_find(struct dbginfod *d, const char *hex)
{
	size_t i;

	for (i = 0; i < d->nknown; i++)
		if (strcmp(d->known[i].hex, hex) == 0)
			return &d->known[i];
	return NULL;
}

/*
 * A slot for a build id not known yet: a free one, else one whose answer is
 * stale (a file stored, or a retry time past). NULL when all are in use.
 * Protected by d->lock.
 */
static struct known *
known_new(struct dbginfod *d, const char *hex)
{
	struct known *k = NULL;
	int64_t now = mono_secs();
	size_t i;

	if (d->nknown < KNOWN_MAX) {
		k = &d->known[d->nknown++];
	} else {
		for (i = 0; i < d->nknown && k == NULL; i++)
			if (d->known[i].state == K_DONE ||
			    (d->known[i].state != K_PENDING && now >= d->known[i].retry_at))
				k = &d->known[i];
		if (k == NULL)
			return NULL;
	}
	memset(k, 0, sizeof(*k));
	snprintf(k->hex, sizeof(k->hex), "%s", hex);
	return k;
}

static void *
worker_main(void *arg)
{
	struct dbginfod *d = arg;
	enum fetch_result r;
	struct known *k;
	char hex[41];

	pthread_mutex_lock(&d->lock);
	while (!atomic_load(&d->stop)) {
		if (d->qlen == 0) {
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		memcpy(hex, d->queue[d->qhead], sizeof(hex));
		d->qhead = (d->qhead + 1) % QUEUE_MAX;
		d->qlen--;
		pthread_mutex_unlock(&d->lock);
		r = fetch(d, hex);
		if (r == F_FOUND)
			cache_trim(d);
		pthread_mutex_lock(&d->lock);
		if ((k = known_find(d, hex)) != NULL) {
			k->state = r == F_FOUND ? K_DONE : r == F_NOTFOUND ? K_NONE : K_FAILED;
			k->retry_at = mono_secs() + (r == F_NOTFOUND ? NONE_RETRY : FAIL_RETRY);
		}
		atomic_fetch_add(&d->gen, 1);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* --- interface ----------------------------------------------------------- */

static void
describe_metrics(void)
{
	metrics_describe("profilefs_ebpf_debuginfod_requests_total", "counter",
	    "Debug file requests to debuginfod servers, by result (found, not_found, invalid, "
	    "redirect_refused, error).");
	metrics_describe("profilefs_ebpf_debuginfod_failures_total", "counter",
	    "debuginfod requests that failed (server unreachable, timeout, HTTP error).");
	metrics_describe("profilefs_ebpf_debuginfod_up", "gauge",
	    "Whether the last debuginfod request got an answer (1) or failed (0).");
	metrics_describe("profilefs_ebpf_debuginfod_cache_bytes", "gauge",
	    "Bytes of debug files in the debuginfod cache directory.");
	metrics_describe("profilefs_ebpf_debuginfod_evictions_total", "counter",
	    "Debug files removed from the cache to keep it within its size.");
	metrics_describe("profilefs_ebpf_debuginfod_bytes_total", "counter",
	    "Bytes of debug files downloaded.");
}

int
dbginfod_create(const char *urls, const char *datadir, uint64_t cache_bytes,
    struct dbginfod **out)
{
	struct dbginfod *d;
	char path[4096];
	struct stat pst, st;
	int rc;

	*out = NULL;
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return -ENOMEM;
	d->dirfd = -1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->cap = cache_bytes ? cache_bytes : DBGINFOD_CACHE_DEFAULT;
	d->file_max = d->cap < DBGINFOD_FILE_MAX ? d->cap : DBGINFOD_FILE_MAX;
	if ((d->urls = strdup(urls)) == NULL ||
	    (d->known = calloc(KNOWN_MAX, sizeof(*d->known))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/debuginfo", datadir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		log_warn("ebpf: debuginfod cache %s", path);
		goto fail;
	}
	if ((d->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		rc = -errno;
		log_warn("ebpf: debuginfod cache %s (a directory, not a link)", path);
		goto fail;
	}
	/* The data directory's owner (--user) writes it once privileges are dropped. */
	if (stat(datadir, &pst) == 0 && fstat(d->dirfd, &st) == 0 &&
	    (st.st_uid != pst.st_uid || st.st_gid != pst.st_gid) && geteuid() == 0 &&
	    fchown(d->dirfd, pst.st_uid, pst.st_gid) < 0)
		log_warn("ebpf: debuginfod cache %s: chown", path);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	describe_metrics();
	cache_trim(d);
	if (d->urls[0]) {
		if ((rc = pthread_create(&d->thread, NULL, worker_main, d)) != 0) {
			rc = -rc;
			log_warnx("ebpf: debuginfod thread: %s", strerror(-rc));
			goto fail;
		}
		d->running = true;
		metrics_set("profilefs_ebpf_debuginfod_up", NULL, 1);
	}
	*out = d;
	return 0;
fail:
	dbginfod_destroy(d);
	return rc;
}

void
dbginfod_destroy(struct dbginfod *d)
{
	if (d == NULL)
		return;
	if (d->running) {
		pthread_mutex_lock(&d->lock);
		atomic_store(&d->stop, true);
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	if (d->dirfd >= 0)
		close(d->dirfd);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d->known);
	free(d->urls);
	free(d);
}

uint64_t
dbginfod_generation(struct dbginfod *d)
{
	return d ? atomic_load(&d->gen) : 0;
}

enum dbginfod_state
dbginfod_lookup(struct dbginfod *d, const char *hex, bool request, int *fd)
{
	enum dbginfod_state r = DBGINFOD_NONE;
	char name[64];
	struct stat st;
	struct known *k;
	int f;

	*fd = -1;
	if (d == NULL || !hex_ok(hex))
		return DBGINFOD_NONE;
	snprintf(name, sizeof(name), "%s.debug", hex);
	if ((f = openat(d->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >= 0) {
		if (fstat(f, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size <= d->file_max) {
			futimens(f, NULL);	/* used: the last to be evicted (best effort) */
			*fd = f;
			return DBGINFOD_READY;
		}
		close(f);
	}
	pthread_mutex_lock(&d->lock);
	if ((k = known_find(d, hex)) != NULL) {
		if (k->state == K_PENDING) {
			r = DBGINFOD_PENDING;
			goto out;
		}
		if (k->state != K_DONE && mono_secs() < k->retry_at)
			goto out;
	}
	snprintf(name, sizeof(name), "%s.none", hex);
	if (fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    time(NULL) - st.st_mtime < NONE_RETRY) {
		if (k == NULL)
			k = known_new(d, hex);
		if (k) {
			k->state = K_NONE;
			k->retry_at = mono_secs() + NONE_RETRY - (time(NULL) - st.st_mtime);
		}
		goto out;
	}
	if (!request || !d->running || d->qlen == QUEUE_MAX)
		goto out;
	if (k == NULL && (k = known_new(d, hex)) == NULL)
		goto out;
	k->state = K_PENDING;
	memcpy(d->queue[(d->qhead + d->qlen) % QUEUE_MAX], k->hex, sizeof(k->hex));
	d->qlen++;
	pthread_cond_signal(&d->cond);
	r = DBGINFOD_PENDING;
out:
	pthread_mutex_unlock(&d->lock);
	return r;
}
