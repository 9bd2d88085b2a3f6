/*
 * Unit tests of Go labels on eBPF samples (collector/ebpf/runtimes/golabels.c):
 * the Go version of .go.buildinfo in both its forms, and how a sample's
 * label bytes become series and sample labels: sorted and escaped, a series
 * label's key left to the series, malformed pairs dropped, at most
 * GOLABELS_SETS_PER_SERVICE series per service, the window starting over,
 * GOLABELS_MAX_SETS sets remembered.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "golabels.h"

static int
no_read(void *arg, uint64_t vaddr, void *dst, size_t n)
{
	(void)arg;
	(void)vaddr;
	(void)dst;
	(void)n;
	return -EFAULT;
}

/* The pointer form: a string header at 0x1000, its bytes at 0x2000. */
static int
fake_read(void *arg, uint64_t vaddr, void *dst, size_t n)
{
	static const char ver[] = "go1.17.13";
	uint64_t hdr[2] = { 0x2000, sizeof(ver) - 1 };

	(void)arg;
	if (vaddr == 0x1000 && n == sizeof(hdr)) {
		memcpy(dst, hdr, n);
		return 0;
	}
	if (vaddr == 0x2000 && n <= sizeof(ver)) {
		memcpy(dst, ver, n);
		return 0;
	}
	return -EFAULT;
}

static void
test_buildinfo(void **state)
{
	uint8_t b[64] = "\xff Go buildinf:";
	uint64_t p = 0x1000;
	int major = 0, minor = 0;

	(void)state;
	/* Go 1.18 on: the version inline at 32, a uvarint length first. */
	b[14] = 8;
	b[15] = 2;
	b[32] = 8;
	memcpy(b + 33, "go1.19.8", 8);
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), no_read, NULL, &major, &minor), 0);
	assert_int_equal(major, 1);
	assert_int_equal(minor, 19);
	b[32] = 0x7f;	/* longer than the section */
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), no_read, NULL, &major, &minor),
	    -EINVAL);
	b[32] = 11;
	memcpy(b + 33, "devel go1.2", 11);
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), no_read, NULL, &major, &minor), 0);
	assert_int_equal(minor, 2);
	/* Before 1.18: a pointer to the version's string header. */
	b[15] = 0;
	memcpy(b + 16, &p, 8);
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), fake_read, NULL, &major, &minor), 0);
	assert_int_equal(minor, 17);
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), no_read, NULL, &major, &minor),
	    -EINVAL);
	b[14] = 4;	/* 32-bit */
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), fake_read, NULL, &major, &minor),
	    -EINVAL);
	assert_int_equal(golabels_buildinfo_version(b, 20, fake_read, NULL, &major, &minor), -EINVAL);
	b[0] = 0;
	assert_int_equal(golabels_buildinfo_version(b, sizeof(b), fake_read, NULL, &major, &minor),
	    -EINVAL);
}

/* Append pair k=v to s's Go labels. */
static void
add(struct prof_sample *s, const char *k, const char *v)
{
	size_t kl = strlen(k), vl = strlen(v), pos = 0, i;

	for (i = 0; i < s->go_n; i++)
		pos = s->go[i].value + s->go[i].vlen;
	assert_true(pos + kl + vl <= PROF_GO_STR);
	memcpy(s->go_str + pos, k, kl);
	memcpy(s->go_str + pos + kl, v, vl);
	s->go[s->go_n].key = (uint16_t)pos;
	s->go[s->go_n].klen = (uint16_t)kl;
	s->go[s->go_n].value = (uint16_t)(pos + kl);
	s->go[s->go_n].vlen = (uint16_t)vl;
	s->go_n++;
	s->rt = PROF_RT_GO;
	s->go_flags = PROF_GO_WALKED;
}

static void
proc_init(struct proc *p, const char *service, const char *labels)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->service, sizeof(p->service), "%s", service);
	p->labels_text = strdup(labels);
	assert_non_null(p->labels_text);
	assert_int_equal(labels_parse(labels, &p->labels, NULL), 0);
}

static void
proc_fini(struct proc *p)
{
	labels_clear(&p->labels);
	free(p->labels_text);
}

