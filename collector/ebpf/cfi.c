/*
 * cfi: call frame information to unwind table rows.
 *
 * libdw does the DWARF parsing: dwarf_next_cfi enumerates the CIEs and FDEs
 * of the section. An FDE's rows come from one pass over its CFA program here
 * (fast_rows): it follows the few register rules the BPF walker can use (the
 * CFA as rsp or rbp plus an offset, the return address and rbp saved at CFA +
 * N) and rows are emitted at each advance, the whole FDE in one walk. Anything
 * else in an FDE (a CFA expression, set_loc, an unknown opcode, a rule the ABI
 * default decides, overlapping FDEs, damaged CFI) hands that FDE to libdw:
 * dwarf_cfi_addrframe runs its program up to each row's pc, giving the row in
 * force there and the pc range it covers, which leaves the corner cases
 * (expressions, augmentations, .debug_frame's CIE ids) to a library Debian
 * maintains. Both give the same rows (test_cfi holds one to the other over
 * whole libraries); the one pass only saves libdw's re-run of the program from
 * the FDE's start for every row, quadratic in the rows of a long function.
 * What this file adds besides is the FDE enumeration, the reduction of each
 * row to the few rule shapes the BPF walker follows, and the compaction of
 * equal neighbours.
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
	const uint8_t	*ins, *ins_end;	/* its CFA program; ins NULL: libdw's alone */
	uint32_t	 cie;		/* index in the CIE list */
};

struct cie_enc {
	uint64_t	 off;		/* section offset of the CIE */
	uint8_t		 enc;		/* DW_EH_PE_* of its FDEs' addresses */
	bool		 z;		/* 'z' augmentation: FDEs carry sized data */
	bool		 fast;		/* its FDEs can be read by fast_rows */
	uint64_t	 caf;		/* code alignment factor */
	int64_t		 daf;		/* data alignment factor */
	const uint8_t	*init, *init_end;	/* initial instructions */
};

struct builder {
	struct cfi_table *t;
	size_t		  cap;
	int		  err;
	struct unw_row	 *tmp;		/* fast_rows' rows of one FDE */
	size_t		  ntmp, tmpcap, tmpunsup;
	bool		  slow;		/* every FDE through libdw (the reference) */
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
list_fdes(Elf *e, Elf_Data *d, uint64_t sh_addr, bool eh, struct fde **out, size_t *nout,
    struct cie_enc **cout, uint64_t *zero_end)
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
	*cout = NULL;
	*zero_end = 0;
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
			cies[ncies].z = ent.cie.augmentation != NULL &&
			    ent.cie.augmentation[0] == 'z';
			/* Augmentations other than 'z' (or none) leave unsized data. */
			cies[ncies].fast = ent.cie.augmentation != NULL &&
			    (cies[ncies].z || ent.cie.augmentation[0] == '\0');
			cies[ncies].caf = ent.cie.code_alignment_factor;
			cies[ncies].daf = ent.cie.data_alignment_factor;
			cies[ncies].init = ent.cie.initial_instructions;
			cies[ncies].init_end = ent.cie.initial_instructions_end;
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
			if (start == 0 || len == 0 || start + len < start) {
				/* libdw may still find them at low pcs: see fast_ok. */
				if (start == 0 && len > *zero_end)
					*zero_end = len;
				goto next;
			}
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
			fdes[nfdes].cie = (uint32_t)i;
			fdes[nfdes].ins = NULL;
			fdes[nfdes].ins_end = end;
			if (cies[i].fast) {
				uint64_t alen = 0;

				if (!cies[i].z)
					fdes[nfdes].ins = p;
				else if (read_uleb(&p, end, &alen) == 0 &&
				    alen <= (uint64_t)(end - p))
					fdes[nfdes].ins = p + alen;
			}
			nfdes++;
		}
