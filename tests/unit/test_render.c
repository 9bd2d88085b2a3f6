/*
 * test_render: the renderers of render/render.h on real profiles: folded stacks
 * add up to the profile's total, a diff's sums are current minus base, flame
 * graphs stay well-formed XML (xmllint --noout) whatever the names hold
 * (<>&", invalid UTF-8), inlined lines become frames, unsymbolized frames
 * show mapping+offset, packages are named as pprof names them; Pyroscope's
 * tree bytes (pytree.c) are the ones its encoder writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>

#include "render.h"
#include "util.h"

static bool
has_real(void)
{
	if (real_dir() == NULL) {
		print_message("real profiles not found (set REAL=)\n");
		return false;
	}
	return true;
}

/* Sum of the values of folded lines ("a;b;c 123"). */
static int64_t
folded_sum(const struct buf *b, size_t *lines)
{
	const char *p = b->data, *end = b->data + b->len, *nl, *sp;
	int64_t sum = 0;

	*lines = 0;
	for (; p && p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		assert_non_null(nl);
		sp = NULL;
		for (const char *q = p; q < nl; q++)
			if (*q == ' ')
				sp = q;
		assert_non_null(sp);
		assert_true(sp > p);	/* a stack before the value */
		sum += strtoll(sp + 1, NULL, 10);
		(*lines)++;
	}
	return sum;
}

/* xmllint --noout on the bytes of b. */
static void
assert_wellformed(const struct buf *b, const char *what)
{
	char path[] = "/tmp/test_render.XXXXXX", cmd[256];
	int fd = mkstemp(path), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b->data, b->len), (ssize_t)b->len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	rc = system(cmd);
	if (rc != 0)
		print_error("%s: not well-formed XML (kept in %s)\n", what, path);
	else
		unlink(path);
	assert_int_equal(rc, 0);
}

static void
test_folded_adds_up(void **state)
{
	size_t nf, i, t, lines;
	char **files;

	(void)state;
	if (!has_real())
		skip();
	files = real_files(&nf);
	assert_true(nf > 10);
	for (i = 0; i < nf; i++) {
		struct profile *p;

		if (strstr(files[i], "dotnet-pprof-3"))
			continue;	/* refused by the decoder, as by pprof */
		p = load_real(files[i]);
		assert_non_null(p);
		for (t = 0; t < p->nsample_types; t++) {
			struct render_tree tr;
			struct buf out = { 0 };

			assert_int_equal(render_tree_build(&tr, p, t, NULL, 0), 0);
			assert_true(tr.cur[0] == profile_total(p, t));
			assert_int_equal(folded_render(&tr, &out), 0);
			if (folded_sum(&out, &lines) != profile_total(p, t))
				fail_msg("%s type %zu: folded %" PRId64 " != total %" PRId64,
				    files[i], t, folded_sum(&out, &lines), profile_total(p, t));
			render_tree_free(&tr);
			buf_free(&out);
		}
		profile_free(p);
	}
	free_files(files);
}

static void
test_flame_wellformed(void **state)
{
	size_t nf, i;
	char **files;

	(void)state;
	if (!has_real())
		skip();
	files = real_files(&nf);
	for (i = 0; i < nf; i++) {
		struct profile *p;
		struct render_tree tr;
		struct flame_opts o = { 0 };
		struct buf out = { 0 }, top = { 0 };
		size_t t;

		if (strstr(files[i], "dotnet-pprof-3"))
			continue;
		p = load_real(files[i]);
		assert_non_null(p);
		t = profile_default_type(p);
		assert_int_equal(render_tree_build(&tr, p, t, NULL, 0), 0);
		o.title = "svc <a> & \"b\" / cpu / all / last-1h";
		o.note = "note <&>";
		o.unit = profile_str(p, p->sample_types[t].unit);
		o.type = profile_str(p, p->sample_types[t].type);
		assert_int_equal(flame_render(&tr, &o, &out), 0);
		assert_non_null(strstr(out.data, "<script"));
		assert_non_null(strstr(out.data, "&lt;a&gt; &amp; &quot;b&quot;"));
		assert_wellformed(&out, files[i]);
		assert_int_equal(top_render(&tr, "title", o.unit, &top), 0);
		render_tree_free(&tr);
		buf_free(&out);
		buf_free(&top);
		profile_free(p);
	}
	free_files(files);
}

