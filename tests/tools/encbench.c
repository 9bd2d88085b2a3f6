/*
 * encbench: the two pprof encoders side by side, on real profiles. One is
 * pprof/pprof.c's profile_encode(), which builds protobuf-c's generated
 * message from struct profile (every message struct carved from one
 * allocation sized in a first pass) and packs it with
 * perftools__profiles__profile__pack(); the other is the packed encoder
 * written by hand that it replaced, kept here. For each input both outputs are
 * decoded and compared with the profile they came from, then each encoder is
 * timed (runs alternate; the median per encode is printed), and one encode of
 * each is measured for heap allocations and peak heap bytes.
 *
 *   encbench [-n SAMPLES] [-z] [-m DIR]... FILE...
 *
 * -m DIR merges every *.pb.gz in DIR into one profile (a merged.pb.gz as the
 * daemon makes it); -z times encode plus gzip, as merged.pb.gz is served.
 * The last line, "total", sums the medians: scripts/bench-encode.sh reads it.
 * Heap figures need malloc to be replaced, which sanitizer builds do
 * themselves: there they print as n/a (scripts/bench-encode.sh builds without).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "pprof.h"

/* --- heap accounting ------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_COUNTED	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define HEAP_COUNTED	0
#endif
#endif
#ifndef HEAP_COUNTED
#define HEAP_COUNTED	1
#endif

static atomic_long heap_allocs;		/* malloc, calloc, realloc calls */
static atomic_long heap_live;		/* bytes held (usable sizes) */
static atomic_long heap_peak;		/* highest heap_live since heap_mark() */

#if HEAP_COUNTED
/*
 * glibc lets a program replace malloc, free, calloc and realloc (the rest of
 * its allocator calls these); the replacements count and pass the calls to
 * glibc's own allocator.
 */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);

static void
heap_note(long delta)
{
	long live = atomic_fetch_add(&heap_live, delta) + delta;
	long peak = atomic_load(&heap_peak);

	while (live > peak && !atomic_compare_exchange_weak(&heap_peak, &peak, live))
		;
}

void *
malloc(size_t n)
{
	void *p = __libc_malloc(n);

	if (p) {
		atomic_fetch_add(&heap_allocs, 1);
		heap_note((long)malloc_usable_size(p));
	}
	return p;
}

void *
calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);

	if (p) {
		atomic_fetch_add(&heap_allocs, 1);
		heap_note((long)malloc_usable_size(p));
	}
	return p;
}

void *
realloc(void *old, size_t n)
{
	long before = old ? (long)malloc_usable_size(old) : 0;
	void *p = __libc_realloc(old, n);

	if (p) {
		atomic_fetch_add(&heap_allocs, 1);
		heap_note((long)malloc_usable_size(p) - before);
	} else if (n == 0) {
		heap_note(-before);
	}
	return p;
}

void
free(void *p)
{
	if (p)
		heap_note(-(long)malloc_usable_size(p));
	__libc_free(p);
}
#endif

static void
heap_mark(void)
{
	atomic_store(&heap_allocs, 0);
	atomic_store(&heap_peak, atomic_load(&heap_live));
}

/* --- the hand-written encoder -------------------------------------------- */

#define WT_VARINT	0
#define WT_LEN		2

static int
put_tag(struct buf *b, unsigned field, unsigned wt)
{
	return buf_add_varint(b, (uint64_t)field << 3 | wt);
}

static int
put_int(struct buf *b, unsigned field, uint64_t v)
{
	int rc;

	if (v == 0)
		return 0;
	if ((rc = put_tag(b, field, WT_VARINT)) < 0)
		return rc;
	return buf_add_varint(b, v);
}

static int
put_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	int rc;

	if ((rc = put_tag(b, field, WT_LEN)) < 0 ||
	    (rc = buf_add_varint(b, n)) < 0)
		return rc;
	return buf_add(b, p, n);
}