next:
		if (next == (Dwarf_Off)-1 || next <= off)
			break;
		off = next;
	}
	if (nfdes > 1)
		qsort(fdes, nfdes, sizeof(*fdes), fde_cmp);
	*cout = cies;
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

/* --- one pass over an FDE's program --------------------------------------- */

#define FAST_FALLBACK	1	/* fast_rows: this FDE is libdw's */
#define FAST_STACK	16	/* remember_state depth followed */
#define FAST_MAX_REG	4096	/* larger register numbers: libdw's (it refuses huge ones) */

/* A register's rule, as far as the reduction tells them apart. */
enum { RULE_ABI, RULE_UNDEF, RULE_SAME, RULE_OFFSET, RULE_OTHER, RULE_EXPR };
/* The CFA's: ABI is the state before any definition (libdw's ABI default decides). */
enum { CFA_ABI, CFA_OFFSET, CFA_INVALID };

struct rule {
	uint8_t		 kind;
	uint64_t	 v;		/* RULE_OFFSET: CFA + v (two's complement) */
};

struct fstate {
	uint8_t		 cfa;
	uint64_t	 cfa_reg, cfa_off;
	struct rule	 rbp, rip;
};

/* rule of register reg, or NULL for one the reduction never reads */
static struct rule *
fast_reg(struct fstate *s, uint64_t reg)
{
	return reg == REG_RBP ? &s->rbp : reg == REG_RIP ? &s->rip : NULL;
}

/*
 * The row of state s at pc, reduced as fde_rows reduces libdw's frame.
 * FAST_FALLBACK where libdw's answer is needed (a rule the ABI default or an
 * expression decides).
 */
static int
fast_reduce(const struct fstate *s, uint64_t pc, struct unw_row *r)
{
	memset(r, 0, sizeof(*r));
	r->pc = (uint32_t)pc;
	r->kind = UNW_UNSUPPORTED;
	if (s->cfa == CFA_ABI)
		return FAST_FALLBACK;
	if (s->cfa == CFA_OFFSET && (s->cfa_reg == REG_RSP || s->cfa_reg == REG_RBP) &&
	    (int64_t)s->cfa_off >= 0 && (int64_t)s->cfa_off <= UINT16_MAX) {
		r->kind = s->cfa_reg == REG_RSP ? UNW_RSP : UNW_RBP;
		r->cfa_off = (uint16_t)s->cfa_off;
	}
	if (r->kind == UNW_UNSUPPORTED)
		return 0;
	switch (s->rip.kind) {
	case RULE_ABI:
	case RULE_EXPR:
		return FAST_FALLBACK;
	case RULE_UNDEF:
		*r = (struct unw_row){ .pc = (uint32_t)pc, .kind = UNW_END };
		return 0;
	case RULE_OFFSET:
		if ((int64_t)s->rip.v == -8)
			break;
		/* FALLTHROUGH */
	default:
		r->kind = UNW_UNSUPPORTED;
		r->cfa_off = 0;
		return 0;
	}
	if (s->rbp.kind == RULE_EXPR)
		return FAST_FALLBACK;
	if (s->rbp.kind == RULE_OFFSET) {
		int64_t off = (int64_t)s->rbp.v;

		if (off % 8 == 0 && off < 0 && off >= -128 * 8)
			r->rbp_off = (int8_t)(off / 8);
	}
	return 0;
}

static int
fast_emit(struct builder *b, const struct fstate *s, uint64_t pc)
{
	struct unw_row r;
	int rc;

	if ((rc = fast_reduce(s, pc, &r)) != 0)
		return rc;
	if (b->ntmp == b->tmpcap) {
		size_t nc = b->tmpcap ? b->tmpcap * 2 : 256;
		struct unw_row *nr;

		if (nc > CFI_MAX_ROWS)
			return FAST_FALLBACK;
		if ((nr = realloc(b->tmp, nc * sizeof(*nr))) == NULL)
			return -ENOMEM;
		b->tmp = nr;
		b->tmpcap = nc;
	}
	b->tmp[b->ntmp++] = r;
	b->tmpunsup += r.kind == UNW_UNSUPPORTED;
	return 0;
}

