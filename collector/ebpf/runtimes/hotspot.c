/*
 * hotspot: HotSpot JVM frames for the eBPF sampler (see hotspot.h).
 *
 * What a JVM publishes about itself. libjvm.so exports, for debuggers and
 * the serviceability agent, four arrays describing its own C++ types:
 *   gHotSpotVMStructs        {type name, field name, type string, is static,
 *                             offset (instance field), address (static)}
 *   gHotSpotVMTypes          {type name, superclass name, ..., size}
 *   gHotSpotVMIntConstants   {name, int value}
 *   gHotSpotVMLongConstants  {name, long value}
 * each a pointer to an array ended by an entry whose name is NULL, with
 * globals giving each entry's stride and its fields' offsets
 * (gHotSpotVMStructEntryFieldNameOffset, ...). We read the globals from the
 * ELF dynamic symbols, the arrays and their strings from the process
 * (process_vm_readv through memread.h, bounded), and look up the fields the
 * walker and the naming need. A field missing, or a value out of range, and
 * the JVM is left alone: its Java frames are walked by frame pointer and
 * named by the perf map as before. So is a JVM of a version without a row
 * in versions[] (logged once, naming its version).
 *
 * The code cache (OpenJDK 17; versions[] says what 21 and 25 moved):
 * CodeCache::_heaps, a GrowableArray of CodeHeap* (one heap, or three
 * with the segmented code cache); a heap's
 * memory (_memory, a VirtualSpace) is cut into segments of 2^_log2_segment_size
 * bytes described by _segmap; a block starts with a HeapBlock header and
 * then the CodeBlob. The interpreter is one stretch of code,
 * AbstractInterpreter::_code (a StubQueue: _stub_buffer, _buffer_limit).
 * Interpreted frames on x86-64 (frame_x86.hpp): the caller's sp at
 * rbp + 8 * frame::interpreter_frame_sender_sp_offset (a published constant,
 * -1), then last sp, Method*, mirror, mdp, cache, locals and bcp below it:
 * Method* at rbp - 24, bcp at rbp - 64.
 *
 * Naming a Method*: Method::_constMethod -> ConstMethod {_constants,
 * _name_index, _signature_index}; ConstantPool::_pool_holder -> Klass::_name;
 * the constant pool's entries follow its header (sizeof(ConstantPool)), a
 * UTF-8 entry being a Symbol* {_length, _body}. The line: the ConstMethod's
 * compressed line number table follows its bytecodes (when its flags say
 * it has one), a bytecode index being bcp - bytecodes for an interpreted
 * frame.
 *
 * Compiled frames: an nmethod (CodeBlob::_name "nmethod") keeps, from its
 * own address, metadata (Method*...), scopes data, pc descriptors
 * {pc offset from _code_begin, scope's decode offset} and dependencies. A
 * scope is three UNSIGNED5 integers, its sender's decode offset, its
 * method's index into the metadata (1 first) and bci + 1, then what we do
 * not read; the pc descriptor of a call's return address (or, at the leaf,
 * the next one) leads to the innermost method inlined there, its senders to
 * the outer ones. Each nmethod's debug information is copied once (checked
 * at every sample against its compile id and method, within HS_MEM per
 * JVM); a sample's methods and blob headers are read in one
 * process_vm_readv.
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
#include "hotspot.h"
#include "memread.h"

#define MEM_DEADLINE_NS		(1000LL * 1000 * 1000)
#define RETRY_NS		(100LL * 1000 * 1000)	/* a JVM still starting: look again */
#define MAX_ENTRIES		8192	/* entries of a table read */
#define NAME_READ		48	/* bytes read of a table's name (longer ones are not ours) */
#define CACHE_SLOTS		1024	/* methods named per process (open hash) */
#define SYM_MAX			1024	/* bytes of a class or method name read */
#define MAX_TRIES		600	/* looks at a JVM (RETRY_NS apart while it starts) */
#define SYM_FILES		8	/* libjvm.so files whose symbols are remembered */
#define NEVER			INT64_MAX	/* proc.hs_retry of a JVM left alone for good */

#define UNREADABLE		"[java: unreadable]"
#define NM_HDR_MAX		1024	/* bytes of an nmethod's header read */
#define NM_SLOTS		256	/* nmethods' debug information cached per process */
#define NM_INFO_MAX		(256u << 10)	/* bytes of one nmethod's debug information */
#define MAX_INLINE		16	/* methods of one compiled frame (inlining depth) */
#define NM_LOADS		4	/* nmethods' debug information copied per sample, at most */
#define METHOD_LOADS		32	/* methods named per sample, at most (then unreadable) */
#define STUB_NAMES		128	/* stub names remembered per JVM */
#define STUB_NAME_MAX		64	/* bytes of a stub's name read */
#define HS_MEM			(16u << 20)	/* debug information and line tables held per JVM */
#define LINES_MAX		1024	/* rows of a method's line table kept */
#define LINES_READ		(16u << 10)	/* bytes of a line table read */

/* The fields we look up: index into hsl.v. */
enum {
	F_CC_HEAPS, F_CC_LOW, F_CC_HIGH,		/* static: addresses */
	F_HEAP_MEMORY, F_HEAP_SEGMAP, F_HEAP_LOG2SEG,
	F_VS_LOW, F_VS_HIGH_BOUNDARY,
	F_GA_LEN, F_GA_DATA,
	F_BLOB_FRAME_SIZE, F_BLOB_FRAME_COMPLETE, F_BLOB_CODE_BEGIN,
	F_INTERP_CODE,					/* static */
	F_SQ_BUFFER, F_SQ_LIMIT,
	F_METHOD_CONST, F_CM_CONSTANTS, F_CM_NAME, F_CM_SIG,
	F_CP_HOLDER, F_KLASS_NAME, F_SYM_LENGTH, F_SYM_BODY,
	F_VM_MAJOR,					/* static */
	F_CM_FLAGS, F_CM_CODE_SIZE, F_CM_SIZE, F_CP_LENGTH, F_CP_SOURCE,
	F_BLOB_NAME, F_CMTH_METHOD, F_CMTH_SCOPES,
	F_NM_METADATA, F_NM_PCS, F_NM_DEPS, F_NM_COMPILE_ID,
	F_PC_OFFSET, F_PC_SCOPE,
	F_NM_IMMUTABLE, F_NM_IMMUTABLE_SIZE, F_BLOB_MUTABLE, F_BLOB_RELOC_SIZE,
	F_BLOB_MUTABLE_SIZE,				/* OpenJDK 23+ */
	T_HEAPBLOCK, T_CONSTANTPOOL, T_NMETHOD, T_PCDESC, T_CONSTMETHOD,	/* type sizes */
	C_SENDER_SP, C_HAS_LINES,			/* int constants */
	F_COUNT
};
_Static_assert(F_COUNT < 64, "hsproc.found has a bit per field");

/*
 * The fields every version spells alike; a NULL type (for a field, a NULL
 * name for a constant) is spelled by the version's row (versions[]), or not
 * read by that version.
 */
struct want {
	char	 kind;		/* 'f' field offset, 's' static address, 't' type size, 'c' constant */
	const char *type, *name;
};

static const struct want wants[F_COUNT] = {
	[F_CC_HEAPS] = { 's', "CodeCache", "_heaps" },
	[F_CC_LOW] = { 's', "CodeCache", "_low_bound" },
	[F_CC_HIGH] = { 's', "CodeCache", "_high_bound" },
	[F_HEAP_MEMORY] = { 'f', "CodeHeap", "_memory" },
	[F_HEAP_SEGMAP] = { 'f', "CodeHeap", "_segmap" },
	[F_HEAP_LOG2SEG] = { 'f', "CodeHeap", "_log2_segment_size" },
	[F_VS_LOW] = { 'f', "VirtualSpace", "_low" },
	[F_VS_HIGH_BOUNDARY] = { 'f', "VirtualSpace", "_high_boundary" },
	[F_GA_LEN] = { 'f', "GrowableArrayBase", "_len" },
	[F_GA_DATA] = { 'f', "GrowableArray<int>", "_data" },
	[F_BLOB_FRAME_SIZE] = { 'f', "CodeBlob", "_frame_size" },
	[F_BLOB_FRAME_COMPLETE] = { 'f', "CodeBlob", "_frame_complete_offset" },
	[F_INTERP_CODE] = { 's', "AbstractInterpreter", "_code" },
	[F_SQ_BUFFER] = { 'f', "StubQueue", "_stub_buffer" },
	[F_SQ_LIMIT] = { 'f', "StubQueue", "_buffer_limit" },
	[F_METHOD_CONST] = { 'f', "Method", "_constMethod" },
	[F_CM_CONSTANTS] = { 'f', "ConstMethod", "_constants" },
	[F_CM_NAME] = { 'f', "ConstMethod", "_name_index" },
	[F_CM_SIG] = { 'f', "ConstMethod", "_signature_index" },
	[F_CP_HOLDER] = { 'f', "ConstantPool", "_pool_holder" },
	[F_KLASS_NAME] = { 'f', "Klass", "_name" },
	[F_SYM_LENGTH] = { 'f', "Symbol", "_length" },
	[F_SYM_BODY] = { 'f', "Symbol", "_body" },
	[F_VM_MAJOR] = { 's', "Abstract_VM_Version", "_vm_major_version" },
	[F_CM_CODE_SIZE] = { 'f', "ConstMethod", "_code_size" },
	[F_CM_SIZE] = { 'f', "ConstMethod", "_constMethod_size" },
	[F_CP_LENGTH] = { 'f', "ConstantPool", "_length" },
	[F_CP_SOURCE] = { 'f', "ConstantPool", "_source_file_name_index" },
	[F_BLOB_NAME] = { 'f', "CodeBlob", "_name" },
	[F_NM_PCS] = { 'f', "nmethod", "_scopes_pcs_offset" },
	[F_NM_COMPILE_ID] = { 'f', "nmethod", "_compile_id" },
	[F_PC_OFFSET] = { 'f', "PcDesc", "_pc_offset" },
	[F_PC_SCOPE] = { 'f', "PcDesc", "_scope_decode_offset" },
	[T_HEAPBLOCK] = { 't', "HeapBlock", NULL },
	[T_CONSTANTPOOL] = { 't', "ConstantPool", NULL },
	[T_NMETHOD] = { 't', "nmethod", NULL },
	[T_PCDESC] = { 't', "PcDesc", NULL },
	[T_CONSTMETHOD] = { 't', "ConstMethod", NULL },
	[C_SENDER_SP] = { 'c', NULL, "frame::interpreter_frame_sender_sp_offset" },
	/* per version: */
	[F_BLOB_CODE_BEGIN] = { 'f', NULL, NULL }, [F_CM_FLAGS] = { 'f', NULL, NULL },
	[F_CMTH_METHOD] = { 'f', NULL, NULL }, [F_CMTH_SCOPES] = { 'f', NULL, NULL },
	[F_NM_METADATA] = { 'f', NULL, NULL }, [F_NM_DEPS] = { 'f', NULL, NULL },
	[F_NM_IMMUTABLE] = { 'f', NULL, NULL }, [F_NM_IMMUTABLE_SIZE] = { 'f', NULL, NULL },
	[F_BLOB_MUTABLE] = { 'f', NULL, NULL }, [F_BLOB_RELOC_SIZE] = { 'f', NULL, NULL },
	[F_BLOB_MUTABLE_SIZE] = { 'f', NULL, NULL }, [C_HAS_LINES] = { 'c', NULL, NULL },
};

