/*
 * v8: JavaScript frames of V8 processes (see v8.h).
 *
 * Everything read is laid out as the process's own V8 says: its postmortem
 * constants (v8dbg_*, exported by node and libnode for debuggers), read once
 * per file from the process's memory. Tagged pointers are full 64-bit words
 * (a V8 built with pointer compression is left alone); a Smi is its word
 * shifted right by 32. What is read, from a frame's JSFunction:
 *
 *   JSFunction.shared            -> SharedFunctionInfo (type checked)
 *   SharedFunctionInfo.name_or_scope_info  a String (the name), or a ScopeInfo
 *   SharedFunctionInfo.script_or_debug_info  a Script, else no file
 *   Script.name, Script.line_ends (FixedArray of Smis), Script.source
 *
 * A function's ScopeInfo (V8 10 and 11: v8dbg_scopeinfo_idx_first_vars 3)
 * is, in tagged slots after its map: flags, parameter count, context local
 * count, the context locals' names (one slot, a hash table, from 75 locals
 * on) and their infos, then as its flags say a saved class variable (bit
 * 10), the function variable's name and slot (bits 12-13 not zero), the
 * inferred name (bit 14), then the start and end positions. The name shown
 * is the function variable's when not empty, else the inferred one (an
 * anonymous function assigned to obj.prop is "obj.prop"), else
 * "(anonymous)"; the line the one of the start position (the function's
 * first line), from the script's line ends when V8 computed them, else by
 * counting newlines in its source (a sequential string, at most
 * SOURCE_MAX bytes read, SOURCE_BUDGET for all of one process's functions).
 * Strings: sequential one- or two-byte, cons (STR_PIECES pieces at most),
 * thin; others (external, sliced) are not read. At most LOADS_PER_SAMPLE
 * functions not cached yet are read per sample, so that no layout a process
 * makes up costs more than a bounded number of reads a sample.
 *
 * The sampler's BPF program reads nothing of this: at each sample it notes
 * the JSFunction pointers of the frames it walked (bpf/v8.bpf.h). Here,
 * once per sample, two rounds of process_vm_readv read every frame's
 * JSFunction.shared and the SharedFunctionInfo's map, name and script words;
 * a SharedFunctionInfo cached with the same words is the same function
 * (what they point to lives as long as it does), else it is read again.
 * Objects move when V8 collects garbage: a function pointer that no longer
 * leads to a SharedFunctionInfo leaves its frame native, never guessed.
 */
#define _GNU_SOURCE	/* process_vm_readv */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base.h"
#include "memread.h"
#include "symbolize.h"
#include "v8.h"

#define CACHE_SLOTS	2048	/* functions cached per process (open hash) */
#define MAX_NAME	512	/* characters of a function name */
#define MAX_PATH_CH	1024	/* characters of a file name */
#define MAX_LOCALS	4096	/* context locals of a ScopeInfo */
#define INLINED_LOCALS	75	/* V8's kScopeInfoMaxInlinedLocalNamesSize */
#define CONS_DEPTH	8	/* cons strings followed */
#define STR_PIECES	64	/* strings (cons halves) read for one name */
#define LOADS_PER_SAMPLE 32	/* functions not cached read per sample; the rest left native */
#define SOURCE_MAX	(4u << 20)	/* bytes of a script's source read for a line */
#define SOURCE_BUDGET	(64u << 20)	/* ... for all lines of one process */
#define LINE_STEPS	32	/* reads of a binary search in line ends */
#define SFI_HDR		48	/* bytes of a SharedFunctionInfo read per frame and sample */
#define MEM_DEADLINE_NS	(1000LL * 1000 * 1000)	/* see memread.h */
#define FILE_CACHE	16	/* V8 files whose constants are remembered */

