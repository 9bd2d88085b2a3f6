/*
 * symbolize: ELF symbol tables (libelf), kernel symbols and perf maps.
 *
 * An ELF object is read once and kept in a cache keyed by the file's
 * (dev, inode), which is what /proc/PID/maps names; objects not used for a
 * while are expired. Of each object we keep the loadable segments (for the
 * load bias) and a sorted array of function symbols bounded by their sizes:
 * .symtab when present, else .dynsym, merged with the .symtab of a separate
 * debug file (/usr/lib/debug/.build-id/xx/yyyy.debug, then .gnu_debuglink,
 * then debuginfod.c's cache, which fetches what it lacks in the background).
 * Names live in one string blob per object.
 *
 * What the tables keep is charged to the memory budget and bounded: all
 * objects' tables together (symbol arrays and names) at most a share of
 * the budget (a quarter), one object's at most a quarter of that. A table past its bound
 * is cut (the functions first in it kept; the log says so), and before a
 * new table is read, the tables used least recently are dropped to make
 * room for it (their frames go unnamed). Reading takes two passes over a
 * table, one to count what will be kept, one to copy it into arrays sized
 * once, and lets go of the file's mapped pages as it goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "debuginfod.h"
#include "ehframe.h"
#include "pprof.h"
#include "store.h"
#include "rio.h"
#include "symbolize.h"

#define ELF_MAX_SYMS	(4u << 20)	/* per object, against corrupt tables */
#define ELF_MAX_STRTAB	(256u << 20)	/* bytes of one symbol string table */
#define NT_GNU_BUILD_ID_	3
#define SYMBOLIZE_DBG_RETRY	60	/* s between passes over files whose debug file is missing */
#define SYMTAB_SHARE	4		/* all tables: at most 1/SYMTAB_SHARE of the budget */
#define SYMTAB_MIN	(16u << 20)	/* ... but at least this */
#define SCAN_CHUNK	(8u << 20)	/* bytes of a mapped table read before its pages go */
#define GOTS_MAX	(1u << 20)	/* GOT slots read for PLT names, per object */

struct sym {
	uint64_t	 addr;
	uint64_t	 size;
	uint32_t	 name;		/* offset in names */
};

struct segment {
	uint64_t	 vaddr, offset, filesz;
	bool		 exec;
};

struct symbolizer;

struct elfobj {
	uint64_t	 dev, ino;
	struct symbolizer *s;		/* whose budget share it takes */
	bool		 bad;		/* unreadable or not ELF: remembered */
	uint64_t	 entry, entry_size;	/* a main executable's _start, from its bytes */
	time_t		 used;		/* monotonic seconds */
	unsigned	 refs;		/* holders (process mappings); expired only at 0 */
	char		 build_id[41];
	struct segment	*segs;
	size_t		 nsegs;
	struct sym	*syms;
	size_t		 nsyms, scap;	/* scap: allocated, charged to the budget */
	struct buf	 names;
	size_t		 bytes;		/* of syms and names, counted in s->bytes */
	uint64_t	 last_use;	/* s->uses at its last lookup (LRU) */
	uint64_t	 use_period;	/* s->periods at its last lookup */
	int64_t		 reload_at;	/* dropped: monotonic s it may be read again from */
	size_t		 wanted;	/* functions its tables hold, kept or not */
	bool		 dropped;	/* its table was let go for others */
	bool		 cut;		/* its table did not fit whole */
	bool		 mapped;	/* while read from a file mapping (pages_drop) */
	/* DWARF for file:line, opened at the first lookup */
	bool		 debug_info;	/* the file just read has .debug_info */
	int		 dw_fd;		/* > 0: a file with .debug_info, kept open */
	Dwarf		*dw;
	bool		 dw_failed;
	struct elfobj	*dw_next;	/* in dw_open, while dw is */
	uint64_t	*dw_cus;	/* offsets of the units whose line tables dw holds */
	size_t		 dw_ncus, dw_cuscap, dw_lines;	/* ... and their rows */
	bool		 dbg_wait;	/* its debug file is being fetched (debuginfod) */
	bool		 dbg_missing;	/* no symbol table: debuginfod is asked again now and then */
	/*
	 * glibc's libc (libc_fde_names()): its hidden functions named from
	 * their FDEs, names [synth_lo, synth_hi) of the blob, let go once a
	 * symbol table (full_symtab) names them.
	 */
	bool		 libc;
	bool		 full_symtab;
	char		 soname[32];
	uint32_t	 synth_lo, synth_hi;
	uint8_t		 local_tries;	/* looks for a local debug file left (by build id) */
	int64_t		 local_next;	/* monotonic s of the next one */
};

struct ksym {
	uint64_t	 addr;
	uint32_t	 name;
};

#define RCACHE_SLOTS	16384	/* a power of two */

/* A name looked up before: the same addresses come back sample after sample. */
struct rcache_ent {
	const void	*o;		/* the elfobj, &kernel_key for the kernel; NULL: empty */
	uint64_t	 vaddr;
	const char	*func, *srcfile;	/* owned by o */
	int64_t		 line;
};

static const char kernel_key;

struct symbolizer {
	struct rcache_ent *rcache;	/* RCACHE_SLOTS; emptied when objects are freed */
	uint64_t	  trims_seen;	/* dwarf_trims when rcache was last emptied for it */
	struct elfobj	 *vdso;		/* ours, which is every 64-bit process's */
	bool		  vdso_tried;
	struct elfobj	**objs;		/* open hash on (dev, ino), linear probing */
	size_t		  cap, n;
	bool		  kloaded;
	struct ksym	 *ksyms;
	size_t		  nksyms;
	struct buf	  knames;
	struct dbginfod	 *dbg;		/* NULL: no debuginfod */
	uint64_t	  dbg_gen;	/* dbginfod_generation() at the last poll */
	int64_t		  dbg_retry;	/* monotonic s: the next time missing files are asked again */
	size_t		  bytes;	/* all objects' tables (struct elfobj.bytes) */
	uint64_t	  uses;		/* lookups so far: the LRU clock */
	uint64_t	  periods;	/* symbolize_elf_expire() calls: what "in use" means */
	uint64_t	  cuts, drops;	/* tables cut, tables let go */
};

/* --- what the tables may take ------------------------------------------- */

/*
 * The bound of all tables together, and of one object's (a quarter of it:
 * a user fills the whole with four binaries at least).
 */
static size_t
symtab_cap(void)
{
	size_t c = budget_limit() / SYMTAB_SHARE;

	return c < SYMTAB_MIN ? SYMTAB_MIN : c;
}

static size_t
symtab_obj_cap(void)
{
	return symtab_cap() / 4;
}

static size_t
obj_bytes(const struct elfobj *o)
{
	return o->scap * sizeof(*o->syms) + o->names.cap;
}

/* Bring the symbolizer's count of o's bytes up to date. */
static void
obj_account(struct elfobj *o)
{
	size_t b = obj_bytes(o);

	if (o->s)
		o->s->bytes = o->s->bytes - o->bytes + b;
	o->bytes = b;
}

/* Bytes o's table may still grow by, under both bounds. */
static size_t
obj_room(const struct elfobj *o)
{
	size_t total = symtab_cap(), per = symtab_obj_cap(), now = obj_bytes(o);
	size_t others = o->s ? o->s->bytes - o->bytes : 0, r1, r2;

	r1 = now < per ? per - now : 0;
	r2 = others + now < total ? total - others - now : 0;
	return r1 < r2 ? r1 : r2;
}

/* Make room in o->syms for need symbols, charged to the budget. 0 or -ENOMEM. */
static int
syms_reserve(struct elfobj *o, size_t need)
{
	struct sym *ns;

	if (need <= o->scap)
		return 0;
	if (budget_reserve((need - o->scap) * sizeof(*ns)) < 0)
		return -ENOMEM;
	if ((ns = realloc(o->syms, need * sizeof(*ns))) == NULL) {
		budget_release((need - o->scap) * sizeof(*ns));
		return -ENOMEM;
	}
	o->syms = ns;
	o->scap = need;
	return 0;
}

/* Free o's table (symbols and names), uncharged. The caller accounts. */
static void
table_free(struct elfobj *o)
{
	budget_release(o->scap * sizeof(*o->syms));
	free(o->syms);
	o->syms = NULL;
	o->nsyms = o->scap = 0;
	buf_free(&o->names);
}

/*
 * Let go of the pages of [p, p + len) when they lie in the file mapping o
 * is read from (never a buffer of ours, nor the vdso): they are read again
 * from the file if touched, so that reading a table of any size holds a
 * bounded part of it.
 */
static void
pages_drop(const struct elfobj *o, Elf *e, const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, z = a + len, pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t size = 0;
	char *raw;

	if (!o->mapped || (raw = elf_rawfile(e, &size)) == NULL || a < (uintptr_t)raw ||
	    z > (uintptr_t)raw + size || z <= a)
		return;
	a = (a + pg - 1) & ~(pg - 1);
	z &= ~(pg - 1);
	if (z > a)
		(void)madvise((void *)a, z - a, MADV_DONTNEED);
}

/* Forget the names looked up before: they may be gone. */
static void
rcache_clear(struct symbolizer *s)
{
	memset(s->rcache, 0, RCACHE_SLOTS * sizeof(*s->rcache));
}

/*
 * Drop the tables of the objects used least recently, keep's aside, until
 * want bytes more fit under the bound of all tables, or none is left that
 * was not looked up this period or the last. The objects stay (mappings,
 * build ids); their frames go unnamed until a process maps them again
 * (symbolize_elf(), at most once a minute: table_reload()). Names
 * handed out before are gone with them: called while reading a table, when
 * the caller holds none (the name cache is emptied).
 */
static void
symtab_evict(struct symbolizer *s, const struct elfobj *keep, size_t want)
{
	size_t total = symtab_cap(), i, n = 0, freed = 0;
	struct elfobj *lru;

	while (s->bytes + want > total) {
		lru = NULL;
		for (i = 0; i < s->cap; i++) {
			struct elfobj *o = s->objs[i];

			/* Tables in use (looked up this period or the last) stay. */
			if (o && o != keep && o->bytes > 0 && o->use_period + 2 <= s->periods &&
			    (lru == NULL || o->last_use < lru->last_use))
				lru = o;
		}
		if (lru == NULL)
			break;
		freed += lru->bytes;
		table_free(lru);
		lru->dropped = true;
		lru->reload_at = clock_mono_ns() / 1000000000 + 60;
		obj_account(lru);
		n++;
	}
	if (n == 0)
		return;
	s->drops += n;
	rcache_clear(s);
	log_info("ebpf: symbol tables of %zu binaries used least recently let go (%zu MiB) for "
	    "another's: all tables are held to %zu MiB (a quarter of --memory-limit)", n,
	    freed >> 20, total >> 20);
}