/*
 * What moved between the OpenJDK versions walked, one row per version (its
 * Abstract_VM_Version::_vm_major_version), as their gHotSpotVMStructs say:
 *   17  CodeBlob::_code_begin an address; CompiledMethod (between CodeBlob
 *       and nmethod) keeps _method and _scopes_data_begin; an nmethod's
 *       metadata, scopes data, pc descriptors and dependencies lie in the
 *       blob, at nmethod's int offsets from it; ConstMethod::_flags a u2,
 *       its bits ConstMethod::_has_*.
 *   21  the same blob layout (CodeBlob's fields reordered, HeapBlock 16
 *       bytes); ConstMethod's flags a u4 (ConstMethodFlags: "_flags._flags",
 *       bits ConstMethodFlags::_misc_has_*); the compressed streams (scopes,
 *       line tables) exclude the byte 0: every byte of an UNSIGNED5 integer
 *       is one more.
 *   25  no CompiledMethod: nmethod::_method; CodeBlob::_code_offset (int,
 *       from the blob) replaces _code_begin, _frame_complete_offset is an
 *       int16_t; the debug information left the code cache: dependencies,
 *       tables, pc descriptors (_immutable_data + _scopes_pcs_offset) and
 *       scopes data (from _immutable_data + _scopes_data_offset, to at most
 *       its end) in nmethod::_immutable_data (C heap); the metadata after
 *       the relocations in CodeBlob::_mutable_data (from + _relocation_size
 *       to at most + _mutable_data_size); HeapBlock 8 bytes.
 * The interpreter's frame (frame_x86.hpp) is the same in all three. A JVM
 * of a version without a row is left alone, logged once.
 */
#define HSV_CODE_OFFSET		1	/* F_BLOB_CODE_BEGIN is an int offset from the blob */
#define HSV_COMPLETE16		2	/* F_BLOB_FRAME_COMPLETE is an int16_t */
#define HSV_NM_DETACHED		4	/* debug information in _immutable_data, metadata in _mutable_data */

static const struct hsversion {
	int		 major;
	unsigned	 flags;		/* HSV_* */
	unsigned	 cm_flags_size;	/* bytes of ConstMethod's flags */
	unsigned	 u5_x;		/* bytes excluded by its compressed streams (hotspot_unsigned5) */
	struct want	 w[F_COUNT];	/* this version's spelling of wants' NULL ones */
} versions[] = {
	{ 17, 0, 2, 0, {
		[F_BLOB_CODE_BEGIN] = { 'f', "CodeBlob", "_code_begin" },
		[F_CMTH_METHOD] = { 'f', "CompiledMethod", "_method" },
		[F_CMTH_SCOPES] = { 'f', "CompiledMethod", "_scopes_data_begin" },
		[F_NM_METADATA] = { 'f', "nmethod", "_metadata_offset" },
		[F_NM_DEPS] = { 'f', "nmethod", "_dependencies_offset" },
		[F_CM_FLAGS] = { 'f', "ConstMethod", "_flags" },
		[C_HAS_LINES] = { 'c', NULL, "ConstMethod::_has_linenumber_table" },
	} },
	{ 21, 0, 4, 1, {
		[F_BLOB_CODE_BEGIN] = { 'f', "CodeBlob", "_code_begin" },
		[F_CMTH_METHOD] = { 'f', "CompiledMethod", "_method" },
		[F_CMTH_SCOPES] = { 'f', "CompiledMethod", "_scopes_data_begin" },
		[F_NM_METADATA] = { 'f', "nmethod", "_metadata_offset" },
		[F_NM_DEPS] = { 'f', "nmethod", "_dependencies_offset" },
		[F_CM_FLAGS] = { 'f', "ConstMethod", "_flags._flags" },
		[C_HAS_LINES] = { 'c', NULL, "ConstMethodFlags::_misc_has_linenumber_table" },
	} },
	{ 25, HSV_CODE_OFFSET | HSV_COMPLETE16 | HSV_NM_DETACHED, 4, 1, {
		[F_BLOB_CODE_BEGIN] = { 'f', "CodeBlob", "_code_offset" },
		[F_CMTH_METHOD] = { 'f', "nmethod", "_method" },
		[F_CMTH_SCOPES] = { 'f', "nmethod", "_scopes_data_offset" },
		[F_NM_IMMUTABLE] = { 'f', "nmethod", "_immutable_data" },
		[F_NM_IMMUTABLE_SIZE] = { 'f', "nmethod", "_immutable_data_size" },
		[F_BLOB_MUTABLE] = { 'f', "CodeBlob", "_mutable_data" },
		[F_BLOB_RELOC_SIZE] = { 'f', "CodeBlob", "_relocation_size" },
		[F_BLOB_MUTABLE_SIZE] = { 'f', "CodeBlob", "_mutable_data_size" },
		[F_CM_FLAGS] = { 'f', "ConstMethod", "_flags._flags" },
		[C_HAS_LINES] = { 'c', NULL, "ConstMethodFlags::_misc_has_linenumber_table" },
	} },
};
#define NVERSIONS	(sizeof(versions) / sizeof(versions[0]))

/* Field k as version ver spells it; NULL: not read by that version. */
static const struct want *
want_of(const struct hsversion *ver, size_t k)
{
	const struct want *w = &wants[k];

	if (w->type != NULL || (w->kind == 'c' && w->name != NULL))
		return w;
	w = &ver->w[k];
	return w->kind != 0 ? w : NULL;
}

/* The versions walked, "17, 21, 25", for log lines. */
static const char *
versions_known(void)
{
	static char buf[64];
	size_t k, n = 0;

	if (buf[0] == '\0')
		for (k = 0; k < NVERSIONS && n < sizeof(buf); k++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d", k ? ", " : "",
			    versions[k].major);
	return buf;
}

/* The dynamic symbols hotspot_check reads. */
enum {
	S_STRUCTS, S_S_TYPE, S_S_FIELD, S_S_STATIC, S_S_OFFSET, S_S_ADDRESS, S_S_STRIDE,
	S_TYPES, S_T_TYPE, S_T_SIZE, S_T_STRIDE,
	S_INTS, S_I_NAME, S_I_VALUE, S_I_STRIDE,
	S_COUNT
};

static const char *const sym_names[S_COUNT] = {
	"gHotSpotVMStructs", "gHotSpotVMStructEntryTypeNameOffset",
	"gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryIsStaticOffset",
	"gHotSpotVMStructEntryOffsetOffset", "gHotSpotVMStructEntryAddressOffset",
	"gHotSpotVMStructEntryArrayStride",
	"gHotSpotVMTypes", "gHotSpotVMTypeEntryTypeNameOffset", "gHotSpotVMTypeEntrySizeOffset",
	"gHotSpotVMTypeEntryArrayStride",
	"gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryNameOffset",
	"gHotSpotVMIntConstantEntryValueOffset", "gHotSpotVMIntConstantEntryArrayStride",
};

/* An nmethod's debug information, copied (proc.hs's nms). */
struct hsnm {
	uint64_t	 blob, method;	/* 0: free slot */
	int32_t		 compile_id;
	struct { int32_t pc, scope; } *pcs;	/* pc descriptors: offset, scope's decode offset */
	size_t		 npcs;
	uint8_t		*scopes;	/* the scopes data */
	size_t		 nscopes;
	uint64_t	*meta;		/* the metadata (Method*...), index 1 first */
	size_t		 nmeta;
	size_t		 bytes;		/* charged (codecache_charge) */
};

struct hsline {
	int32_t		 bci, line;
};

/*
 * A method's entry (codecache.h): e.addr its Method*, e.name its name as
 * the perf map spells it (NULL: unreadable, kept so as not to read it
 * again), e.file its source file (NULL: none), e.rows its line table (struct
 * hsline, in the class file's order: looked up by rows_line, not by
 * codecache_lines_find).
 */
struct hsmethod {
	struct cc_entry	 e;
	uint64_t	 constmethod;		/* its ConstMethod when read */
	uint32_t	 code_size;		/* bytes of bytecode */
	uint64_t	 code_base;		/* where its bytecode starts */
};

