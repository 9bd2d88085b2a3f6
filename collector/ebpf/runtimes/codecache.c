/*
 * codecache: the per-process cache of a runtime's code objects, their
 * line tables' charge, and the reads of a process's memory through one
 * memread worker (see codecache.h). The runtimes say what an entry holds
 * and when it is stale; this keeps the table bounded and the bytes counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "codecache.h"
#include "memread.h"

struct codecache {
	struct codecache_conf conf;
	struct memreader *mr;		/* every read of a process's memory */
	size_t		 lines_bytes;	/* rows held, all processes */
	uint64_t	 decoded;	/* line tables kept */
};

struct codecache *
codecache_create(const struct codecache_conf *conf)
{
	struct codecache *cc;

	if (conf->entry_size < sizeof(struct cc_entry) || conf->slots == 0 ||
	    conf->addr_shift >= 64)
		return NULL;
	if ((cc = calloc(1, sizeof(*cc))) == NULL)
		return NULL;
	cc->conf = *conf;
	if ((cc->mr = memread_create(conf->deadline_ns)) == NULL) {
		free(cc);
		return NULL;
	}
	return cc;
}

void
codecache_destroy(struct codecache *cc)
{
	if (cc)
		memread_destroy(cc->mr);
	free(cc);
}

int
codecache_read(struct codecache *cc, pid_t pid, uint64_t addr, void *dst, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (addr == 0 || len > MEMREAD_MAX_BYTES)
		return -EFAULT;
	n = memread_readv(cc->mr, pid, &l, &r, 1);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

ssize_t
codecache_readv(struct codecache *cc, pid_t pid, const struct iovec *local,
    const struct iovec *remote, size_t n)
{
	return memread_readv(cc->mr, pid, local, remote, n);
}

static struct cc_entry *
slot_at(const struct codecache *cc, const struct cc_table *t, size_t k)
{
	return (struct cc_entry *)((char *)t->slots + k * cc->conf.entry_size);
}

static uint64_t
addr_hash(const struct codecache *cc, uint64_t addr)
{
	return (addr >> cc->conf.addr_shift) * 0x9e3779b97f4a7c15ULL;
}

struct cc_entry *
codecache_find(struct codecache *cc, struct cc_table *t, uint64_t addr)
{
	uint64_t h;
	struct cc_entry *e;
	size_t k;

	if (cc == NULL || t == NULL || t->slots == NULL || addr == 0)
		return NULL;
	h = addr_hash(cc, addr);
	for (k = 0; k < cc->conf.slots; k++) {
		e = slot_at(cc, t, (h + k) % cc->conf.slots);
		if (e->addr == addr)
			return e;
		if (e->addr == 0)
			break;
	}
	return NULL;
}

struct cc_entry *
codecache_slot(struct codecache *cc, struct cc_table *t, uint64_t addr)
{
	uint64_t h;
	struct cc_entry *e;
	size_t k;

	if (t->slots == NULL && (t->slots = calloc(cc->conf.slots, cc->conf.entry_size)) == NULL)
		return NULL;
	h = addr_hash(cc, addr);
	for (k = 0; k < cc->conf.slots; k++) {
		e = slot_at(cc, t, (h + k) % cc->conf.slots);
		if (e->addr == 0 || e->addr == addr)
			return e;
	}
	return NULL;
}

struct cc_entry *
codecache_claim(struct codecache *cc, struct cc_table *t, struct cc_entry *e, uint64_t addr)
{
	/* Emptied as a whole rather than evicting: a process cannot make it grow. */
	if (t->used >= cc->conf.slots * 3 / 4) {
		codecache_clear(cc, t);
		e = codecache_slot(cc, t, addr);
	}
	memset(e, 0, cc->conf.entry_size);
	e->addr = addr;
	t->used++;
	return e;
}

static void
entry_free(struct codecache *cc, struct cc_table *t, struct cc_entry *e)
{
	free(e->name);
	free(e->file);
	if (e->rows) {
		free(e->rows);
		codecache_uncharge(cc, t, e->rows_bytes);
	}
	memset(e, 0, cc->conf.entry_size);
}

void
codecache_drop(struct codecache *cc, struct cc_table *t, struct cc_entry *e)
{
	if (e->addr == 0)
		return;
	entry_free(cc, t, e);
	t->used--;
}

void
codecache_clear(struct codecache *cc, struct cc_table *t)
{
	size_t k;

	if (cc == NULL || t->slots == NULL)
		return;
	for (k = 0; k < cc->conf.slots; k++)
		if (slot_at(cc, t, k)->addr)
			entry_free(cc, t, slot_at(cc, t, k));
	t->used = 0;
}

void
codecache_forget(struct codecache *cc, struct cc_table *t)
{
	if (cc == NULL)
		return;
	codecache_clear(cc, t);
	free(t->slots);
	t->slots = NULL;
	t->used = 0;
	t->bytes = 0;	/* what the runtime charged besides it gave back first */
}

int
codecache_charge(struct codecache *cc, struct cc_table *t, size_t n)
{
	if (cc->lines_bytes + n > cc->conf.mem_max ||
	    (cc->conf.proc_mem_max && t->bytes + n > cc->conf.proc_mem_max) ||
	    budget_reserve(n) < 0)
		return -ENOMEM;
	cc->lines_bytes += n;
	t->bytes += n;
	return 0;
}

void
codecache_uncharge(struct codecache *cc, struct cc_table *t, size_t n)
{
	budget_release(n);
	cc->lines_bytes -= n;
	t->bytes -= n;
}

int
codecache_lines_full(const struct codecache *cc, const struct cc_table *t)
{
	return cc->lines_bytes >= cc->conf.mem_max ||
	    (cc->conf.proc_mem_max && t->bytes >= cc->conf.proc_mem_max);
}

int
codecache_lines_keep(struct codecache *cc, struct cc_table *t, struct cc_entry *e, void *rows,
    uint32_t nrows, size_t rowsize)
{
	size_t b = (size_t)nrows * rowsize;

	if (codecache_charge(cc, t, b) < 0) {
		free(rows);
		e->rows = NULL;
		e->nrows = 0;
		e->lines = CC_LINES_NOT_READ;	/* no room now */
		return -ENOMEM;
	}
	e->rows = rows;
	e->nrows = nrows;
	e->rows_bytes = b;
	e->lines = CC_LINES_READ;
	cc->decoded++;
	return 0;
}

uint32_t
codecache_lines_find(const void *rows, uint32_t n, size_t rowsize, uint64_t idx)
{
	uint32_t lo = 0, hi = n, end;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		memcpy(&end, (const char *)rows + (size_t)mid * rowsize, sizeof(end));
		if (end <= idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void
codecache_get_stats(const struct codecache *cc, struct codecache_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (cc == NULL)
		return;
	st->lines_bytes = cc->lines_bytes;
	st->lines_decoded = cc->decoded;
	st->mem_stalls = memread_stalls(cc->mr);
}
