/*
 * python: CPython frames for the eBPF sampler (see python.h).
 *
 * Layouts, per minor version, of what is read (offsets in bytes, x86-64).
 * 3.11 and 3.12 are this table's (struct pyver, one row each); 3.13 on, each
 * process's own _Py_DebugOffsets says where its fields are (see
 * debug_layouts): the 3.13 and 3.14 columns are what Debian's builds say.
 *
 *                                 3.11   3.12   3.13   3.14
 *   _PyRuntime.interpreters.head    40     40    632    808
 *   PyInterpreterState.threads.head 16     72   7344   7344
 *   PyThreadState.next               8      8      8      8
 *   PyThreadState.thread_id        152    136    152    152
 *   PyThreadState.cframe            56     56      -      -
 *   PyThreadState.current_frame      -      -     72     72
 *   _PyCFrame.current_frame          8      0      -      -
 *   _PyInterpreterFrame.f_code      32      0      0      0   (3.13: f_executable;
 *                                                               3.14: a _PyStackRef,
 *                                                               tag in its low bits)
 *   _PyInterpreterFrame.previous    48      8      8      8
 *   _PyInterpreterFrame.prev_instr  56     56     56     56   (3.13: instr_ptr)
 *   _PyInterpreterFrame.is_entry    68      -      -      -
 *   _PyInterpreterFrame.owner       69     70     70     74   (3 and up: the shim
 *                                                               frame of an entry to
 *                                                               the evaluation loop)
 *   PyCodeObject.ob_type             8      8      8      8
 *   PyCodeObject.ob_size            16     16     16     16   (code units)
 *   PyCodeObject.co_firstlineno     72     68     68     68   (int)
 *   PyCodeObject.co_filename       112    112    112    112
 *   PyCodeObject.co_name           120    120    120    120
 *   PyCodeObject.co_qualname       128    128    128    128
 *   PyCodeObject.co_linetable      136    136    136    136   (bytes)
 *   PyCodeObject.co_code_adaptive  184    192    200    208   (the code units, inline)
 *   PyASCIIObject: length 16, state 32 (kind bits 2-4, compact 5, ascii 6);
 *     data of a compact ASCII string at 48 (3.11) / 40; of another compact
 *     one at 72 (3.11) / 56, in its kind (1, 2 or 4 bytes a character)
 *   PyBytesObject: ob_size 16, data 32
 *
 * The code object fields named above at fixed places (type, size, file,
 * names, line table) are where every version has them; a process whose
 * debug offsets put them elsewhere is refused, as is a version neither the
 * table nor debug_layouts knows (3.10 and older, 3.15 on), a free-threaded
 * build, or debug offsets that make no sense: once per process, with a log
 * line naming the version.
 *
 * A code object read for a sample is checked first: its type must be the
 * process's PyCode_Type, its name the one the BPF program saw in it at the
 * sample (else the frame is unreadable: the code went away since), and its
 * size, first line, name, file and line table pointers those of the cached
 * entry, else the entry is read again. The
 * strings and the line table it points to live as long as it does, so a
 * match is the same code. What cannot be read (the process exited, the
 * memory changed under us, a bound exceeded) is named "[python: unreadable]",
 * never guessed.
 *
 * Each read of another process's memory is a round trip to memread.c's
 * worker, which costs more than the read. So a header is not read again for
 * a code object whose entry was found unchanged (or read) after the sample
 * was taken: that check stands for every sample taken before it (a batch
 * of samples is read after all of them were taken). A new entry's two names
 * are read in one go, each with the bytes that follow its header (most
 * names fit), and so is a line table with its header.
 */
#define _GNU_SOURCE	/* process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base.h"
#include "codecache.h"
#include "python.h"
#include "symbolize.h"

#define CODE_HDR	144	/* bytes of a code object read per frame and sample */
#define STR_HDR		48	/* of a str object: length, state */
#define STR_AHEAD	208	/* bytes read past a str's header with it */
#define LT_HDR		32	/* of the line table (a bytes object): its size */
#define LT_AHEAD	480	/* bytes read past the line table's header with it */
#define CACHE_SLOTS	2048	/* code objects cached per process (open hash) */
#define MAX_NAME	512	/* characters of a function name */
#define MAX_PATH_CH	1024	/* characters of a file name */
#define MAX_LINETABLE	(256 << 10)
#define MAX_UNITS	(1u << 24)	/* code units of one code object */
#define UNREADABLE	"[python: unreadable]"
/* A read of a process's memory taking longer is abandoned (see memread.h). */
#define MEM_DEADLINE_NS	(1000LL * 1000 * 1000)
/*
 * Line tables are decoded once per code object into rows (see struct
 * ltrow), at most LINES_MEM bytes of them for all processes, charged to the
 * memory budget; decoding costs at most LINES_CPU_NS_PER_S of the sampler
 * thread's CPU time per second of period. Past either, frames are named
 * without their line (counted) until there is room again.
 */
#define LINES_MEM	(32u << 20)
#define LINES_CPU_NS_PER_S (20LL * 1000 * 1000)

struct pyver {
	int		 minor;
	struct py_proc	 off;		/* runtime filled per process */
	uint16_t	 co_firstlineno, co_code;
	uint16_t	 str_ascii, str_compact;
};

/* CPython 3.11 and 3.12; 3.13 on, each process's _Py_DebugOffsets. */
static const struct pyver versions[] = {
	{ 11, { 0, 40, 16, 8, 152, 56, 8, 32, 48, 56, 69, 68, 128, 0xff, { 0 } },
	    72, 184, 48, 72 },
	{ 12, { 0, 40, 72, 8, 136, 56, 0, 0, 8, 56, 70, PY_OFF_NONE, 128, 3, { 0 } },
	    68, 192, 40, 56 },
};

/* Offsets in the code object header (CODE_HDR bytes) that identify it. */
#define CO_TYPE		8
#define CO_SIZE		16
#define CO_FILENAME	112
#define CO_QUALNAME	128
#define CO_LINETABLE	136

