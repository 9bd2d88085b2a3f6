/*
 * shipped: what the shipper need not encode again. A stack's address in
 * ClickHouse is digest128() of its text (codec_stack()), and building that
 * text (escaping every name and file of every frame) was most of the
 * shipper's CPU. Here a stack gets a key of its own straight from the
 * decoded profile's tables, with no text: SipHash (1-3, 128-bit output,
 * keyed with random bytes drawn at start) over the very fields and index
 * equalities that codec_stack() writes, each string hashed once per profile
 * and each location once per profile. The same key means the same text, so
 * a table from key to address (struct shipped) gives the address of any
 * stack seen before, and whether this host has shipped its frames.
 *
 * The key never leaves the process (the random key changes at every start),
 * so nothing outside depends on it; an outsider who pushes profiles cannot
 * aim a collision at a key they cannot compute.
 *
 * struct shipped is bounded (SHIPPED_MAX entries, 64 bytes each, 4 ways per
 * bucket, the oldest replaced) and trusted only so far: an entry says
 * "shipped" for SHIPPED_TTL_S at most, and shipped_forget() (a new schema, a
 * new month's partition, a check that found frames missing in ClickHouse)
 * makes every stack count as not shipped at once. Its addresses stay valid:
 * a key's address does not change while the process lives. ClickHouse keeps
 * the frames of one address once (stacks_local is a ReplacingMergeTree by
 * address and frames), so another host shipping the same stack, or this
 * host shipping one again, adds nothing that reads count twice.
 *
 * Thread-safety: used by the shipper thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cluster_int.h"

#define ROTL(x, b)	(uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do {							\
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);	\
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;			\
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;			\
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);	\
	} while (0)

static uint64_t
le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	    (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
	    (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* SipHash-1-3 with its 128-bit output (the reference's layout). */
