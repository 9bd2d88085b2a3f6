/*
 * rbhostile: a process that maps Debian's libruby-3.1 (dlopen, so the
 * sampler takes it for a Ruby process) but never starts the VM: it points
 * its thread's ruby_current_ec at execution contexts it crafts, a new one
 * every 20 milliseconds from a fixed seed, and spins. Control frames
 * running off the end of the VM stack or into unmapped memory, iseqs that
 * are not, bodies with huge sizes, strings and arrays with huge or
 * negative lengths, succinct tables and positions of random words, loops
 * of pointers, C methods' entries whose names come from a symbol table it
 * writes over libruby's own (found as the sampler finds it): the sampler
 * must name what it can, mark the rest unreadable, and neither crash, hang
 * nor fall behind. Its spinning
 * function is named rb_vm_exec, so that the sampler puts (and names) the
 * crafted frames in its place as it does a real VM's.
 * Usage: rbhostile SECONDS (tests/integration/ebpf_ruby.sh).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORDS	(1u << 16)	/* the arena crafted structures live in */

static uint64_t arena[WORDS];
static uint64_t seed = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* An address in the arena (8-aligned, some room after it), or a hostile one. */
static uint64_t
ptr(void)
{
	switch (rnd() % 16) {
	case 0:
		return 0;
	case 1:
		return 0x10;				/* unmapped, low */
	case 2:
		return 0x00007ffffffff000ULL;		/* the top of user space */
	case 3:
		return rnd();				/* anything */
	default:
		return (uint64_t)(uintptr_t)&arena[rnd() % (WORDS - 64)];
	}
}

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Fill the arena: plausible objects (iseqs, bodies, strings, arrays) among random words. */
static void
craft(void)
{
	size_t i;

	for (i = 0; i < WORDS; i++)
		arena[i] = rnd() % 3 == 0 ? ptr() : rnd();
	for (i = 0; i + 32 < WORDS; i += 32) {
		uint64_t *o = &arena[i];

		switch (rnd() % 5) {
		case 0:		/* an iseq */
			o[0] = 0x1a | (7ULL << 12);
			o[2] = ptr();
			break;
		case 1:		/* a body: sizes near or past the bounds */
			((uint32_t *)o)[1] = (uint32_t)(rnd() % 4 == 0 ? rnd() : rnd() % (1u << 21));
			o[1] = ptr();
			o[8] = ptr();
			o[10] = ptr();
			o[11] = (rnd() % 1000) << 1 | 1;
			o[15] = ptr();
			o[16] = ptr();
			((uint32_t *)o)[34] = (uint32_t)(rnd() % 3 == 0 ? rnd() : rnd() % 40000);
			o[18] = ptr();
			break;
		case 2:		/* a heap string */
			o[0] = 0x05 | (1ULL << 13);
			o[2] = rnd() % 2 ? rnd() : rnd() % 2000;
			o[3] = ptr();
			break;
		case 3:		/* an embedded string of letters */
			o[0] = 0x05 | ((rnd() % 32) << 14);
			memset(&o[2], 'a' + (int)(rnd() % 26), 24);
			break;
		default:	/* an array */
			o[0] = 0x07 | (rnd() % 2 ? (1ULL << 13) | ((rnd() % 4) << 15) : 0);
			o[2] = rnd() % 2 ? rnd() : 2;
			o[3] = ptr();
			o[4] = ptr();
			break;
		}
	}
}

static uint64_t objs[1u << 18];	/* coherent objects, bump-allocated per context */
static size_t nobj;

static uint64_t *
alloc(size_t words)
{
	uint64_t *o;

	if (nobj + words > sizeof(objs) / sizeof(objs[0]))
		nobj = 0;
	o = &objs[nobj];
	nobj += words;
	return o;
}

/* A String: embedded, or on the heap with a length near or past the bounds. */
static uint64_t
mkstr(void)
{
	uint64_t *o = alloc(5);
	size_t len = rnd() % 2 ? rnd() % 24 : rnd() % 1200, i;
	char *b;

	if (len < 24 && rnd() % 2) {
		o[0] = 0x05 | ((uint64_t)len << 14);
		for (i = 0; i < len; i++)
			((char *)&o[2])[i] = (char)(rnd() % 4 ? 'a' + rnd() % 26 : rnd());
		return (uint64_t)(uintptr_t)o;
	}
	b = (char *)alloc(len / 8 + 1);
	for (i = 0; i < len; i++)
		b[i] = (char)(rnd() % 8 ? 'a' + rnd() % 26 : 0x80 + rnd() % 128);
	o[0] = 0x05 | (1ULL << 13);
	o[2] = rnd() % 32 ? len : rnd();
	o[3] = (uint64_t)(uintptr_t)b;
	return (uint64_t)(uintptr_t)o;
}

