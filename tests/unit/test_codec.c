/*
 * test_codec: the pprof codec (pprof/pprof.c), the byte buffer it writes
 * into (base/buf.c), and the UTF-8 repair and JSON output that text from
 * profiles goes through (base/utf8.c, base/jsonw.c). The decoder must accept every real file that go tool
 * pprof accepts, refuse the rest with a reason, survive hostile input (gzip
 * bombs, truncation, random bytes), and the encoder's output must decode to
 * the same profile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <zlib.h>

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

/* Deep comparison by value: strings compared as text, references followed. */
static void
assert_same_profile(const struct profile *a, const struct profile *b)
{
	size_t i, j;

	assert_int_equal(a->nsample_types, b->nsample_types);
	for (i = 0; i < a->nsample_types; i++) {
		assert_string_equal(profile_str(a, a->sample_types[i].type),
		    profile_str(b, b->sample_types[i].type));
		assert_string_equal(profile_str(a, a->sample_types[i].unit),
		    profile_str(b, b->sample_types[i].unit));
		assert_true(profile_total(a, i) == profile_total(b, i));
	}
	assert_string_equal(profile_str(a, a->period_type.type), profile_str(b, b->period_type.type));
	assert_string_equal(profile_str(a, a->period_type.unit), profile_str(b, b->period_type.unit));
	assert_true(a->period == b->period);
	assert_true(a->time_nanos == b->time_nanos);
	assert_true(a->duration_nanos == b->duration_nanos);
	assert_string_equal(profile_str(a, a->drop_frames), profile_str(b, b->drop_frames));
	assert_string_equal(profile_str(a, a->keep_frames), profile_str(b, b->keep_frames));
	assert_string_equal(profile_str(a, a->default_sample_type),
	    profile_str(b, b->default_sample_type));
	assert_int_equal(a->ncomments, b->ncomments);
	for (i = 0; i < a->ncomments; i++)
		assert_string_equal(profile_str(a, a->comments[i]), profile_str(b, b->comments[i]));
	assert_int_equal(a->nmappings, b->nmappings);
	for (i = 0; i < a->nmappings; i++) {
		assert_true(a->mappings[i].start == b->mappings[i].start);
		assert_true(a->mappings[i].limit == b->mappings[i].limit);
		assert_true(a->mappings[i].offset == b->mappings[i].offset);
		assert_string_equal(profile_str(a, a->mappings[i].filename),
		    profile_str(b, b->mappings[i].filename));
		assert_string_equal(profile_str(a, a->mappings[i].build_id),
		    profile_str(b, b->mappings[i].build_id));
	}
	assert_int_equal(a->nfunctions, b->nfunctions);
	assert_int_equal(a->nlocations, b->nlocations);
	for (i = 0; i < a->nlocations; i++) {
		const struct pf_location *x = &a->locations[i], *y = &b->locations[i];

		assert_int_equal(x->mapping, y->mapping);
		assert_true(x->address == y->address);
		assert_int_equal(x->nlines, y->nlines);
		assert_int_equal(x->is_folded, y->is_folded);
		for (j = 0; j < x->nlines; j++) {
			assert_true(x->lines[j].line == y->lines[j].line);
			assert_int_equal(x->lines[j].function == PF_NONE, y->lines[j].function == PF_NONE);
			if (x->lines[j].function != PF_NONE)
				assert_string_equal(
				    profile_str(a, a->functions[x->lines[j].function].name),
				    profile_str(b, b->functions[y->lines[j].function].name));
		}
	}
	assert_int_equal(a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples; i++) {
		const struct pf_sample *x = &a->samples[i], *y = &b->samples[i];

		assert_int_equal(x->nlocs, y->nlocs);
		for (j = 0; j < x->nlocs; j++)
			assert_int_equal(x->locs[j], y->locs[j]);
		for (j = 0; j < a->nsample_types; j++)
			assert_true(x->values[j] == y->values[j]);
		assert_int_equal(x->nlabels, y->nlabels);
		for (j = 0; j < x->nlabels; j++) {
			assert_string_equal(profile_str(a, x->labels[j].key),
			    profile_str(b, y->labels[j].key));
			assert_string_equal(profile_str(a, x->labels[j].str),
			    profile_str(b, y->labels[j].str));
			assert_true(x->labels[j].num == y->labels[j].num);
		}
	}
}

/* --- real files ----------------------------------------------------------- */

static void
test_real_files_decode(void **state)
{
	char **files;
	size_t n, i, ok = 0;

	(void)state;
	if (!has_real())
		skip();
	files = real_files(&n);
	assert_true(n >= 20);
	for (i = 0; i < n; i++) {
		struct buf b = { 0 }, err = { 0 };
		struct profile *p = NULL;
		int rc;

		assert_int_equal(read_real(files[i], &b), 0);
		rc = profile_decode(b.data, b.len, &p, &err);
		if (strstr(files[i], "dotnet-pprof-3")) {
			/* go tool pprof: "found function with reserved ID=0" */
			assert_int_equal(rc, -EINVAL);
			assert_null(p);
			assert_non_null(err.data);
			assert_non_null(strstr(err.data, "function"));
			assert_non_null(strstr(err.data, "id 0"));
		} else {
			if (rc != 0)
				fail_msg("%s: %s", files[i], err.data ? err.data : "");
			assert_non_null(p);
			assert_true(p->nsample_types > 0);
			assert_true(p->nstrings > 0);
			assert_string_equal(p->strings[0], "");
			assert_true(profile_default_type(p) < p->nsample_types);
			ok++;
		}
		profile_free(p);
		buf_free(&b);
		buf_free(&err);
	}
	assert_int_equal(ok, n - 1);
	free_files(files);
}

