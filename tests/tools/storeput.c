/*
 * storeput: the store's ingest ceiling for the HTTP benchmark. T threads call
 * store_put() in a loop on the given profiles (round-robin) until N are
 * stored, into a fresh database in DIR; prints the rate and latency
 * percentiles in httpload's format. Built against build/libprofilefs.a.
 *
 *   storeput -t 32 -n 20000 DIR FILE...
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

static struct store *st;
static struct buf *files;
static size_t nfiles;
static long total = 10000;
static _Atomic long next_req, n_ok, n_fail;
static int64_t *lat;

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *
worker(void *arg)
{
	struct store_input in = { .service = "ceiling", .type = "cpu", .source = "bench" };
	struct labelset ls = { .n = 0 };
	struct buf err = { 0 };
	char v[16];
	long i;

	snprintf(v, sizeof(v), "%d", (int)(intptr_t)arg);
	labels_add(&ls, "conn", v, NULL);
	in.labels = &ls;
	while ((i = atomic_fetch_add(&next_req, 1)) < total) {
		struct buf *f = &files[(size_t)i % nfiles];
		int64_t t0 = now_ns();

		buf_reset(&err);
		if (store_put(st, &in, f->data, f->len, NULL, &err) == 0) {
			atomic_fetch_add(&n_ok, 1);
		} else {
			atomic_fetch_add(&n_fail, 1);
			fprintf(stderr, "storeput: %s\n", err.data ? err.data : "failed");
		}
		lat[i] = now_ns() - t0;
	}
	buf_free(&err);
	labels_clear(&ls);
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
	struct buf err = { 0 };
	pthread_t *th;
	int64_t t0, el;
	int nthreads = 1, opt;
	size_t bytes = 0, i;

	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		if (opt == 't')
			nthreads = atoi(optarg);
		else if (opt == 'n')
			total = atol(optarg);
		else
			goto usage;
	}
	if (argc - optind < 2 || nthreads < 1 || total < 1)
		goto usage;
	nfiles = (size_t)(argc - optind - 1);
	files = calloc(nfiles, sizeof(*files));
	for (i = 0; i < nfiles; i++) {
		if (buf_read_file(&files[i], argv[optind + 1 + i], 1u << 30) < 0) {
			perror(argv[optind + 1 + i]);
			return 2;
		}
		bytes += files[i].len;
	}
	if (store_open(argv[optind], &st, &err) < 0) {
		fprintf(stderr, "storeput: %s\n", err.data ? err.data : "cannot open the store");
		return 2;
	}
	lat = calloc((size_t)total, sizeof(*lat));
	th = calloc((size_t)nthreads, sizeof(*th));
	t0 = now_ns();
	for (i = 0; i < (size_t)nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (i = 0; i < (size_t)nthreads; i++)
		pthread_join(th[i], NULL);
	el = now_ns() - t0;
	store_close(st);
	qsort(lat, (size_t)total, sizeof(*lat), cmp64);
	printf("requests %ld ok %ld failed %ld threads %d files %zu (avg %zu bytes) seconds %.3f\n",
	    total, atomic_load(&n_ok), atomic_load(&n_fail), nthreads, nfiles, bytes / nfiles,
	    (double)el / 1e9);
	printf("rate %.0f/s\n", (double)atomic_load(&n_ok) / ((double)el / 1e9));
	printf("latency_ms p50 %.2f p90 %.2f p99 %.2f max %.2f\n", lat[total / 2] / 1e6,
	    lat[total * 9 / 10] / 1e6, lat[total * 99 / 100] / 1e6, lat[total - 1] / 1e6);
	return atomic_load(&n_fail) ? 1 : 0;
usage:
	fprintf(stderr, "usage: storeput [-t THREADS] [-n PROFILES] DIR FILE...\n");
	return 2;
}
