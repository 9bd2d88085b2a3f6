/*
 * ruby: Ruby frames for the eBPF sampler (see ruby.h).
 *
 * Layouts, per minor version, of what is read (offsets in bytes, x86-64;
 * Ruby 3.1 as its MJIT header, rb_mjit_min_header-3.1.x.h, lays them out,
 * 3.3 as vm_core.h, iseq.h and include/ruby/internal/core/ of v3_3_x do).
 * One row of `versions` below per minor version:
 *
 *                                              3.1    3.3
 *   rb_execution_context_t.vm_stack              0      0
 *   rb_execution_context_t.vm_stack_size         8      8   (VALUEs)
 *   rb_execution_context_t.cfp                  16     16
 *   rb_control_frame_t.pc / .iseq / .ep    0/16/32 0/16/32
 *   rb_control_frame_t size                     64     56   (3.2 dropped __bp__)
 *   rb_iseq_t: flags 0 (T_IMEMO, imemo type 7 in bits 12-15), body 16
 *   rb_iseq_constant_body.iseq_size              4      4   (unsigned int)
 *   rb_iseq_constant_body.iseq_encoded           8      8
 *   rb_iseq_constant_body.location.pathobj      64     64   (String, or Array [path, realpath])
 *   rb_iseq_constant_body.location.label        80     80   (String)
 *   rb_iseq_constant_body.location.first_lineno 88     88   (3.1: a Fixnum; 3.3: an int)
 *   rb_iseq_constant_body.insns_info.body      120    112   (entries of 12 bytes, line_no first)
 *   rb_iseq_constant_body.insns_info.positions 128    120   (unsigned int each; freed once encoded)
 *   rb_iseq_constant_body.insns_info.size      136    128   (unsigned int)
 *   rb_iseq_constant_body.insns_info.succ_index_table 144 136
 *   RString: flags 0 (T_STRING 5; NOEMBED bit 13).
 *     3.1: embedded length in flags bits 14-18, bytes at 16; else length
 *     16 and pointer 24.
 *     3.3: length 16 always; embedded bytes at 24, else pointer 24.
 *   RArray: flags 0 (T_ARRAY 7; EMBED bit 13; embedded length from bit 15:
 *     3.1 two bits, 3.3 seven), embedded elements at 16, else length 16
 *     and pointer 32
 *   rb_method_entry_t: flags 0 (T_IMEMO, imemo type 6), def 16
 *   rb_method_definition_t: type in bits 0-3 (1: a C function), original_id 32
 *   rb_symbols_t (the global symbol table): last_id 0 (u32), ids 16 (an
 *     Array of Arrays of 512 (String, Symbol) pairs; an ID above 0xa9 has
 *     serial id >> 4, one below is its own)
 *
 * The version is libruby's ruby_version string ("3.3.8"), else its
 * ruby_api_version (three ints); a version not in the table is refused,
 * logged once per libruby file.
 *
 * The thread-local ruby_current_ec: libruby is built for the general
 * dynamic TLS model, so its GOT holds the (module id, offset) pair the
 * dynamic linker filled (R_X86_64_DTPMOD64 / DTPOFF64 against the symbol);
 * the module id is read from the process, the offset is the symbol's.
 * Where the symbol is not exported (Debian's 3.3), the pair is the one the
 * exported rb_errinfo (return GET_EC()->errinfo) hands __tls_get_addr: its
 * code is the general dynamic sequence (data16 lea SLOT(%rip),%rdi; data16
 * data16 rex.W call __tls_get_addr), then a load through the pointer
 * returned; SLOT must carry a DTPMOD64 relocation, its second word (in the
 * file, or a DTPOFF64 relocation) is the offset.
 *
 * rb_vm_exec, where a run of Ruby frames goes in the native stack, is not
 * exported by 3.3's libruby either: it is the function that both
 * rb_iseq_eval and rb_iseq_eval_main end by jumping to (a tail call), its
 * extent the FDE that begins there (ehframe.c); frames in it are named
 * rb_vm_exec (ruby_native_name).
 *
 * An iseq read for a sample is checked first: it must still be an iseq,
 * its body the one the BPF program saw in it at the sample, and the body's
 * size, code, path, label and first line those of the cached entry, else
 * the entry is read again. What cannot be read (the process exited, the
 * memory changed under us, a bound exceeded) is named "[ruby: unreadable]",
 * never guessed.
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

#include "base.h"
#include "codecache.h"
#include "ehframe.h"
#include "ruby.h"
#include "symbolize.h"

#define ISEQ_HDR	24	/* flags, wrapper, body; of a method entry: flags, class, def */
#define DEF_HDR		40	/* of rb_method_definition_t: type bits, body, original_id */
#define DEF_ORIGINAL_ID	32
#define METHOD_TYPE_CFUNC 1
#define BODY_HDR	152	/* of rb_iseq_constant_body: up to succ_index_table, all versions */
#define CACHE_SLOTS	2048	/* iseqs cached per process (open hash) */
#define MAX_NAME	512	/* bytes of a label */
#define MAX_PATH_B	1024	/* bytes of a path */
#define MAX_ISEQ	(1u << 20)	/* positions of one iseq */
#define MAX_INFO	(32u << 10)	/* insn info entries of one iseq */
#define LINES_MEM	(16u << 20)	/* decoded rows held, all processes */
/*
 * Positions of line tables decoded per second (a token bucket of twice
 * that): a process that hands out huge tables costs the sampler a bounded
 * share of its CPU; past it, frames get their first line until there is
 * room again.
 */
#define LINES_RATE	(4u << 20)
#define UNREADABLE	"[ruby: unreadable]"
/*
 * How long a frame whose name or path could not be read stays unreadable
 * without another look (its iseq unchanged): a process whose strings
 * cannot be read costs one read of them per this, not one per sample.
 */
#define REFUSED_NS	(5LL * 1000 * 1000 * 1000)
#define MEM_DEADLINE_NS	(1000LL * 1000 * 1000)
#define IMM_SIZE	54	/* positions in the succinct table's first words */

#define T_MASK		0x1f
#define T_STRING	0x05
#define T_ARRAY		0x07
#define T_IMEMO		0x1a
#define IMEMO_ISEQ	7
#define IMEMO_MENT	6

struct rbver {
	const char	*prefix;	/* of ruby_version */
	struct rb_proc	 off;		/* tls fields filled per process */
	uint16_t	 b_size, b_encoded, b_pathobj, b_label, b_first_lineno;
	uint16_t	 b_info_body, b_info_pos, b_info_size, b_succ, entry_size;
	bool		 lineno_int;	/* first_lineno an int, not a Fixnum */
	bool		 str_len;	/* RString: length at 16 always, embedded bytes at 24 */
	uint8_t		 ary_len_bits;	/* of an embedded RArray's length, from flags bit 15 */
};