static void
test_real_roundtrip(void **state)
{
	char **files;
	size_t n, i;

	(void)state;
	if (!has_real())
		skip();
	files = real_files(&n);
	for (i = 0; i < n; i++) {
		struct buf enc = { 0 }, gz = { 0 }, err = { 0 };
		struct profile *p, *q = NULL, *r = NULL;

		if (strstr(files[i], "dotnet"))
			continue;
		assert_non_null(p = load_real(files[i]));
		assert_int_equal(profile_encode(p, false, &enc), 0);
		assert_int_equal(profile_encode(p, true, &gz), 0);
		assert_true(gz.len > 2 && (unsigned char)gz.data[0] == 0x1f &&
		    (unsigned char)gz.data[1] == 0x8b);
		if (profile_decode(enc.data, enc.len, &q, &err) != 0)
			fail_msg("%s: re-decoding failed: %s", files[i], err.data);
		if (profile_decode(gz.data, gz.len, &r, &err) != 0)
			fail_msg("%s: re-decoding gzip failed: %s", files[i], err.data);
		assert_same_profile(p, q);
		assert_same_profile(p, r);
		profile_free(p);
		profile_free(q);
		profile_free(r);
		buf_free(&enc);
		buf_free(&gz);
		buf_free(&err);
	}
	free_files(files);
}

/* Facts about particular real files from INDEX.md. */
static void
test_real_facts(void **state)
{
	struct profile *p;
	size_t i;

	(void)state;
	if (!has_real())
		skip();
	/* No mapping or function messages at all. */
	assert_non_null(p = load_real("google-pprof/go.nomappings.crash"));
	assert_int_equal(p->nmappings, 0);
	assert_int_equal(p->nsample_types, 4);
	profile_free(p);
	/* Uncompressed, inlined lines, no period type. */
	assert_non_null(p = load_real("pprof-rs/profile-cpu-example.pb"));
	assert_string_equal(profile_str(p, p->sample_types[0].type), "cpu");
	assert_string_equal(profile_str(p, p->period_type.type), "");
	profile_free(p);
	/* Unpacked location ids, string table interleaved, period 0. */
	assert_non_null(p = load_real("pyroscope/profile_java"));
	assert_true(p->nsamples > 0);
	assert_true(p->period == 0);
	for (i = 0; i < p->nsamples; i++)
		assert_true(p->samples[i].nlocs > 0);
	profile_free(p);
	/* Locations with mapping id 0. */
	assert_non_null(p = load_real("parca/profile-with-labels.pb.gz"));
	{
		size_t nomap = 0;

		for (i = 0; i < p->nlocations; i++)
			nomap += p->locations[i].mapping == 0;
		assert_true(nomap >= 3);
	}
	profile_free(p);
	/* The diff form: negative values labelled pprof::base=true. */
	assert_non_null(p = load_real("parca/diff.pb.gz"));
	assert_int_equal(p->nsamples, 2982);
	{
		size_t neg = 0, based = 0, j;

		for (i = 0; i < p->nsamples; i++) {
			for (j = 0; j < p->nsample_types; j++)
				if (p->samples[i].values[j] < 0) {
					neg++;
					break;
				}
			for (j = 0; j < p->samples[i].nlabels; j++)
				if (strcmp(profile_str(p, p->samples[i].labels[j].key), "pprof::base") == 0)
					based++;
		}
		assert_int_equal(neg, 2631);
		assert_true(based >= neg);
	}
	profile_free(p);
	/* drop_frames survives decoding. */
	assert_non_null(p = load_real("google-pprof/cppbench.cpu_no_samples_type"));
	assert_true(p->drop_frames > 0);
	assert_true(profile_str(p, p->drop_frames)[0] != '\0');
	profile_free(p);
	/* default_sample_type set. */
	assert_non_null(p = load_real("pyroscope/profile_python"));
	assert_true(p->default_sample_type > 0);
	assert_string_equal(profile_str(p, p->sample_types[profile_default_type(p)].type),
	    profile_str(p, p->default_sample_type));
	profile_free(p);
}

/* --- hand-made wire forms ------------------------------------------------- */

enum {
	W_STR_LAST	= 1 << 0,	/* string table after everything else */
	W_UNPACKED	= 1 << 1,	/* repeated scalars one tag each */
	W_BAD_STR	= 1 << 2,	/* function name index 99 */
	W_FN_ID0	= 1 << 3,
	W_DUP_LOC	= 1 << 4,
	W_NVALUES	= 1 << 5,	/* a sample with 2 values for 1 type */
	W_UNKNOWN_LOC	= 1 << 6,
	W_STR0		= 1 << 7,	/* string_table[0] != "" */
	W_UNKNOWN_FIELD	= 1 << 8,
	W_SPARSE_IDS	= 1 << 9,	/* ids 10, 20, 30 instead of 1, 2, 3 */
	W_NEG_STR	= 1 << 10,	/* label key index -1 */
	W_NO_STRINGS	= 1 << 11,
	W_BAD_LABEL_STR	= 1 << 12,	/* label value index 1000 */
	W_MAPPING	= 1 << 13,	/* one mapping, locations in it */
};

/*
 * strings: "", cpu, nanoseconds, main, main.go, foo, thread, t1
 * functions 1 main, 2 foo; locations 1 -> main, 2 -> foo
 * samples: [2 1] = 100 {thread=t1}, [1] = 50
 */
