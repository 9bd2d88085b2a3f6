/*
 * main: the command line. `profilefs serve` opens the store, starts the
 * producers that were asked for and runs the filesystem in the foreground;
 * on SIGINT/SIGTERM the mount loop ends, producers stop, the store is flushed
 * and closed, and the process exits 0.
 */
#define _GNU_SOURCE	/* nftw() */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <linux/capability.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "api.h"
#include "ebpf.h"
#include "scrape.h"
#include "cluster.h"
#include "fs.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "priv.h"
#include "stopwatch.h"

static const char usage_text[] =
"usage: profilefs serve [--data DIR] [--http HOST:PORT] [--ebpf[=HZ]] [--scrape FILE]\n"
"                       [--ebpf-period SECONDS] [--ebpf-unwind-mem MIB]\n"
"                       [--ebpf-offcpu[=THRESHOLD]] [--ebpf-offcpu-sample N]\n"
"                       [--ebpf-include RULE] [--ebpf-exclude RULE]\n"
"                       [--ebpf-min-samples N] [--ebpf-malloc SELECTOR]\n"
"                       [--ebpf-memory[=FAULTS]]\n"
"                       [--debuginfod URL[,URL...]|off] [--debuginfod-cache SIZE]\n"
"                       [--retention DURATION] [--retention-aggregates DURATION]\n"
"                       [--max-disk SIZE] [--max-series N] [--max-services N]\n"
"                       [--memory-limit BYTES] [--query-cpu-limit DURATION]\n"
"                       [--http-token TOKEN | --http-token-file FILE] [--http-open]\n"
"                       [--http-insecure] [--http-max-body BYTES]\n"
"                       [--http-max-decoded BYTES] [--http-max-conns N]\n"
"                       [--clickhouse URL[|URL...][,URL...]] [--clickhouse-cluster NAME]\n"
"                       [--clickhouse-replicated]\n"
"                       [--clickhouse-backlog N] [--clickhouse-retention DURATION]\n"
"                       [--clickhouse-hedge DURATION|off]\n"
"                       [--host NAME]\n"
"                       [--user NAME] [--allow-other] [--group GROUP [--group-write]]\n"
"                       [-v] [--debug-fuse] MOUNTPOINT\n"
"       profilefs --help | --version\n"
"\n"
"Continuous profiling as a filesystem: profiles stored in an embedded database\n"
"under DIR appear under MOUNTPOINT as /<service>/<type>/<labels>/<range>/merged.pb.gz\n"
"and friends; files copied into MOUNTPOINT/ingest/<service>/<type>/ are stored.\n"
"<range> is last-1h (any last-N<s|m|h|d>), all, a day 2026-11-22, an hour\n"
"2026-11-22T10, a minute 2026-11-22T1005 or FROM..TO as 2026-11-22T1000..\n"
"2026-11-22T103015 (UTC): no name has a ':', so paths work unquoted with\n"
"go tool pprof, scp, rsync and make; 2026-11-22T10:05 and a trailing Z work too.\n"
"\n"
"serve options:\n"
"  --data DIR          data directory (default ./profilefs-data, created if missing)\n"
"  --http HOST:PORT    also serve the HTTP API (profefe /api/0, Pyroscope /ingest,\n"
"                      OTLP /v1development/profiles, /metrics), e.g.\n"
"                      127.0.0.1:10100; off unless given\n"
"  --http-token TOKEN  require \"Authorization: Bearer TOKEN\" on HTTP requests\n"
"                      (or Basic auth with TOKEN as the password)\n"
"  --http-token-file FILE  the same, the token read from FILE (not shown by ps)\n"
"  --http-insecure     serve a non-loopback --http address without a token\n"
"                      (refused otherwise: anyone who reaches it could push)\n"
"                      and open to everyone (implies --http-open)\n"
"  --http-open         serve the API to every client that reaches it; by\n"
"                      default, without a token, it follows the mount's access\n"
"                      rules: loopback clients of root and the owner, of --group\n"
"                      (pushing and deleting with --group-write) or, with\n"
"                      --allow-other, of any user may read; /healthz and\n"
"                      /metrics are open\n"
"  --http-max-body BYTES  largest HTTP request body (default 64 MiB; K/M/G suffixes)\n"
"  --http-max-conns N  most concurrent HTTP connections (default 256), then 503\n"
"  --http-max-decoded BYTES  largest pushed profile once gunzipped (default 256 MiB)\n"
"  --memory-limit BYTES  memory for buffers, decoding and rendering (default a\n"
"                      quarter of RAM, 1-4 GiB); past it EAGAIN / HTTP 503\n"
"  --query-cpu-limit DURATION|off  CPU time one HTTP API query may use\n"
"                      (default 30s): past it, or once its client has gone,\n"
"                      the query stops (HTTP 503, 499) and frees what it held\n"
"  --ebpf[=HZ]         sample every process's on-CPU stacks with eBPF at HZ\n"
"                      (default 19, at most 99); needs root. A Go program's\n"
"                      pprof labels (pprof.Do) label its samples' series\n"
"  --ebpf-period SECONDS  store one eBPF CPU profile per service every SECONDS\n"
"                      (default 10); PROFILEFS_EBPF_SERVICE_BY=cgroup|exe|comm\n"
"                      picks how processes map to services (default cgroup:\n"
"                      the container's name, else the systemd unit, else a\n"
"                      Python, Ruby, Node.js or PHP script as NAME.py, .rb,\n"
"                      .js, .php, a Java main class or jar, else the\n"
"                      executable)\n"
"  --ebpf-include RULE  sample only processes a rule includes; RULE is\n"
"                      unit:NAME, container:NAME, comm:NAME or service:NAME\n"
"                      (NAME a shell pattern: unit:nginx, comm:py*); repeatable\n"
"  --ebpf-exclude RULE  store nothing of processes RULE matches (same forms;\n"
"                      repeatable; wins over --ebpf-include)\n"
"  --ebpf-min-samples N  a service of its own only once its CPU samples reach N\n"
"                      within an hour (default 20; 0: at once); with\n"
"                      --ebpf-offcpu each off-CPU wait counts as a sample,\n"
"                      but no more of them than the time waited gives CPU\n"
"                      samples at HZ (a wait of 1/HZ or more counts in full,\n"
"                      a command's short ones next to nothing);\n"
"                      until then into service host-other, labelled comm,\n"
"                      unit, container\n"
"  --ebpf-malloc SELECTOR  with --ebpf, also sample the C library's allocations\n"
"                      (malloc, calloc, realloc, free, posix_memalign...) of the\n"
"                      processes SELECTOR names, pid:N or an --ebpf-include\n"
"                      rule (repeatable), by bytes (mean 512 KiB) as Go does,\n"
"                      as profile type heap (alloc_space, inuse_space...); the\n"
"                      others get no uprobe\n"
"  --ebpf-unwind-mem MIB  memory for unwind tables, 0..128 (default 64; 0: frame\n"
"                      pointers only)\n"
"  --debuginfod URL[,URL...]|off  fetch debug files of sampled binaries without\n"
"                      symbols by build id from these debuginfod servers, in\n"
"                      the background (default: $DEBUGINFOD_URLS, space-\n"
"                      separated; unset: none). The servers learn the build\n"
"                      ids of what runs here\n"
"  --debuginfod-cache SIZE  bytes of fetched debug files kept under\n"
"                      DIR/debuginfo (default 1G; K/M/G suffixes), oldest dropped\n"
"  --ebpf-offcpu[=THRESHOLD]  with --ebpf, also record the time threads spend\n"
"                      switched out (locks, sleeps, I/O, preemption) with the\n"
"                      stack they waited in, as profile type offcpu; every\n"
"                      wait is timed, waits of 1.5 x THRESHOLD or more\n"
"                      (default 1ms, e.g. 100us, 10ms) keep their own stacks,\n"
"                      shorter ones are sampled in proportion to their length\n"
"                      (a busy CPU raises the threshold, up to 50 times, to\n"
"                      take about 100 stacks a second at most)\n"
"  --ebpf-offcpu-sample N  take 1/N as many off-CPU stacks (about 100/N a\n"
"                      second per CPU at most; default 1); totals unchanged\n"
"  --ebpf-memory[=FAULTS]  with --ebpf, also record which code grows memory:\n"
"                      1 user page fault on anonymous memory in FAULTS\n"
"                      (default 2048, 8 MiB of 4 KiB pages) as profile type\n"
"                      memory-growth, and anonymous mmap, brk and munmap\n"
"                      calls as memory-mmap, each with its stack\n"
"  --scrape FILE       pull Go /debug/pprof endpoints listed in FILE (JSON)\n"
"  --retention DURATION  delete profiles older than DURATION (e.g. 30d, 12h);\n"
"                      default: keep everything\n"
"  --retention-aggregates DURATION  keep the pre-aggregated windows (10 min,\n"
"                      1 h, 1 day) this long (default: as --retention); older\n"
"                      ranges are then served from 10-minute windows\n"
"  --max-disk SIZE     cap the data directory at SIZE bytes (K/M/G suffixes):\n"
"                      the oldest data is deleted first\n"
"  --max-series N      label sets one service may have (default 2000, 0: no\n"
"                      limit); profiles of a new one past it are refused\n"
"  --max-services N    services the store may hold (default 2000, 0: no limit);\n"
"                      profiles of a new service past it are refused (HTTP 400,\n"
"                      EINVAL by cp) with the reason\n"
"  --clickhouse URL[,URL...]  ship every stored profile to a ClickHouse cluster\n"
"                      (>= 18.16) and show the whole fleet's profiles in the tree\n"
"                      and the HTTP API; URL is http://[USER:PASSWORD@]HOST:PORT[/DB]\n"
"                      (HTTP interface, database default profilefs), one per\n"
"                      server (a shard; URL|URL: its replicas, see below): the\n"
"                      schema is created on each. Local data stays the buffer:\n"
"                      nothing is lost while ClickHouse is down. When the URLs\n"
"                      are the cluster's shards, each once, reads ask every\n"
"                      shard at once (else through the Distributed tables)\n"
"  --clickhouse-replicated  ReplicatedMergeTree tables (ZooKeeper, the servers'\n"
"                      {shard} and {replica} macros); in --clickhouse, '|'\n"
"                      separates the replicas of a shard, ',' the shards\n"
"                      (URL1|URL2,URL3|URL4: two shards of two replicas). With a\n"
"                      replica down, its shard is written and read on another\n"
"  --clickhouse-cluster NAME  the remote_servers cluster the Distributed tables\n"
"                      span (default profilefs)\n"
"  --clickhouse-retention DURATION|off  set the fleet's retention in ClickHouse\n"
"                      (at least 1d; whole days older are dropped; off: keep\n"
"                      everything), one setting for the cluster: the last\n"
"                      daemon to give it wins. Without one, ClickHouse keeps\n"
"                      everything; --retention is each host's local store's\n"
"  --clickhouse-hedge DURATION|off  a read the server asked has not answered\n"
"                      within this (default 1500ms) is asked of the next one\n"
"                      too (another replica of the shard), the first answer\n"
"                      wins: a frozen server costs reads this long, not 60 s\n"
"  --clickhouse-backlog N  profiles kept for shipping while ClickHouse is\n"
"                      unreachable (default 1000000); older ones are dropped\n"
"  --host NAME         the host label of this daemon's profiles in the cluster\n"
"                      (default the host name; a profile's own host label wins)\n"
"  --user NAME         once the BPF programs are attached, the HTTP socket bound\n"
"                      and the tree mounted, run as NAME (needs root); with\n"
"                      --ebpf keep only cap_sys_ptrace, cap_dac_read_search and\n"
"                      cap_checkpoint_restore, otherwise no capability at all\n"
"                      (NAME: a user of its own, not nobody: its other programs\n"
"                      could signal the daemon and change its data)\n"
"  --allow-other       every local user may read the tree (default: only the\n"
"                      user who mounts it); only the owner writes into ingest/\n"
"  --group GROUP       members of GROUP may read the tree (others may not)\n"
"  --group-write       ... and copy profiles into ingest/\n"
"  -v, --verbose       log more (each eBPF period, scrape, merge); -vv also\n"
"                      libbpf's debug messages (BPF loading and relocations)\n"
"  --debug-fuse        trace every FUSE request (very verbose)\n"
"  -h, --help          print this help and exit\n"
"  --version           print the version and the commit it was built from\n"
"\n"
"Every option is described in docs/cli.md and profilefs(8).\n"
"The daemon runs in the foreground; stop it with Ctrl-C or SIGTERM, which\n"
"unmounts cleanly (a stop that hangs is ended at 15 s, exit 1, its cause in\n"
"the log). The mount is ready when MOUNTPOINT/README.txt can be read.\n"
"A bad option or value says why and exits 2 before anything is opened.\n";