struct symbolizer *
symbolize_create(void)
{
	struct symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		log_warnx("ebpf: libelf: %s", elf_errmsg(-1));
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->cap = 256;
	s->objs = calloc(s->cap, sizeof(*s->objs));
	s->rcache = calloc(RCACHE_SLOTS, sizeof(*s->rcache));
	if (s->objs == NULL || s->rcache == NULL) {
		free(s->objs);
		free(s->rcache);
		free(s);
		return NULL;
	}
	return s;
}

/* Files kept open for their DWARF, all symbolizers together (bounded). */
#define MAX_DWARF_FDS	64
#define LOCAL_DEBUG_TRIES 3	/* looks for a local debug file an object gets */
#define MAX_DEBUG_INFO	(16u << 20)	/* bytes of .debug_info read for lines */
static int dwarf_fds;
/*
 * libdw keeps every line table it decoded until dwarf_end: tens of MiB for
 * a few big units. Past DWARF_LINES_MAX rows held at the end of a period
 * (symbolize_elf_expire), all handles are closed, to be reopened at their
 * next lookup: a period's lookups decode a table once at most.
 */
#define DWARF_LINES_MAX	(256u << 10)
static size_t dwarf_lines;
static struct elfobj *dw_open;
static uint64_t dwarf_trims;	/* times handles were let go: rcaches emptied */

static void
dw_close(struct elfobj *o)
{
	struct elfobj **pp;

	if (o->dw == NULL)
		return;
	for (pp = &dw_open; *pp; pp = &(*pp)->dw_next) {
		if (*pp == o) {
			*pp = o->dw_next;
			break;
		}
	}
	dwarf_end(o->dw);
	o->dw = NULL;
	o->dw_next = NULL;
	free(o->dw_cus);
	o->dw_cus = NULL;
	o->dw_ncus = o->dw_cuscap = 0;
	dwarf_lines -= o->dw_lines;
	o->dw_lines = 0;
}

static void
elfobj_free(struct elfobj *o)
{
	if (o == NULL)
		return;
	dw_close(o);
	if (o->dw_fd > 0) {
		close(o->dw_fd);
		dwarf_fds--;
	}
	free(o->segs);
	table_free(o);
	obj_account(o);
	free(o);
}

void
symbolize_destroy(struct symbolizer *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->cap; i++)
		elfobj_free(s->objs[i]);
	elfobj_free(s->vdso);
	free(s->objs);
	free(s->rcache);
	free(s->ksyms);
	buf_free(&s->knames);
	free(s);
}

/* --- ELF reading --------------------------------------------------------- */

static int
sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Larger first, so dedup keeps the symbol that covers most. */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return 0;
}

/*
 * Names longer than SYM_NAME_MAX are kept cut (first bytes and "..."), a
 * bounded number per object.
 */
#define NAME_CUTS_MAX	64

/* A function symbol whose name is still its offset in the string table. */
struct pending_name {
	uint32_t	 src;		/* offset in the section's string table */
	uint32_t	 sym;		/* index in o->syms */
};

/* Append name[0..len) to b, cut to SYM_NAME_MAX with "..." (and suffix), NUL-terminated. */
static int
name_add(struct buf *b, const char *name, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	if (len + sl > SYM_NAME_MAX) {
		if (buf_add(b, name, SYM_NAME_MAX - 3 - sl) < 0 || buf_add(b, "...", 3) < 0)
			return -ENOMEM;
	} else if (buf_add(b, name, len) < 0) {
		return -ENOMEM;
	}
	return buf_add(b, suffix, sl + 1);
}

static int
pending_cmp(const void *a, const void *b)
{
	const struct pending_name *x = a, *y = b;

	return x->src < y->src ? -1 : x->src > y->src;
}

/*
 * Copy the names of p[0..n) (at most SYM_NAME_MAX bytes each) from string
 * table st to o->names, in the order of their offsets, and point their
 * symbols at the copies. A name that is the tail of the one copied before it
 * (a linker shares suffixes) points into that copy: every byte of the table
 * is copied once at most, whatever a crafted table's symbols point at.
 */
static int
names_copy(struct elfobj *o, const char *st, struct pending_name *p, size_t n)
{
	size_t i, prev_src = 0, prev_end = 0, prev_dst = 0, len;

	/* glibc's qsort sorts through a copy it allocates: counted while it does. */
	budget_charge(n * sizeof(*p));
	qsort(p, n, sizeof(*p), pending_cmp);
	budget_release(n * sizeof(*p));
	for (i = 0; i < n; i++) {
		if (i > 0 && p[i].src < prev_end) {
			o->syms[p[i].sym].name = (uint32_t)(prev_dst + (p[i].src - prev_src));
			continue;
		}
		len = strlen(st + p[i].src);	/* NUL-terminated within the table: checked */
		prev_src = p[i].src;
		prev_end = prev_src + len + 1;
		prev_dst = o->names.len;
		if (buf_add(&o->names, st + prev_src, len + 1) < 0)
			return -ENOMEM;
		o->syms[p[i].sym].name = (uint32_t)prev_dst;
	}
	return 0;
}

/*
 * Whether symbol i of d is a function to keep (1), not (0), or past what
 * can be read (-1); its name's length (cut at SYM_NAME_MAX + 1) in *len.
 */
static int
sym_wanted(Elf_Data *d, const Elf_Data *sd, size_t i, GElf_Sym *sym, size_t *len)
{
	const char *name;
	size_t left;
	int t;

	if (gelf_getsym(d, (int)i, sym) == NULL)
		return -1;
	t = GELF_ST_TYPE(sym->st_info);
	if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym->st_value == 0 ||
	    sym->st_shndx == SHN_UNDEF || sym->st_size == 0 || sym->st_name >= sd->d_size)
		return 0;
	name = (const char *)sd->d_buf + sym->st_name;
	left = sd->d_size - sym->st_name;
	*len = strnlen(name, left < SYM_NAME_MAX + 1 ? left : SYM_NAME_MAX + 1);
	/* Empty, or not terminated in the table. */
	return *len == 0 || *len == left ? 0 : 1;
}

/* What keeping a function of a name of len bytes costs at most. */
static size_t
sym_cost(size_t len)
{
	return sizeof(struct sym) + (len > SYM_NAME_MAX ? SYM_NAME_MAX : len) + 1;
}

/*
 * Append the function symbols of one symbol table section to o. Their names
 * are copied from the section's string table, only those of functions and
 * each once however many symbols share a name or a suffix of one (a crafted
 * table cannot multiply memory): see names_copy. A first pass counts what
 * fits in o's room (obj_room(), after the tables used least recently made
 * way), so that the arrays are sized once; the second copies it.
 */
static int
read_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elfobj *o)
{
	Elf_Data *d = elf_getdata(scn, NULL), *sd;
	Elf_Scn *sscn = elf_getscn(e, sh->sh_link);
	struct pending_name *pend = NULL;
	size_t i, n, npend = 0, ncut = 0, len, nkeep = 0, want = 0, cost = 0, room, per;
	size_t pend_bytes = 0, names = 0, chunk, first = o->nsyms, names0 = o->names.len;
	GElf_Sym sym;
	int rc = 0, w;

	if (d == NULL || sh->sh_entsize == 0 || sscn == NULL ||
	    (sd = elf_getdata(sscn, NULL)) == NULL || sd->d_buf == NULL || sd->d_size == 0 ||
	    sd->d_size > ELF_MAX_STRTAB || o->names.len > UINT32_MAX - sd->d_size - 1 -
	    NAME_CUTS_MAX * SYM_NAME_MAX)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	chunk = SCAN_CHUNK / sh->sh_entsize ? SCAN_CHUNK / sh->sh_entsize : 1;
	/* What o may take by itself; the others' tables make way for it below. */
	per = symtab_obj_cap();
	per = per > obj_bytes(o) ? per - obj_bytes(o) : 0;
	for (i = 0; i < n; i++) {
		if ((w = sym_wanted(d, sd, i, &sym, &len)) < 0) {
			n = i;
			break;
		}
		if (w > 0) {
			want++;
			if (o->nsyms + nkeep < ELF_MAX_SYMS && cost + sym_cost(len) <= per) {
				nkeep++;
				cost += sym_cost(len);
			}
		}
		if (i % chunk == chunk - 1) {
			pages_drop(o, e, (const char *)d->d_buf + (i + 1 - chunk) * sh->sh_entsize,
			    chunk * sh->sh_entsize);
			pages_drop(o, e, sd->d_buf, sd->d_size);
		}
	}
	o->wanted += want;
	o->cut |= nkeep < want;
	if (nkeep == 0)
		goto out;
	if (o->s && cost > obj_room(o))
		symtab_evict(o->s, o, cost);
	room = obj_room(o);
	/*
	 * Exact arrays: no growth by doubling, no copy of a big array in a
	 * realloc. Memory refused: the table is cut (to nothing), not the
	 * object refused.
	 */
	if (syms_reserve(o, o->nsyms + nkeep) < 0 ||
	    budget_reserve(nkeep * sizeof(*pend)) < 0)
		goto out;
	pend_bytes = nkeep * sizeof(*pend);
	if ((pend = malloc(pend_bytes)) == NULL)
		goto out;
	first = o->nsyms;
	cost = 0;
	for (i = 0; i < n && npend + ncut < nkeep; i++) {
		uint64_t off = 0;

		if ((w = sym_wanted(d, sd, i, &sym, &len)) <= 0)
			continue;
		if (cost + sym_cost(len) > room) {
			o->cut = true;
			break;	/* the others' tables could not make way: cut here */
		}
		cost += sym_cost(len);
		if (len > SYM_NAME_MAX) {
			/* A name past the bound: a cut copy of its own, a few per object. */
			if (ncut++ >= NAME_CUTS_MAX)
				continue;
			off = o->names.len;
			if (name_add(&o->names, (const char *)sd->d_buf + sym.st_name, len, "") < 0) {
				o->names.err = 0;
				o->names.len = off;
				o->names.data[off] = '\0';
				break;	/* memory short: cut here */
			}
		} else {
			/* Named once all are known (names_copy). */
			pend[npend].src = sym.st_name;
			pend[npend].sym = (uint32_t)o->nsyms;
			npend++;
			names += len + 1;
		}
		o->syms[o->nsyms].addr = sym.st_value;
		o->syms[o->nsyms].size = sym.st_size;
		o->syms[o->nsyms].name = (uint32_t)off;
		o->nsyms++;
		if (i % chunk == chunk - 1) {
			pages_drop(o, e, (const char *)d->d_buf + (i + 1 - chunk) * sh->sh_entsize,
			    chunk * sh->sh_entsize);
			pages_drop(o, e, sd->d_buf, sd->d_size);
		}
	}
	/* At most what the names take, at once (shared suffixes take less). */
	if (npend > 0 && (buf_reserve(&o->names, names) < 0 ||
	    names_copy(o, sd->d_buf, pend, npend) < 0)) {
		/* Names short: none of this table's, rather than wrong ones. */
		o->names.err = 0;
		o->names.len = names0;
		if (o->names.data)
			o->names.data[names0] = '\0';
		o->nsyms = first;
	}
out:
	pages_drop(o, e, d->d_buf, n * sh->sh_entsize);
	pages_drop(o, e, sd->d_buf, sd->d_size);
	free(pend);
	budget_release(pend_bytes);
	return rc;
}