static const struct rbver versions[] = {
	{ "3.1.", { 0, 0, 0, 8, 16, 0, 16, 32, 64, 16 },
	    4, 8, 64, 80, 88, 120, 128, 136, 144, 12, false, false, 2 },
	{ "3.3.", { 0, 0, 0, 8, 16, 0, 16, 32, 56, 16 },
	    4, 8, 64, 80, 88, 112, 120, 128, 136, 12, true, true, 7 },
};

/*
 * An iseq's (or a C method entry's) entry (codecache.h): e.name its label,
 * e.file its path, e.rows its line table (struct rbrow).
 */
struct rbiseq {
	struct cc_entry	 e;
	uint64_t	 body, encoded, pathobj, label, first_lineno;
	uint64_t	 info_body, info_pos, succ;
	uint32_t	 size, info_size;
	int64_t		 refused_until;	/* name NULL: not read again before (monotonic ns) */
};

/* What the sampler knows of one Ruby process; p->rb. */
struct rbproc {
	const struct rbver *v;
	struct cc_table	 cache;		/* its struct rbiseq, CACHE_SLOTS */
	uint64_t	 symbols;	/* its global symbol table; 0: C methods not named */
	/*
	 * Until the dynamic linker has relocated libruby (the module id in its
	 * GOT) and the VM has made its symbol table, a process is looked at
	 * again at its next samples, RB_TRIES times at most.
	 */
	uint64_t	 got, tls_offset, symbols_at;
	uint64_t	 vm_lo, vm_hi;	/* rb_vm_exec found by its callers, in p; 0: none */
	uint32_t	 tries;
	bool		 live;		/* in rb_procs */
};

#define RB_TRIES	100

#define FILE_CACHE	16

/* What ruby_check finds in one libruby file (dev, inode, build id). */
struct rbfile {
	uint64_t	 dev, ino;
	char		 build_id[41];
	uint64_t	 version, api_version, got, tls_offset;	/* 0: absent */
	uint64_t	 symbols;	/* the global symbol table; 0: not found */
	uint64_t	 vm_lo, vm_hi;	/* rb_vm_exec, when not exported; 0: not found */
	bool		 used;
	bool		 refused;	/* its version not known: logged once */
};

struct ruby {
	int		 procs_fd;
	struct codecache *cc;		/* iseqs, line tables, reads of a process's memory */
	struct rbfile	 files[FILE_CACHE];
	size_t		 next_file;
	/* the iseq and body heads of the sample being named (ruby_read) */
	uint8_t		 ihdr[PROF_MAX_PYFRAMES][ISEQ_HDR];
	uint8_t		 bhdr[PROF_MAX_PYFRAMES][BODY_HDR];
	bool		 hdr_ok[PROF_MAX_PYFRAMES];
	int64_t		 tokens, refilled;	/* positions that may be decoded; when */
};

struct ruby *
ruby_create(int procs_fd)
{
	struct ruby *rb = calloc(1, sizeof(*rb));

	if (rb == NULL)
		return NULL;
	rb->procs_fd = procs_fd;
	if ((rb->cc = codecache_create(&(struct codecache_conf){
	    .entry_size = sizeof(struct rbiseq), .slots = CACHE_SLOTS, .addr_shift = 3,
	    .mem_max = LINES_MEM, .deadline_ns = MEM_DEADLINE_NS })) == NULL) {
		free(rb);
		return NULL;
	}
	return rb;
}

void
ruby_destroy(struct ruby *rb)
{
	if (rb)
		codecache_destroy(rb->cc);
	free(rb);
}

void
ruby_forget(struct ruby *rb, struct proc *p)
{
	struct rbproc *rp = p->rb;

	if (rp) {
		if (rb && !p->gone && rp->live)
			(void)bpf_map_delete_elem(rb->procs_fd, &p->pid);
		codecache_forget(rb ? rb->cc : NULL, &rp->cache);
		free(rp);
	}
	p->rb = NULL;
}

/* Read len bytes of p's memory at addr: 0, or -errno (short reads too). */
static int
mem_read(struct ruby *rb, const struct proc *p, uint64_t addr, void *dst, size_t len)
{
	return codecache_read(rb->cc, (pid_t)p->pid, addr, dst, len);
}

/* --- finding the VM ----------------------------------------------------- */

static bool
vm_file(const char *name)
{
	const char *b = strrchr(name, '/');

	b = b ? b + 1 : name;
	return strncmp(b, "libruby", 7) == 0;
}

/* len bytes at ELF address vaddr of e, from the section that holds them: 0, or -ENOENT. */
static int
elf_bytes(Elf *e, uint64_t vaddr, uint8_t *out, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    vaddr < sh.sh_addr || vaddr - sh.sh_addr > sh.sh_size ||
		    len > sh.sh_size - (vaddr - sh.sh_addr))
			continue;
		if ((d = elf_getdata(scn, NULL)) == NULL || d->d_buf == NULL ||
		    vaddr - sh.sh_addr + len > d->d_size)
			return -ENOENT;
		memcpy(out, (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr), len);
		return 0;
	}
	return -ENOENT;
}