static void
test_invalid_utf8(void **state)
{
	struct profile *p;
	struct render_tree tr;
	struct flame_opts o = { .title = "t", .unit = "nanoseconds", .type = "cpu" };
	struct buf out = { 0 }, folded = { 0 };
	size_t lines;

	(void)state;
	if (!has_real())
		skip();
	assert_non_null(p = load_real("pyroscope/invalid_utf8.pb.gz"));
	assert_int_equal(render_tree_build(&tr, p, profile_default_type(p), NULL, 0), 0);
	assert_int_equal(flame_render(&tr, &o, &out), 0);
	assert_wellformed(&out, "invalid_utf8");
	assert_int_equal(folded_render(&tr, &folded), 0);
	assert_true(folded_sum(&folded, &lines) == profile_total(p, profile_default_type(p)));
	render_tree_free(&tr);
	profile_free(p);

	/* That file's bad name starts with NUL; make one that does not. */
	p = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds");
	{
		int64_t v[] = { 3 };
		uint32_t f1 = tp_func(p, "bad\xff\xfe\x01\x1b utf8 <&>\"'", "x.go", 1);
		uint32_t f2 = tp_func(p, "\xc3\x28 and \xe2\x82 cut", "x.go", 2);
		uint32_t l1 = tp_loc(p, 0, 0x10, (int)f1, -1);
		uint32_t l2 = tp_loc(p, 0, 0x20, (int)f2, -1);

		tp_sample(p, v, (int)l1, (int)l2, -1, NULL);
	}
	assert_int_equal(render_tree_build(&tr, p, 0, NULL, 0), 0);
	buf_reset(&out);
	assert_int_equal(flame_render(&tr, &o, &out), 0);
	assert_wellformed(&out, "invalid utf8 (synthetic)");
	/* The replacement character stands in for the bad bytes. */
	assert_non_null(strstr(out.data, "\xef\xbf\xbd"));
	render_tree_free(&tr);
	buf_free(&out);
	buf_free(&folded);
	profile_free(p);
}

static void
test_diff_sums(void **state)
{
	struct profile *cur, *base, *d = NULL;
	struct render_tree tr;
	struct flame_opts o = { .title = "diff", .unit = "bytes", .type = "alloc_space",
	    .diff = true };
	struct buf out = { 0 }, err = { 0 }, top = { 0 };
	size_t t, i;
	int64_t sum = 0;

	(void)state;
	if (!has_real())
		skip();
	assert_non_null(cur = load_real("parca/alloc_space_delta.pb.gz"));
	assert_non_null(base = load_real("parca/many-1644509272337470000.pb.gz"));
	for (t = 0; t < cur->nsample_types; t++) {
		assert_int_equal(render_tree_build(&tr, cur, t, base, t), 0);
		assert_true(tr.cur[0] == profile_total(cur, t));
		assert_true(tr.base[0] == profile_total(base, t));
		/* Every node's children never hold more than the node. */
		for (i = 1; i < tr.n; i++)	/* (cur, a delta profile, has negative values) */
			assert_true(tr.base[i] <= tr.base[tr.parent[i]]);
		if (t == 1) {
			buf_reset(&out);
			assert_int_equal(flame_render(&tr, &o, &out), 0);
			assert_wellformed(&out, "diff");
			assert_non_null(strstr(out.data, "before "));
			assert_int_equal(top_render(&tr, "diff top", "bytes", &top), 0);
			assert_non_null(strstr(top.data, "Total: before"));
		}
		render_tree_free(&tr);
	}
	/* The diff form sums to current minus base in every column. */
	assert_int_equal(profile_diff(cur, base, &d, &err), 0);
	for (t = 0; t < cur->nsample_types; t++) {
		sum = profile_total(d, t);
		assert_true(sum == profile_total(cur, t) - profile_total(base, t));
	}
	profile_free(d);
	profile_free(cur);
	profile_free(base);
	buf_free(&out);
	buf_free(&err);
	buf_free(&top);
}

