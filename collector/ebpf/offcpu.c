/*
 * offcpu: drains offcpu_aggs, offcpu_stacks and offcpu_threads, the off-CPU
 * waits added up by bpf/profile.bpf.c (see offcpu.h). A drain moves
 * offcpu_gen on, reads the small entries of offcpu_aggs and offcpu_threads
 * in batches (one system call per OFFCPU_BATCH entries, not one per entry),
 * hands the entries of the generations before the one it just left to the
 * caller, each with its stack, its time and count scaled so that a
 * thread's stacks of a generation add up to the thread's exact time and
 * waits of that generation (one factor for all of them: their shares are
 * the sampled ones), and deletes them and their stacks in batches. A
 * thread's exact time with no sampled stack in its generation (the waits
 * after its last sampled one, moved out when it exited) is handed over as
 * a sample of no stack (named [unknown] under its process). Entries of the
 * generation just left stay for the next drain: a program that read it may
 * still be adding to them. So a wait is drained one to two drain intervals
 * after it ended. A stack is read from offcpu_stacks only when it is not
 * held here already (by its hash: the same frames give the same hash, in
 * any thread or generation), and held packed (the frames used, not the
 * fixed arrays) until it has not been waited in for OFFCPU_KEEP drains.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base.h"
#include "offcpu.h"

#define OFFCPU_BATCH	256	/* entries read per system call (about 18 KiB) */
#define OFFCPU_BUCKETS	4096	/* of the stack cache, a power of two */
#define OFFCPU_HELD_MAX	16384	/* stacks held at most */
#define OFFCPU_KEEP	12	/* drains a stack is held without a wait in it */
#define OFFCPU_DEL_MAX	4096	/* keys deleted per system call */

struct exited {
	uint32_t	 pid;
	uint32_t	 drains;	/* drains since the exit */
};

/*
 * A stack held: the sample's bytes up to kstack, then nk kernel and nu user
 * frames, then its runtime part's used bytes (prof_sample_size).
 */
struct held {
	struct held	*next;		/* in its bucket */
	uint64_t	 hash;
	uint64_t	 used;		/* the drain that last had a wait in it */
	uint32_t	 nk, nu;
	uint32_t	 rt_len;	/* bytes of the runtime part */
	uint32_t	 size;		/* of data */
	unsigned char	 data[];
};

/* One drained entry: its key and value. */
struct entry {
	struct prof_offcpu_key	 k;
	struct prof_offcpu_val	 v;
};

/* One drained thread entry, and the sums of its sampled stacks' values and counts. */
struct tent {
	struct prof_offcpu_tkey	 k;
	struct prof_offcpu_tval	 v;
	double			 ns, waits;
};

struct offcpu {
	int			 fd, sfd, tfd;
	uint32_t		 cap;		/* entries of offcpu_aggs */
	volatile uint32_t	*gen;
	volatile __u64		*added;
	uint64_t		 added_seen;	/* *added at the last drain */
	uint64_t		 drains;
	uint64_t		 lost;
	struct prof_offcpu_key	*keys;		/* OFFCPU_BATCH */
	struct prof_offcpu_val	*vals;		/* OFFCPU_BATCH */
	struct entry		*ents;		/* entries drained */
	size_t			 nents, ents_cap;
	struct prof_offcpu_tkey	*tkeys;		/* OFFCPU_BATCH */
	struct prof_offcpu_tval	*tvals;		/* OFFCPU_BATCH */
	struct tent		*tents;		/* thread entries drained, sorted by key */
	size_t			 ntents, tents_cap;
	struct prof_offcpu_tkey	*tdels;		/* their keys, to delete */
	struct prof_offcpu_key	*dels;		/* their keys, to delete */
	struct prof_offcpu_skey	*sdels;		/* their stacks' keys, to delete */
	size_t			 dels_cap;
	struct prof_sample	*s;		/* the sample handed to add */
	struct held		*buckets[OFFCPU_BUCKETS];
	size_t			 nheld, held_bytes;
	struct exited		 exits[OFFCPU_EXITS_HELD];
	size_t			 nexits;
};