/* The constants read, in this order (v8dbg_ prefix left out). */
enum {
	K_FP_FUNCTION, K_FP_CONTEXT, K_TAGGED_SIZE, K_SMI_SHIFT, K_HEAPOBJ_MAP,
	K_MAP_TYPE, K_FN_SHARED, K_SFI_NAME, K_SFI_SCRIPT, K_SCRIPT_NAME, K_SCRIPT_SOURCE,
	K_SCRIPT_LINE_ENDS, K_STR_LENGTH, K_SEQ1_CHARS, K_SEQ2_CHARS, K_CONS_FIRST,
	K_CONS_SECOND, K_THIN_ACTUAL, K_FA_LENGTH, K_FA_DATA, K_T_SFI, K_T_SCOPEINFO,
	K_T_SCRIPT, K_T_FIXEDARRAY, K_FIRST_NONSTRING, K_SI_FIRST_VARS, K_SI_NLOCALS,
	K_STR_REP_MASK, K_STR_ENC_MASK, K_ONE_BYTE_TAG, K_SEQ_TAG, K_CONS_TAG, K_THIN_TAG,
	K_N
};

static const char *const knames[K_N] = {
	"v8dbg_off_fp_function", "v8dbg_off_fp_context_or_frame_type", "v8dbg_TaggedSize",
	"v8dbg_SmiShiftSize", "v8dbg_class_HeapObject__map__Map",
	"v8dbg_class_Map__instance_type__uint16_t",
	"v8dbg_class_JSFunction__shared__SharedFunctionInfo",
	"v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object",
	"v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject",
	"v8dbg_class_Script__name__Object", "v8dbg_class_Script__source__Object",
	"v8dbg_class_Script__line_ends__Object", "v8dbg_class_String__length__int32_t",
	"v8dbg_class_SeqOneByteString__chars__char", "v8dbg_class_SeqTwoByteString__chars__char",
	"v8dbg_class_ConsString__first__String", "v8dbg_class_ConsString__second__String",
	"v8dbg_class_ThinString__actual__String", "v8dbg_class_FixedArrayBase__length__SMI",
	"v8dbg_class_FixedArray__data__uintptr_t",
	"v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE",
	"v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", "v8dbg_type_Script__SCRIPT_TYPE",
	"v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", "v8dbg_FirstNonstringType",
	"v8dbg_scopeinfo_idx_first_vars", "v8dbg_scopeinfo_idx_ncontextlocals",
	"v8dbg_StringRepresentationMask", "v8dbg_StringEncodingMask", "v8dbg_OneByteStringTag",
	"v8dbg_SeqStringTag", "v8dbg_ConsStringTag", "v8dbg_ThinStringTag",
};

/* One V8 file's constants (dev, inode, build id). */
struct v8file {
	uint64_t	 dev, ino;
	char		 build_id[41];
	int32_t		 k[K_N];
	bool		 used, ok;
};

struct v8fn {
	uint64_t	 sfi;		/* 0: free slot */
	uint64_t	 name_word, script_word;	/* the SharedFunctionInfo's, when read */
	char		*name;
	char		*file;		/* NULL: no script, or it has no name */
	int64_t		 line;		/* 1-based; 0: unknown */
};

/* What the sampler knows of one V8 process; p->v8. */
struct v8proc {
	int32_t		 k[K_N];
	uint64_t	 sfi_map;	/* a map seen with the SharedFunctionInfo type */
	uint64_t	 src_read;	/* bytes of sources read for lines (SOURCE_BUDGET) */
	struct v8fn	*cache;		/* CACHE_SLOTS, allocated at the first frame */
	size_t		 ncached;
};

struct v8 {
	int		 procs_fd;
	struct memreader *mr;
	struct v8file	 files[FILE_CACHE];
	size_t		 next_file;
	/* the sample being named (v8_read) */
	uint64_t	 sfi[PROF_MAX_V8FRAMES];
	uint8_t		 hdr[PROF_MAX_V8FRAMES][SFI_HDR];
	bool		 ok[PROF_MAX_V8FRAMES];
	size_t		 n;
	unsigned	 loads;		/* functions read (not cached) for this sample */
	uint64_t	 named, unreadable;
};

struct v8 *
v8_create(int procs_fd)
{
	struct v8 *v = calloc(1, sizeof(*v));

	if (v == NULL)
		return NULL;
	v->procs_fd = procs_fd;
	if ((v->mr = memread_create(MEM_DEADLINE_NS)) == NULL) {
		free(v);
		return NULL;
	}
	return v;
}