/* An iseq with a body, label, path and line table of random words and sizes. */
static void
mkframe(uint64_t *cf)
{
	uint64_t *iseq = alloc(5), *body = alloc(20), *ep = alloc(3) + 2, *arr;
	uint32_t size = (uint32_t)(rnd() % 3 == 0 ? rnd() % (1u << 21) : rnd() % 600);
	uint32_t ninfo = (uint32_t)(rnd() % 3 == 0 ? rnd() % 40000 : 1 + rnd() % 300), i;
	size_t tw = size < 54 ? 6 : 6 + ((size - 54 + 511) / 512) * 10;
	uint64_t *tbl, *ent, *code;

	iseq[0] = 0x1a | (7ULL << 12);
	iseq[2] = (uint64_t)(uintptr_t)body;
	memset(body, 0, 20 * 8);
	((uint32_t *)body)[1] = size;
	code = alloc(8);
	body[1] = (uint64_t)(uintptr_t)code;
	if (rnd() % 2) {
		body[8] = mkstr();
	} else {
		arr = alloc(5);
		arr[0] = 0x07 | (rnd() % 2 ? (1ULL << 13) | ((rnd() % 4) << 15) : 0);
		arr[2] = rnd() % 2 ? mkstr() : rnd() % 4;
		arr[3] = mkstr();
		arr[4] = (uint64_t)(uintptr_t)&arr[2];
		body[8] = (uint64_t)(uintptr_t)arr;
	}
	body[10] = mkstr();
	body[11] = (rnd() % 100000) << 1 | (rnd() % 8 != 0);
	if (ninfo * 12 / 8 + 2 < 4096) {
		ent = alloc(ninfo * 12 / 8 + 2);
		for (i = 0; i < ninfo * 12 / 8 + 2; i++)
			ent[i] = rnd();
		body[15] = (uint64_t)(uintptr_t)ent;
	} else {
		body[15] = ptr();
	}
	if (rnd() % 2 && tw < 8192) {
		tbl = alloc(tw);
		for (i = 0; i < tw; i++)
			tbl[i] = rnd();
		body[18] = (uint64_t)(uintptr_t)tbl;
	} else {
		body[16] = ptr();
	}
	((uint32_t *)body)[34] = ninfo;
	ep[0] = 0x11110001ULL | (rnd() % 3 == 0 ? 0x20 : 0);
	ep[-2] = ptr();
	cf[0] = (uint64_t)(uintptr_t)code + 8 * (rnd() % 8);
	cf[2] = (uint64_t)(uintptr_t)iseq;
	cf[4] = (uint64_t)(uintptr_t)ep;
}

static uint64_t *symtab;	/* libruby's global symbol table, NULL: not found */

/*
 * libruby's symbol table, as the sampler finds it: rb_id2str jumps to a
 * lookup that compares with the table's first field and loads its third.
 */
static uint64_t *
find_symtab(const uint8_t *f)
{
	const uint8_t *t;
	int32_t d;
	size_t i, k, j;

	for (i = 0; i < 24; i++) {
		if (f[i] != 0xe9 && f[i] != 0xe8)
			continue;
		memcpy(&d, f + i + 1, 4);
		if (d < -(1 << 21) || d > (1 << 21))
			continue;	/* not a jump within libruby's code: not read */
		t = f + i + 5 + d;
		for (k = 0; k + 6 <= 192; k++) {
			const uint8_t *x;

			if ((t[k] != 0x39 && t[k] != 0x3b) || (t[k + 1] & 0xc7) != 0x05)
				continue;
			memcpy(&d, t + k + 2, 4);
			x = t + k + 6 + d;
			for (j = k + 6; j + 7 <= 192; j++) {
				memcpy(&d, t + j + 3, 4);
				if ((t[j] & 0xf8) == 0x48 && t[j + 1] == 0x8b &&
				    (t[j + 2] & 0xc7) == 0x05 && t + j + 7 + d == x + 16)
					return (uint64_t *)(uintptr_t)x;
			}
		}
	}
	return NULL;
}

