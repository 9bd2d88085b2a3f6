/*
 * v8: JavaScript frames of V8 processes (see v8.h).
 *
 * Everything read is laid out as the process's own V8 says: its postmortem
 * constants (v8dbg_*, exported by node and libnode for debuggers), read once
 * per file from the process's memory, under any of the names V8's versions
 * gave them (knames). What they do not say, how a function's ScopeInfo is
 * laid out, comes from a table with one row per V8 major version (layouts:
 * 10 to 14, Node.js 18 to 26), picked by V8's version as the file exports
 * it (v8::internal::Version::major_); a version not in the table, or one
 * whose constants disagree with its row, is refused, said once per file.
 * Tagged pointers are full 64-bit words (a V8 built with pointer
 * compression is refused; Node.js's official builds do not compress); a
 * Smi is its word shifted right by 32. What is read, from a frame's
 * JSFunction:
 *
 *   JSFunction.shared            -> SharedFunctionInfo (type checked)
 *   SharedFunctionInfo.name_or_scope_info  a String (the name), or a ScopeInfo
 *   SharedFunctionInfo.script (script_or_debug_info to V8 11)  a Script, else no file
 *   Script.name, Script.line_ends (FixedArray of Smis), Script.source
 *
 * A function's ScopeInfo is, in tagged slots after its map: flags (a Smi to
 * V8 12, an untagged uint32 from 13 on), parameter count, context local
 * count, from V8 13 on the start and end positions, then the context
 * locals' names (one slot, a hash table, from 75 locals on) and their
 * infos, then as its flags say a saved class variable (bit 10), the
 * function variable's name and slot (bits 12-13 not zero), the inferred
 * name (bit 14), and to V8 12 the start and end positions. The name shown
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
#include "codecache.h"
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

/* The constants read, in this order. */
enum {
	K_FP_FUNCTION, K_FP_CONTEXT, K_TAGGED_SIZE, K_SMI_SHIFT, K_HEAPOBJ_MAP,
	K_MAP_TYPE, K_FN_SHARED, K_SFI_NAME, K_SFI_SCRIPT, K_SCRIPT_NAME, K_SCRIPT_SOURCE,
	K_SCRIPT_LINE_ENDS, K_STR_LENGTH, K_SEQ1_CHARS, K_SEQ2_CHARS, K_CONS_FIRST,
	K_CONS_SECOND, K_THIN_ACTUAL, K_FA_LENGTH, K_FA_DATA, K_T_SFI, K_T_SCOPEINFO,
	K_T_SCRIPT, K_T_FIXEDARRAY, K_FIRST_NONSTRING, K_SI_FIRST_VARS, K_SI_NLOCALS,
	K_STR_REP_MASK, K_STR_ENC_MASK, K_ONE_BYTE_TAG, K_SEQ_TAG, K_CONS_TAG, K_THIN_TAG,
	K_VER_MAJOR, K_VER_MINOR,
	K_N
};

/*
 * Their symbols, each under every name V8 has given it: V8 12 on writes a
 * field's type as Tagged_<type>_ and calls SharedFunctionInfo's script
 * field script (its debug info moved out). The last two are not postmortem
 * constants but V8's version (v8::internal::Version::major_, minor_, data
 * that node and libnode export as well).
 */
#define KNAMES	3
static const char *const knames[K_N][KNAMES] = {
	{ "v8dbg_off_fp_function" }, { "v8dbg_off_fp_context_or_frame_type" },
	{ "v8dbg_TaggedSize" }, { "v8dbg_SmiShiftSize" }, { "v8dbg_class_HeapObject__map__Map" },
	{ "v8dbg_class_Map__instance_type__uint16_t" },
	{ "v8dbg_class_JSFunction__shared__SharedFunctionInfo" },
	{ "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object",
	  "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_",
	  "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_" },
	{ "v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject",
	  "v8dbg_class_SharedFunctionInfo__script__Tagged_HeapObject_",
	  "v8dbg_class_SharedFunctionInfo__raw_script__Tagged_Object_" },
	{ "v8dbg_class_Script__name__Object" }, { "v8dbg_class_Script__source__Object" },
	{ "v8dbg_class_Script__line_ends__Object" }, { "v8dbg_class_String__length__int32_t" },
	{ "v8dbg_class_SeqOneByteString__chars__char" },
	{ "v8dbg_class_SeqTwoByteString__chars__char" },
	{ "v8dbg_class_ConsString__first__String" }, { "v8dbg_class_ConsString__second__String" },
	{ "v8dbg_class_ThinString__actual__String" },
	{ "v8dbg_class_FixedArrayBase__length__SMI" }, { "v8dbg_class_FixedArray__data__uintptr_t" },
	{ "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE" },
	{ "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE" }, { "v8dbg_type_Script__SCRIPT_TYPE" },
	{ "v8dbg_type_FixedArray__FIXED_ARRAY_TYPE" }, { "v8dbg_FirstNonstringType" },
	{ "v8dbg_scopeinfo_idx_first_vars" }, { "v8dbg_scopeinfo_idx_ncontextlocals" },
	{ "v8dbg_StringRepresentationMask" }, { "v8dbg_StringEncodingMask" },
	{ "v8dbg_OneByteStringTag" }, { "v8dbg_SeqStringTag" }, { "v8dbg_ConsStringTag" },
	{ "v8dbg_ThinStringTag" },
	{ "_ZN2v88internal7Version6major_E" }, { "_ZN2v88internal7Version6minor_E" },
};