static int32_t
rd_s32(const uint8_t *b)
{
	int32_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

/*
 * The ELF address of the VM's global symbol table (the names of IDs, which
 * libruby does not export), from the code of rb_id2str: it jumps to the
 * lookup, which compares the serial with the table's last_id (its first
 * field) and then loads the table's ids array, 16 bytes further: a cmp and
 * a mov, both relative to rip, 16 bytes apart. 0 when the code is not so
 * (the address is checked against the process's memory before use).
 */
static uint64_t
symbols_find(Elf *e, uint64_t id2str, uint64_t size)
{
	uint8_t f[64], t[192];
	uint64_t target, x;
	size_t n = size < sizeof(f) ? size : sizeof(f), i, k, j;

	if (n < 5 || elf_bytes(e, id2str, f, n) < 0)
		return 0;
	/* Every byte that could start a call or jmp rel32: the code is not decoded. */
	for (i = 0; i + 5 <= n; i++) {
		if (f[i] != 0xe9 && f[i] != 0xe8)
			continue;
		target = id2str + i + 5 + (uint64_t)(int64_t)rd_s32(f + i + 1);
		if (elf_bytes(e, target, t, sizeof(t)) < 0)
			continue;
		for (k = 0; k + 6 <= sizeof(t); k++) {
			/* cmp r32, disp32(%rip) (39 /r) or cmp disp32(%rip), r32 (3b /r) */
			if ((t[k] != 0x39 && t[k] != 0x3b) || (t[k + 1] & 0xc7) != 0x05)
				continue;
			x = target + k + 6 + (uint64_t)(int64_t)rd_s32(t + k + 2);
			/* mov disp32(%rip), r64 (REX.W 8b /r) */
			for (j = k + 6; j + 7 <= sizeof(t); j++)
				if ((t[j] & 0xf8) == 0x48 && t[j + 1] == 0x8b &&
				    (t[j + 2] & 0xc7) == 0x05 &&
				    target + j + 7 + (uint64_t)(int64_t)rd_s32(t + j + 3) == x + 16)
					return x;
		}
	}
	return 0;
}

/*
 * The GOT slot whose (module id, offset) pair the general dynamic TLS
 * sequence at the start of fn (size bytes) hands __tls_get_addr, when the
 * pointer returned is then loaded through (a thread-local pointer read):
 * its ELF address, or 0.
 */
static uint64_t
tlsgd_slot(Elf *e, uint64_t fn, uint64_t size)
{
	uint8_t c[48];
	size_t n = size < sizeof(c) ? size : sizeof(c), i, k;

	if (n < 20 || elf_bytes(e, fn, c, n) < 0)
		return 0;
	for (i = 0; i + 16 + 3 <= n; i++) {
		/* data16 lea disp32(%rip),%rdi */
		if (c[i] != 0x66 || c[i + 1] != 0x48 || c[i + 2] != 0x8d || c[i + 3] != 0x3d)
			continue;
		k = i + 8;
		/* data16 data16 rex.W call rel32, or data16 rex.W call *disp32(%rip) */
		if (c[k] == 0x66 && c[k + 1] == 0x66 && c[k + 2] == 0x48 && c[k + 3] == 0xe8)
			k += 8;
		else if (c[k] == 0x66 && c[k + 1] == 0x48 && c[k + 2] == 0xff && c[k + 3] == 0x15)
			k += 8;
		else
			return 0;
		/* mov (%rax),%r64: the thread-local's value, at its offset 0 */
		if (k + 3 > n || (c[k] & 0xf8) != 0x48 || c[k + 1] != 0x8b || (c[k + 2] & 0xc7) != 0)
			return 0;
		return fn + i + 8 + (uint64_t)(int64_t)rd_s32(c + i + 4);
	}
	return 0;
}

/*
 * Whether the function at fn (size bytes) jumps (jmp rel32: a tail call) to
 * target. The code is not decoded: any such byte is looked at, the target
 * being a function's start (an FDE's) that another caller shares.
 */
static bool
jumps_to(Elf *e, uint64_t fn, uint64_t size, uint64_t target)
{
	uint8_t c[512];
	size_t n = size < sizeof(c) ? size : sizeof(c), i;

	if (n < 5 || elf_bytes(e, fn, c, n) < 0)
		return false;
	for (i = 0; i + 5 <= n; i++)
		if (c[i] == 0xe9 && fn + i + 5 + (uint64_t)(int64_t)rd_s32(c + i + 1) == target)
			return true;
	return false;
}

/*
 * rb_vm_exec where libruby does not export it: the one function (an FDE
 * start) that both rb_iseq_eval and rb_iseq_eval_main (fn[1], fn[2]: start
 * and size) jump to. Its extent into f; nothing when not exactly one.
 */
static void
vm_exec_find(Elf *e, const uint64_t fn[3][2], struct rbfile *f)
{
	uint8_t c[512];
	struct ehrange *r = NULL;
	const struct ehrange *x, *hit = NULL;
	size_t nr, n = fn[1][1] < sizeof(c) ? fn[1][1] : sizeof(c), i;

	if (n < 5 || elf_bytes(e, fn[1][0], c, n) < 0 || ehframe_ranges(e, &r, &nr) < 0)
		goto out;
	for (i = 0; i + 5 <= n; i++) {
		uint64_t t;

		if (c[i] != 0xe9)
			continue;
		t = fn[1][0] + i + 5 + (uint64_t)(int64_t)rd_s32(c + i + 1);
		if ((x = ehframe_find(r, nr, t)) == NULL || x->start != t || x == hit ||
		    !jumps_to(e, fn[2][0], fn[2][1], t))
			continue;
		if (hit != NULL)
			goto out;	/* two: not known which */
		hit = x;
	}
	if (hit != NULL) {
		f->vm_lo = hit->start;
		f->vm_hi = hit->end;
	}
out:
	free(r);
}

/*
 * In m's file: the values of ruby_version, ruby_api_version and
 * ruby_current_ec, the GOT slot of the latter's module id, and rb_vm_exec
 * when it is not exported. 0 (f filled, fields 0 where absent), or -errno
 * if the file could not be read.
 */
static int
elf_scan(const struct proc_mapping *m, struct rbfile *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t ec_idx = 0;
	uint64_t ec_val = 0, id2str = 0, id2str_size = 0, slot = 0, slot_off = 0;
	uint64_t fn[3][2] = { { 0, 0 }, { 0, 0 }, { 0, 0 } };	/* rb_errinfo, rb_iseq_eval(_main) */
	bool vm_exported = false, slot_mod = false, slot_rel = false;
	Elf *e;
	int fd, pass;

	if ((fd = proctab_open_mapping(m)) < 0)
		return fd;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL) {
		close(fd);
		return -EINVAL;
	}
	/* Pass 0: the dynamic symbols; pass 1: the relocations against ruby_current_ec. */
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1 && ec_idx == 0 && fn[0][0] != 0)
			slot = tlsgd_slot(e, fn[0][0], fn[0][1]);
		scn = NULL;
		while ((scn = elf_nextscn(e, scn)) != NULL) {
			Elf_Data *d;
			size_t k, cnt;

			if (gelf_getshdr(scn, &sh) == NULL || sh.sh_entsize == 0 ||
			    (d = elf_getdata(scn, NULL)) == NULL)
				continue;
			cnt = sh.sh_size / sh.sh_entsize;
			if (pass == 0 && sh.sh_type == SHT_DYNSYM) {
				for (k = 0; k < cnt; k++) {
					GElf_Sym s;
					const char *nm;
					bool func;

					if (gelf_getsym(d, (int)k, &s) == NULL ||
					    s.st_shndx == SHN_UNDEF ||
					    (nm = elf_strptr(e, sh.sh_link, s.st_name)) == NULL)
						continue;
					func = GELF_ST_TYPE(s.st_info) == STT_FUNC;
					if (strcmp(nm, "ruby_version") == 0)
						f->version = s.st_value;
					else if (strcmp(nm, "ruby_api_version") == 0 && s.st_size >= 12)
						f->api_version = s.st_value;
					else if (strcmp(nm, "rb_id2str") == 0 && func) {
						id2str = s.st_value;
						id2str_size = s.st_size;
					} else if (strcmp(nm, "ruby_current_ec") == 0 &&
					    GELF_ST_TYPE(s.st_info) == STT_TLS) {
						ec_idx = k;
						ec_val = s.st_value;
					} else if (strcmp(nm, "rb_vm_exec") == 0 && func) {
						vm_exported = true;
					} else if (func && (strcmp(nm, "rb_errinfo") == 0 ||
					    strcmp(nm, "rb_iseq_eval") == 0 ||
					    strcmp(nm, "rb_iseq_eval_main") == 0)) {
						int w = nm[3] == 'e' ? 0 : nm[12] == '\0' ? 1 : 2;

						fn[w][0] = s.st_value;
						fn[w][1] = s.st_size;
					}
				}
			} else if (pass == 1 && sh.sh_type == SHT_RELA && (ec_idx != 0 || slot != 0)) {
				for (k = 0; k < cnt; k++) {
					GElf_Rela r;
					uint64_t t;

					if (gelf_getrela(d, (int)k, &r) == NULL)
						continue;
					t = GELF_R_TYPE(r.r_info);
					if (ec_idx != 0 && GELF_R_SYM(r.r_info) == ec_idx) {
						if (t == R_X86_64_DTPMOD64)
							f->got = r.r_offset;
						else if (t == R_X86_64_DTPOFF64)
							f->tls_offset = ec_val + (uint64_t)r.r_addend;
					} else if (ec_idx == 0 && GELF_R_SYM(r.r_info) == 0) {
						/* A local symbol's pair: its offset is the addend. */
						if (t == R_X86_64_DTPMOD64 && r.r_offset == slot)
							slot_mod = true;
						else if (t == R_X86_64_DTPOFF64 && r.r_offset == slot + 8) {
							slot_rel = true;
							slot_off = (uint64_t)r.r_addend;
						}
					}
				}
			}
		}
	}
	if (f->got != 0 && f->tls_offset == 0)
		f->tls_offset = ec_val;
	/* Not exported: the slot rb_errinfo reads it through, its offset linked in. */
	if (ec_idx == 0 && slot_mod) {
		if (!slot_rel && elf_bytes(e, slot + 8, (uint8_t *)&slot_off, sizeof(slot_off)) < 0)
			slot_off = UINT64_MAX;
		if (slot_off != UINT64_MAX) {
			f->got = slot;
			f->tls_offset = slot_off;
		}
	}
	if (id2str != 0)
		f->symbols = symbols_find(e, id2str, id2str_size);
	if (!vm_exported && fn[1][0] != 0 && fn[2][0] != 0)
		vm_exec_find(e, (const uint64_t (*)[2])fn, f);
	elf_end(e);
	close(fd);
	return 0;
}