/* Per JVM (proc.hs). */
struct hsproc {
	uint64_t	 v[F_COUNT];	/* the looked-up offsets, addresses, sizes */
	uint64_t	 found;		/* bit k: v[k] was found */
	const struct hsversion *ver;	/* its version's row */
	struct cc_table	 cache;		/* its struct hsmethod, CACHE_SLOTS; charged: nms too */
	struct hsnm	*nms;		/* NM_SLOTS, allocated on first use */
	uint64_t	 nm_name;	/* CodeBlob::_name of nmethods: "nmethod" */
	bool		 ready;		/* entered into hs_procs (else: its code cache was not set up) */
	struct {
		uint64_t addr;		/* CodeBlob::_name; 0: free */
		char	*name;
	} stubs[STUB_NAMES];		/* stubs' names (a few dozen in a JVM) */
};

/* The symbols of one libjvm.so (dev, inode, build id). */
struct hsfile {
	uint64_t	 dev, ino;
	char		 build_id[41];
	uint64_t	 sym[S_COUNT];
	bool		 used;
};

struct hotspot {
	int		 procs_fd;
	struct hsfile	 files[SYM_FILES];
	size_t		 next_file;	/* the slot to reuse next */
	/* methods, reads of a process's memory; nms' and methods' tables charged, HS_MEM a JVM */
	struct codecache *cc;
	struct hotspot_stats st;
	struct frame	 fr[MAX_INLINE];	/* hotspot_frames' */
	/* loads left to this sample: a JVM cannot make one sample cost much */
	unsigned	 nm_loads, method_loads;
	/* hotspot_read's: what the sample pre_sample's HotSpot frames hold */
	const struct prof_sample *pre_sample;
	bool		 pre_ok[PROF_MAX_JFRAMES];
	uint64_t	 pre_cm[PROF_MAX_JFRAMES];		/* an interpreted frame's ConstMethod */
	uint8_t		 pre_hdr[PROF_MAX_JFRAMES][NM_HDR_MAX];	/* a blob's header */
};

struct hotspot *
hotspot_create(int procs_fd)
{
	struct hotspot *hs = calloc(1, sizeof(*hs));

	if (hs == NULL)
		return NULL;
	hs->procs_fd = procs_fd;
	if ((hs->cc = codecache_create(&(struct codecache_conf){
	    .entry_size = sizeof(struct hsmethod), .slots = CACHE_SLOTS, .addr_shift = 3,
	    .mem_max = SIZE_MAX, .proc_mem_max = HS_MEM,
	    .deadline_ns = MEM_DEADLINE_NS })) == NULL) {
		free(hs);
		return NULL;
	}
	return hs;
}

void
hotspot_destroy(struct hotspot *hs)
{
	if (hs)
		codecache_destroy(hs->cc);
	free(hs);
}

static void nm_clear(struct hotspot *hs, struct hsproc *hp, struct hsnm *c);

static void
nms_free(struct hotspot *hs, struct hsproc *hp)
{
	size_t i;

	for (i = 0; hp->nms && i < NM_SLOTS; i++)
		nm_clear(hs, hp, &hp->nms[i]);
	free(hp->nms);
	hp->nms = NULL;
}

void
hotspot_forget(struct hotspot *hs, struct proc *p)
{
	struct hsproc *hp = p->hs;
	size_t k;

	if (hp) {
		if (hs && !p->gone)
			(void)bpf_map_delete_elem(hs->procs_fd, &p->pid);
		nms_free(hs, hp);	/* before codecache_forget: their charge given back */
		codecache_forget(hs ? hs->cc : NULL, &hp->cache);
		for (k = 0; k < STUB_NAMES; k++)
			free(hp->stubs[k].name);
		free(hp);
	}
	p->hs = NULL;
}

void
hotspot_get_stats(const struct hotspot *hs, struct hotspot_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (hs) {
		struct codecache_stats cs;

		*st = hs->st;
		codecache_get_stats(hs->cc, &cs);
		st->mem_stalls = cs.mem_stalls;
	}
}

/* Read len bytes of p's memory at addr: 0, or -errno (short reads too). */
static int
mem_read(struct hotspot *hs, const struct proc *p, uint64_t addr, void *dst, size_t len)
{
	if (addr + len < addr)
		return -EFAULT;
	return codecache_read(hs->cc, (pid_t)p->pid, addr, dst, len);
}

static uint64_t
rd64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int32_t
rd32(const uint8_t *b, size_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint16_t
rd16(const uint8_t *b, size_t off)
{
	uint16_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* --- finding the tables --------------------------------------------------- */

/* Whether a mapped file is HotSpot's libjvm.so. */
static bool
jvm_file(const char *name)
{
	const char *b = strrchr(name, '/');

	return strcmp(b ? b + 1 : name, "libjvm.so") == 0;
}

/* The values of the dynamic symbols sym_names of an ELF file; 0 where absent. */
static int
elf_dynsyms(const struct proc_mapping *m, uint64_t vals[S_COUNT])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *e;
	int fd;

	memset(vals, 0, S_COUNT * sizeof(*vals));
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
			    (nm = elf_strptr(e, sh.sh_link, s.st_name)) == NULL ||
			    strncmp(nm, "gHotSpotVM", 10) != 0)
				continue;
			for (j = 0; j < S_COUNT; j++)
				if (vals[j] == 0 && strcmp(nm, sym_names[j]) == 0)
					vals[j] = s.st_value;
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

/*
 * elf_dynsyms of m's file, read once per file (dev, inode, build id): a JVM
 * still starting is looked at every RETRY_NS, and every JVM of a host
 * usually maps the same libjvm.so.
 */
static int
file_dynsyms(struct hotspot *hs, const struct proc_mapping *m, uint64_t sym[S_COUNT])
{
	struct hsfile *f;
	size_t i;
	int rc;

	for (i = 0; i < SYM_FILES; i++) {
		f = &hs->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0) {
			memcpy(sym, f->sym, sizeof(f->sym));
			return 0;
		}
	}
	if ((rc = elf_dynsyms(m, sym)) < 0)
		return rc;
	/* A file without a build id may be rewritten in place: not remembered. */
	if (m->build_id[0] == '\0')
		return 0;
	f = &hs->files[hs->next_file];
	hs->next_file = (hs->next_file + 1) % SYM_FILES;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	memcpy(f->sym, sym, sizeof(f->sym));
	f->used = true;
	return 0;
}

/*
 * Read the strings at ptrs[0..n) (NAME_READ bytes each, NUL-terminated into
 * out[i]; "" where unreadable or a NULL pointer), MEMREAD_MAX_IOV at a time.
 */
static void
read_names(struct hotspot *hs, const struct proc *p, const uint64_t *ptrs, size_t n,
    char (*out)[NAME_READ + 1])
{
	struct iovec l[MEMREAD_MAX_IOV], r[MEMREAD_MAX_IOV];
	size_t i, k, c;

	for (i = 0; i < n; i += c) {
		c = n - i < MEMREAD_MAX_IOV ? n - i : MEMREAD_MAX_IOV;
		for (k = 0; k < c; k++) {
			memset(out[i + k], 0, NAME_READ + 1);
			l[k].iov_base = out[i + k];
			l[k].iov_len = NAME_READ;
			r[k].iov_base = (void *)(uintptr_t)ptrs[i + k];
			r[k].iov_len = ptrs[i + k] ? NAME_READ : 0;
		}
		/* A read that stops early leaves the rest empty: looked up one by one. */
		if (codecache_readv(hs->cc, (pid_t)p->pid, l, r, c) != (ssize_t)(c * NAME_READ)) {
			for (k = 0; k < c; k++) {
				memset(out[i + k], 0, NAME_READ + 1);
				if (ptrs[i + k] && mem_read(hs, p, ptrs[i + k], out[i + k], NAME_READ) < 0)
					memset(out[i + k], 0, NAME_READ + 1);
			}
		}
		for (k = 0; k < c; k++)
			out[i + k][NAME_READ] = '\0';
	}
}

/*
 * One table: its entries (stride bytes each, at most MAX_ENTRIES, up to
 * the one whose first name is NULL) read from the array whose address is
 * at the symbol tab. *buf (malloc'd) and *n. 0 or -errno.
 */
static int
read_table(struct hotspot *hs, const struct proc *p, uint64_t tab, uint64_t stride,
    uint64_t name_off, uint8_t **buf, size_t *n)
{
	uint64_t arr = 0;
	size_t k, c, cap;
	uint8_t *b;

	*buf = NULL;
	*n = 0;
	if (stride < 16 || stride > 256 || name_off > stride - 8 ||
	    mem_read(hs, p, tab, &arr, sizeof(arr)) < 0)
		return -EINVAL;
	if (arr == 0)
		return -EAGAIN;
	cap = MEMREAD_MAX_BYTES / stride;
	if (cap > MAX_ENTRIES)
		cap = MAX_ENTRIES;
	if ((b = malloc(cap * stride)) == NULL)
		return -ENOMEM;
	/* The array may end before cap entries do: read in steps of 256 entries. */
	for (k = 0; k < cap; k += c) {
		size_t j;

		c = cap - k < 256 ? cap - k : 256;
		if (mem_read(hs, p, arr + k * stride, b + k * stride, c * stride) < 0)
			c = 1;	/* near the end of its mapping: one at a time */
		if (c == 1 && mem_read(hs, p, arr + k * stride, b + k * stride, stride) < 0)
			break;
		for (j = 0; j < c; j++) {
			if (rd64(b + (k + j) * stride, name_off) == 0) {
				*buf = b;
				*n = k + j;
				return 0;
			}
		}
	}
	free(b);
	return -EINVAL;
}

/*
 * The JVM's version (*major, read from its memory once its structure table
 * shows where) and its row of versions[] (*verp). 0; -EAGAIN while it is
 * not set yet; -ENOTSUP for a version without a row.
 */
