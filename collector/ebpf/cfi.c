/*
 * cfi: call frame information to unwind table rows.
 *
 * libdw does the DWARF work: dwarf_next_cfi enumerates the CIEs and FDEs of
 * the section and dwarf_cfi_addrframe runs an FDE's CFA program up to a pc,
 * giving the row in force there and the pc range it covers. Using it, rather
 * than a DW_CFA interpreter of our own, leaves the corner cases (remember and
 * restore state, advance_loc widths, augmentations, .debug_frame's CIE ids)
 * to a library Debian maintains and that readelf's own authors test. What
 * this file adds is the FDE enumeration (libdw has no call for "every row"),
 * the reduction of each row to the few rule shapes the BPF walker follows, and
 * the compaction of equal neighbours.
 *
 * Only x86-64 rules are reduced (DWARF registers 6 rbp, 7 rsp, 16 rip).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "symbolize.h"
#include "cfi.h"

#define REG_RBP		6
#define REG_RSP		7
#define REG_RIP		16
#define MAX_CIES	4096

struct fde {
	uint64_t	 start, end;
};

struct cie_enc {
	uint64_t	 off;		/* section offset of the CIE */
	uint8_t		 enc;		/* DW_EH_PE_* of its FDEs' addresses */
};

struct builder {
	struct cfi_table *t;
	size_t		  cap;
	int		  err;
};

/* --- pointer encodings (.eh_frame) ---------------------------------------- */

/* ULEB128 is a protobuf varint. */
static int
read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return varint_get(p, end, v);
}

static int
read_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	unsigned shift = 0;
	uint64_t r = 0;
	uint8_t b = 0;

	while (*p < end && shift < 64) {
		b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				r |= ~(uint64_t)0 << shift;
			*v = (int64_t)r;
			return 0;
		}
	}
	return -EINVAL;
}

static uint64_t
read_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * One encoded pointer at *p (advanced past it). here: the address of the
 * field itself, for pc-relative values. Only what FDEs use: absolute and
 * pc-relative, any width; datarel/textrel/indirect are refused.
 */
static int
read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t here, uint64_t *v)
{
	const uint8_t *s = *p;
	int64_t sv;
	unsigned n;

	if (enc == DW_EH_PE_omit)
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		n = 2;
		break;
	case DW_EH_PE_uleb128:
		if (read_uleb(p, end, v) < 0)
			return -EINVAL;
		n = 0;
		break;
	case DW_EH_PE_sleb128:
		if (read_sleb(p, end, &sv) < 0)
			return -EINVAL;
		*v = (uint64_t)sv;
		n = 0;
		break;
	default:
		return -EINVAL;
	}
	if (n) {
		if ((size_t)(end - *p) < n)
			return -EINVAL;
		*v = read_le(*p, n);
		if ((enc & 0x0f) == DW_EH_PE_sdata4)
			*v = (uint64_t)(int64_t)(int32_t)*v;
		else if ((enc & 0x0f) == DW_EH_PE_sdata2)
			*v = (uint64_t)(int64_t)(int16_t)*v;
		*p += n;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		*v += here;
		break;
	default:
		return -EINVAL;
	}
	(void)s;
	return 0;
}

