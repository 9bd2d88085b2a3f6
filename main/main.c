/*
 * main: the command line. `profilefs serve` opens the store, starts the
 * producers that were asked for and runs the filesystem in the foreground;
 * on SIGINT/SIGTERM the mount loop ends, producers stop, the store is flushed
 * and closed, and the process exits 0.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "fs.h"
#include "base.h"
#include "pprof.h"
#include "store.h"

static const char usage_text[] =
"usage: profilefs serve [--data DIR] [--http HOST:PORT] [--ebpf[=HZ]] [--scrape FILE]\n"
"                       [--retention DURATION] [-v] [--debug-fuse] MOUNTPOINT\n"
"       profilefs --help | --version\n"
"\n"
"Continuous profiling as a filesystem: profiles stored in an embedded database\n"
"under DIR appear under MOUNTPOINT as /<service>/<type>/<labels>/<range>/merged.pb.gz\n"
"and friends; files copied into MOUNTPOINT/ingest/<service>/<type>/ are stored.\n"
"\n"
"serve options:\n"
"  --data DIR          data directory (default ./profilefs-data, created if missing)\n"
"  --http HOST:PORT    also serve the HTTP API (profefe /api/0, Pyroscope /ingest,\n"
"                      /metrics), e.g. 127.0.0.1:10100; off unless given\n"
"  --http-token TOKEN  require \"Authorization: Bearer TOKEN\" on HTTP requests\n"
"  --http-max-body BYTES  largest HTTP request body (default 64 MiB; K/M/G suffixes)\n"
"  --http-max-conns N  most concurrent HTTP connections (default 256), then 503\n"
"  --http-max-decoded BYTES  largest pushed profile once gunzipped (default 256 MiB)\n"
"  --memory-limit BYTES  memory for buffers, decoding and rendering (default a\n"
"                      quarter of RAM, 1-4 GiB); past it EAGAIN / HTTP 503\n"
"  --ebpf[=HZ]         sample every process's on-CPU stacks with eBPF at HZ\n"
"                      (default 19, at most 99); needs root\n"
"  --ebpf-period SECONDS  store one eBPF CPU profile per service every SECONDS\n"
"                      (default 10); PROFILEFS_EBPF_SERVICE_BY=cgroup|exe|comm\n"
"                      picks how processes map to services (default cgroup)\n"
"  --scrape FILE       pull Go /debug/pprof endpoints listed in FILE (JSON)\n"
"  --retention DURATION  delete profiles older than DURATION (e.g. 30d, 12h);\n"
"                      default: keep everything\n"
"  -v, --verbose       log more\n"
"  --debug-fuse        trace every FUSE request (very verbose)\n"
"\n"
"The daemon runs in the foreground; stop it with Ctrl-C or SIGTERM, which\n"
"unmounts cleanly. The mount is ready when MOUNTPOINT/README.txt can be read.\n";

static void
usage(FILE *f)
{
	fputs(usage_text, f);
}

struct serve_opts {
	const char	*data;
	const char	*http;
	const char	*scrape;
	int		 ebpf_hz;	/* 0: off */
	unsigned	 ebpf_flush;	/* seconds per eBPF profile, 0: default */
	size_t		 http_max_body;
	unsigned	 http_max_conns;
	size_t		 http_max_decoded;
	const char	*http_token;
	int		 debug_fuse;
	int64_t		 retention;	/* ns, 0: keep everything */
	const char	*mountpoint;
};

/* --retention at most 100 years; its unit is required (a bare "30" is refused). */
#define RETENTION_MAX	(INT64_C(36500) * 86400 * 1000000000)

static volatile sig_atomic_t early_stop;

static void
on_early_signal(int sig)
{
	early_stop = sig;
}

