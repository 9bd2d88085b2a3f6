/*
 * hsfake: a hostile "JVM" for tests/integration/ebpf_hotspot.sh. Built as a
 * shared library named libjvm.so (with -DHSFAKE_LIB) that exports the
 * structure tables a HotSpot JVM exports (gHotSpotVMStructs, ...), claiming
 * OpenJDK 17, and as a program linked with it. The program lays out a fake
 * code cache (an executable mapping, its segment map, code blob headers, a
 * fake interpreter) filled per mode with what a hostile process could put
 * there, copies a spinning function into it and runs it there, so that the
 * sampler walks and names frames through the crafted structures:
 *   loop     a segment map of ones (every hop goes back one segment)
 *   garbage  random segment map, blob headers, debug information, methods
 *   frames   well-formed blobs whose frame sizes, nmethod offsets, scopes and
 *            Method* pointers are random
 * Usage: hsfake MODE MILLISECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct sentry {
	const char	*type, *field, *tstr;
	int32_t		 is_static, pad;
	uint64_t	 offset;
	void		*addr;
};

struct tentry {
	const char	*type, *super;
	int32_t		 is_oop, is_int, is_unsigned, pad;
	uint64_t	 size;
};

struct centry {
	const char	*name;
	int32_t		 value, pad;
};

#ifdef HSFAKE_LIB

uint64_t gHotSpotVMStructEntryTypeNameOffset = 0, gHotSpotVMStructEntryFieldNameOffset = 8;
uint64_t gHotSpotVMStructEntryTypeStringOffset = 16, gHotSpotVMStructEntryIsStaticOffset = 24;
uint64_t gHotSpotVMStructEntryOffsetOffset = 32, gHotSpotVMStructEntryAddressOffset = 40;
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct sentry);
uint64_t gHotSpotVMTypeEntryTypeNameOffset = 0, gHotSpotVMTypeEntrySuperclassNameOffset = 8;
uint64_t gHotSpotVMTypeEntrySizeOffset = 32, gHotSpotVMTypeEntryArrayStride = sizeof(struct tentry);
uint64_t gHotSpotVMIntConstantEntryNameOffset = 0, gHotSpotVMIntConstantEntryValueOffset = 8;
uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(struct centry);

/* The VM's statics the tables point at. */
uint64_t hsfake_cc_low, hsfake_cc_high, hsfake_heaps, hsfake_interp;
#ifndef HSFAKE_MAJOR
#define HSFAKE_MAJOR	17	/* tests/integration/rt_java.sh builds one of version 99 */
#endif
int32_t hsfake_major = HSFAKE_MAJOR;