static void
test_sample(void **state)
{
	struct golabels *gl = golabels_create(-1);
	struct prof_sample *s = calloc(1, sizeof(*s));
	struct golabels_set gs;
	struct golabels_stats st;
	struct proc p;

	(void)state;
	assert_non_null(gl);
	assert_non_null(s);
	proc_init(&p, "api", "host=h1,unit=api.service");
	/* Not walked, or no pairs: none. */
	assert_int_equal(golabels_sample(gl, &p, s, &gs), -ENOENT);
	s->rt = PROF_RT_GO;
	s->go_flags = PROF_GO_WALKED;
	assert_int_equal(golabels_sample(gl, &p, s, &gs), -ENOENT);

	add(s, "tier", "gold");
	add(s, "handler", "/api/v1");
	add(s, "host", "spoofed");	/* a series label's key: a sample label only */
	add(s, "empty", "");		/* Prometheus: an empty value is no label */
	assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
	assert_string_equal(gs.series, "handler=%2Fapi%2Fv1,host=h1,tier=gold,unit=api.service");
	assert_int_equal(gs.n, 3);
	assert_string_equal(gs.keys[0], "handler");
	assert_string_equal(gs.values[0], "/api/v1");
	assert_string_equal(gs.keys[1], "host");
	assert_string_equal(gs.values[1], "spoofed");
	assert_string_equal(gs.keys[2], "tier");

	/* Span ids (Pyroscope's span profiles) stay sample labels, never series. */
	{
		memset(s->go, 0, sizeof(s->go));
		s->go_n = 0;
		add(s, "handler", "/api/v1");
		add(s, "span_id", "9f3c2a1b7d4e5f60");
		add(s, "span_name", "GET /api/v1");
		assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
		assert_string_equal(gs.series, "handler=%2Fapi%2Fv1,host=h1,unit=api.service");
		assert_int_equal(gs.n, 3);
		assert_string_equal(gs.keys[1], "span_id");
		assert_string_equal(gs.values[1], "9f3c2a1b7d4e5f60");
		/* A span id alone: the process's plain series. */
		memset(s->go, 0, sizeof(s->go));
		s->go_n = 0;
		add(s, "span_id", "0000000000000abc");
		assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
		assert_null(gs.series);
		assert_int_equal(gs.n, 1);
	}

	/* The same pairs in another order: the same set. */
	memset(s->go, 0, sizeof(s->go));
	s->go_n = 0;
	add(s, "handler", "/api/v1");
	add(s, "tier", "gold");
	assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
	assert_string_equal(gs.series, "handler=%2Fapi%2Fv1,host=h1,tier=gold,unit=api.service");
	golabels_get_stats(gl, &st);
	assert_int_equal(st.sets, 4);	/* "host=spoofed" made the first a set of its own; 2 spans */
	assert_int_equal(st.dropped, 1);

	/* Offsets past go_str, a NUL in a key: dropped. */
	s->go[0].key = PROF_GO_STR - 1;
	s->go[0].klen = 4;
	assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
	assert_int_equal(gs.n, 1);
	s->go_str[s->go[1].key] = '\0';
	assert_int_equal(golabels_sample(gl, &p, s, &gs), -ENOENT);

	golabels_destroy(gl);
	proc_fini(&p);
	free(s);
}

static void
test_bounds(void **state)
{
	struct golabels *gl = golabels_create(-1);
	struct prof_sample *s = calloc(1, sizeof(*s));
	struct golabels_set gs;
	struct golabels_stats st;
	struct proc p, q;
	char v[16];
	int i;

	(void)state;
	assert_non_null(gl);
	assert_non_null(s);
	proc_init(&p, "api", "host=h1");
	proc_init(&q, "worker", "host=h1");
	golabels_period(gl, 1);
	for (i = 0; i < GOLABELS_SETS_PER_SERVICE + 8; i++) {
		memset(s->go, 0, sizeof(s->go));
		s->go_n = 0;
		snprintf(v, sizeof(v), "%d", i);
		add(s, "req", v);
		assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
		if (i < GOLABELS_SETS_PER_SERVICE) {
			assert_non_null(gs.series);
		} else {
			/* Past the bound: p's plain series, the pair a sample label still. */
			assert_null(gs.series);
			assert_int_equal(gs.n, 1);
			assert_string_equal(gs.values[0], v);
		}
	}
	/* Another service has room of its own. */
	assert_int_equal(golabels_sample(gl, &q, s, &gs), 0);
	assert_string_equal(gs.series, "host=h1,req=39");
	golabels_get_stats(gl, &st);
	assert_int_equal(st.refused, 8);
	/* The window starts over after an hour, not before. */
	golabels_period(gl, GOLABELS_WINDOW_NS / 2);
	assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
	assert_null(gs.series);
	golabels_period(gl, GOLABELS_WINDOW_NS + 2);
	assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
	assert_string_equal(gs.series, "host=h1,req=39");
	golabels_destroy(gl);
	proc_fini(&p);
	proc_fini(&q);
	free(s);
}

/* Past GOLABELS_MAX_SETS sets in a window: none remembered, the pairs still sample labels. */
static void
test_max_sets(void **state)
{
	struct golabels *gl = golabels_create(-1);
	struct prof_sample *s = calloc(1, sizeof(*s));
	struct golabels_set gs;
	struct golabels_stats st;
	struct proc p;
	char v[16];
	int i;

	(void)state;
	assert_non_null(gl);
	assert_non_null(s);
	proc_init(&p, "api", "host=h1");
	for (i = 0; i <= GOLABELS_MAX_SETS; i++) {
		memset(s->go, 0, sizeof(s->go));
		s->go_n = 0;
		snprintf(v, sizeof(v), "%d", i);
		add(s, "req", v);
		assert_int_equal(golabels_sample(gl, &p, s, &gs), 0);
		assert_int_equal(gs.n, 1);
		assert_string_equal(gs.values[0], v);
		if (i < GOLABELS_SETS_PER_SERVICE)
			assert_non_null(gs.series);
		else
			assert_null(gs.series);
	}
	golabels_get_stats(gl, &st);
	assert_int_equal(st.sets, GOLABELS_MAX_SETS);
	assert_int_equal(st.refused, GOLABELS_MAX_SETS + 1 - GOLABELS_SETS_PER_SERVICE);
	golabels_destroy(gl);
	proc_fini(&p);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buildinfo),
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_max_sets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