static void
read_build_id(Elf *e, Elf_Scn *scn, char out[41])
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, noff, name_off, desc_off, i;
	GElf_Nhdr nh;

	if (d == NULL)
		return;
	(void)e;
	while ((noff = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID_ && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= 20) {
			const unsigned char *p = (const unsigned char *)d->d_buf + desc_off;

			for (i = 0; i < nh.n_descsz; i++)
				snprintf(out + 2 * i, 3, "%02x", p[i]);
			return;
		}
		off = noff;
	}
}

static uint64_t
rd(const unsigned char *p, unsigned size)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < size; i++)	/* little-endian: x86-64 and arm64 */
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * Function names of a stripped Go binary from its .gopclntab (the runtime's
 * own table, present even without .symtab). Layouts by header magic:
 *   0xfffffffb (Go 1.2-1.15)  functab {pc, funcoff uintptr} at 8+ptrsize,
 *                             _func {entry uintptr, nameoff int32}, names from the table start
 *   0xfffffffa (Go 1.16-1.17) offsets at 8+ptrsize*{2 funcname, 6 pcln},
 *                             functab {entry, funcoff uintptr}, _func {entry uintptr, nameoff int32}
 *   0xfffffff0/1 (Go 1.18+)   textStart at 8+2*ptrsize, offsets at 8+ptrsize*{3 funcname, 7 pcln},
 *                             functab {entryoff, funcoff uint32}, _func {entryoff uint32, nameoff int32}
 * A function ends where the next one starts. Everything is bounds-checked.
 */
static int
read_gopclntab(Elf *e, Elf_Scn *scn, struct elfobj *o)
{
	size_t room, cost = 0, want = 0, est;
	Elf_Data *d = elf_getdata(scn, NULL);
	const unsigned char *b;
	uint64_t n, nfunc, text = 0, names, pcln, ftab, i;
	unsigned ps, esz;
	uint32_t magic;

	if (d == NULL || d->d_buf == NULL || d->d_size < 16)
		return 0;
	b = d->d_buf;
	n = d->d_size;
	magic = (uint32_t)rd(b, 4);
	ps = b[7];
	if ((ps != 4 && ps != 8) || n < 8 + 8 * (uint64_t)ps)
		return 0;
	nfunc = rd(b + 8, ps);
	switch (magic) {
	case 0xfffffffb:
		names = 0;
		pcln = 0;
		ftab = 8 + ps;
		esz = ps;
		break;
	case 0xfffffffa:
		names = rd(b + 8 + 2 * ps, ps);
		pcln = rd(b + 8 + 6 * ps, ps);
		ftab = pcln;
		esz = ps;
		break;
	case 0xfffffff0:
	case 0xfffffff1:
		text = rd(b + 8 + 2 * ps, ps);
		names = rd(b + 8 + 3 * ps, ps);
		pcln = rd(b + 8 + 7 * ps, ps);
		ftab = pcln;
		esz = 4;
		break;
	default:
		return 0;
	}
	if (nfunc > ELF_MAX_SYMS || ftab > n || (nfunc + 1) * 2 * esz > n - ftab)
		return 0;
	/* Room for about all of them, made by the tables not in use (symtab_evict()). */
	est = nfunc * (sizeof(struct sym) + 32);
	if (est > symtab_obj_cap())
		est = symtab_obj_cap();
	if (o->s && est > obj_room(o))
		symtab_evict(o->s, o, est);
	room = obj_room(o);
	for (i = 0; i < nfunc; i++) {
		const unsigned char *fe = b + ftab + i * 2 * esz;
		uint64_t entry = rd(fe, esz), next = rd(fe + 2 * esz, esz);
		uint64_t fo = pcln + rd(fe + esz, esz), no;
		const char *name;
		size_t len;

		if (fo > n || n - fo < (uint64_t)esz + 4 || next <= entry)
			continue;
		no = names + (uint32_t)rd(b + fo + esz, 4);
		if (no >= n)
			continue;
		name = (const char *)b + no;
		len = strnlen(name, n - no);
		if (len == 0 || len == n - no)
			continue;
		want++;
		/* Past o's room (obj_room()), or memory refused: the table is cut here. */
		if (cost + sym_cost(len) > room || o->names.len > UINT32_MAX - SYM_NAME_MAX - 1 ||
		    syms_reserve(o, o->nsyms + 1 > o->scap ? o->scap * 2 + 1024 : 0) < 0) {
			o->cut = true;
			continue;
		}
		cost += sym_cost(len);
		o->syms[o->nsyms].addr = text + entry;
		o->syms[o->nsyms].size = next - entry;
		o->syms[o->nsyms].name = (uint32_t)o->names.len;
		if (name_add(&o->names, name, len, "") < 0) {
			o->names.err = 0;
			continue;
		}
		o->nsyms++;
		if (i % 65536 == 65535)
			pages_drop(o, e, b, n);
	}
	pages_drop(o, e, b, n);
	o->wanted += want;
	return 0;
}

/*
 * Read an ELF file: segments, build id, function symbols (.symtab, else
 * .gopclntab for Go, else .dynsym; a debug file only adds its .symtab) and the
 * .gnu_debuglink name. has_symtab says whether a full table was found.
 */
/*
 * MiniDebugInfo: an xz-compressed ELF in .gnu_debugdata holding a .symtab of
 * the functions .dynsym lacks (Fedora and others ship binaries so). Its
 * symbols join those of .dynsym. Decompression is bounded (64 MiB out,
 * 256 MiB of decoder memory).
 */
static int
read_minidebuginfo(Elf_Scn *scn, struct elfobj *o)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t out_cap = 1 << 20, in_pos, out_pos, charged = 0;
	unsigned char *out = NULL, *nb;
	uint64_t memlimit;
	Elf_Scn *s = NULL;
	GElf_Shdr sh;
	lzma_ret lr;
	Elf *e = NULL;
	int rc = 0;

	if (d == NULL || d->d_buf == NULL || d->d_size == 0)
		return 0;
	for (;;) {
		/* The decompressed image is charged while it is read. */
		if (budget_reserve(out_cap - charged) < 0)
			goto out;
		if ((nb = realloc(out, out_cap)) == NULL) {
			budget_release(out_cap - charged);
			goto out;
		}
		charged = out_cap;
		out = nb;
		in_pos = out_pos = 0;
		memlimit = 256u << 20;
		lr = lzma_stream_buffer_decode(&memlimit, 0, NULL, d->d_buf, &in_pos, d->d_size,
		    out, &out_pos, out_cap);
		if (lr == LZMA_OK)
			break;
		if (lr != LZMA_BUF_ERROR || out_cap >= (64u << 20))
			goto out;	/* not xz, corrupt, or too big: ignored */
		out_cap *= 4;
	}
	if ((e = elf_memory((char *)out, out_pos)) == NULL || elf_kind(e) != ELF_K_ELF)
		goto out;
	while ((s = elf_nextscn(e, s)) != NULL)
		if (gelf_getshdr(s, &sh) != NULL && sh.sh_type == SHT_SYMTAB) {
			/* Not a full .symtab: a debug file, if any, is still looked for. */
			rc = read_symtab(e, s, &sh, o);
			break;
		}
out:
	if (e)
		elf_end(e);
	free(out);
	budget_release(charged);
	return rc;
}

struct got_name {
	uint64_t	 got;		/* address of the GOT slot */
	const char	*name;		/* in the ELF's .dynstr */
};

static int
got_cmp(const void *a, const void *b)
{
	const struct got_name *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* GOT slot -> symbol of the JUMP_SLOT and GLOB_DAT relocations of one RELA section. */
static int
read_got_names(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct got_name **v, size_t *n,
    size_t *vcap)
{
	Elf_Data *d = elf_getdata(scn, NULL), *syms;
	Elf_Scn *symscn = elf_getscn(e, sh->sh_link);
	GElf_Shdr symsh;
	size_t i, cnt;

	if (d == NULL || sh->sh_entsize == 0 || symscn == NULL ||
	    gelf_getshdr(symscn, &symsh) == NULL || (syms = elf_getdata(symscn, NULL)) == NULL)
		return 0;
	cnt = sh->sh_size / sh->sh_entsize;
	if (cnt > ELF_MAX_SYMS)
		return 0;
	for (i = 0; i < cnt; i++) {
		const char *name;
		GElf_Rela r;
		GElf_Sym sym;
		unsigned type;

		if (gelf_getrela(d, (int)i, &r) == NULL)
			break;
		type = (unsigned)GELF_R_TYPE(r.r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) == NULL ||
		    (name = elf_strptr(e, symsh.sh_link, sym.st_name)) == NULL || *name == '\0')
			continue;
		if (*n == *vcap) {
			/* Charged while the stubs are named (read_plt). */
			if (*n >= GOTS_MAX || budget_reserve((*vcap ? *vcap : 8) * sizeof(**v)) < 0)
				break;
			*v = xgrow(*v, vcap, *n + 1, sizeof(**v));
		}
		(*v)[*n].got = r.r_offset;
		(*v)[*n].name = name;
		(*n)++;
	}
	return 0;
}

