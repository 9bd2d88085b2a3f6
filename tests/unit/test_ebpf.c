/*
 * test_ebpf: the pure parts of the eBPF sampler's user side, no root needed:
 * perf map parsing (latest entry wins, bounds), ELF symbolization of this
 * very program through its /proc/self/maps mapping and load bias, cgroup
 * paths to units, containers and pods, and the
 * aggregation into a Go-shaped CPU profile stored and read back (sample
 * types, period, per-sample labels, kernel mapping, unresolved frames).
 * The off-CPU drain runs against real BPF hash maps where the process may
 * create them (root, CAP_BPF), and is skipped elsewhere. The process table
 * reads this process's mappings both ways (asked of the kernel, parsed from
 * the text) and must find the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <errno.h>

#include <bpf/bpf.h>

#include "cpuprof.h"
#include "offcpu.h"
#include "proctab.h"
#include "base.h"
#include "pprof.h"
#include "store.h"
#include "symbolize.h"
#include "unwind.h"

static char tmpdir[64];

__attribute__((noinline)) int target_function_for_symbolize(int x);
static const int target_line = __LINE__ + 2;	/* the function's body starts there */
__attribute__((noinline)) int
target_function_for_symbolize(int x)
{
	return x * 3 + 1;
}

static void
test_perfmap(void **state)
{
	char path[128];
	struct perfmap *m;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/perf-1.map", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "1000 100 old_name\n");
	fprintf(f, "2000 10 other fn with spaces\n");
	fprintf(f, "garbage line\n");
	fprintf(f, "0x1000 80 new_name\n");	/* later: wins where it covers */
	fprintf(f, "3000 0 empty_is_ignored\n");
	fclose(f);
	m = perfmap_load(path, getuid());
	assert_non_null(m);
	assert_string_equal(perfmap_lookup(m, 0x1000), "new_name");
	assert_string_equal(perfmap_lookup(m, 0x107f), "new_name");
	assert_string_equal(perfmap_lookup(m, 0x1080), "old_name");	/* only the old covers */
	assert_null(perfmap_lookup(m, 0x1100));
	assert_string_equal(perfmap_lookup(m, 0x200f), "other fn with spaces");	/* sizes are hex */
	assert_null(perfmap_lookup(m, 0x2010));
	assert_null(perfmap_lookup(m, 0x3000));
	assert_null(perfmap_lookup(m, 0xfff));
	perfmap_free(m);
	assert_null(perfmap_load("/nonexistent/perf-0.map", getuid()));
}

/* A perf map is whatever the sampled process's owner put there. */
static void
test_perfmap_hostile(void **state)
{
	char path[128];

	(void)state;
	/* A symlink to an endless file is not followed. */
	snprintf(path, sizeof(path), "%s/perf-2.map", tmpdir);
	unlink(path);
	assert_int_equal(symlink("/dev/zero", path), 0);
	assert_null(perfmap_load(path, getuid()));
	assert_int_equal(symbolize_open(path, false, 0), -ELOOP);
	unlink(path);
	/* A FIFO nobody writes to does not block the sampler. */
	snprintf(path, sizeof(path), "%s/perf-3.map", tmpdir);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_null(perfmap_load(path, getuid()));
	/* Refused at once, whether links may be followed or not. */
	assert_int_equal(symbolize_open(path, true, 0), -EINVAL);
	unlink(path);
	/* Someone else's file in the process's /tmp names nothing. */
	if (getuid() == 0) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/perf-4.map", tmpdir);
		f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "1000 100 planted\n");
		fclose(f);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_null(perfmap_load(path, 1000));
		{
			struct perfmap *m = perfmap_load(path, 65534);

			assert_non_null(m);
			assert_string_equal(perfmap_lookup(m, 0x1000), "planted");
			perfmap_free(m);
		}
		unlink(path);
	}
}

/*
 * A stripped Debian binary: PLT stubs named as objdump names them
 * ("read@plt"), and _start found at the entry point without any symbol.
 */
static void
test_plt_entry(void **state)
{
	const char *bin = "/usr/bin/gzip";
	unsigned long long addr, entry = 0;
	struct symbolizer *s;
	struct elfobj *o;
	size_t matched = 0, wrong = 0;
	char line[512], name[256];
	struct stat st;
	FILE *f;

	(void)state;
	if (stat(bin, &st) != 0 || system("command -v objdump >/dev/null") != 0)
		skip();
	s = symbolize_create();
	assert_non_null(s);
	o = symbolize_elf(s, st.st_dev, st.st_ino, bin, "/", bin);
	assert_non_null(o);
	f = popen("objdump -d -j .plt -j .plt.sec -j .plt.got /usr/bin/gzip 2>/dev/null", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx <%255[^>]>:", &addr, name) == 2 && strlen(name) > 4 &&
		    strcmp(name + strlen(name) - 4, "@plt") == 0) {	/* not PLT0, "x@plt-0x10" */
			const char *got = symbolize_elf_lookup(o, addr);

			if (got && strcmp(got, name) == 0) {
				matched++;
			} else {
				print_message("%#llx: objdump %s, ours %s\n", addr, name, got ? got : "-");
				wrong++;
			}
		}
	pclose(f);
	assert_true(matched >= 10);
	assert_int_equal(wrong, 0);
	f = popen("readelf -h /usr/bin/gzip", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, " Entry point address: %llx", &entry);
	pclose(f);
	assert_true(entry != 0);
	assert_string_equal(symbolize_elf_lookup(o, entry), "_start");
	symbolize_elf_put(o);
	symbolize_destroy(s);
}

/*
 * MiniDebugInfo made as distributions make it: the functions missing from
 * .dynsym kept in a small ELF, xz-compressed into .gnu_debugdata of a binary
 * stripped of everything else.
 */
static void
test_minidebuginfo(void **state)
{
	char cmd[PATH_MAX + 1024], path[128], src[PATH_MAX];
	unsigned long long inner = 0;
	struct symbolizer *s;
	struct elfobj *o;
	struct stat st;
	FILE *f;

	(void)state;
	/* Run from the top of the tree, as scripts/test.sh does. */
	if (system("command -v cc objcopy xz nm >/dev/null") != 0 ||
	    realpath("tests/ebpf/spin.c", src) == NULL)
		skip();
	snprintf(cmd, sizeof(cmd),
	    "set -e; cd %s; cc -O1 -g -o full '%s';"
	    "nm full | awk '$3 == \"inner\" {print $1}' > inner.addr;"
	    "echo inner > keep; objcopy -S --remove-section .gdb_index --remove-section .comment "
	    "--keep-symbols=keep full mini; xz -f mini;"
	    "strip --strip-all -o md full; objcopy --add-section .gnu_debugdata=mini.xz md",
	    tmpdir, src);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/inner.addr", tmpdir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llx", &inner), 1);
	fclose(f);
	snprintf(path, sizeof(path), "%s/md", tmpdir);
	assert_int_equal(stat(path, &st), 0);
	s = symbolize_create();
	assert_non_null(s);
	o = symbolize_elf(s, st.st_dev, st.st_ino, path, NULL, NULL);
	assert_non_null(o);
	assert_string_equal(symbolize_elf_lookup(o, inner), "inner");
	symbolize_elf_put(o);
	symbolize_destroy(s);
}

