/*
 * test_memgrow: the aggregates of --ebpf-memory (collector/ebpf/memgrow.c).
 * Samples of each kind go to their own profile type beside the CPU
 * aggregate (one process feeding all in turn), with the sample types, the
 * default sample type, the call labels and the values the BPF side sent;
 * the store knows the types and infers them back; bad arguments are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuprof.h"
#include "memgrow.h"
#include "proctab.h"
#include "base.h"
#include "pprof.h"
#include "store.h"

static char tmpdir[64];

static int
scan_one(void *arg, const struct store_ref *ref, const void *data, size_t len)
{
	struct profile **p = arg;

	(void)ref;
	return profile_decode(data, len, p, NULL) == 0 ? 1 : -1;
}

/* The stored profile of type type (the only one of its series). */
static struct profile *
stored(struct store *st, const char *type)
{
	const struct series **ser = NULL;
	struct profile *p = NULL;
	size_t i, n;

	assert_int_equal(store_series(st, &ser, &n), 0);
	for (i = 0; i < n && strcmp(ser[i]->type, type) != 0; i++)
		;
	assert_true(i < n);
	assert_string_equal(ser[i]->service, "grower");
	assert_int_equal(store_scan(st, ser[i]->id, 0, INT64_MAX, true, scan_one, &p), 1);
	free(ser);
	assert_non_null(p);
	return p;
}

/* The sum of the values of type k over the samples labelled call=value. */
static int64_t
total_call(const struct profile *p, size_t k, const char *value)
{
	int64_t sum = 0;
	size_t i, j;

	for (i = 0; i < p->nsamples; i++)
		for (j = 0; j < p->samples[i].nlabels; j++)
			if (strcmp(profile_str(p, p->samples[i].labels[j].key), "call") == 0 &&
			    strcmp(profile_str(p, p->samples[i].labels[j].str), value) == 0)
				sum += p->samples[i].values[k];
	return sum;
}

static void
sample_of(struct prof_sample *s, uint32_t kind, uint64_t bytes, uint32_t events)
{
	memset(s, 0, sizeof(*s));
	s->hdr.kind = kind;
	s->hdr.pid = 7;
	s->hdr.tid = 8;
	s->offcpu_ns = bytes;
	s->waits = events;
}