/* Code units [previous row's end, end) are on line `line` (0: none). */
struct ltrow {
	uint32_t	 end;
	int32_t		 line;
};

/*
 * A code object's entry (codecache.h): e.name its qualified name, e.file its
 * file (UTF-8), e.rows its decoded line table (struct ltrow).
 */
struct pycode {
	struct cc_entry	 e;
	uint64_t	 type, size, filename, qualname, linetable;
	int32_t		 firstlineno;
	int64_t		 checked;	/* monotonic ns: the code was there then (or later) */
};

/*
 * Code of the evaluation loop outside its symbol's extent (ELF addresses of
 * the interpreter file; see eval_parts).
 */
#define EVAL_PARTS	4

struct evalparts {
	uint64_t	 lo[EVAL_PARTS], hi[EVAL_PARTS];
	size_t		 n;
};

/* What the sampler knows of one Python process; p->py. */
struct pyproc {
	const struct pyver *v;		/* &ver; NULL: refused (see python_check) */
	struct pyver	 ver;
	uint64_t	 code_type;	/* address of PyCode_Type */
	struct evalparts eval;		/* in p's addresses */
	struct cc_table	 cache;		/* its struct pycode, CACHE_SLOTS */
};

#define DYNSYM_CACHE	32	/* interpreter files whose symbols are remembered */

/* The symbols python_check looks up, of one file (dev, inode, build id). */
struct pyfile {
	uint64_t	 dev, ino;
	char		 build_id[41];
	uint64_t	 vals[3];
	struct evalparts parts;
	bool		 used;
};

struct python {
	int		 procs_fd;
	struct codecache *cc;		/* code objects, line tables, reads of a process's memory */
	struct pyfile	 files[DYNSYM_CACHE];
	size_t		 next_file;	/* the slot to reuse next */
	/* the code object headers of the sample being named (python_read) */
	uint8_t		 hdr[PROF_MAX_PYFRAMES][CODE_HDR];
	bool		 hdr_ok[PROF_MAX_PYFRAMES];
	bool		 hdr_known[PROF_MAX_PYFRAMES];	/* not read: its entry was checked since */
	int64_t		 hdr_at[PROF_MAX_PYFRAMES];	/* monotonic ns before the read */
	int64_t		 sample_ns;	/* the sample's time (bpf_ktime_get_ns: monotonic) */
	/* decoding line tables: CPU time spent and allowed this period */
	int64_t		 lines_cpu_ns, lines_cpu_max;
	/* the versions refused so far, told once each: bit minor of [major & 3] */
	uint64_t	 refused_told[4];
	uint64_t	 unlined;	/* frames named without their line (budget, room) */
};

struct python *
python_create(int procs_fd)
{
	struct python *py = calloc(1, sizeof(*py));

	if (py == NULL)
		return NULL;
	py->procs_fd = procs_fd;
	py->lines_cpu_max = 10 * LINES_CPU_NS_PER_S;
	if ((py->cc = codecache_create(&(struct codecache_conf){
	    .entry_size = sizeof(struct pycode), .slots = CACHE_SLOTS, .addr_shift = 4,
	    .mem_max = LINES_MEM, .deadline_ns = MEM_DEADLINE_NS })) == NULL) {
		free(py);
		return NULL;
	}
	return py;
}

void
python_destroy(struct python *py)
{
	if (py)
		codecache_destroy(py->cc);
	free(py);
}

void
python_forget(struct python *py, struct proc *p)
{
	struct pyproc *pp = p->py;

	if (pp) {
		if (py && !p->gone)
			(void)bpf_map_delete_elem(py->procs_fd, &p->pid);
		codecache_forget(py ? py->cc : NULL, &pp->cache);
		free(pp);
	}
	p->py = NULL;
}

/* Read len bytes of p's memory at addr: 0, or -errno (short reads too). */
static int
mem_read(struct python *py, const struct proc *p, uint64_t addr, void *dst, size_t len)
{
	return codecache_read(py->cc, (pid_t)p->pid, addr, dst, len);
}

/* --- finding the interpreter --------------------------------------------- */

/* Whether a mapped file may hold the interpreter: python3.x or libpython3.x. */
static bool
interp_file(const char *name)
{
	const char *b = strrchr(name, '/');

	b = b ? b + 1 : name;
	return strncmp(b, "python3", 7) == 0 || strncmp(b, "libpython3", 10) == 0;
}

/*
 * The values of the dynamic symbols names[0..n) of an ELF file; 0 where
 * absent. -errno only if the file could not be read.
 */
