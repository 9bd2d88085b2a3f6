/*
 * codecache: what every interpreted runtime's frame namer (python.c,
 * ruby.c, ...) keeps of a process's code objects (a CPython code object, a
 * Ruby iseq, a JVM Method*, a V8 SharedFunctionInfo), and how it reads
 * them. A code object is named once, from the process's memory, and its
 * entry kept until the object at that address is seen to be another one:
 *
 *  - the reads: one memread worker per runtime (memread.h), so that a
 *    process whose memory does not answer costs a deadline, never the
 *    sampler; codecache_read / codecache_readv hand reads to it;
 *  - the entries: keyed by (pid, address): one open-hash table a process
 *    (struct cc_table, held in the runtime's per-process state), of a fixed
 *    number of slots, allocated at the first entry and emptied as a whole
 *    when it is 3/4 full, so a process cannot make it grow;
 *  - the line tables: rows decoded by the runtime, held by the entry and
 *    charged to the memory budget (base.h budget_reserve), to a bound of
 *    the runtime's for all its processes and optionally to one a process;
 *    past any they are refused and the frame named without its line until
 *    there is room again. Other tables a runtime keeps per process (HotSpot's
 *    compiled methods' debug information) may be charged alike
 *    (codecache_charge);
 *  - clear and forget: an entry, a process's entries, a process's table.
 *
 * What an entry holds beyond its name, file and line table (the words that
 * tell whether the object at the address is still the same, a timestamp)
 * is the runtime's: its entry type starts with a struct cc_entry and the
 * table is made of entries of the size given to codecache_create. How the
 * runtime finds its interpreter, reads frames and decodes line tables is
 * its own business; so are CPU budgets for decoding.
 *
 * A runtime uses it so:
 *
 *	struct pycode { struct cc_entry e; uint64_t type, size; ... };
 *	struct pyproc { ...; struct cc_table cache; };
 *
 *	cc = codecache_create(&(struct codecache_conf){ .entry_size =
 *	    sizeof(struct pycode), .slots = 2048, .addr_shift = 4,
 *	    .mem_max = 32 << 20, .deadline_ns = 1000000000 });
 *	...
 *	// naming frame i of a sample (its header hdr read by codecache_readv):
 *	e = codecache_slot(cc, &pp->cache, addr);	// NULL: no memory
 *	if (e->addr == addr && !still_same(e, hdr))
 *		codecache_drop(cc, &pp->cache, e);	// another object there now
 *	if (e->addr == 0) {
 *		e = codecache_claim(cc, &pp->cache, e, addr);
 *		if (load(e, hdr) < 0) {			// names read into e->name, e->file
 *			codecache_drop(cc, &pp->cache, e);
 *			return -EFAULT;
 *		}
 *	}
 *	if (e->lines == CC_LINES_NOT_READ && !codecache_lines_full(cc, &pp->cache)) {
 *		e->lines = CC_LINES_NONE;		// unless kept below
 *		if (decode(..., &rows, &nrows) == 0)
 *			(void)codecache_lines_keep(cc, &pp->cache, e, rows, nrows,
 *			    sizeof(*rows));
 *	}
 *	line = (k = codecache_lines_find(e->rows, e->nrows, sizeof(*rows), pc)) <
 *	    e->nrows ? ((struct row *)e->rows)[k].line : 0;
 *	...
 *	codecache_forget(cc, &pp->cache);		// the process went away
 *	codecache_destroy(cc);
 *
 * Not thread-safe: one cache belongs to one thread (the sampler's).
 */
#ifndef PROFILEFS_CODECACHE_H
#define PROFILEFS_CODECACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <string.h>
#include <sys/uio.h>

enum {
	CC_LINES_NOT_READ,	/* not decoded yet, or no room when it was */
	CC_LINES_READ,		/* rows hold it */
	CC_LINES_NONE,		/* for good: too big, unreadable, malformed */
};

/* The head of every runtime's entry; all of it owned by the cache. */
struct cc_entry {
	uint64_t	 addr;		/* the code object's; 0: a free slot */
	char		*name;		/* malloc'd, freed with the entry; NULL: not read */
	char		*file;		/* malloc'd, freed with the entry */
	void		*rows;		/* the decoded line table (codecache_lines_keep) */
	uint32_t	 nrows;
	uint8_t		 lines;		/* CC_LINES_* */
	size_t		 rows_bytes;	/* charged for rows */
};

/* One process's entries: zero it with the process, codecache_forget it after. */
struct cc_table {
	void		*slots;		/* conf.slots entries, allocated at the first */
	size_t		 used;
	size_t		 bytes;		/* charged to this process (rows, codecache_charge) */
};

