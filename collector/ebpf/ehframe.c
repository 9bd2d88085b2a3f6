/*
 * ehframe: function bounds from .eh_frame_hdr (see ehframe.h).
 *
 * The search table, as GCC and the linkers lay it out on x86-64 (other
 * encodings are refused):
 *
 *   offset  size  field
 *        0     1  version (1)
 *        1     1  eh_frame_ptr encoding
 *        2     1  fde_count encoding (0x03: udata4)
 *        3     1  table encoding (0x3b: sdata4 relative to the table's start)
 *        4     4  eh_frame_ptr
 *        8     4  fde_count
 *       12   8*n  (initial location, FDE address) pairs, sorted
 *
 * An FDE: length (u32; 0xffffffff, a 64-bit FDE, is skipped), CIE pointer
 * (u32, not 0), then its begin and range in the CIE's encoding: pcrel
 * sdata4 (begin relative to its own field) with a udata4 range, or an
 * absolute 8-byte begin and range. The encoding is not read from the CIE:
 * the begin is checked against the table's location instead.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "ehframe.h"

#define DW_EH_PE_udata4		0x03
#define DW_EH_PE_datarel_sdata4	0x3b
#define RANGE_MAX		(1u << 30)

static uint32_t
u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t
u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The section named name: its data and address, or NULL. */
static Elf_Data *
section(Elf *e, size_t shstrndx, const char *name, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *nm;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    (nm = elf_strptr(e, shstrndx, sh.sh_name)) == NULL || strcmp(nm, name) != 0)
			continue;
		*vaddr = sh.sh_addr;
		return elf_getdata(scn, NULL);
	}
	return NULL;
}

int
ehframe_ranges(Elf *e, struct ehrange **out, size_t *n)
{
	Elf_Data *hd, *fd;
	uint64_t hv = 0, fv = 0, cnt, i;
	const uint8_t *h, *f;
	struct ehrange *r;
	size_t shstrndx, k = 0;

	*out = NULL;
	*n = 0;
	if (elf_getshdrstrndx(e, &shstrndx) != 0 ||
	    (hd = section(e, shstrndx, ".eh_frame_hdr", &hv)) == NULL || hd->d_buf == NULL ||
	    (fd = section(e, shstrndx, ".eh_frame", &fv)) == NULL || fd->d_buf == NULL ||
	    hd->d_size < 12)
		return -ENOENT;
	h = hd->d_buf;
	f = fd->d_buf;
	if (h[0] != 1 || h[2] != DW_EH_PE_udata4 || h[3] != DW_EH_PE_datarel_sdata4)
		return -ENOENT;
	cnt = u32_at(h + 8);
	if (cnt == 0 || cnt > EHFRAME_MAX || 12 + cnt * 8 > hd->d_size)
		return -ENOENT;
	if ((r = malloc(cnt * sizeof(*r))) == NULL)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		uint64_t loc = hv + (uint64_t)(int64_t)(int32_t)u32_at(h + 12 + i * 8);
		uint64_t fde = hv + (uint64_t)(int64_t)(int32_t)u32_at(h + 16 + i * 8), off, len;
		uint64_t range;

		if (fde < fv || (off = fde - fv) + 24 > fd->d_size)
			continue;
		len = u32_at(f + off);
		if (len < 12 || len == 0xffffffffu || u32_at(f + off + 4) == 0 ||
		    off + 4 + len > fd->d_size)
			continue;
		if (fde + 8 + (uint64_t)(int64_t)(int32_t)u32_at(f + off + 8) == loc)
			range = u32_at(f + off + 12);
		else if (len >= 20 && u64_at(f + off + 8) == loc)
			range = u64_at(f + off + 16);
		else
			continue;
		if (range == 0 || range > RANGE_MAX || loc + range < loc)
			continue;
		/* The table is sorted: an entry out of order is a corrupt one. */
		if (k > 0 && loc < r[k - 1].start)
			continue;
		r[k].start = loc;
		r[k++].end = loc + range;
	}
	if (k == 0) {
		free(r);
		return -ENOENT;
	}
	*out = r;
	*n = k;
	return 0;
}

const struct ehrange *
ehframe_find(const struct ehrange *r, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || vaddr >= r[lo - 1].end)
		return NULL;
	return &r[lo - 1];
}