/* Append tmp as a length-delimited field of b, then empty tmp. */
static int
put_msg(struct buf *b, unsigned field, struct buf *tmp)
{
	int rc = put_bytes(b, field, tmp->data, tmp->len);

	buf_reset(tmp);
	return rc;
}

static int
put_vt(struct buf *b, struct buf *tmp, unsigned field, const struct pf_valuetype *vt)
{
	int rc;

	if ((rc = put_int(tmp, 1, (uint64_t)vt->type)) < 0 ||
	    (rc = put_int(tmp, 2, (uint64_t)vt->unit)) < 0)
		return rc;
	return put_msg(b, field, tmp);
}

/*
 * What pprof/pprof.c used before protobuf-c: each message is written into a
 * scratch buffer, then copied into its parent with its length.
 */
static int
hand_encode(const struct profile *p, bool gzip, struct buf *out)
{
	struct buf b = { 0 }, tmp = { 0 }, packed = { 0 };
	size_t i, j;
	int rc = 0;

#define TRY(x) do { if ((rc = (x)) < 0) goto done; } while (0)
	for (i = 0; i < p->nsample_types; i++)
		TRY(put_vt(&b, &tmp, 1, &p->sample_types[i]));
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		for (j = 0; j < s->nlocs; j++)
			TRY(buf_add_varint(&packed, (uint64_t)s->locs[j] + 1));
		if (packed.len)
			TRY(put_bytes(&tmp, 1, packed.data, packed.len));
		buf_reset(&packed);
		for (j = 0; j < p->nsample_types; j++)
			TRY(buf_add_varint(&packed, (uint64_t)s->values[j]));
		if (packed.len)
			TRY(put_bytes(&tmp, 2, packed.data, packed.len));
		buf_reset(&packed);
		for (j = 0; j < s->nlabels; j++) {
			const struct pf_label *l = &s->labels[j];
			struct buf lb = { 0 };

			if ((rc = put_int(&lb, 1, (uint64_t)l->key)) == 0 &&
			    (rc = put_int(&lb, 2, (uint64_t)l->str)) == 0 &&
			    (rc = put_int(&lb, 3, (uint64_t)l->num)) == 0 &&
			    (rc = put_int(&lb, 4, (uint64_t)l->num_unit)) == 0)
				rc = put_bytes(&tmp, 3, lb.data, lb.len);
			buf_free(&lb);
			if (rc < 0)
				goto done;
		}
		TRY(put_msg(&b, 2, &tmp));
	}
	for (i = 0; i < p->nmappings; i++) {
		const struct pf_mapping *m = &p->mappings[i];

		TRY(put_int(&tmp, 1, i + 1));
		TRY(put_int(&tmp, 2, m->start));
		TRY(put_int(&tmp, 3, m->limit));
		TRY(put_int(&tmp, 4, m->offset));
		TRY(put_int(&tmp, 5, (uint64_t)m->filename));
		TRY(put_int(&tmp, 6, (uint64_t)m->build_id));
		TRY(put_int(&tmp, 7, m->has_functions));
		TRY(put_int(&tmp, 8, m->has_filenames));
		TRY(put_int(&tmp, 9, m->has_line_numbers));
		TRY(put_int(&tmp, 10, m->has_inline_frames));
		TRY(put_msg(&b, 3, &tmp));
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];

		TRY(put_int(&tmp, 1, i + 1));
		TRY(put_int(&tmp, 2, l->mapping));
		TRY(put_int(&tmp, 3, l->address));
		for (j = 0; j < l->nlines; j++) {
			const struct pf_line *ln = &l->lines[j];
			struct buf lb = { 0 };

			if ((rc = put_int(&lb, 1, ln->function == PF_NONE ? 0 :
			    (uint64_t)ln->function + 1)) == 0 &&
			    (rc = put_int(&lb, 2, (uint64_t)ln->line)) == 0 &&
			    (rc = put_int(&lb, 3, (uint64_t)ln->column)) == 0)
				rc = put_bytes(&tmp, 4, lb.data, lb.len);
			buf_free(&lb);
			if (rc < 0)
				goto done;
		}
		TRY(put_int(&tmp, 5, l->is_folded));
		TRY(put_msg(&b, 4, &tmp));
	}
	for (i = 0; i < p->nfunctions; i++) {
		const struct pf_function *f = &p->functions[i];

		TRY(put_int(&tmp, 1, i + 1));
		TRY(put_int(&tmp, 2, (uint64_t)f->name));
		TRY(put_int(&tmp, 3, (uint64_t)f->system_name));
		TRY(put_int(&tmp, 4, (uint64_t)f->filename));
		TRY(put_int(&tmp, 5, (uint64_t)f->start_line));
		TRY(put_msg(&b, 5, &tmp));
	}
	for (i = 0; i < p->nstrings; i++)
		TRY(put_bytes(&b, 6, p->strings[i], strlen(p->strings[i])));
	TRY(put_int(&b, 7, (uint64_t)p->drop_frames));
	TRY(put_int(&b, 8, (uint64_t)p->keep_frames));
	TRY(put_int(&b, 9, (uint64_t)p->time_nanos));
	TRY(put_int(&b, 10, (uint64_t)p->duration_nanos));
	TRY(put_vt(&b, &tmp, 11, &p->period_type));
	TRY(put_int(&b, 12, (uint64_t)p->period));
	for (i = 0; i < p->ncomments; i++)
		TRY(buf_add_varint(&packed, (uint64_t)p->comments[i]));
	if (packed.len)
		TRY(put_bytes(&b, 13, packed.data, packed.len));
	TRY(put_int(&b, 14, (uint64_t)p->default_sample_type));
	TRY(put_int(&b, 15, (uint64_t)p->doc_url));
	if (gzip)
		rc = profile_gzip(b.data, b.len, out);
	else
		rc = buf_add(out, b.data, b.len);