static int
elf_dynsyms(const struct proc_mapping *m, const char *const *names, uint64_t *vals, size_t n)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *e;
	int fd;

	memset(vals, 0, n * sizeof(*vals));
	if ((fd = proctab_open_mapping(m)) < 0)
		return fd;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL) {
		close(fd);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		Elf_Data *d;
		size_t k, cnt;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_DYNSYM ||
		    sh.sh_entsize == 0 || (d = elf_getdata(scn, NULL)) == NULL)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < cnt; k++) {
			GElf_Sym s;
			const char *nm;
			size_t j;

			if (gelf_getsym(d, (int)k, &s) == NULL || s.st_shndx == SHN_UNDEF ||
			    (nm = elf_strptr(e, sh.sh_link, s.st_name)) == NULL)
				continue;
			for (j = 0; j < n; j++)
				if (vals[j] == 0 && strcmp(nm, names[j]) == 0)
					vals[j] = s.st_value;
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

/*
 * The FDE covering ELF address a, from .eh_frame_hdr's sorted table (the
 * layout GNU ld writes: table of datarel sdata4 pairs, FDEs with pcrel
 * sdata4 addresses): its extent [*lo, *hi). -ENOENT otherwise.
 */
static int
fde_extent(Elf *e, uint64_t a, uint64_t *lo, uint64_t *hi)
{
	Elf_Scn *scn = NULL;
	Elf_Data *hd = NULL, *fd = NULL;
	uint64_t haddr = 0, faddr = 0, fde;
	GElf_Shdr sh;
	size_t shstr, n, first, cnt;
	const uint8_t *h;
	int32_t loc, off, begin;
	uint32_t range, c32;

	if (elf_getshdrstrndx(e, &shstr) != 0)
		return -ENOENT;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *nm;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    (nm = elf_strptr(e, shstr, sh.sh_name)) == NULL)
			continue;
		if (strcmp(nm, ".eh_frame_hdr") == 0) {
			hd = elf_getdata(scn, NULL);
			haddr = sh.sh_addr;
		} else if (strcmp(nm, ".eh_frame") == 0) {
			fd = elf_getdata(scn, NULL);
			faddr = sh.sh_addr;
		}
	}
	if (hd == NULL || fd == NULL || hd->d_buf == NULL || fd->d_buf == NULL || hd->d_size < 12)
		return -ENOENT;
	h = hd->d_buf;
	if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
		return -ENOENT;
	memcpy(&c32, h + 8, 4);
	cnt = c32;
	if (cnt == 0 || 12 + cnt * 8 > hd->d_size)
		return -ENOENT;
	/* The last entry starting at or before a. */
	first = 0;
	n = cnt;
	while (n > 0) {
		size_t half = n / 2;

		memcpy(&loc, h + 12 + (first + half) * 8, 4);
		if (haddr + (int64_t)loc <= a) {
			first += half + 1;
			n -= half + 1;
		} else {
			n = half;
		}
	}
	if (first == 0)
		return -ENOENT;
	memcpy(&loc, h + 12 + (first - 1) * 8, 4);
	memcpy(&off, h + 12 + (first - 1) * 8 + 4, 4);
	fde = haddr + (int64_t)off;
	if (fde < faddr || fde - faddr + 16 > fd->d_size)
		return -ENOENT;
	memcpy(&begin, (const uint8_t *)fd->d_buf + (fde - faddr) + 8, 4);
	memcpy(&range, (const uint8_t *)fd->d_buf + (fde - faddr) + 12, 4);
	/* Another encoding than assumed shows as another start. */
	if (fde + 8 + (int64_t)begin != haddr + (int64_t)loc)
		return -ENOENT;
	*lo = haddr + (int64_t)loc;
	*hi = *lo + range;
	return a < *hi ? 0 : -ENOENT;
}

/*
 * Where the evaluation loop's code lies outside its symbol: GCC's hot/cold
 * split moves part of a function into an FDE of its own, unnamed in the
 * dynamic symbols (Debian's CPython 3.14 runs most of its loop there, the
 * symbol being its 1 KB entry). Those parts are the FDEs that
 * _PyEval_EvalFrameDefault jumps (jmp, jcc) into, out of its extent, whose
 * first instruction does not find its frame as a function's does (CFA
 * rsp + 8): it goes on with the frame of the function it is part of.
 * Nothing is found (parts->n 0) where anything is unclear.
 */
static void
eval_parts(const struct proc_mapping *m, struct evalparts *parts)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym = { 0 };
	Dwarf_CFI *cfi = NULL;
	const uint8_t *b = NULL;
	bool found = false;
	Elf *e;
	size_t i;
	int fd;

	memset(parts, 0, sizeof(*parts));
	if ((fd = proctab_open_mapping(m)) < 0)
		return;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL)
		goto out;
	while (!found && (scn = elf_nextscn(e, scn)) != NULL) {
		Elf_Data *d;
		size_t k, cnt;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_DYNSYM ||
		    sh.sh_entsize == 0 || (d = elf_getdata(scn, NULL)) == NULL)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < cnt && !found; k++) {
			const char *nm;

			found = gelf_getsym(d, (int)k, &sym) != NULL && sym.st_shndx != SHN_UNDEF &&
			    (nm = elf_strptr(e, sh.sh_link, sym.st_name)) != NULL &&
			    strcmp(nm, "_PyEval_EvalFrameDefault") == 0;
		}
	}
	if (!found || sym.st_size < 6 || sym.st_size > (1u << 20))
		goto out;
	/* Its bytes, in the section holding it. */
	for (scn = NULL; b == NULL && (scn = elf_nextscn(e, scn)) != NULL; ) {
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || sym.st_value < sh.sh_addr ||
		    sym.st_value + sym.st_size > sh.sh_addr + sh.sh_size)
			continue;
		if ((d = elf_getdata(scn, NULL)) != NULL && d->d_buf != NULL &&
		    d->d_size >= sym.st_value - sh.sh_addr + sym.st_size)
			b = (const uint8_t *)d->d_buf + (sym.st_value - sh.sh_addr);
		break;
	}
	if (b == NULL || (cfi = dwarf_getcfi_elf(e)) == NULL)
		goto out;
	for (i = 0; i + 5 <= sym.st_size && parts->n < EVAL_PARTS; i++) {
		uint64_t t, lo, hi;
		Dwarf_Frame *fr = NULL;
		Dwarf_Op *ops;
		size_t nops, k, len;
		int32_t rel;
		bool fnlike = true, known = false;

		if (b[i] == 0xe9)
			len = 5;
		else if (b[i] == 0x0f && (b[i + 1] & 0xf0) == 0x80 && i + 6 <= sym.st_size)
			len = 6;
		else
			continue;
		memcpy(&rel, b + i + len - 4, 4);
		t = sym.st_value + i + len + (int64_t)rel;
		if ((t >= sym.st_value && t < sym.st_value + sym.st_size) ||
		    t < sh.sh_addr || t >= sh.sh_addr + sh.sh_size)
			continue;
		if (fde_extent(e, t, &lo, &hi) < 0 || hi - lo > (4u << 20))
			continue;
		for (k = 0; k < parts->n; k++)
			known |= parts->lo[k] == lo;
		if (known || (lo < sym.st_value + sym.st_size && hi > sym.st_value))
			continue;
		if (dwarf_cfi_addrframe(cfi, lo, &fr) == 0 &&
		    dwarf_frame_cfa(fr, &ops, &nops) == 0)
			fnlike = nops == 1 && ops[0].atom == DW_OP_bregx && ops[0].number == 7 &&
			    ops[0].number2 == 8;
		free(fr);
		if (fnlike)
			continue;
		parts->lo[parts->n] = lo;
		parts->hi[parts->n++] = hi;
	}
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	if (e)
		elf_end(e);
	close(fd);
}