/* SIGINT, SIGTERM, SIGHUP to handler (a shell may have left SIGINT ignored). */
static void
early_signals(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int
targets_json(void *arg, struct buf *out)
{
	return scrape_status_json(arg, out);
}

static int
serve(const struct serve_opts *o)
{
	struct fsctx fs;
	struct fs_opts fo;
	struct store *st;
	struct http_server *http = NULL;
	struct scraper *scr = NULL;
	struct ebpf_sampler *ebpf = NULL;
	struct buf err = { 0 };
	char mnt[PATH_MAX];
	int rc;

	/* Make a missing mount point first, so it gets an absolute name. */
	if (mkdir(o->mountpoint, 0755) == 0)
		log_info("created mount point %s", o->mountpoint);
	if (realpath(o->mountpoint, mnt) == NULL) {
		if (errno == ENOTCONN) {
			/* A stale mount: keep the path as given, fs_main detaches it. */
			snprintf(mnt, sizeof(mnt), "%s", o->mountpoint);
		} else if (errno == ENOENT) {
			snprintf(mnt, sizeof(mnt), "%s", o->mountpoint);
		} else {
			fprintf(stderr, "profilefs: %s: %s\n", o->mountpoint, strerror(errno));
			return 1;
		}
	}
	if ((rc = store_open(o->data, &st, &err)) < 0) {
		fprintf(stderr, "profilefs: %s\n", err.data ? err.data : strerror(-rc));
		buf_free(&err);
		return 1;
	}
	log_info("profilefs %s: data in %s", PROFILEFS_VERSION, o->data);
	if (o->retention && store_set_retention(st, o->retention) < 0)
		log_warn("cannot start the retention thread");
	if (o->http) {
		struct http_opts ho = { .listen = o->http, .max_body = o->http_max_body,
		    .max_conns = o->http_max_conns, .token = o->http_token,
		    .max_decoded = o->http_max_decoded };

		if (http_start(st, &ho, &http) < 0)
			goto fail;
	}
	if (o->scrape && scrape_start(st, o->scrape, &scr) < 0)
		goto fail;
	if (o->ebpf_hz) {
		struct ebpf_opts eo = { .hz = o->ebpf_hz, .flush_secs = o->ebpf_flush };

		if (ebpf_start(st, &eo, &ebpf) < 0)
			goto fail;
	}
	memset(&fs, 0, sizeof(fs));
	fs.st = st;
	if (scr != NULL) {
		fs.targets_json = targets_json;
		fs.targets_arg = scr;
	}
	memset(&fo, 0, sizeof(fo));
	fo.mountpoint = mnt;
	fo.debug = o->debug_fuse;
	/*
	 * A signal that came while starting up stops us cleanly; from here on
	 * libfuse handles them (it takes over only signals at their default).
	 */
	if (early_stop) {
		log_info("signal %d while starting: stopping", (int)early_stop);
		ebpf_stop(ebpf);
		scrape_stop(scr);
		http_stop(http);
		store_close(st);
		return 0;
	}
	early_signals(SIG_DFL);
	rc = fs_main(&fs, &fo);
	ebpf_stop(ebpf);
	scrape_stop(scr);
	http_stop(http);
	store_close(st);
	log_info("stopped");
	return rc < 0 ? 1 : 0;
fail:
	ebpf_stop(ebpf);
	scrape_stop(scr);
	http_stop(http);
	store_close(st);
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
		{ "scrape",	required_argument,	NULL, 's' },
		{ "http-token",	required_argument,	NULL, 'T' },
		{ "http-max-body", required_argument,	NULL, 'B' },
		{ "http-max-conns", required_argument,	NULL, 'C' },
		{ "http-max-decoded", required_argument, NULL, 'Z' },
		{ "memory-limit", required_argument,	NULL, 'L' },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "debug-fuse",	no_argument,		NULL, 'D' },
		{ "retention",	required_argument,	NULL, 'R' },
		{ "help",	no_argument,		NULL, 'h' },
		{ "version",	no_argument,		NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct serve_opts o = { .data = "./profilefs-data" };
	char *end;
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
		if (argc >= 2)
			fprintf(stderr, "profilefs: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
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
		case 's':
			o.scrape = optarg;
			break;
		case 'T':
			o.http_token = optarg;
			break;
		case 'B':
		case 'Z':
		case 'L':
			errno = 0;
			bytes = strtoull(optarg, &end, 10);
			mult = *end == 'K' || *end == 'k' ? 1u << 10 : *end == 'M' || *end == 'm' ?
			    1u << 20 : *end == 'G' || *end == 'g' ? 1u << 30 : 1;
			if (mult > 1)
				end++;
			if (errno || *end || bytes == 0 || bytes > (1ull << 40) / mult ||
			    (c == 'L' && bytes * mult < (64u << 20))) {
				fprintf(stderr, "profilefs: --%s: not a size in bytes%s: '%s'\n",
				    c == 'B' ? "http-max-body" : c == 'Z' ? "http-max-decoded" :
				    "memory-limit", c == 'L' ? " of at least 64M" : "", optarg);
				return 2;
			}
			if (c == 'L')
				budget_set_limit((size_t)(bytes * mult));
			else if (c == 'B')
				o.http_max_body = (size_t)(bytes * mult);
			else
				o.http_max_decoded = (size_t)(bytes * mult);
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
			log_verbose = 1;
			break;
		case 'D':
			o.debug_fuse = 1;
			break;
		case 'R':
			if (clock_parse_duration(optarg, RETENTION_MAX, &o.retention) < 0) {
				fprintf(stderr, "profilefs: --retention: '%s' is not a duration "
				    "(write e.g. 30d, 12h, 90m)\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("profilefs %s (commit %s)\n", PROFILEFS_VERSION, PROFILEFS_COMMIT);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "profilefs: serve needs exactly one MOUNTPOINT\n");
		usage(stderr);
		return 2;
	}
	o.mountpoint = argv[optind];
	signal(SIGPIPE, SIG_IGN);
	/*
	 * A shell that starts us in the background leaves SIGINT ignored:
	 * catch SIGINT/SIGTERM/SIGHUP ourselves until the mount takes over, so
	 * a signal at any time stops the daemon cleanly.
	 */
	early_signals(on_early_signal);
	return serve(&o);
}