static void
test_elf_self(void **state)
{
	uint64_t addr = (uint64_t)(uintptr_t)&target_function_for_symbolize + 1, bias;
	unsigned long long start, end, off, ino;
	unsigned int major, minor;
	struct symbolizer *s;
	struct elfobj *o = NULL;
	char line[1024], perms[8];
	FILE *f;

	(void)state;
	s = symbolize_create();
	assert_non_null(s);
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &off,
		    &major, &minor, &ino) != 7)
			continue;
		if (addr >= start && addr < end) {
			o = symbolize_elf(s, ((uint64_t)major << 32) | minor, ino, "/proc/self/exe",
			    "/proc/self/root", NULL);
			break;
		}
	}
	fclose(f);
	assert_non_null(o);
	assert_int_equal(symbolize_elf_bias(o, start, off, &bias), 0);
	assert_string_equal(symbolize_elf_lookup(o, addr - bias), "target_function_for_symbolize");
	/* Unit tests are built with -g: file and line from this binary's DWARF. */
	{
		const char *src;
		int64_t lineno;

		assert_int_equal(symbolize_elf_line(o, addr - bias, &src, &lineno), 0);
		assert_non_null(strstr(src, "test_ebpf.c"));
		assert_true(lineno >= target_line && lineno <= target_line + 3);
	}
	assert_null(symbolize_elf_lookup(o, 0));
	assert_int_equal(strlen(symbolize_elf_build_id(o)) % 2, 0);
	assert_int_equal(symbolize_elf_count(s), 1);
	/* Cached: the same object again, by (dev, inode). */
	assert_ptr_equal(symbolize_elf(s, ((uint64_t)major << 32) | minor, ino, "/nonexistent",
	    NULL, NULL), o);
	symbolize_elf_put(o);
	symbolize_elf_put(o);
	symbolize_elf_expire(s, (time_t)1 << 40);
	assert_int_equal(symbolize_elf_count(s), 0);
	/* Not ELF: remembered as unusable, NULL. */
	assert_null(symbolize_elf(s, 1, 1, "/proc/self/status", NULL, NULL));
	symbolize_destroy(s);
}

static int
scan_one(void *arg, const struct store_ref *ref, const void *data, size_t len)
{
	struct profile **p = arg;

	(void)ref;
	return profile_decode(data, len, p, NULL) == 0 ? 1 : -1;
}

static void
test_cpuprof_roundtrip(void **state)
{
	const struct series **ser = NULL;
	struct proc pr;
	struct cpuprof *c;
	struct cpuprof_svc *svc;
	struct store *st;
	struct profile *p = NULL;
	struct buf err = { 0 };
	struct frame f[3];
	uint32_t locs[3];
	uint64_t samples;
	size_t i, n, profiles;
	char dir[128];
	int64_t li;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/store", tmpdir);
	assert_int_equal(store_open(dir, &st, &err), 0);
	memset(&pr, 0, sizeof(pr));
	snprintf(pr.service, sizeof(pr.service), "myapp");
	pr.labels_text = (char *)"host=h1,unit=myapp.service";
	c = cpuprof_create(99);
	assert_non_null(c);
	svc = cpuprof_service(c, &pr);
	assert_non_null(svc);
	assert_ptr_equal(cpuprof_service(c, &pr), svc);

	memset(f, 0, sizeof(f));
	f[0].func = "do_syscall_64";	/* kernel leaf */
	f[0].file = "[kernel]";
	f[0].build_id = "";
	f[0].start = 0xffff800000000000ULL;
	f[0].limit = UINT64_MAX;
	f[0].addr = 0xffffffff81000010ULL;
	f[1].func = "inner";
	f[1].file = "/usr/bin/myapp";
	f[1].build_id = "abcd";
	f[1].start = 0x400000;
	f[1].limit = 0x500000;
	f[1].addr = 0x401000;
	f[2].file = "/usr/bin/myapp";	/* unresolved: keeps address and mapping */
	f[2].build_id = "abcd";
	f[2].start = 0x400000;
	f[2].limit = 0x500000;
	f[2].addr = 0x402000;
	for (i = 0; i < 3; i++) {
		li = cpuprof_location(svc, &f[i]);
		assert_true(li >= 0);
		locs[i] = (uint32_t)li;
	}
	assert_int_equal(cpuprof_sample(svc, locs, 3, 42, 43, "myapp", 0), 0);
	assert_int_equal(cpuprof_sample(svc, locs, 3, 42, 43, "myapp", 0), 0);
	assert_int_equal(cpuprof_sample(svc, locs + 1, 2, 42, 44, "worker", 0), 0);
	assert_int_equal(cpuprof_flush(c, st, 1000000000LL, 3000000000LL, NULL, &profiles, &samples), 0);
	assert_int_equal(profiles, 1);
	assert_int_equal(samples, 3);

	assert_int_equal(store_series(st, &ser, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ser[0]->service, "myapp");
	assert_string_equal(ser[0]->type, "cpu");
	assert_string_equal(ser[0]->labels, "host=h1,unit=myapp.service");
	assert_int_equal(store_scan(st, ser[0]->id, 0, INT64_MAX, true, scan_one, &p), 1);
	assert_non_null(p);
	assert_int_equal(p->nsample_types, 2);
	assert_string_equal(profile_str(p, p->sample_types[0].type), "samples");
	assert_string_equal(profile_str(p, p->sample_types[0].unit), "count");
	assert_string_equal(profile_str(p, p->sample_types[1].type), "cpu");
	assert_string_equal(profile_str(p, p->sample_types[1].unit), "nanoseconds");
	assert_string_equal(profile_str(p, p->period_type.type), "cpu");
	assert_int_equal(p->period, 1000000000LL / 99);
	assert_int_equal(p->duration_nanos, 2000000000LL);
	assert_int_equal(profile_total(p, 0), 3);
	assert_int_equal(profile_total(p, 1), 3 * (1000000000LL / 99));
	assert_int_equal(p->nsamples, 2);
	assert_int_equal(p->nmappings, 2);
	/* The binary's mapping first, the kernel's after it. */
	assert_string_equal(profile_str(p, p->mappings[0].filename), "/usr/bin/myapp");
	assert_string_equal(profile_str(p, p->mappings[0].build_id), "abcd");
	assert_string_equal(profile_str(p, p->mappings[1].filename), "[kernel]");
	assert_int_equal(p->nlocations, 3);
	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];

		if (l->address == 0x402000) {
			assert_int_equal(l->nlines, 0);
			assert_int_equal(l->mapping, 1);
		} else {
			assert_int_equal(l->nlines, 1);
		}
	}
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *sm = &p->samples[i];
		size_t j;
		int seen = 0;

		for (j = 0; j < sm->nlabels; j++) {
			const char *k = profile_str(p, sm->labels[j].key);

			if (strcmp(k, "pid") == 0 && sm->labels[j].num == 42)
				seen |= 1;
			if (strcmp(k, "tid") == 0)
				seen |= 2;
			if (strcmp(k, "comm") == 0)
				seen |= 4;
		}
		assert_int_equal(seen, 7);
	}
	profile_free(p);
	free(ser);
	/* An empty period stores nothing. */
	assert_int_equal(cpuprof_flush(c, st, 3000000000LL, 4000000000LL, NULL, &profiles, &samples), 0);
	assert_int_equal(profiles, 0);
	cpuprof_destroy(c);
	store_close(st);
	buf_free(&err);
}