struct offcpu *
offcpu_create(int aggs_fd, int stacks_fd, int threads_fd, uint32_t aggs_cap,
    volatile uint32_t *gen, volatile __u64 *added)
{
	struct offcpu *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	o->fd = aggs_fd;
	o->sfd = stacks_fd;
	o->tfd = threads_fd;
	o->cap = aggs_cap;
	o->gen = gen;
	o->added = added;
	o->added_seen = __atomic_load_n(added, __ATOMIC_RELAXED);
	o->keys = calloc(OFFCPU_BATCH, sizeof(*o->keys));
	o->vals = calloc(OFFCPU_BATCH, sizeof(*o->vals));
	o->tkeys = calloc(OFFCPU_BATCH, sizeof(*o->tkeys));
	o->tvals = calloc(OFFCPU_BATCH, sizeof(*o->tvals));
	o->s = calloc(1, sizeof(*o->s));
	if (o->keys == NULL || o->vals == NULL || o->tkeys == NULL || o->tvals == NULL ||
	    o->s == NULL) {
		offcpu_destroy(o);
		return NULL;
	}
	return o;
}

void
offcpu_destroy(struct offcpu *o)
{
	struct held *h, *next;
	size_t b;

	if (o == NULL)
		return;
	for (b = 0; b < OFFCPU_BUCKETS; b++)
		for (h = o->buckets[b]; h != NULL; h = next) {
			next = h->next;
			free(h);
		}
	free(o->keys);
	free(o->vals);
	free(o->ents);
	free(o->dels);
	free(o->sdels);
	free(o->tkeys);
	free(o->tvals);
	free(o->tents);
	free(o->tdels);
	free(o->s);
	free(o);
}

bool
offcpu_due(const struct offcpu *o)
{
	return __atomic_load_n(o->added, __ATOMIC_RELAXED) - o->added_seen >= o->cap / 4;
}

uint64_t
offcpu_lost(const struct offcpu *o)
{
	return o->lost;
}

size_t
offcpu_cached(const struct offcpu *o, size_t *bytes)
{
	*bytes = o->held_bytes;
	return o->nheld;
}

static struct held **
held_slot(struct offcpu *o, uint64_t hash)
{
	struct held **hp = &o->buckets[(hash ^ (hash >> 32)) & (OFFCPU_BUCKETS - 1)];

	while (*hp != NULL && (*hp)->hash != hash)
		hp = &(*hp)->next;
	return hp;
}

/* Frames of s as the BPF side wrote them, bounded by the arrays. */
static void
frame_counts(const struct prof_sample *s, uint32_t *nk, uint32_t *nu)
{
	*nk = s->kstack_len > 0 ? (uint32_t)s->kstack_len / 8 : 0;
	*nu = s->ustack_len > 0 ? (uint32_t)s->ustack_len / 8 : 0;
	if (*nk > PROF_MAX_STACK)
		*nk = PROF_MAX_STACK;
	if (*nu > PROF_MAX_USTACK)
		*nu = PROF_MAX_USTACK;
}

/* Hold s (its stack) by hash, packed. Without memory or room, it is just not held. */
static void
held_add(struct offcpu *o, uint64_t hash, const struct prof_sample *s)
{
	uint32_t nk, nu, rt_len = prof_sample_size(s) - (uint32_t)PROF_SAMPLE_BASE;
	size_t head = offsetof(struct prof_sample, kstack), size;
	struct held **hp, *h;
	unsigned char *d;

	if (o->nheld >= OFFCPU_HELD_MAX || *(hp = held_slot(o, hash)) != NULL)
		return;
	frame_counts(s, &nk, &nu);
	size = head + ((size_t)nk + nu) * sizeof(uint64_t) + rt_len;
	if ((h = malloc(sizeof(*h) + size)) == NULL)
		return;
	h->next = NULL;
	h->hash = hash;
	h->used = o->drains;
	h->nk = nk;
	h->nu = nu;
	h->rt_len = rt_len;
	h->size = (uint32_t)size;
	d = h->data;
	memcpy(d, s, head);
	d += head;
	memcpy(d, s->kstack, nk * sizeof(uint64_t));
	d += nk * sizeof(uint64_t);
	memcpy(d, s->ustack, nu * sizeof(uint64_t));
	d += nu * sizeof(uint64_t);
	memcpy(d, (const unsigned char *)s + PROF_SAMPLE_BASE, rt_len);
	*hp = h;
	o->nheld++;
	o->held_bytes += sizeof(*h) + size;
}