void
sip128(const uint64_t key[2], const void *data, size_t n, uint64_t out[2])
{
	const unsigned char *p = data, *end = p + (n & ~(size_t)7);
	uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ key[0];
	uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ key[1] ^ 0xee;
	uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ key[0];
	uint64_t v3 = UINT64_C(0x7465646279746573) ^ key[1];
	uint64_t b = (uint64_t)n << 56, m;
	int i;

	for (; p < end; p += 8) {
		m = le64(p);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (i = 0; i < (int)(n & 7); i++)
		b |= (uint64_t)p[i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xee;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	out[0] = v0 ^ v1 ^ v2 ^ v3;
	v1 ^= 0xdd;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	out[1] = v0 ^ v1 ^ v2 ^ v3;
}

/* --- the key of a stack ---------------------------------------------------- */

int
stackkey_begin(struct stackkey *k, const struct profile *p, const uint64_t key[2])
{
	memset(k, 0, sizeof(*k));
	k->p = p;
	k->key[0] = key[0];
	k->key[1] = key[1];
	/* One allocation: string hashes, location hashes, then the done flags. */
	k->strh = calloc(p->nstrings + p->nlocations + 1, sizeof(*k->strh) + 1);
	if (k->strh == NULL)
		return -ENOMEM;
	k->loch = k->strh + p->nstrings;
	k->done = (unsigned char *)(k->loch + p->nlocations + 1);
	return 0;
}

void
stackkey_end(struct stackkey *k)
{
	free(k->strh);
	buf_free(&k->tmp);
	buf_free(&k->st);
	memset(k, 0, sizeof(*k));
}

/* String i's hash (profile_str()'s string: "" out of range), once per profile. */
static const uint64_t *
str_hash(struct stackkey *k, int64_t i)
{
	static const uint64_t none[2];
	const char *s;

	if (i < 0 || (uint64_t)i >= k->p->nstrings)
		i = 0;
	if (k->p->nstrings == 0)
		return none;
	if (!k->done[i]) {
		s = profile_str(k->p, i);
		sip128(k->key, s, strlen(s), k->strh[i]);
		k->done[i] = 1;
	}
	return k->strh[i];
}

static void
put64(struct buf *b, uint64_t v)
{
	buf_add(b, &v, sizeof(v));
}

static void
put_str(struct stackkey *k, int64_t i)
{
	buf_add(&k->tmp, str_hash(k, i), 16);
}

/*
 * Location li's hash: what location() in codec.c writes of it, with the one
 * index equality it tests inside a location (a system name that is the
 * name's own string); the mapping's equality with the previous location's
 * is the stack's part.
 */
static const uint64_t *
loc_hash(struct stackkey *k, uint32_t li)
{
	const struct profile *p = k->p;
	const struct pf_location *l = &p->locations[li];
	unsigned char *done = k->done + p->nstrings;
	uint32_t j;

	if (done[li])
		return k->loch[li];
	buf_reset(&k->tmp);
	put64(&k->tmp, l->address);
	buf_addc(&k->tmp, l->is_folded ? 1 : 0);
	if (l->mapping && l->mapping <= p->nmappings) {
		const struct pf_mapping *m = &p->mappings[l->mapping - 1];

		buf_addc(&k->tmp, 1);
		put64(&k->tmp, m->start);
		put64(&k->tmp, m->limit);
		put64(&k->tmp, m->offset);
		buf_addc(&k->tmp, (m->has_functions ? 1 : 0) | (m->has_filenames ? 2 : 0) |
		    (m->has_line_numbers ? 4 : 0) | (m->has_inline_frames ? 8 : 0));
		put_str(k, m->filename);
		put_str(k, m->build_id);
	} else
		buf_addc(&k->tmp, 0);
	put64(&k->tmp, l->nlines);
	for (j = 0; j < l->nlines; j++) {
		const struct pf_line *ln = &l->lines[j];
		const struct pf_function *f = ln->function < p->nfunctions ?
		    &p->functions[ln->function] : NULL;

		if (f) {
			bool same = f->system_name == f->name && f->name;

			buf_addc(&k->tmp, same ? 2 : 1);
			put_str(k, f->name);
			if (!same)
				put_str(k, f->system_name);
			put_str(k, f->filename);
			put64(&k->tmp, (uint64_t)f->start_line);
		} else
			buf_addc(&k->tmp, 0);
		put64(&k->tmp, (uint64_t)ln->line);
		put64(&k->tmp, (uint64_t)ln->column);
	}
	if (buf_error(&k->tmp))
		return NULL;
	sip128(k->key, k->tmp.data, k->tmp.len, k->loch[li]);
	done[li] = 1;
	return k->loch[li];
}

int
stackkey_stack(struct stackkey *k, const struct pf_sample *s, uint64_t out[2])
{
	const struct profile *p = k->p;
	struct buf *st = &k->st;
	const uint64_t *h;
	uint32_t i;

	/* loc_hash() uses tmp: the stack's bytes go to st (room made once per profile). */
	buf_reset(st);
	if (buf_reserve(st, (size_t)s->nlocs * 17 + 8 + (size_t)s->nlabels * 56) < 0)
		return -ENOMEM;
	for (i = 0; i < s->nlocs; i++) {
		uint32_t li = s->locs[i];
		unsigned char same;

		if (li >= p->nlocations)
			return -EINVAL;	/* codec_stack() refuses it too */
		if ((h = loc_hash(k, li)) == NULL)
			return -ENOMEM;
		/* codec_stack()'s SAME: this mapping is the previous location's. */
		same = i && s->locs[i - 1] < p->nlocations && p->locations[li].mapping &&
		    p->locations[li].mapping == p->locations[s->locs[i - 1]].mapping;
		/* Room was made above: no check per location. */
		memcpy(st->data + st->len, h, 16);
		st->data[st->len + 16] = (char)same;
		st->len += 17;
	}
	put64(st, s->nlabels);
	for (i = 0; i < s->nlabels; i++) {
		const struct pf_label *lb = &s->labels[i];

		buf_add(st, str_hash(k, lb->key), 16);
		buf_add(st, str_hash(k, lb->str ? lb->str : 0), 16);
		put64(st, (uint64_t)lb->num);
		buf_add(st, str_hash(k, lb->num_unit), 16);
	}
	if (buf_error(st))
		return -ENOMEM;
	sip128(k->key, st->data, st->len, out);
	return 0;
}

/* --- the set of stacks shipped ----------------------------------------------- */

#define WAYS	4

struct shipped_entry {
	uint64_t	 key[2];
	char		 hex[DIGEST128_HEX];	/* the stack's address */
	uint32_t	 epoch;		/* shipped in this epoch (0: never) */
	uint32_t	 at;		/* when shipped, s of the table's clock */
	uint32_t	 used;		/* last looked up, s: the oldest is replaced */
	uint8_t		 valid;
};

struct shipped {
	struct shipped_entry	*e;
	size_t			 nbuckets, max, n;
	uint32_t		 epoch;
	int64_t			 t0;	/* clock_mono_ns() at creation */
	uint32_t		 now;	/* s since t0 (+ 1), as of shipped_tick() */
	uint64_t		 key[2];
};

static uint32_t
now_s(const struct shipped *t)
{
	return (uint32_t)((clock_mono_ns() - t->t0) / 1000000000) + 1;
}

void
shipped_tick(struct shipped *t)
{
	t->now = now_s(t);
}

struct shipped *
shipped_create(size_t max)
{
	struct shipped *t = xcalloc(1, sizeof(*t));
	unsigned char rnd[16];

	/* Random: getrandom() cannot fail for 16 bytes once the pool is ready. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t x = (uint64_t)clock_mono_ns() ^ (uint64_t)(uintptr_t)t;

		memcpy(rnd, &x, 8);
		x = hash_bytes(&x, 8);
		memcpy(rnd + 8, &x, 8);
	}
	t->key[0] = le64(rnd);
	t->key[1] = le64(rnd + 8);
	t->max = max < 4 * WAYS ? 4 * WAYS : max;
	t->nbuckets = 256;
	while (t->nbuckets * WAYS > t->max)
		t->nbuckets /= 2;
	t->e = xcalloc(t->nbuckets * WAYS, sizeof(*t->e));
	t->epoch = 1;
	t->t0 = clock_mono_ns();
	t->now = 1;
	return t;
}

void
shipped_free(struct shipped *t)
{
	if (t == NULL)
		return;
	free(t->e);
	free(t);
}

const uint64_t *
shipped_key(const struct shipped *t)
{
	return t->key;
}

static struct shipped_entry *
find(const struct shipped *t, const uint64_t key[2])
{
	struct shipped_entry *b = &t->e[(key[0] & (t->nbuckets - 1)) * WAYS];
	int i;

	for (i = 0; i < WAYS; i++)
		if (b[i].valid && b[i].key[0] == key[0] && b[i].key[1] == key[1])
			return &b[i];
	return NULL;
}

const char *
shipped_get(struct shipped *t, const uint64_t key[2], bool *is_shipped)
{
	struct shipped_entry *e = find(t, key);
	uint32_t now = t->now;

	*is_shipped = false;
	if (e == NULL)
		return NULL;
	e->used = now;
	*is_shipped = e->epoch == t->epoch && now - e->at < SHIPPED_TTL_S;
	return e->hex;
}

/* Twice the buckets, the entries placed again (none lost: twice the ways). */
static void
grow(struct shipped *t)
{
	struct shipped_entry *old = t->e;
	size_t i, nold = t->nbuckets * WAYS;

	t->nbuckets *= 2;
	t->e = xcalloc(t->nbuckets * WAYS, sizeof(*t->e));
	for (i = 0; i < nold; i++) {
		struct shipped_entry *b;
		int w;

		if (!old[i].valid)
			continue;
		b = &t->e[(old[i].key[0] & (t->nbuckets - 1)) * WAYS];
		for (w = 0; w < WAYS && b[w].valid; w++)
			;
		if (w < WAYS)
			b[w] = old[i];
	}
	free(old);
}

void
shipped_put(struct shipped *t, const uint64_t key[2], const char hex[DIGEST128_HEX])
{
	struct shipped_entry *b, *e;
	int i;

	if ((e = find(t, key)) != NULL)
		return;
	/*
	 * Half full, or this key's bucket full: twice the buckets while under
	 * max. Only a table at max replaces an entry (its bucket's least
	 * recently used): one that did earlier would go on replacing the
	 * stacks each profile needs.
	 */
	if (t->n * 2 >= t->nbuckets * WAYS && t->nbuckets * WAYS * 2 <= t->max)
		grow(t);
	for (;;) {
		b = &t->e[(key[0] & (t->nbuckets - 1)) * WAYS];
		for (i = 0; i < WAYS && b[i].valid; i++)
			;
		if (i < WAYS || t->nbuckets * WAYS * 2 > t->max)
			break;
		grow(t);
	}
	for (e = &b[0], i = 0; i < WAYS; i++) {
		if (!b[i].valid) {
			e = &b[i];
			t->n++;
			break;
		}
		if (b[i].used < e->used)
			e = &b[i];
	}
	memset(e, 0, sizeof(*e));
	e->key[0] = key[0];
	e->key[1] = key[1];
	memcpy(e->hex, hex, DIGEST128_HEX);
	e->used = t->now;
	e->valid = 1;
}

void
shipped_mark(struct shipped *t, const uint64_t key[2])
{
	struct shipped_entry *e = find(t, key);

	if (e) {
		e->epoch = t->epoch;
		e->at = t->now;
	}
}

void
shipped_forget(struct shipped *t)
{
	/* 0 is never an epoch: an entry with 0 was never shipped. */
	if (++t->epoch == 0)
		t->epoch = 1;
}

uint32_t
shipped_epoch(const struct shipped *t)
{
	return t->epoch;
}

size_t
shipped_count(const struct shipped *t)
{
	return t->n;
}

size_t
shipped_sample(const struct shipped *t, size_t max, size_t start, char (*hex)[DIGEST128_HEX])
{
	size_t i, n = 0, total = t->nbuckets * WAYS;
	uint32_t now = t->now;

	for (i = 0; i < total && n < max; i++) {
		const struct shipped_entry *e = &t->e[(start + i) % total];

		if (e->valid && e->epoch == t->epoch && now - e->at < SHIPPED_TTL_S)
			memcpy(hex[n++], e->hex, DIGEST128_HEX);
	}
	return n;
}
