/*
 * fuzz_elf: the eBPF sampler's ELF reader (collector/ebpf/symbolize.c) on
 * arbitrary bytes, as a process's executable or library hands them to it:
 * segments, build id, .symtab, .dynsym, MiniDebugInfo, .gopclntab, the PLT
 * and DWARF lines; read as glibc's libc every other time, its .eh_frame_hdr
 * and FDEs, and the code its entry functions are found in. The input is written to a file and read through
 * symbolize_elf(), as the sampler reads /proc/PID/map_files. Either the file
 * is refused (NULL), or every lookup names a function with a NUL-terminated,
 * non-empty name or nothing, the build id is hex, and nothing leaks or
 * crashes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_elf: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static char path[] = "/tmp/fuzz_elf.XXXXXX";
static int fd = -1;

static void
cleanup(void)
{
	unlink(path);
}

/* The input as a file of its own, rewritten for each input. */
static int
input_file(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		if ((fd = mkstemp(path)) < 0)
			return -1;
		atexit(cleanup);
	}
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return -1;
	return 0;
}

/* An address to ask about, from the input's own bytes. */
static uint64_t
word(const uint8_t *data, size_t size, size_t i)
{
	uint64_t v = 0;

	if (size >= 8)
		memcpy(&v, data + (i * 8) % (size - 7), 8);
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t ino;
	struct symbolizer *s;
	struct elfobj *o;
	const char *name, *file, *id;
	uint64_t addr, bias;
	int64_t line;
	size_t i;

	if (input_file(data, size) < 0 || (s = symbolize_create()) == NULL)
		return 0;
	/* Every other input as glibc's libc: its FDEs and code read for names too. */
	++ino;
	if ((o = symbolize_elf(s, 1, ino, path, NULL,
	    ino & 1 ? "/lib/x86_64-linux-gnu/libc.so.6" : NULL)) != NULL) {
		id = symbolize_elf_build_id(o);
		CHECK(strlen(id) <= 40 && strspn(id, "0123456789abcdef") == strlen(id));
		for (i = 0; i < 16; i++) {
			addr = i < 8 ? word(data, size, i) : 0x1000 * (i - 8);
			if ((name = symbolize_elf_lookup(o, addr)) != NULL)
				CHECK(name[0] != '\0' && strlen(name) < (1u << 20));
			symbolize_elf_resolve(s, o, addr, &name, &file, &line);
			CHECK(file != NULL || line == 0);
			CHECK(name == NULL || name[0] != '\0');
			if (symbolize_elf_bias(o, addr, addr & 0xffff, &bias) == 0)
				(void)symbolize_elf_lookup(o, addr - bias);
		}
		symbolize_elf_put(o);
	}
	/* A refused file is remembered: asking again gives NULL at once. */
	else
		CHECK(symbolize_elf(s, 1, ino, path, NULL, NULL) == NULL);
	symbolize_destroy(s);
	return 0;
}