static int
file_scan(struct ruby *rb, const struct proc_mapping *m, struct rbfile *out)
{
	struct rbfile *f;
	size_t i;

	for (i = 0; i < FILE_CACHE; i++) {
		f = &rb->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0) {
			*out = *f;
			return 0;
		}
	}
	memset(out, 0, sizeof(*out));
	if (elf_scan(m, out) < 0)
		return -ENOENT;
	/* A file without a build id may be rewritten in place: not remembered. */
	if (m->build_id[0] == '\0')
		return 0;
	f = &rb->files[rb->next_file];
	rb->next_file = (rb->next_file + 1) % FILE_CACHE;
	*f = *out;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	f->used = true;
	return 0;
}

/*
 * The global symbol table (rb_symbols_t: last_id u32 at 0, ids at 16, an
 * Array of Arrays of 512 (String, Symbol) pairs, an ID's serial indexing
 * them) at addr of p, as far as it can be checked: 0, or -EINVAL.
 */
#define TLAST_OP_ID	0xa9	/* IDs up to it are operators: their own serial */
#define ID_ENTRY_UNIT	512

static int
symbols_check(struct ruby *rb, const struct proc *p, uint64_t addr)
{
	uint8_t h[24], a[8];
	uint32_t last;

	if (mem_read(rb, p, addr, h, sizeof(h)) < 0)
		return -EINVAL;
	memcpy(&last, h, sizeof(last));
	if (last <= TLAST_OP_ID || last > (1u << 28) || (cc_rd64(h, 16) & 7) != 0 ||
	    mem_read(rb, p, cc_rd64(h, 16), a, sizeof(a)) < 0 || (cc_rd64(a, 0) & T_MASK) != T_ARRAY)
		return -EINVAL;
	return 0;
}

/* Element i of the Array at addr: 0 (nil, absent or not an Array), else its value. */
static uint64_t
ary_entry(struct ruby *rb, const struct proc *p, const struct rbver *v, uint64_t addr,
    uint64_t i)
{
	uint8_t h[40];
	uint64_t fl, len, at, val = 0;

	if (addr == 0 || (addr & 7) || mem_read(rb, p, addr, h, sizeof(h)) < 0)
		return 0;
	fl = cc_rd64(h, 0);
	if ((fl & T_MASK) != T_ARRAY)
		return 0;
	if (fl & (1u << 13)) {
		len = (fl >> 15) & ((1u << v->ary_len_bits) - 1);
		if (i < len && i < 3)
			return cc_rd64(h, 16 + 8 * i);
		at = addr + 16;		/* a larger slot (3.2 on) holds more */
	} else {
		len = cc_rd64(h, 16);
		at = cc_rd64(h, 32);
	}
	if (i >= len || mem_read(rb, p, at + 8 * i, &val, sizeof(val)) < 0)
		return 0;
	return val;
}

static char *read_rstring(struct ruby *rb, const struct proc *p, const struct rbver *v,
    uint64_t addr, size_t max);

/* The name of ID id in p's symbol table, malloc'd, or NULL. */
static char *
id_name(struct ruby *rb, const struct proc *p, const struct rbproc *rp, uint64_t id)
{
	uint64_t serial = id > TLAST_OP_ID ? id >> 4 : id, row;
	uint8_t h[24];
	uint32_t last;

	if (rp->symbols == 0 || serial == 0 || mem_read(rb, p, rp->symbols, h, sizeof(h)) < 0)
		return NULL;
	memcpy(&last, h, sizeof(last));
	if (serial > last ||
	    (row = ary_entry(rb, p, rp->v, cc_rd64(h, 16), serial / ID_ENTRY_UNIT)) == 0)
		return NULL;
	return read_rstring(rb, p, rp->v, ary_entry(rb, p, rp->v, row,
	    (serial % ID_ENTRY_UNIT) * 2), MAX_NAME);
}