/*
 * Run the CFA program [p, end) on *s. cie: the CIE's own initial
 * instructions (no rows, no restore); else rows go to b->tmp from *loc on,
 * until the program ends or advances to fde_end. init: the CIE's state, for
 * DW_CFA_restore. 0, FAST_FALLBACK, or -errno.
 */
static int
fast_run(struct builder *b, const struct cie_enc *c, const uint8_t *p, const uint8_t *end,
    struct fstate *s, const struct fstate *init, uint64_t *loc, uint64_t fde_end, bool *done)
{
	struct fstate stack[FAST_STACK];
	unsigned depth = 0;
	uint64_t reg, off, adv, len;
	int64_t soff;
	struct rule *rl;
	int rc;

	while (p < end) {
		uint8_t op = *p++;

		adv = 0;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			adv = op & 0x3f;
			goto advance;
		case DW_CFA_offset:
			reg = op & 0x3f;
			if (read_uleb(&p, end, &off) < 0)
				return FAST_FALLBACK;
			if ((rl = fast_reg(s, reg)) != NULL)
				*rl = (struct rule){ RULE_OFFSET, off * (uint64_t)c->daf };
			continue;
		case DW_CFA_restore:
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case DW_CFA_nop:
			continue;
		case DW_CFA_advance_loc1:
			if (end - p < 1)
				return FAST_FALLBACK;
			adv = read_le(p, 1);
			p += 1;
			goto advance;
		case DW_CFA_advance_loc2:
			if (end - p < 2)
				return FAST_FALLBACK;
			adv = read_le(p, 2);
			p += 2;
			goto advance;
		case DW_CFA_advance_loc4:
			if (end - p < 4)
				return FAST_FALLBACK;
			adv = read_le(p, 4);
			p += 4;
			goto advance;
		case DW_CFA_def_cfa:
			if (read_uleb(&p, end, &reg) < 0 || read_uleb(&p, end, &off) < 0)
				return FAST_FALLBACK;
			s->cfa = CFA_OFFSET;
			s->cfa_reg = reg;
			s->cfa_off = off;
			continue;
		case DW_CFA_def_cfa_sf:
			if (read_uleb(&p, end, &reg) < 0 || read_sleb(&p, end, &soff) < 0)
				return FAST_FALLBACK;
			s->cfa = CFA_OFFSET;
			s->cfa_reg = reg;
			s->cfa_off = (uint64_t)soff * (uint64_t)c->daf;
			continue;
		case DW_CFA_def_cfa_register:
			if (read_uleb(&p, end, &reg) < 0 || s->cfa == CFA_ABI)
				return FAST_FALLBACK;
			s->cfa_reg = reg;	/* an invalid rule stays invalid */
			continue;
		case DW_CFA_def_cfa_offset:
			if (read_uleb(&p, end, &off) < 0 || s->cfa == CFA_ABI)
				return FAST_FALLBACK;
			s->cfa_off = off;
			continue;
		case DW_CFA_def_cfa_offset_sf:
			if (read_sleb(&p, end, &soff) < 0 || s->cfa == CFA_ABI)
				return FAST_FALLBACK;
			s->cfa_off = (uint64_t)soff * (uint64_t)c->daf;
			continue;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			if (read_uleb(&p, end, &reg) < 0 || reg >= FAST_MAX_REG)
				return FAST_FALLBACK;
			if ((rl = fast_reg(s, reg)) != NULL)
				*rl = (struct rule){ op == DW_CFA_undefined ? RULE_UNDEF : RULE_SAME, 0 };
			continue;
		case DW_CFA_offset_extended:
		case DW_CFA_val_offset:
			if (read_uleb(&p, end, &reg) < 0 || read_uleb(&p, end, &off) < 0 ||
			    reg >= FAST_MAX_REG)
				return FAST_FALLBACK;
			if ((rl = fast_reg(s, reg)) != NULL)
				*rl = (struct rule){ op == DW_CFA_val_offset ? RULE_OTHER : RULE_OFFSET,
				    off * (uint64_t)c->daf };
			continue;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset_sf:
			if (read_uleb(&p, end, &reg) < 0 || read_sleb(&p, end, &soff) < 0 ||
			    reg >= FAST_MAX_REG)
				return FAST_FALLBACK;
			if ((rl = fast_reg(s, reg)) != NULL)
				*rl = (struct rule){ op == DW_CFA_val_offset_sf ? RULE_OTHER :
				    RULE_OFFSET, (uint64_t)soff * (uint64_t)c->daf };
			continue;
		case DW_CFA_register:
			if (read_uleb(&p, end, &reg) < 0 || read_uleb(&p, end, &off) < 0 ||
			    reg >= FAST_MAX_REG)
				return FAST_FALLBACK;
			if ((rl = fast_reg(s, reg)) != NULL)
				*rl = (struct rule){ RULE_OTHER, 0 };
			continue;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (read_uleb(&p, end, &reg) < 0 || read_uleb(&p, end, &len) < 0 ||
			    len > (uint64_t)(end - p) || reg >= FAST_MAX_REG)
				return FAST_FALLBACK;
			p += len;
			if ((rl = fast_reg(s, reg)) != NULL)
				*rl = (struct rule){ RULE_EXPR, 0 };
			continue;
		case DW_CFA_restore_extended:
			if (read_uleb(&p, end, &reg) < 0)
				return FAST_FALLBACK;
			goto restore;
		case DW_CFA_remember_state:
			if (depth == FAST_STACK)
				return FAST_FALLBACK;
			stack[depth++] = *s;
			continue;
		case DW_CFA_restore_state:
			if (depth == 0)
				return FAST_FALLBACK;
			*s = stack[--depth];
			continue;
		case DW_CFA_GNU_args_size:
			if (read_uleb(&p, end, &off) < 0)
				return FAST_FALLBACK;
			continue;
		default:
			/* def_cfa_expression, set_loc, vendor opcodes: libdw's. */
			return FAST_FALLBACK;
		}
restore:
		if (init == NULL || reg >= FAST_MAX_REG)
			return FAST_FALLBACK;
		if ((rl = fast_reg(s, reg)) != NULL)
			*rl = reg == REG_RBP ? init->rbp : init->rip;
		continue;
advance:
		if (init == NULL)
			return FAST_FALLBACK;	/* no rows in a CIE */
		adv *= c->caf;
		if (adv == 0)
			continue;
		if (*loc + adv < *loc)
			return FAST_FALLBACK;
		if ((rc = fast_emit(b, s, *loc)) != 0)
			return rc;
		*loc += adv;
		if (*loc >= fde_end) {
			*done = true;
			return 0;
		}
	}
	return 0;
}