static void
usage(FILE *f)
{
	fputs(usage_text, f);
}

/* The usage's first line and where the rest is: what a mistyped command line gets. */
static void
usage_short(void)
{
	fputs("usage: profilefs serve [OPTIONS] MOUNTPOINT ('profilefs --help' lists the options)\n",
	    stderr);
}

/* Edit distance between a and b (each at most 63 bytes; longer: far). */
static size_t
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], i, j, diag, up;

	if (la >= 64 || lb >= 64)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			up = row[j];
			row[j] = a[i - 1] == b[j - 1] ? diag : 1 + (diag < up ?
			    (diag < row[j - 1] ? diag : row[j - 1]) : (up < row[j - 1] ? up : row[j - 1]));
			diag = up;
		}
	}
	return row[lb];
}

/* Say what is wrong with option arg (as given: "--ebfp", "--max-disk=x"), in one line. */
static void
bad_option(const struct option *opts, const char *arg, bool missing_value)
{
	char name[64];
	size_t n, best = SIZE_MAX, d;
	const char *near = NULL;

	while (*arg == '-')
		arg++;
	n = strcspn(arg, "=");
	snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), arg);
	if (missing_value) {
		fprintf(stderr, "profilefs: --%s needs a value\n", name);
		usage_short();
		return;
	}
	for (; opts->name != NULL; opts++) {
		if (strcmp(opts->name, name) == 0) {	/* a value given to a flag that takes none */
			fprintf(stderr, "profilefs: --%s takes no value\n", name);
			usage_short();
			return;
		}
		if ((d = distance(name, opts->name)) < best) {
			best = d;
			near = opts->name;
		}
	}
	if (near != NULL && best <= 2 + strlen(name) / 8)
		fprintf(stderr, "profilefs: unknown option --%s; did you mean --%s?\n", name, near);
	else
		fprintf(stderr, "profilefs: unknown option --%s\n", name);
	usage_short();
}