/* The FDE address encoding of a CIE: its 'R' augmentation, else absptr. */
static uint8_t
cie_fde_enc(const Dwarf_CIE *c)
{
	const uint8_t *d = c->augmentation_data, *end;
	const char *a = c->augmentation;
	uint64_t skip;

	if (a == NULL || a[0] != 'z' || d == NULL)
		return DW_EH_PE_absptr;
	end = d + c->augmentation_data_size;
	for (a++; *a && d < end; a++) {
		switch (*a) {
		case 'R':
			return *d;
		case 'L':
			d++;
			break;
		case 'P': {
			uint8_t penc = *d++;

			/* The personality pointer: skipped, whatever its width. */
			if (read_encoded(&d, end, penc & 0x0f, 0, &skip) < 0)
				return DW_EH_PE_omit;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return DW_EH_PE_omit;
		}
	}
	return DW_EH_PE_absptr;
}

static int
fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * Every FDE's [start, end) in section data d (at address sh_addr), sorted.
 * eh: .eh_frame layout (else .debug_frame, addresses absolute).
 */
static int
list_fdes(Elf *e, Elf_Data *d, uint64_t sh_addr, bool eh, struct fde **out, size_t *nout)
{
	struct cie_enc *cies = NULL;
	struct fde *fdes = NULL;
	size_t ncies = 0, ciecap = 0, nfdes = 0, cap = 0, i;
	const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;
	int rc = 0, r;

	*out = NULL;
	*nout = 0;
	if (ident == NULL)
		return -EINVAL;
	while (off < d->d_size) {
		r = dwarf_next_cfi(ident, d, eh, off, &next, &ent);
		if (r == 1)
			break;
		if (r < 0) {
			/* Some damage lets the next entry be read; otherwise stop. */
			if (next == (Dwarf_Off)-1 || next <= off)
				break;
			off = next;
			continue;
		}
		if (dwarf_cfi_cie_p(&ent)) {
			if (ncies >= MAX_CIES) {
				rc = -E2BIG;
				goto fail;
			}
			cies = xgrow(cies, &ciecap, ncies + 1, sizeof(*cies));
			cies[ncies].off = off;
			cies[ncies].enc = eh ? cie_fde_enc(&ent.cie) : DW_EH_PE_absptr;
			ncies++;
		} else {
			const uint8_t *p = ent.fde.start, *end = ent.fde.end;
			uint64_t start, len, here;
			uint8_t enc = DW_EH_PE_omit;

			for (i = 0; i < ncies; i++)
				if (cies[i].off == ent.fde.CIE_pointer) {
					enc = cies[i].enc;
					break;
				}
			if (i == ncies || enc == DW_EH_PE_omit)
				goto next;
			here = sh_addr + (uint64_t)(p - (const uint8_t *)d->d_buf);
			if (!eh)
				enc = DW_EH_PE_udata8;
			if (read_encoded(&p, end, enc, here, &start) < 0 ||
			    read_encoded(&p, end, enc & 0x0f, 0, &len) < 0)
				goto next;
			/* Discarded functions keep FDEs at 0 (or wrap around). */
			if (start == 0 || len == 0 || start + len < start)
				goto next;
			if (nfdes == cap) {
				struct fde *nf;

				cap = cap ? cap * 2 : 1024;
				if (cap > CFI_MAX_ROWS) {
					rc = -E2BIG;
					goto fail;
				}
				if ((nf = realloc(fdes, cap * sizeof(*nf))) == NULL) {
					rc = -ENOMEM;
					goto fail;
				}
				fdes = nf;
			}
			fdes[nfdes].start = start;
			fdes[nfdes].end = start + len;
			nfdes++;
		}
next:
		if (next == (Dwarf_Off)-1 || next <= off)
			break;
		off = next;
	}
	if (nfdes > 1)
		qsort(fdes, nfdes, sizeof(*fdes), fde_cmp);
	free(cies);
	*out = fdes;
	*nout = nfdes;
	return 0;
fail:
	free(cies);
	free(fdes);
	return rc;
}

/* --- rows ----------------------------------------------------------------- */

static bool
is_breg(const Dwarf_Op *o, unsigned reg, int64_t *off)
{
	if (o->atom == DW_OP_bregx && o->number == reg) {
		*off = (int64_t)o->number2;
		return true;
	}
	if (o->atom == DW_OP_breg0 + reg) {
		*off = (int64_t)o->number;
		return true;
	}
	return false;
}

/* The offset N of a register saved at CFA + N, as libdw spells that rule. */
static bool
is_cfa_offset(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* Reduce the CFA rule of a row to a kind and offset (kind UNW_UNSUPPORTED if it cannot). */
static void
reduce_cfa(const Dwarf_Op *ops, size_t n, bool signal, struct unw_row *r)
{
	int64_t off;

	r->kind = UNW_UNSUPPORTED;
	if (n == 1 && (is_breg(&ops[0], REG_RSP, &off) || is_breg(&ops[0], REG_RBP, &off))) {
		if (off < 0 || off > UINT16_MAX)
			return;
		r->kind = is_breg(&ops[0], REG_RSP, &off) ? UNW_RSP : UNW_RBP;
		r->cfa_off = (uint16_t)off;
		return;
	}
	/* A realigning prologue saves the CFA below rbp: CFA = *(rbp - N). */
	if (n == 2 && is_breg(&ops[0], REG_RBP, &off) && ops[1].atom == DW_OP_deref) {
		if (off > 0 || -off > UINT16_MAX)
			return;
		r->kind = UNW_DEREF;
		r->cfa_off = (uint16_t)-off;
		return;
	}
	/* Kernel and glibc signal trampolines: rsp points at a ucontext. */
	if (signal && n == 2 && is_breg(&ops[0], REG_RSP, &off) && off == 160 &&
	    ops[1].atom == DW_OP_deref) {
		r->kind = UNW_SIGNAL;
		return;
	}
	/*
	 * The lazy-binding PLT: rsp + N, plus 8 once the stub has pushed its
	 * index (the pc's low nibble at or past a threshold, 11 or 10).
	 */
	if (n == 9 && is_breg(&ops[0], REG_RSP, &off) && is_breg(&ops[1], REG_RIP, &(int64_t){ 0 }) &&
	    ops[2].atom == DW_OP_lit15 && ops[3].atom == DW_OP_and &&
	    ops[4].atom >= DW_OP_lit0 && ops[4].atom <= DW_OP_lit31 &&
	    ops[5].atom == DW_OP_ge && ops[6].atom == DW_OP_lit3 && ops[7].atom == DW_OP_shl &&
	    ops[8].atom == DW_OP_plus) {
		if (off < 0 || off > UINT16_MAX)
			return;
		r->kind = UNW_PLT;
		r->cfa_off = (uint16_t)off;
		r->rbp_off = (int8_t)(ops[4].atom - DW_OP_lit0);
	}
}

static int
push_row(struct builder *b, const struct unw_row *r)
{
	struct cfi_table *t = b->t;

	if (t->nrows > 0) {
		struct unw_row *last = &t->rows[t->nrows - 1];

		if (last->pc == r->pc) {
			/* A zero-length row (or an FDE ending where it started): replace. */
			*last = *r;
			goto merge;
		}
		if (last->kind == r->kind && last->cfa_off == r->cfa_off &&
		    last->rbp_off == r->rbp_off)
			return 0;
	}
	if (t->nrows >= CFI_MAX_ROWS)
		return -E2BIG;
	if (t->nrows == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 4096;
		struct unw_row *nr = realloc(t->rows, nc * sizeof(*nr));

		if (nr == NULL)
			return -ENOMEM;
		t->rows = nr;
		b->cap = nc;
	}
	t->rows[t->nrows++] = *r;
	return 0;
merge:
	/* The replaced row may now equal the one before it. */
	if (t->nrows > 1) {
		struct unw_row *a = &t->rows[t->nrows - 2], *z = &t->rows[t->nrows - 1];

		if (a->kind == z->kind && a->cfa_off == z->cfa_off && a->rbp_off == z->rbp_off)
			t->nrows--;
	}
	return 0;
}

static int
push_kind(struct builder *b, uint64_t pc, uint8_t kind)
{
	struct unw_row r = { .pc = (uint32_t)pc, .kind = kind };

	if (pc > UINT32_MAX)
		return -E2BIG;
	return push_row(b, &r);
}

/* The rows of one FDE [start, end), as libdw's frames at successive pcs give them. */
static int
fde_rows(struct builder *b, Dwarf_CFI *cfi, uint64_t start, uint64_t end)
{
	uint64_t a = start;
	int rc;

	if (end - 1 > UINT32_MAX)
		return -E2BIG;
	while (a < end) {
		Dwarf_Op mem[3], *ops;
		Dwarf_Addr s, e;
		Dwarf_Frame *f;
		struct unw_row r;
		size_t n;
		bool sig;
		int64_t off;

		if (dwarf_cfi_addrframe(cfi, a, &f) != 0)
			return push_kind(b, a, UNW_UNSUPPORTED);
		memset(&r, 0, sizeof(r));
		r.pc = (uint32_t)a;
		if (dwarf_frame_info(f, &s, &e, &sig) < 0 || e <= a) {
			free(f);
			return push_kind(b, a, UNW_UNSUPPORTED);
		}
		if (dwarf_frame_cfa(f, &ops, &n) < 0 || n == 0)
			r.kind = UNW_UNSUPPORTED;
		else
			reduce_cfa(ops, n, sig, &r);
		if (r.kind != UNW_SIGNAL && r.kind != UNW_UNSUPPORTED &&
		    dwarf_frame_register(f, REG_RIP, mem, &ops, &n) == 0) {
			if (n == 0 && ops != NULL)
				r = (struct unw_row){ .pc = (uint32_t)a, .kind = UNW_END };
			else if (!is_cfa_offset(ops, n, &off) || off != -8)
				r.kind = UNW_UNSUPPORTED;
		}
		if (r.kind == UNW_RSP || r.kind == UNW_RBP || r.kind == UNW_DEREF) {
			/* rbp kept (or not recoverable) unless saved at CFA + 8k. */
			if (dwarf_frame_register(f, REG_RBP, mem, &ops, &n) == 0 &&
			    is_cfa_offset(ops, n, &off) && off % 8 == 0 && off < 0 &&
			    off >= -128 * 8)
				r.rbp_off = (int8_t)(off / 8);
		}
		if (r.kind == UNW_UNSUPPORTED) {
			r.cfa_off = 0;
			r.rbp_off = 0;
			b->t->unsupported++;
		}
		free(f);
		if ((rc = push_row(b, &r)) < 0)
			return rc;
		a = e;
	}
	return 0;
}

int
cfi_build_elf(Elf *e, struct cfi_table *t)
{
	Elf_Scn *scn = NULL, *eh = NULL, *dbg = NULL;
	GElf_Shdr sh, eh_sh = { 0 }, dbg_sh = { 0 };
	struct builder b = { .t = t };
	struct fde *fdes = NULL;
	size_t nfdes = 0, shstrndx, i;
	Dwarf_CFI *cfi = NULL;
	Dwarf *dw = NULL;
	Elf_Data *d;
	GElf_Ehdr eh_hdr;
	uint64_t end = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	if (gelf_getehdr(e, &eh_hdr) == NULL || elf_getshdrstrndx(e, &shstrndx) != 0)
		return -ENOEXEC;
	if (eh_hdr.e_machine != EM_X86_64 || eh_hdr.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOTSUP;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(e, shstrndx, sh.sh_name)) == NULL)
			continue;
		/* Go keeps frame pointers and writes no .eh_frame: walk it as before. */
		if (strcmp(name, ".gopclntab") == 0)
			return -ENOTSUP;
		if (strcmp(name, ".eh_frame") == 0 && sh.sh_type != SHT_NOBITS) {
			eh = scn;
			eh_sh = sh;
		} else if (strcmp(name, ".debug_frame") == 0 && sh.sh_type != SHT_NOBITS &&
		    !(sh.sh_flags & SHF_COMPRESSED)) {
			dbg = scn;
			dbg_sh = sh;
		}
	}
	if (eh) {
		if ((cfi = dwarf_getcfi_elf(e)) == NULL || (d = elf_getdata(eh, NULL)) == NULL) {
			rc = -ENOTSUP;
			goto out;
		}
		t->source = ".eh_frame";
		rc = list_fdes(e, d, eh_sh.sh_addr, true, &fdes, &nfdes);
	} else if (dbg) {
		if ((dw = dwarf_begin_elf(e, DWARF_C_READ, NULL)) == NULL ||
		    (cfi = dwarf_getcfi(dw)) == NULL || (d = elf_getdata(dbg, NULL)) == NULL) {
			rc = -ENOTSUP;
			goto out;
		}
		t->source = ".debug_frame";
		rc = list_fdes(e, d, dbg_sh.sh_addr, false, &fdes, &nfdes);
	} else {
		return -ENOTSUP;
	}
	if (rc < 0)
		goto out;
	if (nfdes == 0) {
		rc = -ENOTSUP;
		goto out;
	}
	for (i = 0; i < nfdes; i++) {
		uint64_t s = fdes[i].start;

		if (fdes[i].end <= end)
			continue;	/* inside the one before (duplicates, nested) */
		if (s < end)
			s = end;
		else if (s > end && end != 0 && (rc = push_kind(&b, end, UNW_NONE)) < 0)
			goto out;
		if ((rc = fde_rows(&b, cfi, s, fdes[i].end)) < 0)
			goto out;
		end = fdes[i].end;
		t->nfdes++;
	}
	rc = push_kind(&b, end, UNW_NONE);
out:
	free(fdes);
	if (dw)
		dwarf_end(dw);
	else if (cfi)
		dwarf_cfi_end(cfi);
	if (rc < 0)
		cfi_free(t);
	return rc;
}

int
cfi_build_fd(int fd, struct cfi_table *t)
{
	Elf *e;
	int rc;

	memset(t, 0, sizeof(*t));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL || elf_kind(e) != ELF_K_ELF)
		rc = -ENOEXEC;
	else
		rc = cfi_build_elf(e, t);
	if (e)
		elf_end(e);
	return rc;
}

int
cfi_build(const char *path, struct cfi_table *t)
{
	int fd, rc;

	memset(t, 0, sizeof(*t));
	if ((fd = symbolize_open(path, true, 0)) < 0)
		return fd;
	rc = cfi_build_fd(fd, t);
	close(fd);
	return rc;
}

void
cfi_free(struct cfi_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->nrows = 0;
}

const struct unw_row *
cfi_lookup(const struct cfi_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? NULL : &t->rows[lo - 1];
}
