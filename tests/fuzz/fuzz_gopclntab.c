/*
 * fuzz_gopclntab: the reader of Go's function table (.gopclntab, the names
 * of a stripped Go binary; collector/ebpf/symbolize.c) on arbitrary bytes.
 * The input is the section's contents, wrapped in a minimal ELF file (a
 * header, the section, the section names) so that it goes through
 * symbolize_elf() as a real binary would. The three layouts (Go 1.2, 1.16,
 * 1.18 and later) pick by magic; every offset in the table is the input's
 * to lie about. A lookup names a function with a non-empty, NUL-terminated
 * name or nothing; nothing reads outside the section.
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_gopclntab: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

#define MAX_INPUT	(4u << 20)

static char path[] = "/tmp/fuzz_gopclntab.XXXXXX";
static int fd = -1;

static void
cleanup(void)
{
	unlink(path);
}

/* An ELF64 file: header, .gopclntab holding data, .shstrtab, three section headers. */
static int
write_elf(const uint8_t *data, size_t size)
{
	static const char names[] = "\0.gopclntab\0.shstrtab";
	Elf64_Ehdr eh;
	Elf64_Shdr sh[3];
	size_t off_data = sizeof(eh), off_names = off_data + size;
	size_t off_sh = (off_names + sizeof(names) + 7) & ~(size_t)7;

	if (fd < 0) {
		if ((fd = mkstemp(path)) < 0)
			return -1;
		atexit(cleanup);
	}
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = off_sh;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	memset(sh, 0, sizeof(sh));
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_offset = off_data;
	sh[1].sh_size = size;
	sh[1].sh_addralign = 1;
	sh[2].sh_name = 12;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = off_names;
	sh[2].sh_size = sizeof(names);
	sh[2].sh_addralign = 1;
	if (ftruncate(fd, 0) < 0 ||
	    pwrite(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    (size && pwrite(fd, data, size, (off_t)off_data) != (ssize_t)size) ||
	    pwrite(fd, names, sizeof(names), (off_t)off_names) != (ssize_t)sizeof(names) ||
	    pwrite(fd, sh, sizeof(sh), (off_t)off_sh) != (ssize_t)sizeof(sh))
		return -1;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t ino;
	struct symbolizer *s;
	struct elfobj *o;
	const char *name;
	uint64_t addr;
	size_t i;

	if (size > MAX_INPUT || write_elf(data, size) < 0 || (s = symbolize_create()) == NULL)
		return 0;
	if ((o = symbolize_elf(s, 1, ++ino, path, NULL, NULL)) != NULL) {
		/* Addresses from the table's own words: entries, text start, anything. */
		for (i = 0; i + 4 <= size && i < 256; i += 4) {
			uint32_t w;

			memcpy(&w, data + i, 4);
			for (addr = w; addr < (uint64_t)w + 2; addr++)
				if ((name = symbolize_elf_lookup(o, addr)) != NULL)
					CHECK(name[0] != '\0' && strlen(name) < size);
		}
		symbolize_elf_put(o);
	}
	symbolize_destroy(s);
	return 0;
}