static void
test_memgrow_profiles(void **state)
{
	struct memgrow *m;
	struct cpuprof *c, *g, *mm;
	struct cpuprof_svc *cs, *gs, *ms;
	struct prof_sample s;
	struct store *st;
	struct profile *p;
	struct buf err = { 0 };
	struct frame f;
	struct proc pr;
	uint32_t loc;
	uint64_t samples;
	size_t profiles;
	char dir[128];
	int64_t li;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/store", tmpdir);
	assert_int_equal(store_open(dir, &st, &err), 0);
	memset(&pr, 0, sizeof(pr));
	snprintf(pr.service, sizeof(pr.service), "grower");
	pr.labels_text = (char *)"host=h1";
	c = cpuprof_create(99);
	m = memgrow_create(256, 4096);
	assert_non_null(c);
	assert_non_null(m);
	assert_false(memgrow_kind(PROF_EV_SAMPLE));
	assert_false(memgrow_kind(PROF_EV_OFFCPU));
	assert_true(memgrow_kind(PROF_EV_MEM_FAULT));
	assert_true(memgrow_kind(PROF_EV_MEM_UNMAP));
	assert_null(memgrow_cpuprof(m, PROF_EV_SAMPLE));
	g = memgrow_cpuprof(m, PROF_EV_MEM_FAULT);
	mm = memgrow_cpuprof(m, PROF_EV_MEM_MMAP);
	assert_non_null(g);
	assert_non_null(mm);
	assert_ptr_not_equal(g, mm);
	assert_ptr_equal(memgrow_cpuprof(m, PROF_EV_MEM_BRK), mm);
	assert_ptr_equal(memgrow_cpuprof(m, PROF_EV_MEM_UNMAP), mm);
	/* Each aggregate its own of the process's cached services. */
	cs = cpuprof_service(c, &pr);
	gs = cpuprof_service(g, &pr);
	ms = cpuprof_service(mm, &pr);
	assert_non_null(cs);
	assert_non_null(gs);
	assert_non_null(ms);
	assert_ptr_not_equal(cs, gs);
	assert_ptr_not_equal(gs, ms);
	assert_ptr_equal(cpuprof_service(c, &pr), cs);
	assert_ptr_equal(cpuprof_service(g, &pr), gs);
	assert_ptr_equal(cpuprof_service(mm, &pr), ms);

	memset(&f, 0, sizeof(f));
	f.func = "grow";
	f.file = "/usr/bin/grower";
	f.build_id = "";
	f.start = 0x400000;
	f.limit = 0x500000;
	f.addr = 0x401000;
	li = cpuprof_location(gs, &f);
	assert_true(li >= 0);
	loc = (uint32_t)li;
	sample_of(&s, PROF_EV_MEM_FAULT, 256 * 4096, 256);
	assert_int_equal(memgrow_add(gs, &loc, 1, &s, "grower", NULL, NULL, 0), 0);
	assert_int_equal(memgrow_add(gs, &loc, 1, &s, "grower", NULL, NULL, 0), 0);
	li = cpuprof_location(ms, &f);
	assert_true(li >= 0);
	loc = (uint32_t)li;
	sample_of(&s, PROF_EV_MEM_MMAP, 300 << 20, 1);
	assert_int_equal(memgrow_add(ms, &loc, 1, &s, "grower", NULL, NULL, 0), 0);
	sample_of(&s, PROF_EV_MEM_BRK, 256 << 10, 2);
	assert_int_equal(memgrow_add(ms, &loc, 1, &s, "grower", NULL, NULL, 0), 0);
	sample_of(&s, PROF_EV_MEM_UNMAP, 100 << 20, 1);
	assert_int_equal(memgrow_add(ms, &loc, 1, &s, "grower", NULL, NULL, 0), 0);
	li = cpuprof_location(cs, &f);
	assert_true(li >= 0);
	loc = (uint32_t)li;
	assert_int_equal(cpuprof_sample(cs, &loc, 1, 7, 8, "grower", 0), 0);

	memgrow_flush(m, st, 1000000000LL, 2000000000LL, NULL, &samples);
	assert_int_equal(samples, 2 * 256 + 1 + 2 + 1);
	assert_int_equal(cpuprof_flush(c, st, 1000000000LL, 2000000000LL, NULL, &profiles,
	    &samples), 0);
	assert_int_equal(profiles, 1);

	p = stored(st, "memory-growth");
	assert_int_equal(p->nsample_types, 2);
	assert_string_equal(profile_str(p, p->sample_types[0].type), "faults");
	assert_string_equal(profile_str(p, p->sample_types[0].unit), "count");
	assert_string_equal(profile_str(p, p->sample_types[1].type), "fault_space");
	assert_string_equal(profile_str(p, p->sample_types[1].unit), "bytes");
	assert_string_equal(profile_str(p, p->period_type.type), "fault_space");
	assert_int_equal(p->period, 256 * 4096);
	assert_int_equal(profile_total(p, 0), 512);
	assert_int_equal(profile_total(p, 1), 2 * 256 * 4096);
	assert_string_equal(store_infer_type(p), "memory-growth");
	profile_free(p);

	p = stored(st, "memory-mmap");
	assert_int_equal(p->nsample_types, 3);
	assert_string_equal(profile_str(p, p->sample_types[0].type), "calls");
	assert_string_equal(profile_str(p, p->sample_types[1].type), "mmap_space");
	assert_string_equal(profile_str(p, p->sample_types[2].type), "munmap_space");
	assert_string_equal(profile_str(p, p->sample_types[2].unit), "bytes");
	assert_string_equal(profile_str(p, p->default_sample_type), "mmap_space");
	assert_int_equal(profile_default_type(p), 1);
	assert_int_equal(profile_total(p, 0), 4);
	assert_int_equal(total_call(p, 1, "mmap"), 300 << 20);
	assert_int_equal(total_call(p, 1, "brk"), 256 << 10);
	assert_int_equal(total_call(p, 0, "brk"), 2);
	assert_int_equal(total_call(p, 2, "munmap"), 100 << 20);
	assert_int_equal(total_call(p, 1, "munmap"), 0);
	assert_string_equal(store_infer_type(p), "memory-mmap");
	profile_free(p);

	assert_true(store_type_known("memory-growth"));
	assert_true(store_type_known("memory-mmap"));
	/* Other slots than the CPU and off-CPU aggregates', and sample types that fit. */
	assert_null(cpuprof_create_typed("x", NULL, NULL, 1, 1, NULL, 2));
	assert_null(cpuprof_create_typed("x", NULL, NULL, 2, 1, NULL, 0));
	assert_null(cpuprof_create_typed("x", NULL, NULL, 2, 1, NULL, CPUPROF_SLOTS));
	memgrow_destroy(m);
	cpuprof_destroy(c);
	store_close(st);
	buf_free(&err);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_memgrow.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memgrow_profiles),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