/* The stack held into s. */
static void
held_unpack(const struct held *h, struct prof_sample *s)
{
	size_t head = offsetof(struct prof_sample, kstack);
	const unsigned char *d = h->data;

	memcpy(s, d, head);
	d += head;
	memcpy(s->kstack, d, h->nk * sizeof(uint64_t));
	d += h->nk * sizeof(uint64_t);
	memcpy(s->ustack, d, h->nu * sizeof(uint64_t));
	d += h->nu * sizeof(uint64_t);
	memcpy((unsigned char *)s + PROF_SAMPLE_BASE, d, h->rt_len);
}

/* Let go of the stacks no wait has come in for OFFCPU_KEEP drains (all: every one). */
static void
held_expire(struct offcpu *o, bool all)
{
	struct held **hp, *h;
	size_t b;

	for (b = 0; b < OFFCPU_BUCKETS; b++)
		for (hp = &o->buckets[b]; (h = *hp) != NULL;) {
			if (all || o->drains - h->used >= OFFCPU_KEEP) {
				*hp = h->next;
				o->nheld--;
				o->held_bytes -= sizeof(*h) + h->size;
				free(h);
			} else {
				hp = &h->next;
			}
		}
}

static int
ents_add(struct offcpu *o, const struct prof_offcpu_key *k, const struct prof_offcpu_val *v)
{
	if (o->nents == o->ents_cap) {
		size_t cap = o->ents_cap ? 2 * o->ents_cap : 256;
		struct entry *e = reallocarray(o->ents, cap, sizeof(*e));

		if (e == NULL)
			return -ENOMEM;
		o->ents = e;
		o->ents_cap = cap;
	}
	o->ents[o->nents].k = *k;
	o->ents[o->nents].v = *v;
	o->nents++;
	return 0;
}

