/*
 * ehframe: where the functions of an ELF file begin and end, from its
 * .eh_frame_hdr search table and the FDEs it points to. For code without a
 * symbol (a hidden function of a stripped library, found by its callers or
 * its bytes): the compiler emits one FDE per function, so an FDE's range is
 * a function's, named or not. Building unwind rows is cfi.c's business.
 *
 * Thread-safe: no shared state.
 */
#ifndef PROFILEFS_EHFRAME_H
#define PROFILEFS_EHFRAME_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#define EHFRAME_MAX	(1u << 20)	/* FDEs read per file, against corrupt tables */

/* [start, end): one function's code, ELF virtual addresses. */
struct ehrange {
	uint64_t	 start, end;
};

/*
 * The FDE ranges of e, sorted by start, into *out (malloc'd, owned by the
 * caller). Only FDEs whose begin, as encoded in the FDE, is the one the
 * search table gives are kept (the rest are skipped: encodings not read
 * here). 0, -ENOENT (no .eh_frame_hdr of a known layout), -ENOMEM.
 */
int			 ehframe_ranges(Elf *e, struct ehrange **out, size_t *n);
/* The range holding vaddr, or NULL. */
const struct ehrange	*ehframe_find(const struct ehrange *r, size_t n, uint64_t vaddr);

#endif