/*
 * The location cache goes by address within the mapping: another process of
 * the same program (mapped elsewhere, its own copy of the path) gets the
 * same location; another offset, file or mapping size, or a path whose
 * memory now holds another name, does not.
 */
/*
 * The gate: a name below the threshold goes to host-other, its unit a sample
 * label there; one past it is stored under its own name from that period on.
 * Off-CPU waits count too, one each, not their time.
 */
static void
test_cpuprof_gate(void **state)
{
	const struct series **ser = NULL;
	struct proc busy, small;
	struct cpuprof *c;
	struct cpuprof_gate *g;
	struct cpuprof_svc *s1, *s2;
	struct store *st;
	struct profile *p = NULL;
	struct buf err = { 0 };
	struct frame f;
	uint32_t loc;
	uint64_t samples;
	size_t i, n, profiles;
	char dir[128];
	int found_unit = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/store-gate", tmpdir);
	assert_int_equal(store_open(dir, &st, &err), 0);
	memset(&busy, 0, sizeof(busy));
	memset(&small, 0, sizeof(small));
	snprintf(busy.service, sizeof(busy.service), "busy");
	busy.labels_text = (char *)"host=h1";
	snprintf(small.service, sizeof(small.service), "cron");
	small.labels_text = (char *)"host=h1,unit=cron.service";
	c = cpuprof_create(99);
	g = cpuprof_gate_create(5, 1000000, "host-other", "host=h1");
	assert_false(cpuprof_gate_own(g, "busy"));
	assert_true(cpuprof_gate_own(g, "host-other"));
	memset(&f, 0, sizeof(f));
	f.func = "work";
	f.file = "/usr/bin/x";
	f.build_id = "";
	f.start = 0x400000;
	f.limit = 0x500000;
	f.addr = 0x401000;
	s1 = cpuprof_service(c, &busy);
	s2 = cpuprof_service(c, &small);
	loc = (uint32_t)cpuprof_location(s1, &f);
	for (i = 0; i < 6; i++)
		assert_int_equal(cpuprof_sample(s1, &loc, 1, 1, 1, "busy", 0), 0);
	loc = (uint32_t)cpuprof_location(s2, &f);
	for (i = 0; i < 2; i++)
		assert_int_equal(cpuprof_sample(s2, &loc, 1, 2, 2, "sh", 0), 0);
	assert_int_equal(cpuprof_flush(c, st, 1000000000LL, 2000000000LL, g, &profiles, &samples), 0);
	assert_int_equal(profiles, 2);
	assert_int_equal(samples, 8);
	assert_true(cpuprof_gate_own(g, "busy"));
	assert_false(cpuprof_gate_own(g, "cron"));

	assert_int_equal(store_series(st, &ser, &n), 0);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		size_t j, k;

		assert_string_not_equal(ser[i]->service, "cron");
		if (strcmp(ser[i]->service, "host-other") != 0)
			continue;
		assert_string_equal(ser[i]->labels, "host=h1");
		assert_int_equal(store_scan(st, ser[i]->id, 0, INT64_MAX, true, scan_one, &p), 1);
		assert_int_equal(profile_total(p, 0), 2);
		for (j = 0; j < p->nsamples; j++)
			for (k = 0; k < p->samples[j].nlabels; k++)
				if (strcmp(profile_str(p, p->samples[j].labels[k].key), "unit") == 0 &&
				    strcmp(profile_str(p, p->samples[j].labels[k].str), "cron.service") == 0)
					found_unit++;
		profile_free(p);
	}
	assert_int_equal(found_unit, 1);
	free(ser);

	/*
	 * Off-CPU waits count as CPU samples do, one each, but no more than
	 * milliseconds (the threshold given) waited: a sleeper with no CPU
	 * sample but 6 waits of 1 ms passes, one with 2 waits (however long)
	 * stays in the rest, and so does one with 40 waits in 2.9 ms in all.
	 */
	{
		struct cpuprof *off = cpuprof_create_offcpu(1);
		struct proc sleeper, idle, brief;
		struct cpuprof_svc *s3;

		memset(&sleeper, 0, sizeof(sleeper));
		memset(&idle, 0, sizeof(idle));
		memset(&brief, 0, sizeof(brief));
		snprintf(sleeper.service, sizeof(sleeper.service), "sleeper");
		sleeper.labels_text = (char *)"host=h1";
		snprintf(idle.service, sizeof(idle.service), "idle");
		idle.labels_text = (char *)"host=h1";
		snprintf(brief.service, sizeof(brief.service), "brief");
		brief.labels_text = (char *)"host=h1";
		s1 = cpuprof_service(off, &sleeper);
		loc = (uint32_t)cpuprof_location(s1, &f);
		assert_int_equal(cpuprof_sample_waits(s1, &loc, 1, 3, 3, "sleeper", 6, 6000000,
		    NULL, NULL, 0), 0);
		s2 = cpuprof_service(off, &idle);
		loc = (uint32_t)cpuprof_location(s2, &f);
		assert_int_equal(cpuprof_sample_waits(s2, &loc, 1, 4, 4, "idle", 2,
		    3600000000000LL, NULL, NULL, 0), 0);
		s3 = cpuprof_service(off, &brief);
		loc = (uint32_t)cpuprof_location(s3, &f);
		assert_int_equal(cpuprof_sample_waits(s3, &loc, 1, 5, 5, "brief", 40, 2900000,
		    NULL, NULL, 0), 0);
		assert_false(cpuprof_gate_own(g, "sleeper"));
		assert_int_equal(cpuprof_flush(off, st, 2000000000LL, 3000000000LL, g, &profiles,
		    &samples), 0);
		assert_int_equal(profiles, 2);
		assert_true(cpuprof_gate_own(g, "sleeper"));
		assert_false(cpuprof_gate_own(g, "idle"));
		assert_false(cpuprof_gate_own(g, "brief"));
		assert_int_equal(store_series(st, &ser, &n), 0);
		for (i = 0; i < n; i++) {
			assert_string_not_equal(ser[i]->service, "idle");
			assert_string_not_equal(ser[i]->service, "brief");
		}
		free(ser);
		cpuprof_destroy(off);
	}
	cpuprof_gate_destroy(g);
	cpuprof_destroy(c);
	store_close(st);
}

