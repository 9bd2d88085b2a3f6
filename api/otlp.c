/*
 * otlp: OpenTelemetry's profiles over OTLP/HTTP, POST /v1development/profiles,
 * in the layout of opentelemetry-proto v1.11.0 (api/otlp.proto says what is
 * read). The body is an ExportProfilesServiceRequest, protobuf
 * (application/x-protobuf) or its proto3 JSON form (application/json), gzipped
 * or not (Content-Encoding). JSON is first re-encoded as protobuf, under
 * limits and the memory budget, by pbjson.c (the API's one JSON reader), so
 * both go through one decoder.
 *
 * The request's shared dictionary is resolved into pprof through the merge
 * builder (pprof.h): one stored profile per (resource, scope, label set,
 * period type) group and 10-minute window, the group's sample types as its
 * columns (OTLP sends one profile per sample type: Go's samples/count and
 * cpu/nanoseconds come back as one pprof profile). Each sample's values land in
 * the window of its timestamps (the profile's time when it has none).
 * `service.name` is the service (unknown_service when absent); the other
 * resource attributes, the scope's and the profile's become labels, the more
 * specific winning a key; sample attributes become pprof sample labels.
 *
 * All or nothing: the whole request is checked and converted before the
 * store is given every profile in one batch (store_put_profiles()). Errors
 * are OTLP's: a Status message (google.rpc.Status) in the request's encoding,
 * 400 for a malformed or other-release payload, 413 past the size limit, 415
 * for another content type or encoding. The store and the tree are left to
 * store/; the HTTP plumbing to http.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>
#include <protobuf-c/protobuf-c.h>

#include "api_int.h"
#include "otlp.pb-c.h"
#include "pbjson.h"

#define RELEASE		"opentelemetry-proto v1.11.0"
#define NS_10M		(INT64_C(600) * 1000000000)
/* A JSON body's tree takes several times its size: its own, smaller limits (pbjson.h). */
static const struct pbjson_limits json_limits = {
	.max_text = 64u << 20,
	.max_depth = PBJSON_MAX_DEPTH,
	.max_elements = PBJSON_MAX_ELEMENTS,
	.max_strings = 64u << 20,
};
/* Stored profiles one request may make: (group, 10-minute window) pairs. */
#define MAX_BUCKETS	1024
/* Frames of one stack and lines of one location: far past real programs. */
#define MAX_FRAMES	(64u << 10)
#define MAX_LINES	1024

/* gRPC status codes of the Status message. */
enum { GRPC_INVALID_ARGUMENT = 3, GRPC_NOT_FOUND = 5, GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_INTERNAL = 13, GRPC_UNAVAILABLE = 14 };

/* --- decoding ------------------------------------------------------------ */

struct pbctx {
	struct arena	*arena;
	size_t		 budget;
	bool		 over;
	bool		 refused;	/* the memory budget had no room */
};

static void *
pb_alloc(void *data, size_t size)
{
	struct pbctx *c = data;
	void *p;

	if (size > c->budget || arena_used(c->arena) > c->budget - size) {
		c->over = true;
		return NULL;
	}
	if ((p = arena_alloc(c->arena, size)) == NULL)
		c->refused = true;
	return p;
}

static void
pb_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

/* One stored profile in the making: a group's samples in one window. */
struct bucket {
	size_t		 group;
	int64_t		 win;
	struct merge	*m;
	int64_t		 tmin, tmax;
	int64_t		 duration;	/* the longest of its profiles' own */
	bool		 stamped;	/* some of its samples had timestamps */
};

/* Profiles of one resource and scope with one label set and period type. */
struct group {
	char		*service;
	struct labelset	 ls;
	char		*labels;	/* canonical text, the group's identity */
	size_t		 scope;		/* running index of its ScopeProfiles */
	const char	*ptype, *punit;
	int64_t		 period;
	const char	*types[PROFILE_MAX_SAMPLE_TYPES], *units[PROFILE_MAX_SAMPLE_TYPES];
	size_t		 ntypes;
};

struct conv {
	const Otlp__ProfilesDictionary *d;
	struct buf	*err;
	int64_t		 now;
	struct group	*g;
	size_t		 ng, gcap;
	struct bucket	*b;
	size_t		 nb, bcap, last;
	/* Location index -> (bucket + 1, merge index): most samples hit one bucket. */
	size_t		*loc_bucket;
	int64_t		*loc_val;
	bool		*map_lines;	/* mapping index -> some location of it has lines */
	struct pf_line	 lines[MAX_LINES];
	uint32_t	*locs;		/* one sample's frames */
	struct pf_label	 labels[LABELS_MAX];
};