/*
 * python_check's symbols of m's file: read once per file (dev, inode, build
 * id), since every new process of the same interpreter asks again.
 */
static int
file_dynsyms(struct python *py, const struct proc_mapping *m, const char *const *names,
    uint64_t vals[3], struct evalparts *parts)
{
	struct pyfile *f;
	size_t i;

	for (i = 0; i < DYNSYM_CACHE; i++) {
		f = &py->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0) {
			memcpy(vals, f->vals, sizeof(f->vals));
			*parts = f->parts;
			return 0;
		}
	}
	if (elf_dynsyms(m, names, vals, 3) < 0)
		return -ENOENT;
	eval_parts(m, parts);
	/* A file without a build id may be rewritten in place: not remembered. */
	if (m->build_id[0] == '\0')
		return 0;
	f = &py->files[py->next_file];
	py->next_file = (py->next_file + 1) % DYNSYM_CACHE;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	memcpy(f->vals, vals, sizeof(f->vals));
	f->parts = *parts;
	f->used = true;
	return 0;
}

/*
 * Where _Py_DebugOffsets, at the start of _PyRuntime from 3.13 on, holds
 * each offset used here: the cookie "xdebugpy" at 0, PY_VERSION_HEX at 8,
 * free_threaded at 16, then u64 offsets grouped by structure. The groups
 * grow between minor versions (3.14 added threads_main, the code object and
 * bytecode generations, the frame's stackpointer and tlbc_index, co_tlbc,
 * a set object group...), so each known minor version has its row; as
 * CPython's own remote debugger and py-spy do, nothing is guessed for
 * another.
 */
struct pydbg {
	int		 minor;
	uint16_t	 rt_interp, interp_threads;
	uint16_t	 ts_next, ts_frame, ts_thread_id;
	uint16_t	 fr_previous, fr_executable, fr_instr, fr_owner;
	uint16_t	 co_filename, co_qualname, co_linetable, co_firstlineno, co_code;
	uint16_t	 ob_type, u_state, u_length, u_ascii_size;
};

static const struct pydbg debug_layouts[] = {
	{ 13, 40, 72, 168, 184, 192, 232, 240, 248, 264,
	    280, 296, 304, 312, 344, 360, 544, 552, 560 },
	{ 14, 40, 72, 192, 208, 216, 256, 264, 272, 288,
	    320, 336, 344, 352, 384, 408, 624, 632, 640 },
};

#define DBG_READ	656	/* bytes of _Py_DebugOffsets read: past every row's fields */
#define DBG_MAX_OFF	0x8000	/* a structure offset beyond: not believed */

/*
 * Fill v (minor set) from the _Py_DebugOffsets at runtime in p: 0; -EAGAIN
 * if it could not be read (try again later); -EINVAL with *why set if this
 * process is to be left alone.
 */
static int
debug_offsets_read(struct python *py, const struct proc *p, uint64_t runtime,
    struct pyver *v, const char **why)
{
	const struct pydbg *l = NULL;
	uint64_t o[19], dver;
	uint8_t d[DBG_READ];
	size_t i;

	for (i = 0; i < sizeof(debug_layouts) / sizeof(debug_layouts[0]); i++)
		if (debug_layouts[i].minor == v->minor)
			l = &debug_layouts[i];
	*why = "its _Py_DebugOffsets layout is not known";
	if (l == NULL)
		return -EINVAL;
	if (mem_read(py, p, runtime, d, sizeof(d)) < 0)
		return -EAGAIN;
	dver = cc_rd64(d, 8);
	*why = "_PyRuntime does not start with _Py_DebugOffsets";
	if (memcmp(d, "xdebugpy", 8) != 0 || ((dver >> 24) & 0xff) != 3 ||
	    (int)((dver >> 16) & 0xff) != v->minor)
		return -EINVAL;
	*why = "a free-threaded build";
	if (cc_rd64(d, 16) != 0)
		return -EINVAL;
	o[0] = cc_rd64(d, l->rt_interp);
	o[1] = cc_rd64(d, l->interp_threads);
	o[2] = cc_rd64(d, l->ts_next);
	o[3] = cc_rd64(d, l->ts_frame);
	o[4] = cc_rd64(d, l->ts_thread_id);
	o[5] = cc_rd64(d, l->fr_previous);
	o[6] = cc_rd64(d, l->fr_executable);
	o[7] = cc_rd64(d, l->fr_instr);
	o[8] = cc_rd64(d, l->fr_owner);
	o[9] = cc_rd64(d, l->co_filename);
	o[10] = cc_rd64(d, l->co_qualname);
	o[11] = cc_rd64(d, l->co_linetable);
	o[12] = cc_rd64(d, l->co_firstlineno);
	o[13] = cc_rd64(d, l->co_code);
	o[14] = cc_rd64(d, l->ob_type);
	o[15] = cc_rd64(d, l->u_state);
	o[16] = cc_rd64(d, l->u_length);
	o[17] = cc_rd64(d, l->u_ascii_size);
	*why = "its debug offsets make no sense";
	for (i = 0; i < 5; i++)
		if (o[i] >= DBG_MAX_OFF)
			return -EINVAL;
	/* The frame's fields lie in what the BPF program reads of a frame. */
	for (i = 5; i < 8; i++)
		if (o[i] > PY_FRAME_READ - 8)
			return -EINVAL;
	if (o[8] >= PY_FRAME_READ || o[12] > CODE_HDR - 4 || o[13] < CODE_HDR ||
	    o[13] >= DBG_MAX_OFF || o[17] < STR_HDR - 8 || o[17] > 128)
		return -EINVAL;
	*why = "its code or str objects are laid out otherwise than read";
	if (o[9] != CO_FILENAME || o[10] != CO_QUALNAME || o[11] != CO_LINETABLE ||
	    o[14] != CO_TYPE || o[15] != 32 || o[16] != 16)
		return -EINVAL;
	memset(&v->off, 0, sizeof(v->off));
	v->off.rt_interp = (uint16_t)o[0];
	v->off.interp_threads = (uint16_t)o[1];
	v->off.ts_next = (uint16_t)o[2];
	v->off.ts_frame = (uint16_t)o[3];
	v->off.ts_thread_id = (uint16_t)o[4];
	v->off.cframe_frame = PY_OFF_NONE;
	v->off.fr_previous = (uint16_t)o[5];
	v->off.fr_code = (uint16_t)o[6];
	v->off.fr_instr = (uint16_t)o[7];
	v->off.fr_owner = (uint16_t)o[8];
	v->off.fr_entry = PY_OFF_NONE;
	v->off.co_qualname = (uint16_t)o[10];
	v->off.owner_cstack = 3;	/* 3.13: FRAME_OWNED_BY_CSTACK; 3.14: _INTERPRETER */
	v->co_firstlineno = (uint16_t)o[12];
	v->co_code = (uint16_t)o[13];
	v->str_ascii = (uint16_t)o[17];
	v->str_compact = (uint16_t)(o[17] + 16);	/* + utf8_length, utf8 */
	return 0;
}