static struct sentry structs[] = {
	{ "CodeCache", "_heaps", "", 1, 0, 0, &hsfake_heaps },
	{ "CodeCache", "_low_bound", "", 1, 0, 0, &hsfake_cc_low },
	{ "CodeCache", "_high_bound", "", 1, 0, 0, &hsfake_cc_high },
	{ "CodeHeap", "_memory", "", 0, 0, 0, NULL },
	{ "CodeHeap", "_segmap", "", 0, 0, 32, NULL },
	{ "CodeHeap", "_log2_segment_size", "", 0, 0, 64, NULL },
	{ "VirtualSpace", "_low", "", 0, 0, 0, NULL },
	{ "VirtualSpace", "_high_boundary", "", 0, 0, 8, NULL },
	{ "GrowableArrayBase", "_len", "", 0, 0, 0, NULL },
	{ "GrowableArray<int>", "_data", "", 0, 0, 8, NULL },
	{ "CodeBlob", "_frame_size", "", 0, 0, 28, NULL },
	{ "CodeBlob", "_frame_complete_offset", "", 0, 0, 20, NULL },
	{ "CodeBlob", "_code_begin", "", 0, 0, 32, NULL },
	{ "CodeBlob", "_name", "", 0, 0, 96, NULL },
	{ "AbstractInterpreter", "_code", "", 1, 0, 0, &hsfake_interp },
	{ "StubQueue", "_stub_buffer", "", 0, 0, 0, NULL },
	{ "StubQueue", "_buffer_limit", "", 0, 0, 8, NULL },
	{ "Method", "_constMethod", "", 0, 0, 8, NULL },
	{ "ConstMethod", "_constants", "", 0, 0, 8, NULL },
	{ "ConstMethod", "_name_index", "", 0, 0, 34, NULL },
	{ "ConstMethod", "_signature_index", "", 0, 0, 36, NULL },
	{ "ConstMethod", "_flags", "", 0, 0, 28, NULL },
	{ "ConstMethod", "_code_size", "", 0, 0, 32, NULL },
	{ "ConstMethod", "_constMethod_size", "", 0, 0, 24, NULL },
	{ "ConstantPool", "_pool_holder", "", 0, 0, 24, NULL },
	{ "ConstantPool", "_length", "", 0, 0, 60, NULL },
	{ "ConstantPool", "_source_file_name_index", "", 0, 0, 54, NULL },
	{ "Klass", "_name", "", 0, 0, 24, NULL },
	{ "Symbol", "_length", "", 0, 0, 4, NULL },
	{ "Symbol", "_body", "", 0, 0, 6, NULL },
	{ "Abstract_VM_Version", "_vm_major_version", "", 1, 0, 0, &hsfake_major },
	{ "CompiledMethod", "_method", "", 0, 0, 112, NULL },
	{ "CompiledMethod", "_scopes_data_begin", "", 0, 0, 120, NULL },
	{ "nmethod", "_metadata_offset", "", 0, 0, 260, NULL },
	{ "nmethod", "_scopes_pcs_offset", "", 0, 0, 268, NULL },
	{ "nmethod", "_dependencies_offset", "", 0, 0, 272, NULL },
	{ "nmethod", "_compile_id", "", 0, 0, 304, NULL },
	{ "PcDesc", "_pc_offset", "", 0, 0, 0, NULL },
	{ "PcDesc", "_scope_decode_offset", "", 0, 0, 4, NULL },
	{ NULL, NULL, NULL, 0, 0, 0, NULL },
};

static struct tentry types[] = {
	{ "HeapBlock", NULL, 0, 0, 0, 0, 16 },
	{ "ConstantPool", NULL, 0, 0, 0, 0, 72 },
	{ "nmethod", NULL, 0, 0, 0, 0, 352 },
	{ "PcDesc", NULL, 0, 0, 0, 0, 16 },
	{ "ConstMethod", NULL, 0, 0, 0, 0, 48 },
	{ NULL, NULL, 0, 0, 0, 0, 0 },
};

static struct centry consts[] = {
	{ "frame::interpreter_frame_sender_sp_offset", -1, 0 },
	{ "ConstMethod::_has_linenumber_table", 1, 0 },
	{ NULL, 0, 0 },
};

struct sentry *gHotSpotVMStructs = structs;
struct tentry *gHotSpotVMTypes = types;
struct centry *gHotSpotVMIntConstants = consts;

#else	/* the program */

extern uint64_t hsfake_cc_low, hsfake_cc_high, hsfake_heaps, hsfake_interp;

#define CACHE		(1u << 20)
#define LOG2SEG		6
#define INTERP_AT	(CACHE - 0x10000)

static uint64_t rnd = 0x9e3779b97f4a7c15ULL;

static uint64_t
next(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

static void
fill(void *p, size_t n)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)next();
}