static void
test_inlined_and_unsymbolized(void **state)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds");
	struct render_tree tr;
	struct buf out = { 0 }, top = { 0 };
	uint32_t fmain, fg, fh, m, l1, l2, l3;
	int64_t v5[] = { 5 }, v7[] = { 7 };

	(void)state;
	fmain = tp_func(p, "main.main", "main.go", 1);
	fg = tp_func(p, "main.g", "main.go", 10);
	fh = tp_func(p, "main.h;x", "main.go", 20);
	m = tp_mapping(p, 0x400000, 0x500000, 0x1000, "/lib/libc.so.6", "");
	/* h inlined into g: one location, leaf first, caller last */
	l1 = tp_loc(p, 0, 0x1234, (int)fh, (int)fg, -1);
	l2 = tp_loc(p, 0, 0x1000, (int)fmain, -1);
	l3 = tp_loc(p, m, 0x400010, -1);	/* no lines: libc.so.6+0x1010 */
	tp_sample(p, v5, (int)l1, (int)l2, -1, NULL);
	tp_sample(p, v7, (int)l3, (int)l2, -1, NULL);
	tp_sample(p, v7, -1, NULL);		/* no stack at all */
	assert_int_equal(render_tree_build(&tr, p, 0, NULL, 0), 0);
	assert_int_equal(folded_render(&tr, &out), 0);
	assert_string_equal(out.data,
	    "[no stack] 7\n"
	    "main.main;libc.so.6+0x1010 7\n"
	    "main.main;main.g;main.h:x 5\n");
	assert_int_equal(top_render(&tr, "t", "nanoseconds", &top), 0);
	assert_non_null(strstr(top.data, "main.main"));
	render_tree_free(&tr);
	buf_free(&out);
	buf_free(&top);
	profile_free(p);
}

static void
test_kernel_frames(void **state)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds");
	struct render_tree tr;
	uint32_t fk, fu, mk, mu, lk, lu, i;
	int64_t v[] = { 4 };
	int seen = 0;

	(void)state;
	fk = tp_func(p, "do_syscall_64", "", 0);
	fu = tp_func(p, "write", "", 0);
	mu = tp_mapping(p, 0x1000, 0x2000, 0, "/lib/libc.so.6", "");
	mk = tp_mapping(p, 0xffffffff81000000, 0xffffffff82000000, 0, "[kernel]", "");
	lk = tp_loc(p, mk, 0xffffffff81000010, (int)fk, -1);
	lu = tp_loc(p, mu, 0x1010, (int)fu, -1);
	tp_sample(p, v, (int)lk, (int)lu, -1, NULL);
	assert_int_equal(render_tree_build(&tr, p, 0, NULL, 0), 0);
	for (i = 1; i < tr.n; i++) {
		const char *n = render_tree_name(&tr, i);

		if (strcmp(n, "do_syscall_64") == 0)
			assert_true(render_tree_is_kernel(&tr, i)), seen++;
		if (strcmp(n, "write") == 0)
			assert_false(render_tree_is_kernel(&tr, i)), seen++;
	}
	assert_int_equal(seen, 2);
	render_tree_free(&tr);
	profile_free(p);
}

static void
test_package(void **state)
{
	static const char *const cases[][2] = {
		{ "github.com/x/y/pkg.(*T).M", "github.com/x/y/pkg" },
		{ "runtime.mallocgc", "runtime" },
		{ "main.main", "main" },
		{ "std::vector<int>::push_back", "std" },
		{ "alloc::vec::Vec<T>::push", "alloc" },
		{ "java/lang/Thread.run", "java/lang/Thread" },
		{ "org.apache.Foo.bar", "org.apache.Foo" },
		{ "do_syscall_64_[k]", "[kernel]" },
		{ "tcp_sendmsg [kernel]", "[kernel]" },
		{ "libc.so.6+0x1234", "libc.so.6" },
		{ "malloc", "malloc" },
	};
	char out[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		render_package(cases[i][0], out, sizeof(out));
		if (strcmp(out, cases[i][1]) != 0)
			fail_msg("package of %s: got %s, want %s", cases[i][0], out, cases[i][1]);
	}
}