static void
test_cpuprof_location_cache(void **state)
{
	char path_a[32] = "/usr/bin/app", path_b[32] = "/usr/bin/app", path_c[32] = "/usr/bin/other";
	struct cpuprof *c = cpuprof_create(99);
	struct cpuprof_svc *svc;
	struct frame a, b;
	struct proc pr;
	int64_t la, lb, k;

	(void)state;
	memset(&pr, 0, sizeof(pr));
	snprintf(pr.service, sizeof(pr.service), "app");
	pr.labels_text = (char *)"host=h1";
	assert_non_null(c);
	assert_non_null(svc = cpuprof_service(c, &pr));
	memset(&a, 0, sizeof(a));
	a.func = "work";
	a.file = path_a;
	a.build_id = "";	/* (with one, the merge tells mappings apart by it, not by path) */
	a.start = 0x400000;
	a.limit = 0x500000;
	a.addr = 0x401234;
	assert_true((la = cpuprof_location(svc, &a)) >= 0);
	b = a;
	b.file = path_b;
	b.start = 0x7f1200000000ULL;
	b.limit = b.start + 0x100000;
	b.addr = b.start + 0x1234;
	assert_true((lb = cpuprof_location(svc, &b)) == la);
	b.offset = 0x1000;
	assert_true((k = cpuprof_location(svc, &b)) >= 0 && k != la);
	b.offset = 0;
	b.limit += 0x100000;
	assert_true((k = cpuprof_location(svc, &b)) >= 0 && k != la);
	b.limit -= 0x100000;
	b.file = path_c;
	assert_true((k = cpuprof_location(svc, &b)) >= 0 && k != la);
	b.file = path_b;
	b.addr += 16;
	assert_true((k = cpuprof_location(svc, &b)) >= 0 && k != la);
	/* The first process's path freed and its memory reused for another name. */
	snprintf(path_a, sizeof(path_a), "/usr/bin/zzz");
	assert_true((k = cpuprof_location(svc, &a)) >= 0 && k != la);
	snprintf(path_a, sizeof(path_a), "/usr/bin/app");
	assert_true(cpuprof_location(svc, &a) == la);
	cpuprof_destroy(c);
}

/*
 * Off-CPU waits aggregate beside CPU samples: one process feeds both in
 * turn (its cached aggregate must not cross over), the offcpu profile has
 * its own type, sample types and the waits as values, and the store
 * infers its type back from it.
 */
static void
test_cpuprof_offcpu(void **state)
{
	const struct series **ser = NULL;
	struct cpuprof *c, *off;
	struct cpuprof_svc *cs, *os;
	struct store *st;
	struct profile *p = NULL;
	struct buf err = { 0 };
	struct frame f;
	struct proc pr;
	uint32_t loc;
	uint64_t samples;
	size_t i, n, profiles;
	char dir[128];
	int64_t li;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/store-offcpu", tmpdir);
	assert_int_equal(store_open(dir, &st, &err), 0);
	memset(&pr, 0, sizeof(pr));
	snprintf(pr.service, sizeof(pr.service), "waiter");
	pr.labels_text = (char *)"host=h1";
	c = cpuprof_create(99);
	off = cpuprof_create_offcpu(4);
	assert_non_null(c);
	assert_non_null(off);
	cs = cpuprof_service(c, &pr);
	os = cpuprof_service(off, &pr);
	assert_non_null(cs);
	assert_non_null(os);
	assert_ptr_not_equal(cs, os);
	assert_ptr_equal(cpuprof_service(c, &pr), cs);
	assert_ptr_equal(cpuprof_service(off, &pr), os);
	assert_int_not_equal(cpuprof_period(c), cpuprof_period(off));

	memset(&f, 0, sizeof(f));
	f.func = "futex_wait";
	f.file = "[kernel]";
	f.build_id = "";
	f.start = 0xffff800000000000ULL;
	f.limit = UINT64_MAX;
	f.addr = 0xffffffff81000020ULL;
	li = cpuprof_location(os, &f);
	assert_true(li >= 0);
	loc = (uint32_t)li;
	assert_int_equal(cpuprof_sample(os, &loc, 1, 7, 8, "waiter", 3000000), 0);
	assert_int_equal(cpuprof_sample(os, &loc, 1, 7, 8, "waiter", 5000000), 0);
	li = cpuprof_location(cs, &f);
	assert_true(li >= 0);
	loc = (uint32_t)li;
	assert_int_equal(cpuprof_sample(cs, &loc, 1, 7, 8, "waiter", 0), 0);
	assert_int_equal(cpuprof_flush(off, st, 1000000000LL, 2000000000LL, NULL, &profiles, &samples), 0);
	assert_int_equal(profiles, 1);
	assert_int_equal(samples, 2);
	assert_int_equal(cpuprof_flush(c, st, 1000000000LL, 2000000000LL, NULL, &profiles, &samples), 0);
	assert_int_equal(profiles, 1);

	assert_int_equal(store_series(st, &ser, &n), 0);
	assert_int_equal(n, 2);
	for (i = 0; i < n && strcmp(ser[i]->type, "offcpu") != 0; i++)
		;
	assert_true(i < n);
	assert_string_equal(ser[i]->service, "waiter");
	assert_int_equal(store_scan(st, ser[i]->id, 0, INT64_MAX, true, scan_one, &p), 1);
	assert_non_null(p);
	assert_int_equal(p->nsample_types, 2);
	assert_string_equal(profile_str(p, p->sample_types[0].type), "waits");
	assert_string_equal(profile_str(p, p->sample_types[0].unit), "count");
	assert_string_equal(profile_str(p, p->sample_types[1].type), "offcpu");
	assert_string_equal(profile_str(p, p->sample_types[1].unit), "nanoseconds");
	assert_string_equal(profile_str(p, p->period_type.type), "offcpu");
	assert_int_equal(p->period, 4);
	assert_int_equal(profile_total(p, 0), 2);
	assert_int_equal(profile_total(p, 1), 8000000);
	assert_string_equal(store_infer_type(p), "offcpu");
	assert_true(store_type_known("offcpu"));
	profile_free(p);
	free(ser);
	cpuprof_destroy(c);
	cpuprof_destroy(off);
	store_close(st);
	buf_free(&err);
}

/* What the drain handed over, entry by entry. */
struct drained {
	struct prof_sample	s[8];
	uint64_t		waits[8];
	uint32_t		exec[8];
	size_t			n;
	uint32_t		forgot[4];
	size_t			nforgot;
};