/*
 * The layout of a CPython major.minor (ver: Py_Version) into v: 0; -EAGAIN
 * (read again later); -EINVAL with *why: refused.
 */
static int
python_layout(struct python *py, const struct proc *p, uint32_t ver, uint64_t runtime,
    struct pyver *v, const char **why)
{
	size_t k;

	memset(v, 0, sizeof(*v));
	v->minor = (int)((ver >> 16) & 0xff);
	*why = "not a version known";
	if (((ver >> 24) & 0xff) != 3)
		return -EINVAL;
	if (v->minor >= 13)
		return debug_offsets_read(py, p, runtime, v, why);
	for (k = 0; k < sizeof(versions) / sizeof(versions[0]); k++) {
		if (versions[k].minor == v->minor) {
			*v = versions[k];
			return 0;
		}
	}
	return -EINVAL;
}

void
python_check(struct python *py, struct proc *p)
{
	static const char *const names[] = { "_PyRuntime", "PyCode_Type", "Py_Version" };
	struct proc_mapping m;
	struct evalparts parts;
	uint64_t vals[3];
	uint32_t ver = 0;
	size_t i, k;

	if (py == NULL || p->gone || p->kthread || p->py || p->py_gen == p->maps_gen)
		return;
	p->py_gen = p->maps_gen;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++) {
		struct pyproc *pp;
		const char *why = NULL;
		unsigned major, minor;
		int rc;

		if (!interp_file(m.name))
			continue;
		if (file_dynsyms(py, &m, names, vals, &parts) < 0)
			continue;
		if (vals[0] == 0 || vals[1] == 0 || vals[2] == 0)
			continue;
		if (mem_read(py, p, vals[2] + m.bias, &ver, sizeof(ver)) < 0)
			return;
		if ((pp = calloc(1, sizeof(*pp))) == NULL)
			return;
		major = (ver >> 24) & 0xff;
		minor = (ver >> 16) & 0xff;
		rc = python_layout(py, p, ver, vals[0] + m.bias, &pp->ver, &why);
		if (rc == -EAGAIN) {
			free(pp);
			return;
		}
		if (rc < 0) {
			/* Refused for good: p->py holds the refusal, so it is not looked at again. */
			p->py = pp;
			if (!(py->refused_told[major & 3] & (1ULL << (minor & 63))))
				log_info("ebpf: pid %u: CPython %u.%u (%s): %s: no Python frames "
				    "for this version", p->pid, major, minor, m.name, why);
			else
				log_debug("ebpf: pid %u: CPython %u.%u: %s: no Python frames",
				    p->pid, major, minor, why);
			py->refused_told[major & 3] |= 1ULL << (minor & 63);
			return;
		}
		pp->v = &pp->ver;
		pp->code_type = vals[1] + m.bias;
		for (k = 0; k < parts.n; k++) {
			pp->eval.lo[k] = parts.lo[k] + m.bias;
			pp->eval.hi[k] = parts.hi[k] + m.bias;
		}
		pp->eval.n = parts.n;
		pp->ver.off.runtime = vals[0] + m.bias;
		if (bpf_map_update_elem(py->procs_fd, &p->pid, &pp->ver.off, BPF_ANY) < 0) {
			log_debug("ebpf: pid %u: py_procs: %s", p->pid, strerror(errno));
			free(pp);
			return;
		}
		p->py = pp;
		log_debug("ebpf: pid %u: CPython %u.%u in %s (%s; %zu part(s) of the "
		    "evaluation loop outside its symbol)", p->pid, major, minor, m.name,
		    minor >= 13 ? "its debug offsets" : "the table", parts.n);
		return;
	}
}

/* --- naming code objects -------------------------------------------------- */

/* Append code point c as UTF-8. */
static size_t
put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;	/* a lone surrogate: not UTF-8 */
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x10000)
		return put_utf8(o, c);
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * The layout of a str object from its header h (STR_HDR bytes): its length
 * in characters (at most maxch), their width and where they start. -EINVAL:
 * not a str we read (not compact, too long, not a str at all).
 */
static int
str_layout(const struct pyproc *pp, const uint8_t *h, size_t maxch, uint64_t *len,
    uint32_t *kind, size_t *dataoff, bool *ascii)
{
	uint32_t state;

	*len = cc_rd64(h, 16);
	memcpy(&state, h + 32, sizeof(state));
	*kind = (state >> 2) & 7;
	*ascii = ((state >> 6) & 1) != 0;
	if (!((state >> 5) & 1) || *len > maxch || (*kind != 1 && *kind != 2 && *kind != 4))
		return -EINVAL;
	if (*ascii) {
		if (*kind != 1)
			return -EINVAL;
		*dataoff = pp->v->str_ascii;
	} else {
		*dataoff = pp->v->str_compact;
	}
	return 0;
}