/* Enter p into rb_procs once libruby is relocated; find its symbol table once it is made. */
static void
ruby_activate(struct ruby *rb, struct proc *p, struct rbproc *rp)
{
	struct rb_proc val;
	uint64_t modid = 0;

	if (!rp->live) {
		if (rp->got == 0 || mem_read(rb, p, rp->got, &modid, sizeof(modid)) < 0 ||
		    modid == 0 || modid > 4096)
			return;
		val = rp->v->off;
		val.tls_module = modid;
		val.tls_offset = rp->tls_offset;
		if (bpf_map_update_elem(rb->procs_fd, &p->pid, &val, BPF_ANY) < 0) {
			log_debug("ebpf: pid %u: rb_procs: %s", p->pid, strerror(errno));
			rp->tries = 0;
			return;
		}
		rp->live = true;
		log_debug("ebpf: pid %u: Ruby frames (TLS module %llu)", p->pid,
		    (unsigned long long)modid);
	}
	if (rp->symbols == 0 && rp->symbols_at != 0 && symbols_check(rb, p, rp->symbols_at) == 0)
		rp->symbols = rp->symbols_at;
}

/*
 * The version of the libruby mapped by m (file f), "3.3.8", into ver (16
 * bytes): ruby_version, else ruby_api_version's three ints. 0, or -EFAULT.
 */
static int
version_read(struct ruby *rb, const struct proc *p, const struct proc_mapping *m,
    const struct rbfile *f, char ver[16])
{
	int32_t api[3];

	if (f->version != 0) {
		if (mem_read(rb, p, f->version + m->bias, ver, 16) < 0)
			return -EFAULT;
		ver[15] = '\0';
		return 0;
	}
	if (f->api_version == 0 || mem_read(rb, p, f->api_version + m->bias, api, sizeof(api)) < 0 ||
	    api[0] < 0 || api[0] > 99 || api[1] < 0 || api[1] > 99 || api[2] < 0 || api[2] > 99)
		return -EFAULT;
	snprintf(ver, 16, "%d.%d.%d", api[0], api[1], api[2]);
	return 0;
}

/* The file-cache entry of m's file, to remember that its version was refused. */
static struct rbfile *
file_cached(struct ruby *rb, const struct proc_mapping *m)
{
	size_t i;

	for (i = 0; i < FILE_CACHE; i++)
		if (rb->files[i].used && rb->files[i].dev == m->dev && rb->files[i].ino == m->ino &&
		    strcmp(rb->files[i].build_id, m->build_id) == 0)
			return &rb->files[i];
	return NULL;
}

void
ruby_check(struct ruby *rb, struct proc *p)
{
	struct proc_mapping m;
	struct rbproc *rp;
	struct rbfile f, *fc;
	size_t i, k;

	if (rb == NULL || p->gone || p->kthread)
		return;
	if ((rp = p->rb) != NULL) {
		if (rp->v != NULL && (!rp->live || (rp->symbols == 0 && rp->symbols_at != 0)) &&
		    rp->tries > 0) {
			rp->tries--;
			ruby_activate(rb, p, rp);
		}
		return;
	}
	if (p->rb_gen == p->maps_gen)
		return;
	p->rb_gen = p->maps_gen;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++) {
		char ver[16];

		if (!vm_file(m.name) || file_scan(rb, &m, &f) < 0 ||
		    (f.version == 0 && f.api_version == 0))
			continue;
		if (version_read(rb, p, &m, &f, ver) < 0)
			return;
		for (k = 0; k < sizeof(versions) / sizeof(versions[0]); k++)
			if (strncmp(ver, versions[k].prefix, strlen(versions[k].prefix)) == 0)
				break;
		if (k == sizeof(versions) / sizeof(versions[0])) {
			/*
			 * Refused for good, this process (an rbproc without a
			 * version), and logged once per libruby file.
			 */
			if ((fc = file_cached(rb, &m)) == NULL || !fc->refused)
				log_warnx("ebpf: Ruby %s (%s, pid %u): a version the sampler does "
				    "not know the layout of: its Ruby frames are not read", ver,
				    m.name, p->pid);
			if (fc != NULL)
				fc->refused = true;
			p->rb = calloc(1, sizeof(*rp));
			return;
		}
		if (f.got == 0 || f.tls_offset > 65536) {
			log_debug("ebpf: pid %u: Ruby %.8s: ruby_current_ec not found in %s: no "
			    "Ruby frames", p->pid, ver, m.name);
			return;
		}
		if ((rp = calloc(1, sizeof(*rp))) == NULL)
			return;
		rp->v = &versions[k];
		rp->got = f.got + m.bias;
		rp->tls_offset = f.tls_offset;
		rp->symbols_at = f.symbols ? f.symbols + m.bias : 0;
		if (f.vm_lo != 0) {
			rp->vm_lo = f.vm_lo + m.bias;
			rp->vm_hi = f.vm_hi + m.bias;
		}
		rp->tries = RB_TRIES;
		p->rb = rp;
		log_debug("ebpf: pid %u: Ruby %.8s in %s%s%s", p->pid, ver, m.name,
		    rp->symbols_at ? "" : " (its symbol table not found: C methods left out)",
		    f.vm_lo ? " (rb_vm_exec found by its callers)" : "");
		ruby_activate(rb, p, rp);
		return;
	}
}

void
ruby_native_name(const struct ruby *rb, const struct proc *p, struct frame *f)
{
	const struct rbproc *rp = p->rb;

	if (rb != NULL && rp != NULL && f->func == NULL && rp->vm_lo != 0 &&
	    f->addr >= rp->vm_lo && f->addr < rp->vm_hi)
		f->func = "rb_vm_exec";
}

/* --- naming iseqs --------------------------------------------------------- */

/* Copy len bytes as a NUL-terminated string, invalid UTF-8 as '?'; NULL if it holds a NUL. */
static char *
utf8_dup(const uint8_t *s, size_t len)
{
	char *o = malloc(len + 1);
	size_t i = 0, k, n;

	if (o == NULL)
		return NULL;
	while (i < len) {
		uint8_t c = s[i];

		if (c == 0) {
			free(o);
			return NULL;
		}
		n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 && c >= 0xc2 ? 2 :
		    (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 && c <= 0xf4 ? 4 : 0;
		for (k = 1; n > 1 && k < n; k++)
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				n = 0;
		/* Overlong forms, surrogates, past U+10FFFF: not UTF-8 either. */
		if ((n == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0))) ||
		    (n == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))))
			n = 0;
		if (n == 0) {
			o[i++] = '?';
			continue;
		}
		memcpy(o + i, s + i, n);
		i += n;
	}
	o[len] = '\0';
	return o;
}