/*
 * PLT stubs as "name@plt". Each entry of .plt, .plt.sec and .plt.got jumps
 * through its GOT slot (ff 25 disp32, rip-relative), and the relocation of
 * that slot names the function: no assumption about entry order or size
 * beyond the section's entry size (16, or 8 for .plt.got).
 */
static int
read_plt(Elf *e, size_t shstrndx, struct elfobj *o)
{
	struct got_name *gots = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t ngots = 0, gcap = 0;
	int rc = 0;

	while ((scn = elf_nextscn(e, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_RELA &&
		    (rc = read_got_names(e, scn, &sh, &gots, &ngots, &gcap)) < 0)
			goto out;
	if (ngots == 0)
		goto out;
	qsort(gots, ngots, sizeof(*gots), got_cmp);
	scn = NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *sname;
		const unsigned char *b;
		uint64_t esz, k;
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    (sname = elf_strptr(e, shstrndx, sh.sh_name)) == NULL ||
		    (strcmp(sname, ".plt") != 0 && strcmp(sname, ".plt.sec") != 0 &&
		    strcmp(sname, ".plt.got") != 0) ||
		    (d = elf_getdata(scn, NULL)) == NULL || d->d_buf == NULL)
			continue;
		esz = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ? sh.sh_entsize :
		    strcmp(sname, ".plt.got") == 0 ? 8 : 16;
		b = d->d_buf;
		for (k = 0; k + esz <= d->d_size && k / esz < ELF_MAX_SYMS; k += esz) {
			struct got_name key, *hit;
			uint64_t j;

			for (j = 0; j + 6 <= esz; j++)
				if (b[k + j] == 0xff && b[k + j + 1] == 0x25)
					break;
			if (j + 6 > esz)
				continue;	/* PLT0: pushes and jumps to the resolver */
			key.got = sh.sh_addr + k + j + 6 + (uint64_t)(int64_t)(int32_t)rd(b + k + j + 2, 4);
			hit = bsearch(&key, gots, ngots, sizeof(*gots), got_cmp);
			if (hit == NULL)
				continue;
			if (o->nsyms == o->scap && (obj_room(o) < 1024 * sizeof(struct sym) ||
			    syms_reserve(o, o->scap * 2 + 1024) < 0))
				goto out;	/* no room: the stubs go unnamed */
			if (o->names.len > UINT32_MAX - SYM_NAME_MAX - 1)
				break;
			o->syms[o->nsyms].addr = sh.sh_addr + k;
			o->syms[o->nsyms].size = esz;
			o->syms[o->nsyms].name = (uint32_t)o->names.len;
			if (name_add(&o->names, hit->name, strnlen(hit->name, SYM_NAME_MAX + 1),
			    "@plt") < 0) {
				rc = -ENOMEM;
				goto out;
			}
			o->nsyms++;
		}
	}
out:
	free(gots);
	budget_release(gcap * sizeof(*gots));
	return rc;
}

/*
 * The entry point of a main executable is the C runtime's _start, which the
 * process root frame of every stack is in: name it even in a binary stripped
 * of every symbol. On x86-64 it ends at its hlt (glibc, musl); without one
 * in the first 256 bytes it stays unnamed.
 */
static void
find_entry(Elf *e, const GElf_Ehdr *eh, struct elfobj *o)
{
	size_t i, k;

	if (eh->e_machine != EM_X86_64 || eh->e_entry == 0)
		return;
	for (i = 0; i < o->nsegs; i++) {
		const struct segment *g = &o->segs[i];
		Elf_Data *d;
		uint64_t off, n;

		if (!g->exec || eh->e_entry < g->vaddr || eh->e_entry - g->vaddr >= g->filesz)
			continue;
		off = g->offset + (eh->e_entry - g->vaddr);
		n = g->filesz - (eh->e_entry - g->vaddr);
		if (n > 256)
			n = 256;
		if ((d = elf_getdata_rawchunk(e, (int64_t)off, n, ELF_T_BYTE)) == NULL ||
		    d->d_buf == NULL)
			return;
		for (k = 0; k < d->d_size; k++)
			if (((const unsigned char *)d->d_buf)[k] == 0xf4) {
				o->entry = eh->e_entry;
				o->entry_size = k + 1;
				return;
			}
		return;
	}
}

/* Add _start at the entry point unless a symbol covers it already. */
static void
add_entry(struct elfobj *o)
{
	size_t i;

	if (o->entry_size == 0)
		return;
	for (i = 0; i < o->nsyms; i++)
		if (o->entry - o->syms[i].addr < o->syms[i].size)
			return;
	if (o->names.len > UINT32_MAX - 8 || syms_reserve(o, o->nsyms + 1) < 0)
		return;
	o->syms[o->nsyms].addr = o->entry;
	o->syms[o->nsyms].size = o->entry_size;
	o->syms[o->nsyms].name = (uint32_t)o->names.len;
	if (buf_add(&o->names, "_start", 7) < 0)
		return;
	o->nsyms++;
}

/* --- glibc's hidden functions ------------------------------------------- */

/*
 * A container's libc without its debug package exports neither the entry
 * functions of its threads and of its main thread nor its other internal
 * functions: every stack would start at unnamed libc frames. What can be
 * known without debug symbols, from the code itself (glibc 2.34 on,
 * x86-64):
 *
 *   __clone3                 the FDE holding "mov $435,%eax" just before a
 *                            syscall (the clone3 system call: the parent's
 *                            part; the symbol is hidden), and the next FDE,
 *                            the child's part, where every thread's stack
 *                            starts (its CFI ends the unwind): it calls the
 *                            thread's function (call *%rdx)
 *   start_thread             the one function whose address pthread_create,
 *                            or a function it calls, loads into %rsi (lea
 *                            X(%rip),%rsi: the function handed to
 *                            __clone_internal)
 *   __libc_start_call_main   the one function __libc_start_main calls that
 *                            calls exit (it runs main, then exit)
 *
 * Each is named only when exactly one function fits; every other FDE that
 * no symbol covers is named by its start, "libc.so.6+0x29c30" (one name per
 * function, not per address). A debug file read later (by build id, or from
 * debuginfod) replaces all of them (finish_syms()).
 */
#define LIBC_FN_MAX	(64u << 10)	/* bytes of one function looked at */
#define LIBC_REFS	8

/* The bytes at ELF address vaddr of o's executable segments (owned by e), or NULL. */
static const uint8_t *
code_at(Elf *e, const struct elfobj *o, uint64_t vaddr, uint64_t len)
{
	Elf_Data *d;
	size_t i;

	if (len == 0 || len > LIBC_FN_MAX)
		return NULL;
	for (i = 0; i < o->nsegs; i++) {
		const struct segment *g = &o->segs[i];

		if (!g->exec || vaddr < g->vaddr || vaddr - g->vaddr >= g->filesz ||
		    len > g->filesz - (vaddr - g->vaddr))
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)(g->offset + (vaddr - g->vaddr)), len,
		    ELF_T_BYTE);
		return d && d->d_buf ? d->d_buf : NULL;
	}
	return NULL;
}

static int32_t
s32_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The FDE starting exactly at a that no symbol covers, or NULL. */
static const struct ehrange *
fde_unnamed(const struct elfobj *o, const struct ehrange *r, size_t n, uint64_t a)
{
	const struct ehrange *x = ehframe_find(r, n, a);

	return x && x->start == a && symbolize_elf_lookup(o, a) == NULL ? x : NULL;
}

/* The function named name in o's table: its address (0: none) and size. */
static uint64_t
sym_named(const struct elfobj *o, const char *name, uint64_t *size)
{
	size_t i;

	for (i = 0; i < o->nsyms; i++)
		if (o->syms[i].size > 0 && strcmp(o->names.data + o->syms[i].name, name) == 0) {
			*size = o->syms[i].size;
			return o->syms[i].addr;
		}
	return 0;
}

/*
 * The targets of the rel32 operands after the opcode bytes op (oplen) in the
 * code of [fn, fn + size): into t (at most LIBC_REFS, distinct), how many.
 * The code is not decoded: every such byte run is looked at (the caller
 * keeps only targets that are functions).
 */
static size_t
rel_targets(Elf *e, const struct elfobj *o, uint64_t fn, uint64_t size, const char *op,
    size_t oplen, uint64_t *t, size_t cap)
{
	const uint8_t *c = code_at(e, o, fn, size);
	size_t i, j, k = 0;

	for (i = 0; c != NULL && i + oplen + 4 <= size; i++) {
		uint64_t a;

		if (memcmp(c + i, op, oplen) != 0)
			continue;
		a = fn + i + oplen + 4 + (uint64_t)(int64_t)s32_at(c + i + oplen);
		for (j = 0; j < k && t[j] != a; j++)
			;
		if (j == k && k < cap)
			t[k++] = a;
	}
	return k;
}

/* Whether the code of x calls (call rel32) a. */
static bool
fde_calls(Elf *e, const struct elfobj *o, const struct ehrange *x, uint64_t a)
{
	const uint8_t *c = code_at(e, o, x->start, x->end - x->start);
	size_t i;

	for (i = 0; c != NULL && i + 5 <= x->end - x->start; i++)
		if (c[i] == 0xe8 && x->start + i + 5 + (uint64_t)(int64_t)s32_at(c + i + 1) == a)
			return true;
	return false;
}

/* Add to *found the unnamed functions that fn's code loads into %rsi. */
static void
rsi_funcs(Elf *e, const struct elfobj *o, const struct ehrange *r, size_t n, uint64_t fn,
    uint64_t size, uint64_t *found, size_t *nfound)
{
	uint64_t t[4 * LIBC_REFS];
	size_t k, i, j;

	k = rel_targets(e, o, fn, size, "\x48\x8d\x35", 3, t, sizeof(t) / sizeof(t[0]));
	for (i = 0; i < k; i++) {
		if (fde_unnamed(o, r, n, t[i]) == NULL)
			continue;
		for (j = 0; j < *nfound && found[j] != t[i]; j++)
			;
		if (j == *nfound && *nfound < LIBC_REFS)
			found[(*nfound)++] = t[i];
	}
}