__attribute__((noinline)) static long
spin(long n)
{
	long s = 0, i;

	for (i = 0; i < n; i++)
		s += (i * i) ^ (s >> 3);
	return s;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
main(int argc, char **argv)
{
	static uint64_t heap[16], ga[2], queue[2];
	static const char nmethod_name[] = "nmethod";
	uint8_t *cc, *segmap, *junk;
	long (*fn[3])(long);
	int64_t end;
	size_t i, k;
	volatile long sink = 0;
	const char *mode = argc > 1 ? argv[1] : "garbage";

	if (argc < 3)
		return 2;
	end = now_ms() + atol(argv[2]);
	cc = mmap(NULL, CACHE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	segmap = malloc(CACHE >> LOG2SEG);
	junk = malloc(1 << 16);
	if (cc == MAP_FAILED || segmap == NULL || junk == NULL)
		return 1;
	fill(junk, 1 << 16);
	fill(cc, CACHE);
	/* Three copies of spin: two in blobs, one in the interpreter. */
	for (k = 0; k < 3; k++) {
		size_t at = k == 2 ? INTERP_AT + 0x100 : 0x4000 + k * 0x8000;

		memcpy(cc + at, (const void *)spin, 256);
		fn[k] = (long (*)(long))(void *)(cc + at);
	}
	if (strcmp(mode, "loop") == 0) {
		memset(segmap, 1, CACHE >> LOG2SEG);
	} else if (strcmp(mode, "frames") == 0) {
		memset(segmap, 0xff, CACHE >> LOG2SEG);
		for (k = 0; k < 2; k++) {
			size_t blob = 0x4000 + k * 0x8000 - 0x1000, s0 = blob >> LOG2SEG;
			uint8_t *h = cc + blob + 16;	/* after the HeapBlock header */
			uint64_t v;
			int32_t w;

			for (i = 0; i < 0x8000 >> LOG2SEG; i++)
				segmap[s0 + i] = (uint8_t)(i < 255 ? i : 1 + (i - 1) % 254);
			w = (int32_t)(next() % 5) - 1;			/* frame size -1..3 */
			memcpy(h + 28, &w, 4);
			w = (int32_t)(next() % 64);
			memcpy(h + 20, &w, 4);
			v = (uint64_t)(uintptr_t)(cc + blob + 0x1000);	/* code begin */
			memcpy(h + 32, &v, 8);
			v = (uint64_t)(uintptr_t)nmethod_name;
			memcpy(h + 96, &v, 8);
			v = (uint64_t)(uintptr_t)(junk + (next() % 4096) * 8);	/* Method* */
			memcpy(h + 112, &v, 8);
			v = (uint64_t)(uintptr_t)(h + 512);			/* scopes */
			memcpy(h + 120, &v, 8);
			w = 384;						/* metadata */
			memcpy(h + 260, &w, 4);
			w = 1024 + (int32_t)(next() % 256);			/* pcs */
			memcpy(h + 268, &w, 4);
			w = 2048 + (int32_t)(next() % 2048);			/* dependencies */
			memcpy(h + 272, &w, 4);
			/* metadata: Method* into junk, whose "ConstMethod"s point into junk too */
			for (i = 0; i < 16; i++) {
				v = (uint64_t)(uintptr_t)(junk + (next() % 8000) * 8);
				memcpy(h + 384 + 8 * i, &v, 8);
			}
		}
		for (i = 0; i < 4096; i++) {
			uint64_t v = (uint64_t)(uintptr_t)(junk + (next() % 8000) * 8);

			if (next() % 2)
				memcpy(junk + 8 * i, &v, 8);
		}
	} else {
		fill(segmap, CACHE >> LOG2SEG);
		for (i = 0; i < CACHE; i += 64 + next() % 4096) {
			uint64_t v = (uint64_t)(uintptr_t)nmethod_name;

			if (i + 16 + 104 < CACHE)
				memcpy(cc + i + 16 + 96, &v, 8);
		}
	}
	heap[0] = (uint64_t)(uintptr_t)cc;		/* _memory._low */
	heap[1] = (uint64_t)(uintptr_t)(cc + CACHE);	/* _memory._high_boundary */
	heap[4] = (uint64_t)(uintptr_t)segmap;		/* _segmap._low */
	heap[8] = LOG2SEG;				/* _log2_segment_size */
	ga[0] = 1;					/* _len */
	ga[1] = (uint64_t)(uintptr_t)&queue[1];		/* _data: one CodeHeap* */
	queue[1] = (uint64_t)(uintptr_t)heap;
	{
		static uint64_t sq[2];

		sq[0] = (uint64_t)(uintptr_t)(cc + INTERP_AT);
		sq[1] = 0x10000;
		hsfake_interp = (uint64_t)(uintptr_t)sq;
	}
	hsfake_cc_low = (uint64_t)(uintptr_t)cc;
	hsfake_cc_high = (uint64_t)(uintptr_t)(cc + CACHE);
	hsfake_heaps = (uint64_t)(uintptr_t)ga;
	for (k = 0; now_ms() < end; k++)
		sink += fn[k % 3](2000000);
	printf("%ld\n", (long)(sink & 1));
	return 0;
}

#endif