#undef TRY
done:
	buf_free(&b);
	buf_free(&tmp);
	buf_free(&packed);
	return rc;
}

/* --- comparing decoded profiles ------------------------------------------- */

#define DIFF(...) do { snprintf(why, whylen, __VA_ARGS__); return false; } while (0)

static bool
profiles_equal(const struct profile *a, const struct profile *b, char *why, size_t whylen)
{
	size_t i, j;

	if (a->nstrings != b->nstrings)
		DIFF("string tables: %zu and %zu entries", a->nstrings, b->nstrings);
	for (i = 0; i < a->nstrings; i++)
		if (strcmp(a->strings[i], b->strings[i]) != 0)
			DIFF("string %zu differs", i);
	if (a->nsample_types != b->nsample_types ||
	    memcmp(a->sample_types, b->sample_types, a->nsample_types * sizeof(*a->sample_types)))
		DIFF("sample types differ");
	if (a->nsamples != b->nsamples)
		DIFF("%zu and %zu samples", a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples; i++) {
		const struct pf_sample *x = &a->samples[i], *y = &b->samples[i];

		if (x->nlocs != y->nlocs || memcmp(x->locs, y->locs, x->nlocs * sizeof(*x->locs)) ||
		    memcmp(x->values, y->values, a->nsample_types * sizeof(*x->values)) ||
		    x->nlabels != y->nlabels)
			DIFF("sample %zu differs", i);
		for (j = 0; j < x->nlabels; j++)
			if (x->labels[j].key != y->labels[j].key || x->labels[j].str != y->labels[j].str ||
			    x->labels[j].num != y->labels[j].num ||
			    x->labels[j].num_unit != y->labels[j].num_unit)
				DIFF("sample %zu label %zu differs", i, j);
	}
	if (a->nmappings != b->nmappings)
		DIFF("%zu and %zu mappings", a->nmappings, b->nmappings);
	for (i = 0; i < a->nmappings; i++) {
		const struct pf_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		if (x->start != y->start || x->limit != y->limit || x->offset != y->offset ||
		    x->filename != y->filename || x->build_id != y->build_id ||
		    x->has_functions != y->has_functions || x->has_filenames != y->has_filenames ||
		    x->has_line_numbers != y->has_line_numbers ||
		    x->has_inline_frames != y->has_inline_frames)
			DIFF("mapping %zu differs", i);
	}
	if (a->nlocations != b->nlocations)
		DIFF("%zu and %zu locations", a->nlocations, b->nlocations);
	for (i = 0; i < a->nlocations; i++) {
		const struct pf_location *x = &a->locations[i], *y = &b->locations[i];

		if (x->mapping != y->mapping || x->address != y->address ||
		    x->is_folded != y->is_folded || x->nlines != y->nlines)
			DIFF("location %zu differs", i);
		for (j = 0; j < x->nlines; j++)
			if (x->lines[j].function != y->lines[j].function ||
			    x->lines[j].line != y->lines[j].line ||
			    x->lines[j].column != y->lines[j].column)
				DIFF("location %zu line %zu differs", i, j);
	}
	if (a->nfunctions != b->nfunctions)
		DIFF("%zu and %zu functions", a->nfunctions, b->nfunctions);
	for (i = 0; i < a->nfunctions; i++)
		if (memcmp(&a->functions[i], &b->functions[i], sizeof(a->functions[i])))
			DIFF("function %zu differs", i);
	if (a->ncomments != b->ncomments ||
	    memcmp(a->comments, b->comments, a->ncomments * sizeof(*a->comments)))
		DIFF("comments differ");
	if (a->period_type.type != b->period_type.type || a->period_type.unit != b->period_type.unit ||
	    a->period != b->period || a->time_nanos != b->time_nanos ||
	    a->duration_nanos != b->duration_nanos || a->drop_frames != b->drop_frames ||
	    a->keep_frames != b->keep_frames || a->default_sample_type != b->default_sample_type ||
	    a->doc_url != b->doc_url)
		DIFF("profile fields differ");
	return true;
}