/* The three entry functions of a glibc libc, as far as its code tells (0: not known). */
static void
libc_entries(Elf *e, const struct elfobj *o, const struct ehrange *r, size_t n,
    uint64_t *clone3, uint64_t *clone3_child, uint64_t *thread, uint64_t *call_main)
{
	static const uint8_t sys_clone3[] = { 0xb8, 0xb3, 0x01, 0x00, 0x00, 0x0f, 0x05 };
	uint64_t fn, size, ex, exsz, t[4 * LIBC_REFS], found[LIBC_REFS];
	size_t i, k, nfound = 0, hits = 0;
	const struct ehrange *x, *hit = NULL;

	*clone3 = *clone3_child = *thread = *call_main = 0;
	/* __clone3: its system call, in one unnamed FDE (the syscall may end it). */
	for (i = 0; i < n; i++) {
		const uint8_t *c;
		uint64_t len = r[i].end - r[i].start + 2, j;

		if (symbolize_elf_lookup(o, r[i].start) != NULL ||
		    (c = code_at(e, o, r[i].start, len)) == NULL)
			continue;
		for (j = 0; j + sizeof(sys_clone3) <= len; j++)
			if (memcmp(c + j, sys_clone3, sizeof(sys_clone3)) == 0 &&
			    r[i].start + j < r[i].end) {
				hit = &r[i];
				hits++;
				break;
			}
	}
	if (hits == 1 && hit + 1 < r + n && hit[1].start - hit->end < 64 &&
	    symbolize_elf_lookup(o, hit[1].start) == NULL) {
		const uint8_t *c = code_at(e, o, hit[1].start, hit[1].end - hit[1].start);

		/* The child's part calls the thread's function: call *%rdx. */
		for (i = 0; c != NULL && i + 2 <= hit[1].end - hit[1].start; i++)
			if (c[i] == 0xff && c[i + 1] == 0xd2) {
				*clone3 = hit->start;
				*clone3_child = hit[1].start;
				break;
			}
	}
	/* start_thread: what pthread_create (or a function it calls) hands on in %rsi. */
	if ((fn = sym_named(o, "pthread_create", &size)) != 0) {
		rsi_funcs(e, o, r, n, fn, size, found, &nfound);
		k = rel_targets(e, o, fn, size, "\xe8", 1, t, sizeof(t) / sizeof(t[0]));
		for (i = 0; i < k; i++)
			if ((x = fde_unnamed(o, r, n, t[i])) != NULL)
				rsi_funcs(e, o, r, n, x->start, x->end - x->start, found, &nfound);
		if (nfound == 1)
			*thread = found[0];
	}
	/* __libc_start_call_main: what __libc_start_main calls that calls exit. */
	if ((fn = sym_named(o, "__libc_start_main", &size)) != 0 &&
	    (ex = sym_named(o, "exit", &exsz)) != 0) {
		k = rel_targets(e, o, fn, size, "\xe8", 1, t, sizeof(t) / sizeof(t[0]));
		for (i = 0, nfound = 0; i < k; i++)
			if ((x = fde_unnamed(o, r, n, t[i])) != NULL && fde_calls(e, o, x, ex))
				found[nfound++] = x->start;
		if (nfound == 1)
			*call_main = found[0];
	}
}

/* Name o's functions that no symbol covers from its FDEs (above). */
static void
libc_fde_names(Elf *e, struct elfobj *o)
{
	uint64_t clone3, child, thread, call_main;
	struct ehrange *r = NULL;
	size_t n, i, add = 0;
	char nm[64];

	if (ehframe_ranges(e, &r, &n) < 0)
		return;
	/* Lookups below need the table sorted (finish_syms() sorts it again, cheaply). */
	budget_charge(o->nsyms * sizeof(*o->syms));
	qsort(o->syms, o->nsyms, sizeof(*o->syms), sym_cmp);
	budget_release(o->nsyms * sizeof(*o->syms));
	for (i = 0; i < n; i++)
		add += symbolize_elf_lookup(o, r[i].start) == NULL;
	if (add == 0 || o->names.len > UINT32_MAX - add * sizeof(nm) ||
	    syms_reserve(o, o->nsyms + add) < 0)
		goto out;
	libc_entries(e, o, r, n, &clone3, &child, &thread, &call_main);
	o->synth_lo = (uint32_t)o->names.len;
	for (i = 0; i < n; i++) {
		uint64_t a = r[i].start;
		size_t k;

		if (symbolize_elf_lookup(o, a) != NULL)
			continue;
		if (a == clone3 || a == child)
			snprintf(nm, sizeof(nm), "__clone3");
		else if (a == thread)
			snprintf(nm, sizeof(nm), "start_thread");
		else if (a == call_main)
			snprintf(nm, sizeof(nm), "__libc_start_call_main");
		else
			snprintf(nm, sizeof(nm), "%s+0x%llx", o->soname, (unsigned long long)a);
		k = o->nsyms;
		o->syms[k].addr = a;
		o->syms[k].size = r[i].end - a;
		o->syms[k].name = (uint32_t)o->names.len;
		if (buf_add(&o->names, nm, strlen(nm) + 1) < 0)
			break;
		o->nsyms++;
	}
	o->synth_hi = (uint32_t)o->names.len;
	log_debug("ebpf: %s %s: %zu functions named from their FDEs until a debug file names "
	    "them (__clone3 %s, start_thread %s, __libc_start_call_main %s)", o->soname,
	    o->build_id, add,
	    clone3 ? "found" : "not found", thread ? "found" : "not found",
	    call_main ? "found" : "not found");
out:
	free(r);
}

static int
read_elf_image(Elf *e, struct elfobj *o, bool debug_file, bool *has_symtab,
    char *debuglink, size_t dlsize)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL, *gopclntab = NULL, *minidebug = NULL;
	GElf_Shdr sh_symtab, sh_dynsym, sh;
	size_t shstrndx, phnum, i;
	GElf_Ehdr eh;
	int rc = 0;

	*has_symtab = false;
	if (e == NULL || elf_kind(e) != ELF_K_ELF || gelf_getehdr(e, &eh) == NULL ||
	    elf_getshdrstrndx(e, &shstrndx) != 0) {
		rc = -ENOEXEC;
		goto out;
	}
	if (!debug_file && elf_getphdrnum(e, &phnum) == 0) {
		bool interp = false;

		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) != NULL && ph.p_type == PT_INTERP)
				interp = true;
			if (gelf_getphdr(e, (int)i, &ph) == NULL || ph.p_type != PT_LOAD)
				continue;
			o->segs = xreallocarray(o->segs, o->nsegs + 1, sizeof(*o->segs));
			o->segs[o->nsegs].vaddr = ph.p_vaddr;
			o->segs[o->nsegs].offset = ph.p_offset;
			o->segs[o->nsegs].filesz = ph.p_filesz;
			o->segs[o->nsegs].exec = (ph.p_flags & PF_X) != 0;
			o->nsegs++;
		}
		if (interp || eh.e_type == ET_EXEC)
			find_entry(e, &eh, o);
	}
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			sh_symtab = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			sh_dynsym = sh;
		} else if (name && strcmp(name, ".gnu_debugdata") == 0 && !debug_file) {
			minidebug = scn;
		} else if (name && strcmp(name, ".gopclntab") == 0 && !debug_file) {
			gopclntab = scn;
		} else if (sh.sh_type == SHT_NOTE && o->build_id[0] == '\0' && !debug_file) {
			read_build_id(e, scn, o->build_id);
		} else if (name && strcmp(name, ".debug_info") == 0 && sh.sh_type == SHT_PROGBITS &&
		    sh.sh_size > 0 && sh.sh_size <= MAX_DEBUG_INFO && !(sh.sh_flags & SHF_COMPRESSED)) {
			/*
			 * Only plain DWARF of moderate size: libdw would inflate
			 * compressed sections (Go's) whole into memory.
			 */
			o->debug_info = true;
		} else if (debuglink && name && strcmp(name, ".gnu_debuglink") == 0) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d && d->d_size > 0 && d->d_buf) {
				size_t n = strnlen(d->d_buf, d->d_size);

				if (n < dlsize) {
					memcpy(debuglink, d->d_buf, n);
					debuglink[n] = '\0';
				}
			}
		}
	}
	if (symtab) {
		*has_symtab = true;
		o->full_symtab = true;
		rc = read_symtab(e, symtab, &sh_symtab, o);
	} else if (gopclntab) {
		/* A stripped Go binary: the runtime's table names every function. */
		*has_symtab = true;
		rc = read_gopclntab(e, gopclntab, o);
	} else if (dynsym && !debug_file) {
		rc = read_symtab(e, dynsym, &sh_dynsym, o);
	}
	/* Go: names and lines are the runtime's own business (.gopclntab), not DWARF's. */
	if (gopclntab)
		o->debug_info = false;
	if (rc == 0 && !*has_symtab && minidebug)
		rc = read_minidebuginfo(minidebug, o);
	if (rc == 0 && !debug_file && eh.e_machine == EM_X86_64)
		rc = read_plt(e, shstrndx, o);
	if (rc == 0 && !debug_file && !*has_symtab && o->libc && eh.e_machine == EM_X86_64)
		libc_fde_names(e, o);
out:
	return rc;
}

int
symbolize_open(const char *path, bool follow, off_t max_size)
{
	struct stat st;
	int fd;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW))) < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (max_size && st.st_size > max_size)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/*
 * The ELF file open on fd (the caller's, left open). A file keeps a
 * duplicate of fd for its DWARF.
 */
static int
read_elf_fd(int fd, struct elfobj *o, bool debug_file, bool *has_symtab, char *debuglink,
    size_t dlsize)
{
	Elf *e;
	int rc;

	*has_symtab = false;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	o->debug_info = false;
	o->mapped = true;
	rc = read_elf_image(e, o, debug_file, has_symtab, debuglink, dlsize);
	o->mapped = false;
	/* Keep the file that has DWARF (the binary, or its debug file) for file:line. */
	if (rc == 0 && o->debug_info && o->dw_fd <= 0 && dwarf_fds < MAX_DWARF_FDS &&
	    (o->dw_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) > 0)
		dwarf_fds++;
	if (e)
		elf_end(e);
	return rc;
}

/*
 * A .gnu_debuglink names a file in the binary's directory or a debug
 * directory: a plain name, never a path ("../../etc/shadow") or a dot name.
 */