static void
test_timeline(void **state)
{
	struct timeline tl;
	struct buf csv = { 0 }, svg = { 0 };
	int64_t h = INT64_C(3600) * 1000000000, t0 = INT64_C(1763776800) * 1000000000;

	(void)state;
	assert_int_equal(timeline_init(&tl, t0, t0 + h, false), 0);
	assert_true(tl.nsteps >= 60 && tl.nsteps <= TIMELINE_MAX_STEPS);
	assert_true(tl.from <= t0 && tl.to >= t0 + h);
	timeline_add(&tl, t0, 10);
	timeline_add(&tl, t0 + 1, 5);
	timeline_add(&tl, t0 + h - 1, 7);
	timeline_add(&tl, t0 + 2 * h, 100);	/* outside: ignored */
	assert_true(timeline_value(&tl, 0) == 15);
	assert_true(timeline_value(&tl, tl.nsteps - 1) == 7);
	assert_int_equal(timeline_csv(&tl, "cpu", "nanoseconds", &csv), 0);
	/* CPU time: a cores column, ns over the step's ns (30 s here). */
	assert_true(tl.step == INT64_C(30) * 1000000000);
	assert_non_null(strstr(csv.data,
	    "time,cpu_nanoseconds,cpu_cores\n2025-11-22T02:00:00Z,15,0.0000\n"));
	assert_int_equal(timeline_svg(&tl, "a <title>", "cpu", "nanoseconds", &svg), 0);
	assert_wellformed(&svg, "timeline");
	assert_non_null(strstr(svg.data, "cpu in cores"));
	/* Ticks on round times: an hour from 02:00 in 30 s steps ticks every 10 minutes. */
	assert_non_null(strstr(svg.data, ">02:10</text>"));
	assert_non_null(strstr(svg.data, ">03:00</text>"));
	assert_null(strstr(svg.data, ">02:11</text>"));
	timeline_free(&tl);
	buf_free(&csv);
	buf_free(&svg);
	/* Four cores busy: 120 s of CPU time in a 30 s step. */
	assert_int_equal(timeline_init(&tl, t0, t0 + h, false), 0);
	timeline_add(&tl, t0, INT64_C(120) * 1000000000);
	assert_int_equal(timeline_csv(&tl, "cpu", "nanoseconds", &csv), 0);
	assert_non_null(strstr(csv.data, "2025-11-22T02:00:00Z,120000000000,4.0000\n"));
	assert_int_equal(timeline_svg(&tl, "w", "cpu", "nanoseconds", &svg), 0);
	assert_non_null(strstr(svg.data, ">4 cores</text>"));
	timeline_free(&tl);
	/* Gauges average; a 9-second span still gets many steps. */
	assert_int_equal(timeline_init(&tl, t0, t0 + INT64_C(9000000000), true), 0);
	assert_true(tl.nsteps >= 40 && tl.nsteps <= TIMELINE_MAX_STEPS);
	timeline_add(&tl, t0, 10);
	timeline_add(&tl, t0, 20);
	assert_true(timeline_value(&tl, 0) == 15);
	/* A window past retention: its sum stands for n profiles. */
	timeline_add_n(&tl, t0, 90, 3);
	assert_true(timeline_value(&tl, 0) == 24);
	timeline_free(&tl);
	/*
	 * 119.5 minutes from 50 s past a minute: minute steps would start at
	 * the minute and need 121 of them; the limit holds anyway.
	 */
	assert_int_equal(timeline_init(&tl, t0 + INT64_C(50000000000),
	    t0 + INT64_C(50000000000) + INT64_C(7170) * 1000000000, false), 0);
	assert_true(tl.nsteps >= 1 && tl.nsteps <= TIMELINE_MAX_STEPS);
	assert_true(tl.from <= t0 + INT64_C(50000000000) &&
	    tl.to >= t0 + INT64_C(50000000000) + INT64_C(7170) * 1000000000);
	timeline_free(&tl);
	buf_free(&csv);
	buf_free(&svg);
}

static void
test_value_format(void **state)
{
	struct buf b = { 0 };

	(void)state;
	render_value(&b, 1500000000, "nanoseconds");
	assert_string_equal(b.data, "1.50 s");
	buf_reset(&b);
	render_value(&b, 3 << 20, "bytes");
	assert_string_equal(b.data, "3.00 MiB");
	buf_reset(&b);
	render_value(&b, -1234567, "count");
	assert_string_equal(b.data, "-1,234,567");
	buf_reset(&b);
	render_value(&b, 12, "samples");
	assert_string_equal(b.data, "12 samples");
	buf_free(&b);
}