struct codecache_conf {
	size_t		 entry_size;	/* of the runtime's entry, a struct cc_entry first */
	size_t		 slots;		/* entries a process (open hash) */
	unsigned	 addr_shift;	/* low address bits always 0 (alignment): not hashed */
	size_t		 mem_max;	/* bytes charged (rows...), all processes */
	size_t		 proc_mem_max;	/* bytes charged to one process; 0: no bound but mem_max */
	int64_t		 deadline_ns;	/* the longest a read of a process's memory may take */
};

struct codecache_stats {
	size_t		 lines_bytes;	/* bytes charged: rows held, and codecache_charge's */
	uint64_t	 lines_decoded;	/* line tables kept, since start */
	uint64_t	 mem_stalls;	/* reads abandoned (memread.h), since start */
};

struct codecache;

/* conf is copied. NULL on allocation failure (or a conf that makes no sense). */
struct codecache *codecache_create(const struct codecache_conf *conf);
/* Its memread worker stops; the tables are the processes' (codecache_forget). */
void		 codecache_destroy(struct codecache *cc);

/* --- reading a process's memory (memread.h) --- */

/*
 * len bytes of pid's memory at addr into dst: 0, or -errno (a short read
 * -EFAULT, as are addr 0 and len over MEMREAD_MAX_BYTES; -ETIMEDOUT past
 * the deadline).
 */
int		 codecache_read(struct codecache *cc, pid_t pid, uint64_t addr, void *dst,
		    size_t len);
/* memread_readv through the cache's worker: bytes read, or -errno. */
ssize_t		 codecache_readv(struct codecache *cc, pid_t pid, const struct iovec *local,
		    const struct iovec *remote, size_t n);

/* --- entries --- */

/* The entry of addr in t, or NULL (none, no table yet, addr 0). */
struct cc_entry	*codecache_find(struct codecache *cc, struct cc_table *t, uint64_t addr);
/*
 * The slot of addr in t: its entry (e->addr == addr) or the free slot it
 * would take (e->addr == 0, to be claimed). The table is allocated at the
 * first call. NULL: no memory, or no slot free (a full table).
 */
struct cc_entry	*codecache_slot(struct codecache *cc, struct cc_table *t, uint64_t addr);
/*
 * Take free slot e (from codecache_slot) for addr: its addr set, the rest
 * zero. When t is 3/4 full it is emptied first (codecache_clear) and the
 * entry returned is another slot: use what this returns.
 */
struct cc_entry	*codecache_claim(struct codecache *cc, struct cc_table *t, struct cc_entry *e,
		    uint64_t addr);
/* Empty used entry e of t: name, file and rows freed, rows' charge given back, all zero. */
void		 codecache_drop(struct codecache *cc, struct cc_table *t, struct cc_entry *e);
/* Empty every entry of t (the table stays allocated). cc NULL: nothing (nor below). */
void		 codecache_clear(struct codecache *cc, struct cc_table *t);
/* The process goes away: every entry emptied and the table freed. */
void		 codecache_forget(struct codecache *cc, struct cc_table *t);

/* --- line tables --- */

/* Whether what is charged has reached conf.mem_max, or t's conf.proc_mem_max: decode none now. */
int		 codecache_lines_full(const struct codecache *cc, const struct cc_table *t);
/*
 * Give e, an entry of t, the line table rows (nrows of rowsize bytes,
 * malloc'd): kept and charged (e->lines CC_LINES_READ), 0; or, past a bound
 * (conf.mem_max, conf.proc_mem_max, the memory budget), freed, e->lines
 * CC_LINES_NOT_READ (to try again when there is room), -ENOMEM. e held no
 * rows.
 */
int		 codecache_lines_keep(struct codecache *cc, struct cc_table *t, struct cc_entry *e,
		    void *rows, uint32_t nrows, size_t rowsize);

/*
 * Of rows (n of rowsize bytes each, ascending by a uint32_t `end` first in
 * each: the row covers [previous end, end)), the index of the first whose
 * end is past idx: the row covering idx; n when none does.
 */
uint32_t	 codecache_lines_find(const void *rows, uint32_t n, size_t rowsize, uint64_t idx);
/*
 * Charge n bytes the runtime holds for process t beyond its entries' rows
 * (held by the runtime, given back by codecache_uncharge before
 * codecache_forget): 0, or -ENOMEM past a bound (as codecache_lines_keep).
 */
int		 codecache_charge(struct codecache *cc, struct cc_table *t, size_t n);
void		 codecache_uncharge(struct codecache *cc, struct cc_table *t, size_t n);

void		 codecache_get_stats(const struct codecache *cc, struct codecache_stats *st);

/* A field of a structure copied out of a process: bytes b + off, host order. */
static inline uint64_t
cc_rd64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint32_t
cc_rd32(const uint8_t *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

#endif