static bool
debuglink_ok(const char *link)
{
	const char *c;

	if (link[0] == '\0' || link[0] == '.' || strlen(link) > NAME_MAX)
		return false;
	for (c = link; *c; c++)
		if (*c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/*
 * Debug files are looked for as the process's owner would: in its root
 * (/proc/PID/root), with its credentials (owner.h), on a worker with a
 * deadline (rio.h: the path may cross a mount that never answers), so that
 * a name a process controls (its build id, its .gnu_debuglink, the
 * directories its mount namespace shows) never opens a file its owner could
 * not read. Where the credentials cannot be taken (the daemon runs as a
 * user without CAP_SETUID), only a file everyone may read, in a directory
 * everyone may search, is used.
 */

/*
 * Read the debug file at path if the process's owner (pid's; 0: none, the
 * root is the caller's) could, opened off this thread (rio.h): 0 when it
 * had a symtab, -ETIMEDOUT when the open did not end in time (or failed for want
 * of memory, a thread or a descriptor).
 */
static int
try_debug_file(struct elfobj *o, const char *path, pid_t pid)
{
	bool has;
	int fd, rc;

	fd = rio_open(rio_self(), pid, path, pid > 0 ? RIO_AS_OWNER | RIO_PUBLIC : 0, 0, NULL);
	/* Out of memory, threads or descriptors says nothing of the file: as a stall, unsure. */
	if (fd == -ENOMEM || fd == -EAGAIN || fd == -EMFILE || fd == -ENFILE || fd == -EINTR)
		return -ETIMEDOUT;
	if (fd < 0)
		return fd == -EACCES || fd == -ETIMEDOUT ? fd : -ENOENT;
	rc = read_elf_fd(fd, o, true, &has, NULL, 0);
	close(fd);
	return rc == 0 && has ? 0 : -ENOENT;
}

/* Whether process pid (> 0) is gone: its root can no longer be looked into. */
static bool
proc_gone(unsigned pid)
{
	char path[64], target[8];

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	return readlink(path, target, sizeof(target)) < 0;
}

/*
 * A separate debug file: by build id, then by .gnu_debuglink next to the
 * file, inside root (the process's: "/proc/PID/root", or another the
 * caller trusts), never in ours. 1: a symbol table was read; 0: there is
 * none; -EAGAIN: the process went away before every place was looked at
 * (its root with it) or an open did not end in time, so that nothing may
 * be concluded about the file.
 */
static int
read_debug_file(struct elfobj *o, const char *root, const char *name, const char *link)
{
	char path[PATH_MAX], dir[PATH_MAX];
	unsigned pid = 0;
	int d, end = 0, rc;
	bool unsure = false;

	if (root == NULL || root[0] == '\0')
		return 0;
	if (!(sscanf(root, "/proc/%u/root%n", &pid, &end) == 1 && root[end] == '\0' &&
	    pid > 0 && pid <= INT_MAX))
		pid = 0;
	if (root[0] == '/' && root[1] == '\0')
		root = "";
	if (o->build_id[0] && strlen(o->build_id) > 2) {
		snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
		    root, o->build_id, o->build_id + 2);
		if ((rc = try_debug_file(o, path, (pid_t)pid)) == 0)
			return 1;
		unsure |= rc == -ETIMEDOUT;
	}
	if (!debuglink_ok(link) || name == NULL || name[0] != '/')
		return unsure || (pid > 0 && proc_gone(pid)) ? -EAGAIN : 0;
	snprintf(dir, sizeof(dir), "%s", name);
	*strrchr(dir, '/') = '\0';
	for (d = 0; d < 3; d++) {
		static const char *fmt[3] = { "%s%s/%s", "%s%s/.debug/%s",
		    "%s/usr/lib/debug%s/%s" };

		snprintf(path, sizeof(path), fmt[d], root, dir, link);
		if (strcmp(path + strlen(root), name) == 0)
			continue;	/* the file itself */
		if ((rc = try_debug_file(o, path, (pid_t)pid)) == 0)
			return 1;
		unsure |= rc == -ETIMEDOUT;
	}
	return unsure || (pid > 0 && proc_gone(pid)) ? -EAGAIN : 0;
}

/*
 * The debug file of o from debuginfod's cache, or a fetch asked for
 * (request). True if a symbol table was read. o->dbg_wait says whether the
 * file may still come, o->dbg_missing whether to ask again later (not once
 * a file was read, symbol table or not).
 */
static bool
read_debuginfod(struct symbolizer *s, struct elfobj *o, bool request)
{
	bool has = false;
	int fd;

	o->dbg_wait = false;
	o->dbg_missing = false;
	if (s->dbg == NULL || o->build_id[0] == '\0')
		return false;
	switch (dbginfod_lookup(s->dbg, o->build_id, request, &fd)) {
	case DBGINFOD_READY:
		if (read_elf_fd(fd, o, true, &has, NULL, 0) < 0)
			has = false;
		close(fd);
		break;
	case DBGINFOD_PENDING:
		o->dbg_wait = true;
		o->dbg_missing = true;
		break;
	case DBGINFOD_NONE:
		o->dbg_missing = true;
		break;
	}
	return has;
}

static void
finish_syms(struct elfobj *o)
{
	struct sym *ns;
	size_t i, j;
	char *nm;

	if (o->full_symtab && o->synth_hi > o->synth_lo) {
		/* A symbol table came (a debug file): its names, not the FDEs'. */
		for (i = 0, j = 0; i < o->nsyms; i++)
			if (o->syms[i].name < o->synth_lo || o->syms[i].name >= o->synth_hi)
				o->syms[j++] = o->syms[i];
		o->nsyms = j;
		o->synth_lo = o->synth_hi = 0;
	}
	if (o->nsyms == 0) {
		table_free(o);
		obj_account(o);
		return;
	}
	budget_charge(o->nsyms * sizeof(*o->syms));	/* qsort's copy (names_copy()) */
	qsort(o->syms, o->nsyms, sizeof(*o->syms), sym_cmp);
	budget_release(o->nsyms * sizeof(*o->syms));
	for (i = 1, j = 0; i < o->nsyms; i++) {
		if (o->syms[i].addr == o->syms[j].addr)
			continue;	/* alias: keep the first (largest) */
		o->syms[++j] = o->syms[i];
	}
	o->nsyms = j + 1;
	/* Kept as long as the object: without the slack growth left (up to half). */
	if (o->scap > o->nsyms && (ns = realloc(o->syms, o->nsyms * sizeof(*o->syms))) != NULL) {
		budget_release((o->scap - o->nsyms) * sizeof(*o->syms));
		o->syms = ns;
		o->scap = o->nsyms;
	}
	if (o->names.cap > o->names.len + 1 &&
	    (nm = realloc(o->names.data, o->names.len + 1)) != NULL) {
		budget_release(o->names.cap - (o->names.len + 1));
		o->names.data = nm;
		o->names.cap = o->names.len + 1;
	}
	obj_account(o);
}

static struct elfobj **
slot(struct symbolizer *s, uint64_t dev, uint64_t ino)
{
	uint64_t key[2] = { dev, ino };
	size_t i = hash_bytes(key, sizeof(key)) & (s->cap - 1);

	while (s->objs[i] && (s->objs[i]->dev != dev || s->objs[i]->ino != ino))
		i = (i + 1) & (s->cap - 1);
	return &s->objs[i];
}

static int
grow(struct symbolizer *s)
{
	struct elfobj **old = s->objs;
	size_t oc = s->cap, i;

	if ((s->objs = calloc(oc * 2, sizeof(*s->objs))) == NULL) {
		s->objs = old;
		return -ENOMEM;
	}
	s->cap = oc * 2;
	for (i = 0; i < oc; i++)
		if (old[i])
			*slot(s, old[i]->dev, old[i]->ino) = old[i];
	free(old);
	return 0;
}

/*
 * Open a mapped file by path, off this thread when the path is a process's
 * (rio.h). By name in a process's root (/proc/PID/root/...), only the
 * mapping's own file (dev, ino): the name may have been replaced since.
 */
static int
open_mapped(const char *path, uint64_t dev, uint64_t ino)
{
	pid_t pid = rio_path_pid(path);
	struct stat st;
	int fd, end = 0;

	if (pid == 0)
		return symbolize_open(path, true, 0);
	if ((fd = rio_open(rio_self(), pid, path, RIO_FOLLOW, 0, &st)) < 0)
		return fd;
	(void)sscanf(path, "/proc/%*u/root/%n", &end);
	if (end > 0 && ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * Look for o's debug file by build id once more (LOCAL_DEBUG_TRIES times at
 * most, a second apart), in root: found, o's names are those of its symbol
 * table from now on.
 */
static void
local_debug_again(struct symbolizer *s, struct elfobj *o, const char *root)
{
	int64_t now;

	if (o->local_tries == 0 || root == NULL || o->dbg_wait)
		return;
	if ((now = clock_mono_ns() / 1000000000) < o->local_next)
		return;
	o->local_tries--;
	o->local_next = now + 1;
	if (read_debug_file(o, root, NULL, "") != 1)
		return;
	o->local_tries = 0;
	o->dbg_missing = false;
	finish_syms(o);
	/* Names moved (the blob grew) and addresses have names now. */
	memset(s->rcache, 0, RCACHE_SLOTS * sizeof(*s->rcache));
	log_debug("ebpf: build id %s: %zu functions with its debug file, found again",
	    o->build_id, o->nsyms);
}

static int read_elf_fd(int fd, struct elfobj *o, bool debug_file, bool *has_symtab,
    char *debuglink, size_t dlsize);
static int read_debug_file(struct elfobj *o, const char *root, const char *name,
    const char *link);
static int open_mapped(const char *path, uint64_t dev, uint64_t ino);
static void add_entry(struct elfobj *o);
static void finish_syms(struct elfobj *o);
static void symtab_cut_log(struct symbolizer *s, const struct elfobj *o, const char *name);

/*
 * o's table, let go for others' (symtab_evict()), read again now that a
 * process maps o anew, once its time came: as at its first load, from the
 * file and a local debug file (not debuginfod's, asked at most once).
 */
static void
table_reload(struct symbolizer *s, struct elfobj *o, const char *path, const char *root,
    const char *name)
{
	int64_t now = clock_mono_ns() / 1000000000;
	char link[256] = "";
	bool has = false;
	int fd;

	if (!o->dropped || now < o->reload_at)
		return;
	o->reload_at = now + 60;
	if ((fd = open_mapped(path, o->dev, o->ino)) < 0)
		return;
	/* Segments are read again with the table. */
	free(o->segs);
	o->segs = NULL;
	o->nsegs = 0;
	o->dropped = o->cut = false;
	o->wanted = 0;
	o->full_symtab = false;
	o->synth_lo = o->synth_hi = 0;
	if (read_elf_fd(fd, o, false, &has, link, sizeof(link)) == 0 && !has)
		(void)read_debug_file(o, root, name, link);
	close(fd);
	add_entry(o);
	finish_syms(o);
	rcache_clear(s);
	log_debug("ebpf: %s: its symbol table read again: %zu functions", name ? name : path,
	    o->nsyms);
	if (o->cut)
		symtab_cut_log(s, o, name ? name : path);
}

/* Say that o's table was cut (a few times with the reason, then quietly). */
static void
symtab_cut_log(struct symbolizer *s, const struct elfobj *o, const char *name)
{
	size_t total = symtab_cap();

	if (s->cuts++ < 16)
		log_warnx("ebpf: %s: %zu of its %zu functions kept: the symbol tables are held to "
		    "%zu MiB per binary and %zu MiB in all (a quarter of --memory-limit); the "
		    "others' frames go unnamed", name, o->nsyms, o->wanted, symtab_obj_cap() >> 20,
		    total >> 20);
	else
		log_debug("ebpf: %s: %zu of its %zu functions kept", name, o->nsyms, o->wanted);
}

/*
 * The daemon's own debug file of o by build id
 * (/usr/lib/debug/.build-id/xx/yyyy.debug in its root), for a file of a
 * process in another root (a container's) that has none: a debug file
 * belongs to exactly one build, so it is used only when its own build-id
 * note is o's, and only a file everyone may read (the build id is the
 * process's to choose). 1: a symbol table was read; 0: none.
 */
static int
read_host_debug(struct elfobj *o, const char *root)
{
	char path[PATH_MAX], id[41] = "";
	Elf_Scn *scn = NULL;
	struct stat st;
	GElf_Shdr sh;
	bool has = false;
	int fd, rc = 0;
	Elf *e;

	if (root == NULL || root[0] == '\0' || strcmp(root, "/") == 0 || strlen(o->build_id) <= 2)
		return 0;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", o->build_id,
	    o->build_id + 2);
	if ((fd = symbolize_open(path, true, 0)) < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !(st.st_mode & S_IROTH))
		goto out;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) != NULL) {
		while ((scn = elf_nextscn(e, scn)) != NULL && id[0] == '\0')
			if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_NOTE)
				read_build_id(e, scn, id);
		elf_end(e);
	}
	if (strcmp(id, o->build_id) != 0) {
		log_debug("ebpf: %s: build id %s, not the %s it is named for: not used", path,
		    id[0] ? id : "none", o->build_id);
		goto out;
	}
	if (read_elf_fd(fd, o, true, &has, NULL, 0) == 0 && has) {
		rc = 1;
		log_debug("ebpf: build id %s: the daemon's own debug file %s", o->build_id, path);
	}