static void
wire(struct buf *out, unsigned flags)
{
	static const char *strs[] = { "", "cpu", "nanoseconds", "main", "main.go", "foo",
	    "thread", "t1", "app", "bid" };
	uint64_t m = flags & W_SPARSE_IDS ? 10 : 1;
	struct buf msg = { 0 }, sub = { 0 };
	size_t i;

	buf_reset(out);
	if (!(flags & W_STR_LAST) && !(flags & W_NO_STRINGS))
		for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
			pb_str(out, 6, i == 0 && (flags & W_STR0) ? "x" : strs[i]);
	/* sample_type */
	pb_int(&msg, 1, 1);
	pb_int(&msg, 2, 2);
	pb_msg(out, 1, &msg);
	if (flags & W_UNKNOWN_FIELD) {
		pb_int(out, 100, 12345);
		pb_str(out, 101, "ignored");
	}
	/* samples */
	{
		uint64_t locs[2] = { 2 * m, 1 * m }, vals[2] = { 100, 7 };

		if (flags & W_UNKNOWN_LOC)
			locs[0] = 77;
		if (flags & W_UNPACKED) {
			pb_int(&msg, 1, locs[0]);
			pb_int(&msg, 1, locs[1]);
			pb_int(&msg, 2, vals[0]);
			if (flags & W_NVALUES)
				pb_int(&msg, 2, vals[1]);
		} else {
			pb_packed(&msg, 1, locs, 2);
			pb_packed(&msg, 2, vals, flags & W_NVALUES ? 2 : 1);
		}
		pb_int(&sub, 1, flags & W_NEG_STR ? (uint64_t)-1 : 6);
		pb_int(&sub, 2, flags & W_BAD_LABEL_STR ? 1000 : 7);
		pb_msg(&msg, 3, &sub);
		pb_msg(out, 2, &msg);
		vals[0] = 50;
		if (flags & W_UNPACKED) {
			pb_int(&msg, 1, locs[1]);
			pb_int(&msg, 2, vals[0]);
		} else {
			pb_packed(&msg, 1, locs + 1, 1);
			pb_packed(&msg, 2, vals, 1);
		}
		pb_msg(out, 2, &msg);
	}
	if (flags & W_MAPPING) {
		pb_int(&msg, 1, 1);
		pb_int(&msg, 2, 0x400000);
		pb_int(&msg, 3, 0x500000);
		pb_int(&msg, 5, 8);
		pb_int(&msg, 6, 9);
		pb_int(&msg, 7, 1);
		pb_msg(out, 3, &msg);
	}
	/* locations */
	for (i = 1; i <= 2; i++) {
		pb_int(&msg, 1, (flags & W_DUP_LOC) ? m : i * m);
		if (flags & W_MAPPING) {
			pb_int(&msg, 2, 1);
			pb_int(&msg, 3, 0x400000 + i * 16);
		}
		pb_int(&sub, 1, flags & W_FN_ID0 ? i : i * m);
		pb_int(&sub, 2, 10 * i);
		pb_msg(&msg, 4, &sub);
		pb_msg(out, 4, &msg);
	}
	/* functions */
	for (i = 1; i <= 2; i++) {
		if (!(flags & W_FN_ID0))
			pb_int(&msg, 1, i * m);
		pb_int(&msg, 2, flags & W_BAD_STR && i == 2 ? 99 : (i == 1 ? 3 : 5));
		pb_int(&msg, 4, 4);
		pb_msg(out, 5, &msg);
	}
	pb_int(out, 9, 1700000000000000000ull);
	pb_int(out, 10, 10000000000ull);
	pb_msg(out, 11, (pb_int(&msg, 1, 1), pb_int(&msg, 2, 2), &msg));
	pb_int(out, 12, 10000000);
	if ((flags & W_STR_LAST) && !(flags & W_NO_STRINGS))
		for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
			pb_str(out, 6, i == 0 && (flags & W_STR0) ? "x" : strs[i]);
	buf_free(&msg);
	buf_free(&sub);
}

static int
decode_wire(unsigned flags, struct profile **p, struct buf *err)
{
	struct buf w = { 0 };
	int rc;

	wire(&w, flags);
	buf_reset(err);
	rc = profile_decode(w.data, w.len, p, err);
	buf_free(&w);
	return rc;
}

static void
check_small(const struct profile *p)
{
	assert_int_equal(p->nsample_types, 1);
	assert_string_equal(profile_str(p, p->sample_types[0].type), "cpu");
	assert_int_equal(p->nsamples, 2);
	assert_int_equal(p->samples[0].nlocs, 2);
	assert_string_equal(loc_name(p, p->samples[0].locs[0]), "foo");
	assert_string_equal(loc_name(p, p->samples[0].locs[1]), "main");
	assert_string_equal(loc_name(p, p->samples[1].locs[0]), "main");
	assert_true(p->samples[0].values[0] == 100);
	assert_true(p->samples[1].values[0] == 50);
	assert_true(profile_total(p, 0) == 150);
	assert_int_equal(p->samples[0].nlabels, 1);
	assert_string_equal(profile_str(p, p->samples[0].labels[0].key), "thread");
	assert_string_equal(profile_str(p, p->samples[0].labels[0].str), "t1");
	assert_true(p->time_nanos == 1700000000000000000ll);
	assert_true(p->period == 10000000);
	assert_string_equal(profile_str(p, p->period_type.unit), "nanoseconds");
}

static void
test_wire_forms_accepted(void **state)
{
	static const unsigned ok[] = { 0, W_STR_LAST, W_UNPACKED, W_UNPACKED | W_STR_LAST,
	    W_UNKNOWN_FIELD, W_SPARSE_IDS, W_SPARSE_IDS | W_UNPACKED | W_STR_LAST, W_MAPPING };
	struct buf err = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct profile *p = NULL, *q;

		if (decode_wire(ok[i], &p, &err) != 0)
			fail_msg("flags %#x: %s", ok[i], err.data);
		check_small(p);
		/* Re-encoding gives ids 1..N and the same content. */
		assert_non_null(q = tp_reload(p));
		check_small(q);
		profile_free(p);
		profile_free(q);
	}
	buf_free(&err);
}

static void
test_wire_mapping_kept(void **state)
{
	struct buf err = { 0 };
	struct profile *p = NULL;

	(void)state;
	assert_int_equal(decode_wire(W_MAPPING, &p, &err), 0);
	assert_int_equal(p->nmappings, 1);
	assert_string_equal(profile_str(p, p->mappings[0].filename), "app");
	assert_string_equal(profile_str(p, p->mappings[0].build_id), "bid");
	assert_true(p->mappings[0].has_functions);
	assert_int_equal(p->locations[0].mapping, 1);
	assert_true(p->locations[0].address == 0x400010);
	profile_free(p);
	buf_free(&err);
}

static void
expect_refused(unsigned flags, const char *const *words)
{
	struct buf err = { 0 };
	struct profile *p = (struct profile *)1;
	int rc = decode_wire(flags, &p, &err);

	if (rc != -EINVAL)
		fail_msg("flags %#x: rc %d, want -EINVAL", flags, rc);
	assert_null(p);
	assert_non_null(err.data);
	for (; *words; words++)
		if (strstr(err.data, *words) == NULL)
			fail_msg("flags %#x: reason \"%s\" lacks \"%s\"", flags, err.data, *words);
	buf_free(&err);
}