/*
 * What the constants do not say, one row per V8 major version: how a
 * function's ScopeInfo is laid out. first_vars must be the binary's
 * v8dbg_scopeinfo_idx_first_vars (a minor version that moved the fields
 * is refused, not misread). flags_smi: the flags are a Smi (else an
 * untagged uint32 in the low half of their slot); fn_scope: ScopeType's
 * FUNCTION_SCOPE; pos_head: the start and end positions follow the count of
 * context locals (slots 3 and 4) instead of ending the variable part.
 */
static const struct v8_layout layouts[] = {
	/* major  node  first_vars flags_smi fn_scope pos_head */
	{ 10,	"18",	3,	true,	2,	false },
	{ 11,	"20",	3,	true,	2,	false },
	{ 12,	"22",	3,	true,	2,	false },
	{ 13,	"24",	5,	false,	4,	true },
	{ 14,	"26",	5,	false,	4,	true },
};

/* One V8 file's constants (dev, inode, build id). */
struct v8file {
	uint64_t	 dev, ino;
	char		 build_id[41];
	int32_t		 k[K_N];
	const struct v8_layout *lay;	/* NULL: not read */
	bool		 used;
	bool		 v8;		/* it has V8's constants (some at least) */
};

/*
 * A function's entry (codecache.h): e.addr its SharedFunctionInfo, e.name
 * its name, e.file its script's name (NULL: no script, or it has no name);
 * no line table (e.rows): the line is the function's first, read once.
 */
struct v8fn {
	struct cc_entry	 e;
	uint64_t	 name_word, script_word;	/* the SharedFunctionInfo's, when read */
	int64_t		 line;		/* 1-based; 0: unknown */
};

/* What the sampler knows of one V8 process; p->v8. */
struct v8proc {
	int32_t		 k[K_N];
	const struct v8_layout *lay;
	uint64_t	 sfi_map;	/* a map seen with the SharedFunctionInfo type */
	uint64_t	 src_read;	/* bytes of sources read for lines (SOURCE_BUDGET) */
	struct cc_table	 cache;		/* its struct v8fn, CACHE_SLOTS */
};

struct v8 {
	int		 procs_fd;
	struct codecache *cc;		/* functions, reads of a process's memory */
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
	/* No line tables held (mem_max 0): a source's reads have their own bound. */
	if ((v->cc = codecache_create(&(struct codecache_conf){
	    .entry_size = sizeof(struct v8fn), .slots = CACHE_SLOTS, .addr_shift = 3,
	    .mem_max = 0, .deadline_ns = MEM_DEADLINE_NS })) == NULL) {
		free(v);
		return NULL;
	}
	return v;
}

void
v8_destroy(struct v8 *v)
{
	if (v)
		codecache_destroy(v->cc);
	free(v);
}