static int
find_version(struct hotspot *hs, const struct proc *p, const uint8_t *tb, size_t n,
    const uint32_t *lay, char (*names)[NAME_READ + 1], int32_t *major,
    const struct hsversion **verp)
{
	const struct want *w = &wants[F_VM_MAJOR];
	size_t k;

	for (k = 0; k < n; k++) {
		const uint8_t *e = tb + k * lay[S_S_STRIDE];

		if (rd32(e, lay[S_S_STATIC]) == 0 || strcmp(names[2 * k], w->type) != 0 ||
		    strcmp(names[2 * k + 1], w->name) != 0)
			continue;
		if (mem_read(hs, p, rd64(e, lay[S_S_ADDRESS]), major, sizeof(*major)) < 0 ||
		    *major == 0)
			return -EAGAIN;	/* not initialized yet */
		for (k = 0; k < NVERSIONS; k++)
			if (versions[k].major == *major) {
				*verp = &versions[k];
				return 0;
			}
		return -ENOTSUP;
	}
	return -ENOENT;
}

/*
 * Look up wants, as p's version spells them, in p's tables into v (bit k of
 * *found set for each v[k] found); *major and *verp: its version (-ENOTSUP:
 * one without a row, *major set). The symbols' values are relative to the
 * file (bias added here). 0 or -errno.
 */
static int
read_vmstructs(struct hotspot *hs, const struct proc *p, const uint64_t sym[S_COUNT],
    uint64_t bias, uint64_t v[F_COUNT], uint64_t *found, int32_t *major,
    const struct hsversion **verp)
{
	const struct hsversion *ver = NULL;
	const struct want *wt;
	uint32_t lay[S_COUNT];
	uint8_t *tb = NULL;
	uint64_t *ptrs = NULL;
	char (*names)[NAME_READ + 1] = NULL;
	size_t n, k, w;
	int rc = -ENOMEM, rr;

	*found = 0;
	for (k = 0; k < S_COUNT; k++) {
		lay[k] = 0;
		if (sym[k] == 0)
			return -ENOENT;
		if (k != S_STRUCTS && k != S_TYPES && k != S_INTS &&
		    (rr = mem_read(hs, p, sym[k] + bias, &lay[k], sizeof(lay[k]))) < 0)
			return rr == -ETIMEDOUT ? rr : -EFAULT;	/* timed out: looked at again */
	}
	/* Set by the JVM as it starts: not yet. */
	if (lay[S_S_STRIDE] == 0 || lay[S_T_STRIDE] == 0 || lay[S_I_STRIDE] == 0)
		return -EAGAIN;
	if (lay[S_S_TYPE] > 248 || lay[S_S_FIELD] > 248 || lay[S_S_STATIC] > 252 ||
	    lay[S_S_OFFSET] > 248 || lay[S_S_ADDRESS] > 248 || lay[S_T_TYPE] > 248 ||
	    lay[S_T_SIZE] > 248 || lay[S_I_NAME] > 248 || lay[S_I_VALUE] > 252)
		return -EINVAL;

	/* gHotSpotVMStructs */
	if ((rc = read_table(hs, p, sym[S_STRUCTS] + bias, lay[S_S_STRIDE], lay[S_S_TYPE],
	    &tb, &n)) < 0)
		return rc;
	rc = -ENOMEM;
	if ((ptrs = calloc(2 * n + 1, sizeof(*ptrs))) == NULL ||
	    (names = calloc(2 * n + 1, sizeof(*names))) == NULL)
		goto out;
	if (lay[S_S_FIELD] > lay[S_S_STRIDE] - 8 || lay[S_S_OFFSET] > lay[S_S_STRIDE] - 8 ||
	    lay[S_S_ADDRESS] > lay[S_S_STRIDE] - 8 || lay[S_S_STATIC] > lay[S_S_STRIDE] - 4) {
		rc = -EINVAL;
		goto out;
	}
	for (k = 0; k < n; k++) {
		ptrs[2 * k] = rd64(tb + k * lay[S_S_STRIDE], lay[S_S_TYPE]);
		ptrs[2 * k + 1] = rd64(tb + k * lay[S_S_STRIDE], lay[S_S_FIELD]);
	}
	read_names(hs, p, ptrs, 2 * n, names);
	if ((rc = find_version(hs, p, tb, n, lay, names, major, &ver)) < 0)
		goto out;
	*verp = ver;
	for (k = 0; k < n; k++) {
		const uint8_t *e = tb + k * lay[S_S_STRIDE];

		for (w = 0; w < F_COUNT; w++) {
			if ((wt = want_of(ver, w)) == NULL || (wt->kind != 'f' && wt->kind != 's') ||
			    strcmp(names[2 * k], wt->type) != 0 ||
			    strcmp(names[2 * k + 1], wt->name) != 0)
				continue;
			if ((rd32(e, lay[S_S_STATIC]) != 0) != (wt->kind == 's'))
				continue;
			v[w] = rd64(e, wt->kind == 's' ? lay[S_S_ADDRESS] : lay[S_S_OFFSET]);
			*found |= 1ULL << w;
		}
	}
	free(tb);
	free(ptrs);
	free(names);
	tb = NULL;
	ptrs = NULL;
	names = NULL;

	/* gHotSpotVMTypes */
	if ((rc = read_table(hs, p, sym[S_TYPES] + bias, lay[S_T_STRIDE], lay[S_T_TYPE],
	    &tb, &n)) < 0)
		goto out;
	rc = -ENOMEM;
	if ((ptrs = calloc(n + 1, sizeof(*ptrs))) == NULL ||
	    (names = calloc(n + 1, sizeof(*names))) == NULL)
		goto out;
	rc = -EINVAL;
	if (lay[S_T_SIZE] > lay[S_T_STRIDE] - 8)
		goto out;
	for (k = 0; k < n; k++)
		ptrs[k] = rd64(tb + k * lay[S_T_STRIDE], lay[S_T_TYPE]);
	read_names(hs, p, ptrs, n, names);
	for (k = 0; k < n; k++)
		for (w = 0; w < F_COUNT; w++)
			if ((wt = want_of(ver, w)) != NULL && wt->kind == 't' &&
			    strcmp(names[k], wt->type) == 0) {
				v[w] = rd64(tb + k * lay[S_T_STRIDE], lay[S_T_SIZE]);
				*found |= 1ULL << w;
			}
	free(tb);
	free(ptrs);
	free(names);
	tb = NULL;
	ptrs = NULL;
	names = NULL;

	/* gHotSpotVMIntConstants */
	if ((rc = read_table(hs, p, sym[S_INTS] + bias, lay[S_I_STRIDE], lay[S_I_NAME],
	    &tb, &n)) < 0)
		goto out;
	rc = -ENOMEM;
	if ((ptrs = calloc(n + 1, sizeof(*ptrs))) == NULL ||
	    (names = calloc(n + 1, sizeof(*names))) == NULL)
		goto out;
	rc = -EINVAL;
	if (lay[S_I_VALUE] > lay[S_I_STRIDE] - 4)
		goto out;
	for (k = 0; k < n; k++)
		ptrs[k] = rd64(tb + k * lay[S_I_STRIDE], lay[S_I_NAME]);
	read_names(hs, p, ptrs, n, names);
	for (k = 0; k < n; k++)
		for (w = 0; w < F_COUNT; w++)
			if ((wt = want_of(ver, w)) != NULL && wt->kind == 'c' &&
			    strcmp(names[k], wt->name) == 0) {
				v[w] = (uint64_t)(int64_t)rd32(tb + k * lay[S_I_STRIDE],
				    lay[S_I_VALUE]);
				*found |= 1ULL << w;
			}
	rc = 0;
out:
	free(tb);
	free(ptrs);
	free(names);
	return rc;
}

/*
 * The hs_procs entry of a JVM whose tables are v: the code cache's heaps
 * and the interpreter, read now. -EAGAIN while the JVM has not set them up
 * yet; -EINVAL when they make no sense.
 */
static int
code_cache(struct hotspot *hs, const struct proc *p, const struct hsversion *ver,
    const uint64_t v[F_COUNT], struct hs_proc *out)
{
	uint64_t ga = 0, data = 0, heap, q, sq = 0, buf = 0;
	int32_t len = 0, limit = 0, log2seg = 0;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (mem_read(hs, p, v[F_CC_LOW], &out->cc_low, 8) < 0 ||
	    mem_read(hs, p, v[F_CC_HIGH], &out->cc_high, 8) < 0 ||
	    mem_read(hs, p, v[F_CC_HEAPS], &ga, 8) < 0)
		return -EFAULT;
	if (ga == 0 || out->cc_low == 0 || out->cc_high <= out->cc_low)
		return -EAGAIN;
	if (mem_read(hs, p, ga + v[F_GA_LEN], &len, 4) < 0 ||
	    mem_read(hs, p, ga + v[F_GA_DATA], &data, 8) < 0)
		return -EFAULT;
	if (len <= 0)
		return -EAGAIN;
	if (len > HS_MAX_HEAPS)
		return -EINVAL;
	for (k = 0; k < (size_t)len; k++) {
		struct hs_heap *h = &out->heaps[k];

		if (mem_read(hs, p, data + 8 * k, &heap, 8) < 0 || heap == 0)
			return -EFAULT;
		q = heap + v[F_HEAP_MEMORY];
		if (mem_read(hs, p, q + v[F_VS_LOW], &h->low, 8) < 0 ||
		    mem_read(hs, p, q + v[F_VS_HIGH_BOUNDARY], &h->high, 8) < 0 ||
		    mem_read(hs, p, heap + v[F_HEAP_SEGMAP] + v[F_VS_LOW], &h->segmap, 8) < 0 ||
		    mem_read(hs, p, heap + v[F_HEAP_LOG2SEG], &log2seg, 4) < 0)
			return -EFAULT;
		if (h->low == 0 || h->high <= h->low || h->segmap == 0 || log2seg < 4 ||
		    log2seg > 20 || h->low < out->cc_low || h->high > out->cc_high)
			return -EINVAL;
		h->log2seg = (uint32_t)log2seg;
	}
	if (mem_read(hs, p, v[F_INTERP_CODE], &sq, 8) < 0)
		return -EFAULT;
	if (sq == 0)
		return -EAGAIN;
	if (mem_read(hs, p, sq + v[F_SQ_BUFFER], &buf, 8) < 0 ||
	    mem_read(hs, p, sq + v[F_SQ_LIMIT], &limit, 4) < 0)
		return -EFAULT;
	if (buf < out->cc_low || limit <= 0 || buf + (uint64_t)limit > out->cc_high)
		return -EINVAL;
	out->interp_low = buf;
	out->interp_high = buf + (uint64_t)limit;
	out->off_frame_size = (uint16_t)v[F_BLOB_FRAME_SIZE];
	out->off_frame_complete = (uint16_t)v[F_BLOB_FRAME_COMPLETE];
	out->off_code_begin = (uint16_t)v[F_BLOB_CODE_BEGIN];
	out->block_hdr = (uint16_t)v[T_HEAPBLOCK];
	out->flags = (uint16_t)(((ver->flags & HSV_CODE_OFFSET) ? HS_CODE_OFFSET : 0) |
	    ((ver->flags & HSV_COMPLETE16) ? HS_COMPLETE16 : 0));
	/* frame_x86.hpp (JDK 17 to 25): sender sp, last sp, Method*, mirror, mdp, cache, locals, bcp. */
	out->interp_sender_sp = (uint16_t)(8 * -(int64_t)v[C_SENDER_SP]);
	out->interp_method = (uint16_t)(out->interp_sender_sp + 16);
	out->interp_bcp = (uint16_t)(out->interp_sender_sp + 56);
	return 0;
}

