/*
 * fuzz_debuginfod: a debuginfod server's answer (collector/ebpf/debuginfod.c)
 * on arbitrary bytes: the build-id note reader and the validation the worker
 * runs before a download enters the cache, then the answer put in the cache
 * as the debug file of a stripped binary with that build id, read by the
 * symbolizer as the sampler would once the fetch ends. Either the answer is
 * refused with a reason, or its build id is hex, it validates against that
 * id only, and every lookup names a function with a non-empty name or
 * nothing; nothing leaks or crashes.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfod.h"
#include "symbolize.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_debuginfod: %s:%d: %s\n", \
	__FILE__, __LINE__, #x); abort(); } } while (0)

static char dir[] = "/tmp/fuzz_debuginfod.XXXXXX";
static char input[64], mainbin[64], cached[128];
static struct dbginfod *dbg;

static void
cleanup(void)
{
	char path[128];

	dbginfod_destroy(dbg);
	unlink(input);
	unlink(mainbin);
	unlink(cached);
	snprintf(path, sizeof(path), "%s/debuginfo", dir);
	rmdir(path);
	rmdir(dir);
}

static int
write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = 0;

	if (fd < 0)
		return -1;
	if (n && write(fd, p, n) != (ssize_t)n)
		rc = -1;
	close(fd);
	return rc;
}

/*
 * A stripped x86-64 shared object with only a loadable segment and the
 * build-id note of hex: what the sampler sees of a binary whose debug file
 * comes from debuginfod.
 */
static int
write_main(const char *hex)
{
	unsigned char img[1024] = { 0 }, id[20];
	static const char shstr[] = "\0.note.gnu.build-id\0.shstrtab";
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	Elf64_Shdr *sh;
	Elf64_Nhdr *nh;
	size_t n = strlen(hex) / 2, i, note = 128, str, shoff;
	unsigned v;

	for (i = 0; i < n; i++) {
		sscanf(hex + 2 * i, "%2x", &v);
		id[i] = (unsigned char)v;
	}
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	nh = (Elf64_Nhdr *)(img + note);
	nh->n_namesz = 4;
	nh->n_descsz = (Elf64_Word)n;
	nh->n_type = NT_GNU_BUILD_ID;
	memcpy(img + note + sizeof(*nh), "GNU", 4);
	memcpy(img + note + sizeof(*nh) + 4, id, n);
	str = note + sizeof(*nh) + 4 + ((n + 3) & ~(size_t)3);
	memcpy(img + str, shstr, sizeof(shstr));
	shoff = (str + sizeof(shstr) + 7) & ~(size_t)7;
	eh->e_shoff = shoff;
	sh = (Elf64_Shdr *)(img + shoff);
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_NOTE;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_addr = note;
	sh[1].sh_offset = note;
	sh[1].sh_size = str - note;
	sh[1].sh_addralign = 4;
	sh[2].sh_name = 20;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = str;
	sh[2].sh_size = sizeof(shstr);
	sh[2].sh_addralign = 1;
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_filesz = ph->p_memsz = shoff + 3 * sizeof(*sh);
	ph->p_align = 0x1000;
	return write_file(mainbin, img, shoff + 3 * sizeof(*sh));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t ino;
	char id[41], other[41];
	struct symbolizer *s;
	struct elfobj *o;
	const char *why, *name, *file;
	int64_t line;
	uint64_t addr;
	size_t i;
	int fd, rc;

	if (dbg == NULL) {
		if (mkdtemp(dir) == NULL || dbginfod_create("", dir, 0, &dbg) < 0)
			return 0;
		snprintf(input, sizeof(input), "%s/input", dir);
		snprintf(mainbin, sizeof(mainbin), "%s/main", dir);
		atexit(cleanup);
	}
	if (write_file(input, data, size) < 0 || (fd = open(input, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	rc = dbginfod_build_id(fd, id);
	CHECK(rc == 0 || rc == -ENOEXEC || rc == -ENOENT);
	CHECK(rc == 0 || id[0] == '\0');
	CHECK(strlen(id) <= 40 && strspn(id, "0123456789abcdef") == strlen(id));
	/* Never valid for another build id, nor past the size bound. */
	snprintf(other, sizeof(other), "%s", rc == 0 && strcmp(id, "00") == 0 ? "01" : "00");
	CHECK(dbginfod_validate(fd, other, 1u << 30, &why) < 0 && why != NULL);
	if (size > 0)
		CHECK(dbginfod_validate(fd, id, size - 1, &why) < 0 && why != NULL);
	if (rc == 0)
		CHECK(dbginfod_validate(fd, id, size, &why) == 0);
	close(fd);
	if (rc != 0 || strlen(id) < 2 || write_main(id) < 0)
		return 0;
	/* In the cache, as the worker leaves it; the symbolizer reads it as a debug file. */
	snprintf(cached, sizeof(cached), "%s/debuginfo/%s.debug", dir, id);
	if (rename(input, cached) < 0 || (s = symbolize_create()) == NULL)
		return 0;
	symbolize_set_debuginfod(s, dbg);
	if ((o = symbolize_elf(s, 1, ++ino, mainbin, NULL, NULL)) != NULL) {
		CHECK(strcmp(symbolize_elf_build_id(o), id) == 0);
		for (i = 0; i < 24; i++) {
			addr = 0x40 * i;
			if (i < 8 && size >= 8) {
				memcpy(&addr, data, 8);
				addr += i;
			}
			if ((name = symbolize_elf_lookup(o, addr)) != NULL)
				CHECK(name[0] != '\0');
			symbolize_elf_resolve(s, o, addr, &name, &file, &line);
			CHECK(name == NULL || name[0] != '\0');
			CHECK(file != NULL || line == 0);
		}
		symbolize_elf_put(o);
	}
	symbolize_debuginfod_poll(s);
	symbolize_destroy(s);
	unlink(cached);
	return 0;
}