static void
drained_add(void *arg, struct prof_sample *s, uint64_t waits, uint32_t exec)
{
	struct drained *d = arg;

	assert_true(d->n < 8);
	d->s[d->n] = *s;
	d->exec[d->n] = exec;
	d->waits[d->n++] = waits;
}

static void
drained_forget(void *arg, uint32_t pid)
{
	struct drained *d = arg;

	assert_true(d->nforgot < 4);
	d->forgot[d->nforgot++] = pid;
}

static void
put_wait(int fd, uint64_t stack, uint32_t pid, uint32_t tid, uint32_t gen, uint64_t waits,
    uint64_t ns, const char *comm)
{
	struct prof_offcpu_key k;
	struct prof_offcpu_val v;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.stack = stack;
	k.pid = pid;
	k.tid = tid;
	k.gen = gen;
	k.exec = 700 + tid;	/* the image the stack was taken in */
	v.waits = waits * PROF_OFFCPU_ONE;
	v.ns = ns;
	snprintf(v.comm, sizeof(v.comm), "%s", comm);
	snprintf(v.leader_comm, sizeof(v.leader_comm), "lead-%u", pid);
	assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
}

/* A thread's exact off-CPU time of a generation (offcpu_threads). */
static void
put_thread(int fd, uint32_t pid, uint32_t tid, uint32_t gen, uint64_t waits, uint64_t ns)
{
	struct prof_offcpu_tkey k;
	struct prof_offcpu_tval v;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.pid = pid;
	k.tid = tid;
	k.gen = gen;
	v.waits = waits;
	v.ns = ns;
	snprintf(v.comm, sizeof(v.comm), "t%u", tid);
	assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
}

static void
put_stack(int fd, uint64_t stack, uint32_t gen, const struct prof_sample *s)
{
	struct prof_offcpu_skey k;

	memset(&k, 0, sizeof(k));
	k.stack = stack;
	k.gen = gen;
	assert_int_equal(bpf_map_update_elem(fd, &k, s, BPF_NOEXIST), 0);
}

static size_t
map_count(int fd, size_t ksize)
{
	unsigned char key[32], next[32];
	size_t n = 0;
	void *prev = NULL;

	assert_true(ksize <= sizeof(key));
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, ksize);
		prev = key;
		n++;
	}
	return n;
}

/* The frames the drain must hand back for stack A. */
static void
check_stack_a(const struct prof_sample *s)
{
	assert_int_equal(s->hdr.kind, PROF_EV_OFFCPU);
	assert_int_equal(s->kstack_len, 3 * 8);
	assert_int_equal(s->ustack_len, 2 * 8);
	assert_int_equal(s->kstack[0], 0xffffffff81000010ULL);
	assert_int_equal(s->kstack[2], 0xffffffff81000030ULL);
	assert_int_equal(s->ustack[0], 0x401000);
	assert_int_equal(s->ustack[1], 0x401100);
	assert_int_equal(s->unwind, PROF_UNW_CFI | PROF_UNW_COMPLETE);
	assert_int_equal(s->rt, PROF_RT_PY);
	assert_int_equal(s->py_n, 2);
	assert_int_equal(s->py_flags, PROF_PY_WALKED);
	assert_int_equal(s->py[0].code, 0x7f0000001000ULL);
	assert_int_equal(s->py[1].code, 0x7f0000002000ULL | PROF_PY_ENTRY);
	assert_int_equal(s->py[1].name, 0x7f0000002200ULL);
}

/*
 * The off-CPU drain against real BPF hashes laid out as the BPF side's: only
 * the generations before the current one are handed over, each entry with
 * its own identity and the stack stored once for all its threads; a stack
 * is read from the map once and then held (a later generation's entry finds
 * it without the map), an entry whose stack is missing is counted and left
 * out, and the maps are emptied of what was drained; a process's exit is
 * held back two drains. A thread's stacks of a generation are scaled to its
 * exact time and waits of that generation; its exact time with no stack
 * there comes as a sample of no stack.
 */