void
v8_forget(struct v8 *v, struct proc *p)
{
	struct v8proc *vp = p->v8;

	if (vp) {
		if (v && !p->gone)
			(void)bpf_map_delete_elem(v->procs_fd, &p->pid);
		codecache_forget(v ? v->cc : NULL, &vp->cache);
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
	if (addr >= (1ULL << 47))
		return -EFAULT;		/* not a user address: not worth a read */
	return codecache_read(v->cc, (pid_t)p->pid, addr, dst, len);
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

/* Whether nm is one of constant j's names. */
static bool
kname_is(size_t j, const char *nm)
{
	size_t a;

	for (a = 0; a < KNAMES && knames[j][a] != NULL; a++)
		if (strcmp(nm, knames[j][a]) == 0)
			return true;
	return false;
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
			    (strncmp(nm, "v8dbg_", 6) != 0 &&
			    strncmp(nm, "_ZN2v88internal7Version", 23) != 0))
				continue;
			for (j = 0; j < K_N; j++)
				if (addr[j] == 0 && kname_is(j, nm))
					addr[j] = s.st_value;
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

static const struct v8_layout *consts_layout(const int32_t *k, char *why, size_t len);

/*
 * The constants of m's file into k and its layout into *lay, read from p's
 * memory (they are data of the file, the same in every process of it): from
 * the cache of files, or read and remembered. 0; -ENOENT if the file is not
 * a V8; -ENOTSUP if it is one this file does not read (said once per file,
 * when first seen).
 */
static int
file_consts(struct v8 *v, const struct proc *p, const struct proc_mapping *m, int32_t k[K_N],
    const struct v8_layout **lay)
{
	struct iovec l[K_N], r[K_N];
	uint64_t addr[K_N];
	struct v8file *f;
	char why[200];
	size_t i, j;
	bool any = false;	/* some of V8's constants there: a V8, read or not */

	*lay = NULL;
	for (i = 0; i < FILE_CACHE; i++) {
		f = &v->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0) {
			memcpy(k, f->k, sizeof(f->k));
			*lay = f->lay;
			return f->lay ? 0 : f->v8 ? -ENOTSUP : -ENOENT;
		}
	}
	if (elf_consts(m, addr) < 0)
		return -ENOENT;
	memset(k, 0, K_N * sizeof(*k));
	for (i = 0; i < K_N; i++) {
		if (addr[i] == 0)
			break;
		l[i].iov_base = &k[i];
		l[i].iov_len = sizeof(k[i]);
		r[i].iov_base = (void *)(uintptr_t)(addr[i] + m->bias);
		r[i].iov_len = sizeof(k[i]);
	}
	for (j = 0; j < K_N; j++)
		any |= addr[j] != 0;
	if (i == K_N && codecache_readv(v->cc, (pid_t)p->pid, l, r, K_N) !=
	    (ssize_t)(K_N * sizeof(*k)))
		return -ENOENT;		/* not remembered: the process may have gone */
	if (i < K_N) {
		if (any)
			snprintf(why, sizeof(why), "its V8 lacks the constant %s", knames[i][0]);
	} else {
		*lay = consts_layout(k, why, sizeof(why));
	}
	if (*lay == NULL && any)
		log_warnx("ebpf: pid %u: %s: %s; its JavaScript frames stay native", p->pid,
		    m->name, why);
	if (m->build_id[0] == '\0')
		return *lay ? 0 : any ? -ENOTSUP : -ENOENT;
	f = &v->files[v->next_file];
	v->next_file = (v->next_file + 1) % FILE_CACHE;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	memcpy(f->k, k, sizeof(f->k));
	f->used = true;
	f->lay = *lay;
	f->v8 = any;
	return f->lay ? 0 : f->v8 ? -ENOTSUP : -ENOENT;
}

const struct v8_layout *
v8_layout_of(int major)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major)
			return &layouts[i];
	return NULL;
}

/*
 * The row of the layout k describes, if this file reads it: its V8's
 * version is in the table and agrees with the constants, its heap
 * pointers are full words. NULL, and why in why (at most len bytes).
 */
static const struct v8_layout *
consts_layout(const int32_t *k, char *why, size_t len)
{
	const struct v8_layout *l = v8_layout_of(k[K_VER_MAJOR]);

	if (l == NULL) {
		snprintf(why, len, "V8 %d.%d is not a version known (known: V8 %d to %d, "
		    "Node.js %s to %s)", k[K_VER_MAJOR], k[K_VER_MINOR], layouts[0].major,
		    layouts[sizeof(layouts) / sizeof(layouts[0]) - 1].major, layouts[0].node,
		    layouts[sizeof(layouts) / sizeof(layouts[0]) - 1].node);
		return NULL;
	}
	if (k[K_TAGGED_SIZE] != 8 || k[K_SMI_SHIFT] != 31) {
		snprintf(why, len, "V8 %d.%d compresses its pointers (tagged size %d): not read",
		    k[K_VER_MAJOR], k[K_VER_MINOR], k[K_TAGGED_SIZE]);
		return NULL;
	}
	if (k[K_SI_FIRST_VARS] != l->first_vars || k[K_SI_NLOCALS] < 0 ||
	    k[K_SI_NLOCALS] >= k[K_SI_FIRST_VARS] ||
	    k[K_FP_FUNCTION] < -64 || k[K_FP_FUNCTION] > 64 || k[K_FP_FUNCTION] % 8 != 0 ||
	    k[K_FP_CONTEXT] < -64 || k[K_FP_CONTEXT] > 64 || k[K_FP_CONTEXT] % 8 != 0) {
		snprintf(why, len, "V8 %d.%d lays out its scopes or frames in a way not known "
		    "(scope info first vars %d, V8 %d's are %d)", k[K_VER_MAJOR], k[K_VER_MINOR],
		    k[K_SI_FIRST_VARS], l->major, l->first_vars);
		return NULL;
	}
	return l;
}

