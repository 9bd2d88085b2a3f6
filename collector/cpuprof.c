/*
 * cpuprof: per-period, per-service aggregation of eBPF samples into pprof.
 *
 * Each service keeps intern tables (base.h: intern) that give strings,
 * mappings, functions, locations and distinct samples their dense indexes as
 * they are first seen, and a count per distinct sample. At flush the tables
 * are turned into a struct profile (allocated in its own arena) and handed to
 * store_put_profile(); then everything starts over.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "cpuprof.h"

/* Strings every profile has, interned first so their indexes are fixed. */
enum { S_EMPTY, S_SAMPLES, S_COUNT, S_CPU, S_NANOS, S_PID, S_TID, S_COMM, S_KERNEL, S_NFIXED };
static const char *const fixed_strings[S_NFIXED] = {
	"", "samples", "count", "cpu", "nanoseconds", "pid", "tid", "comm", "[kernel]"
};

#define SAMPLE_KEY_MAX	(3 + 2 * 127 + 2)

struct mapkey {
	uint64_t	 start, limit, offset;
	int64_t		 file, build_id;	/* string indexes */
};

struct lockey {
	uint32_t	 map;		/* mapping index + 1, 0: none */
	uint32_t	 func;		/* function index, PF_NONE: unresolved */
	uint64_t	 addr;
};

struct cpuprof_svc {
	char		*service;
	struct labelset	 labels;
	struct intern	*strings, *maps, *funcs, *locs, *samples;
	int64_t		*counts;	/* per distinct sample */
	size_t		 ncounts;
	uint64_t	 total;
};

struct cpuprof {
	int64_t		 period;	/* ns per sample */
	struct intern	*keys;		/* service "\0" labels text -> svc index */
	struct cpuprof_svc **svcs;
	size_t		 nsvcs, cap;
};