static int
cfail(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
cfail(struct conv *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(c->err, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define NTAB(field)	(c->d ? c->d->n_##field : 0)

/*
 * Index i of a dictionary table of n entries: 0 is the table's zero value,
 * present or not; anything else must be in range.
 */
static int
check_index(struct conv *c, int32_t i, size_t n, const char *table)
{
	if (i == 0 || (i > 0 && (size_t)i < n))
		return 0;
	return cfail(c, "%s index %" PRId32 " out of range (the table has %zu entries): not "
	    "an %s payload, or a broken one", table, i, n, RELEASE);
}

/* String i of the dictionary, or NULL with the reason. */
static const char *
dstr(struct conv *c, int32_t i)
{
	if (check_index(c, i, NTAB(string_table), "string_table") < 0)
		return NULL;
	return i == 0 || c->d == NULL ? "" : c->d->string_table[i];
}

/*
 * The text of a scalar attribute value into out; 0, or 1 for a value that
 * is no label (bytes, arrays, maps, none), -EINVAL for a bad string index.
 */
static int
any_text(struct conv *c, const Otlp__AnyValue *v, struct buf *out)
{
	const char *s;

	if (v == NULL)
		return 1;
	switch (v->value_case) {
	case OTLP__ANY_VALUE__VALUE_STRING_VALUE:
		return buf_adds(out, v->string_value);
	case OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		if ((s = dstr(c, v->string_value_strindex)) == NULL)
			return -EINVAL;
		return buf_adds(out, s);
	case OTLP__ANY_VALUE__VALUE_BOOL_VALUE:
		return buf_adds(out, v->bool_value ? "true" : "false");
	case OTLP__ANY_VALUE__VALUE_INT_VALUE:
		return buf_add_i64(out, v->int_value);
	case OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE:
		return buf_printf(out, "%.17g", v->double_value);
	default:
		return 1;
	}
}

/*
 * Add the scalar attributes kv[0..n) to ls as labels, leaving keys it has
 * (a more specific level set them); service.name goes to *service instead
 * when service is not NULL.
 */
static int
add_attrs(struct conv *c, Otlp__KeyValue *const *kv, size_t n, const char *level,
    struct labelset *ls, char **service)
{
	struct buf val = { 0 }, why = { 0 };
	size_t i, j;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const char *key = kv[i]->key;
		bool have = false;

		if (key[0] == '\0' && (key = dstr(c, kv[i]->key_strindex)) == NULL) {
			rc = -EINVAL;
			break;
		}
		buf_reset(&val);
		if ((rc = any_text(c, kv[i]->value, &val)) != 0) {
			rc = rc == 1 ? 0 : rc;
			continue;
		}
		if (service && strcmp(key, "service.name") == 0) {
			free(*service);
			if ((*service = strdup(val.data ? val.data : "")) == NULL)
				rc = -ENOMEM;
			continue;
		}
		if (key[0] == '\0')
			continue;
		for (j = 0; j < ls->n && !have; j++)
			have = strcmp(ls->pairs[j].key, key) == 0;
		if (have)
			continue;
		if ((rc = labels_add(ls, key, val.data ? val.data : "", &why)) == -EINVAL)
			cfail(c, "%s attribute \"%s\" as a label: %s", level, key,
			    http_why(&why, "not a valid label"));
	}
	buf_free(&val);
	buf_free(&why);
	return rc;
}

/* Add the dictionary attributes idx[0..n) to ls, as add_attrs(). */
static int
add_dict_attrs(struct conv *c, const int32_t *idx, size_t n, struct labelset *ls)
{
	struct buf val = { 0 }, why = { 0 };
	size_t i, j;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const Otlp__KeyValueAndUnit *a;
		const char *key;
		bool have = false;

		if ((rc = check_index(c, idx[i], NTAB(attribute_table), "attribute_table")) < 0)
			break;
		if (idx[i] == 0)
			continue;
		a = c->d->attribute_table[idx[i]];
		if ((key = dstr(c, a->key_strindex)) == NULL) {
			rc = -EINVAL;
			break;
		}
		buf_reset(&val);
		if ((rc = any_text(c, a->value, &val)) != 0) {
			rc = rc == 1 ? 0 : rc;
			continue;
		}
		for (j = 0; j < ls->n && !have; j++)
			have = strcmp(ls->pairs[j].key, key) == 0;
		if (key[0] == '\0' || have)
			continue;
		if ((rc = labels_add(ls, key, val.data ? val.data : "", &why)) == -EINVAL)
			cfail(c, "profile attribute \"%s\" as a label: %s", key,
			    http_why(&why, "not a valid label"));
	}
	buf_free(&val);
	buf_free(&why);
	return rc;
}

/* The group of (scope, service, labels, period type); made on first use. */
static int
group_find(struct conv *c, size_t scope, const char *service, struct labelset *ls,
    const Otlp__Profile *pr, size_t *gi)
{
	struct buf text = { 0 };
	const char *ptype = "", *punit = "";
	struct group *g;
	size_t i;
	int rc;

	if (pr->period_type && ((ptype = dstr(c, pr->period_type->type_strindex)) == NULL ||
	    (punit = dstr(c, pr->period_type->unit_strindex)) == NULL))
		return -EINVAL;
	if ((rc = labels_format(ls, &text)) < 0 || (rc = buf_reserve(&text, 0)) < 0)
		goto out;
	for (i = 0; i < c->ng; i++) {
		g = &c->g[i];
		if (g->scope == scope && g->period == pr->period && strcmp(g->labels, text.data) == 0 &&
		    strcmp(g->ptype, ptype) == 0 && strcmp(g->punit, punit) == 0 &&
		    strcmp(g->service, service) == 0) {
			*gi = i;
			goto out;
		}
	}
	if (c->ng == MAX_BUCKETS) {
		rc = cfail(c, "more than %d profile groups in one request", MAX_BUCKETS);
		goto out;
	}
	if (c->ng == c->gcap) {
		size_t cap = c->gcap ? 2 * c->gcap : 8;
		struct group *ng = realloc(c->g, cap * sizeof(*ng));

		if (ng == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		c->g = ng;
		c->gcap = cap;
	}
	g = &c->g[c->ng];
	memset(g, 0, sizeof(*g));
	g->scope = scope;
	g->ptype = ptype;
	g->punit = punit;
	g->period = pr->period;
	g->labels = buf_steal(&text, NULL);
	if ((g->service = strdup(service)) == NULL || g->labels == NULL) {
		free(g->service);
		free(g->labels);
		rc = -ENOMEM;
		goto out;
	}
	/* The set moves to the group; the caller's is left empty. */
	g->ls = *ls;
	ls->n = 0;
	*gi = c->ng++;
out:
	buf_free(&text);
	return rc;
}

/* The column of sample type (type, unit) in group g; added on first use. */
static int
group_column(struct conv *c, struct group *g, const char *type, const char *unit, size_t *col)
{
	size_t i;

	for (i = 0; i < g->ntypes; i++) {
		if (strcmp(g->types[i], type) == 0 && strcmp(g->units[i], unit) == 0) {
			*col = i;
			return 0;
		}
	}
	if (g->ntypes == PROFILE_MAX_SAMPLE_TYPES)
		return cfail(c, "more than %d sample types in one resource and scope",
		    PROFILE_MAX_SAMPLE_TYPES);
	g->types[g->ntypes] = type;
	g->units[g->ntypes] = unit;
	*col = g->ntypes++;
	return 0;
}

/* The bucket of group gi and the window of time t; made on first use. */
static int
bucket_find(struct conv *c, size_t gi, int64_t t, size_t *bi)
{
	int64_t win = floor_div(t, NS_10M);
	struct group *g = &c->g[gi];
	struct merge_header h;
	struct bucket *b;
	size_t i;

	if (c->nb && c->b[c->last].group == gi && c->b[c->last].win == win) {
		*bi = c->last;
		return 0;
	}
	for (i = 0; i < c->nb; i++) {
		if (c->b[i].group == gi && c->b[i].win == win) {
			*bi = c->last = i;
			return 0;
		}
	}
	if (c->nb == MAX_BUCKETS)
		return cfail(c, "the request's samples make more than %d profiles (one per "
		    "resource, scope, label set and 10-minute window)", MAX_BUCKETS);
	if (c->nb == c->bcap) {
		size_t cap = c->bcap ? 2 * c->bcap : 8;
		struct bucket *nb = realloc(c->b, cap * sizeof(*nb));

		if (nb == NULL)
			return -ENOMEM;
		c->b = nb;
		c->bcap = cap;
	}
	b = &c->b[c->nb];
	memset(b, 0, sizeof(*b));
	b->group = gi;
	b->win = win;
	b->tmin = INT64_MAX;
	b->tmax = INT64_MIN;
	memset(&h, 0, sizeof(h));
	h.types = g->types;
	h.units = g->units;
	h.ntypes = g->ntypes;
	h.period_type = g->ptype;
	h.period_unit = g->punit;
	h.period = g->period;
	if ((b->m = merge_create()) == NULL || merge_begin(b->m, &h) < 0) {
		merge_free(b->m);
		return -ENOMEM;
	}
	*bi = c->last = c->nb++;
	return 0;
}

static int64_t
mstr(struct conv *c, struct merge *m, int32_t i)
{
	const char *s = dstr(c, i);

	return s ? merge_string(m, s) : -EINVAL;
}

/* The build id of mapping mp, from its attributes (OTel's process.executable.build_id.*). */
static const char *
mapping_build_id(struct conv *c, const Otlp__Mapping *mp)
{
	static const char *const keys[] = { "process.executable.build_id.gnu",
		"process.executable.build_id.go", "process.executable.build_id.htlhash",
		"process.executable.build_id.profiling" };
	const char *best = "";
	size_t i, k, rank = sizeof(keys) / sizeof(keys[0]);

	for (i = 0; i < mp->n_attribute_indices; i++) {
		const Otlp__KeyValueAndUnit *a;
		const char *key;

		if (check_index(c, mp->attribute_indices[i], NTAB(attribute_table),
		    "attribute_table") < 0)
			return NULL;
		if (mp->attribute_indices[i] == 0)
			continue;
		a = c->d->attribute_table[mp->attribute_indices[i]];
		if ((key = dstr(c, a->key_strindex)) == NULL)
			return NULL;
		for (k = 0; k < rank; k++) {
			if (strcmp(key, keys[k]) != 0 || a->value == NULL)
				continue;
			if (a->value->value_case == OTLP__ANY_VALUE__VALUE_STRING_VALUE)
				best = a->value->string_value;
			else if (a->value->value_case ==
			    OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX &&
			    (best = dstr(c, a->value->string_value_strindex)) == NULL)
				return NULL;
			else
				continue;
			rank = k;
		}
	}
	return best;
}

/* Location li of the dictionary as a location of bucket bi's merge. */
static int64_t
conv_location(struct conv *c, size_t bi, int32_t li)
{
	struct merge *m = c->b[bi].m;
	const Otlp__Location *l;
	uint32_t map = 0;
	uint64_t map_start = 0;
	size_t i;
	int64_t k;

	if (c->loc_bucket[li] == bi + 1)
		return c->loc_val[li];
	l = c->d->location_table[li];
	if (l->mapping_index) {
		const Otlp__Mapping *mp;
		struct pf_mapping pm;
		const char *bid;
		int64_t fi, bx;

		if (check_index(c, l->mapping_index, NTAB(mapping_table), "mapping_table") < 0)
			return -EINVAL;
		mp = c->d->mapping_table[l->mapping_index];
		if ((fi = mstr(c, m, mp->filename_strindex)) < 0)
			return fi;
		if ((bid = mapping_build_id(c, mp)) == NULL)
			return -EINVAL;
		if ((bx = merge_string(m, bid)) < 0)
			return bx;
		memset(&pm, 0, sizeof(pm));
		pm.start = mp->memory_start;
		pm.limit = mp->memory_limit;
		pm.offset = mp->file_offset;
		pm.filename = fi;
		pm.build_id = bx;
		pm.has_functions = pm.has_filenames = pm.has_line_numbers =
		    c->map_lines[l->mapping_index];
		if ((k = merge_mapping(m, &pm)) < 0)
			return k;
		map = (uint32_t)k + 1;
		map_start = mp->memory_start;
	}
	if (l->n_lines > MAX_LINES)
		return cfail(c, "a location with %zu lines (at most %d)", l->n_lines, MAX_LINES);
	for (i = 0; i < l->n_lines; i++) {
		const Otlp__Line *ln = l->lines[i];

		c->lines[i].function = PF_NONE;
		c->lines[i].line = ln->line;
		c->lines[i].column = ln->column;
		if (check_index(c, ln->function_index, NTAB(function_table), "function_table") < 0)
			return -EINVAL;
		if (ln->function_index) {
			const Otlp__Function *f = c->d->function_table[ln->function_index];
			struct pf_function pf;

			memset(&pf, 0, sizeof(pf));
			if ((pf.name = mstr(c, m, f->name_strindex)) < 0 ||
			    (pf.system_name = mstr(c, m, f->system_name_strindex)) < 0 ||
			    (pf.filename = mstr(c, m, f->filename_strindex)) < 0)
				return -EINVAL;
			pf.start_line = f->start_line;
			if ((k = merge_function(m, &pf)) < 0)
				return k;
			c->lines[i].function = (uint32_t)k;
		}
	}
	if ((k = merge_location(m, map, map_start, l->address, false, c->lines, l->n_lines)) < 0)
		return k;
	c->loc_bucket[li] = bi + 1;
	c->loc_val[li] = k;
	return k;
}

/*
 * A sample's link (trace and span ids) as the sample labels span_id (16
 * hex digits) and trace_id (32), after the *n of c->labels: the store keeps
 * them per sample, never as series (store/span.c). An all-zero id is none.
 */
static int
link_labels(struct conv *c, struct merge *m, const Otlp__Link *l, size_t *n)
{
	static const char *const keys[2] = { "trace_id", "span_id" };
	const ProtobufCBinaryData *id[2] = { &l->trace_id, &l->span_id };
	static const size_t want[2] = { 16, 8 };
	char hex[33];
	size_t i, j;
	int64_t k, v;

	for (i = 0; i < 2; i++) {
		bool zero = true;

		if (id[i]->len == 0)
			continue;
		if (id[i]->len != want[i])
			return cfail(c, "a link's %s has %zu bytes (%zu expected)", keys[i],
			    id[i]->len, want[i]);
		for (j = 0; j < want[i]; j++) {
			zero = zero && id[i]->data[j] == 0;
			hex[2 * j] = hex_digit(id[i]->data[j] >> 4, false);
			hex[2 * j + 1] = hex_digit(id[i]->data[j], false);
		}
		hex[2 * want[i]] = '\0';
		if (zero)
			continue;
		if (*n == LABELS_MAX)
			return cfail(c, "a sample with more than %d attributes and links",
			    LABELS_MAX);
		if ((k = merge_string(m, keys[i])) < 0 || (v = merge_string(m, hex)) < 0)
			return -ENOMEM;
		memset(&c->labels[*n], 0, sizeof(c->labels[*n]));
		c->labels[*n].key = k;
		c->labels[*n].str = v;
		(*n)++;
	}
	return 0;
}

/* The pprof labels of a sample's attributes, as merge indexes, into c->labels. */
static int
sample_labels(struct conv *c, struct merge *m, const Otlp__Sample *s, size_t *n)
{
	struct buf val = { 0 };
	size_t i;
	int rc = 0;

	*n = 0;
	for (i = 0; i < s->n_attribute_indices && rc == 0; i++) {
		const Otlp__KeyValueAndUnit *a;
		struct pf_label *pl;
		int64_t k;

		if (s->attribute_indices[i] < 0 ||
		    (size_t)s->attribute_indices[i] >= NTAB(attribute_table)) {
			/* Releases v1.8.0 to v1.10.0 had Sample.values where v1.11.0 has these. */
			rc = cfail(c, "a sample's attribute index %" PRId32 " is out of range (the "
			    "table has %zu entries): not an %s payload (before v1.11.0, Sample "
			    "field 2 held the values), or a broken one", s->attribute_indices[i],
			    NTAB(attribute_table), RELEASE);
			break;
		}
		if (s->attribute_indices[i] == 0)
			continue;
		a = c->d->attribute_table[s->attribute_indices[i]];
		if (a->value == NULL)
			continue;
		if (*n == LABELS_MAX) {
			rc = cfail(c, "a sample with more than %d attributes", LABELS_MAX);
			break;
		}
		pl = &c->labels[*n];
		memset(pl, 0, sizeof(*pl));
		if ((k = mstr(c, m, a->key_strindex)) < 0) {
			rc = (int)k;
			break;
		}
		pl->key = k;
		if (a->value->value_case == OTLP__ANY_VALUE__VALUE_INT_VALUE) {
			pl->num = a->value->int_value;
			if ((k = mstr(c, m, a->unit_strindex)) < 0) {
				rc = (int)k;
				break;
			}
			pl->num_unit = k;
		} else {
			buf_reset(&val);
			if ((rc = any_text(c, a->value, &val)) != 0) {
				rc = rc == 1 ? 0 : rc;
				continue;
			}
			if ((k = merge_string(m, val.data ? val.data : "")) < 0) {
				rc = (int)k;
				break;
			}
			pl->str = k;
		}
		if (pl->key != 0)
			(*n)++;
	}
	if (rc == 0 && s->link_index > 0)
		rc = link_labels(c, m, c->d->link_table[s->link_index], n);
	buf_free(&val);
	return rc;
}

/* One observation: value v of column col at time t, for sample s of group gi. */
static int
add_value(struct conv *c, size_t gi, size_t col, const Otlp__Sample *s, int64_t t, int64_t v,
    int64_t duration)
{
	const Otlp__Stack *st = NULL;
	int64_t values[PROFILE_MAX_SAMPLE_TYPES] = { 0 };
	struct bucket *b;
	size_t bi = 0, i, nl = 0, nlocs = 0;
	int64_t k;
	int rc;

	if (!store_time_sane(t, c->now))
		return cfail(c, "sample time %" PRId64 " ns is out of range (2000-01-01 to a day "
		    "from now)", t);
	if ((rc = bucket_find(c, gi, t, &bi)) < 0)
		return rc;
	b = &c->b[bi];
	if (s->stack_index) {
		st = c->d->stack_table[s->stack_index];
		nlocs = st->n_location_indices;
	}
	for (i = 0; i < nlocs; i++) {
		int32_t li = st->location_indices[i];

		if (check_index(c, li, NTAB(location_table), "location_table") < 0)
			return -EINVAL;
		if (li == 0)
			return cfail(c, "a stack refers to location 0, the zero value");
		if ((k = conv_location(c, bi, li)) < 0)
			return (int)k;
		c->locs[i] = (uint32_t)k;
	}
	if ((rc = sample_labels(c, b->m, s, &nl)) < 0)
		return rc;
	values[col] = v;
	if ((rc = merge_sample(b->m, c->locs, nlocs, c->labels, nl, values)) < 0)
		return rc;
	if (t < b->tmin)
		b->tmin = t;
	if (t > b->tmax)
		b->tmax = t;
	if (duration > b->duration)
		b->duration = duration;
	return 0;
}

/* The samples of profile pr (group gi, column col) into their buckets. */
static int
conv_samples(struct conv *c, const Otlp__Profile *pr, size_t gi, size_t col)
{
	int64_t ptime = (int64_t)pr->time_unix_nano, dur = (int64_t)pr->duration_nano;
	size_t i, j;
	int rc;

	if (pr->time_unix_nano > INT64_MAX || (ptime && !store_time_sane(ptime, c->now)))
		return cfail(c, "profile time_unix_nano %" PRIu64 " is out of range (2000-01-01 "
		    "to a day from now)", pr->time_unix_nano);
	if (ptime == 0)
		ptime = c->now;
	if (dur < 0)
		dur = 0;
	for (i = 0; i < pr->n_samples; i++) {
		const Otlp__Sample *s = pr->samples[i];
		int64_t sum = 0;

		if (check_index(c, s->stack_index, NTAB(stack_table), "stack_table") < 0 ||
		    check_index(c, s->link_index, NTAB(link_table), "link_table") < 0)
			return -EINVAL;
		if (s->stack_index &&
		    c->d->stack_table[s->stack_index]->n_location_indices > MAX_FRAMES)
			return cfail(c, "a stack of more than %u frames", MAX_FRAMES);
		if (s->n_timestamps_unix_nano == 0 && s->n_values == 0)
			return cfail(c, "a sample with neither values (field 4) nor timestamps (field "
			    "5): not an %s payload (before v1.11.0, Sample field 2 held the values), "
			    "or a broken one", RELEASE);
		if (s->n_timestamps_unix_nano == 0) {
			for (j = 0; j < s->n_values; j++)
				sum = profile_add(sum, s->values[j]);
			if ((rc = add_value(c, gi, col, s, ptime, sum, dur)) < 0)
				return rc;
			continue;
		}
		if (s->n_values && s->n_values != s->n_timestamps_unix_nano)
			return cfail(c, "a sample with %zu values and %zu timestamps: give one value "
			    "per timestamp, none (1 each), or no timestamps", s->n_values,
			    s->n_timestamps_unix_nano);
		for (j = 0; j < s->n_timestamps_unix_nano; j++) {
			uint64_t t = s->timestamps_unix_nano[j];

			if (t > INT64_MAX)
				return cfail(c, "sample time %" PRIu64 " ns is out of range", t);
			if ((rc = add_value(c, gi, col, s, (int64_t)t,
			    s->n_values ? s->values[j] : 1, 0)) < 0)
				return rc;
		}
	}
	return 0;
}

/* What the dictionary must be for any sample to be read. */
static int
check_dictionary(struct conv *c)
{
	const Otlp__ProfilesDictionary *d = c->d;
	size_t i;

	if (d == NULL)
		return cfail(c, "samples but no dictionary: an %s request carries its "
		    "ProfilesDictionary beside resource_profiles (field 2)", RELEASE);
	if (d->n_string_table == 0 || d->string_table[0][0] != '\0')
		return cfail(c, "dictionary string_table[0] must be \"\" (%s)", RELEASE);
	if ((c->loc_bucket = calloc(d->n_location_table + 1, sizeof(*c->loc_bucket))) == NULL ||
	    (c->loc_val = calloc(d->n_location_table + 1, sizeof(*c->loc_val))) == NULL ||
	    (c->map_lines = calloc(d->n_mapping_table + 1, sizeof(*c->map_lines))) == NULL ||
	    (c->locs = calloc(MAX_FRAMES, sizeof(*c->locs))) == NULL)
		return -ENOMEM;
	for (i = 0; i < d->n_location_table; i++) {
		int32_t mi = d->location_table[i]->mapping_index;

		if (check_index(c, mi, d->n_mapping_table, "mapping_table") < 0)
			return -EINVAL;
		if (d->location_table[i]->n_lines)
			c->map_lines[mi] = true;
	}
	return 0;
}

void
otlp_batch_free(struct otlp_batch *ob)
{
	size_t i;

	for (i = 0; i < ob->n; i++)
		profile_free(ob->p[i]);
	for (i = 0; i < ob->ngroups; i++) {
		free(ob->services[i]);
		labels_clear(&ob->ls[i]);
	}
	free(ob->p);
	free(ob->in);
	free(ob->services);
	free(ob->ls);
	memset(ob, 0, sizeof(*ob));
}

static void
conv_free(struct conv *c)
{
	size_t i;

	for (i = 0; i < c->nb; i++)
		merge_free(c->b[i].m);
	for (i = 0; i < c->ng; i++) {
		free(c->g[i].service);
		free(c->g[i].labels);
		labels_clear(&c->g[i].ls);
	}
	free(c->b);
	free(c->g);
	free(c->loc_bucket);
	free(c->loc_val);
	free(c->map_lines);
	free(c->locs);
}

/* The request req as profiles into ob (see otlp_decode()). */
static int
convert(const Otlp__ExportProfilesServiceRequest *req, struct otlp_batch *ob, struct buf *err)
{
	struct conv c;
	size_t i, j, k, scope = 0, nprof = 0, *pg = NULL, *pc = NULL, pi;
	bool any_samples = false;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	c.d = req->dictionary;
	c.err = err;
	c.now = clock_now_ns();
	for (i = 0; i < req->n_resource_profiles; i++)
		for (j = 0; j < req->resource_profiles[i]->n_scope_profiles; j++) {
			const Otlp__ScopeProfiles *sp = req->resource_profiles[i]->scope_profiles[j];

			nprof += sp->n_profiles;
			for (k = 0; k < sp->n_profiles; k++)
				any_samples |= sp->profiles[k]->n_samples > 0;
		}
	if (!any_samples)
		goto out;
	if ((rc = check_dictionary(&c)) < 0)
		goto out;
	if ((pg = calloc(nprof, sizeof(*pg))) == NULL || (pc = calloc(nprof, sizeof(*pc))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* First the groups and their columns (merge_begin() needs them all)... */
	pi = 0;
	for (i = 0; i < req->n_resource_profiles && rc == 0; i++) {
		const Otlp__ResourceProfiles *rp = req->resource_profiles[i];
		char *service = NULL;
		struct labelset rls = { .n = 0 };

		if (rp->resource && (rc = add_attrs(&c, rp->resource->attributes,
		    rp->resource->n_attributes, "resource", &rls, &service)) < 0)
			goto resource_done;
		if (service == NULL && (service = strdup("unknown_service")) == NULL) {
			rc = -ENOMEM;
			goto resource_done;
		}
		{
			struct buf why = { 0 };

			if (store_check_service_name(service, &why) < 0)
				rc = cfail(&c, "service.name \"%s\": %s", service,
				    http_why(&why, "not a valid service name"));
			buf_free(&why);
		}
		for (j = 0; j < rp->n_scope_profiles && rc == 0; j++, scope++) {
			const Otlp__ScopeProfiles *sp = rp->scope_profiles[j];

			for (k = 0; k < sp->n_profiles && rc == 0; k++, pi++) {
				const Otlp__Profile *pr = sp->profiles[k];
				struct labelset ls = { .n = 0 };
				const char *type, *unit;
				size_t m;

				pg[pi] = SIZE_MAX;
				if (pr->n_samples == 0)
					continue;
				if (pr->sample_type == NULL) {
					rc = cfail(&c, "a profile with samples but no sample_type (%s "
					    "has one ValueType per profile, field 1)", RELEASE);
					break;
				}
				if ((type = dstr(&c, pr->sample_type->type_strindex)) == NULL ||
				    (unit = dstr(&c, pr->sample_type->unit_strindex)) == NULL) {
					rc = -EINVAL;
					break;
				}
				if (type[0] == '\0') {
					rc = cfail(&c, "a profile whose sample_type has no type name");
					break;
				}
				rc = add_dict_attrs(&c, pr->attribute_indices, pr->n_attribute_indices,
				    &ls);
				if (rc == 0 && sp->scope)
					rc = add_attrs(&c, sp->scope->attributes,
					    sp->scope->n_attributes, "scope", &ls, NULL);
				for (m = 0; m < rls.n && rc == 0; m++) {
					size_t q;
					bool have = false;

					for (q = 0; q < ls.n && !have; q++)
						have = strcmp(ls.pairs[q].key, rls.pairs[m].key) == 0;
					if (!have && (rc = labels_add(&ls, rls.pairs[m].key,
					    rls.pairs[m].value, err)) == -EINVAL)
						buf_adds(err, " (resource, scope and profile attributes "
						    "together)");
				}
				if (rc == 0)
					rc = group_find(&c, scope, service, &ls, pr, &pg[pi]);
				if (rc == 0)
					rc = group_column(&c, &c.g[pg[pi]], type, unit, &pc[pi]);
				labels_clear(&ls);
			}
		}
resource_done:
		free(service);
		labels_clear(&rls);
	}
	/* ... then the samples into their windows. */
	pi = 0;
	for (i = 0; i < req->n_resource_profiles && rc == 0; i++)
		for (j = 0; j < req->resource_profiles[i]->n_scope_profiles && rc == 0; j++) {
			const Otlp__ScopeProfiles *sp = req->resource_profiles[i]->scope_profiles[j];

			for (k = 0; k < sp->n_profiles && rc == 0; k++, pi++)
				if (pg[pi] != SIZE_MAX)
					rc = conv_samples(&c, sp->profiles[k], pg[pi], pc[pi]);
		}
	if (rc < 0)
		goto out;
	/* The batch: one profile per bucket, its group's label set and service. */
	if ((ob->p = calloc(c.nb ? c.nb : 1, sizeof(*ob->p))) == NULL ||
	    (ob->in = calloc(c.nb ? c.nb : 1, sizeof(*ob->in))) == NULL ||
	    (ob->ls = calloc(c.ng ? c.ng : 1, sizeof(*ob->ls))) == NULL ||
	    (ob->services = calloc(c.ng ? c.ng : 1, sizeof(*ob->services))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < c.ng; i++) {
		ob->ls[i] = c.g[i].ls;
		c.g[i].ls.n = 0;
		ob->services[i] = c.g[i].service;
		c.g[i].service = NULL;
	}
	ob->ngroups = c.ng;
	for (i = 0; i < c.nb; i++) {
		struct bucket *b = &c.b[i];
		struct profile *p;

		if ((rc = merge_finish(b->m, false, &p)) < 0)
			goto out;
		p->time_nanos = b->tmin;
		p->duration_nanos = b->tmax > b->tmin ? b->tmax - b->tmin : b->duration;
		ob->p[ob->n] = p;
		ob->in[ob->n].service = ob->services[b->group];
		ob->in[ob->n].type = NULL;
		ob->in[ob->n].labels = &ob->ls[b->group];
		ob->in[ob->n].created_at = b->tmin;
		ob->in[ob->n].source = "otlp";
		ob->n++;
	}
out:
	if (rc == -ENOMEM && err->len == 0)
		buf_adds(err, "out of memory");
	free(pg);
	free(pc);
	conv_free(&c);
	return rc;
}

int
otlp_decode(const void *data, size_t len, bool json, struct otlp_batch *ob, struct buf *err)
{
	Otlp__ExportProfilesServiceRequest *req = NULL;
	ProtobufCAllocator alloc;
	struct pbctx pc = { 0 };
	struct buf pb = { 0 };
	int rc;

	memset(ob, 0, sizeof(*ob));
	if (json) {
		rc = pbjson_encode(&otlp__export_profiles_service_request__descriptor, data, len,
		    &json_limits, PBJSON_HEX_IDS, &pb, err);
		if (rc == -EFBIG && strstr(err->data, "nested") == NULL)
			buf_adds(err, "; send protobuf (application/x-protobuf) for larger requests");
		if (rc < 0)
			goto out;
		data = pb.data ? pb.data : "";
		len = pb.len;
	}
	if ((pc.arena = arena_create()) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	pc.budget = PROFILE_MAX_OBJECTS(len);
	alloc.alloc = pb_alloc;
	alloc.free = pb_free;
	alloc.allocator_data = &pc;
	req = otlp__export_profiles_service_request__unpack(&alloc, len, data);
	if (req == NULL) {
		if (pc.over) {
			buf_printf(err, "the request decodes to more than %zu bytes of messages",
			    pc.budget);
			rc = -EFBIG;
		} else if (pc.refused) {
			buf_printf(err, "no room in the memory budget (%zu MiB) for the request's "
			    "messages; try again", budget_limit() >> 20);
			rc = -ENOMEM;
		} else {
			buf_printf(err, "not an ExportProfilesServiceRequest of %s (truncated, "
			    "or fields of another layout)", RELEASE);
			rc = -EINVAL;
		}
		goto out;
	}
	rc = convert(req, ob, err);
out:
	if (rc < 0)
		otlp_batch_free(ob);
	arena_destroy(pc.arena);
	buf_free(&pb);
	return rc;
}

/* --- the handler --------------------------------------------------------- */

/*
 * Status (google.rpc.Status) in the request's encoding, with an HTTP status.
 * msg NULL (a message whose buffer the memory budget refused) says so.
 */
static void
reply_status(struct http_req *r, bool json, unsigned status, int code, const char *msg)
{
	struct buf b = { 0 };

	if (msg == NULL || msg[0] == '\0')
		msg = status >= 500 ? "the request failed on the server (no detail: out of memory)" :
		    "the request was refused (no detail: out of memory)";
	if (json) {
		json_t *doc = json_pack("{s:i,s:o}", "code", code, "message",
		    jsonw_strn(msg, strlen(msg)));

		if (jsonw_dump(&b, doc, JSON_COMPACT) < 0 || buf_addc(&b, '\n') < 0)
			buf_free(&b);
		json_decref(doc);
	} else {
		Otlp__Status st = OTLP__STATUS__INIT;
		struct buf m = { 0 };
		size_t n;

		/* protobuf strings are UTF-8: the message may quote the request's bytes. */
		if (utf8_repair(&m, msg, strlen(msg)) == 0) {
			st.code = code;
			st.message = m.data ? m.data : "";
			n = otlp__status__get_packed_size(&st);
			if (buf_reserve(&b, n) == 0) {
				otlp__status__pack(&st, (uint8_t *)b.data);
				b.len = n;
			}
		}
		buf_free(&m);
	}
	if (status >= 500)
		log_warnx("otlp: %u %s", status, msg);
	else
		log_debug("otlp: %u %s", status, msg);
	http_reply(r, status, b.data ? (json ? "application/json" : "application/x-protobuf") :
	    NULL, &b, NULL);
}

/*
 * The reply for a step's failure rc (gunzip, decode, store): what the step
 * was, and err's reason when it holds one. The memory budget's refusal is
 * 503 with Retry-After, as OTLP clients retry (the spec's retryable codes).
 */
static void
reply_rc(struct http_req *r, bool json, int rc, const char *what, const struct buf *err)
{
	char m[1024];
	const char *why = http_why(err, strerror(-rc));

	switch (rc) {
	case -EINVAL:
		snprintf(m, sizeof(m), "%s: %s", what, why);
		reply_status(r, json, 400, GRPC_INVALID_ARGUMENT, m);
		break;
	case -EFBIG:
		snprintf(m, sizeof(m), "%s: %s", what, why);
		reply_status(r, json, 413, GRPC_RESOURCE_EXHAUSTED, m);
		break;
	case -ENOMEM:
	case -EAGAIN:
		snprintf(m, sizeof(m), "%s: the server's memory budget (%zu MiB) is in use; try "
		    "again", what, budget_limit() >> 20);
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		reply_status(r, json, 503, GRPC_UNAVAILABLE, m);
		break;
	case -EIO:	/* storage that cannot answer now (a ClickHouse shard down) */
		http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "5");
		/* fallthrough */
	case -ENOSPC:
		snprintf(m, sizeof(m), "%s: %s", what, why);
		reply_status(r, json, 503, GRPC_UNAVAILABLE, m);
		break;
	default:
		snprintf(m, sizeof(m), "%s: %s", what, why);
		reply_status(r, json, 500, GRPC_INTERNAL, m);
		break;
	}
}

/* The media type of a Content-Type value, without parameters, is name. */
static bool
media_is(const char *ct, const char *name)
{
	size_t n = strlen(name);

	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, name, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/*
 * Traces, metrics and logs are at /v1/<signal>, so a client configured for
 * them (a Collector's otlphttp exporter given a profiles_endpoint of that
 * form, a hand-written curl) tries /v1/profiles: say where profiles are, in
 * the encoding it asked for, rather than a bare 404.
 */
void
otlp_elsewhere(struct http_req *r)
{
	const char *ct = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);

	reply_status(r, !(ct && (media_is(ct, "application/x-protobuf") ||
	    media_is(ct, "application/protobuf"))), 404, GRPC_NOT_FOUND,
	    "profiles are served at /v1development/profiles (OTLP profiles is in development, "
	    RELEASE "'s layout; traces, metrics and logs are not served)");
}

void
otlp_profiles(struct http_req *r)
{
	const char *ct = http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *ce = http_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
	size_t limit = r->srv->max_decoded ? r->srv->max_decoded : PROFILE_MAX_DECODED;
	struct otlp_batch ob = { 0 };
	struct buf plain = { 0 }, err = { 0 };
	struct store_ref *refs = NULL;
	const void *data = r->body.data ? r->body.data : "";
	size_t len = r->body.len;
	bool json;
	int rc;

	if (ct && media_is(ct, "application/json")) {
		json = true;
		/* JSON has its own, smaller limit: inflating stops there too. */
		if (limit > json_limits.max_text)
			limit = json_limits.max_text;
	} else if (ct && (media_is(ct, "application/x-protobuf") ||
	    media_is(ct, "application/protobuf")))
		json = false;
	else {
		buf_printf(&err, "Content-Type %s is not supported: send application/x-protobuf or "
		    "application/json (OTLP/HTTP, %s)", ct ? ct : "(none)", RELEASE);
		reply_status(r, true, 415, GRPC_INVALID_ARGUMENT, http_why(&err,
		    "Content-Type not supported: send application/x-protobuf or application/json"));
		goto out;
	}
	if (ce && ce[0] && strcasecmp(ce, "identity") != 0) {
		if (strcasecmp(ce, "gzip") != 0) {
			buf_printf(&err, "Content-Encoding %s is not supported: send gzip or none", ce);
			reply_status(r, json, 415, GRPC_INVALID_ARGUMENT, http_why(&err,
			    "Content-Encoding not supported: send gzip or none"));
			goto out;
		}
		if (!profile_is_gzip(data, len)) {
			reply_status(r, json, 400, GRPC_INVALID_ARGUMENT,
			    "Content-Encoding gzip but the body is not gzip data");
			goto out;
		}
		/* Inflated no further than the limit: a bomb costs that, not its ratio. */
		if ((rc = profile_gunzip_max(data, len, limit, &plain, &err)) < 0) {
			/* What was inflated goes before the reply is built. */
			buf_free(&plain);
			reply_rc(r, json, rc, "the gzip body", &err);
			goto out;
		}
		data = plain.data ? plain.data : "";
		len = plain.len;
	}
	if (len > limit) {
		buf_printf(&err, "the request is %zu bytes, over the limit of %zu bytes", len, limit);
		reply_status(r, json, 413, GRPC_RESOURCE_EXHAUSTED, http_why(&err,
		    "the request is over the limit of its decoded size"));
		goto out;
	}
	if ((rc = otlp_decode(data, len, json, &ob, &err)) < 0) {
		otlp_batch_free(&ob);
		buf_free(&plain);
		reply_rc(r, json, rc, "the request", &err);
		goto out;
	}
	if (ob.n) {
		if ((refs = calloc(ob.n, sizeof(*refs))) == NULL) {
			reply_status(r, json, 500, GRPC_INTERNAL, "out of memory");
			goto out;
		}
		r->stored = true;	/* the store counts each profile */
		if ((rc = store_put_profiles(r->srv->st, ob.in, (const struct profile *const *)ob.p,
		    ob.n, refs, &err)) < 0) {
			reply_rc(r, json, rc, "failed to store the profiles", &err);
			goto out;
		}
	}
	/* ExportProfilesServiceResponse without partial_success: everything was stored. */
	{
		struct buf b = { 0 };

		if (json && buf_adds(&b, "{}\n") < 0) {
			reply_status(r, json, 500, GRPC_INTERNAL, "out of memory");
			goto out;
		}
		http_reply(r, 200, json ? "application/json" : "application/x-protobuf", &b, NULL);
	}
out:
	otlp_batch_free(&ob);
	free(refs);
	buf_free(&plain);
	buf_free(&err);
}