void
v8_check(struct v8 *v, struct proc *p)
{
	const struct v8_layout *lay;
	struct proc_mapping m;
	struct v8_proc val;
	struct v8proc *vp;
	int32_t k[K_N];
	size_t i;
	int rc;

	if (v == NULL || p->gone || p->kthread || p->v8 || p->v8_gen == p->maps_gen)
		return;
	p->v8_gen = p->maps_gen;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++) {
		if (!v8_file(m.name))
			continue;
		if ((rc = file_consts(v, p, &m, k, &lay)) == -ENOTSUP)
			return;		/* a V8 not read (said when its file was first seen) */
		if (rc < 0)
			continue;
		if ((vp = calloc(1, sizeof(*vp))) == NULL)
			return;
		memcpy(vp->k, k, sizeof(k));
		vp->lay = lay;
		memset(&val, 0, sizeof(val));
		val.off_function = (int16_t)k[K_FP_FUNCTION];
		val.off_context = (int16_t)k[K_FP_CONTEXT];
		if (bpf_map_update_elem(v->procs_fd, &p->pid, &val, BPF_ANY) < 0) {
			log_debug("ebpf: pid %u: v8_procs: %s", p->pid, strerror(errno));
			free(vp);
			return;
		}
		p->v8 = vp;
		log_debug("ebpf: pid %u: V8 %d.%d (Node.js %s's layout) in %s", p->pid,
		    k[K_VER_MAJOR], k[K_VER_MINOR], lay->node, m.name);
		return;
	}
}