struct serve_opts {
	const char	*data;
	const char	*http;
	const char	*scrape;
	int		 ebpf_hz;	/* 0: off */
	unsigned	 ebpf_flush;	/* seconds per eBPF profile, 0: default */
	long		 ebpf_unwind_mib;	/* 0: default, < 0: none */
	const char	*debuginfod;	/* server list as given; NULL: $DEBUGINFOD_URLS */
	uint64_t	 debuginfod_cache;	/* bytes, 0: default */
	bool		 ebpf_offcpu;
	int64_t		 ebpf_offcpu_min_ns;
	unsigned	 ebpf_offcpu_sample;
	unsigned	 ebpf_memory;	/* faults per sample, 0: off */
	long		 ebpf_min_samples;	/* < 0: default */
	struct ebpf_filter ebpf_filters[64];
	size_t		 ebpf_nfilters;
	const char	*ebpf_malloc[64];	/* --ebpf-malloc selectors */
	size_t		 ebpf_nmalloc;
	size_t		 http_max_body;
	unsigned	 http_max_conns;
	size_t		 http_max_decoded;
	int64_t		 query_cpu_ns;	/* 0: the API's default, < 0: no limit */
	const char	*http_token;
	const char	*http_token_file;
	int		 http_insecure;
	int		 http_open;
	const char	*user;
	struct fs_access access;
	int		 debug_fuse;
	int64_t		 retention;	/* ns, 0: keep everything */
	int64_t		 retention_aggr;	/* ns, 0: as retention */
	unsigned long long max_disk;	/* bytes, 0: no cap */
	long		 max_series;	/* per service; -1: the store's default */
	long		 max_services;	/* -1: the store's default */
	struct cluster_config ch;	/* ch.urls NULL: no cluster */
	const char	*mountpoint;
};

/* Long options without a short letter. */
#define OPT_MAX_SERVICES	1001
#define OPT_CH_REPLICATED	1002
#define OPT_QUERY_CPU		1003
#define OPT_CH_HEDGE		1004
#define OPT_EBPF_INCLUDE	1020
#define OPT_EBPF_EXCLUDE	1021
#define OPT_EBPF_MIN_SAMPLES	1022
#define OPT_EBPF_MALLOC		1030
#define OPT_EBPF_MEMORY		1040

/* --retention at most 100 years; its unit is required (a bare "30" is refused). */
#define RETENTION_MAX	(INT64_C(36500) * 86400 * 1000000000)

/*
 * SIGINT, SIGTERM and SIGHUP stop the daemon. They are blocked from the start,
 * before any thread exists, so that every thread inherits the block: a stop
 * signal that comes while starting up waits (pending) and is seen before
 * mounting; once mounted, fs_main() unblocks them in the main thread alone,
 * the one libfuse's loop wakes on. Were another thread to take one (the
 * kernel gives a process's signal to any thread not blocking it, and a traced
 * main thread is skipped), the loop would sleep on until the next request.
 */
static void
stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

/* Serving ended: the stop's first step (fs_opts.served). */
static void
stop_unmounting(void)
{
	stopwatch_step("unmounting the filesystem");
}

/* The stop signal pending while starting up, or 0. */
static int
stop_pending(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	sigset_t pending;
	size_t i;

	if (sigpending(&pending) < 0)
		return 0;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigismember(&pending, sigs[i]) == 1)
			return sigs[i];
	return 0;
}

static int
targets_json(void *arg, struct buf *out)
{
	return scrape_status_json(arg, out);
}

/*
 * Whether every address HOST of HOST:PORT names is a loopback one (0.0.0.0
 * and :: are not). A spec that does not parse or resolve counts as loopback
 * here: http_start() refuses it with its own, more precise message.
 */
static int
http_is_loopback(const char *listen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256];
	const char *colon;
	size_t n;
	int loop = 1;

	if (listen[0] == '[') {
		colon = strchr(listen, ']');
		n = colon ? (size_t)(colon - listen - 1) : 0;
		listen++;
	} else {
		colon = strrchr(listen, ':');
		n = colon ? (size_t)(colon - listen) : strlen(listen);
	}
	if (n == 0 || n >= sizeof(host))
		return 1;
	memcpy(host, listen, n);
	host[n] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 1;
	for (ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			const struct sockaddr_in *sin = (const void *)ai->ai_addr;

			loop &= (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
		} else if (ai->ai_family == AF_INET6) {
			const struct sockaddr_in6 *sin6 = (const void *)ai->ai_addr;

			loop &= IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
			    (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) &&
			    sin6->sin6_addr.s6_addr[12] == 127);
		} else {
			loop = 0;
		}
	}
	freeaddrinfo(res);
	return loop;
}

/*
 * The token of --http-token-file: the file's one line, without the line end
 * and surrounding blanks; at most 4 KiB of printable ASCII. The caller frees it.
 */
static char *
token_read(const char *path)
{
	char buf[4097], *s, *e;
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "profilefs: --http-token-file %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == 0 && (st.st_mode & (S_IROTH | S_IWOTH)))
		fprintf(stderr, "profilefs: warning: --http-token-file %s can be read by every "
		    "user (chmod 600 it, or 640 with a group)\n", path);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n == (ssize_t)sizeof(buf)) {
		fprintf(stderr, "profilefs: --http-token-file %s: %s\n", path,
		    n < 0 ? strerror(errno) : "longer than 4 KiB");
		return NULL;
	}
	buf[n] = '\0';
	for (s = buf; *s == ' ' || *s == '\t'; s++)
		;
	for (e = s + strlen(s); e > s && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	for (n = 0; s[n]; n++)
		if (!isprint((unsigned char)s[n]) || s[n] == ' ') {
			fprintf(stderr, "profilefs: --http-token-file %s: the token must be one line "
			    "of printable characters without blanks\n", path);
			return NULL;
		}
	if (*s == '\0') {
		fprintf(stderr, "profilefs: --http-token-file %s is empty\n", path);
		return NULL;
	}
	return strdup(s);
}