void
v8_destroy(struct v8 *v)
{
	if (v)
		memread_destroy(v->mr);
	free(v);
}

static void
fn_clear(struct v8fn *c)
{
	free(c->name);
	free(c->file);
	memset(c, 0, sizeof(*c));
}

static void
cache_clear(struct v8proc *vp)
{
	size_t i;

	if (vp->cache == NULL)
		return;
	for (i = 0; i < CACHE_SLOTS; i++)
		if (vp->cache[i].sfi)
			fn_clear(&vp->cache[i]);
	vp->ncached = 0;
}

void
v8_forget(struct v8 *v, struct proc *p)
{
	struct v8proc *vp = p->v8;

	if (vp) {
		if (v && !p->gone)
			(void)bpf_map_delete_elem(v->procs_fd, &p->pid);
		cache_clear(vp);
		free(vp->cache);
		free(vp);
	}
	p->v8 = NULL;
}

void
v8_get_stats(const struct v8 *v, struct v8_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (v) {
		st->named = v->named;
		st->unreadable = v->unreadable;
	}
}

/* Read len bytes of p's memory at addr: 0, or -errno (short reads too). */
static int
mem_read(struct v8 *v, const struct proc *p, uint64_t addr, void *dst, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (addr == 0 || addr >= (1ULL << 47) || len > MEMREAD_MAX_BYTES)
		return -EFAULT;
	n = memread_readv(v->mr, (pid_t)p->pid, &l, &r, 1);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

static uint64_t
rd64(const uint8_t *b, size_t off)
{
	uint64_t x;

	memcpy(&x, b + off, sizeof(x));
	return x;
}

/* --- finding V8 ----------------------------------------------------------- */

/* Whether a mapped file may be V8's: node, nodejs or libnode.so*. */
static bool
v8_file(const char *name)
{
	const char *b = strrchr(name, '/');

	b = b ? b + 1 : name;
	return strcmp(b, "node") == 0 || strcmp(b, "nodejs") == 0 ||
	    strncmp(b, "libnode.so", 10) == 0;
}

/* The addresses of knames in m's dynamic symbols (0: absent); -errno if unreadable. */
static int
elf_consts(const struct proc_mapping *m, uint64_t addr[K_N])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *e;
	int fd;

	memset(addr, 0, K_N * sizeof(*addr));
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
			    s.st_size != 4 || (nm = elf_strptr(e, sh.sh_link, s.st_name)) == NULL ||
			    strncmp(nm, "v8dbg_", 6) != 0)
				continue;
			for (j = 0; j < K_N; j++)
				if (addr[j] == 0 && strcmp(nm, knames[j]) == 0)
					addr[j] = s.st_value;
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

/*
 * The constants of m's file into k, read from p's memory (they are data of
 * the file, the same in every process of it): from the cache of files, or
 * read and remembered. 0; -ENOENT if the file is not a V8 or lacks one.
 */
static int
file_consts(struct v8 *v, const struct proc *p, const struct proc_mapping *m, int32_t k[K_N])
{
	struct iovec l[K_N], r[K_N];
	uint64_t addr[K_N];
	struct v8file *f;
	size_t i;

	for (i = 0; i < FILE_CACHE; i++) {
		f = &v->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0) {
			memcpy(k, f->k, sizeof(f->k));
			return f->ok ? 0 : -ENOENT;
		}
	}
	if (elf_consts(m, addr) < 0)
		return -ENOENT;
	for (i = 0; i < K_N; i++) {
		if (addr[i] == 0)
			break;
		l[i].iov_base = &k[i];
		l[i].iov_len = sizeof(k[i]);
		r[i].iov_base = (void *)(uintptr_t)(addr[i] + m->bias);
		r[i].iov_len = sizeof(k[i]);
	}
	if (i < K_N) {
		memset(k, 0, K_N * sizeof(*k));
	} else if (memread_readv(v->mr, (pid_t)p->pid, l, r, K_N) !=
	    (ssize_t)(K_N * sizeof(*k))) {
		return -ENOENT;		/* not remembered: the process may have gone */
	}
	if (m->build_id[0] == '\0')
		return i < K_N ? -ENOENT : 0;
	f = &v->files[v->next_file];
	v->next_file = (v->next_file + 1) % FILE_CACHE;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	memcpy(f->k, k, sizeof(f->k));
	f->used = true;
	f->ok = i == K_N;
	return f->ok ? 0 : -ENOENT;
}