static void
test_wire_forms_refused(void **state)
{
	(void)state;
	expect_refused(W_BAD_STR, (const char *[]){ "function name", "string index 99",
	    "out of range", NULL });
	expect_refused(W_BAD_STR | W_STR_LAST, (const char *[]){ "string index 99", NULL });
	expect_refused(W_NEG_STR, (const char *[]){ "label key", "-1", NULL });
	expect_refused(W_BAD_LABEL_STR, (const char *[]){ "label value", "1000", NULL });
	expect_refused(W_FN_ID0, (const char *[]){ "function", "id 0", NULL });
	expect_refused(W_DUP_LOC | W_SPARSE_IDS, (const char *[]){ "location with duplicate id 10", NULL });
	expect_refused(W_DUP_LOC, (const char *[]){ "location with duplicate id 1", NULL });
	expect_refused(W_NVALUES, (const char *[]){ "2 values", "1 sample types", NULL });
	expect_refused(W_NVALUES | W_UNPACKED, (const char *[]){ "2 values", NULL });
	expect_refused(W_UNKNOWN_LOC, (const char *[]){ "unknown location 77", NULL });
	expect_refused(W_STR0, (const char *[]){ "string_table[0]", NULL });
	expect_refused(W_NO_STRINGS, (const char *[]){ "string_table", NULL });
}

/* Concatenating two profiles makes a second time_nanos, not a bigger profile. */
static void
test_wire_concatenated_profiles(void **state)
{
	struct buf a = { 0 }, err = { 0 };
	struct profile *p = NULL;
	size_t n;

	(void)state;
	wire(&a, 0);
	n = a.len;
	buf_reserve(&a, n);	/* buf_add must not read from the buffer it grows */
	buf_add(&a, a.data, n);
	/* protobuf semantics: repeated fields append, so the string table repeats ... */
	if (profile_decode(a.data, a.len, &p, &err) == 0) {
		/* ... and the second copy's samples double the count: never silently one profile's. */
		assert_int_equal(p->nsamples, 4);
		profile_free(p);
	} else
		assert_non_null(err.data);
	buf_free(&a);
	buf_free(&err);
}

/* --- gzip ----------------------------------------------------------------- */

static void
test_gzip_roundtrip(void **state)
{
	struct buf in = { 0 }, gz = { 0 }, out = { 0 }, err = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < 200000; i++)
		buf_addc(&in, (int)(i * 7 % 251));
	assert_int_equal(profile_gzip(in.data, in.len, &gz), 0);
	assert_true(gz.len < in.len);
	assert_int_equal(profile_gunzip(gz.data, gz.len, &out, &err), 0);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.data, in.data, in.len);
	/* Two gzip members in a row are one stream, as gzip(1) reads them. */
	buf_add(&gz, gz.data, gz.len);
	buf_reset(&out);
	assert_int_equal(profile_gunzip(gz.data, gz.len, &out, &err), 0);
	assert_int_equal(out.len, 2 * in.len);
	buf_free(&in);
	buf_free(&gz);
	buf_free(&out);
	buf_free(&err);
}

static void
test_gzip_truncated(void **state)
{
	struct buf b = { 0 }, err = { 0 }, w = { 0 };
	struct profile *p = NULL;
	size_t cut;

	(void)state;
	wire(&w, 0);
	assert_int_equal(profile_gzip(w.data, w.len, &b), 0);
	for (cut = 2; cut < b.len; cut += (cut < 20 ? 1 : 7)) {
		buf_reset(&err);
		assert_int_equal(profile_decode(b.data, cut, &p, &err), -EINVAL);
		assert_null(p);
		assert_non_null(err.data);
		assert_true(err.len > 0);
	}
	buf_reset(&err);
	assert_int_equal(profile_decode(b.data, b.len / 2, &p, &err), -EINVAL);
	assert_non_null(strstr(err.data, "truncated"));
	if (has_real()) {
		assert_int_equal(read_real("parca/alloc_space_delta.pb.gz", &b), 0);
		buf_reset(&err);
		assert_int_equal(profile_decode(b.data, b.len - 100, &p, &err), -EINVAL);
		assert_non_null(strstr(err.data, "truncated"));
	}
	buf_free(&b);
	buf_free(&err);
	buf_free(&w);
}

static void
test_gzip_corrupt(void **state)
{
	struct buf b = { 0 }, err = { 0 }, w = { 0 };
	struct profile *p = NULL;

	(void)state;
	wire(&w, 0);
	assert_int_equal(profile_gzip(w.data, w.len, &b), 0);
	b.data[12] ^= 0x55;
	b.data[13] ^= 0xff;
	assert_int_equal(profile_decode(b.data, b.len, &p, &err), -EINVAL);
	assert_null(p);
	assert_true(err.len > 0);
	/* Only the magic. */
	buf_reset(&err);
	assert_int_equal(profile_decode("\x1f\x8b", 2, &p, &err), -EINVAL);
	assert_true(err.len > 0);
	/* A valid gzip stream of nothing. */
	buf_reset(&b);
	buf_reset(&err);
	assert_int_equal(profile_gzip("", 0, &b), 0);
	assert_int_equal(profile_decode(b.data, b.len, &p, &err), -EINVAL);
	assert_non_null(strstr(err.data, "nothing"));
	buf_free(&b);
	buf_free(&err);
	buf_free(&w);
}

/* 300 MiB of zeros gzipped at level 9: about 300 KB that inflates past the limit. */
static void
make_bomb(struct buf *out, size_t mib)
{
	static unsigned char zeros[1 << 20];
	z_stream zs;
	size_t i;
	int zr;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
	for (i = 0; i < mib; i++) {
		zs.next_in = zeros;
		zs.avail_in = sizeof(zeros);
		do {
			assert_int_equal(buf_reserve(out, 65536), 0);
			zs.next_out = (Bytef *)out->data + out->len;
			zs.avail_out = 65536;
			zr = deflate(&zs, i + 1 == mib ? Z_FINISH : Z_NO_FLUSH);
			out->len += 65536 - zs.avail_out;
		} while (zs.avail_out == 0 || (i + 1 == mib && zr != Z_STREAM_END));
	}
	deflateEnd(&zs);
}