/*
 * A String of p at addr as a malloc'd string, or NULL. One longer than max
 * (a method may be named with megabytes) is cut, as symbol names are
 * (SYM_NAME_MAX): its first bytes and "...", the rest never read, so that
 * it costs what a short one does.
 */
static char *
read_rstring(struct ruby *rb, const struct proc *p, const struct rbver *v, uint64_t addr,
    size_t max)
{
	uint8_t h[40], *raw;
	uint64_t fl, len, ptr;
	char *out, *o2;
	bool cut;

	if (addr == 0 || (addr & 7) || mem_read(rb, p, addr, h, sizeof(h)) < 0)
		return NULL;
	fl = cc_rd64(h, 0);
	if ((fl & T_MASK) != T_STRING)
		return NULL;
	if (!v->str_len && !(fl & (1u << 13))) {
		len = (fl >> 14) & 0x1f;
		if (len > 23)
			return NULL;
		return utf8_dup(h + 16, len);
	}
	len = cc_rd64(h, 16);
	if (v->str_len && !(fl & (1u << 13))) {
		if (len <= 16)
			return utf8_dup(h + 24, len);
		ptr = addr + 24;	/* embedded in a larger slot */
	} else {
		ptr = cc_rd64(h, 24);
	}
	if (ptr == 0)
		return NULL;
	if ((cut = len > max))
		len = max - 3;
	if ((raw = malloc(len ? len : 1)) == NULL)
		return NULL;
	if (len && mem_read(rb, p, ptr, raw, len) < 0) {
		free(raw);
		return NULL;
	}
	out = utf8_dup(raw, len);
	free(raw);
	if (out && cut) {
		if ((o2 = realloc(out, len + 4)) == NULL) {
			free(out);
			return NULL;
		}
		out = o2;
		memcpy(out + len, "...", 4);
	}
	return out;
}

/* The path of a pathobj: itself if a String, else its realpath (or path) element. */
static char *
read_path(struct ruby *rb, const struct proc *p, const struct rbver *v, uint64_t addr)
{
	char *s;

	if ((s = read_rstring(rb, p, v, addr, MAX_PATH_B)) != NULL)
		return s;
	if ((s = read_rstring(rb, p, v, ary_entry(rb, p, v, addr, 1), MAX_PATH_B)) != NULL)
		return s;
	return read_rstring(rb, p, v, ary_entry(rb, p, v, addr, 0), MAX_PATH_B);
}

static int32_t
fixnum_line(uint64_t v)
{
	int64_t n = (int64_t)v >> 1;

	return (v & 1) && n > 0 && n <= INT32_MAX ? (int32_t)n : 0;
}

static void
iseq_fields(const struct rbver *v, struct rbiseq *c, const uint8_t *b)
{
	c->size = cc_rd32(b, v->b_size);
	c->encoded = cc_rd64(b, v->b_encoded);
	c->pathobj = cc_rd64(b, v->b_pathobj);
	c->label = cc_rd64(b, v->b_label);
	c->first_lineno = v->lineno_int ? (uint64_t)(int64_t)(int32_t)cc_rd32(b, v->b_first_lineno) :
	    (uint64_t)(int64_t)fixnum_line(cc_rd64(b, v->b_first_lineno));
	c->info_body = cc_rd64(b, v->b_info_body);
	c->info_pos = cc_rd64(b, v->b_info_pos);
	c->info_size = cc_rd32(b, v->b_info_size);
	c->succ = cc_rd64(b, v->b_succ);
}

static bool
iseq_same(const struct rbver *v, const struct rbiseq *c, const uint8_t *b)
{
	struct rbiseq now;

	iseq_fields(v, &now, b);
	return now.size == c->size && now.encoded == c->encoded && now.pathobj == c->pathobj &&
	    now.label == c->label && now.first_lineno == c->first_lineno &&
	    now.info_body == c->info_body && now.info_size == c->info_size && now.succ == c->succ;
}

int32_t
ruby_rows_lookup(const struct rbrow *rows, uint32_t n, uint64_t idx)
{
	uint32_t k = codecache_lines_find(rows, n, sizeof(*rows), idx);

	return k < n ? rows[k].line : 0;
}

struct rowbuf {
	struct rbrow	*rows;
	uint32_t	 n, cap;
};

static int
row_add(struct rowbuf *r, uint32_t end, int32_t line)
{
	struct rbrow *nr;

	if (r->n > 0 && r->rows[r->n - 1].line == line) {
		r->rows[r->n - 1].end = end;
		return 0;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		if ((nr = realloc(r->rows, r->cap * sizeof(*nr))) == NULL)
			return -ENOMEM;
		r->rows = nr;
	}
	r->rows[r->n].end = end;
	r->rows[r->n++].line = line;
	return 0;
}

static int
rows_done(struct rowbuf *r, int rc, struct rbrow **rows, uint32_t *nrows)
{
	struct rbrow *fit;

	if (rc < 0) {
		free(r->rows);
		return rc;
	}
	if (r->n > 0 && r->n < r->cap && (fit = realloc(r->rows, r->n * sizeof(*fit))) != NULL)
		r->rows = fit;
	*rows = r->rows;
	*nrows = r->n;
	return 0;
}

int
ruby_succ_decode(const uint8_t *tbl, size_t len, uint32_t iseq_size, const int32_t *lines,
    uint32_t nlines, struct rbrow **rows, uint32_t *nrows)
{
	size_t imm = (iseq_size < IMM_SIZE ? iseq_size + 8 : IMM_SIZE) / 9;
	size_t blocks = iseq_size < IMM_SIZE ? 0 : (iseq_size - IMM_SIZE + 511) / 512;
	struct rowbuf r = { NULL, 0, 0 };
	uint32_t pos;
	int rc = 0;

	*rows = NULL;
	*nrows = 0;
	if (len < imm * 8 + blocks * 80 || (blocks > 0 && len < 48 + blocks * 80))
		return -EINVAL;
	for (pos = 0; pos < iseq_size && rc == 0; pos++) {
		uint64_t rank;

		if (pos < IMM_SIZE) {
			rank = (cc_rd64(tbl, (pos / 9) * 8) >> ((pos % 9) * 7)) & 0x7f;
		} else {
			uint32_t x = pos - IMM_SIZE, bi = x % 512, si = bi / 64;
			size_t off = 48 + (size_t)(x / 512) * 80;
			uint64_t small = cc_rd64(tbl, off + 8), bits = cc_rd64(tbl, off + 16 + si * 8);

			rank = cc_rd32(tbl, off) + (si == 0 ? 0 : (small >> ((si - 1) * 9)) & 0x1ff) +
			    (uint64_t)__builtin_popcountll(bits << (63 - bi % 64));
		}
		rc = row_add(&r, pos + 1, rank >= 1 && rank <= nlines ? lines[rank - 1] : 0);
	}
	return rows_done(&r, rc, rows, nrows);
}