/* Whether the looked-up values are those of a JVM (of version ver) we can walk. */
static const char *
tables_bad(const struct hsversion *ver, const uint64_t v[F_COUNT], uint64_t found)
{
	const struct want *w;
	size_t k;

	for (k = 0; k < F_COUNT; k++)
		if ((w = want_of(ver, k)) != NULL && !(found & (1ULL << k)))
			return w->name ? w->name : w->type;
	if (v[F_BLOB_FRAME_SIZE] > 124 || v[F_BLOB_FRAME_COMPLETE] > 124 ||
	    v[F_BLOB_CODE_BEGIN] > 120 || v[T_HEAPBLOCK] == 0 || v[T_HEAPBLOCK] > 256 ||
	    v[C_SENDER_SP] != (uint64_t)-1 || v[T_CONSTANTPOOL] > 4096 ||
	    v[F_HEAP_MEMORY] > 4096 || v[F_HEAP_SEGMAP] > 4096 || v[F_HEAP_LOG2SEG] > 4096 ||
	    v[F_VS_LOW] > 256 || v[F_VS_HIGH_BOUNDARY] > 256 || v[F_GA_LEN] > 256 ||
	    v[F_GA_DATA] > 256 || v[F_SQ_BUFFER] > 256 || v[F_SQ_LIMIT] > 256 ||
	    v[F_METHOD_CONST] > 256 || v[F_CM_CONSTANTS] > 256 || v[F_CM_NAME] > 256 ||
	    v[F_CM_SIG] > 256 || v[F_CP_HOLDER] > 256 || v[F_KLASS_NAME] > 256 ||
	    v[F_SYM_LENGTH] > 256 || v[F_SYM_BODY] > 256 || v[T_NMETHOD] > NM_HDR_MAX ||
	    v[T_NMETHOD] < 16 ||
	    v[F_BLOB_NAME] > v[T_NMETHOD] - 8 || v[F_CMTH_METHOD] > v[T_NMETHOD] - 8 ||
	    v[F_CMTH_SCOPES] > v[T_NMETHOD] - 8 || v[F_NM_PCS] > v[T_NMETHOD] - 4 ||
	    v[F_NM_COMPILE_ID] > v[T_NMETHOD] - 4 || v[F_BLOB_CODE_BEGIN] > v[T_NMETHOD] - 8 ||
	    v[T_PCDESC] < 8 || v[T_PCDESC] > 64 || v[F_PC_OFFSET] > v[T_PCDESC] - 4 ||
	    v[F_PC_SCOPE] > v[T_PCDESC] - 4 || v[F_CM_CONSTANTS] > 56 || v[F_CM_NAME] > 62 ||
	    v[F_CM_SIG] > 62 || v[F_CM_FLAGS] > 64 - ver->cm_flags_size ||
	    v[F_CM_CODE_SIZE] > 62 ||
	    v[F_CM_SIZE] > 60 || v[F_CP_HOLDER] > 120 || v[F_CP_LENGTH] > 124 ||
	    v[F_CP_SOURCE] > 126 || v[T_CONSTMETHOD] == 0 || v[T_CONSTMETHOD] > 4096 ||
	    v[C_HAS_LINES] == 0 || v[C_HAS_LINES] > 0xffff)
		return "a layout out of range";
	if ((ver->flags & HSV_NM_DETACHED) ?
	    v[F_NM_IMMUTABLE] > v[T_NMETHOD] - 8 || v[F_NM_IMMUTABLE_SIZE] > v[T_NMETHOD] - 4 ||
	    v[F_BLOB_MUTABLE] > v[T_NMETHOD] - 8 || v[F_BLOB_RELOC_SIZE] > v[T_NMETHOD] - 4 ||
	    v[F_BLOB_MUTABLE_SIZE] > v[T_NMETHOD] - 4 :
	    v[F_NM_METADATA] > v[T_NMETHOD] - 4 || v[F_NM_DEPS] > v[T_NMETHOD] - 4)
		return "a layout out of range";
	return NULL;
}

void
hotspot_check(struct hotspot *hs, struct proc *p)
{
	struct proc_mapping m;
	uint64_t sym[S_COUNT];
	struct hsproc *hp;
	struct hs_proc val;
	const char *bad;
	int32_t major = 0;
	int64_t now;
	size_t i;
	int rc;

	/*
	 * Not p->runtime: a program that loads libjvm.so itself may have been
	 * first seen before it did. Its mappings are looked at when they change.
	 */
	if (hs == NULL || p->gone || p->kthread || p->hs_retry == NEVER ||
	    (p->hs && ((struct hsproc *)p->hs)->ready))
		return;
	now = clock_mono_ns();
	if (p->hs_gen == p->maps_gen && (p->hs_retry == 0 || now < p->hs_retry))
		return;
	p->hs_gen = p->maps_gen;
	p->hs_retry = 0;
	/* A JVM that does not get ready in a minute is left alone. */
	if (p->hs && ++p->hs_tries > MAX_TRIES) {
		p->hs_retry = NEVER;
		hotspot_forget(hs, p);
		return;
	}
	/* Its tables read already: only its code cache was not set up yet. */
	if ((hp = p->hs) != NULL) {
		major = hp->ver->major;
		goto code;
	}
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++)
		if (jvm_file(m.name))
			break;
	if (proctab_mapping(p, i, &m) != 0)
		return;
	if (++p->hs_tries > MAX_TRIES) {
		p->hs_retry = NEVER;
		return;
	}
	/*
	 * Every failure that may pass (a JVM still starting, a host too busy
	 * to answer in time) is looked at again RETRY_NS later, not only when
	 * the process's maps change: a JVM running JIT code maps nothing new,
	 * and would be walked by frame pointer for good.
	 */
	if (file_dynsyms(hs, &m, sym) < 0) {
		p->hs_retry = now + RETRY_NS;
		return;
	}
	if ((hp = calloc(1, sizeof(*hp))) == NULL)
		return;
	if ((rc = read_vmstructs(hs, p, sym, m.bias, hp->v, &hp->found, &major,
	    &hp->ver)) == -EAGAIN || rc == -ETIMEDOUT) {
		p->hs_retry = now + RETRY_NS;
		goto fail;
	}
	if (rc == -ENOTSUP) {
		log_info("ebpf: pid %u: HotSpot %d: not a version this daemon walks (OpenJDK %s): "
		    "its Java frames are walked by frame pointer", p->pid, major, versions_known());
		hs->st.refused++;
		p->hs_retry = NEVER;
		goto fail;
	}
	if (rc < 0) {
		log_info("ebpf: pid %u: %s: no HotSpot structure tables (%s): Java frames "
		    "walked by frame pointer", p->pid, m.name, strerror(-rc));
		hs->st.refused++;
		p->hs_retry = NEVER;
		goto fail;
	}
	if ((bad = tables_bad(hp->ver, hp->v, hp->found)) != NULL) {
		log_info("ebpf: pid %u: HotSpot %d: its structure tables lack %s: Java frames "
		    "walked by frame pointer", p->pid, major, bad);
		hs->st.refused++;
		p->hs_retry = NEVER;
		goto fail;
	}
	p->hs = hp;
code:
	if ((rc = code_cache(hs, p, hp->ver, hp->v, &val)) < 0) {
		if (rc == -EAGAIN || rc == -EFAULT || rc == -ETIMEDOUT) {
			p->hs_retry = now + RETRY_NS;
			return;
		}
		log_info("ebpf: pid %u: HotSpot %d: its code cache makes no sense: Java "
		    "frames walked by frame pointer", p->pid, major);
		hs->st.refused++;
		p->hs_retry = NEVER;
		hotspot_forget(hs, p);
		return;
	}
	if (bpf_map_update_elem(hs->procs_fd, &p->pid, &val, BPF_ANY) < 0) {
		log_debug("ebpf: pid %u: hs_procs: %s", p->pid, strerror(errno));
		p->hs_retry = now + RETRY_NS;
		return;
	}
	hp->ready = true;
	hs->st.jvms++;
	log_debug("ebpf: pid %u: HotSpot %d: code cache %#llx-%#llx, %d heaps, interpreter "
	    "%#llx-%#llx", p->pid, major, (unsigned long long)val.cc_low,
	    (unsigned long long)val.cc_high, val.heaps[2].low ? 3 : val.heaps[1].low ? 2 : 1,
	    (unsigned long long)val.interp_low, (unsigned long long)val.interp_high);
	return;
