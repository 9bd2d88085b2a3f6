/*
 * cfi: compact unwind tables from an ELF file's call frame information
 * (.eh_frame, else .debug_frame), for the BPF stack walker (bpf/profile.bpf.c).
 * Each row (struct unw_row, bpf/profile.h) says, from its pc up to the next
 * row's, where the canonical frame address is (rsp or rbp plus an offset, or
 * one of the few expressions compilers emit: PLT stubs, stack realignment,
 * signal trampolines) and where the caller's rbp was saved; the return address
 * is at CFA - 8 on x86-64. Loading tables into BPF maps is unwind.c's business.
 *
 * Thread-safe: no shared state.
 */
#ifndef PROFILEFS_CFI_H
#define PROFILEFS_CFI_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define CFI_MAX_ROWS	(4u << 20)	/* per file, against corrupt or hostile CFI */

struct cfi_table {
	struct unw_row	*rows;		/* sorted by pc */
	size_t		 nrows;
	size_t		 nfdes;		/* FDEs read */
	size_t		 unsupported;	/* rows marked UNW_UNSUPPORTED */
	const char	*source;	/* ".eh_frame" or ".debug_frame" (static) */
};

/*
 * Build the table of an ELF file (path, or an open fd) or of an ELF image
 * already open (e).
 * -ENOTSUP: no usable CFI (a Go binary, which keeps frame pointers, or a file
 * without .eh_frame/.debug_frame, or not x86-64); -E2BIG: more than
 * CFI_MAX_ROWS rows or code above 4 GiB. On success *t is filled and owned by
 * the caller (cfi_free).
 */
int	cfi_build(const char *path, struct cfi_table *t);
int	cfi_build_fd(int fd, struct cfi_table *t);	/* fd stays open */
int	cfi_build_elf(Elf *e, struct cfi_table *t);
/*
 * The same table with every row asked of libdw (dwarf_cfi_addrframe at each
 * row's pc) rather than one pass per FDE: slower, the reference the tests
 * hold cfi_build to.
 */
int	cfi_build_reference(const char *path, struct cfi_table *t);
void	cfi_free(struct cfi_table *t);
/* The row covering ELF address pc, or NULL (before the first row). */
const struct unw_row *cfi_lookup(const struct cfi_table *t, uint64_t pc);

#endif