int
ruby_positions_decode(const uint32_t *pos, const int32_t *lines, uint32_t nlines,
    uint32_t iseq_size, struct rbrow **rows, uint32_t *nrows)
{
	struct rowbuf r = { NULL, 0, 0 };
	uint32_t k;
	int rc = 0;

	*rows = NULL;
	*nrows = 0;
	for (k = 0; k + 1 < nlines; k++)
		if (pos[k] >= pos[k + 1])
			return -EINVAL;
	if (nlines > 0 && pos[0] > 0 && iseq_size > 0)
		rc = row_add(&r, pos[0] < iseq_size ? pos[0] : iseq_size, 0);
	/* Positions past the iseq's size (a table we misread) cover nothing. */
	for (k = 0; k < nlines && rc == 0 && pos[k] < iseq_size; k++) {
		uint32_t end = k + 1 < nlines && pos[k + 1] < iseq_size ? pos[k + 1] : iseq_size;

		rc = row_add(&r, end, lines[k]);
	}
	return rows_done(&r, rc, rows, nrows);
}

/*
 * Read and decode c's line table if the budgets allow; lines stay unknown
 * for good when it is too big or unreadable.
 */
static void
iseq_lines(struct ruby *rb, const struct proc *p, const struct rbver *v, struct rbiseq *c)
{
	struct rbproc *rp = p->rb;
	uint8_t *ent = NULL, *tbl = NULL;
	int32_t *lines = NULL;
	uint32_t *pos = NULL, k, n = c->info_size, nrows = 0;
	struct rbrow *rows = NULL;
	size_t imm, blocks, tlen;
	struct timespec ts;
	int rc = -EINVAL;
	int64_t now;

	if (n == 0 || n > MAX_INFO || c->size == 0 || c->size > MAX_ISEQ || c->info_body == 0) {
		c->e.lines = CC_LINES_NONE;
		return;
	}
	if (codecache_lines_full(rb->cc, &rp->cache))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	rb->tokens += (now - rb->refilled) / (1000000000LL / LINES_RATE);
	rb->refilled = now;
	if (rb->tokens > 2LL * LINES_RATE)
		rb->tokens = 2LL * LINES_RATE;
	if (rb->tokens < (int64_t)c->size + n)
		return;
	rb->tokens -= (int64_t)c->size + n;
	c->e.lines = CC_LINES_NONE;
	if ((ent = malloc((size_t)n * v->entry_size)) == NULL ||
	    (lines = malloc((size_t)n * sizeof(*lines))) == NULL)
		goto out;
	if (mem_read(rb, p, c->info_body, ent, (size_t)n * v->entry_size) < 0)
		goto out;
	for (k = 0; k < n; k++)
		lines[k] = (int32_t)cc_rd32(ent, (size_t)k * v->entry_size);
	if (n == 1) {
		rc = ruby_positions_decode((const uint32_t[]){ 0 }, lines, 1, c->size, &rows,
		    &nrows);
	} else if (c->succ != 0) {
		imm = (c->size < IMM_SIZE ? c->size + 8 : IMM_SIZE) / 9;
		blocks = c->size < IMM_SIZE ? 0 : (c->size - IMM_SIZE + 511) / 512;
		tlen = blocks ? 48 + blocks * 80 : imm * 8;
		if ((tbl = malloc(tlen)) != NULL && mem_read(rb, p, c->succ, tbl, tlen) == 0)
			rc = ruby_succ_decode(tbl, tlen, c->size, lines, n, &rows, &nrows);
	} else if (c->info_pos != 0) {
		if ((pos = malloc((size_t)n * sizeof(*pos))) != NULL &&
		    mem_read(rb, p, c->info_pos, pos, (size_t)n * sizeof(*pos)) == 0)
			rc = ruby_positions_decode(pos, lines, n, c->size, &rows, &nrows);
	}
	if (rc == 0)
		(void)codecache_lines_keep(rb->cc, &rp->cache, &c->e, rows, nrows,
		    sizeof(*rows));
out:
	free(ent);
	free(lines);
	free(tbl);
	free(pos);
}

void
ruby_read(struct ruby *rb, struct proc *p, const struct prof_pyframe *fr, size_t n)
{
	struct iovec l[2 * 32], r[2 * 32];
	const struct rbproc *rp = p->rb;
	size_t i, j, m, idx[32], want;
	ssize_t got;

	if (rb == NULL || rp == NULL || rp->v == NULL || n == 0)
		return;
	if (n > PROF_MAX_PYFRAMES)
		n = PROF_MAX_PYFRAMES;
	memset(rb->hdr_ok, 0, sizeof(rb->hdr_ok));
	if (p->gone)
		return;
	/*
	 * Up to 32 frames a call: an iseq's head and its body's, or a C
	 * method's entry and its definition (when it can be named); a call
	 * stops at the first range it cannot read, those from there on are
	 * read one by one.
	 */
	for (i = 0; i < n;) {
		for (m = 0; i < n && m < 32; i++) {
			bool cf = (fr[i].code & PROF_RB_CFUNC) != 0;

			if (cf && rp->symbols == 0)
				continue;
			idx[m] = i;
			l[2 * m].iov_base = rb->ihdr[i];
			l[2 * m].iov_len = ISEQ_HDR;
			r[2 * m].iov_base = (void *)(uintptr_t)(fr[i].code &
			    ~(PROF_PY_ENTRY | PROF_RB_CFUNC));
			r[2 * m].iov_len = ISEQ_HDR;
			l[2 * m + 1].iov_base = rb->bhdr[i];
			l[2 * m + 1].iov_len = cf ? DEF_HDR : BODY_HDR;
			r[2 * m + 1].iov_base = (void *)(uintptr_t)fr[i].name;
			r[2 * m + 1].iov_len = cf ? DEF_HDR : BODY_HDR;
			m++;
		}
		if (m == 0)
			break;
		got = codecache_readv(rb->cc, (pid_t)p->pid, l, r, 2 * m);
		if (got == -ETIMEDOUT)
			return;
		for (j = 0, want = 0; got > 0 && j < m; j++) {
			want += l[2 * j].iov_len + l[2 * j + 1].iov_len;
			if ((size_t)got < want)
				break;
			rb->hdr_ok[idx[j]] = true;
		}
		for (; j < m; j++)
			rb->hdr_ok[idx[j]] = mem_read(rb, p, (uint64_t)(uintptr_t)r[2 * j].iov_base,
			    rb->ihdr[idx[j]], ISEQ_HDR) == 0 &&
			    mem_read(rb, p, fr[idx[j]].name, rb->bhdr[idx[j]],
			    l[2 * j + 1].iov_len) == 0;
	}
}