static void
test_gzip_bomb(void **state)
{
	struct buf bomb = { 0 }, err = { 0 }, out = { 0 };
	struct profile *p = NULL;

	(void)state;
	make_bomb(&bomb, 300);
	assert_true(bomb.len < 1u << 20);
	assert_int_equal(profile_decode(bomb.data, bomb.len, &p, &err), -EFBIG);
	assert_null(p);
	assert_non_null(strstr(err.data, "limit"));
	assert_non_null(strstr(err.data, "256 MiB"));
	/* gunzip itself stops at the limit, not after. */
	buf_reset(&err);
	assert_int_equal(profile_gunzip(bomb.data, bomb.len, &out, &err), -EFBIG);
	assert_true(out.len <= PROFILE_MAX_DECODED + 1);
	/* A smaller limit: inflating stops there (the buffer never grows past it). */
	buf_free(&out);
	buf_reset(&err);
	assert_int_equal(profile_gunzip_max(bomb.data, bomb.len, 16u << 20, &out, &err), -EFBIG);
	assert_true(out.len <= (16u << 20) + 1);
	assert_true(out.cap <= (16u << 20) + 2);
	assert_non_null(strstr(err.data, "past the limit of 16 MiB"));
	buf_free(&out);
	buf_free(&bomb);
	/* Data of exactly the limit inflates; a byte more does not. */
	make_bomb(&bomb, 1);
	buf_reset(&err);
	assert_int_equal(profile_gunzip_max(bomb.data, bomb.len, 1u << 20, &out, &err), 0);
	assert_int_equal(out.len, 1u << 20);
	buf_free(&out);
	assert_int_equal(profile_gunzip_max(bomb.data, bomb.len, (1u << 20) - 1, &out, &err),
	    -EFBIG);
	assert_non_null(strstr(err.data, "past the limit of 1048575 bytes"));
	buf_free(&out);
	buf_free(&bomb);
	buf_free(&err);
}

/* Just under the limit inflates; the protobuf of zeros is then refused. */
static void
test_gzip_under_limit(void **state)
{
	struct buf bomb = { 0 }, err = { 0 };
	struct profile *p = NULL;
	int rc;

	(void)state;
	make_bomb(&bomb, 8);
	rc = profile_decode(bomb.data, bomb.len, &p, &err);
	assert_int_equal(rc, -EINVAL);
	assert_null(p);
	assert_true(err.len > 0);
	buf_free(&bomb);
	buf_free(&err);
}

/* --- garbage ------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
test_random_bytes_refused(void **state)
{
	unsigned char data[4096];
	int i;
	size_t j, len;

	(void)state;
	for (i = 0; i < 2000; i++) {
		struct buf err = { 0 };
		struct profile *p = NULL;
		int rc;

		len = 64 + rnd() % (sizeof(data) - 64);
		for (j = 0; j < len; j++)
			data[j] = (unsigned char)rnd();
		if (i % 2)
			data[0] = 0x1f, data[1] = 0x8b;	/* "gzip" too */
		rc = profile_decode(data, len, &p, &err);
		assert_true(rc == -EINVAL || rc == -EFBIG);
		assert_null(p);
		assert_true(err.len > 0);
		buf_free(&err);
	}
	{
		struct buf err = { 0 };
		struct profile *p = NULL;

		assert_int_equal(profile_decode("", 0, &p, &err), -EINVAL);
		assert_non_null(strstr(err.data, "empty"));
		buf_free(&err);
		/* No err buffer: still refused. */
		assert_int_equal(profile_decode("hello world", 11, &p, NULL), -EINVAL);
	}
}

/* Flip bytes of a valid profile: refused with a reason or decoded, never a crash. */
static void
test_mutated_real(void **state)
{
	struct buf b = { 0 }, plain = { 0 }, err = { 0 };
	int i;

	(void)state;
	if (!has_real())
		skip();
	assert_int_equal(read_real("google-pprof/sample.cpu", &b), 0);
	assert_int_equal(profile_gunzip(b.data, b.len, &plain, &err), 0);
	for (i = 0; i < 3000; i++) {
		struct buf m = { 0 }, e = { 0 }, enc = { 0 };
		struct profile *p = NULL;
		int k, rc;

		buf_add(&m, plain.data, plain.len);
		for (k = 0; k < 1 + i % 4; k++)
			m.data[rnd() % m.len] = (char)rnd();
		rc = profile_decode(m.data, m.len, &p, &e);
		if (rc == 0) {
			assert_int_equal(profile_encode(p, false, &enc), 0);
			profile_free(p);
			p = NULL;
			assert_int_equal(profile_decode(enc.data, enc.len, &p, &e), 0);
			profile_free(p);
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_true(e.len > 0);
		}
		buf_free(&m);
		buf_free(&e);
		buf_free(&enc);
	}
	buf_free(&b);
	buf_free(&plain);
	buf_free(&err);
}

/* --- small queries -------------------------------------------------------- */

static void
test_default_type(void **state)
{
	struct profile *p = tp_new("cpu", "nanoseconds", 1,
	    "samples/count,cpu/nanoseconds,other/x");

	(void)state;
	assert_int_equal(profile_default_type(p), 2);	/* the last */
	p->default_sample_type = tp_str(p, "samples");
	assert_int_equal(profile_default_type(p), 0);
	p->default_sample_type = tp_str(p, "cpu");
	assert_int_equal(profile_default_type(p), 1);
	p->default_sample_type = tp_str(p, "nosuch");
	assert_int_equal(profile_default_type(p), 2);
	p->nsample_types = 0;
	assert_int_equal(profile_default_type(p), 0);
	profile_free(p);
}