/* Whether the layout k describes is one this file reads. */
static bool
consts_known(const int32_t *k)
{
	return k[K_TAGGED_SIZE] == 8 && k[K_SMI_SHIFT] == 31 && k[K_SI_FIRST_VARS] == 3 &&
	    k[K_SI_NLOCALS] >= 0 && k[K_SI_NLOCALS] < k[K_SI_FIRST_VARS] &&
	    k[K_FP_FUNCTION] >= -64 && k[K_FP_FUNCTION] <= 64 && k[K_FP_FUNCTION] % 8 == 0 &&
	    k[K_FP_CONTEXT] >= -64 && k[K_FP_CONTEXT] <= 64 && k[K_FP_CONTEXT] % 8 == 0;
}

void
v8_check(struct v8 *v, struct proc *p)
{
	struct proc_mapping m;
	struct v8_proc val;
	struct v8proc *vp;
	int32_t k[K_N];
	size_t i;

	if (v == NULL || p->gone || p->kthread || p->v8 || p->v8_gen == p->maps_gen)
		return;
	p->v8_gen = p->maps_gen;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++) {
		if (!v8_file(m.name) || file_consts(v, p, &m, k) < 0)
			continue;
		if (!consts_known(k)) {
			log_debug("ebpf: pid %u: V8 in %s: a layout not known (tagged size %d, "
			    "scope info first vars %d): no JavaScript frames", p->pid, m.name,
			    k[K_TAGGED_SIZE], k[K_SI_FIRST_VARS]);
			return;
		}
		if ((vp = calloc(1, sizeof(*vp))) == NULL)
			return;
		memcpy(vp->k, k, sizeof(k));
		memset(&val, 0, sizeof(val));
		val.off_function = (int16_t)k[K_FP_FUNCTION];
		val.off_context = (int16_t)k[K_FP_CONTEXT];
		if (bpf_map_update_elem(v->procs_fd, &p->pid, &val, BPF_ANY) < 0) {
			log_debug("ebpf: pid %u: v8_procs: %s", p->pid, strerror(errno));
			free(vp);
			return;
		}
		p->v8 = vp;
		log_debug("ebpf: pid %u: V8 in %s", p->pid, m.name);
		return;
	}
}

int
v8_attach_layout(struct v8 *v, struct proc *p, const char *const *names, const int32_t *vals,
    size_t n)
{
	struct v8proc *vp;
	int32_t k[K_N];
	size_t i, j;

	for (i = 0; i < K_N; i++) {
		for (j = 0; j < n && strcmp(names[j], knames[i]) != 0; j++)
			;
		if (j == n)
			return -EINVAL;
		k[i] = vals[j];
	}
	if (v == NULL || p->v8 || !consts_known(k))
		return -EINVAL;
	if ((vp = calloc(1, sizeof(*vp))) == NULL)
		return -ENOMEM;
	memcpy(vp->k, k, sizeof(k));
	p->v8 = vp;
	return 0;
}

/* --- reading objects ------------------------------------------------------ */

/* The instance type of the heap object at tagged address o, or -1. */
static int
obj_type(struct v8 *v, const struct proc *p, const struct v8proc *vp, uint64_t o)
{
	uint64_t map;
	uint16_t t;

	if ((o & 1) == 0 || mem_read(v, p, o - 1 + vp->k[K_HEAPOBJ_MAP], &map, sizeof(map)) < 0 ||
	    (map & 1) == 0 || mem_read(v, p, map - 1 + vp->k[K_MAP_TYPE], &t, sizeof(t)) < 0)
		return -1;
	return t;
}