/*
 * Whether f (fdes[i]) can be read in one pass: libdw would find f itself at
 * every pc of it, i.e. no other FDE (nor a discarded one at 0) overlaps it.
 */
static bool
fast_ok(const struct fde *fdes, size_t nfdes, size_t i, uint64_t zero_end)
{
	const struct fde *f = &fdes[i];

	if (f->ins == NULL || f->start < zero_end)
		return false;
	if (i > 0 && fdes[i - 1].end > f->start)
		return false;
	if (i + 1 < nfdes && fdes[i + 1].start < f->end)
		return false;
	return true;
}

/*
 * The rows of FDE f in one pass, pushed as fde_rows would push them; or
 * FAST_FALLBACK with nothing pushed.
 */
static int
fast_rows(struct builder *b, const struct cie_enc *c, const struct fde *f)
{
	struct fstate init = { .cfa = CFA_ABI }, s;
	uint64_t loc = f->start;
	bool done = false;
	size_t i;
	int rc;

	if (f->end - 1 > UINT32_MAX)
		return -E2BIG;
	b->ntmp = 0;
	b->tmpunsup = 0;
	if ((rc = fast_run(b, c, c->init, c->init_end, &init, NULL, &loc, f->end, &done)) != 0)
		return rc;
	s = init;
	if ((rc = fast_run(b, c, f->ins, f->ins_end, &s, &init, &loc, f->end, &done)) != 0)
		return rc;
	if (!done && (rc = fast_emit(b, &s, loc)) != 0)
		return rc;
	for (i = 0; i < b->ntmp; i++)
		if ((rc = push_row(b, &b->tmp[i])) < 0)
			return rc;
	b->t->unsupported += b->tmpunsup;
	return 0;
}