static void
test_signature(void **state)
{
	struct profile *a = tp_new("cpu", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	struct profile *b = tp_new("cpu", "nanoseconds", 99, "samples/count,cpu/nanoseconds");
	struct profile *c = tp_new("cpu", "nanoseconds", 1, "cpu/nanoseconds,samples/count");
	struct profile *d = tp_new("wall", "nanoseconds", 1, "samples/count,cpu/nanoseconds");
	struct profile *e = tp_new(NULL, NULL, 1, "samples/count,cpu/nanoseconds");
	struct profile *f = tp_new("cpu", "nanoseconds", 1, "samples/count,cpu/microseconds");
	struct buf sa = { 0 }, sb = { 0 }, sx = { 0 };

	(void)state;
	assert_int_equal(profile_signature(a, &sa), 0);
	assert_int_equal(profile_signature(b, &sb), 0);
	assert_string_equal(sa.data, sb.data);	/* period does not matter */
	profile_signature(c, &sx);
	assert_string_not_equal(sa.data, sx.data);	/* order matters */
	buf_reset(&sx);
	profile_signature(d, &sx);
	assert_string_not_equal(sa.data, sx.data);	/* period type matters */
	buf_reset(&sx);
	profile_signature(e, &sx);
	assert_string_not_equal(sa.data, sx.data);
	buf_reset(&sx);
	profile_signature(f, &sx);
	assert_string_not_equal(sa.data, sx.data);	/* units matter */
	profile_free(a);
	profile_free(b);
	profile_free(c);
	profile_free(d);
	profile_free(e);
	profile_free(f);
	buf_free(&sa);
	buf_free(&sb);
	buf_free(&sx);
}

static void
test_gauges(void **state)
{
	(void)state;
	assert_true(profile_type_is_gauge("inuse_space"));
	assert_true(profile_type_is_gauge("inuse_objects"));
	assert_true(profile_type_is_gauge("goroutine"));
	assert_false(profile_type_is_gauge("alloc_space"));
	assert_false(profile_type_is_gauge("cpu"));
	assert_false(profile_type_is_gauge("samples"));
	assert_false(profile_type_is_gauge("contentions"));
	assert_false(profile_type_is_gauge("delay"));
}

static void
test_str_and_total(void **state)
{
	struct profile *p = tp_new("cpu", "ns", 1, "cpu/ns,samples/count");
	uint32_t f = tp_func(p, "main", "m.go", 1);
	uint32_t l = tp_loc(p, 0, 0, (int)f, -1);

	(void)state;
	tp_sample(p, (int64_t[]){ 5, 1 }, (int)l, -1, NULL);
	tp_sample(p, (int64_t[]){ -2, 3 }, (int)l, -1, NULL);
	assert_true(profile_total(p, 0) == 3);
	assert_true(profile_total(p, 1) == 4);
	assert_true(profile_total(p, 2) == 0);	/* out of range */
	assert_string_equal(profile_str(p, -1), "");
	assert_string_equal(profile_str(p, 100000), "");
	assert_string_equal(profile_str(p, 1), "cpu");
	profile_free(p);
	profile_free(NULL);
}

/* Values and fields the encoder writes as 10-byte varints (negative numbers). */
static void
test_encode_negative_values(void **state)
{
	struct profile *p = tp_new("cpu", "ns", -5, "cpu/ns");
	uint32_t f = tp_func(p, "main", "m.go", -3);
	uint32_t l = tp_loc(p, 0, UINT64_MAX, (int)f, -1);
	struct pf_sample *s;
	struct profile *q;

	(void)state;
	s = tp_sample(p, (int64_t[]){ INT64_MIN }, (int)l, -1, "k", "v", NULL);
	tp_numlabel(p, s, "bytes", -42, "bytes");
	p->time_nanos = -1;
	p->duration_nanos = INT64_MAX;
	assert_non_null(q = tp_reload(p));
	assert_same_profile(p, q);
	assert_true(q->samples[0].values[0] == INT64_MIN);
	assert_true(q->samples[0].labels[1].num == -42);
	assert_true(q->functions[0].start_line == -3);
	assert_true(q->locations[0].address == UINT64_MAX);
	profile_free(p);
	profile_free(q);
}

/* --- buf ------------------------------------------------------------------ */

static void
test_buf_basics(void **state)
{
	struct buf b = { 0 };
	char *s;
	size_t n;

	(void)state;
	buf_free(&b);			/* no-op on an empty buffer */
	assert_int_equal(buf_reserve(&b, 0), 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	assert_int_equal(buf_add(&b, "a\0b", 3), 0);
	assert_int_equal(b.len, 3);
	assert_int_equal(b.data[3], '\0');
	assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
	assert_memory_equal(b.data, "a\0b42-x", 8);
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	for (n = 0; n < 100000; n++)
		assert_int_equal(buf_addc(&b, 'z'), 0);
	assert_int_equal(b.len, 100000);
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(buf_reserve(&b, SIZE_MAX), -ENOMEM);
	s = buf_steal(&b, &n);
	assert_int_equal(n, 100000);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	free(s);
	s = buf_steal(&b, &n);		/* an empty buffer gives "" */
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);
}

static void
test_buf_varint(void **state)
{
	static const struct { uint64_t v; const char *enc; size_t n; } cases[] = {
		{ 0, "\x00", 1 }, { 1, "\x01", 1 }, { 127, "\x7f", 1 }, { 128, "\x80\x01", 2 },
		{ 300, "\xac\x02", 2 },
		{ UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b = { 0 };

		assert_int_equal(buf_add_varint(&b, cases[i].v), 0);
		assert_int_equal(b.len, cases[i].n);
		assert_memory_equal(b.data, cases[i].enc, cases[i].n);
		buf_free(&b);
	}
}

/*
 * Strings stored from outside are cut at STR_MAX_STORED bytes: between
 * characters, ending in the mark, the whole within the bound; shorter ones
 * whole. profile_cut_strings() does it to a profile's string table.
 */
static void
test_utf8_cut(void **state)
{
	const size_t mark = sizeof(STR_CUT_MARK) - 1, max = 64;
	struct buf b = { 0 }, s = { 0 };
	struct profile *p;
	const char **v;
	size_t k, i, n;

	(void)state;
	assert_int_equal(strlen("\xe2\x80\xa6[cut]"), mark);
	assert_int_equal(utf8_cut("short", 5, max), 5);
	/* ASCII: cut right before the mark's room. */
	for (i = 0; i < 100; i++)
		buf_addc(&s, 'a');
	assert_int_equal(utf8_cut(s.data, s.len, max), max - mark);
	assert_int_equal(utf8_add_cut(&b, s.data, s.len, max), 0);
	assert_int_equal(b.len, max);
	assert_memory_equal(b.data + max - mark, STR_CUT_MARK, mark);
	/* A 2-, 3- and 4-byte character across the cut goes whole, at every shift. */
	for (n = 2; n <= 4; n++) {
		static const char *ch[] = { NULL, NULL, "\xc3\xa9", "\xe2\x82\xac",
		    "\xf0\x9f\x98\x80" };

		for (i = 0; i < n; i++) {
			buf_reset(&s);
			buf_reset(&b);
			buf_add(&s, "xxxx", i);
			while (s.len < 200)
				buf_adds(&s, ch[n]);
			k = utf8_cut(s.data, s.len, max);
			assert_true(k <= max - mark);
			assert_true(k > max - mark - n);
			assert_int_equal(utf8_add_cut(&b, s.data, s.len, max), 0);
			assert_true(b.len <= max);
			assert_true(utf8_valid(b.data, b.len));
		}
	}
	/* Bytes that are not UTF-8 are cut where they are. */
	buf_reset(&s);
	for (i = 0; i < 100; i++)
		buf_addc(&s, (char)0x80);
	assert_int_equal(utf8_cut(s.data, s.len, max), max - mark);
	/* A profile: the long function name and label value cut, the rest shared. */
	p = tp_new("cpu", "nanoseconds", 1, "samples/count");
	buf_reset(&s);
	for (i = 0; i < 3 * STR_MAX_STORED; i++)
		buf_adds(&s, "\xc3\xa9");
	tp_sample(p, (int64_t[]){ 1 }, (int)tp_loc(p, 0, 1, (int)tp_func(p, s.data, "f.go", 1),
	    -1), -1, "k", s.data, NULL);
	assert_int_equal(profile_cut_strings(p, STR_MAX_STORED, &v, &n), 0);
	assert_non_null(v);
	assert_int_equal(n, 1);	/* one string, used three times */
	for (i = 0; i < p->nstrings; i++) {
		k = strlen(v[i]);
		assert_true(k <= STR_MAX_STORED);
		if (strlen(p->strings[i]) <= STR_MAX_STORED) {
			assert_ptr_equal(v[i], p->strings[i]);
			continue;
		}
		assert_true(k > STR_MAX_STORED - mark - 4);
		assert_string_equal(v[i] + k - mark, STR_CUT_MARK);
		assert_memory_equal(v[i], p->strings[i], k - mark);
		assert_true(utf8_valid(v[i], k));
	}
	free(v);
	/* Nothing to cut: nothing allocated. */
	assert_int_equal(profile_cut_strings(p, 8 * STR_MAX_STORED, &v, &n), 0);
	assert_null(v);
	assert_int_equal(n, 0);
	profile_free(p);
	buf_free(&b);
	buf_free(&s);
}

static void
test_utf8(void **state)
{
	static const struct {
		const char	*s;
		size_t		 n, want;
	} seq[] = {
		{ "a", 1, 1 },
		{ "\xc3\xa9", 2, 2 },			/* é */
		{ "\xe2\x82\xac", 3, 3 },		/* € */
		{ "\xf0\x9d\x84\x9e", 4, 4 },		/* 𝄞 */
		{ "\xf4\x8f\xbf\xbf", 4, 4 },		/* U+10FFFF, the last */
		{ "\x80", 1, 0 },			/* lone continuation */
		{ "\xc3", 1, 0 },			/* cut short */
		{ "\xe2\x82", 2, 0 },
		{ "\xc3\x28", 2, 0 },			/* continuation missing */
		{ "\xc0\xaf", 2, 0 },			/* overlong '/' */
		{ "\xe0\x80\xaf", 3, 0 },		/* overlong '/' */
		{ "\xed\xa0\x80", 3, 0 },		/* surrogate U+D800 */
		{ "\xf4\x90\x80\x80", 4, 0 },		/* past U+10FFFF */
		{ "\xf8\x88\x80\x80\x80", 5, 0 },	/* 5-byte form */
		{ "\xff", 1, 0 },
	};
	struct buf b = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		if (utf8_seqlen(seq[i].s, seq[i].n) != seq[i].want)
			fail_msg("utf8_seqlen case %zu: got %zu, want %zu", i,
			    utf8_seqlen(seq[i].s, seq[i].n), seq[i].want);
		assert_true(utf8_valid(seq[i].s, seq[i].n) == (seq[i].want == seq[i].n));
	}
	assert_int_equal(utf8_seqlen("abc", 0), 0);
	assert_true(utf8_valid("", 0));
	assert_true(utf8_valid("x\0y", 3));
	/* The length given bounds the check: a sequence past it is cut. */
	assert_false(utf8_valid("\xe2\x82\xac", 2));

	/* Valid text is copied as is, NUL bytes included. */
	assert_int_equal(utf8_repair(&b, "caf\xc3\xa9\0!", 7), 0);
	assert_int_equal(b.len, 7);
	assert_memory_equal(b.data, "caf\xc3\xa9\0!", 7);
	buf_reset(&b);
	/* Each byte that starts no sequence becomes one U+FFFD. */
	assert_int_equal(utf8_repair(&b, "a\xff" "b\xe2\x82" "c\xc0\xaf" "d", 9), 0);
	assert_string_equal(b.data, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd"
	    "c\xef\xbf\xbd\xef\xbf\xbd" "d");
	assert_true(utf8_valid(b.data, b.len));
	buf_reset(&b);
	/* A valid sequence right after an invalid byte is kept. */
	assert_int_equal(utf8_repair(&b, "\xed\xa0\x80\xe2\x82\xac", 6), 0);
	assert_string_equal(b.data, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xe2\x82\xac");
	buf_free(&b);
	/* Nothing to append still leaves a NUL-terminated buffer. */
	assert_int_equal(utf8_repair(&b, "", 0), 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	buf_free(&b);
}

static void
test_jsonw(void **state)
{
	const char name[] = "svc\xff\"q\\\n\x01\x7f\xc3\xa9";
	struct buf b = { 0 };
	json_error_t je;
	json_t *doc, *back;

	(void)state;
	/* jansson alone refuses the name; repaired, the document encodes. */
	assert_null(json_string(name));
	doc = json_pack("{s:o,s:o,s:o,s:o}", "name", jsonw_str(name),
	    "cut", jsonw_strn("ab\xe2\x82\xac", 4), "none", jsonw_str(NULL),
	    "secs", jsonw_fixed(14.99949, 3));
	assert_non_null(doc);
	assert_int_equal(jsonw_dump(&b, doc, JSON_COMPACT), 0);
	assert_string_equal(b.data, "{\"name\":\"svc\xef\xbf\xbd\\\"q\\\\\\n\\u0001\x7f\xc3\xa9\","
	    "\"cut\":\"ab\xef\xbf\xbd\xef\xbf\xbd\",\"none\":null,\"secs\":14.999}");
	/* What was written reads back, to the repaired name. */
	back = json_loadb(b.data, b.len, 0, &je);
	assert_non_null(back);
	assert_string_equal(json_string_value(json_object_get(back, "name")),
	    "svc\xef\xbf\xbd\"q\\\n\x01\x7f\xc3\xa9");
	json_decref(back);
	json_decref(doc);

	/* Appends; a failed build (NULL) leaves the buffer as it was. */
	buf_reset(&b);
	buf_adds(&b, "x=");
	doc = json_pack("[i,s]", 1, "two");
	assert_int_equal(jsonw_dump(&b, doc, JSON_COMPACT), 0);
	json_decref(doc);
	assert_string_equal(b.data, "x=[1,\"two\"]");
	assert_int_equal(jsonw_dump(&b, NULL, 0), -ENOMEM);
	assert_string_equal(b.data, "x=[1,\"two\"]");
	assert_int_equal(buf_error(&b), -ENOMEM);
	buf_free(&b);
	/* Past the buffer's limit: no half document, the limit's error. */
	b.max = 8;
	doc = json_pack("[s,s]", "0123", "4567");
	assert_int_equal(jsonw_dump(&b, doc, JSON_COMPACT), -EFBIG);
	json_decref(doc);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_error(&b), -EFBIG);
	/* A NULL from jsonw_str() fails the pack that takes it, without a leak. */
	assert_null(json_pack("{s:o}", "k", (json_t *)NULL));
	buf_free(&b);
}

static void
test_buf_xml(void **state)
{
	struct buf b = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(buf_add_xml(&b, "<a href=\"x\">&'</a>", 18), 0);
	assert_string_equal(b.data, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
	buf_reset(&b);
	/* valid UTF-8 kept: é, €, 𝄞 */
	buf_add_xml(&b, "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e", 9);
	assert_string_equal(b.data, "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e");
	buf_reset(&b);
	/* invalid: lone continuation, truncated sequence, overlong, surrogate, > U+10FFFF */
	buf_add_xml(&b, "\x80|\xc3|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80", 15);
	assert_non_null(strstr(b.data, "\xef\xbf\xbd|\xef\xbf\xbd|"));
	assert_null(strchr(b.data, '\x80' + 0x2f));	/* no raw 0xaf left */
	for (i = 0; i < b.len; i++)
		assert_true((unsigned char)b.data[i] != 0xc0 && (unsigned char)b.data[i] != 0xed &&
		    (unsigned char)b.data[i] != 0xf4);
	buf_reset(&b);
	/* control characters replaced, tab and newline kept */
	buf_add_xml(&b, "a\x01\tb\nc\x1b", 7);
	assert_string_equal(b.data, "a\xef\xbf\xbd\tb\nc\xef\xbf\xbd");
	buf_reset(&b);
	/* a sequence cut by the length given */
	buf_add_xml(&b, "\xe2\x82\xac", 2);
	assert_string_equal(b.data, "\xef\xbf\xbd\xef\xbf\xbd");
	buf_free(&b);
}

static void
test_buf_read_file(void **state)
{
	char path[] = "/tmp/profilefs-unit-buf.XXXXXX";
	struct buf b = { 0 };
	int fd;

	(void)state;
	assert_true((fd = mkstemp(path)) >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);
	assert_int_equal(buf_read_file(&b, path, 10), 0);
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "0123456789");
	buf_reset(&b);
	assert_int_equal(buf_read_file(&b, path, 9), -EFBIG);
	unlink(path);
	buf_reset(&b);
	assert_int_equal(buf_read_file(&b, path, 100), -ENOENT);
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_files_decode),
		cmocka_unit_test(test_real_roundtrip),
		cmocka_unit_test(test_real_facts),
		cmocka_unit_test(test_wire_forms_accepted),
		cmocka_unit_test(test_wire_mapping_kept),
		cmocka_unit_test(test_wire_forms_refused),
		cmocka_unit_test(test_wire_concatenated_profiles),
		cmocka_unit_test(test_gzip_roundtrip),
		cmocka_unit_test(test_gzip_truncated),
		cmocka_unit_test(test_gzip_corrupt),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_gzip_under_limit),
		cmocka_unit_test(test_random_bytes_refused),
		cmocka_unit_test(test_mutated_real),
		cmocka_unit_test(test_default_type),
		cmocka_unit_test(test_signature),
		cmocka_unit_test(test_gauges),
		cmocka_unit_test(test_str_and_total),
		cmocka_unit_test(test_encode_negative_values),
		cmocka_unit_test(test_buf_basics),
		cmocka_unit_test(test_buf_varint),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_utf8_cut),
		cmocka_unit_test(test_jsonw),
		cmocka_unit_test(test_buf_xml),
		cmocka_unit_test(test_buf_read_file),
	};

	return cmocka_run_group_tests_name("codec", tests, NULL, NULL);
}