static void
test_offcpu_drain(void **state)
{
	struct prof_sample *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct drained *d = calloc(1, sizeof(*d));
	volatile uint32_t gen = 5;
	volatile __u64 added = 0;
	struct offcpu *o;
	size_t bytes, i;
	int afd, sfd, tfd;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(d);
	afd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_aggs", sizeof(struct prof_offcpu_key),
	    sizeof(struct prof_offcpu_val), 64, NULL);
	sfd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_stacks", sizeof(struct prof_offcpu_skey),
	    sizeof(struct prof_sample), 64, NULL);
	tfd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_threads", sizeof(struct prof_offcpu_tkey),
	    sizeof(struct prof_offcpu_tval), 64, NULL);
	if (afd < 0 || sfd < 0 || tfd < 0) {
		if (afd >= 0)
			close(afd);
		if (sfd >= 0)
			close(sfd);
		if (tfd >= 0)
			close(tfd);
		free(a);
		free(b);
		free(d);
		skip();	/* no BPF here (not root, no CAP_BPF) */
	}
	/* Stack A: kernel, user and Python frames; its identity is the first thread's. */
	a->hdr.kind = PROF_EV_OFFCPU;
	a->hdr.pid = 10;
	a->hdr.tid = 99;
	a->kstack_len = 3 * 8;
	a->ustack_len = 2 * 8;
	a->unwind = PROF_UNW_CFI | PROF_UNW_COMPLETE;
	a->kstack[0] = 0xffffffff81000010ULL;
	a->kstack[1] = 0xffffffff81000020ULL;
	a->kstack[2] = 0xffffffff81000030ULL;
	a->ustack[0] = 0x401000;
	a->ustack[1] = 0x401100;
	a->ustack[2] = 0xdead;	/* past ustack_len: not part of the stack */
	a->rt = PROF_RT_PY;
	a->py_n = 2;
	a->py_flags = PROF_PY_WALKED;
	a->py[0].code = 0x7f0000001000ULL;
	a->py[1].code = 0x7f0000002000ULL | PROF_PY_ENTRY;
	a->py[1].name = 0x7f0000002200ULL;
	assert_int_equal(prof_sample_size(a), PROF_SAMPLE_BASE + 8 + 2 * sizeof(struct prof_pyframe));
	b->hdr.kind = PROF_EV_OFFCPU;
	b->kstack_len = 8;
	b->kstack[0] = 0xffffffff81000040ULL;
	assert_int_equal(prof_sample_size(b), PROF_SAMPLE_BASE);

	o = offcpu_create(afd, sfd, tfd, 64, &gen, &added);
	assert_non_null(o);
	assert_false(offcpu_due(o));
	added = 16;		/* a quarter of the room */
	assert_true(offcpu_due(o));

	/* Generation 4: two threads in A, one entry without its stack; 5 (current): B. */
	put_stack(sfd, 0xa, 4, a);
	put_wait(afd, 0xa, 10, 11, 4, 3, 3000, "t11");
	put_wait(afd, 0xa, 10, 12, 4, 1, 1000, "t12");
	put_wait(afd, 0xc, 20, 21, 4, 5, 5000, "t21");
	put_stack(sfd, 0xb, 5, b);
	put_wait(afd, 0xb, 10, 11, 5, 2, 2000, "t11");
	/* t11 measured 6 waits and 6000 ns in generation 4 (t12 nothing: not scaled); t41 no stack. */
	put_thread(tfd, 10, 11, 4, 6, 6000);
	put_thread(tfd, 40, 41, 4, 2, 500);
	put_thread(tfd, 10, 11, 5, 1, 100);
	assert_true(offcpu_exited(o, 20));

	assert_int_equal(offcpu_drain(o, false, drained_add, drained_forget, d), 0);
	assert_int_equal(gen, 6);
	assert_false(offcpu_due(o));
	assert_int_equal(d->n, 3);
	for (i = 0; i < 3; i++) {
		bool first = d->s[i].hdr.tid == 11;

		if (d->s[i].hdr.tid == 41) {
			/* A thread's time with no sampled stack: no frames. */
			assert_int_equal(d->s[i].hdr.pid, 40);
			assert_int_equal(d->s[i].kstack_len, 0);
			assert_int_equal(d->s[i].ustack_len, 0);
			assert_int_equal(d->s[i].rt, PROF_RT_NONE);
			assert_string_equal(d->s[i].comm, "t41");
			assert_int_equal(d->waits[i], 2);
			assert_int_equal(d->s[i].offcpu_ns, 500);
			assert_int_equal(d->exec[i], OFFCPU_EXEC_ANY);
			continue;
		}
		check_stack_a(&d->s[i]);
		assert_int_equal(d->exec[i], 700 + d->s[i].hdr.tid);
		assert_int_equal(d->s[i].hdr.pid, 10);
		assert_int_equal(d->s[i].hdr.tid, first ? 11 : 12);
		assert_string_equal(d->s[i].comm, first ? "t11" : "t12");
		assert_string_equal(d->s[i].leader_comm, "lead-10");
		assert_int_equal(d->waits[i], first ? 6 : 1);
		assert_int_equal(d->s[i].offcpu_ns, first ? 6000 : 1000);
	}
	assert_int_equal(offcpu_lost(o), 1);
	assert_int_equal(map_count(tfd, sizeof(struct prof_offcpu_tkey)), 1);	/* t11's of 5 */
	assert_int_equal(map_count(afd, sizeof(struct prof_offcpu_key)), 1);	/* B's */
	assert_int_equal(map_count(sfd, sizeof(struct prof_offcpu_skey)), 1);
	assert_int_equal(offcpu_cached(o, &bytes), 1);
	assert_true(bytes > 0 && bytes < 1024);	/* packed: the frames used, not the arrays */
	assert_int_equal(d->nforgot, 0);

	/*
	 * Generation 6 (current now): A again, its stack not stored this time
	 * (as if read by an earlier drain only): the one held serves.
	 */
	put_wait(afd, 0xa, 10, 13, 6, 7, 7000, "t13");
	d->n = 0;
	assert_int_equal(offcpu_drain(o, false, drained_add, drained_forget, d), 0);
	assert_int_equal(d->n, 1);	/* B's, of 5 */
	assert_int_equal(d->s[0].kstack_len, 8);
	assert_int_equal(d->s[0].kstack[0], 0xffffffff81000040ULL);
	assert_int_equal(d->s[0].rt, PROF_RT_NONE);
	assert_int_equal(d->waits[0], 1);	/* scaled: 2 sampled, 1 measured */
	assert_int_equal(d->s[0].offcpu_ns, 100);
	assert_int_equal(map_count(tfd, sizeof(struct prof_offcpu_tkey)), 0);
	assert_int_equal(d->nforgot, 1);	/* two drains after its exit */
	assert_int_equal(d->forgot[0], 20);
	d->n = 0;
	assert_int_equal(offcpu_drain(o, false, drained_add, drained_forget, d), 0);
	assert_int_equal(d->n, 1);
	check_stack_a(&d->s[0]);
	assert_int_equal(d->s[0].hdr.tid, 13);
	assert_int_equal(d->waits[0], 7);
	assert_int_equal(offcpu_lost(o), 1);
	assert_int_equal(map_count(afd, sizeof(struct prof_offcpu_key)), 0);
	assert_int_equal(map_count(sfd, sizeof(struct prof_offcpu_skey)), 0);

	/* At stop, every generation, the current one too. */
	put_stack(sfd, 0xb, gen, b);
	put_wait(afd, 0xb, 30, 31, gen, 1, 100, "t31");
	d->n = 0;
	assert_int_equal(offcpu_drain(o, true, drained_add, drained_forget, d), 0);
	assert_int_equal(d->n, 1);
	assert_int_equal(d->s[0].hdr.pid, 30);
	assert_int_equal(map_count(afd, sizeof(struct prof_offcpu_key)), 0);
	assert_int_equal(map_count(sfd, sizeof(struct prof_offcpu_skey)), 0);

	offcpu_destroy(o);
	close(afd);
	close(sfd);
	close(tfd);
	free(a);
	free(b);
	free(d);
}

/* This process's table of mappings, read the way the kernel allows or from text. */
struct maps_seen {
	size_t		 n;
	struct proc_mapping m[64];
	char		 names[64][256];
	char		 bids[64][64];
	struct frame	 fn, del, anon;
	char		 fn_name[64], del_file[64], anon_file[16];
	bool		 known_anon, known_unmapped;
};

struct maps_case {
	bool		 text;
	void		*del, *anon, *unmapped;
	struct maps_seen seen;
};

static void *
maps_read_in_thread(void *arg)
{
	struct maps_case *c = arg;
	struct maps_seen *m = &c->seen;
	struct symbolizer *s = symbolize_create();
	struct proctab *pt;
	struct proc *p;

	assert_non_null(s);
	pt = proctab_create(s, SERVICE_BY_EXE, "h");
	assert_non_null(pt);
	if (c->text)
		proctab_maps_text(pt);
	p = proctab_get(pt, (uint32_t)getpid(), "test");
	assert_non_null(p);
	while (m->n < 64 && proctab_mapping(p, m->n, &m->m[m->n]) == 0) {
		snprintf(m->names[m->n], sizeof(m->names[0]), "%s", m->m[m->n].name);
		snprintf(m->bids[m->n], sizeof(m->bids[0]), "%s", m->m[m->n].build_id);
		m->n++;
	}
	proctab_resolve(pt, p, (uint64_t)(uintptr_t)&target_function_for_symbolize + 1, &m->fn);
	snprintf(m->fn_name, sizeof(m->fn_name), "%s", m->fn.func ? m->fn.func : "");
	proctab_resolve(pt, p, (uint64_t)(uintptr_t)c->del + 16, &m->del);
	snprintf(m->del_file, sizeof(m->del_file), "%s", m->del.file ? m->del.file : "");
	proctab_resolve(pt, p, (uint64_t)(uintptr_t)c->anon + 16, &m->anon);
	snprintf(m->anon_file, sizeof(m->anon_file), "%s", m->anon.file ? m->anon.file : "");
	m->known_anon = proctab_known(p, (uint64_t)(uintptr_t)c->anon);
	m->known_unmapped = proctab_known(p, (uint64_t)(uintptr_t)c->unmapped);
	proctab_destroy(pt);
	symbolize_destroy(s);
	return NULL;
}