/* A tagged field of the object at tagged address o: 0, or -errno. */
static int
field(struct v8 *v, const struct proc *p, uint64_t o, int32_t off, uint64_t *out)
{
	if ((o & 1) == 0 || off < 0)
		return -EFAULT;
	return mem_read(v, p, o - 1 + (uint64_t)off, out, sizeof(*out));
}

/* A growing UTF-8 string, at most cap bytes (plus the NUL). */
struct sbuf {
	char	*s;
	size_t	 len, cap;
	int	 pieces;	/* strings read into it */
};

static void
put_cp(struct sbuf *b, uint32_t c)
{
	char o[4];
	size_t n;

	if (c >= 0xd800 && c <= 0xdfff)
		c = 0xfffd;	/* a lone surrogate */
	if (c < 0x80) {
		o[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		o[0] = (char)(0xf0 | (c >> 18));
		o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	if (b->len + n <= b->cap) {
		memcpy(b->s + b->len, o, n);
		b->len += n;
	}
}

/* Append the String at tagged address o to b: 0, or -errno (not a string we read). */
static int
str_append(struct v8 *v, const struct proc *p, const struct v8proc *vp, uint64_t o,
    struct sbuf *b, int depth)
{
	const int32_t *k = vp->k;
	int t, rep;
	int32_t len;
	uint64_t a, c;
	uint8_t *raw;
	size_t i, n;

	if (depth > CONS_DEPTH || ++b->pieces > STR_PIECES)
		return -E2BIG;
	t = obj_type(v, p, vp, o);
	if (t < 0 || t >= k[K_FIRST_NONSTRING])
		return -EINVAL;
	if (mem_read(v, p, o - 1 + (uint64_t)k[K_STR_LENGTH], &len, sizeof(len)) < 0 || len < 0)
		return -EFAULT;
	rep = t & k[K_STR_REP_MASK];
	if (rep == k[K_CONS_TAG]) {
		if (field(v, p, o, k[K_CONS_FIRST], &a) < 0 ||
		    str_append(v, p, vp, a, b, depth + 1) < 0 ||
		    field(v, p, o, k[K_CONS_SECOND], &a) < 0)
			return -EFAULT;
		return str_append(v, p, vp, a, b, depth + 1);
	}
	if (rep == k[K_THIN_TAG]) {
		if (field(v, p, o, k[K_THIN_ACTUAL], &a) < 0)
			return -EFAULT;
		return str_append(v, p, vp, a, b, depth + 1);
	}
	if (rep != k[K_SEQ_TAG])
		return -ENOTSUP;	/* external, sliced: not read */
	n = (size_t)len;
	if (n > b->cap - b->len)
		n = b->cap - b->len;	/* cut at the bound */
	if (n == 0)
		return 0;
	if ((t & k[K_STR_ENC_MASK]) == k[K_ONE_BYTE_TAG]) {
		if ((raw = malloc(n)) == NULL)
			return -ENOMEM;
		if (mem_read(v, p, o - 1 + (uint64_t)k[K_SEQ1_CHARS], raw, n) < 0) {
			free(raw);
			return -EFAULT;
		}
		for (i = 0; i < n; i++)
			put_cp(b, raw[i]);
	} else {
		if ((raw = malloc(n * 2)) == NULL)
			return -ENOMEM;
		if (mem_read(v, p, o - 1 + (uint64_t)k[K_SEQ2_CHARS], raw, n * 2) < 0) {
			free(raw);
			return -EFAULT;
		}
		for (i = 0; i < n; i++) {
			uint16_t u, u2;

			memcpy(&u, raw + i * 2, 2);
			c = u;
			if (u >= 0xd800 && u < 0xdc00 && i + 1 < n) {
				memcpy(&u2, raw + i * 2 + 2, 2);
				if (u2 >= 0xdc00 && u2 < 0xe000) {
					c = 0x10000 + (((uint32_t)u - 0xd800) << 10) + (u2 - 0xdc00);
					i++;
				}
			}
			put_cp(b, (uint32_t)c);
		}
	}
	free(raw);
	return 0;
}

/* The String at tagged address o as a malloc'd UTF-8 string (NULL: none, or empty). */
static char *
read_str(struct v8 *v, const struct proc *p, const struct v8proc *vp, uint64_t o, size_t maxch)
{
	struct sbuf b = { NULL, 0, maxch * 4, 0 };

	if ((b.s = malloc(b.cap + 1)) == NULL)
		return NULL;
	if (str_append(v, p, vp, o, &b, 0) < 0 || b.len == 0) {
		free(b.s);
		return NULL;
	}
	b.s[b.len] = '\0';
	if (memchr(b.s, '\0', b.len) != NULL) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

int
v8_scopeinfo_slots(uint32_t flags, uint32_t nlocals, int first_vars, struct v8_si_slots *out)
{
	int pos;

	out->name = out->inferred = out->start = -1;
	/* Scope type 2: a function's (V8 10 and 11). */
	if (first_vars != 3 || (flags & 0xf) != 2 || nlocals > MAX_LOCALS)
		return -EINVAL;
	pos = first_vars + (nlocals < INLINED_LOCALS ? (int)nlocals : 1) + (int)nlocals;
	if (flags & (1u << 10))
		pos++;		/* saved class variable */
	if ((flags >> 12) & 3) {
		out->name = pos;
		pos += 2;
	}
	if (flags & (1u << 14))
		out->inferred = pos++;
	out->start = pos;
	return 0;
}

/* The tagged slot i (after the map) of the object at tagged address o. */
static int
slot(struct v8 *v, const struct proc *p, uint64_t o, int i, uint64_t *out)
{
	if (i < 0)
		return -EINVAL;
	return field(v, p, o, 8 + 8 * i, out);
}

/* A Smi's value. */
static int64_t
smi(uint64_t w)
{
	return (int64_t)w >> 32;
}

/* The 1-based line of position pos in script, 0 when not known. */
static int64_t
script_line(struct v8 *v, const struct proc *p, struct v8proc *vp, uint64_t script,
    int64_t pos)
{
	const int32_t *k = vp->k;
	uint64_t ends, src, w;
	int64_t lo, hi, n, line;
	uint8_t *chunk;
	int32_t len;
	int t, i;

	if (pos < 0)
		return 0;
	/* Line ends: the positions of the newlines, ascending. */
	if (field(v, p, script, k[K_SCRIPT_LINE_ENDS], &ends) == 0 &&
	    obj_type(v, p, vp, ends) == k[K_T_FIXEDARRAY] &&
	    field(v, p, ends, k[K_FA_LENGTH], &w) == 0 && smi(w) >= 0 && smi(w) <= (1 << 26)) {
		n = smi(w);
		lo = 0;
		hi = n;		/* the first line end at or past pos */
		for (i = 0; i < LINE_STEPS && lo < hi; i++) {
			int64_t mid = lo + (hi - lo) / 2;

			if (field(v, p, ends, k[K_FA_DATA] + (int32_t)(8 * mid), &w) < 0)
				return 0;
			if (smi(w) < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < hi ? 0 : lo + 1;
	}
	/* Else its source, a one-byte sequential string: count the newlines. */
	if (field(v, p, script, k[K_SCRIPT_SOURCE], &src) < 0 ||
	    (t = obj_type(v, p, vp, src)) < 0 || t >= k[K_FIRST_NONSTRING] ||
	    (t & k[K_STR_REP_MASK]) != k[K_SEQ_TAG] ||
	    (t & k[K_STR_ENC_MASK]) != k[K_ONE_BYTE_TAG] ||
	    mem_read(v, p, src - 1 + (uint64_t)k[K_STR_LENGTH], &len, sizeof(len)) < 0 ||
	    pos > len || pos > (int64_t)SOURCE_MAX || vp->src_read + (uint64_t)pos > SOURCE_BUDGET)
		return 0;
	vp->src_read += (uint64_t)pos;
	if ((chunk = malloc(MEMREAD_MAX_BYTES)) == NULL)
		return 0;
	line = 1;
	for (lo = 0; lo < pos; lo += MEMREAD_MAX_BYTES) {
		size_t c = (size_t)(pos - lo < MEMREAD_MAX_BYTES ? pos - lo : MEMREAD_MAX_BYTES);
		size_t j;

		if (mem_read(v, p, src - 1 + (uint64_t)k[K_SEQ1_CHARS] + (uint64_t)lo, chunk, c) < 0) {
			line = 0;
			break;
		}
		for (j = 0; j < c; j++)
			line += chunk[j] == '\n';
	}
	free(chunk);
	return line;
}

/* Fill c (sfi and its words set) from p's memory: 0 or -errno. */
static int
fn_load(struct v8 *v, const struct proc *p, struct v8proc *vp, struct v8fn *c)
{
	const int32_t *k = vp->k;
	uint64_t nm = c->name_word, w = 0, fl, nl, name = 0, inferred = 0;
	int64_t start = -1;
	int t = obj_type(v, p, vp, nm);

	if (t >= 0 && t < k[K_FIRST_NONSTRING]) {
		c->name = read_str(v, p, vp, nm, MAX_NAME);
	} else if (t == k[K_T_SCOPEINFO]) {
		struct v8_si_slots s;

		if (slot(v, p, nm, 0, &fl) < 0 || slot(v, p, nm, k[K_SI_NLOCALS], &nl) < 0 ||
		    smi(nl) < 0)
			return -EINVAL;
		/* Not a function's scope (an ES module's top level): anonymous, no line. */
		if (v8_scopeinfo_slots((uint32_t)smi(fl), (uint32_t)smi(nl), k[K_SI_FIRST_VARS],
		    &s) < 0)
			s.name = s.inferred = s.start = -1;
		if (s.name >= 0 && slot(v, p, nm, s.name, &name) == 0)
			c->name = read_str(v, p, vp, name, MAX_NAME);
		if (c->name == NULL && s.inferred >= 0 && slot(v, p, nm, s.inferred, &inferred) == 0)
			c->name = read_str(v, p, vp, inferred, MAX_NAME);
		if (s.start >= 0 && slot(v, p, nm, s.start, &w) == 0 && (w & 1) == 0)
			start = smi(w);
	} else {
		return -EINVAL;
	}
	if (c->name == NULL && (c->name = strdup("(anonymous)")) == NULL)
		return -ENOMEM;
	if (obj_type(v, p, vp, c->script_word) == k[K_T_SCRIPT]) {
		if (field(v, p, c->script_word, k[K_SCRIPT_NAME], &w) == 0)
			c->file = read_str(v, p, vp, w, MAX_PATH_CH);
		c->line = script_line(v, p, vp, c->script_word, start);
	}
	return 0;
}

/* --- naming frames -------------------------------------------------------- */

void
v8_read(struct v8 *v, struct proc *p, const struct prof_v8frame *fr, size_t n)
{
	struct v8proc *vp = p->v8;
	struct iovec l[PROF_MAX_V8FRAMES], r[PROF_MAX_V8FRAMES];
	size_t i, m;
	ssize_t got;

	if (v == NULL)
		return;
	v->n = 0;
	v->loads = 0;
	if (vp == NULL || p->gone)
		return;
	if (n > PROF_MAX_V8FRAMES)
		n = PROF_MAX_V8FRAMES;
	v->n = n;
	memset(v->ok, 0, sizeof(v->ok));
	memset(v->sfi, 0, n * sizeof(v->sfi[0]));
	/* Each JSFunction's shared (a short read leaves the rest zero: unreadable). */
	for (i = 0; i < n; i++) {
		l[i].iov_base = &v->sfi[i];
		l[i].iov_len = 8;
		r[i].iov_base = (void *)(uintptr_t)((fr[i].fn_idx & PROF_V8_FN_MASK) - 1 +
		    (uint64_t)vp->k[K_FN_SHARED]);
		r[i].iov_len = 8;
	}
	if (n == 0 || memread_readv(v->mr, (pid_t)p->pid, l, r, n) <= 0)
		return;
	/* Their SharedFunctionInfos' first words. */
	for (i = m = 0; i < n; i++) {
		if ((v->sfi[i] & 1) == 0 || v->sfi[i] >= (1ULL << 47))
			continue;
		l[m].iov_base = v->hdr[i];
		l[m].iov_len = SFI_HDR;
		r[m].iov_base = (void *)(uintptr_t)(v->sfi[i] - 1);
		r[m].iov_len = SFI_HDR;
		m++;
	}
	if (m == 0)
		return;
	got = memread_readv(v->mr, (pid_t)p->pid, l, r, m);
	for (i = 0; i < n && got > 0; i++) {
		if ((v->sfi[i] & 1) == 0 || v->sfi[i] >= (1ULL << 47))
			continue;
		v->ok[i] = got >= SFI_HDR;
		got -= SFI_HDR;
	}
}

int
v8_frame(struct v8 *v, struct proc *p, size_t i, struct frame *f)
{
	struct v8proc *vp = p->v8;
	const int32_t *k;
	uint64_t sfi, map, nm, sc, h;
	struct v8fn *c = NULL;
	size_t j;

	memset(f, 0, sizeof(*f));
	if (v == NULL || vp == NULL || i >= v->n || !v->ok[i])
		goto unreadable;
	k = vp->k;
	sfi = v->sfi[i];
	if (k[K_SFI_NAME] > SFI_HDR - 8 || k[K_SFI_SCRIPT] > SFI_HDR - 8 || k[K_SFI_NAME] < 0 ||
	    k[K_SFI_SCRIPT] < 0 || k[K_HEAPOBJ_MAP] > SFI_HDR - 8 || k[K_HEAPOBJ_MAP] < 0)
		goto unreadable;
	map = rd64(v->hdr[i], (size_t)k[K_HEAPOBJ_MAP]);
	nm = rd64(v->hdr[i], (size_t)k[K_SFI_NAME]);
	sc = rd64(v->hdr[i], (size_t)k[K_SFI_SCRIPT]);
	/* Not (any longer) a SharedFunctionInfo: the function moved, or never was one. */
	if (map != vp->sfi_map) {
		uint16_t t;

		if ((map & 1) == 0 || mem_read(v, p, map - 1 + (uint64_t)k[K_MAP_TYPE], &t,
		    sizeof(t)) < 0 || t != k[K_T_SFI])
			goto unreadable;
		vp->sfi_map = map;
	}
	if (vp->cache == NULL && (vp->cache = calloc(CACHE_SLOTS, sizeof(*vp->cache))) == NULL)
		goto unreadable;
	h = (sfi >> 3) * 0x9e3779b97f4a7c15ULL;
	for (j = 0; j < CACHE_SLOTS; j++) {
		c = &vp->cache[(h + j) % CACHE_SLOTS];
		if (c->sfi == 0 || c->sfi == sfi)
			break;
	}
	if (j == CACHE_SLOTS)
		goto unreadable;
	if (c->sfi == sfi && (c->name_word != nm || c->script_word != sc)) {
		fn_clear(c);	/* another function at that address, or it was compiled since */
		vp->ncached--;
	}
	if (c->sfi == 0) {
		/* A bound on the reads one sample costs, whatever the process lays out. */
		if (v->loads >= LOADS_PER_SAMPLE)
			goto unreadable;
		v->loads++;
		if (vp->ncached >= CACHE_SLOTS * 3 / 4) {
			cache_clear(vp);
			return v8_frame(v, p, i, f);
		}
		c->sfi = sfi;
		c->name_word = nm;
		c->script_word = sc;
		vp->ncached++;
		if (fn_load(v, p, vp, c) < 0) {
			fn_clear(c);
			vp->ncached--;
			goto unreadable;
		}
	}
	f->file = "[js]";
	f->build_id = "";
	f->func = c->name;
	f->srcfile = c->file;
	f->line = c->line;
	v->named++;
	return 0;
unreadable:
	v->unreadable++;
	return -EFAULT;
}