int
v8_attach_layout(struct v8 *v, struct proc *p, const char *const *names, const int32_t *vals,
    size_t n)
{
	const struct v8_layout *lay;
	struct v8proc *vp;
	int32_t k[K_N];
	char why[200];
	size_t i, j;

	for (i = 0; i < K_N; i++) {
		for (j = 0; j < n && !kname_is(i, names[j]); j++)
			;
		if (j == n)
			return -EINVAL;
		k[i] = vals[j];
	}
	if (v == NULL || p->v8 || (lay = consts_layout(k, why, sizeof(why))) == NULL)
		return -EINVAL;
	if ((vp = calloc(1, sizeof(*vp))) == NULL)
		return -ENOMEM;
	memcpy(vp->k, k, sizeof(k));
	vp->lay = lay;
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
v8_scopeinfo_slots(const struct v8_layout *l, uint64_t flags_word, uint32_t nlocals,
    struct v8_si_slots *out)
{
	uint32_t flags = (uint32_t)(l->flags_smi ? flags_word >> 32 : flags_word);
	int pos;

	out->name = out->inferred = out->start = -1;
	if ((flags & 0xf) != (uint32_t)l->fn_scope || nlocals > MAX_LOCALS ||
	    (l->flags_smi && (flags_word & 0xffffffff) != 0))
		return -EINVAL;
	pos = l->first_vars + (nlocals < INLINED_LOCALS ? (int)nlocals : 1) + (int)nlocals;
	if (flags & (1u << 10))
		pos++;		/* saved class variable */
	if ((flags >> 12) & 3) {
		out->name = pos;
		pos += 2;
	}
	if (flags & (1u << 14))
		out->inferred = pos++;
	out->start = l->pos_head ? 3 : pos;
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

/* Fill c (e.addr and its words set) from p's memory: 0 or -errno. */
static int
fn_load(struct v8 *v, const struct proc *p, struct v8proc *vp, struct v8fn *c)
{
	const int32_t *k = vp->k;
	uint64_t nm = c->name_word, w = 0, fl, nl, name = 0, inferred = 0;
	int64_t start = -1;
	int t = obj_type(v, p, vp, nm);

	if (t >= 0 && t < k[K_FIRST_NONSTRING]) {
		c->e.name = read_str(v, p, vp, nm, MAX_NAME);
	} else if (t == k[K_T_SCOPEINFO]) {
		struct v8_si_slots s;

		if (slot(v, p, nm, 0, &fl) < 0 || slot(v, p, nm, k[K_SI_NLOCALS], &nl) < 0 ||
		    smi(nl) < 0)
			return -EINVAL;
		/* Not a function's scope (an ES module's top level): anonymous, no line. */
		if (v8_scopeinfo_slots(vp->lay, fl, (uint32_t)smi(nl), &s) < 0)
			s.name = s.inferred = s.start = -1;
		if (s.name >= 0 && slot(v, p, nm, s.name, &name) == 0)
			c->e.name = read_str(v, p, vp, name, MAX_NAME);
		if (c->e.name == NULL && s.inferred >= 0 && slot(v, p, nm, s.inferred, &inferred) == 0)
			c->e.name = read_str(v, p, vp, inferred, MAX_NAME);
		if (s.start >= 0 && slot(v, p, nm, s.start, &w) == 0 && (w & 1) == 0)
			start = smi(w);
	} else {
		return -EINVAL;
	}
	if (c->e.name == NULL && (c->e.name = strdup("(anonymous)")) == NULL)
		return -ENOMEM;
	if (obj_type(v, p, vp, c->script_word) == k[K_T_SCRIPT]) {
		if (field(v, p, c->script_word, k[K_SCRIPT_NAME], &w) == 0)
			c->e.file = read_str(v, p, vp, w, MAX_PATH_CH);
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
	if (n == 0 || codecache_readv(v->cc, (pid_t)p->pid, l, r, n) <= 0)
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
	got = codecache_readv(v->cc, (pid_t)p->pid, l, r, m);
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
	uint64_t sfi, map, nm, sc;
	struct v8fn *c;

	memset(f, 0, sizeof(*f));
	if (v == NULL || vp == NULL || i >= v->n || !v->ok[i])
		goto unreadable;
	k = vp->k;
	sfi = v->sfi[i];
	if (k[K_SFI_NAME] > SFI_HDR - 8 || k[K_SFI_SCRIPT] > SFI_HDR - 8 || k[K_SFI_NAME] < 0 ||
	    k[K_SFI_SCRIPT] < 0 || k[K_HEAPOBJ_MAP] > SFI_HDR - 8 || k[K_HEAPOBJ_MAP] < 0)
		goto unreadable;
	map = cc_rd64(v->hdr[i], (size_t)k[K_HEAPOBJ_MAP]);
	nm = cc_rd64(v->hdr[i], (size_t)k[K_SFI_NAME]);
	sc = cc_rd64(v->hdr[i], (size_t)k[K_SFI_SCRIPT]);
	/* Not (any longer) a SharedFunctionInfo: the function moved, or never was one. */
	if (map != vp->sfi_map) {
		uint16_t t;

		if ((map & 1) == 0 || mem_read(v, p, map - 1 + (uint64_t)k[K_MAP_TYPE], &t,
		    sizeof(t)) < 0 || t != k[K_T_SFI])
			goto unreadable;
		vp->sfi_map = map;
	}
	if ((c = (struct v8fn *)codecache_slot(v->cc, &vp->cache, sfi)) == NULL)
		goto unreadable;
	if (c->e.addr == sfi && (c->name_word != nm || c->script_word != sc))
		/* another function at that address, or it was compiled since */
		codecache_drop(v->cc, &vp->cache, &c->e);
	if (c->e.addr == 0) {
		/* A bound on the reads one sample costs, whatever the process lays out. */
		if (v->loads >= LOADS_PER_SAMPLE)
			goto unreadable;
		v->loads++;
		c = (struct v8fn *)codecache_claim(v->cc, &vp->cache, &c->e, sfi);
		c->name_word = nm;
		c->script_word = sc;
		if (fn_load(v, p, vp, c) < 0) {
			codecache_drop(v->cc, &vp->cache, &c->e);
			goto unreadable;
		}
	}
	f->file = "[js]";
	f->build_id = "";
	f->func = c->e.name;
	f->srcfile = c->e.file;
	f->line = c->line;
	v->named++;
	return 0;
unreadable:
	v->unreadable++;
	return -EFAULT;
}