/*
 * Whether c, an entry of the frame's address, was refused lately: then the
 * frame is unreadable without a read. One refused long enough ago is
 * emptied, to be read again.
 */
static bool
refused_lately(struct ruby *rb, struct rbproc *rp, struct rbiseq *c)
{
	if (c->e.addr == 0 || c->e.name != NULL)
		return false;
	if (clock_mono_ns() < c->refused_until)
		return true;
	codecache_drop(rb->cc, &rp->cache, &c->e);
	return false;
}

/* Keep c, whose name or path could not be read, as refused for a while. */
static void
refuse(struct rbiseq *c)
{
	free(c->e.name);
	free(c->e.file);
	c->e.name = c->e.file = NULL;
	c->refused_until = clock_mono_ns() + REFUSED_NS;
}

/*
 * A C method's frame: named by its method's original name when p's symbol
 * table is known (cached by method entry, checked at every sample: still a
 * method entry, with the definition the sample saw, of a C function).
 */
static int
cfunc_frame(struct ruby *rb, struct proc *p, const struct prof_pyframe *fr, size_t i,
    struct frame *f)
{
	struct rbproc *rp = p->rb;
	uint64_t addr = fr[i].code & ~(PROF_PY_ENTRY | PROF_RB_CFUNC), fl, id;
	struct rbiseq *c = NULL;

	if (rp->symbols == 0)
		return 1;
	if (!rb->hdr_ok[i])
		return -EFAULT;
	fl = cc_rd64(rb->ihdr[i], 0);
	id = cc_rd64(rb->bhdr[i], DEF_ORIGINAL_ID);
	if ((fl & T_MASK) != T_IMEMO || ((fl >> 12) & 0xf) != IMEMO_MENT ||
	    cc_rd64(rb->ihdr[i], 16) != fr[i].name || (rb->bhdr[i][0] & 0xf) != METHOD_TYPE_CFUNC)
		return -EFAULT;
	if ((c = (struct rbiseq *)codecache_slot(rb->cc, &rp->cache, addr)) == NULL)
		return -EFAULT;
	if (c->e.addr == addr && (c->body != fr[i].name || c->label != id || c->e.file != NULL))
		codecache_drop(rb->cc, &rp->cache, &c->e);
	if (refused_lately(rb, rp, c))
		return -EFAULT;
	if (c->e.addr == 0) {
		c = (struct rbiseq *)codecache_claim(rb->cc, &rp->cache, &c->e, addr);
		c->body = fr[i].name;
		c->label = id;
		if ((c->e.name = id_name(rb, p, rp, id)) == NULL) {
			refuse(c);
			return -EFAULT;
		}
	}
	f->func = c->e.name;
	return 0;
}

int
ruby_frame(struct ruby *rb, struct proc *p, const struct prof_pyframe *fr, size_t n, size_t i,
    struct frame *f)
{
	struct rbproc *rp = p->rb;
	uint64_t addr = fr[i].code & ~PROF_PY_ENTRY, fl, pos;
	const uint8_t *ih, *bh;
	struct rbiseq *c = NULL;

	memset(f, 0, sizeof(*f));
	f->file = "[ruby]";
	f->build_id = "";
	f->func = UNREADABLE;
	if (rp != NULL && rp->v == NULL)
		return -EFAULT;		/* a version refused */
	if (rb != NULL && rp != NULL && i < n && i < PROF_MAX_PYFRAMES &&
	    (fr[i].code & PROF_RB_CFUNC))
		return cfunc_frame(rb, p, fr, i, f);
	if (rb == NULL || rp == NULL || i >= n || i >= PROF_MAX_PYFRAMES || !rb->hdr_ok[i] ||
	    addr == 0)
		return -EFAULT;
	ih = rb->ihdr[i];
	bh = rb->bhdr[i];
	fl = cc_rd64(ih, 0);
	/* No longer (or never) an iseq, or another body than the sample saw. */
	if ((fl & T_MASK) != T_IMEMO || ((fl >> 12) & 0xf) != IMEMO_ISEQ ||
	    cc_rd64(ih, 16) != fr[i].name)
		return -EFAULT;
	if ((c = (struct rbiseq *)codecache_slot(rb->cc, &rp->cache, addr)) == NULL)
		return -EFAULT;
	if (c->e.addr == addr && (c->body != fr[i].name || !iseq_same(rp->v, c, bh)))
		codecache_drop(rb->cc, &rp->cache, &c->e);	/* another iseq there */
	if (refused_lately(rb, rp, c))
		return -EFAULT;
	if (c->e.addr == 0) {
		c = (struct rbiseq *)codecache_claim(rb->cc, &rp->cache, &c->e, addr);
		c->body = fr[i].name;
		iseq_fields(rp->v, c, bh);
		if ((c->e.name = read_rstring(rb, p, rp->v, c->label, MAX_NAME)) == NULL ||
		    (c->e.file = read_path(rb, p, rp->v, c->pathobj)) == NULL) {
			refuse(c);
			return -EFAULT;
		}
		c->e.lines = CC_LINES_NOT_READ;
	}
	f->func = c->e.name;
	f->srcfile = c->e.file;
	f->line = (int64_t)c->first_lineno > 0 && (int64_t)c->first_lineno <= INT32_MAX ?
	    (int32_t)c->first_lineno : 0;
	if (fr[i].instr >= c->encoded && c->size <= MAX_ISEQ &&
	    (pos = (fr[i].instr - c->encoded) / 8) <= c->size) {
		/* The pc is past the instruction being run: look at the one before. */
		if (pos > 0)
			pos--;
		if (c->e.lines == CC_LINES_NOT_READ)
			iseq_lines(rb, p, rp->v, c);
		if (c->e.lines == CC_LINES_READ && ruby_rows_lookup(c->e.rows, c->e.nrows, pos) > 0)
			f->line = ruby_rows_lookup(c->e.rows, c->e.nrows, pos);
	}
	return 0;
}

int
ruby_is_vm(const char *func)
{
	static const char vm[] = "rb_vm_exec";

	return func && strncmp(func, vm, sizeof(vm) - 1) == 0 &&
	    (func[sizeof(vm) - 1] == '\0' || func[sizeof(vm) - 1] == '.');
}

int
ruby_is_core(const char *func)
{
	static const char core[] = "vm_exec_core";

	return func && strncmp(func, core, sizeof(core) - 1) == 0 &&
	    (func[sizeof(core) - 1] == '\0' || func[sizeof(core) - 1] == '.');
}