out:
	close(fd);
	return rc;
}

/*
 * Remember o's file name (its last part) and whether it is glibc's libc,
 * whose hidden functions are named from their FDEs (libc_fde_names()).
 */
static void
obj_name(struct elfobj *o, const char *name, const char *path)
{
	const char *b = name ? name : path, *x;

	if (b == NULL)
		return;
	if ((x = strrchr(b, '/')) != NULL)
		b = x + 1;
	snprintf(o->soname, sizeof(o->soname), "%s", b);
	o->libc = strcmp(b, "libc.so.6") == 0 ||
	    (strncmp(b, "libc-2.", 7) == 0 && strlen(b) > 10 && strcmp(b + strlen(b) - 3, ".so") == 0);
}

struct elfobj *
symbolize_elf(struct symbolizer *s, uint64_t dev, uint64_t ino, const char *path,
    const char *root, const char *name)
{
	struct elfobj **sl = slot(s, dev, ino), *o;
	char link[256] = "";
	bool has_symtab;
	int rc;

	if (*sl) {
		(*sl)->used = (time_t)(clock_mono_ns() / 1000000000);
		(*sl)->last_use = ++s->uses;
		(*sl)->use_period = s->periods;
		if ((*sl)->bad)
			return NULL;
		table_reload(s, *sl, path, root, name);
		local_debug_again(s, *sl, root);
		(*sl)->refs++;
		return *sl;
	}
	if ((s->n + 1) * 2 > s->cap) {
		if (grow(s) < 0)
			return NULL;
		sl = slot(s, dev, ino);
	}
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	o->dev = dev;
	o->ino = ino;
	o->s = s;
	o->last_use = ++s->uses;
	o->use_period = s->periods;
	o->used = (time_t)(clock_mono_ns() / 1000000000);
	obj_name(o, name, path);
	rc = open_mapped(path, dev, ino);
	if (rc >= 0) {
		int fd = rc;

		rc = read_elf_fd(fd, o, false, &has_symtab, link, sizeof(link));
		close(fd);
	}
	if (rc == -ENOENT || rc == -EACCES || rc == -EPERM || rc == -ESRCH || rc == -ETIMEDOUT ||
	    rc == -EREMOTE || rc == -ESTALE) {
		/*
		 * The process may be gone, or this path not open to us (map_files
		 * needs CAP_SYS_ADMIN, a mount that does not answer, another file
		 * by that name now) while another is: remember nothing.
		 */
		elfobj_free(o);
		return NULL;
	}
	if (rc < 0) {
		log_debug("ebpf: %s: not usable for symbols (%s)", name ? name : path,
		    strerror(-rc));
		free(o->segs);
		table_free(o);
		obj_account(o);
		memset(o, 0, sizeof(*o));
		o->dev = dev;
		o->ino = ino;
		o->s = s;
		o->bad = true;
		o->used = (time_t)(clock_mono_ns() / 1000000000);
	} else {
		int dr = has_symtab ? 1 : read_debug_file(o, root, name, link);

		if (dr == 0 && read_host_debug(o, root) == 1)
			dr = 1;

		if (dr == -EAGAIN) {
			/* Its debug file is unknown, not missing: the next process's look decides. */
			elfobj_free(o);
			return NULL;
		}
		if (dr == 0 && !has_symtab) {
			/*
			 * The process that showed the file may have been leaving:
			 * look again, in the roots of the next processes mapping it.
			 */
			o->local_tries = LOCAL_DEBUG_TRIES;
			o->local_next = clock_mono_ns() / 1000000000 + 1;
		}
		if (dr == 0 && read_debuginfod(s, o, true))
			has_symtab = true;
		add_entry(o);
		finish_syms(o);
		log_debug("ebpf: loaded %s: %zu functions%s, build id %s", name ? name : path,
		    o->nsyms, has_symtab ? "" : " (no .symtab)",
		    o->build_id[0] ? o->build_id : "none");
		if (o->cut)
			symtab_cut_log(s, o, name ? name : path);
	}
	*sl = o;
	s->n++;
	if (o->bad)
		return NULL;
	o->refs++;
	return o;
}

int
symbolize_elf_line(struct elfobj *o, uint64_t vaddr, const char **file, int64_t *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	Dwarf_Off cu_off;
	const char *src;
	size_t i;
	int ln;

	*file = NULL;
	*line = 0;
	if (o->dw_fd <= 0 || o->dw_failed)
		return -ENOENT;
	if (o->dw == NULL) {
		if ((o->dw = dwarf_begin(o->dw_fd, DWARF_C_READ)) == NULL) {
			o->dw_failed = true;
			return -ENOENT;
		}
		o->dw_next = dw_open;
		dw_open = o;
	}
	if (dwarf_addrdie(o->dw, vaddr, &cu) == NULL)
		return -ENOENT;
	cu_off = dwarf_dieoffset(&cu);
	for (i = 0; i < o->dw_ncus && o->dw_cus[i] != cu_off; i++)
		;
	if (i == o->dw_ncus) {
		/* A unit's line table decoded now: counted (see symbolize_elf_resolve). */
		Dwarf_Lines *lines;
		size_t n = 0;

		if (dwarf_getsrclines(&cu, &lines, &n) != 0)
			n = 0;
		o->dw_cus = xgrow(o->dw_cus, &o->dw_cuscap, o->dw_ncus + 1, sizeof(*o->dw_cus));
		o->dw_cus[o->dw_ncus++] = cu_off;
		o->dw_lines += n;
		dwarf_lines += n;
	}
	if ((l = dwarf_getsrc_die(&cu, vaddr)) == NULL ||
	    (src = dwarf_linesrc(l, NULL, NULL)) == NULL || dwarf_lineno(l, &ln) != 0)
		return -ENOENT;
	/* A source file name past the bound is not one (see SYM_NAME_MAX). */
	*file = strnlen(src, SYM_NAME_MAX + 1) <= SYM_NAME_MAX ? src : NULL;
	*line = ln;
	return 0;
}