/* A child that waits for a byte on its pipe, then execs sleep. */
struct exec_case {
	pid_t	 child;
	int	 go;		/* the pipe's write end */
	int	 released;	/* entries the release hook saw */
};

static void
count_release(void *arg, struct proc *p)
{
	struct exec_case *c = arg;

	(void)p;
	c->released++;
}

static void *
exec_images_in_thread(void *arg)
{
	struct exec_case *c = arg;
	struct symbolizer *s = symbolize_create();
	struct proctab *pt;
	struct proc *p0, *p1, *p2, *p3;
	char path[64], exe[PATH_MAX];
	ssize_t n = 0;
	int i;

	assert_non_null(s);
	pt = proctab_create(s, SERVICE_BY_EXE, "h");
	assert_non_null(pt);
	proctab_set_release(pt, count_release, c);
	/* First seen by a sample, not at an exec: its image is not known. */
	p0 = proctab_get(pt, (uint32_t)c->child, "test_ebpf");
	assert_non_null(p0);
	assert_false(p0->exec_known);
	assert_true(strstr(p0->service, "test_ebpf") != NULL);
	assert_int_equal(write(c->go, "x", 1), 1);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)c->child);
	for (i = 0; i < 500; i++) {
		if ((n = readlink(path, exe, sizeof(exe) - 1)) > 0) {
			exe[n] = '\0';
			if (strstr(exe, "sleep") != NULL)
				break;
		}
		usleep(10000);
	}
	assert_true(n > 0 && strstr(exe, "sleep") != NULL);

	/* The exec: a new entry; the one of before kept as its image. */
	p1 = proctab_exec(pt, (uint32_t)c->child, "sleep", 7, true);
	assert_non_null(p1);
	assert_ptr_not_equal(p1, p0);
	assert_string_equal(p1->service, "sleep");
	assert_true(p1->exec_known);
	assert_ptr_equal(p1->pre, p0);
	assert_true(p0->gone);
	assert_ptr_equal(proctab_get(pt, (uint32_t)c->child, "sleep"), p1);
	assert_int_equal(proctab_count(pt), 1);
	assert_ptr_equal(proctab_image(p1, 7), p1);
	assert_ptr_equal(proctab_image(p1, 6), p0);	/* not known: any older image */
	assert_int_equal(c->released, 1);
	assert_true(strstr(proctab_image(p1, 6)->service, "test_ebpf") != NULL);

	/* Another exec (as if): the newest image that matches, else the unknown one. */
	proctab_drained(pt);
	p2 = proctab_exec(pt, (uint32_t)c->child, "sleep", 8, true);
	assert_non_null(p2);
	assert_ptr_equal(p2->pre, p1);
	assert_ptr_equal(p1->pre, p0);
	assert_ptr_equal(proctab_image(p2, 8), p2);
	assert_ptr_equal(proctab_image(p2, 7), p1);
	assert_ptr_equal(proctab_image(p2, 3), p0);
	assert_ptr_equal(proctab_image(p2, 9), p2);	/* newer: p2's, its notice not read yet */
	assert_int_equal(c->released, 2);		/* p0 and p1, each once, at their exec */

	/* Kept two drains after their exec, then gone: p0 first, then p1. */
	proctab_drained(pt);
	proctab_expire(pt);
	assert_ptr_equal(p2->pre, p1);
	assert_null(p1->pre);
	assert_ptr_equal(proctab_image(p2, 3), p2);	/* none kept for it */
	proctab_drained(pt);
	proctab_expire(pt);
	assert_null(p2->pre);
	assert_int_equal(c->released, 2);		/* not again as they go */

	/* Without keep (no off-CPU waits to name): the entry of before goes at once. */
	p3 = proctab_exec(pt, (uint32_t)c->child, "sleep", 9, false);
	assert_non_null(p3);
	assert_null(p3->pre);
	assert_int_equal(c->released, 3);
	assert_ptr_equal(proctab_image(p3, 8), p3);
	proctab_destroy(pt);
	assert_int_equal(c->released, 4);
	symbolize_destroy(s);
	return NULL;
}

/*
 * A process that execs: its entry of before (service, maps) is kept as an
 * image of the new one for the waits taken before the exec and drained
 * after it (proctab_exec, proctab_image), for two drains.
 */
