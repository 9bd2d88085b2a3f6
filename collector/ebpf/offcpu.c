/*
 * offcpu: drains offcpu_aggs, the off-CPU waits added up by bpf/profile.bpf.c
 * (see offcpu.h). A drain moves offcpu_gen on, reads the whole map in
 * batches (one system call per OFFCPU_BATCH entries, not one per entry),
 * hands the entries of the generations before the one it just left to the
 * caller and deletes them in one batch. Entries of the generation just left
 * stay for the next drain: a program that read it may still be adding to
 * them. So a wait is drained one to two drain intervals after it ended.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base.h"
#include "offcpu.h"

#define OFFCPU_BATCH	32	/* entries read per system call (about 180 KiB) */
#define OFFCPU_EXITS	1024	/* exited processes held back at most */

struct exited {
	uint32_t	 pid;
	uint32_t	 drains;	/* drains since the exit */
};

struct offcpu {
	int			 fd;
	volatile uint32_t	*gen;
	struct prof_offcpu_key	*keys;	/* OFFCPU_BATCH */
	struct prof_offcpu_val	*vals;	/* OFFCPU_BATCH */
	struct prof_offcpu_key	*dels;	/* keys drained, to delete */
	size_t			 ndels, dels_cap;
	struct exited		 exits[OFFCPU_EXITS];
	size_t			 nexits;
};

struct offcpu *
offcpu_create(int aggs_fd, volatile uint32_t *gen)
{
	struct offcpu *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	o->fd = aggs_fd;
	o->gen = gen;
	o->keys = calloc(OFFCPU_BATCH, sizeof(*o->keys));
	o->vals = calloc(OFFCPU_BATCH, sizeof(*o->vals));
	if (o->keys == NULL || o->vals == NULL) {
		offcpu_destroy(o);
		return NULL;
	}
	return o;
}

void
offcpu_destroy(struct offcpu *o)
{
	if (o == NULL)
		return;
	free(o->keys);
	free(o->vals);
	free(o->dels);
	free(o);
}

static int
dels_add(struct offcpu *o, const struct prof_offcpu_key *k)
{
	if (o->ndels == o->dels_cap) {
		size_t cap = o->dels_cap ? 2 * o->dels_cap : 256;
		struct prof_offcpu_key *d = reallocarray(o->dels, cap, sizeof(*d));

		if (d == NULL)
			return -ENOMEM;
		o->dels = d;
		o->dels_cap = cap;
	}
	o->dels[o->ndels++] = *k;
	return 0;
}

int
offcpu_drain(struct offcpu *o, bool all, void (*add)(void *arg, struct prof_offcpu_val *v),
    void (*forget)(void *arg, uint32_t pid), void *arg)
{
	uint64_t in = 0, out = 0;	/* batch positions (a bucket number for a hash map) */
	uint32_t cur = *o->gen, count, i, ndel;
	bool first = true, done = false;
	size_t k;
	int rc = 0;

	/* From now on, waits that end go to the next generation. */
	__atomic_store_n(o->gen, cur + 1, __ATOMIC_RELEASE);
	o->ndels = 0;
	while (!done) {
		count = OFFCPU_BATCH;
		if (bpf_map_lookup_batch(o->fd, first ? NULL : &in, &out, o->keys, o->vals,
		    &count, NULL) < 0) {
			if (errno != ENOENT) {
				rc = -errno;
				break;
			}
			done = true;	/* the last batch, maybe with entries */
		}
		first = false;
		in = out;
		for (i = 0; i < count && i < OFFCPU_BATCH; i++) {
			/* Generations wrap around after 2^32 drains: compare as a distance. */
			if (!all && (int32_t)(o->keys[i].gen - cur) >= 0)
				continue;
			if (dels_add(o, &o->keys[i]) < 0) {
				rc = -ENOMEM;
				done = true;
				break;
			}
			add(arg, &o->vals[i]);
		}
	}
	/* Deleted, or they would be counted again at the next drain. */
	for (k = 0; k < o->ndels; k += ndel) {
		uint32_t want = (uint32_t)(o->ndels - k < 4096 ? o->ndels - k : 4096);

		ndel = want;
		if (bpf_map_delete_batch(o->fd, &o->dels[k], &ndel, NULL) < 0) {
			if (ndel > want)
				ndel = 0;
			for (i = ndel; i < want; i++)
				bpf_map_delete_elem(o->fd, &o->dels[k + i]);
			ndel = want;
		}
	}
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
	if (o->nexits == OFFCPU_EXITS)
		return false;
	o->exits[o->nexits].pid = pid;
	o->exits[o->nexits].drains = 0;
	o->nexits++;
	return true;
}