/* A symbol table of random rows of (String, anything) pairs. */
static void
craft_symtab(void)
{
	uint64_t *ids = alloc(5), *rows;
	size_t n = 1 + rnd() % 4, i, k;

	if (symtab == NULL)
		return;
	rows = alloc(n);
	for (i = 0; i < n; i++) {
		uint64_t *row = alloc(5), *el = alloc(64);

		for (k = 0; k < 64; k++)
			el[k] = k % 2 == 0 && rnd() % 4 ? mkstr() : ptr();
		row[0] = 0x07;
		row[2] = rnd() % 8 ? 64 : rnd();
		row[4] = (uint64_t)(uintptr_t)el;
		rows[i] = rnd() % 8 ? (uint64_t)(uintptr_t)row : ptr();
	}
	ids[0] = 0x07;
	ids[2] = n;
	ids[4] = (uint64_t)(uintptr_t)rows;
	symtab[0] = 0xaa + rnd() % 4000;
	symtab[2] = (uint64_t)(uintptr_t)ids;
}

/* A C method's frame: its entry, its definition, an ID near the table's. */
static void
mkcfunc(uint64_t *cf)
{
	uint64_t *me = alloc(5), *def = alloc(6), *ep = alloc(3) + 2;

	me[0] = 0x1a | (6ULL << 12);
	me[2] = (uint64_t)(uintptr_t)def;
	def[0] = rnd() % 4 ? 1 : rnd();
	def[4] = rnd() % 4 ? (rnd() % 2000) << 4 | 1 : rnd();
	ep[0] = 0x55550081ULL | (rnd() % 2 ? 0x20 : 0);
	ep[-2] = rnd() % 8 ? (uint64_t)(uintptr_t)me : ptr();
	cf[0] = 0;
	cf[2] = 0;
	cf[4] = (uint64_t)(uintptr_t)ep;
}

/* An execution context: a VM stack in the arena, frames whose fields point anywhere. */
static void
craft_ec(uint64_t *ec)
{
	uint64_t *stack = &arena[rnd() % (WORDS / 2)];
	size_t nframes = 1 + rnd() % 300, i;

	ec[0] = (uint64_t)(uintptr_t)stack;
	ec[1] = rnd() % 8 == 0 ? rnd() : nframes * 8 + rnd() % 64;	/* VALUEs */
	ec[2] = rnd() % 8 == 0 ? ptr() : (uint64_t)(uintptr_t)(stack + 8 * (rnd() % 8));
	for (i = 0; i < nframes && (size_t)(stack - arena) + i * 8 + 8 < WORDS; i++) {
		uint64_t *cf = stack + i * 8;

		if (rnd() % 4 != 0) {
			if (rnd() % 3 == 0)
				mkcfunc(cf);
			else
				mkframe(cf);
			continue;
		}
		cf[0] = ptr();		/* pc */
		cf[2] = ptr();		/* iseq */
		cf[4] = ptr();		/* ep */
		if (rnd() % 4 == 0 && cf[4] >= 16 && (uintptr_t)cf[4] >= (uintptr_t)(arena + 2) &&
		    (uintptr_t)cf[4] < (uintptr_t)(arena + WORDS)) {
			uint64_t *ep = (uint64_t *)(uintptr_t)cf[4];

			ep[0] = rnd() % 2 ? 0x55550081ULL : 0x11110001ULL | (rnd() % 2 ? 0x20 : 0);
			ep[-2] = ptr();
		}
	}
}

static volatile uint64_t sink;

/*
 * One crafted context for 20 ms (named as the VM's entry on purpose); while
 * it is being built, none (ruby_current_ec NULL, as in a thread that never
 * ran Ruby).
 */
static __attribute__((noinline)) void
rb_vm_exec(uint64_t **cur, uint64_t *ec)
{
	double t;

	*cur = NULL;
	craft();
	craft_symtab();
	craft_ec(ec);
	*cur = rnd() % 16 == 0 ? (uint64_t *)(uintptr_t)ptr() : ec;
	t = now() + 0.02;
	while (now() < t)
		sink += rnd();
}

int
main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 5);
	void *h = dlopen("libruby-3.1.so.3.1", RTLD_NOW | RTLD_LOCAL);
	uint64_t **cur, ec[4];
	const uint8_t *id2str;

	if (h == NULL || (cur = dlsym(h, "ruby_current_ec")) == NULL ||
	    (id2str = dlsym(h, "rb_id2str")) == NULL) {
		fprintf(stderr, "rbhostile: %s\n", dlerror());
		return 1;
	}
	symtab = find_symtab(id2str);
	while (now() < end)
		rb_vm_exec(cur, ec);
	*cur = NULL;
	return 0;
}