struct cpuprof *
cpuprof_create(int hz)
{
	struct cpuprof *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->period = 1000000000LL / (hz > 0 ? hz : 1);
	if ((c->keys = intern_create(64)) == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

static void
svc_free(struct cpuprof_svc *s)
{
	if (s == NULL)
		return;
	free(s->service);
	labels_clear(&s->labels);
	intern_destroy(s->strings);
	intern_destroy(s->maps);
	intern_destroy(s->funcs);
	intern_destroy(s->locs);
	intern_destroy(s->samples);
	free(s->counts);
	free(s);
}

static void
reset(struct cpuprof *c)
{
	size_t i;

	for (i = 0; i < c->nsvcs; i++)
		svc_free(c->svcs[i]);
	c->nsvcs = 0;
	intern_destroy(c->keys);
	c->keys = intern_create(64);
}

void
cpuprof_destroy(struct cpuprof *c)
{
	if (c == NULL)
		return;
	reset(c);
	intern_destroy(c->keys);
	free(c->svcs);
	free(c);
}

static int64_t
str(struct cpuprof_svc *s, const char *v)
{
	return intern_put(s->strings, v, strlen(v), NULL);
}

static struct cpuprof_svc *
svc_new(const struct proc *p)
{
	struct cpuprof_svc *s = calloc(1, sizeof(*s));
	struct buf err = { 0 };
	size_t i;

	if (s == NULL)
		return NULL;
	if ((s->service = strdup(p->service)) == NULL ||
	    labels_parse(p->labels_text, &s->labels, &err) < 0 ||
	    (s->strings = intern_create(1024)) == NULL ||
	    (s->maps = intern_create(64)) == NULL ||
	    (s->funcs = intern_create(1024)) == NULL ||
	    (s->locs = intern_create(1024)) == NULL ||
	    (s->samples = intern_create(1024)) == NULL)
		goto fail;
	for (i = 0; i < S_NFIXED; i++)
		if (str(s, fixed_strings[i]) != (int64_t)i)
			goto fail;
	buf_free(&err);
	return s;
fail:
	buf_free(&err);
	svc_free(s);
	return NULL;
}

struct cpuprof_svc *
cpuprof_service(struct cpuprof *c, const struct proc *p)
{
	struct buf key = { 0 };
	struct cpuprof_svc *s = NULL;
	int added = 0;
	int64_t i;

	if (c->keys == NULL && (c->keys = intern_create(64)) == NULL)
		return NULL;	/* out of memory at the last reset: try again next time */
	if (buf_adds(&key, p->service) < 0 || buf_addc(&key, '\0') < 0 ||
	    buf_adds(&key, p->labels_text) < 0)
		goto out;
	if ((i = intern_put(c->keys, key.data, key.len, &added)) < 0)
		goto out;
	if (!added) {
		s = c->svcs[i];
		goto out;
	}
	c->svcs = xgrow(c->svcs, &c->cap, c->nsvcs + 1, sizeof(*c->svcs));
	if ((s = svc_new(p)) == NULL)
		goto undo;
	c->svcs[c->nsvcs++] = s;
	goto out;
undo:
	/* Out of memory with the key interned but no service behind it: drop the period. */
	reset(c);
out:
	buf_free(&key);
	return s;
}

int64_t
cpuprof_location(struct cpuprof_svc *s, const struct frame *f)
{
	struct lockey lk;
	int64_t i;

	memset(&lk, 0, sizeof(lk));
	lk.func = UINT32_MAX;
	lk.addr = f->addr;
	if (f->file) {
		struct mapkey mk;

		memset(&mk, 0, sizeof(mk));
		mk.start = f->start;
		mk.limit = f->limit;
		mk.offset = f->offset;
		if ((mk.file = str(s, f->file)) < 0 ||
		    (mk.build_id = str(s, f->build_id ? f->build_id : "")) < 0 ||
		    (i = intern_put(s->maps, &mk, sizeof(mk), NULL)) < 0)
			return -ENOMEM;
		lk.map = (uint32_t)i + 1;
	}
	if (f->func) {
		int64_t name = str(s, f->func);

		if (name < 0 || (i = intern_put(s->funcs, &name, sizeof(name), NULL)) < 0)
			return -ENOMEM;
		lk.func = (uint32_t)i;
	}
	return intern_put(s->locs, &lk, sizeof(lk), NULL);
}

int
cpuprof_sample(struct cpuprof_svc *s, const uint32_t *locs, size_t n, uint32_t pid,
    uint32_t tid, const char *comm)
{
	uint32_t key[SAMPLE_KEY_MAX];
	int64_t ci, i;
	int added = 0;

	if (n > SAMPLE_KEY_MAX - 3)
		n = SAMPLE_KEY_MAX - 3;
	if ((ci = str(s, comm)) < 0)
		return -ENOMEM;
	key[0] = pid;
	key[1] = tid;
	key[2] = (uint32_t)ci;
	memcpy(key + 3, locs, n * sizeof(*locs));
	if ((i = intern_put(s->samples, key, (3 + n) * sizeof(*key), &added)) < 0)
		return -ENOMEM;
	if ((size_t)i >= s->ncounts) {
		size_t old = s->ncounts;

		s->counts = xgrow(s->counts, &s->ncounts, (size_t)i + 1, sizeof(*s->counts));
		memset(s->counts + old, 0, (s->ncounts - old) * sizeof(*s->counts));
	}
	s->counts[i]++;
	s->total++;
	return 0;
}

/* Build the pprof profile of one service; the caller profile_free()s it. */
static int
build(const struct cpuprof *c, const struct cpuprof_svc *s, int64_t start, int64_t end,
    struct profile **out)
{
	struct profile *p;
	struct arena *a;
	uint32_t *order;
	size_t i, j, len, pass;
	int rc = -ENOMEM;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	if ((a = p->arena = arena_create()) == NULL)
		goto fail;

	p->nstrings = intern_count(s->strings);
	if ((p->strings = arena_calloc(a, p->nstrings, sizeof(*p->strings))) == NULL)
		goto fail;
	for (i = 0; i < p->nstrings; i++) {
		const void *k = intern_key(s->strings, i, &len);
		char *d = arena_alloc(a, len + 1);

		if (d == NULL)
			goto fail;
		memcpy(d, k, len);
		d[len] = '\0';
		p->strings[i] = d;
	}

	p->nsample_types = 2;
	if ((p->sample_types = arena_calloc(a, 2, sizeof(*p->sample_types))) == NULL)
		goto fail;
	p->sample_types[0].type = S_SAMPLES;
	p->sample_types[0].unit = S_COUNT;
	p->sample_types[1].type = S_CPU;
	p->sample_types[1].unit = S_NANOS;
	p->period_type.type = S_CPU;
	p->period_type.unit = S_NANOS;
	p->period = c->period;
	p->time_nanos = start;
	p->duration_nanos = end - start;

	/*
	 * File mappings before "[kernel]", "[jit]" and the like: pprof takes the
	 * first mapping for the main binary.
	 */
	p->nmappings = intern_count(s->maps);
	if ((p->mappings = arena_calloc(a, p->nmappings + 1, sizeof(*p->mappings))) == NULL ||
	    (order = arena_calloc(a, p->nmappings + 1, sizeof(*order))) == NULL)
		goto fail;
	for (pass = 0, j = 0; pass < 2; pass++)
	for (i = 0; i < p->nmappings; i++) {
		const struct mapkey *mk = intern_key(s->maps, i, &len);
		struct pf_mapping *m;

		if ((p->strings[mk->file][0] == '[') != (pass == 1))
			continue;
		order[i] = (uint32_t)j;
		m = &p->mappings[j++];
		m->start = mk->start;
		m->limit = mk->limit;
		m->offset = mk->offset;
		m->filename = mk->file;
		m->build_id = mk->build_id;
	}

	p->nfunctions = intern_count(s->funcs);
	if ((p->functions = arena_calloc(a, p->nfunctions + 1, sizeof(*p->functions))) == NULL)
		goto fail;
	for (i = 0; i < p->nfunctions; i++) {
		const int64_t *name = intern_key(s->funcs, i, &len);

		p->functions[i].name = *name;
		p->functions[i].system_name = *name;
	}

	p->nlocations = intern_count(s->locs);
	if ((p->locations = arena_calloc(a, p->nlocations + 1, sizeof(*p->locations))) == NULL)
		goto fail;
	for (i = 0; i < p->nlocations; i++) {
		const struct lockey *lk = intern_key(s->locs, i, &len);
		struct pf_location *l = &p->locations[i];

		l->mapping = lk->map ? order[lk->map - 1] + 1 : 0;
		l->address = lk->addr;
		if (lk->func != UINT32_MAX) {
			if ((l->lines = arena_calloc(a, 1, sizeof(*l->lines))) == NULL)
				goto fail;
			l->nlines = 1;
			l->lines[0].function = lk->func;
			if (lk->map)
				p->mappings[order[lk->map - 1]].has_functions = true;
		}
	}

	p->nsamples = intern_count(s->samples);
	if ((p->samples = arena_calloc(a, p->nsamples + 1, sizeof(*p->samples))) == NULL)
		goto fail;
	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *k = intern_key(s->samples, i, &len);
		struct pf_sample *sm = &p->samples[i];
		size_t n = len / sizeof(*k) - 3;

		sm->nlocs = (uint32_t)n;
		if ((sm->locs = arena_memdup(a, k + 3, (n ? n : 1) * sizeof(*k))) == NULL ||
		    (sm->values = arena_calloc(a, 2, sizeof(*sm->values))) == NULL ||
		    (sm->labels = arena_calloc(a, 3, sizeof(*sm->labels))) == NULL)
			goto fail;
		sm->values[0] = s->counts[i];
		sm->values[1] = s->counts[i] * c->period;
		sm->nlabels = 3;
		sm->labels[0].key = S_PID;
		sm->labels[0].num = k[0];
		sm->labels[1].key = S_TID;
		sm->labels[1].num = k[1];
		sm->labels[2].key = S_COMM;
		sm->labels[2].str = k[2];
	}
	*out = p;
	return 0;
fail:
	profile_free(p);
	return rc;
}

int
cpuprof_flush(struct cpuprof *c, struct store *st, int64_t start, int64_t end,
    size_t *profiles, uint64_t *samples)
{
	size_t i, ok = 0, failed = 0;
	int rc = 0;

	*profiles = 0;
	*samples = 0;
	for (i = 0; i < c->nsvcs; i++) {
		struct cpuprof_svc *s = c->svcs[i];
		struct store_input in = { .service = s->service, .type = "cpu",
		    .labels = &s->labels, .created_at = start, .source = "ebpf" };
		struct profile *p = NULL;
		struct buf err = { 0 };

		if (s->total == 0)
			continue;
		if ((rc = build(c, s, start, end, &p)) == 0)
			rc = store_put_profile(st, &in, p, NULL, &err);
		if (rc < 0) {
			log_warnx("ebpf: storing the profile of %s failed: %s", s->service,
			    err.len ? err.data : strerror(-rc));
			failed++;
		} else {
			ok++;
			*samples += s->total;
		}
		profile_free(p);
		buf_free(&err);
	}
	reset(c);
	*profiles = ok;
	if (c->keys == NULL)
		return -ENOMEM;
	return ok == 0 && failed > 0 ? rc : 0;
}