/* --- inputs --------------------------------------------------------------- */

struct input {
	char		 name[256];
	struct profile	*p;
};

static struct profile *
load(const char *path)
{
	struct buf b = { 0 }, err = { 0 };
	struct profile *p = NULL;
	int rc;

	if ((rc = buf_read_file(&b, path, PROFILE_MAX_DECODED)) < 0)
		fprintf(stderr, "encbench: %s: %s\n", path, strerror(-rc));
	else if (profile_decode(b.data, b.len, &p, &err) < 0)
		fprintf(stderr, "encbench: %s: %s\n", path, err.data ? err.data : "cannot decode");
	buf_free(&b);
	buf_free(&err);
	return p;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Merge every *.pb.gz of dir, in name order. NULL (and a message) on failure. */
static struct profile *
load_merged(const char *dir, size_t *count)
{
	struct merge *m = merge_create();
	struct profile *p, *out = NULL;
	struct buf err = { 0 };
	char **names = NULL, path[4096];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;

	*count = 0;
	if ((d = opendir(dir)) == NULL || m == NULL) {
		fprintf(stderr, "encbench: %s: %s\n", dir, strerror(errno));
		goto done;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len > 6 && strcmp(de->d_name + len - 6, ".pb.gz") == 0) {
			if ((names = realloc(names, (n + 1) * sizeof(*names))) == NULL ||
			    (names[n] = strdup(de->d_name)) == NULL)
				abort();
			n++;
		}
	}
	closedir(d);
	if (names)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if ((p = load(path)) == NULL)
			goto done;
		buf_reset(&err);
		if (merge_add(m, p, &err) < 0) {
			fprintf(stderr, "encbench: %s: %s\n", path, err.data ? err.data : "merge failed");
			profile_free(p);
			goto done;
		}
		profile_free(p);
	}
	if (n == 0)
		fprintf(stderr, "encbench: no *.pb.gz in %s\n", dir);
	else if (merge_finish(m, false, &out) < 0)
		fprintf(stderr, "encbench: merging %s failed\n", dir);
	*count = n;
done:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	merge_free(m);
	buf_free(&err);
	return out;
}

/* --- measuring ------------------------------------------------------------ */

typedef int (*encode_fn)(const struct profile *, bool, struct buf *);

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nanoseconds for `reps` encodes into a reused buffer, divided by reps. */
static int64_t
time_encode(encode_fn fn, const struct profile *p, bool gzip, int reps, struct buf *out)
{
	int64_t t0 = mono_ns();
	int r;

	for (r = 0; r < reps; r++) {
		buf_reset(out);
		if (fn(p, gzip, out) < 0) {
			fprintf(stderr, "encbench: encoding failed\n");
			exit(1);
		}
	}
	return (mono_ns() - t0) / reps;
}

/* One encode into a fresh buffer: allocation calls and peak bytes above the start. */
static void
heap_encode(encode_fn fn, const struct profile *p, bool gzip, long *allocs, long *peak)
{
	struct buf out = { 0 };
	long base = atomic_load(&heap_live);

	heap_mark();
	if (fn(p, gzip, &out) < 0)
		exit(1);
	*allocs = atomic_load(&heap_allocs);
	*peak = atomic_load(&heap_peak) - base;
	buf_free(&out);
}

static bool
check(const struct input *in, bool *same_bytes)
{
	struct buf a = { 0 }, b = { 0 }, err = { 0 };
	struct profile *pa = NULL, *pb = NULL;
	char why[256] = "";
	bool ok = false;

	if (hand_encode(in->p, false, &a) < 0 || profile_encode(in->p, false, &b) < 0) {
		snprintf(why, sizeof(why), "an encoder failed");
	} else if (profile_decode(a.data, a.len, &pa, &err) < 0 ||
	    profile_decode(b.data, b.len, &pb, &err) < 0) {
		snprintf(why, sizeof(why), "decoding: %s", err.data ? err.data : "failed");
	} else if (profiles_equal(in->p, pa, why, sizeof(why)) &&
	    profiles_equal(in->p, pb, why, sizeof(why))) {
		ok = true;
	}
	*same_bytes = a.len == b.len && memcmp(a.data, b.data, a.len) == 0;
	if (!ok)
		fprintf(stderr, "encbench: %s: the encodings do not decode to the profile: %s\n",
		    in->name, why);
	profile_free(pa);
	profile_free(pb);
	buf_free(&a);
	buf_free(&b);
	buf_free(&err);
	return ok;
}

