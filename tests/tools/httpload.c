/*
 * httpload: a small HTTP/1.1 load generator for the HTTP API's load test and
 * benchmark. C connections (threads) each keep one keep-alive connection and
 * POST the given files round-robin until N requests are done or the time
 * limit passes; it prints the rate and latency percentiles, and exits 1 if
 * any request failed (a status other than 200, a broken connection) or the
 * time limit cut the run short.
 *
 *   httpload -c 32 -n 5000 -t 60 -p '/api/0/profiles?service=s&type=cpu&labels=conn={c}' \
 *       [-H 'Authorization: Bearer x'] HOST PORT FILE...
 *
 * In the path, {c} becomes the connection's number. With -T BASE,STEP,K
 * (unix seconds, seconds, count), request i is sent for series {k} = i % K
 * at time {t} = BASE + (i / K) * STEP, written 2006-01-02T15:04:05 (UTC):
 * a backfill of K label sets at a STEP cadence. Responses must carry a
 * Content-Length (the server under test always sends one).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct file {
	char	*data;
	size_t	 len;
};

static const char *host, *port, *path_tmpl, *extra_header;
static struct file *files;
static size_t nfiles;
static long total = 1000, limit_secs = 60;
static int nconns = 32;
static long t_base, t_step, t_k;	/* -T: backfill times, 0: none */
static _Atomic long next_req, n_ok, n_fail;
static int64_t deadline;
static int64_t *lat;		/* per request, ns; index = request number */
static _Atomic int timed_out;

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
dial(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd, one = 1;

	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
send_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Read one response; its status, or -1. *close_after set if the server closes. */
static int
read_response(int fd, char *buf, size_t cap, int *close_after)
{
	size_t have = 0, body_len = 0, need;
	char *hdr_end = NULL, *p;
	int status;
	ssize_t r;

	while (hdr_end == NULL) {
		if (have == cap - 1)
			return -1;
		r = read(fd, buf + have, cap - 1 - have);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		hdr_end = strstr(buf, "\r\n\r\n");
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	*close_after = 0;
	for (p = buf; p < hdr_end; p = strstr(p, "\r\n") + 2) {
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			body_len = strtoul(p + 15, NULL, 10);
		else if (strncasecmp(p, "Connection: close", 17) == 0)
			*close_after = 1;
	}
	need = (size_t)(hdr_end + 4 - buf) + body_len;
	while (have < need) {
		char sink[65536];
		size_t want = need - have < sizeof(sink) ? need - have : sizeof(sink);

		r = read(fd, sink, want);
		if (r <= 0)
			return -1;
		have += (size_t)r;
	}
	return status;
}

static void *
worker(void *arg)
{
	int c = (int)(intptr_t)arg, fd = -1, close_after = 0, status;
	char head[2048], path[1024], resp[16384];
	const char *t, *m;
	size_t pl = 0;
	long i;

	while ((i = atomic_fetch_add(&next_req, 1)) < total) {
		struct file *f = &files[(size_t)i % nfiles];
		struct iovec iov[2];
		int64_t t0;
		int hl;

		if (now_ns() > deadline) {
			atomic_store(&timed_out, 1);
			break;
		}
		/* The path with {c}, {k} and {t} replaced. */
		for (pl = 0, t = path_tmpl; *t && pl + 32 < sizeof(path);) {
			if ((m = strstr(t, "{c}")) == t) {
				pl += (size_t)snprintf(path + pl, sizeof(path) - pl, "%d", c);
				t += 3;
			} else if (t_k && (m = strstr(t, "{k}")) == t) {
				pl += (size_t)snprintf(path + pl, sizeof(path) - pl, "%ld", i % t_k);
				t += 3;
			} else if (t_k && (m = strstr(t, "{t}")) == t) {
				time_t secs = (time_t)(t_base + (i / t_k) * t_step);
				struct tm tm;

				gmtime_r(&secs, &tm);
				pl += strftime(path + pl, sizeof(path) - pl, "%Y-%m-%dT%H:%M:%S", &tm);
				t += 3;
			} else {
				path[pl++] = *t++;
			}
		}
		path[pl] = '\0';
		if (fd < 0 && (fd = dial()) < 0) {
			atomic_fetch_add(&n_fail, 1);
			continue;
		}
		hl = snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: %s:%s\r\n"
		    "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n%s%s\r\n",
		    path, host, port, f->len, extra_header ? extra_header : "",
		    extra_header ? "\r\n" : "");
		iov[0].iov_base = head;
		iov[0].iov_len = (size_t)hl;
		iov[1].iov_base = f->data;
		iov[1].iov_len = f->len;
		t0 = now_ns();
		status = send_all(fd, iov, 2) == 0 ? read_response(fd, resp, sizeof(resp),
		    &close_after) : -1;
		lat[i] = now_ns() - t0;
		if (status == 200) {
			atomic_fetch_add(&n_ok, 1);
		} else {
			if (atomic_fetch_add(&n_fail, 1) < 5)
				fprintf(stderr, "httpload: request %ld: %s %d\n", i,
				    status < 0 ? "connection failed" : "status", status);
			close_after = 1;
		}
		if (close_after) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	pthread_t *th;
	int64_t t0, el;
	long done, i, n;
	size_t bytes = 0;
	int opt;

	path_tmpl = "/api/0/profiles?service=load&type=cpu";
	while ((opt = getopt(argc, argv, "c:n:t:p:H:T:")) != -1) {
		switch (opt) {
		case 'c':
			nconns = atoi(optarg);
			break;
		case 'n':
			total = atol(optarg);
			break;
		case 't':
			limit_secs = atol(optarg);
			break;
		case 'p':
			path_tmpl = optarg;
			break;
		case 'T':
			if (sscanf(optarg, "%ld,%ld,%ld", &t_base, &t_step, &t_k) != 3 || t_k <= 0) {
				fprintf(stderr, "httpload: -T BASE,STEP,K\n");
				return 2;
			}
			break;
		case 'H':
			extra_header = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind < 3 || nconns < 1 || total < 1)
		goto usage;
	host = argv[optind];
	port = argv[optind + 1];
	nfiles = (size_t)(argc - optind - 2);
	files = calloc(nfiles, sizeof(*files));
	for (i = 0; i < (long)nfiles; i++) {
		FILE *fp = fopen(argv[optind + 2 + i], "rb");

		if (fp == NULL || fseek(fp, 0, SEEK_END) < 0) {
			perror(argv[optind + 2 + i]);
			return 2;
		}
		files[i].len = (size_t)ftell(fp);
		rewind(fp);
		files[i].data = malloc(files[i].len + 1);
		if (fread(files[i].data, 1, files[i].len, fp) != files[i].len) {
			perror(argv[optind + 2 + i]);
			return 2;
		}
		fclose(fp);
		bytes += files[i].len;
	}
	lat = calloc((size_t)total, sizeof(*lat));
	th = calloc((size_t)nconns, sizeof(*th));
	t0 = now_ns();
	deadline = t0 + (int64_t)limit_secs * 1000000000;
	for (i = 0; i < nconns; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (i = 0; i < nconns; i++)
		pthread_join(th[i], NULL);
	el = now_ns() - t0;
	done = atomic_load(&n_ok) + atomic_load(&n_fail);
	n = done < total ? done : total;
	qsort(lat, (size_t)n, sizeof(*lat), cmp64);
	printf("requests %ld ok %ld failed %ld connections %d files %zu (avg %zu bytes) "
	    "seconds %.3f\n", done, atomic_load(&n_ok), atomic_load(&n_fail), nconns, nfiles,
	    bytes / nfiles, (double)el / 1e9);
	printf("rate %.0f/s\n", (double)atomic_load(&n_ok) / ((double)el / 1e9));
	if (n > 0)
		printf("latency_ms p50 %.2f p90 %.2f p99 %.2f max %.2f\n", lat[n / 2] / 1e6,
		    lat[n * 9 / 10] / 1e6, lat[n * 99 / 100] / 1e6, lat[n - 1] / 1e6);
	if (atomic_load(&timed_out))
		printf("time limit of %ld s reached\n", limit_secs);
	return atomic_load(&n_fail) || atomic_load(&timed_out) || done < total ? 1 : 0;
usage:
	fprintf(stderr, "usage: httpload [-c CONNS] [-n REQUESTS] [-t SECONDS] [-p PATH] "
	    "[-H HEADER] HOST PORT FILE...\n");
	return 2;
}