int
symbolize_vdso_image(const void **image, size_t *size)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR), start, end;
	char line[256];
	FILE *f;

	if (base == 0)
		return -ENOENT;
	if ((f = fopen("/proc/self/maps", "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &start, &end) == 2 &&
		    start == base) {
			fclose(f);
			*image = (const void *)base;
			*size = end - start;
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

struct elfobj *
symbolize_vdso(struct symbolizer *s)
{
	const void *img;
	struct elfobj *o;
	size_t size;
	bool has;
	Elf *e;

	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;
	if (symbolize_vdso_image(&img, &size) < 0 || (o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	o->s = s;
	/* elf_memory wants a writable image; it only reads this one (ELF_C_READ_MMAP semantics). */
	e = elf_memory((char *)img, size);
	if (read_elf_image(e, o, false, &has, NULL, 0) < 0) {
		if (e)
			elf_end(e);
		elfobj_free(o);
		return NULL;
	}
	elf_end(e);
	finish_syms(o);
	o->refs = 1;	/* never expired */
	s->vdso = o;
	log_debug("ebpf: vdso: %zu functions, build id %s", o->nsyms,
	    o->build_id[0] ? o->build_id : "none");
	return o;
}

void
symbolize_elf_put(struct elfobj *o)
{
	if (o && o->refs > 0)
		o->refs--;
}

int
symbolize_elf_bias(const struct elfobj *o, uint64_t start, uint64_t off, uint64_t *bias)
{
	size_t i, pass;

	/* Executable segments first: we only symbolize executable mappings. */
	for (pass = 0; pass < 2; pass++)
	for (i = 0; i < o->nsegs; i++) {
		const struct segment *g = &o->segs[i];

		if (pass == 0 && !g->exec)
			continue;
		/* The mapping's first page holds file offset `off`. */
		if (off >= (g->offset & ~(uint64_t)0xfff) && off < g->offset + g->filesz) {
			*bias = start - off - g->vaddr + g->offset;
			return 0;
		}
	}
	return -ENOENT;
}

const char *
symbolize_elf_lookup(const struct elfobj *o, uint64_t vaddr)
{
	size_t lo = SEARCH_LE(o->syms, o->nsyms, addr, vaddr), k;

	/* lo-1 is the last symbol starting at or below vaddr; nested ones may precede it. */
	for (k = 0; k < 4 && lo > k; k++) {
		const struct sym *y = &o->syms[lo - 1 - k];

		if (vaddr - y->addr < y->size)
			return o->names.data + y->name;
	}
	return NULL;
}

static struct rcache_ent *
rcache_slot(struct symbolizer *s, const void *o, uint64_t vaddr)
{
	uint64_t h = (vaddr ^ (uint64_t)(uintptr_t)o * 0xc2b2ae3d27d4eb4fULL) *
	    0x9e3779b97f4a7c15ULL;

	return &s->rcache[(h >> 40) & (RCACHE_SLOTS - 1)];
}

void
symbolize_elf_resolve(struct symbolizer *s, struct elfobj *o, uint64_t vaddr,
    const char **func, const char **srcfile, int64_t *line)
{
	struct rcache_ent *c;

	if (s->trims_seen != dwarf_trims) {
		memset(s->rcache, 0, RCACHE_SLOTS * sizeof(*s->rcache));
		s->trims_seen = dwarf_trims;
	}
	o->last_use = ++s->uses;
	o->use_period = s->periods;
	c = rcache_slot(s, o, vaddr);
	if (c->o != o || c->vaddr != vaddr) {
		c->o = o;
		c->vaddr = vaddr;
		c->srcfile = NULL;
		c->line = 0;
		if ((c->func = symbolize_elf_lookup(o, vaddr)) != NULL)
			symbolize_elf_line(o, vaddr, &c->srcfile, &c->line);
	}
	*func = c->func;
	*srcfile = c->srcfile;
	*line = c->line;
}

const char *
symbolize_elf_build_id(const struct elfobj *o)
{
	return o->build_id;
}

void
symbolize_elf_expire(struct symbolizer *s, time_t before)
{
	struct elfobj **keep;
	size_t i, cap = s->cap;

	s->periods++;
	if (dwarf_lines > DWARF_LINES_MAX) {
		/* Let go, and the file names cached from them (every symbolizer's). */
		log_debug("ebpf: %zu rows of DWARF line tables held: let go", dwarf_lines);
		while (dw_open != NULL)
			dw_close(dw_open);
		dwarf_trims++;
	}
	if (s->trims_seen != dwarf_trims) {
		memset(s->rcache, 0, RCACHE_SLOTS * sizeof(*s->rcache));
		s->trims_seen = dwarf_trims;
	}

	for (i = 0; i < cap; i++)
		if (s->objs[i] && s->objs[i]->refs == 0 && s->objs[i]->used < before)
			break;
	if (i == cap)
		return;
	keep = s->objs;
	if ((s->objs = calloc(cap, sizeof(*s->objs))) == NULL) {
		s->objs = keep;
		return;
	}
	s->n = 0;
	for (i = 0; i < cap; i++) {
		if (keep[i] == NULL)
			continue;
		if (keep[i]->refs == 0 && keep[i]->used < before) {
			elfobj_free(keep[i]);
			/* Its names may be in the cache, and its address taken again. */
			memset(s->rcache, 0, RCACHE_SLOTS * sizeof(*s->rcache));
			continue;
		}
		*slot(s, keep[i]->dev, keep[i]->ino) = keep[i];
		s->n++;
	}
	free(keep);
}

void
symbolize_set_debuginfod(struct symbolizer *s, struct dbginfod *d)
{
	s->dbg = d;
	s->dbg_gen = dbginfod_generation(d);
	s->dbg_retry = clock_mono_ns() / 1000000000 + SYMBOLIZE_DBG_RETRY;
}

size_t
symbolize_debuginfod_poll(struct symbolizer *s)
{
	uint64_t gen = dbginfod_generation(s->dbg);
	int64_t now = clock_mono_ns() / 1000000000;
	size_t i, named = 0;
	bool retry;

	if (s->dbg == NULL)
		return 0;
	/* Failures are remembered by dbginfod.c until their retry time: ask again then. */
	retry = now >= s->dbg_retry;
	if (!retry && gen == s->dbg_gen)
		return 0;
	if (retry)
		s->dbg_retry = now + SYMBOLIZE_DBG_RETRY;
	s->dbg_gen = gen;
	for (i = 0; i < s->cap; i++) {
		struct elfobj *o = s->objs[i];

		if (o == NULL || !(o->dbg_wait || (retry && o->dbg_missing)) ||
		    !read_debuginfod(s, o, retry))
			continue;
		finish_syms(o);
		named++;
		log_debug("ebpf: build id %s: %zu functions with its fetched debug file",
		    o->build_id, o->nsyms);
	}
	/* Names moved (the blob grew) and addresses have names now. */
	if (named)
		memset(s->rcache, 0, RCACHE_SLOTS * sizeof(*s->rcache));
	return named;
}

size_t
symbolize_elf_count(const struct symbolizer *s)
{
	return s->n;
}

/* --- kernel -------------------------------------------------------------- */

static int
ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void
kernel_load(struct symbolizer *s)
{
	FILE *f;
	char line[512];
	size_t cap = 0;

	s->kloaded = true;
	if ((f = fopen("/proc/kallsyms", "re")) == NULL) {
		log_warn("ebpf: /proc/kallsyms");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (addr == 0 || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		s->ksyms = xgrow(s->ksyms, &cap, s->nksyms + 1, sizeof(*s->ksyms));
		s->ksyms[s->nksyms].addr = addr;
		s->ksyms[s->nksyms].name = (uint32_t)s->knames.len;
		if (buf_add(&s->knames, name, strlen(name) + 1) < 0)
			break;
		s->nksyms++;
	}
	fclose(f);
	if (s->nksyms > 1)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	if (s->nksyms == 0)
		log_debug("ebpf: /proc/kallsyms shows no addresses");
	else
		log_debug("ebpf: %zu kernel symbols", s->nksyms);
}

bool
symbolize_kernel_ok(struct symbolizer *s)
{
	if (!s->kloaded)
		kernel_load(s);
	return s->nksyms > 0;
}

const char *
symbolize_kernel(struct symbolizer *s, uint64_t addr)
{
	struct rcache_ent *c;
	size_t lo;

	if (!s->kloaded)
		kernel_load(s);
	c = rcache_slot(s, &kernel_key, addr);
	if (c->o == &kernel_key && c->vaddr == addr)
		return c->func;
	lo = SEARCH_LE(s->ksyms, s->nksyms, addr, addr);
	c->o = &kernel_key;
	c->vaddr = addr;
	c->srcfile = NULL;
	c->line = 0;
	/* kallsyms has no sizes: the next symbol bounds this one. */
	c->func = lo == 0 || lo == s->nksyms ? NULL : s->knames.data + s->ksyms[lo - 1].name;
	return c->func;
}

/* --- perf maps ----------------------------------------------------------- */

struct pmentry {
	uint64_t	 start, size;
	uint32_t	 seq;		/* line number: later wins */
	uint32_t	 name;
};

struct perfmap {
	struct pmentry	*e;
	size_t		 n;
	struct buf	 names;
};

static int
pm_cmp(const void *a, const void *b)
{
	const struct pmentry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct perfmap *
perfmap_load(const char *path, uid_t owner)
{
	int fd;

	/*
	 * The file belongs to whoever runs the sampled process: no symlinks
	 * (to /dev/zero, say), no FIFOs that would block the sampler, and a
	 * bounded size.
	 */
	if ((fd = symbolize_open(path, false, PERFMAP_MAX_BYTES)) < 0)
		return NULL;
	return perfmap_load_fd(fd, owner);
}

struct perfmap *
perfmap_load_fd(int fd, uid_t owner)
{
	struct perfmap *m;
	char *line = NULL;
	size_t lcap = 0, cap = 0;
	ssize_t len;
	uint32_t seq = 0;
	FILE *f;
	struct stat st;

	/* Only the process's own user (or root) may name its code; a bounded size. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > PERFMAP_MAX_BYTES ||
	    (st.st_uid != owner && st.st_uid != 0) || (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		fclose(f);
		return NULL;
	}
	while ((len = getline(&line, &lcap, f)) > 0 && m->n < (1u << 22)) {
		unsigned long long start, size;
		char *p = line, *end;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		start = strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			continue;
		p = end + 1;
		size = strtoull(p, &end, 16);
		if (end == p || *end != ' ' || size == 0)
			continue;
		p = end + 1;
		m->e = xgrow(m->e, &cap, m->n + 1, sizeof(*m->e));
		m->e[m->n].start = start;
		m->e[m->n].size = size;
		m->e[m->n].seq = seq++;
		m->e[m->n].name = (uint32_t)m->names.len;
		if (name_add(&m->names, p, strlen(p), "") < 0)
			break;
		m->n++;
	}
	free(line);
	fclose(f);
	if (m->n > 1)
		qsort(m->e, m->n, sizeof(*m->e), pm_cmp);
	return m;
}

void
perfmap_free(struct perfmap *m)
{
	if (m == NULL)
		return;
	free(m->e);
	buf_free(&m->names);
	free(m);
}

const char *
perfmap_lookup(const struct perfmap *m, uint64_t addr)
{
	const struct pmentry *best = NULL;
	size_t lo = SEARCH_LE(m->e, m->n, start, addr), k;

	/* Entries starting at or below addr, nearest first; a few back for overlaps. */
	for (k = 0; k < 64 && lo > k; k++) {
		const struct pmentry *y = &m->e[lo - 1 - k];

		if (addr - y->start < y->size && (best == NULL || y->seq > best->seq))
			best = y;
	}
	return best ? m->names.data + best->name : NULL;
}