fail:
	free(hp);
}

/* --- naming methods ------------------------------------------------------ */

/*
 * The Java type descriptor at *s (before end) as Java spells it, appended to
 * o (osz bytes, *ol used, kept NUL-terminated, cut when full); *s moved past
 * it. 0, or -EINVAL when malformed.
 */
static int
put_type(const char **s, const char *end, char *o, size_t osz, size_t *ol)
{
	static const struct { char c; const char *name; } prim[] = {
		{ 'B', "byte" }, { 'C', "char" }, { 'D', "double" }, { 'F', "float" },
		{ 'I', "int" }, { 'J', "long" }, { 'S', "short" }, { 'Z', "boolean" },
		{ 'V', "void" },
	};
	const char *p = *s, *name = NULL;
	size_t dims = 0, k, nlen = 0;

	while (p < end && *p == '[') {
		dims++;
		p++;
	}
	if (p >= end || dims > 255)
		return -EINVAL;
	if (*p == 'L') {
		const char *semi = memchr(p, ';', (size_t)(end - p));

		if (semi == NULL || semi == p + 1)
			return -EINVAL;
		name = p + 1;
		nlen = (size_t)(semi - name);
		p = semi + 1;
	} else {
		for (k = 0; k < sizeof(prim) / sizeof(prim[0]); k++)
			if (prim[k].c == *p)
				break;
		if (k == sizeof(prim) / sizeof(prim[0]) || (*p == 'V' && dims > 0))
			return -EINVAL;
		name = prim[k].name;
		nlen = strlen(name);
		p++;
	}
	for (k = 0; k < nlen && *ol + 1 < osz; k++)
		o[(*ol)++] = name[k] == '/' ? '.' : name[k];
	for (k = 0; k < dims && *ol + 2 < osz; k++) {
		o[(*ol)++] = '[';
		o[(*ol)++] = ']';
	}
	o[*ol < osz ? *ol : osz - 1] = '\0';
	*s = p;
	return 0;
}

int
hotspot_signature(const char *sig, size_t len, char *ret, size_t retsz, char *args,
    size_t argsz)
{
	const char *s = sig, *end = sig + len;
	size_t al = 0, rl = 0;

	if (retsz == 0 || argsz == 0)
		return -EINVAL;
	ret[0] = args[0] = '\0';
	if (len < 3 || *s != '(')
		return -EINVAL;
	s++;
	while (s < end && *s != ')') {
		if (al > 0 && al + 2 < argsz) {
			args[al++] = ',';
			args[al++] = ' ';
			args[al] = '\0';
		}
		if (*s == 'V' || put_type(&s, end, args, argsz, &al) < 0)
			return -EINVAL;
	}
	if (s >= end)
		return -EINVAL;
	s++;
	if (put_type(&s, end, ret, retsz, &rl) < 0 || s != end)
		return -EINVAL;
	return 0;
}

/* The Symbol at addr into out (NUL-terminated, at most SYM_MAX bytes). */
static int
read_symbol(struct hotspot *hs, const struct proc *p, const struct hsproc *hp, uint64_t addr,
    char *out, size_t *len)
{
	uint16_t n = 0;

	if (addr == 0 || mem_read(hs, p, addr + hp->v[F_SYM_LENGTH], &n, sizeof(n)) < 0 ||
	    n == 0 || n >= SYM_MAX || mem_read(hs, p, addr + hp->v[F_SYM_BODY], out, n) < 0 ||
	    memchr(out, '\0', n) != NULL)
		return -EFAULT;
	out[n] = '\0';
	*len = n;
	return 0;
}

/*
 * The line of bytecode index bci from a method's compressed line number
 * table (t, len bytes): pairs of (bci delta, line delta), a byte
 * (bci << 3 | line) for small ones, else 0xff and two signed compressed
 * integers; a 0 byte ends it. The rows into *rows (at most LINES_MAX).
 */
static uint32_t
lines_decode(const uint8_t *t, size_t len, struct hsline *rows, unsigned x)
{
	size_t pos = 0;
	int64_t bci = 0, line = 0, d1, d2;
	uint32_t n = 0;

	while (pos < len && n < LINES_MAX) {
		uint8_t b = t[pos++];

		if (b == 0)
			break;
		if (b == 0xff) {
			if ((d1 = hotspot_unsigned5(t, len, &pos, x)) < 0 ||
			    (d2 = hotspot_unsigned5(t, len, &pos, x)) < 0)
				break;
			bci += (d1 >> 1) ^ -(d1 & 1);
			line += (d2 >> 1) ^ -(d2 & 1);
		} else {
			bci += b >> 3;
			line += b & 7;
		}
		if (bci < 0 || bci > 65535 || line < 0 || line > INT32_MAX)
			break;
		rows[n].bci = (int32_t)bci;
		rows[n].line = (int32_t)line;
		n++;
	}
	return n;
}

/* The line of bci in rows: the row with the largest bci at or below it. */
static int64_t
rows_line(const struct hsline *rows, uint32_t n, int64_t bci)
{
	int64_t line = 0, best = -1;
	uint32_t k;

	if (bci < 0)
		return n ? rows[0].line : 0;
	for (k = 0; k < n; k++) {
		if (rows[k].bci <= bci && rows[k].bci > best) {
			best = rows[k].bci;
			line = rows[k].line;
		}
	}
	return line;
}

static int64_t
method_line(const struct hsmethod *c, int64_t bci)
{
	return rows_line(c->e.rows, c->e.nrows, bci);
}

int64_t
hotspot_line(const uint8_t *t, size_t len, int64_t bci, unsigned x)
{
	struct hsline *rows = calloc(LINES_MAX, sizeof(*rows));
	int64_t line;

	if (rows == NULL)
		return 0;
	line = rows_line(rows, lines_decode(t, len, rows, x), bci);
	free(rows);
	return line;
}

/*
 * Fill c (whose method and constmethod are set) from the process: its name
 * as the perf map spells it, its source file and line table. 0 or -EFAULT.
 */
static int
method_load(struct hotspot *hs, const struct proc *p, struct hsproc *hp,
    struct hsmethod *c)
{
	char klass[SYM_MAX], name[SYM_MAX], sig[SYM_MAX], ret[SYM_MAX], args[SYM_MAX];
	char file[SYM_MAX];
	uint8_t cmb[64], cpb[128], *lt = NULL;
	uint64_t cm = c->constmethod, cp, holder = 0, ksym = 0, nsym = 0, ssym = 0, fsym = 0, base;
	uint16_t ni, si, fi, code_size;
	uint32_t flags;
	int32_t cplen, cmsize;
	size_t kl, nl, sl, fl, k, ltlen;
	struct hsline *rows, *shrunk;
	uint32_t nlines;

	if (mem_read(hs, p, cm, cmb, sizeof(cmb)) < 0)
		return -EFAULT;
	cp = rd64(cmb, hp->v[F_CM_CONSTANTS]);
	ni = rd16(cmb, hp->v[F_CM_NAME]);
	si = rd16(cmb, hp->v[F_CM_SIG]);
	flags = hp->ver->cm_flags_size == 4 ? (uint32_t)rd32(cmb, hp->v[F_CM_FLAGS]) :
	    rd16(cmb, hp->v[F_CM_FLAGS]);
	code_size = rd16(cmb, hp->v[F_CM_CODE_SIZE]);
	cmsize = rd32(cmb, hp->v[F_CM_SIZE]);
	if (cp == 0 || mem_read(hs, p, cp, cpb, sizeof(cpb)) < 0)
		return -EFAULT;
	holder = rd64(cpb, hp->v[F_CP_HOLDER]);
	cplen = rd32(cpb, hp->v[F_CP_LENGTH]);
	fi = rd16(cpb, hp->v[F_CP_SOURCE]);
	if (ni == 0 || si == 0 || ni >= cplen || si >= cplen || holder == 0 ||
	    mem_read(hs, p, holder + hp->v[F_KLASS_NAME], &ksym, 8) < 0)
		return -EFAULT;
	base = cp + hp->v[T_CONSTANTPOOL];
	if (mem_read(hs, p, base + 8 * (uint64_t)ni, &nsym, 8) < 0 ||
	    mem_read(hs, p, base + 8 * (uint64_t)si, &ssym, 8) < 0)
		return -EFAULT;
	if (read_symbol(hs, p, hp, ksym, klass, &kl) < 0 ||
	    read_symbol(hs, p, hp, nsym & ~1ULL, name, &nl) < 0 ||
	    read_symbol(hs, p, hp, ssym & ~1ULL, sig, &sl) < 0 ||
	    hotspot_signature(sig, sl, ret, sizeof(ret), args, sizeof(args)) < 0)
		return -EFAULT;
	for (k = 0; k < kl; k++)
		if (klass[k] == '/')
			klass[k] = '.';
	/* As the perf map names compiled code (its return type left out). */
	if (asprintf(&c->e.name, "%s.%s(%s)", klass, name, args) < 0) {
		c->e.name = NULL;
		return -EFAULT;
	}
	c->code_base = cm + hp->v[T_CONSTMETHOD];
	c->code_size = code_size;
	/* The source file (a class may have none), and the line table after the bytecodes. */
	if (fi != 0 && fi < cplen && mem_read(hs, p, base + 8 * (uint64_t)fi, &fsym, 8) == 0 &&
	    read_symbol(hs, p, hp, fsym & ~1ULL, file, &fl) == 0)
		c->e.file = strdup(file);
	if (!(flags & hp->v[C_HAS_LINES]) || cmsize <= 0 ||
	    (uint64_t)cmsize * 8 <= hp->v[T_CONSTMETHOD] + code_size)
		return 0;
	ltlen = (size_t)cmsize * 8 - hp->v[T_CONSTMETHOD] - code_size;
	if (ltlen > LINES_READ)
		ltlen = LINES_READ;
	if ((lt = malloc(ltlen)) == NULL || (rows = calloc(LINES_MAX, sizeof(*rows))) == NULL) {
		free(lt);
		return 0;
	}
	if (mem_read(hs, p, c->code_base + code_size, lt, ltlen) == 0 &&
	    (nlines = lines_decode(lt, ltlen, rows, hp->ver->u5_x)) > 0) {
		if ((shrunk = realloc(rows, nlines * sizeof(*rows))) != NULL)
			rows = shrunk;
		/* Past HS_MEM or the budget: named without its lines. */
		(void)codecache_lines_keep(hs->cc, &hp->cache, &c->e, rows, nlines,
		    sizeof(*rows));
	} else {
		free(rows);
	}
	free(lt);
	return 0;
}