/*
 * What the eBPF sampler does with other users' processes once it runs as
 * --user: /proc/PID/maps, exe and root need cap_sys_ptrace (a ptrace "read"
 * check); /proc/PID/map_files/ (deleted binaries, other mount namespaces)
 * needs cap_checkpoint_restore and, the directory being its owner's alone,
 * cap_dac_read_search, which also reads binaries not readable by the user.
 * The ring buffer, perf events and maps are file descriptors opened before,
 * and /proc/kallsyms is read at start, so cap_bpf, cap_perfmon and
 * cap_syslog are not kept -- but cap_bpf is where bpf(2) wants it for every
 * command (priv_bpf_needs_cap()).
 */
#define EBPF_RUNTIME_CAPS	(PRIV_CAP(CAP_SYS_PTRACE) | PRIV_CAP(CAP_DAC_READ_SEARCH) | \
				 PRIV_CAP(CAP_CHECKPOINT_RESTORE))

/* What happens once the tree is mounted: giving up root (u), telling systemd. */
struct drop {
	struct priv_user	*u;		/* NULL: keep running as we are */
	uint64_t		 keep;
	const char		*mountpoint;
	bool			 mounted;	/* and root given up: the start is done */
};

static int
give_up_root(struct drop *d)
{
	/* The sampler reads its counters map every period. */
	if (d->keep != 0 && priv_bpf_needs_cap()) {
		log_info("this kernel's bpf(2) needs cap_bpf for maps already open: keeping it");
		d->keep |= PRIV_CAP(CAP_BPF);
	}
	if (priv_unmount_helper(d->mountpoint, d->u) < 0 || priv_drop(d->u, d->keep) < 0) {
		log_errx("--user %s: could not give up root; stopping", d->u->name);
		return -1;
	}
	return 0;
}

static int
on_mounted(void *arg)
{
	struct drop *d = arg;

	if (d->u != NULL && give_up_root(d) < 0)
		return -1;
	d->mounted = true;
	/* Type=notify: the unit is started once the tree can be read. No-op outside systemd. */
	sd_notifyf(0, "READY=1\nSTATUS=mounted on %s", d->mountpoint);
	return 0;
}

static void
on_unmounting(void *arg)
{
	struct drop *d = arg;

	sd_notify(0, "STOPPING=1");
	if (d->u != NULL)
		priv_unmount(d->u);
}

/* nftw() callback: remove what a failed start created. */
static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0)
		log_warn("%s: cannot remove", path);
	return 0;
}

/*
 * A start that failed leaves nothing behind: the mount point and the data
 * directory it made (both new in this run, so nothing of the user's is in
 * them) are removed.
 */
static void
start_undo(const char *mountpoint, bool made_mnt, const char *data, bool made_data)
{
	if (made_data && nftw(data, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0)
		log_info("removed %s, made by this start", data);
	if (made_mnt && rmdir(mountpoint) == 0)
		log_info("removed mount point %s, made by this start", mountpoint);
}

/* Say that a mount point already holds files: mounting hides them until unmounted. */
static void
warn_not_empty(const char *mountpoint)
{
	DIR *d = opendir(mountpoint);	/* fails on a stale mount (ENOTCONN): nothing to say */
	struct dirent *e;
	char first[64] = "";
	unsigned n = 0;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && n++ == 0)
			snprintf(first, sizeof(first), "%.60s", e->d_name);
	closedir(d);
	if (n > 0)
		log_warnx("mount point %s is not empty (%u entr%s, e.g. %s): %s hidden while "
		    "profilefs is mounted there", mountpoint, n, n == 1 ? "y" : "ies", first,
		    n == 1 ? "it is" : "they are");
}

/* What /healthz reports on besides the daemon itself. */
struct health {
	struct cluster			*ch;
	struct ebpf_sampler *_Atomic	 ebpf;	/* set once the sampler runs */
};

/*
 * /healthz: the cluster's state in a line (the daemon stays healthy without
 * it); the sampler's, unhealthy when it is stalled.
 */
static bool
daemon_health(void *arg, struct buf *out)
{
	struct health *h = arg;
	struct ebpf_sampler *e = atomic_load(&h->ebpf);
	bool up = true;

	if (h->ch)
		cluster_status(h->ch, out);
	if (e) {
		if (h->ch)
			buf_addc(out, '\n');
		up = ebpf_health(e, out);
	}
	return up;
}

/* --http's HOST:PORT or [IPV6]:PORT split; NULL, or what is wrong with it. */
static const char *
listen_split(const char *spec, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon, *h = spec, *p;
	size_t n;
	long v;
	char *end;

	if (spec[0] == '[') {
		if ((colon = strchr(spec, ']')) == NULL || colon[1] != ':')
			return "an IPv6 address is written [ADDRESS]:PORT";
		h = spec + 1;
		n = (size_t)(colon - h);
		colon++;
	} else {
		if ((colon = strrchr(spec, ':')) == NULL)
			return "no port";
		n = (size_t)(colon - spec);
	}
	if (n == 0)
		return "no host";
	if (n >= hostlen)
		return "host name too long";
	p = colon + 1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (*p < '0' || *p > '9' || *end || errno || v > 65535 || strlen(p) >= portlen)
		return "the port must be a number 0..65535";
	memcpy(host, h, n);
	host[n] = '\0';
	memcpy(port, p, strlen(p) + 1);
	return NULL;
}

/*
 * What the command line names, checked before anything is opened, created or
 * started: a bad value is a usage error (exit 2), said once, plainly.
 * Returns 0 or 2.
 */
static int
check_args(const struct serve_opts *o)
{
	struct addrinfo hints, *res = NULL;
	char host[256], port[8];
	const char *why;
	struct stat st;
	int rc;

	if (o->http) {
		if ((why = listen_split(o->http, host, sizeof(host), port, sizeof(port))) != NULL) {
			fprintf(stderr, "profilefs: error: --http %s: %s (write HOST:PORT, e.g. "
			    "127.0.0.1:10100)\n", o->http, why);
			return 2;
		}
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
			fprintf(stderr, "profilefs: error: --http %s: cannot resolve \"%s\": %s\n",
			    o->http, host, gai_strerror(rc));
			return 2;
		}
		freeaddrinfo(res);
	}
	if (o->scrape && access(o->scrape, R_OK) < 0) {
		fprintf(stderr, "profilefs: error: --scrape %s: %s\n", o->scrape, strerror(errno));
		return 2;
	}
	if (stat(o->data, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "profilefs: error: --data %s is not a directory\n", o->data);
		return 2;
	}
	/* A stale mount (ENOTCONN) is detached later; a missing one is made. */
	if (stat(o->mountpoint, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "profilefs: error: mount point %s is not a directory\n",
		    o->mountpoint);
		return 2;
	}
	return 0;
}