static void
test_proctab_exec_images(void **state)
{
	struct exec_case c;
	pthread_t t;
	int fds[2], st;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	c.child = fork();
	assert_true(c.child >= 0);
	if (c.child == 0) {
		char b;

		close(fds[1]);
		if (read(fds[0], &b, 1) == 1)
			execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	c.go = fds[1];
	c.released = 0;
	/* In a thread of its own: its file opener (rio_self) ends with it. */
	assert_int_equal(pthread_create(&t, NULL, exec_images_in_thread, &c), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(fds[1]);
	kill(c.child, SIGKILL);
	waitpid(c.child, &st, 0);
}

/*
 * The executable mappings of this process as the kernel answers them
 * (PROCMAP_QUERY, Linux 6.11 on) and as parsed from /proc/self/maps: the
 * same list, names, load biases and build ids, a function named through
 * them, a deleted file's mapping under its name without " (deleted)",
 * anonymous executable memory known as such, and memory not executable
 * not known. (On an older kernel both ways are the text's.)
 */
static void
test_proctab_maps(void **state)
{
	struct maps_case *c = calloc(2, sizeof(*c));
	unsigned char page[4096];
	pthread_t t;
	size_t i, k;
	void *del, *anon, *data;
	int fd;

	(void)state;
	assert_non_null(c);
	/* A file mapped executable, then deleted: a memfd is one from the start. */
	fd = (int)syscall(SYS_memfd_create, "profilefs-test", 0);
	assert_true(fd >= 0);
	memset(page, 0xc3, sizeof(page));
	assert_int_equal(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	del = mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(del != MAP_FAILED);
	close(fd);
	anon = mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);
	data = mmap(NULL, sizeof(page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(data != MAP_FAILED);
	for (i = 0; i < 2; i++) {
		c[i].text = i == 1;
		c[i].del = del;
		c[i].anon = anon;
		c[i].unmapped = data;
		/* In a thread of its own: its file opener (rio_self) ends with it. */
		assert_int_equal(pthread_create(&t, NULL, maps_read_in_thread, &c[i]), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	assert_true(c[0].seen.n >= 3);	/* this program, libc, the loader (and the vDSO) */
	assert_int_equal(c[0].seen.n, c[1].seen.n);
	for (k = 0; k < c[0].seen.n; k++) {
		const struct maps_seen *a = &c[0].seen, *b = &c[1].seen;

		assert_int_equal(a->m[k].start, b->m[k].start);
		assert_int_equal(a->m[k].end, b->m[k].end);
		assert_int_equal(a->m[k].bias, b->m[k].bias);
		assert_int_equal(a->m[k].dev, b->m[k].dev);
		assert_int_equal(a->m[k].ino, b->m[k].ino);
		assert_string_equal(a->names[k], b->names[k]);
		assert_string_equal(a->bids[k], b->bids[k]);
	}
	for (i = 0; i < 2; i++) {
		const struct maps_seen *m = &c[i].seen;

		assert_string_equal(m->fn_name, "target_function_for_symbolize");
		assert_string_equal(m->del_file, "/memfd:profilefs-test");
		assert_int_equal(m->del.start, (uint64_t)(uintptr_t)del);
		assert_string_equal(m->anon_file, "[anon]");
		assert_true(m->known_anon);
		assert_false(m->known_unmapped);
	}
	munmap(del, sizeof(page));
	munmap(anon, sizeof(page));
	munmap(data, sizeof(page));
	free(c);
}

static void
test_cgroup(void **state)
{
	static const struct {
		const char *path, *unit, *ctr, *pod;
	} cases[] = {
		{ "/system.slice/nginx.service", "nginx.service", "", "" },
		{ "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service",
		    "foo.service", "", "" },
		{ "/user.slice/user-1000.slice/session-3.scope", "", "", "" },
		{ "/system.slice/docker-4f5c1d1e2b3a4f5c1d1e2b3a4f5c1d1e2b3a4f5c1d1e2b3a4f5c1d1e2b3a4f5c.scope",
		    "", "4f5c1d1e2b3a", "" },
		{ "/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		    "", "0123456789ab", "" },
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/"
		    "cri-containerd-aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff.scope",
		    "", "aaaaaaaaaaaa", "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d" },
		{ "/kubepods/burstable/pod0f0e0d0c-0000-1111-2222-333344445555/"
		    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		    "", "0123456789ab", "0f0e0d0c-0000-1111-2222-333344445555" },
		{ "/", "", "", "" },
		{ "", "", "", "" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char unit[64] = "", ctr[16] = "", pod[64] = "";

		proctab_parse_cgroup(cases[i].path, unit, sizeof(unit), ctr, sizeof(ctr), pod,
		    sizeof(pod));
		assert_string_equal(unit, cases[i].unit);
		assert_string_equal(ctr, cases[i].ctr);
		assert_string_equal(pod, cases[i].pod);
	}
}

static struct unw_map_key
ukey(unsigned prefix, uint64_t addr)
{
	struct unw_map_key k = { .prefixlen = 32 + prefix, .pid_be = htobe32(42),
	    .addr_be = htobe64(addr) };

	return k;
}

static struct unw_map_val
uval(uint64_t bias, uint32_t first, uint32_t nrows)
{
	struct unw_map_val v;

	memset(&v, 0, sizeof(v));
	v.bias = bias;
	v.first = first;
	v.nrows = nrows;
	v.gen = 7;
	return v;
}

/*
 * A process loaded again (its maps changed, a table it waited for came):
 * only the entries that went are deleted, only those new or changed are
 * written; given in any order.
 */
static void
test_unwind_diff(void **state)
{
	struct unw_map_key ok[3] = { ukey(52, 0x400000), ukey(52, 0x401000), ukey(48, 0x7f0000) };
	struct unw_map_val ov[3] = { uval(0, 0, 10), uval(0, 0, 10), uval(0x7f0000, 10, 5) };
	/* 0x401000 stays, 0x7f0000's table moved, 0x500000 is new, 0x400000 went. */
	struct unw_map_key nk[3] = { ukey(48, 0x7f0000), ukey(52, 0x500000), ukey(52, 0x401000) };
	struct unw_map_val nv[3] = { uval(0x7f0000, 20, 5), uval(0, 30, 2), uval(0, 0, 10) };
	struct unw_map_key *del, *put;
	struct unw_map_val *putv;
	size_t ndel, nput, i;

	(void)state;
	assert_int_equal(unwind_diff(ok, ov, 3, nk, nv, 3, &del, &ndel, &put, &putv, &nput), 0);
	assert_int_equal(ndel, 1);
	assert_memory_equal(&del[0], &ok[0], sizeof(ok[0]));
	assert_int_equal(nput, 2);
	for (i = 0; i < nput; i++) {
		if (memcmp(&put[i], &nk[0], sizeof(nk[0])) == 0)
			assert_int_equal(putv[i].first, 20);
		else {
			assert_memory_equal(&put[i], &nk[1], sizeof(nk[1]));
			assert_int_equal(putv[i].first, 30);
		}
	}
	free(del);
	free(put);
	free(putv);
	/* The same key with another prefix length is another entry. */
	nk[2] = ukey(51, 0x401000);
	assert_int_equal(unwind_diff(ok, ov, 3, nk, nv, 3, &del, &ndel, &put, &putv, &nput), 0);
	assert_int_equal(ndel, 2);
	assert_int_equal(nput, 3);
	free(del);
	free(put);
	free(putv);
	/* Nothing changed: nothing to do; nothing before: all written; nothing now: all go. */
	assert_int_equal(unwind_diff(ok, ov, 3, ok, ov, 3, &del, &ndel, &put, &putv, &nput), 0);
	assert_int_equal(ndel + nput, 0);
	free(del);
	free(put);
	free(putv);
	assert_int_equal(unwind_diff(NULL, NULL, 0, nk, nv, 3, &del, &ndel, &put, &putv, &nput),
	    0);
	assert_int_equal(ndel, 0);
	assert_int_equal(nput, 3);
	free(del);
	free(put);
	free(putv);
	assert_int_equal(unwind_diff(ok, ov, 3, NULL, NULL, 0, &del, &ndel, &put, &putv, &nput),
	    0);
	assert_int_equal(ndel, 3);
	assert_int_equal(nput, 0);
	free(del);
	free(put);
	free(putv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_diff),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_perfmap_hostile),
		cmocka_unit_test(test_elf_self),
		cmocka_unit_test(test_plt_entry),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_cpuprof_roundtrip),
		cmocka_unit_test(test_cpuprof_gate),
		cmocka_unit_test(test_cpuprof_location_cache),
		cmocka_unit_test(test_cpuprof_offcpu),
		cmocka_unit_test(test_offcpu_drain),
		cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_proctab_maps),
		cmocka_unit_test(test_proctab_exec_images),
	};
	char cmd[128];
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_ebpf.XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