/*
 * The method at method, from the process's cache, loaded on a miss. cm: its
 * ConstMethod as read now (a Method* freed and reused shows another one);
 * 0 for a method a live nmethod refers to (read only on a miss). NULL:
 * unreadable.
 */
static const struct hsmethod *
method_lookup(struct hotspot *hs, struct proc *p, struct hsproc *hp, uint64_t method,
    uint64_t cm)
{
	struct hsmethod *c;

	if (method == 0)
		return NULL;
	/* A method of a live nmethod is alive: its cached entry stands. */
	if (cm == 0 && (c = (struct hsmethod *)codecache_find(hs->cc, &hp->cache, method)) != NULL)
		return c->e.name ? c : NULL;
	if (cm == 0 && (mem_read(hs, p, method + hp->v[F_METHOD_CONST], &cm, 8) < 0 || cm == 0))
		return NULL;
	if ((c = (struct hsmethod *)codecache_slot(hs->cc, &hp->cache, method)) == NULL)
		return NULL;
	if (c->e.addr == method && c->constmethod != cm)
		codecache_drop(hs->cc, &hp->cache, &c->e);
	if (c->e.addr == 0) {
		if (hs->method_loads == 0)
			return NULL;
		hs->method_loads--;
		c = (struct hsmethod *)codecache_claim(hs->cc, &hp->cache, &c->e, method);
		c->constmethod = cm;
		/* Unreadable: kept, without a name, not to be read again. */
		if (method_load(hs, p, hp, c) < 0) {
			free(c->e.name);
			c->e.name = NULL;
		}
	}
	return c->e.name ? c : NULL;
}

/* --- compiled frames ------------------------------------------------------ */

static void
nm_clear(struct hotspot *hs, struct hsproc *hp, struct hsnm *c)
{
	if (hs)
		codecache_uncharge(hs->cc, &hp->cache, c->bytes);
	free(c->pcs);
	free(c->scopes);
	free(c->meta);
	memset(c, 0, sizeof(*c));
}

/*
 * An integer of HotSpot's compressed streams (UNSIGNED5) at *pos of b (len
 * bytes): each byte less x (the bytes below x are excluded: 0 in JDK 17, 1
 * from JDK 21, whose streams hold no NUL byte); one below 256 - x - 64 ends
 * it, each further one weighs 64 times more, at most five. -1 past the end
 * or at an excluded byte.
 */
int64_t
hotspot_unsigned5(const uint8_t *b, size_t len, size_t *pos, unsigned x)
{
	int64_t sum = 0;
	unsigned shift = 0, low = 256 - 64 - x;
	size_t i;

	if (x > 1)
		return -1;
	for (i = 0; i < 5; i++) {
		uint8_t c;

		if (*pos >= len)
			return -1;
		c = b[(*pos)++];
		if (c < x)
			return -1;
		sum += (int64_t)(c - x) << shift;
		if (c < x + low)
			return sum;
		shift += 6;
	}
	return sum;
}

/* Where an nmethod's debug information lies: [begin, end) of each part. */
struct nmparts {
	uint64_t	 meta, meta_end, scopes, scopes_end, pcs, pcs_end;
};

/*
 * The parts of the nmethod at blob (header hdr), as its version lays them
 * out (versions[]). 0, or -EINVAL when they make no sense.
 */
static int
nm_parts(const struct hsproc *hp, uint64_t blob, const uint8_t *hdr, struct nmparts *r)
{
	const uint64_t *v = hp->v;

	if (hp->ver->flags & HSV_NM_DETACHED) {
		uint64_t imm = rd64(hdr, v[F_NM_IMMUTABLE]), mut = rd64(hdr, v[F_BLOB_MUTABLE]);
		int32_t isize = rd32(hdr, v[F_NM_IMMUTABLE_SIZE]), pcs = rd32(hdr, v[F_NM_PCS]);
		int32_t scopes = rd32(hdr, v[F_CMTH_SCOPES]), reloc = rd32(hdr, v[F_BLOB_RELOC_SIZE]);
		int32_t msize = rd32(hdr, v[F_BLOB_MUTABLE_SIZE]);

		if (imm == 0 || mut == 0 || pcs < 0 || scopes < pcs || isize < scopes ||
		    reloc < 0 || msize < reloc)
			return -EINVAL;
		r->pcs = imm + (uint64_t)pcs;
		r->pcs_end = r->scopes = imm + (uint64_t)scopes;
		r->scopes_end = imm + (uint64_t)isize;
		r->meta = mut + (uint64_t)reloc;
		r->meta_end = mut + (uint64_t)msize;
	} else {
		int32_t meta = rd32(hdr, v[F_NM_METADATA]), pcs = rd32(hdr, v[F_NM_PCS]);
		int32_t deps = rd32(hdr, v[F_NM_DEPS]);

		/* metadata, then scopes data, then pc descriptors, then dependencies. */
		if (meta <= 0 || pcs <= meta || deps <= pcs)
			return -EINVAL;
		r->meta = blob + (uint64_t)meta;
		r->meta_end = r->scopes = rd64(hdr, v[F_CMTH_SCOPES]);
		r->scopes_end = r->pcs = blob + (uint64_t)pcs;
		r->pcs_end = blob + (uint64_t)deps;
		if ((r->meta_end - r->meta) % 8)
			return -EINVAL;
	}
	if (r->meta_end < r->meta || r->scopes_end < r->scopes || r->pcs_end < r->pcs ||
	    r->meta_end - r->meta > NM_INFO_MAX || r->scopes_end - r->scopes > NM_INFO_MAX ||
	    r->pcs_end - r->pcs > NM_INFO_MAX)
		return -EINVAL;
	return 0;
}

/*
 * The debug information of the nmethod at blob (header hdr) into c: its
 * pc descriptors (sorted by pc offset), scopes and metadata, copied. 0, or
 * -errno.
 */
static int
nm_load(struct hotspot *hs, const struct proc *p, struct hsproc *hp, uint64_t blob,
    const uint8_t *hdr, struct hsnm *c)
{
	struct nmparts r;
	uint64_t scopes, meta, pcs;
	size_t npcs, k, psz = hp->v[T_PCDESC], bytes;
	uint8_t *raw;

	if (nm_parts(hp, blob, hdr, &r) < 0)
		return -EINVAL;
	scopes = r.scopes;
	meta = r.meta;
	pcs = r.pcs;
	npcs = (size_t)(r.pcs_end - r.pcs) / psz;
	c->nscopes = (size_t)(r.scopes_end - r.scopes);
	c->nmeta = (size_t)(r.meta_end - r.meta) / 8;
	if (npcs == 0)
		return -EINVAL;
	bytes = npcs * sizeof(*c->pcs) + c->nscopes + 1 + (c->nmeta + 1) * sizeof(*c->meta);
	if (codecache_charge(hs->cc, &hp->cache, bytes) < 0)
		return -ENOMEM;
	c->bytes = bytes;
	if ((raw = malloc(npcs * psz)) == NULL)
		return -ENOMEM;
	c->pcs = calloc(npcs, sizeof(*c->pcs));
	c->scopes = malloc(c->nscopes + 1);
	c->meta = calloc(c->nmeta + 1, sizeof(*c->meta));
	if (c->pcs == NULL || c->scopes == NULL || c->meta == NULL ||
	    mem_read(hs, p, pcs, raw, npcs * psz) < 0 ||
	    (c->nscopes && mem_read(hs, p, scopes, c->scopes, c->nscopes) < 0) ||
	    (c->nmeta && mem_read(hs, p, meta, c->meta, c->nmeta * 8) < 0)) {
		free(raw);
		return -EFAULT;
	}
	for (k = 0; k < npcs; k++) {
		c->pcs[k].pc = rd32(raw + k * psz, hp->v[F_PC_OFFSET]);
		c->pcs[k].scope = rd32(raw + k * psz, hp->v[F_PC_SCOPE]);
		if (k > 0 && c->pcs[k].pc < c->pcs[k - 1].pc) {
			free(raw);
			return -EINVAL;
		}
	}
	c->npcs = npcs;
	free(raw);
	return 0;
}

/*
 * The methods running at pc offset off of nmethod c, innermost first, into
 * out (at most MAX_INLINE), their bytecode indexes into bcis: the scope of
 * the pc descriptor at off (a return address), else (a leaf: exact) of the
 * first one past it, and its senders. The number found; 0: none.
 */
static size_t
nm_scopes(const struct hsnm *c, int64_t off, bool exact, uint64_t *out, int64_t *bcis,
    unsigned x)
{
	size_t lo = 0, hi = c->npcs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->pcs[mid].pc < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: the first descriptor at or past off; a leaf's pc is before its next one. */
	if (exact && lo < c->npcs && c->pcs[lo].pc == off && lo + 1 < c->npcs)
		lo++;
	if (lo >= c->npcs)
		return 0;
	return hotspot_scopes(c->scopes, c->nscopes, c->meta, c->nmeta, c->pcs[lo].scope, out,
	    bcis, MAX_INLINE, x);
}