/* len characters of width kind at raw as a malloc'd UTF-8 string, or NULL. */
static char *
str_utf8(const uint8_t *raw, uint64_t len, uint32_t kind, bool ascii)
{
	size_t i, o = 0;
	char *out;

	if ((out = malloc(len * 4 + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		uint32_t c;

		if (kind == 1) {
			c = raw[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, raw + i * 2, 2);
			c = u;
		} else {
			memcpy(&c, raw + i * 4, 4);
		}
		if (c == 0 || (ascii && c >= 0x80)) {
			free(out);
			return NULL;
		}
		o += put_utf8(out + o, c);
	}
	out[o] = '\0';
	return out;
}

/*
 * The str object at addr whose header (and the have bytes from addr on) is
 * in h, as a malloc'd UTF-8 string, or NULL; characters past have are read.
 */
static char *
str_from(struct python *py, const struct pyproc *pp, const struct proc *p, uint64_t addr,
    const uint8_t *h, size_t have, size_t maxch)
{
	uint64_t len;
	uint32_t kind;
	size_t dataoff;
	bool ascii;
	uint8_t *raw;
	char *out;

	if (str_layout(pp, h, maxch, &len, &kind, &dataoff, &ascii) < 0)
		return NULL;
	if (dataoff + len * kind <= have)
		return str_utf8(h + dataoff, len, kind, ascii);
	if ((raw = malloc(len * kind + 1)) == NULL)
		return NULL;
	if (len && mem_read(py, p, addr + dataoff, raw, len * kind) < 0) {
		free(raw);
		return NULL;
	}
	out = str_utf8(raw, len, kind, ascii);
	free(raw);
	return out;
}

/* A str object of p at addr as a malloc'd UTF-8 string, or NULL. */
static char *
read_str(struct python *py, const struct pyproc *pp, const struct proc *p, uint64_t addr,
    size_t maxch)
{
	uint8_t h[STR_HDR];

	if (addr == 0 || mem_read(py, p, addr, h, sizeof(h)) < 0)
		return NULL;
	return str_from(py, pp, p, addr, h, 0, maxch);
}

/*
 * c's name and file: both headers, and what follows them, in one read.
 * Should that fail (a string near the end of its mapping), each is read
 * by itself.
 */
static int
read_names(struct python *py, const struct pyproc *pp, const struct proc *p, struct pycode *c)
{
	uint8_t b[2][STR_HDR + STR_AHEAD];
	struct iovec l[2] = { { b[0], sizeof(b[0]) }, { b[1], sizeof(b[1]) } };
	struct iovec r[2] = { { (void *)(uintptr_t)c->qualname, sizeof(b[0]) },
	    { (void *)(uintptr_t)c->filename, sizeof(b[1]) } };

	if (c->qualname == 0 || c->filename == 0)
		return -EFAULT;
	if (codecache_readv(py->cc, (pid_t)p->pid, l, r, 2) == (ssize_t)sizeof(b)) {
		c->e.name = str_from(py, pp, p, c->qualname, b[0], sizeof(b[0]), MAX_NAME);
		c->e.file = c->e.name ? str_from(py, pp, p, c->filename, b[1], sizeof(b[1]),
		    MAX_PATH_CH) : NULL;
	} else {
		c->e.name = read_str(py, pp, p, c->qualname, MAX_NAME);
		c->e.file = c->e.name ? read_str(py, pp, p, c->filename, MAX_PATH_CH) : NULL;
	}
	return c->e.name && c->e.file ? 0 : -EFAULT;
}

/* Fill c (addr, header fields taken) from p's memory: 0 or -errno. */
static int
code_load(struct python *py, const struct pyproc *pp, const struct proc *p, struct pycode *c,
    const uint8_t *hdr)
{
	c->type = cc_rd64(hdr, CO_TYPE);
	c->size = cc_rd64(hdr, CO_SIZE);
	c->filename = cc_rd64(hdr, CO_FILENAME);
	c->qualname = cc_rd64(hdr, CO_QUALNAME);
	c->linetable = cc_rd64(hdr, CO_LINETABLE);
	memcpy(&c->firstlineno, hdr + pp->v->co_firstlineno, sizeof(c->firstlineno));
	if (read_names(py, pp, p, c) < 0)
		return -EFAULT;
	c->e.lines = CC_LINES_NOT_READ;
	return 0;
}

/*
 * Read and decode c's line table (bytes) if the budgets allow; lines stay
 * unknown for good when it is too big or unreadable.
 */
static void
code_lines(struct python *py, const struct proc *p, struct pycode *c)
{
	struct pyproc *pp = p->py;
	struct timespec t0, t1;
	uint8_t b[LT_HDR + LT_AHEAD], *lt = NULL;
	const uint8_t *d = NULL;
	struct ltrow *rows;
	uint32_t nrows;
	uint64_t n = 0;
	bool ahead = false;

	if (py->lines_cpu_ns >= py->lines_cpu_max || codecache_lines_full(py->cc, &pp->cache))
		return;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	c->e.lines = CC_LINES_NONE;
	/* The header and, most often, the whole table in one read; else the header alone. */
	if ((ahead = mem_read(py, p, c->linetable, b, sizeof(b)) == 0) ||
	    mem_read(py, p, c->linetable, b, LT_HDR) == 0)
		n = cc_rd64(b, 16);
	if (n > 0 && n <= MAX_LINETABLE) {
		if (ahead && n <= LT_AHEAD)
			d = b + LT_HDR;
		else if ((lt = malloc(n)) != NULL && mem_read(py, p, c->linetable + LT_HDR, lt,
		    n) == 0)
			d = lt;
	}
	if (d != NULL && python_linetable_decode(d, n, c->firstlineno, &rows, &nrows) == 0)
		(void)codecache_lines_keep(py->cc, &pp->cache, &c->e, rows, nrows,
		    sizeof(*rows));
	free(lt);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	py->lines_cpu_ns += (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
}

/* Whether hdr (a code object as read now) is the code c holds. */
static bool
code_same(const struct pyproc *pp, const struct pycode *c, const uint8_t *hdr)
{
	int32_t fl;

	memcpy(&fl, hdr + pp->v->co_firstlineno, sizeof(fl));
	return cc_rd64(hdr, CO_TYPE) == c->type && cc_rd64(hdr, CO_SIZE) == c->size &&
	    cc_rd64(hdr, CO_FILENAME) == c->filename && cc_rd64(hdr, CO_QUALNAME) == c->qualname &&
	    cc_rd64(hdr, CO_LINETABLE) == c->linetable && fl == c->firstlineno;
}

static bool
lt_varint(const uint8_t *lt, size_t len, size_t *i, uint64_t *v)
{
	unsigned shift = 0;
	uint8_t b;

	*v = 0;
	do {
		if (*i >= len || shift > 30)	/* CPython writes 32-bit values */
			return false;
		b = lt[(*i)++];
		*v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return true;
}

static bool
lt_svarint(const uint8_t *lt, size_t len, size_t *i, int64_t *v)
{
	uint64_t u;

	if (!lt_varint(lt, len, i, &u))
		return false;
	*v = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

/*
 * The line of code unit idx, from the location table (co_linetable): a
 * sequence of entries, each a first byte 1CCCCLLL (code C, L + 1 code
 * units) and its data: C 15 no location; 14 long form (line delta as a
 * signed varint, end line, column, end column as varints); 13 no column
 * (line delta); 10-12 one line (delta C - 10, two column bytes); 0-9 short
 * form (delta 0, one column byte). Varints are 6 bits a byte, bit 6 set
 * when another byte follows; signed ones keep the sign in bit 0.
 * 0 when the table does not say.
 */
/*
 * Walk the table: for each entry, fn(arg, first unit, units, line or 0) until
 * fn returns true or the table ends or turns out malformed.
 */
static void
lt_walk(const uint8_t *lt, size_t len, int32_t firstlineno,
    bool (*fn)(void *, uint64_t, unsigned, int64_t), void *arg)
{
	int64_t line = firstlineno, d;
	uint64_t at = 0, u;
	size_t i = 0;

	while (i < len) {
		uint8_t b = lt[i++];
		unsigned code = (b >> 3) & 15, n = (b & 7) + 1;
		bool none = false;

		if (!(b & 0x80))
			return;	/* not at an entry: a table we misread */
		switch (code) {
		case 15:
			none = true;
			break;
		case 14:
			if (!lt_svarint(lt, len, &i, &d) || !lt_varint(lt, len, &i, &u) ||
			    !lt_varint(lt, len, &i, &u) || !lt_varint(lt, len, &i, &u))
				return;
			line += d;
			break;
		case 13:
			if (!lt_svarint(lt, len, &i, &d))
				return;
			line += d;
			break;
		case 10: case 11: case 12:
			line += code - 10;
			i += 2;
			break;
		default:
			i += 1;
			break;
		}
		if (line < 0 || line > INT32_MAX)
			return;	/* no line a file has: a table we misread */
		if (fn(arg, at, n, none ? 0 : line))
			return;
		at += n;
	}
}

struct lt_find {
	uint64_t	 idx;
	int64_t		 line;
};

static bool
lt_find_fn(void *arg, uint64_t at, unsigned n, int64_t line)
{
	struct lt_find *q = arg;

	if (q->idx >= at + n)
		return false;
	q->line = line;
	return true;
}

int64_t
python_linetable_line(const uint8_t *lt, size_t len, int32_t firstlineno, uint64_t idx)
{
	struct lt_find q = { idx, 0 };

	lt_walk(lt, len, firstlineno, lt_find_fn, &q);
	return q.line;
}

struct lt_rows {
	struct ltrow	*rows;
	size_t		 n, cap;
	bool		 failed;
};

static bool
lt_rows_fn(void *arg, uint64_t at, unsigned n, int64_t line)
{
	struct lt_rows *r = arg;
	struct ltrow *nr;

	if (at + n > UINT32_MAX)
		return true;
	if (r->n > 0 && r->rows[r->n - 1].line == line) {
		r->rows[r->n - 1].end = (uint32_t)(at + n);
		return false;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		if ((nr = realloc(r->rows, r->cap * sizeof(*nr))) == NULL) {
			r->failed = true;
			return true;
		}
		r->rows = nr;
	}
	r->rows[r->n].end = (uint32_t)(at + n);
	r->rows[r->n++].line = (int32_t)line;
	return false;
}

int
python_linetable_decode(const uint8_t *lt, size_t len, int32_t firstlineno,
    struct ltrow **rows, uint32_t *nrows)
{
	struct lt_rows r = { NULL, 0, 0, false };
	struct ltrow *fit;

	*rows = NULL;
	*nrows = 0;
	lt_walk(lt, len, firstlineno, lt_rows_fn, &r);
	if (r.failed) {
		free(r.rows);
		return -ENOMEM;
	}
	if (r.n > 0 && r.n < r.cap && (fit = realloc(r.rows, r.n * sizeof(*fit))) != NULL)
		r.rows = fit;
	*rows = r.rows;
	*nrows = (uint32_t)r.n;
	return 0;
}

int64_t
python_lines_lookup(const struct ltrow *rows, uint32_t n, uint64_t idx)
{
	uint32_t k = codecache_lines_find(rows, n, sizeof(*rows), idx);

	return k < n ? rows[k].line : 0;
}

/* The cache entry of the code object at addr, or NULL. */
static struct pycode *
cache_find(struct python *py, struct pyproc *pp, uint64_t addr)
{
	return pp ? (struct pycode *)codecache_find(py->cc, &pp->cache, addr) : NULL;
}

/* Whether c stands for frame fr of a sample taken at sample_ns without a read. */
static bool
code_checked(const struct pycode *c, const struct prof_pyframe *fr, uint64_t sample_ns)
{
	return c != NULL && c->qualname == fr->name && c->checked >= (int64_t)sample_ns;
}

void
python_read(struct python *py, struct proc *p, const struct prof_pyframe *fr, size_t n,
    uint64_t sample_ns)
{
	struct iovec l[PROF_MAX_PYFRAMES], r[PROF_MAX_PYFRAMES];
	size_t i, j, k, m = 0, idx[PROF_MAX_PYFRAMES];
	ssize_t got;
	int64_t at;

	if (py == NULL || n == 0 || p->py == NULL || ((struct pyproc *)p->py)->v == NULL)
		return;
	if (n > PROF_MAX_PYFRAMES)
		n = PROF_MAX_PYFRAMES;
	py->sample_ns = sample_ns;
	for (i = 0; i < n; i++) {
		py->hdr_ok[i] = false;
		py->hdr_known[i] = code_checked(cache_find(py, p->py,
		    fr[i].code & ~PROF_PY_ENTRY), &fr[i], sample_ns);
		if (py->hdr_known[i])
			continue;
		l[m].iov_base = py->hdr[i];
		l[m].iov_len = CODE_HDR;
		r[m].iov_base = (void *)(uintptr_t)(fr[i].code & ~PROF_PY_ENTRY);
		r[m].iov_len = CODE_HDR;
		idx[m++] = i;
	}
	if (m == 0 || p->gone)
		return;
	/*
	 * One call for all frames; it stops at the first that cannot be read,
	 * and the next call starts past it. Nothing read of the first frame:
	 * nothing more is.
	 */
	for (j = 0; j < m; j += k + 1) {
		at = clock_mono_ns();
		got = codecache_readv(py->cc, (pid_t)p->pid, l + j, r + j, m - j);
		for (k = 0; got > 0 && j + k < m && (size_t)got >= (k + 1) * CODE_HDR; k++) {
			py->hdr_ok[idx[j + k]] = true;
			py->hdr_at[idx[j + k]] = at;
		}
		if (got < 0 && (idx[j] == 0 || got != -EFAULT))
			break;
	}
}

int
python_frame(struct python *py, struct proc *p, const struct prof_pyframe *fr, size_t n,
    size_t i, struct frame *f)
{
	struct pyproc *pp = p->py;
	uint64_t addr = fr[i].code & ~PROF_PY_ENTRY, start, idx;
	struct pycode *c = NULL;
	const uint8_t *hdr;

	memset(f, 0, sizeof(*f));
	f->file = "[python]";
	f->build_id = "";
	f->func = UNREADABLE;
	if (py == NULL || pp == NULL || pp->v == NULL || i >= n || i >= PROF_MAX_PYFRAMES ||
	    addr == 0)
		return -EFAULT;
	if (py->hdr_known[i]) {
		/* Not read: its entry was checked after the sample, unless a frame before emptied it. */
		py->hdr_known[i] = false;
		if (code_checked(c = cache_find(py, pp, addr), &fr[i], py->sample_ns))
			goto named;
		py->hdr_at[i] = clock_mono_ns();
		py->hdr_ok[i] = !p->gone && mem_read(py, p, addr, py->hdr[i], CODE_HDR) == 0;
	}
	if (!py->hdr_ok[i])
		return -EFAULT;
	hdr = py->hdr[i];
	/* No longer (or never) a code object, or another one than the sample saw. */
	if (cc_rd64(hdr, CO_TYPE) != pp->code_type || cc_rd64(hdr, CO_QUALNAME) != fr[i].name)
		return -EFAULT;
	if ((c = (struct pycode *)codecache_slot(py->cc, &pp->cache, addr)) == NULL)
		return -EFAULT;
	if (c->e.addr == addr && !code_same(pp, c, hdr))
		codecache_drop(py->cc, &pp->cache, &c->e);	/* another code object there */
	if (c->e.addr == 0) {
		c = (struct pycode *)codecache_claim(py->cc, &pp->cache, &c->e, addr);
		if (code_load(py, pp, p, c, hdr) < 0) {
			codecache_drop(py->cc, &pp->cache, &c->e);
			return -EFAULT;
		}
	}
	/* The code was there when its header was read. */
	if (c->checked < py->hdr_at[i])
		c->checked = py->hdr_at[i];
named:
	f->func = c->e.name;
	f->srcfile = c->e.file;
	start = addr + pp->v->co_code;
	if (fr[i].instr >= start && c->size <= MAX_UNITS) {
		idx = (fr[i].instr - start) / 2;
		if (c->e.lines == CC_LINES_NOT_READ)
			code_lines(py, p, c);
		if (c->e.lines == CC_LINES_NOT_READ)
			py->unlined++;
		f->line = idx < c->size ? python_lines_lookup(c->e.rows, c->e.nrows, idx) : 0;
	} else {
		f->line = c->firstlineno;	/* not started yet */
	}
	f->addr = 0;
	return 0;
}

int
python_is_eval(const char *func)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";

	return func && strncmp(func, eval, sizeof(eval) - 1) == 0 &&
	    (func[sizeof(eval) - 1] == '\0' || func[sizeof(eval) - 1] == '.');
}

bool
python_is_eval_frame(const struct proc *p, const struct frame *f)
{
	const struct pyproc *pp = p->py;
	size_t k;

	if (python_is_eval(f->func))
		return true;
	if (f->func != NULL || pp == NULL || pp->v == NULL)
		return false;
	for (k = 0; k < pp->eval.n; k++)
		if (f->addr >= pp->eval.lo[k] && f->addr < pp->eval.hi[k])
			return true;
	return false;
}

void
python_period(struct python *py, unsigned secs)
{
	if (py == NULL)
		return;
	py->lines_cpu_ns = 0;
	py->lines_cpu_max = (int64_t)(secs ? secs : 1) * LINES_CPU_NS_PER_S;
}

void
python_get_stats(const struct python *py, struct python_stats *st)
{
	struct codecache_stats cs;

	memset(st, 0, sizeof(*st));
	if (py == NULL)
		return;
	codecache_get_stats(py->cc, &cs);
	st->lines_bytes = cs.lines_bytes;
	st->lines_decoded = cs.lines_decoded;
	st->frames_unlined = py->unlined;
	st->mem_stalls = cs.mem_stalls;
}
