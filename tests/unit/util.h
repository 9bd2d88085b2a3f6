/*
 * util.h: helpers shared by the unit tests (header-only, each test is one
 * program): finding and reading the real profiles of shared/testdata/real,
 * building small pprof messages by hand (to check the decoder against wire
 * forms the encoder never writes) and building profiles in memory.
 */
#ifndef PROFILEFS_TEST_UTIL_H
#define PROFILEFS_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "pprof.h"

/* Helpers are unused in some tests. */
#define TU static __attribute__((unused))

/* --- real profiles -------------------------------------------------------- */

/* The directory of the real profiles: $REAL, $PROFILEFS_TESTDATA, or ../shared/testdata/real. */
TU const char *
real_dir(void)
{
	static char dir[4096];
	const char *cands[] = { getenv("REAL"), getenv("PROFILEFS_TESTDATA"),
	    "../shared/testdata/real", "tests/testdata/real", "../../shared/testdata/real" };
	struct stat st;
	size_t i;

	if (dir[0])
		return dir;
	for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (cands[i] && cands[i][0] && stat(cands[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(dir, sizeof(dir), "%s", cands[i]);
			return dir;
		}
	}
	return NULL;
}

/* Read real/<rel> into b; 0 or -errno. */
TU int
read_real(const char *rel, struct buf *b)
{
	char path[4096];
	const char *d = real_dir();

	if (d == NULL)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", d, rel);
	buf_reset(b);
	return buf_read_file(b, path, 64u << 20);
}

/* Decode real/<rel>; NULL (and a message on stderr) on failure. */
TU struct profile *
load_real(const char *rel)
{
	struct buf b = { 0 }, err = { 0 };
	struct profile *p = NULL;
	int rc;

	if ((rc = read_real(rel, &b)) < 0)
		fprintf(stderr, "cannot read %s: %s\n", rel, strerror(-rc));
	else if ((rc = profile_decode(b.data, b.len, &p, &err)) < 0)
		fprintf(stderr, "cannot decode %s: %s\n", rel, err.data ? err.data : "");
	buf_free(&b);
	buf_free(&err);
	return p;
}

/* The relative paths of every real file (sorted, NULL-terminated; free each and the array). */
TU int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

TU char **
real_files(size_t *n)
{
	const char *d = real_dir();
	char **out = NULL, path[4096];
	size_t cnt = 0;
	DIR *top, *sub;
	struct dirent *e, *f;

	*n = 0;
	if (d == NULL || (top = opendir(d)) == NULL)
		return NULL;
	while ((e = readdir(top)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
		if ((sub = opendir(path)) == NULL)
			continue;
		while ((f = readdir(sub)) != NULL) {
			if (f->d_name[0] == '.' || strcmp(f->d_name, "INDEX.md") == 0)
				continue;
			out = realloc(out, (cnt + 2) * sizeof(*out));
			if (out == NULL)
				abort();
			if ((out[cnt] = malloc(strlen(e->d_name) + strlen(f->d_name) + 2)) == NULL)
				abort();
			sprintf(out[cnt], "%s/%s", e->d_name, f->d_name);
			cnt++;
		}
		closedir(sub);
	}
	closedir(top);
	if (out) {
		qsort(out, cnt, sizeof(*out), name_cmp);
		out[cnt] = NULL;
	}
	*n = cnt;
	return out;
}

TU void
free_files(char **f)
{
	size_t i;

	for (i = 0; f && f[i]; i++)
		free(f[i]);
	free(f);
}

/* --- hand-made protobuf --------------------------------------------------- */

/* Append a varint field. */
TU void
pb_int(struct buf *b, unsigned field, uint64_t v)
{
	buf_add_varint(b, (uint64_t)field << 3);
	buf_add_varint(b, v);
}

/* Append a length-delimited field. */
TU void
pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	buf_add_varint(b, (uint64_t)field << 3 | 2);
	buf_add_varint(b, n);
	buf_add(b, p, n);
}

TU void
pb_str(struct buf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Append sub as a message field of b and empty sub. */
TU void
pb_msg(struct buf *b, unsigned field, struct buf *sub)
{
	pb_bytes(b, field, sub->data ? sub->data : "", sub->len);
	buf_reset(sub);
}

/* A packed repeated varint field of n values. */
TU void
pb_packed(struct buf *b, unsigned field, const uint64_t *v, size_t n)
{
	struct buf t = { 0 };
	size_t i;

	for (i = 0; i < n; i++)
		buf_add_varint(&t, v[i]);
	pb_bytes(b, field, t.data ? t.data : "", t.len);
	buf_free(&t);
}

/* --- profiles built in memory --------------------------------------------- */

#define TP_MAX	64

/*
 * A profile with room for TP_MAX of everything, built field by field; the
 * helpers return the index of what they add.
 */
TU struct profile *
tp_new(const char *ptype, const char *punit, int64_t period, const char *types)
{
	struct profile *p = calloc(1, sizeof(*p));
	struct arena *a;
	char *copy, *tok, *save = NULL;

	if (p == NULL || (p->arena = a = arena_create()) == NULL)
		abort();
	p->strings = arena_calloc(a, TP_MAX * 4, sizeof(char *));
	p->sample_types = arena_calloc(a, TP_MAX, sizeof(*p->sample_types));
	p->samples = arena_calloc(a, TP_MAX, sizeof(*p->samples));
	p->mappings = arena_calloc(a, TP_MAX, sizeof(*p->mappings));
	p->locations = arena_calloc(a, TP_MAX, sizeof(*p->locations));
	p->functions = arena_calloc(a, TP_MAX, sizeof(*p->functions));
	p->comments = arena_calloc(a, TP_MAX, sizeof(*p->comments));
	p->strings[0] = "";
	p->nstrings = 1;
	p->period = period;
	p->period_type.type = ptype ? (int64_t)p->nstrings : 0;
	if (ptype) {
		p->strings[p->nstrings++] = arena_memdup(a, ptype, strlen(ptype));
		p->strings[p->nstrings++] = arena_memdup(a, punit, strlen(punit));
		p->period_type.unit = 2;
	}
	/* types: "cpu/nanoseconds,samples/count" */
	copy = strdup(types);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *slash = strchr(tok, '/');
		struct pf_valuetype *vt = &p->sample_types[p->nsample_types++];

		*slash = '\0';
		vt->type = (int64_t)p->nstrings;
		p->strings[p->nstrings++] = arena_memdup(a, tok, strlen(tok));
		vt->unit = (int64_t)p->nstrings;
		p->strings[p->nstrings++] = arena_memdup(a, slash + 1, strlen(slash + 1));
	}
	free(copy);
	return p;
}

/* Index of s in p's strings, added if missing. */
TU int64_t
tp_str(struct profile *p, const char *s)
{
	size_t i;

	if (s == NULL || s[0] == '\0')
		return 0;
	for (i = 1; i < p->nstrings; i++)
		if (strcmp(p->strings[i], s) == 0)
			return (int64_t)i;
	p->strings[p->nstrings] = arena_memdup(p->arena, s, strlen(s));
	return (int64_t)p->nstrings++;
}

TU uint32_t
tp_func(struct profile *p, const char *name, const char *file, int64_t start_line)
{
	struct pf_function *f = &p->functions[p->nfunctions];

	f->name = tp_str(p, name);
	f->system_name = f->name;
	f->filename = tp_str(p, file);
	f->start_line = start_line;
	return (uint32_t)p->nfunctions++;
}

/* Returns index + 1, the form pf_location.mapping takes. */
TU uint32_t
tp_mapping(struct profile *p, uint64_t start, uint64_t limit, uint64_t offset,
    const char *file, const char *build_id)
{
	struct pf_mapping *m = &p->mappings[p->nmappings];

	m->start = start;
	m->limit = limit;
	m->offset = offset;
	m->filename = tp_str(p, file);
	m->build_id = tp_str(p, build_id);
	m->has_functions = true;
	return (uint32_t)++p->nmappings;
}

/* A location with one line per function given (leaf/inlined first), -1 ends. */
TU uint32_t
tp_loc(struct profile *p, uint32_t mapping, uint64_t address, ...)
{
	struct pf_location *l = &p->locations[p->nlocations];
	va_list ap;
	int f;

	l->mapping = mapping;
	l->address = address;
	l->lines = arena_calloc(p->arena, 8, sizeof(*l->lines));
	va_start(ap, address);
	while ((f = va_arg(ap, int)) >= 0) {
		l->lines[l->nlines].function = (uint32_t)f;
		l->lines[l->nlines].line = 10;
		l->nlines++;
	}
	va_end(ap);
	return (uint32_t)p->nlocations++;
}

/*
 * A sample: values (nsample_types of them), then the location indexes
 * (leaf first) ending with -1, then string labels as key, value pairs ending
 * with NULL.
 */
TU struct pf_sample *
tp_sample(struct profile *p, const int64_t *values, ...)
{
	struct pf_sample *s = &p->samples[p->nsamples++];
	va_list ap;
	const char *k;
	int l;

	s->values = arena_memdup(p->arena, values, p->nsample_types * sizeof(int64_t));
	s->locs = arena_calloc(p->arena, 32, sizeof(uint32_t));
	s->labels = arena_calloc(p->arena, 16, sizeof(struct pf_label));
	va_start(ap, values);
	while ((l = va_arg(ap, int)) >= 0)
		s->locs[s->nlocs++] = (uint32_t)l;
	while ((k = va_arg(ap, const char *)) != NULL) {
		const char *v = va_arg(ap, const char *);

		s->labels[s->nlabels].key = tp_str(p, k);
		s->labels[s->nlabels].str = tp_str(p, v);
		s->nlabels++;
	}
	va_end(ap);
	return s;
}

/* Add a numeric label to s. */
TU void
tp_numlabel(struct profile *p, struct pf_sample *s, const char *key, int64_t num,
    const char *unit)
{
	struct pf_label *l = &s->labels[s->nlabels++];

	l->key = tp_str(p, key);
	l->str = 0;
	l->num = num;
	l->num_unit = tp_str(p, unit);
}

/* Encode and decode again: the round trip validates what the helpers built. */
TU struct profile *
tp_reload(const struct profile *p)
{
	struct buf b = { 0 }, err = { 0 };
	struct profile *q = NULL;

	if (profile_encode(p, false, &b) < 0 || profile_decode(b.data, b.len, &q, &err) < 0) {
		fprintf(stderr, "reload failed: %s\n", err.data ? err.data : "");
		q = NULL;
	}
	buf_free(&b);
	buf_free(&err);
	return q;
}

/* Sum of type t over the samples whose labels include key=val (val NULL: lacking key). */
TU int64_t
total_labelled(const struct profile *p, size_t t, const char *key, const char *val)
{
	int64_t sum = 0;
	size_t i, j;

	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		bool has = false;

		for (j = 0; j < s->nlabels; j++)
			if (strcmp(profile_str(p, s->labels[j].key), key) == 0 &&
			    (val == NULL || strcmp(profile_str(p, s->labels[j].str), val) == 0))
				has = true;
		if (val ? has : !has)
			sum += s->values[t];
	}
	return sum;
}

/* Name of the function of the last (caller) line of location l, "" if none. */
TU const char *
loc_name(const struct profile *p, uint32_t l)
{
	const struct pf_location *loc = &p->locations[l];
	uint32_t f;

	if (loc->nlines == 0)
		return "";
	f = loc->lines[loc->nlines - 1].function;
	return f == PF_NONE ? "" : profile_str(p, p->functions[f].name);
}

#endif