size_t
hotspot_scopes(const uint8_t *scopes, size_t len, const uint64_t *meta, size_t nmeta,
    int64_t dec, uint64_t *out, int64_t *bcis, size_t max, unsigned x)
{
	int64_t sender, idx, bci;
	size_t n = 0, pos;

	/* Each sender is decoded before its callee: offsets go down, so the chain ends. */
	while (dec > 0 && (size_t)dec < len && n < max) {
		pos = (size_t)dec;
		sender = hotspot_unsigned5(scopes, len, &pos, x);
		idx = hotspot_unsigned5(scopes, len, &pos, x);
		bci = hotspot_unsigned5(scopes, len, &pos, x);
		if (sender < 0 || idx <= 0 || (size_t)idx > nmeta || sender >= dec || bci < 0)
			break;
		bcis[n] = bci - 1;	/* stored plus one: InvocationEntryBci is -1 */
		out[n++] = meta[idx - 1];
		dec = sender;
	}
	return n;
}

/*
 * The methods of compiled frame (nmethod blob whose header is hdr, as read
 * at this sample; pc; exact: not a return address) into out, innermost
 * first, their bytecode indexes into bcis. 0 when blob is not an nmethod
 * (*stub: its name's address, if any) or its debug information cannot be
 * read; past this sample's loads, the nmethod's own method.
 */
static size_t
nm_frame(struct hotspot *hs, struct proc *p, struct hsproc *hp, uint64_t blob,
    const uint8_t *hdr, uint64_t pc, bool exact, uint64_t *out, int64_t *bcis, uint64_t *stub)
{
	uint64_t name, method, code, h;
	int32_t id;
	struct hsnm *c;
	size_t n;

	*stub = 0;
	name = rd64(hdr, hp->v[F_BLOB_NAME]);
	if (hp->nm_name == 0 && name != 0) {
		char nm[8] = { 0 };

		if (mem_read(hs, p, name, nm, sizeof(nm)) == 0 && memcmp(nm, "nmethod", 8) == 0)
			hp->nm_name = name;
	}
	if (name != hp->nm_name) {
		*stub = name;	/* a stub, an adapter, a buffer of stubs */
		return 0;
	}
	method = rd64(hdr, hp->v[F_CMTH_METHOD]);
	code = (hp->ver->flags & HSV_CODE_OFFSET) ?
	    blob + (uint64_t)(int64_t)rd32(hdr, hp->v[F_BLOB_CODE_BEGIN]) :
	    rd64(hdr, hp->v[F_BLOB_CODE_BEGIN]);
	id = rd32(hdr, hp->v[F_NM_COMPILE_ID]);
	if (method == 0 || pc < code || pc - code > INT32_MAX)
		return 0;
	if (hp->nms == NULL && (hp->nms = calloc(NM_SLOTS, sizeof(*hp->nms))) == NULL)
		return 0;
	h = (blob >> 4) * 0x9e3779b97f4a7c15ULL;
	c = &hp->nms[(h >> 32) % NM_SLOTS];
	/* The slot's nmethod, unless the code cache reused its place since. */
	if (c->blob != blob || c->compile_id != id || c->method != method) {
		if (hs->nm_loads == 0) {
			out[0] = method;	/* this sample: the nmethod's own method */
			bcis[0] = -1;
			return 1;
		}
		hs->nm_loads--;
		nm_clear(hs, hp, c);
		c->blob = blob;
		c->compile_id = id;
		c->method = method;
		if (nm_load(hs, p, hp, blob, hdr, c) < 0)
			c->npcs = 0;
	}
	n = c->npcs ? nm_scopes(c, (int64_t)(pc - code), exact, out, bcis, hp->ver->u5_x) : 0;
	if (n == 0) {
		out[0] = method;	/* no scope: the nmethod's own method */
		bcis[0] = -1;
		n = 1;
	}
	return n;
}

/*
 * The name of the stub whose CodeBlob::_name is at addr ("StubRoutines (1)",
 * "I2C/C2I adapters": the perf map's names of them), from the process's few
 * names; NULL when unreadable or not a name.
 */
static const char *
stub_name(struct hotspot *hs, struct proc *p, struct hsproc *hp, uint64_t addr)
{
	char buf[STUB_NAME_MAX + 1];
	size_t k, i;

	for (k = 0; k < STUB_NAMES && hp->stubs[k].addr; k++)
		if (hp->stubs[k].addr == addr)
			return hp->stubs[k].name;
	if (k == STUB_NAMES)
		return NULL;
	memset(buf, 0, sizeof(buf));
	if (mem_read(hs, p, addr, buf, STUB_NAME_MAX) < 0 &&
	    mem_read(hs, p, addr, buf, 16) < 0)
		return NULL;
	buf[STUB_NAME_MAX] = '\0';
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
			return NULL;
	if (i == 0 || (hp->stubs[k].name = strdup(buf)) == NULL)
		return NULL;
	hp->stubs[k].addr = addr;
	return hp->stubs[k].name;
}

void
hotspot_read(struct hotspot *hs, struct proc *p, const struct prof_sample *s)
{
	struct iovec l[PROF_MAX_JFRAMES], r[PROF_MAX_JFRAMES];
	struct hsproc *hp = p->hs;
	size_t k, n = s->j_n < PROF_MAX_JFRAMES ? s->j_n : PROF_MAX_JFRAMES, len;
	ssize_t got;

	if (hs == NULL)
		return;
	hs->pre_sample = NULL;
	hs->nm_loads = NM_LOADS;
	hs->method_loads = METHOD_LOADS;
	if (hp == NULL || !hp->ready || n == 0)
		return;
	for (k = 0; k < n; k++) {
		hs->pre_ok[k] = false;
		hs->pre_cm[k] = 0;
		if (s->j[k].kind == PROF_J_INTERP) {
			l[k].iov_base = &hs->pre_cm[k];
			len = 8;
			r[k].iov_base = (void *)(uintptr_t)(s->j[k].method + hp->v[F_METHOD_CONST]);
		} else {
			l[k].iov_base = hs->pre_hdr[k];
			len = hp->v[T_NMETHOD];
			r[k].iov_base = (void *)(uintptr_t)s->j[k].method;
		}
		l[k].iov_len = r[k].iov_len = s->j[k].method ? len : 0;
	}
	/* One read for all; it stops at the first range that fails: the rest one by one. */
	got = codecache_readv(hs->cc, (pid_t)p->pid, l, r, n);
	for (k = 0; k < n; k++) {
		len = l[k].iov_len;
		if (got >= (ssize_t)len) {
			hs->pre_ok[k] = len > 0;
			got -= (ssize_t)len;
			continue;
		}
		got = 0;
		hs->pre_ok[k] = len > 0 && mem_read(hs, p, (uint64_t)(uintptr_t)r[k].iov_base,
		    l[k].iov_base, len) == 0;
	}
	hs->pre_sample = s;
}

size_t
hotspot_frames(struct hotspot *hs, struct proc *p, const struct prof_sample *s, size_t i,
    const struct frame **out)
{
	struct hsproc *hp = p->hs;
	uint64_t methods[MAX_INLINE], pc, bcp = 0, stub = 0, cm = 0;
	const char *sname;
	int64_t bcis[MAX_INLINE];
	size_t k, n = s->j_n < PROF_MAX_JFRAMES ? s->j_n : PROF_MAX_JFRAMES, m;
	const struct hsmethod *c;

	if (hs == NULL || hp == NULL || !hp->ready || i >= PROF_MAX_USTACK)
		return 0;
	for (k = 0; k < n; k++)
		if (s->j[k].idx == i)
			break;
	if (k == n)
		return 0;
	if (s->j[k].kind == PROF_J_INTERP) {
		if (hs->pre_sample != s || !hs->pre_ok[k] || hs->pre_cm[k] == 0)
			cm = UINT64_MAX;	/* unreadable */
		else
			cm = hs->pre_cm[k];
		methods[0] = s->j[k].method;
		bcp = s->j[k].bcp;
		bcis[0] = -1;
		m = 1;
	} else if (s->j[k].kind == PROF_J_BLOB) {
		if (hs->pre_sample != s || !hs->pre_ok[k])
			return 0;
		pc = s->ustack[i] & ~PROF_PC_EXACT;
		m = nm_frame(hs, p, hp, s->j[k].method, hs->pre_hdr[k], pc,
		    i == 0 || (s->ustack[i] & PROF_PC_EXACT), methods, bcis, &stub);
		if (m == 0 && stub != 0 && (sname = stub_name(hs, p, hp, stub)) != NULL) {
			memset(&hs->fr[0], 0, sizeof(hs->fr[0]));
			hs->fr[0].file = "[java]";
			hs->fr[0].build_id = "";
			hs->fr[0].func = sname;
			*out = hs->fr;
			return 1;
		}
		if (m == 0)
			return 0;
	} else {
		return 0;
	}
	for (k = 0; k < m; k++) {
		struct frame *f = &hs->fr[k];

		memset(f, 0, sizeof(*f));
		f->file = "[java]";
		f->build_id = "";
		hs->st.frames++;
		if (cm == UINT64_MAX || (c = method_lookup(hs, p, hp, methods[k], cm)) == NULL) {
			hs->st.unreadable++;
			f->func = UNREADABLE;
			continue;
		}
		/* An interpreted frame's bytecode index is where its bcp points. */
		if (bcp >= c->code_base && bcp < c->code_base + c->code_size)
			bcis[k] = (int64_t)(bcp - c->code_base);
		f->func = c->e.name;
		f->srcfile = c->e.file;
		f->line = method_line(c, bcis[k]);
	}
	*out = hs->fr;
	return m;
}