static void
usage(void)
{
	fprintf(stderr, "usage: encbench [-n SAMPLES] [-z] [-m DIR]... FILE...\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct input *ins = NULL;
	size_t nin = 0, i, count;
	int nsamples = 15, s, c;
	bool gzip = false, same;
	int64_t tot_hand = 0, tot_pbc = 0;
	struct buf out = { 0 };

	while ((c = getopt(argc, argv, "n:zm:")) != -1) {
		switch (c) {
		case 'n':
			nsamples = atoi(optarg);
			if (nsamples < 1 || nsamples > 10000)
				usage();
			break;
		case 'z':
			gzip = true;
			break;
		case 'm':
			if ((ins = realloc(ins, (nin + 1) * sizeof(*ins))) == NULL)
				abort();
			if ((ins[nin].p = load_merged(optarg, &count)) == NULL)
				return 1;
			snprintf(ins[nin].name, sizeof(ins[nin].name), "%zu merged from %s",
			    count, optarg);
			nin++;
			break;
		default:
			usage();
		}
	}
	for (; optind < argc; optind++) {
		struct profile *p = load(argv[optind]);

		/* Inputs a strict reader refuses are not encoder work: skip them. */
		if (p == NULL)
			continue;
		if ((ins = realloc(ins, (nin + 1) * sizeof(*ins))) == NULL)
			abort();
		ins[nin].p = p;
		snprintf(ins[nin].name, sizeof(ins[nin].name), "%s", argv[optind]);
		nin++;
	}
	if (nin == 0)
		usage();

	printf("encoder benchmark: %s, median of %d samples per input%s\n",
	    gzip ? "encode + gzip (level 1)" : "encode only", nsamples,
	    HEAP_COUNTED ? "" : " (sanitizer build: no heap figures)");
	printf("%-52s %9s %10s %10s %6s %14s %14s\n", "input", "bytes", "hand us", "pbc us",
	    "pbc/hd", "hand allocs/KB", "pbc allocs/KB");
	for (i = 0; i < nin; i++) {
		int64_t *th = calloc((size_t)nsamples, sizeof(int64_t));
		int64_t *tp = calloc((size_t)nsamples, sizeof(int64_t));
		int64_t one, mh, mp;
		long ah, ph, ap, pp;
		int reps;
		const char *name = ins[i].name;

		if (th == NULL || tp == NULL)
			abort();
		if (!check(&ins[i], &same))
			return 1;
		/* Enough repetitions that one sample takes about 5 ms. */
		one = time_encode(hand_encode, ins[i].p, gzip, 1, &out);
		reps = one > 5000000 ? 1 : (int)(5000000 / (one + 1)) + 1;
		for (s = 0; s < nsamples; s++) {
			/* Alternate the order, so neither always runs on a warm cache. */
			if (s % 2 == 0) {
				th[s] = time_encode(hand_encode, ins[i].p, gzip, reps, &out);
				tp[s] = time_encode(profile_encode, ins[i].p, gzip, reps, &out);
			} else {
				tp[s] = time_encode(profile_encode, ins[i].p, gzip, reps, &out);
				th[s] = time_encode(hand_encode, ins[i].p, gzip, reps, &out);
			}
		}
		qsort(th, (size_t)nsamples, sizeof(*th), cmp_i64);
		qsort(tp, (size_t)nsamples, sizeof(*tp), cmp_i64);
		mh = th[nsamples / 2];
		mp = tp[nsamples / 2];
		tot_hand += mh;
		tot_pbc += mp;
		heap_encode(hand_encode, ins[i].p, gzip, &ah, &ph);
		heap_encode(profile_encode, ins[i].p, gzip, &ap, &pp);
		buf_reset(&out);
		if (profile_encode(ins[i].p, gzip, &out) < 0)
			return 1;
		if (strlen(name) > 52)
			name += strlen(name) - 52;
		if (HEAP_COUNTED)
			printf("%-52s %9zu %10.1f %10.1f %6.2f %7ld/%-6ld %7ld/%-6ld%s\n", name,
			    out.len, (double)mh / 1e3, (double)mp / 1e3, (double)mp / (double)mh,
			    ah, ph / 1024, ap, pp / 1024, same ? "" : " (bytes differ)");
		else
			printf("%-52s %9zu %10.1f %10.1f %6.2f %14s %14s%s\n", name, out.len,
			    (double)mh / 1e3, (double)mp / 1e3, (double)mp / (double)mh, "n/a", "n/a",
			    same ? "" : " (bytes differ)");
		free(th);
		free(tp);
	}
	printf("total: hand %.1f us, protobuf-c %.1f us, protobuf-c/hand %.3f\n",
	    (double)tot_hand / 1e3, (double)tot_pbc / 1e3, (double)tot_pbc / (double)tot_hand);
	for (i = 0; i < nin; i++)
		profile_free(ins[i].p);
	free(ins);
	buf_free(&out);
	return 0;
}