static int
serve(const struct serve_opts *o, struct priv_user *user)
{
	struct fsctx fs;
	struct fs_opts fo;
	struct store *st;
	const struct reader *rd;
	struct http_server *http = NULL;
	struct scraper *scr = NULL;
	struct ebpf_sampler *ebpf = NULL;
	struct cluster *ch = NULL;
	struct health health = { 0 };
	struct buf err = { 0 };
	struct drop drop;
	struct stat sb;
	char mnt[PATH_MAX];
	bool made_mnt = false, made_data;
	int rc, sig;

	made_data = stat(o->data, &sb) < 0 && errno == ENOENT;
	/* Make a missing mount point first, so it gets an absolute name. */
	if (mkdir(o->mountpoint, 0755) == 0) {
		made_mnt = true;
		log_info("created mount point %s", o->mountpoint);
	} else {
		warn_not_empty(o->mountpoint);
	}
	if (realpath(o->mountpoint, mnt) == NULL) {
		if (errno == ENOTCONN) {
			/* A stale mount: keep the path as given, fs_main detaches it. */
			snprintf(mnt, sizeof(mnt), "%s", o->mountpoint);
		} else if (errno == ENOENT) {
			snprintf(mnt, sizeof(mnt), "%s", o->mountpoint);
		} else {
			fprintf(stderr, "profilefs: error: %s: %s\n", o->mountpoint, strerror(errno));
			return 1;	/* nothing made: the mount point exists */
		}
	}
	/* The database's files, like its directory, are the daemon user's only. */
	umask(077);
	/* The store's files are the user's, so it can go on writing them. */
	if ((user != NULL && priv_own_dir(o->data, user) < 0) ||
	    (user != NULL && priv_fs_as_user(user) < 0)) {
		start_undo(mnt, made_mnt, o->data, made_data);
		return 1;
	}
	rc = store_open(o->data, &st, &err);
	if (user != NULL)
		priv_fs_as_root();
	if (rc < 0) {
		fprintf(stderr, "profilefs: error: %s\n", err.data ? err.data : strerror(-rc));
		buf_free(&err);
		start_undo(mnt, made_mnt, o->data, made_data);
		return 1;
	}
	log_info("profilefs %s: data in %s", PROFILEFS_VERSION, o->data);
	/* Where the tree and the HTTP API read: the store, or the fleet below. */
	rd = store_reader(st);
	if (o->max_series >= 0)
		store_set_max_series(st, (size_t)o->max_series);
	if (o->max_services >= 0)
		store_set_max_services(st, (size_t)o->max_services);
	if ((o->retention || o->max_disk) && store_set_limits(st, o->retention,
	    o->retention_aggr, o->max_disk) < 0)
		log_warn("cannot start the retention thread");
	if (o->ch.urls) {
		struct cluster_config cc = o->ch;

		/* What this host keeps, to compare with the cluster's setting. */
		cc.retention = o->retention_aggr > o->retention ? o->retention_aggr : o->retention;
		buf_reset(&err);
		if (cluster_start(st, &cc, &ch, &err) < 0) {
			fprintf(stderr, "profilefs: error: --clickhouse: %s\n", err.data ? err.data :
			    "cannot start");
			buf_free(&err);
			goto fail;
		}
		/* With --clickhouse the views read the fleet (local data until it is up). */
		if (!cc.no_reads)
			rd = cluster_reader(ch);
	}
	if (o->http) {
		struct http_opts ho = { .listen = o->http, .max_body = o->http_max_body,
		    .max_conns = o->http_max_conns, .token = o->http_token,
		    .max_decoded = o->http_max_decoded, .open = o->http_open,
		    .query_cpu_ns = o->query_cpu_ns,
		    .owner = user ? user->uid : getuid(), .allow_other = o->access.allow_other,
		    .group_set = o->access.group_set, .group_write = o->access.group_write,
		    .group = o->access.group };

		health.ch = ch;
		if (ch || o->ebpf_hz) {
			ho.health = daemon_health;
			ho.health_arg = &health;
		}
		ho.reader = rd;

		if (http_start(st, &ho, &http) < 0) {
			log_errx("--http %s could not start (the reason is above)", o->http);
			goto fail;
		}
	}
	if (o->scrape && scrape_start(st, o->scrape, &scr) < 0) {
		log_errx("--scrape %s could not start (the reason is above)", o->scrape);
		goto fail;
	}
	if (o->ebpf_hz) {
		struct ebpf_opts eo = { .hz = o->ebpf_hz, .flush_secs = o->ebpf_flush,
		    .unwind_mib = o->ebpf_unwind_mib, .data_dir = o->data,
		    .debuginfod_cache = o->debuginfod_cache, .offcpu = o->ebpf_offcpu,
		    .offcpu_min_ns = (uint64_t)o->ebpf_offcpu_min_ns,
		    .offcpu_sample = o->ebpf_offcpu_sample, .min_samples = o->ebpf_min_samples,
		    .memory_faults = o->ebpf_memory,
		    .filters = o->ebpf_filters, .nfilters = o->ebpf_nfilters,
		    .malloc_rules = o->ebpf_malloc, .nmalloc_rules = o->ebpf_nmalloc };
		const char *list = o->debuginfod ? o->debuginfod : getenv("DEBUGINFOD_URLS"), *bad;
		char *urls = NULL;

		if (list && strcmp(list, "off") != 0 &&
		    ebpf_parse_debuginfod(list, &urls, &bad) < 0) {
			/* Only the environment's list gets here: the flag's was checked. */
			log_warnx("DEBUGINFOD_URLS: %s; no debug files are fetched",
			    bad ? bad : "out of memory");
		}
		eo.debuginfod = urls;
		if (urls && urls[0])
			log_info("ebpf: debuginfod servers: %s", list);
		rc = ebpf_start(st, &eo, &ebpf);
		free(urls);
		if (rc < 0) {
			log_errx("--ebpf could not start (the reason is above)");
			goto fail;
		}
		atomic_store(&health.ebpf, ebpf);
	}
	memset(&fs, 0, sizeof(fs));
	fs.st = st;
	fs.rd = rd;
	if (scr != NULL) {
		fs.targets_json = targets_json;
		fs.targets_arg = scr;
	}
	memset(&fo, 0, sizeof(fo));
	fo.mountpoint = mnt;
	fo.debug = o->debug_fuse;
	fo.access = o->access;
	memset(&drop, 0, sizeof(drop));
	drop.u = user;
	drop.keep = o->ebpf_hz ? EBPF_RUNTIME_CAPS : 0;
	drop.mountpoint = mnt;
	fo.mounted = on_mounted;
	fo.unmounting = on_unmounting;
	fo.hook_arg = &drop;
	/*
	 * A signal that came while starting up stops us cleanly; from here on
	 * libfuse handles them (fs_main() unblocks them once its handlers are in).
	 */
	if ((sig = stop_pending()) != 0) {
		log_info("signal %d while starting: stopping", sig);
		http_stop(http);
		ebpf_stop(ebpf);
		scrape_stop(scr);
		cluster_stop(ch);
		store_close(st);
		return 0;
	}
	if ((sig = stopwatch_start(pthread_self())) < 0)
		log_warnx("the stop watch did not start (%s): a stop that hangs is not ended",
		    strerror(-sig));
	else
		fo.stop_signal = stopwatch_signal;
	fo.served = stop_unmounting;
	rc = fs_main(&fs, &fo);
	/* The HTTP server first: its /healthz looks at the sampler. */
	stopwatch_step("stopping the HTTP server");
	http_stop(http);
	stopwatch_step("stopping the eBPF sampler");
	ebpf_stop(ebpf);
	stopwatch_step("stopping the scraper");
	scrape_stop(scr);
	stopwatch_step("stopping the ClickHouse shipper");
	cluster_stop(ch);
	stopwatch_step("closing the store");
	store_close(st);
	stopwatch_end();
	if (rc < 0 && !drop.mounted)	/* the mount, or giving up root, failed: not started */
		start_undo(mnt, made_mnt, o->data, made_data);
	if (ebpf_threads_left()) {
		/* No stdio flush: the thread left may hold a stream's lock. */
		log_info("stopped (leaving a sampler thread stuck in the kernel)");
		_exit(rc < 0 ? 1 : 0);
	}
	log_info("stopped");
	return rc < 0 ? 1 : 0;
fail:
	ebpf_stop(ebpf);
	scrape_stop(scr);
	http_stop(http);
	cluster_stop(ch);
	store_close(st);
	start_undo(mnt, made_mnt, o->data, made_data);
	return 1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data",	required_argument,	NULL, 'd' },
		{ "http",	required_argument,	NULL, 'H' },
		{ "ebpf",	optional_argument,	NULL, 'e' },
		{ "ebpf-period", required_argument,	NULL, 'P' },
		{ "ebpf-unwind-mem", required_argument,	NULL, 'u' },
		{ "debuginfod",	required_argument,	NULL, 'g' },
		{ "debuginfod-cache", required_argument, NULL, 'c' },
		{ "ebpf-offcpu", optional_argument,	NULL, 'x' },
		{ "ebpf-offcpu-sample", required_argument, NULL, 'y' },
		{ "ebpf-include", required_argument,	NULL, OPT_EBPF_INCLUDE },
		{ "ebpf-exclude", required_argument,	NULL, OPT_EBPF_EXCLUDE },
		{ "ebpf-min-samples", required_argument, NULL, OPT_EBPF_MIN_SAMPLES },
		{ "ebpf-malloc", required_argument,	NULL, OPT_EBPF_MALLOC },
		{ "ebpf-memory", optional_argument,	NULL, OPT_EBPF_MEMORY },
		{ "scrape",	required_argument,	NULL, 's' },
		{ "http-token",	required_argument,	NULL, 'T' },
		{ "http-max-body", required_argument,	NULL, 'B' },
		{ "http-max-conns", required_argument,	NULL, 'C' },
		{ "http-max-decoded", required_argument, NULL, 'Z' },
		{ "memory-limit", required_argument,	NULL, 'L' },
		{ "query-cpu-limit", required_argument, NULL, OPT_QUERY_CPU },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "debug-fuse",	no_argument,		NULL, 'D' },
		{ "retention",	required_argument,	NULL, 'R' },
		{ "retention-aggregates", required_argument, NULL, 'A' },
		{ "max-disk",	required_argument,	NULL, 'M' },
		{ "max-series",	required_argument,	NULL, 'X' },
		{ "max-services", required_argument,	NULL, OPT_MAX_SERVICES },
		{ "http-token-file", required_argument,	NULL, 'F' },
		{ "http-insecure", no_argument,		NULL, 'I' },
		{ "http-open",	no_argument,		NULL, 'o' },
		{ "user",	required_argument,	NULL, 'U' },
		{ "allow-other", no_argument,		NULL, 'O' },
		{ "group",	required_argument,	NULL, 'G' },
		{ "group-write", no_argument,		NULL, 'W' },
		{ "clickhouse",	required_argument,	NULL, 'K' },
		{ "clickhouse-cluster", required_argument, NULL, 'N' },
		{ "clickhouse-backlog", required_argument, NULL, 'Q' },
		{ "host",	required_argument,	NULL, 'n' },
		{ "clickhouse-retention", required_argument, NULL, 'k' },
		{ "clickhouse-replicated", no_argument,	NULL, OPT_CH_REPLICATED },
		{ "clickhouse-hedge", required_argument, NULL, OPT_CH_HEDGE },
		{ "help",	no_argument,		NULL, 'h' },
		{ "version",	no_argument,		NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct serve_opts o = { .data = "./profilefs-data", .max_series = -1,
	    .ebpf_offcpu_min_ns = 1000000, .ebpf_offcpu_sample = 1, .ebpf_min_samples = -1,
	    .ch = { .set_retention = -1 }, .max_services = -1 };
	struct priv_user user;
	char *end, *token = NULL;
	const char *group = NULL;
	long hz;
	unsigned long long bytes, mult;
	int c;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		printf("profilefs %s (commit %s)\n", PROFILEFS_VERSION, PROFILEFS_COMMIT);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "serve") != 0) {
		if (argc >= 2) {
			fprintf(stderr, "profilefs: unknown command '%s'\n", argv[1]);
			usage_short();
		} else {
			usage(stderr);
		}
		return 2;
	}
	argc--;
	argv++;
	opterr = 0;	/* bad_option() says it, in one line */
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.data = optarg;
			break;
		case 'H':
			o.http = optarg;
			break;
		case 'e':
			hz = 19;
			if (optarg) {
				errno = 0;
				hz = strtol(optarg, &end, 10);
				if (errno || *end || hz < 1 || hz > 99) {
					fprintf(stderr, "profilefs: --ebpf=HZ: HZ must be 1..99, not '%s'\n",
					    optarg);
					return 2;
				}
			}
			o.ebpf_hz = (int)hz;
			break;
		case 'P':
			errno = 0;
			hz = strtol(optarg, &end, 10);
			if (errno || *end || hz < 1 || hz > 3600) {
				fprintf(stderr, "profilefs: --ebpf-period: SECONDS must be 1..3600, not '%s'\n",
				    optarg);
				return 2;
			}
			o.ebpf_flush = (unsigned)hz;
			break;
		case 'u':
			errno = 0;
			hz = strtol(optarg, &end, 10);
			if (errno || *end || hz < 0 || hz > 128) {
				fprintf(stderr, "profilefs: --ebpf-unwind-mem: MIB must be 0..128, not '%s'\n",
				    optarg);
				return 2;
			}
			o.ebpf_unwind_mib = hz ? hz : -1;
			break;
		case 'x':
			o.ebpf_offcpu = true;
			if (optarg && (clock_parse_duration(optarg, 10LL * 1000000000,
			    &o.ebpf_offcpu_min_ns) < 0 || o.ebpf_offcpu_min_ns < 1000)) {
				fprintf(stderr, "profilefs: --ebpf-offcpu=THRESHOLD: a duration "
				    "from 1us to 10s (e.g. 1ms), not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'y':
			errno = 0;
			hz = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || hz < 1 || hz > 1000000) {
				fprintf(stderr, "profilefs: --ebpf-offcpu-sample: N must be 1..1000000, "
				    "not '%s'\n", optarg);
				return 2;
			}
			o.ebpf_offcpu_sample = (unsigned)hz;
			break;
		case OPT_EBPF_INCLUDE:
		case OPT_EBPF_EXCLUDE: {
			const char *bad;
			const char *opt = c == OPT_EBPF_INCLUDE ? "--ebpf-include" : "--ebpf-exclude";

			if (ebpf_check_filter(optarg, &bad) < 0) {
				fprintf(stderr, "profilefs: %s '%s': %s\n", opt, optarg, bad);
				return 2;
			}
			if (o.ebpf_nfilters == sizeof(o.ebpf_filters) / sizeof(o.ebpf_filters[0])) {
				fprintf(stderr, "profilefs: %s: at most 64 rules\n", opt);
				return 2;
			}
			o.ebpf_filters[o.ebpf_nfilters++] = (struct ebpf_filter){ .rule = optarg,
			    .include = c == OPT_EBPF_INCLUDE };
			break;
		}
		case OPT_EBPF_MALLOC: {
			const char *bad;

			if (ebpf_check_malloc_rule(optarg, &bad) < 0) {
				fprintf(stderr, "profilefs: --ebpf-malloc '%s': %s\n", optarg, bad);
				return 2;
			}
			if (o.ebpf_nmalloc == sizeof(o.ebpf_malloc) / sizeof(o.ebpf_malloc[0])) {
				fprintf(stderr, "profilefs: --ebpf-malloc: at most 64 selectors\n");
				return 2;
			}
			o.ebpf_malloc[o.ebpf_nmalloc++] = optarg;
			break;
		}
		case OPT_EBPF_MEMORY:
			o.ebpf_memory = EBPF_MEMORY_FAULTS;
			if (optarg == NULL)
				break;
			errno = 0;
			hz = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || hz < 1 || hz > (1L << 30)) {
				fprintf(stderr, "profilefs: --ebpf-memory=FAULTS: 1 sample in FAULTS "
				    "page faults, 1..1073741824, not '%s'\n", optarg);
				return 2;
			}
			o.ebpf_memory = (unsigned)hz;
			break;
		case OPT_EBPF_MIN_SAMPLES:
			errno = 0;
			hz = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || hz < 0 || hz > 1000000000) {
				fprintf(stderr, "profilefs: --ebpf-min-samples: N must be 0..1000000000, "
				    "not '%s'\n", optarg);
				return 2;
			}
			o.ebpf_min_samples = hz;
			break;
		case 's':
			o.scrape = optarg;
			break;
		case 'T':
			o.http_token = optarg;
			break;
		case 'X':
			errno = 0;
			o.max_series = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || o.max_series < 0) {
				fprintf(stderr, "profilefs: --max-series: not a count: '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_MAX_SERVICES:
			errno = 0;
			o.max_services = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || o.max_services < 0) {
				fprintf(stderr, "profilefs: --max-services: not a count: '%s'\n",
				    optarg);
				return 2;
			}
			break;
		case 'g':
			if (strcmp(optarg, "off") != 0) {
				const char *bad;
				char *urls = NULL;

				if (ebpf_parse_debuginfod(optarg, &urls, &bad) < 0 || urls[0] == '\0') {
					fprintf(stderr, "profilefs: --debuginfod %s: %s\n", optarg,
					    bad ? bad : "no server URL");
					free(urls);
					return 2;
				}
				free(urls);
			}
			o.debuginfod = optarg;
			break;
		case 'B':
		case 'Z':
		case 'M':
		case 'c':
		case 'L':
			errno = 0;
			bytes = strtoull(optarg, &end, 10);
			mult = *end == 'K' || *end == 'k' ? 1u << 10 : *end == 'M' || *end == 'm' ?
			    1u << 20 : *end == 'G' || *end == 'g' ? 1u << 30 : 1;
			/* 10G, 10GB and 10GiB alike: binary multiples, as df -h and free -h show. */
			if (mult > 1 && (strcmp(end + 1, "B") == 0 || strcmp(end + 1, "iB") == 0))
				end += strlen(end);
			else if (mult > 1)
				end++;
			if (errno || *end || end == optarg || bytes == 0 ||
			    bytes > (1ull << 40) / mult || (c == 'L' && bytes * mult < (64u << 20))) {
				fprintf(stderr, "profilefs: --%s: '%s' is not a size%s: write bytes, or a "
				    "number with K, M or G (KiB, MiB, GiB), e.g. 512M, 10G, 10GiB\n",
				    c == 'B' ? "http-max-body" : c == 'Z' ? "http-max-decoded" :
				    c == 'M' ? "max-disk" : c == 'c' ? "debuginfod-cache" : "memory-limit",
				    optarg, c == 'L' ? " of at least 64M" : "");
				return 2;
			}
			if (c == 'M')
				o.max_disk = bytes * mult;
			else if (c == 'c')
				o.debuginfod_cache = bytes * mult;
			else if (c == 'L')
				budget_set_limit((size_t)(bytes * mult));
			else if (c == 'B')
				o.http_max_body = (size_t)(bytes * mult);
			else
				o.http_max_decoded = (size_t)(bytes * mult);
			break;
		case OPT_QUERY_CPU:
			if (strcmp(optarg, "off") == 0)
				o.query_cpu_ns = -1;
			else if (clock_parse_duration(optarg, INT64_C(86400) * 1000000000,
			    &o.query_cpu_ns) < 0 || o.query_cpu_ns < 10000000) {
				fprintf(stderr, "profilefs: --query-cpu-limit: '%s' is not a duration "
				    "from 10ms to 1d (write e.g. 30s, 2m), or off\n", optarg);
				return 2;
			}
			break;
		case 'C':
			errno = 0;
			hz = strtol(optarg, &end, 10);
			if (errno || *end || hz < 1 || hz > 100000) {
				fprintf(stderr, "profilefs: --http-max-conns: N must be 1..100000, not '%s'\n",
				    optarg);
				return 2;
			}
			o.http_max_conns = (unsigned)hz;
			break;
		case 'v':
			/* -vv: libbpf's debug messages too */
			log_verbose += log_verbose < 2;
			break;
		case 'D':
			o.debug_fuse = 1;
			break;
		case 'R':
		case 'A':
			if (clock_parse_duration(optarg, RETENTION_MAX, c == 'R' ? &o.retention :
			    &o.retention_aggr) < 0) {
				fprintf(stderr, "profilefs: --%s: '%s' is not a duration "
				    "(write e.g. 30d, 12h, 90m)\n", c == 'R' ? "retention" :
				    "retention-aggregates", optarg);
				return 2;
			}
			break;
		case 'F':
			o.http_token_file = optarg;
			break;
		case 'o':
			o.http_open = 1;
			break;
		case 'I':
			o.http_insecure = 1;
			break;
		case 'U':
			o.user = optarg;
			break;
		case 'O':
			o.access.allow_other = true;
			break;
		case 'G':
			group = optarg;
			break;
		case 'W':
			o.access.group_write = true;
			break;
		case 'K':
			o.ch.urls = optarg;
			break;
		case 'N':
			o.ch.cluster = optarg;
			break;
		case OPT_CH_REPLICATED:
			o.ch.replicated = true;
			break;
		case 'n':
			o.ch.host = optarg;
			break;
		case 'k':
			if (strcmp(optarg, "off") == 0)
				o.ch.set_retention = 0;
			else if (clock_parse_duration(optarg, RETENTION_MAX, &o.ch.set_retention) < 0 ||
			    o.ch.set_retention < INT64_C(86400) * 1000000000) {
				fprintf(stderr, "profilefs: --clickhouse-retention %s: not a duration of "
				    "a day or more (write e.g. 30d), or off\n", optarg);
				return 2;
			}
			break;
		case OPT_CH_HEDGE:
			if (strcmp(optarg, "off") == 0)
				o.ch.hedge_ms = -1;
			else if (clock_parse_duration(optarg, INT64_C(600) * 1000000000,
			    &o.ch.hedge_ms) < 0 || o.ch.hedge_ms < 1000000) {
				fprintf(stderr, "profilefs: --clickhouse-hedge %s: not a duration "
				    "from 1ms to 10m (write e.g. 1500ms or 2s), or off\n", optarg);
				return 2;
			} else
				o.ch.hedge_ms /= 1000000;
			break;
		case 'Q':
			errno = 0;
			bytes = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || bytes == 0 || bytes > (1ull << 40)) {
				fprintf(stderr, "profilefs: --clickhouse-backlog: not a count: '%s'\n",
				    optarg);
				return 2;
			}
			o.ch.max_backlog = bytes;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("profilefs %s (commit %s)\n", PROFILEFS_VERSION, PROFILEFS_COMMIT);
			return 0;
		case ':':
			bad_option(longopts, argv[optind - 1], true);
			return 2;
		default:
			if (strncmp(argv[optind - 1], "--", 2) == 0) {
				bad_option(longopts, argv[optind - 1], false);
			} else {
				fprintf(stderr, "profilefs: unknown option -%c\n", optopt);
				usage_short();
			}
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "profilefs: serve needs exactly one MOUNTPOINT%s\n",
		    optind < argc - 1 ? ", and got more" : "");
		usage_short();
		return 2;
	}
	o.mountpoint = argv[optind];
	if ((o.ebpf_offcpu || o.ebpf_offcpu_sample != 1) && o.ebpf_hz == 0) {
		fprintf(stderr, "profilefs: --ebpf-offcpu and --ebpf-offcpu-sample need --ebpf\n");
		return 2;
	}
	if (o.ebpf_memory && o.ebpf_hz == 0) {
		fprintf(stderr, "profilefs: --ebpf-memory needs --ebpf\n");
		return 2;
	}
	if ((o.ebpf_nfilters > 0 || o.ebpf_min_samples >= 0) && o.ebpf_hz == 0) {
		fprintf(stderr, "profilefs: --ebpf-include, --ebpf-exclude and --ebpf-min-samples "
		    "need --ebpf\n");
		return 2;
	}
	if (o.ebpf_nmalloc > 0 && o.ebpf_hz == 0) {
		fprintf(stderr, "profilefs: --ebpf-malloc needs --ebpf\n");
		return 2;
	}
	if (o.ebpf_offcpu_sample != 1 && !o.ebpf_offcpu) {
		fprintf(stderr, "profilefs: --ebpf-offcpu-sample needs --ebpf-offcpu\n");
		return 2;
	}
	if (o.access.group_write && group == NULL) {
		fprintf(stderr, "profilefs: --group-write needs --group GROUP\n");
		return 2;
	}
	if (group != NULL) {
		if (priv_group_lookup(group, &o.access.group) < 0)
			return 2;
		o.access.group_set = true;
	}
	if (o.http_token && o.http_token_file) {
		fprintf(stderr, "profilefs: give --http-token or --http-token-file, not both\n");
		return 2;
	}
	if (o.http_token_file) {
		if ((token = token_read(o.http_token_file)) == NULL)
			return 2;
		o.http_token = token;
	} else if (o.http_token) {
		fprintf(stderr, "profilefs: warning: --http-token shows in ps to every local "
		    "user; --http-token-file FILE does not\n");
	}
	if (o.http_insecure)
		o.http_open = 1;	/* a peer on another host has no local owner */
	if (o.http && o.http_token == NULL && !o.http_insecure && !http_is_loopback(o.http)) {
		fprintf(stderr, "profilefs: --http %s is reachable from other hosts and no token is "
		    "set: anyone who reaches it could push and read profiles. Give "
		    "--http-token-file FILE (or --http-token), bind 127.0.0.1, or say "
		    "--http-insecure if that is intended.\n", o.http);
		return 2;
	}
	if (check_args(&o) != 0)
		return 2;
	if (o.user != NULL) {
		if (geteuid() != 0) {
			fprintf(stderr, "profilefs: --user %s: only root can become another user; "
			    "without --ebpf, start profilefs as that user instead\n", o.user);
			return 2;
		}
		if (priv_user_lookup(o.user, &user) < 0)
			return 2;
		{
			unsigned others;

			if (priv_user_shared(&user, &others))
				log_warnx("--user %s: a user other programs run as (processes running as it "
				    "now: %u): "
				    "any of them may signal the daemon and its unmount helper and "
				    "change its data; give the daemon a user of its own (the systemd "
				    "unit's is profilefs, see scripts/profilefs.sysusers)", o.user,
				    others);
		}
		/* Before any thread exists, so that every thread inherits it. */
		if (priv_keep_caps() < 0)
			return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/*
	 * Stop signals blocked in every thread to come (see stop_signals()),
	 * and at their default: a shell that starts us in the background leaves
	 * SIGINT ignored, and libfuse takes over only signals at their default.
	 */
	{
		struct sigaction sa;
		sigset_t set;

		stop_signals(&set);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	c = serve(&o, o.user ? &user : NULL);
	if (o.user)
		priv_user_free(&user);
	free(token);
	return c;
}