static int
skey_cmp(const void *a, const void *b)
{
	const struct prof_offcpu_skey *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

/* Delete n keys of size ksize at keys from fd: in batches, one by one where a batch fails. */
static void
delete_keys(int fd, void *keys, size_t ksize, size_t n)
{
	uint32_t want, done, i;
	size_t k;

	for (k = 0; k < n; k += want) {
		want = (uint32_t)(n - k < OFFCPU_DEL_MAX ? n - k : OFFCPU_DEL_MAX);
		done = want;
		if (bpf_map_delete_batch(fd, (char *)keys + k * ksize, &done, NULL) < 0) {
			if (done > want)
				done = 0;
			for (i = done; i < want; i++)
				bpf_map_delete_elem(fd, (char *)keys + (k + i) * ksize);
		}
	}
}

/* Read the entries of the generations before cur (all: every one) into o->ents. */
static int
read_entries(struct offcpu *o, uint32_t cur, bool all)
{
	uint64_t in = 0, out = 0;	/* batch positions (a bucket number for a hash map) */
	uint32_t count, i;
	bool first = true, done = false;

	o->nents = 0;
	while (!done) {
		count = OFFCPU_BATCH;
		if (bpf_map_lookup_batch(o->fd, first ? NULL : &in, &out, o->keys, o->vals,
		    &count, NULL) < 0) {
			if (errno != ENOENT)
				return -errno;
			done = true;	/* the last batch, maybe with entries */
		}
		first = false;
		in = out;
		for (i = 0; i < count && i < OFFCPU_BATCH; i++) {
			/* Generations wrap around after 2^32 drains: compare as a distance. */
			if (!all && (int32_t)(o->keys[i].gen - cur) >= 0)
				continue;
			if (ents_add(o, &o->keys[i], &o->vals[i]) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

static int
tkey_cmp(const void *a, const void *b)
{
	const struct prof_offcpu_tkey *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Read offcpu_threads' entries of the generations before cur (all: every one) into o->tents, sorted. */
static int
read_threads(struct offcpu *o, uint32_t cur, bool all)
{
	uint64_t in = 0, out = 0;
	uint32_t count, i;
	bool first = true, done = false;

	o->ntents = 0;
	while (!done) {
		count = OFFCPU_BATCH;
		if (bpf_map_lookup_batch(o->tfd, first ? NULL : &in, &out, o->tkeys, o->tvals,
		    &count, NULL) < 0) {
			if (errno != ENOENT)
				return -errno;
			done = true;
		}
		first = false;
		in = out;
		for (i = 0; i < count && i < OFFCPU_BATCH; i++) {
			if (!all && (int32_t)(o->tkeys[i].gen - cur) >= 0)
				continue;
			if (o->ntents == o->tents_cap) {
				size_t cap = o->tents_cap ? 2 * o->tents_cap : 256;
				struct tent *t = reallocarray(o->tents, cap, sizeof(*t));
				struct prof_offcpu_tkey *d = reallocarray(o->tdels, cap, sizeof(*d));

				if (t != NULL)
					o->tents = t;
				if (d != NULL)
					o->tdels = d;
				if (t == NULL || d == NULL)
					return -ENOMEM;
				o->tents_cap = cap;
			}
			o->tents[o->ntents].k = o->tkeys[i];
			o->tents[o->ntents].v = o->tvals[i];
			o->tents[o->ntents].ns = 0;
			o->tents[o->ntents].waits = 0;
			o->ntents++;
		}
	}
	if (o->ntents > 1)
		qsort(o->tents, o->ntents, sizeof(*o->tents), tkey_cmp);
	return 0;
}

/* The thread entry of the drained entry k, or NULL. */
static struct tent *
tent_of(struct offcpu *o, const struct prof_offcpu_key *k)
{
	struct prof_offcpu_tkey tk;

	memset(&tk, 0, sizeof(tk));
	tk.pid = k->pid;
	tk.tid = k->tid;
	tk.gen = k->gen;
	/* (struct tent starts with its key.) */
	return bsearch(&tk, o->tents, o->ntents, sizeof(*o->tents), tkey_cmp);
}

/* An entry's value and count (in waits) scaled to its thread's exact figures t, if any. */
static void
scale(const struct tent *t, const struct prof_offcpu_val *v, uint64_t *ns, uint64_t *waits)
{
	double w = (double)v->waits / PROF_OFFCPU_ONE;

	*ns = v->ns;
	if (t != NULL && t->ns > 0)
		*ns = (uint64_t)((double)v->ns * (double)t->v.ns / t->ns + 0.5);
	if (t != NULL && t->waits > 0)
		w = (double)v->waits * (double)t->v.waits / t->waits;
	*waits = (uint64_t)(w + 0.5);
}

int
offcpu_drain(struct offcpu *o, bool all, void (*add)(void *arg, struct prof_sample *s,
    uint64_t waits, uint32_t exec), void (*forget)(void *arg, uint32_t pid), void *arg)
{
	uint32_t cur = *o->gen;
	struct prof_sample *s = o->s;
	const struct entry *en;
	struct prof_offcpu_skey sk;
	struct held *h;
	struct tent *t;
	uint64_t ns, waits;
	size_t k, j, nsdel;
	int rc, trc;

	/* From now on, waits that end go to the next generation. */
	__atomic_store_n(o->gen, cur + 1, __ATOMIC_RELEASE);
	o->added_seen = __atomic_load_n(o->added, __ATOMIC_RELAXED);
	o->drains++;
	/* Threads first: their entries of a generation are moved out with its stacks' (or after). */
	if ((trc = read_threads(o, cur, all)) < 0)
		o->ntents = 0;
	rc = read_entries(o, cur, all);
	if (rc == 0)
		rc = trc;
	for (k = 0; k < o->nents; k++)
		if ((t = tent_of(o, &o->ents[k].k)) != NULL) {
			t->ns += (double)o->ents[k].v.ns;
			t->waits += (double)o->ents[k].v.waits;
		}
	if (o->nents > o->dels_cap) {
		struct prof_offcpu_key *d = reallocarray(o->dels, o->nents, sizeof(*d));
		struct prof_offcpu_skey *sd;

		if (d != NULL)
			o->dels = d;
		sd = reallocarray(o->sdels, o->nents, sizeof(*sd));
		if (sd != NULL)
			o->sdels = sd;
		if (d == NULL || sd == NULL) {
			/* Left in the map for the next drain. */
			o->nents = 0;
			rc = -ENOMEM;
		} else {
			o->dels_cap = o->nents;
		}
	}
	for (k = 0, nsdel = 0; k < o->nents; k++) {
		en = &o->ents[k];
		o->dels[k] = en->k;
		memset(&sk, 0, sizeof(sk));
		sk.stack = en->k.stack;
		sk.gen = en->k.gen;
		o->sdels[nsdel++] = sk;
		if (en->v.waits == 0 && en->v.ns == 0)
			continue;
		if ((h = *held_slot(o, en->k.stack)) != NULL) {
			held_unpack(h, s);
			h->used = o->drains;
		} else if (bpf_map_lookup_elem(o->sfd, &sk, s) == 0) {
			held_add(o, en->k.stack, s);
		} else {
			o->lost++;
			continue;
		}
		s->hdr.kind = PROF_EV_OFFCPU;
		s->hdr.pid = en->k.pid;
		s->hdr.tid = en->k.tid;
		s->wake = 0;
		scale(tent_of(o, &en->k), &en->v, &ns, &waits);
		s->offcpu_ns = ns;
		memcpy(s->comm, en->v.comm, sizeof(s->comm));
		memcpy(s->leader_comm, en->v.leader_comm, sizeof(s->leader_comm));
		add(arg, s, waits, en->k.exec);
	}
	/* Threads' time with no sampled stack in its generation: a sample of no stack. */
	for (k = 0; k < o->ntents; k++) {
		t = &o->tents[k];
		o->tdels[k] = t->k;
		if (t->ns > 0 || t->waits > 0 || (t->v.ns == 0 && t->v.waits == 0))
			continue;
		memset(s, 0, offsetof(struct prof_sample, kstack));
		s->hdr.kind = PROF_EV_OFFCPU;
		s->hdr.pid = t->k.pid;
		s->hdr.tid = t->k.tid;
		s->rt = PROF_RT_NONE;
		s->offcpu_ns = t->v.ns;
		memcpy(s->comm, t->v.comm, sizeof(s->comm));
		memcpy(s->leader_comm, t->v.leader_comm, sizeof(s->leader_comm));
		add(arg, s, t->v.waits, OFFCPU_EXEC_ANY);
	}
	delete_keys(o->tfd, o->tdels, sizeof(*o->tdels), o->ntents);
	/* Deleted, or they would be counted again at the next drain; each stack once. */
	delete_keys(o->fd, o->dels, sizeof(*o->dels), o->nents);
	if (nsdel > 1)
		qsort(o->sdels, nsdel, sizeof(*o->sdels), skey_cmp);
	for (k = 1, j = nsdel > 0; k < nsdel; k++)
		if (skey_cmp(&o->sdels[k], &o->sdels[j - 1]) != 0)
			o->sdels[j++] = o->sdels[k];
	nsdel = j;
	delete_keys(o->sfd, o->sdels, sizeof(*o->sdels), nsdel);
	held_expire(o, false);
	/* Processes whose waits are all drained now: ended a drain before this one's start. */
	for (k = 0; k < o->nexits;) {
		if (all || ++o->exits[k].drains >= 2) {
			forget(arg, o->exits[k].pid);
			o->exits[k] = o->exits[--o->nexits];
		} else {
			k++;
		}
	}
	return rc;
}

bool
offcpu_exited(struct offcpu *o, uint32_t pid)
{
	if (o->nexits == OFFCPU_EXITS_HELD)
		return false;
	o->exits[o->nexits].pid = pid;
	o->exits[o->nexits].drains = 0;
	o->nexits++;
	return true;
}