/* The table of e; slow: every row from libdw (the reference fast_rows is held to). */
static int
build_elf(Elf *e, struct cfi_table *t, bool slow)
{
	Elf_Scn *scn = NULL, *eh = NULL, *dbg = NULL;
	GElf_Shdr sh, eh_sh = { 0 }, dbg_sh = { 0 };
	struct builder b = { .t = t, .slow = slow };
	struct fde *fdes = NULL;
	struct cie_enc *cies = NULL;
	uint64_t zero_end = 0;
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
		rc = list_fdes(e, d, eh_sh.sh_addr, true, &fdes, &nfdes, &cies, &zero_end);
	} else if (dbg) {
		if ((dw = dwarf_begin_elf(e, DWARF_C_READ, NULL)) == NULL ||
		    (cfi = dwarf_getcfi(dw)) == NULL || (d = elf_getdata(dbg, NULL)) == NULL) {
			rc = -ENOTSUP;
			goto out;
		}
		t->source = ".debug_frame";
		rc = list_fdes(e, d, dbg_sh.sh_addr, false, &fdes, &nfdes, &cies, &zero_end);
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
		rc = FAST_FALLBACK;
		if (!b.slow && s == fdes[i].start && fast_ok(fdes, nfdes, i, zero_end) &&
		    (rc = fast_rows(&b, &cies[fdes[i].cie], &fdes[i])) < 0)
			goto out;
		if (rc == FAST_FALLBACK && (rc = fde_rows(&b, cfi, s, fdes[i].end)) < 0)
			goto out;
		end = fdes[i].end;
		t->nfdes++;
	}
	rc = push_kind(&b, end, UNW_NONE);
out:
	free(fdes);
	free(cies);
	free(b.tmp);
	if (dw)
		dwarf_end(dw);
	else if (cfi)
		dwarf_cfi_end(cfi);
	if (rc < 0)
		cfi_free(t);
	return rc;
}

int
cfi_build_elf(Elf *e, struct cfi_table *t)
{
	return build_elf(e, t, false);
}

static int
build_fd(int fd, struct cfi_table *t, bool slow)
{
	Elf *e;
	int rc;

	memset(t, 0, sizeof(*t));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL || elf_kind(e) != ELF_K_ELF)
		rc = -ENOEXEC;
	else
		rc = build_elf(e, t, slow);
	if (e)
		elf_end(e);
	return rc;
}

int
cfi_build_fd(int fd, struct cfi_table *t)
{
	return build_fd(fd, t, false);
}

static int
build_path(const char *path, struct cfi_table *t, bool slow)
{
	int fd, rc;

	memset(t, 0, sizeof(*t));
	if ((fd = symbolize_open(path, true, 0)) < 0)
		return fd;
	rc = build_fd(fd, t, slow);
	close(fd);
	return rc;
}

int
cfi_build(const char *path, struct cfi_table *t)
{
	return build_path(path, t, false);
}

int
cfi_build_reference(const char *path, struct cfi_table *t)
{
	return build_path(path, t, true);
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