static void
test_names(void **state)
{
	struct buf b = { 0 };

	(void)state;
	assert_int_equal(render_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi", &b), 1);
	assert_string_equal(b.data, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	assert_int_equal(render_demangle("_ZN13profile_prost4main17hd5998e9d09b507fcE", &b), 1);
	assert_string_equal(b.data, "profile_prost::main::hd5998e9d09b507fc");
	assert_int_equal(render_demangle("_RNvCs1234_7mycrate3foo", &b), 1);
	assert_string_equal(b.data, "mycrate[3c1c0]::foo");
	buf_reset(&b);
	assert_int_equal(render_demangle("main.main", &b), 0);
	assert_int_equal(render_demangle("_Zgarbage", &b), 0);
	assert_int_equal(render_demangle("_R", &b), 0);
	assert_int_equal(b.len, 0);
	assert_int_equal(render_add_text(&b, "a\x1b[2J\x7f\xc2\x9b\xff\tcaf\xc3\xa9"), 0);
	assert_string_equal(b.data, "a\\x1b[2J\\x7f\\xc2\\x9b\\xff\\x09caf\xc3\xa9");
	buf_free(&b);
}

/*
 * A profile of one location of nlines inlined lines (functions f0..), under
 * nroots samples of value 1 each called from a root of its own.
 */
static struct profile *
inline_profile(size_t nlines, size_t nroots)
{
	static const char *const types[] = { "samples" }, *const units[] = { "count" };
	struct merge_header h = { .types = types, .units = units, .ntypes = 1,
	    .period_type = "samples", .period_unit = "count", .period = 1 };
	struct merge *m = merge_create();
	struct pf_line *lines = calloc(nlines, sizeof(*lines)), root;
	struct pf_label nolabel = { 0 };
	struct profile *p = NULL;
	char name[32];
	uint32_t locs[2];
	int64_t one = 1;
	size_t i;

	assert_non_null(m);
	assert_non_null(lines);
	assert_int_equal(merge_begin(m, &h), 0);
	for (i = 0; i < nlines; i++) {
		struct pf_function f = { 0 };

		snprintf(name, sizeof(name), "f%zu", i);
		f.name = merge_string(m, name);
		lines[i].function = (uint32_t)merge_function(m, &f);
		lines[i].line = (int64_t)i + 1;
	}
	locs[0] = (uint32_t)merge_location(m, 0, 0, 0x1000, false, lines, nlines);
	for (i = 0; i < nroots; i++) {
		struct pf_function f = { 0 };

		snprintf(name, sizeof(name), "root%zu", i);
		f.name = merge_string(m, name);
		root = (struct pf_line){ .function = (uint32_t)merge_function(m, &f), .line = 1 };
		locs[1] = (uint32_t)merge_location(m, 0, 0, 0x2000 + i, false, &root, 1);
		assert_int_equal(merge_sample(m, locs, 2, &nolabel, 0, &one), 0);
	}
	assert_int_equal(merge_finish(m, false, &p), 0);
	merge_free(m);
	free(lines);
	return p;
}

/*
 * The tree is bounded whatever the input: a long inline chain keeps its two
 * ends around one "[inlined frames cut]" frame, and past the node limit the
 * rest of a stack is one "[more frames: tree limit]" frame; totals stay exact
 * and the memory budget is given back when the tree is freed.
 */
static void
test_tree_bounds(void **state)
{
	struct profile *p;
	struct render_tree t;
	struct buf out = { 0 };
	size_t used0, used, lines;
	bool found = false;
	uint32_t i;

	(void)state;
	budget_stats(&used0, NULL, NULL);
	p = inline_profile(1000, 10);
	assert_int_equal(render_tree_build(&t, p, 0, NULL, 0), 0);
	assert_true(t.truncated);
	/* Per root: the root, 64 callers' lines, the cut, 63 leaf lines. */
	assert_int_equal(t.n, 1 + 10 * (1 + RENDER_MAX_INLINE));
	for (i = 1; i < t.n; i++)
		found |= strcmp(render_tree_name(&t, i), "[inlined frames cut]") == 0;
	assert_true(found);
	assert_int_equal(folded_render(&t, &out), 0);
	assert_int_equal(folded_sum(&out, &lines), 10);
	assert_non_null(strstr(out.data, "root3;f999;"));
	assert_non_null(strstr(out.data, ";f0 1"));
	budget_stats(&used, NULL, NULL);
	assert_true(used > used0);	/* the tree is charged */
	render_tree_free(&t);
	profile_free(p);
	buf_free(&out);
	budget_stats(&used, NULL, NULL);
	assert_int_equal(used, used0);

	/* More roots than the root may have, more nodes than the tree may. */
	p = inline_profile(100, RENDER_MAX_ROOTS + 1000);
	assert_int_equal(render_tree_build(&t, p, 0, NULL, 0), 0);
	assert_true(t.truncated);
	assert_true(t.n <= 2 * (size_t)RENDER_MAX_NODES);
	assert_true(t.nroots <= RENDER_MAX_ROOTS + 1);
	assert_int_equal(t.cur[0], RENDER_MAX_ROOTS + 1000);
	assert_int_equal(folded_render(&t, &out), 0);
	assert_int_equal(folded_sum(&out, &lines), RENDER_MAX_ROOTS + 1000);
	assert_non_null(strstr(out.data, "[more frames: tree limit]"));
	render_tree_free(&t);
	profile_free(p);
	buf_free(&out);
}

/* A profile of the stacks main;a = 5, main;b;c = 2 and main;LAST = 1 (leaf last). */
static struct profile *
pytree_profile(const char *last)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds");
	int fm = (int)tp_func(p, "main", "m.go", 1), fa = (int)tp_func(p, "a", "m.go", 2);
	int fb = (int)tp_func(p, "b", "m.go", 3), fc = (int)tp_func(p, "c", "m.go", 4);
	int fl = (int)tp_func(p, last, "m.go", 5);
	int lm = (int)tp_loc(p, 0, 0x10, fm, -1), la = (int)tp_loc(p, 0, 0x20, fa, -1);
	int lb = (int)tp_loc(p, 0, 0x30, fb, -1), lc = (int)tp_loc(p, 0, 0x40, fc, -1);
	int ll = (int)tp_loc(p, 0, 0x50, fl, -1);
	int64_t v5[] = { 5 }, v2[] = { 2 }, v1[] = { 1 };

	tp_sample(p, v5, la, lm, -1, NULL);
	tp_sample(p, v2, lc, lb, lm, -1, NULL);
	tp_sample(p, v1, ll, lm, -1, NULL);
	return p;
}

static void
assert_pytree(const char *last, size_t max_nodes, const char *want, size_t n)
{
	struct profile *p = pytree_profile(last);
	struct render_tree t;
	struct buf out = { 0 };

	assert_int_equal(render_tree_build(&t, p, 0, NULL, 0), 0);
	assert_int_equal(pytree_encode(&t, max_nodes, &out), 0);
	assert_int_equal(out.len, n);
	assert_memory_equal(out.data, want, n);
	render_tree_free(&t);
	buf_free(&out);
	profile_free(p);
}

/*
 * Pyroscope's tree bytes, worked out by hand from its pkg/model/tree.go
 * (MarshalTruncate): name length, name, self, number of children, depth
 * first from the nameless root, children written from the last by name to
 * the first; past max_nodes the children under the max_nodes-th largest
 * total are summed into "other", a new child or the one of that name.
 */
static void
test_pytree(void **state)
{
	struct render_tree t = { 0 };
	struct buf out = { 0 };
	static const char all[] =
	    "\0\0\1" "\4main\0\3" "\1d\1\0" "\1b\0\1" "\1c\2\0" "\1a\5\0";
	/* Totals main 8, a 5, b 2, c 2, d 1: the bar is 5; b and d become "other". */
	static const char two[] =
	    "\0\0\1" "\4main\0\2" "\5other\3\0" "\1a\5\0";
	/* With a frame called "other" already (total 1): b's 2 join it. */
	static const char merged[] =
	    "\0\0\1" "\4main\0\2" "\5other\3\0" "\1a\5\0";
	/* Totals main 8, a 5, b 2, c 2, other 1: the bar is 2; "other" is kept. */
	static const char three[] =
	    "\0\0\1" "\4main\0\3" "\5other\1\0" "\1b\0\1" "\1c\2\0" "\1a\5\0";

	(void)state;
	assert_pytree("d", 0, all, sizeof(all) - 1);
	assert_pytree("d", 5, all, sizeof(all) - 1);
	assert_pytree("d", 2, two, sizeof(two) - 1);
	assert_pytree("other", 2, merged, sizeof(merged) - 1);
	assert_pytree("other", 3, three, sizeof(three) - 1);
	/* An empty tree: no bytes, as Pyroscope writes none. */
	assert_int_equal(pytree_encode(&t, 0, &out), 0);
	assert_int_equal(out.len, 0);
	buf_free(&out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_adds_up),
		cmocka_unit_test(test_flame_wellformed),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_diff_sums),
		cmocka_unit_test(test_inlined_and_unsymbolized),
		cmocka_unit_test(test_kernel_frames),
		cmocka_unit_test(test_package),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_value_format),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tree_bounds),
		cmocka_unit_test(test_pytree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
