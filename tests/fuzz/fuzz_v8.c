/*
 * fuzz_v8: the eBPF sampler's reader of V8's heap (collector/ebpf/runtimes/v8.c)
 * against crafted objects, as a hostile process could lay them out. The
 * input is a heap: its bytes are copied into this process's memory, every
 * tagged word marked as a pointer (low bit set, top 16 bits 0x00ff; bits 1
 * to 32 the offset) made a pointer into it, and the reader
 * runs on this process (process_vm_readv of itself) with Node.js 20's
 * layout, or Node.js 24's when the first byte is 128 or more (its
 * ScopeInfo's flags untagged, its positions at the head), naming the frames
 * whose functions are the heap's first words.
 * Every pointer, length, count and type is the input's to lie about: a
 * frame is named with a non-empty, bounded, NUL-terminated name or left
 * native, never a crash, a hang or a read outside what the reader bounds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proctab.h"
#include "v8.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_v8: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

#define MAX_HEAP	(64u << 10)
#define PAD		4096	/* zeros after the heap: objects cut at its end read them */
#define MAX_FRAMES	16

/* Node.js 20 (V8 11.3) as its v8dbg_* constants say. */
static const char *const names[] = {
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
	"_ZN2v88internal7Version6major_E", "_ZN2v88internal7Version6minor_E",
};
static const int32_t vals[] = {
	-16, -8, 8, 31, 0, 12, 24, 16, 32, 16, 8, 56, 12, 16, 16, 16, 24, 16, 8, 16,
	262, 261, 167, 175, 128, 3, 2, 7, 8, 8, 0, 1, 5, 11, 3,
};
/* Node.js 24 (V8 13.6): the same names (the reader knows both spellings). */
static const int32_t vals24[] = {
	-16, -8, 8, 31, 0, 12, 32, 24, 40, 16, 8, 56, 12, 16, 16, 16, 24, 16, 8, 16,
	282, 280, 167, 205, 128, 5, 2, 7, 8, 8, 0, 1, 5, 13, 6,
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct v8 *v;
	struct prof_v8frame fr[MAX_FRAMES];
	struct proc *p;
	struct frame f;
	uint8_t *heap;
	size_t n, i, words;
	bool v24;

	if (size < 1 || size - 1 > MAX_HEAP)
		return 0;
	if (v == NULL && (v = v8_create(-1)) == NULL)
		return 0;
	n = data[0] % (MAX_FRAMES + 1);
	v24 = data[0] >= 128;
	data++;
	size--;
	words = size / 8;
	if ((heap = calloc(1, words * 8 + PAD)) == NULL)
		return 0;
	memcpy(heap, data, words * 8);
	for (i = 0; i < words; i++) {
		uint64_t w;

		memcpy(&w, heap + i * 8, 8);
		if ((w & 1) && (w >> 48) == 0xff) {
			w = (uint64_t)(uintptr_t)heap + ((w >> 1) & 0xffffffff) % (words * 8 + 1) + 1;
			memcpy(heap + i * 8, &w, 8);
		}
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		free(heap);
		return 0;
	}
	p->pid = (uint32_t)getpid();
	CHECK(v8_attach_layout(v, p, names, v24 ? vals24 : vals, sizeof(vals) / sizeof(vals[0])) == 0);
	memset(fr, 0, sizeof(fr));
	for (i = 0; i < n && i < words; i++) {
		uint64_t fn;

		memcpy(&fn, heap + i * 8, 8);
		fr[i].fn_idx = (fn & PROF_V8_FN_MASK) | ((uint64_t)i << PROF_V8_IDX_SHIFT);
	}
	n = i;
	/* Twice: the second time from the cache, checked against the heap again. */
	for (int round = 0; round < 2; round++) {
		v8_read(v, p, fr, n);
		for (i = 0; i < n; i++) {
			if (v8_frame(v, p, i, &f) < 0)
				continue;
			CHECK(f.func != NULL && f.func[0] != '\0');
			CHECK(strlen(f.func) <= 4 * 512);
			CHECK(f.srcfile == NULL || strlen(f.srcfile) <= 4 * 1024);
			CHECK(f.line >= 0);
			CHECK(strcmp(f.file, "[js]") == 0);
			if (round == 1 && getenv("FUZZ_V8_PRINT"))
				printf("frame %zu: %s %s:%lld\n", i, f.func, f.srcfile ? f.srcfile : "-",
				    (long long)f.line);
		}
	}
	p->gone = true;		/* no BPF map to update */
	v8_forget(v, p);
	free(p);
	free(heap);
	return 0;
}
