/*
 * golabels: Go's pprof labels on eBPF samples (see golabels.h).
 *
 * Where the labels are. A goroutine's labels hang off its g (runtime.g's
 * labels field, an unsafe.Pointer to runtime/pprof's labelMap), which
 * runtime.m's curg names for the thread running it; the BPF side finds g in
 * TLS (bpf/golabels.bpf.h). The offsets of g.m, g.labels and m.curg, and what
 * labelMap is (a map[string]string up to Go 1.23, a slice of pairs from
 * 1.24), come from the executable's DWARF when it has some (go build keeps
 * it unless -ldflags=-w): runtime.g, runtime.m, runtime.hmap and
 * bucket<string,string>, and labelMap's Go kind (DW_AT_go_kind: map or
 * struct, whose LabelSet, list slice and label pair must be laid out as
 * the walk reads them). A binary without DWARF gets the offsets of its Go
 * version (from .go.buildinfo): the map layout for Go 1.17 to 1.23, the
 * slice for 1.24; a stripped binary of a later Go is left without labels
 * rather than read with guessed offsets.
 * The result is kept per file (device, inode, build id; without a build id
 * also size and mtime), negative ones too: every new process on the host
 * asks.
 *
 * Why the strings travel in the sample instead of the labelMap's address:
 * label sets are garbage collected and their memory reused, by other label
 * sets too, so an address read later from user space can name another set
 * by then; at the sample the goroutine holds its set. The bytes are bounded
 * there (profile.h).
 *
 * Labels as series. A selector selects series, so a Go label set becomes the
 * series labels of its samples (with the process's own: host, unit, ...), one
 * profile per set per period as Go's pushed profiles labelled by the client.
 * Label values such as request ids would make a series per request: within
 * an hour (GOLABELS_WINDOW_NS) a service gets at most
 * GOLABELS_SETS_PER_SERVICE sets as series, the first ones seen; samples of
 * later sets go to the process's plain series. Either way the pairs are
 * pprof sample labels as well, as in Go's own CPU profiles (go tool pprof
 * -tags). Pairs whose key is one of the process's series labels (or
 * service_name, which selectors read as the service) stay sample labels only,
 * as do span ids (span_id, span_name, trace_id: per sample, store/span.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base.h"
#include "golabels.h"

#define FILE_CACHE	64	/* executables whose result is remembered */
/*
 * An executable is anyone's: its DWARF is read within bounds, .debug_info
 * of at most MAX_DEBUG_INFO bytes once decompressed (charged to the memory
 * budget while read) and at most MAX_DIES top-level entries looked at.
 * Go's own largest binaries stay well below both.
 */
#define MAX_DEBUG_INFO	(128u << 20)
#define MAX_DIES	(4u << 20)
#define DW_AT_GO_KIND	0x2900	/* Go's own attribute: the type's reflect.Kind */
#define GO_KIND_MAP	21
#define GO_KIND_STRUCT	25

/*
 * One executable's answer. A file without a build id (go build writes none
 * of the GNU kind) may be rewritten in place: its size and mtime must agree.
 */
struct gofile {
	uint64_t	 dev, ino;
	char		 build_id[41];
	int64_t		 size, mtime_ns;	/* without a build id */
	bool		 used;
	bool		 go;		/* val is usable */
	struct go_proc	 val;
};

/* One label set seen in this window: the key is service \0 p's labels \0 Go pairs. */
struct goset {
	char		*series;	/* NULL: refused, the samples go to p's series */
	size_t		 n;
	const char	*keys[PROF_MAX_GOLABELS], *values[PROF_MAX_GOLABELS];
	char		*strs;		/* keys and values, NUL-terminated, back to back */
};

struct golabels {
	int		 procs_fd;
	struct gofile	 files[FILE_CACHE];
	size_t		 next_file;
	struct intern	*keys;		/* -> sets */
	struct goset	*sets;
	size_t		 nsets, cap;
	struct goset	 scratch;	/* a set not remembered: the last sample's */
	struct intern	*svcs;		/* service -> svc_sets */
	uint32_t	*svc_sets;	/* admitted sets per service */
	size_t		 svc_cap;
	int64_t		 window_start;
	struct golabels_stats st;
};

struct golabels *
golabels_create(int procs_fd)
{
	struct golabels *gl = calloc(1, sizeof(*gl));

	if (gl == NULL)
		return NULL;
	gl->procs_fd = procs_fd;
	if ((gl->keys = intern_create(64)) == NULL || (gl->svcs = intern_create(16)) == NULL) {
		golabels_destroy(gl);
		return NULL;
	}
	return gl;
}

static void
sets_clear(struct golabels *gl)
{
	size_t i;

	for (i = 0; i < gl->nsets; i++) {
		free(gl->sets[i].series);
		free(gl->sets[i].strs);
	}
	gl->nsets = 0;
}

void
golabels_destroy(struct golabels *gl)
{
	if (gl == NULL)
		return;
	sets_clear(gl);
	free(gl->sets);
	free(gl->scratch.strs);
	free(gl->svc_sets);
	intern_destroy(gl->keys);
	intern_destroy(gl->svcs);
	free(gl);
}

void
golabels_forget(struct golabels *gl, struct proc *p)
{
	if (gl && p->go && !p->gone)
		(void)bpf_map_delete_elem(gl->procs_fd, &p->pid);
	p->go = false;
}

void
golabels_period(struct golabels *gl, int64_t now)
{
	struct intern *k, *s;

	if (gl == NULL)
		return;
	if (gl->window_start == 0)
		gl->window_start = now;
	if (now - gl->window_start < GOLABELS_WINDOW_NS)
		return;
	if ((k = intern_create(64)) == NULL || (s = intern_create(16)) == NULL) {
		intern_destroy(k);
		return;		/* out of memory: the old window goes on */
	}
	sets_clear(gl);
	intern_destroy(gl->keys);
	intern_destroy(gl->svcs);
	gl->keys = k;
	gl->svcs = s;
	gl->window_start = now;
}

void
golabels_get_stats(const struct golabels *gl, struct golabels_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (gl == NULL)
		return;
	*st = gl->st;
	st->sets = gl->nsets;
}

/* --- the Go version ------------------------------------------------------ */

/* An unsigned varint at *i of b (len bytes): 0, or -EINVAL. */
static int
uvarint(const uint8_t *b, size_t len, size_t *i, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*i < len && shift < 64) {
		uint8_t c = b[(*i)++];

		*v |= (uint64_t)(c & 0x7f) << shift;
		if ((c & 0x80) == 0)
			return 0;
		shift += 7;
	}
	return -EINVAL;
}

/* "go1.21.3", "go1.22rc1", "devel go1.23-abc..." -> 1, 21. */
static int
parse_version(const char *s, size_t len, int *major, int *minor)
{
	char v[64];
	const char *g;

	if (len >= sizeof(v))
		len = sizeof(v) - 1;
	memcpy(v, s, len);
	v[len] = '\0';
	if ((g = strstr(v, "go")) == NULL || sscanf(g, "go%d.%d", major, minor) != 2 ||
	    *major < 1 || *minor < 0)
		return -EINVAL;
	return 0;
}

/*
 * .go.buildinfo: "\xff Go buildinf:" (14 bytes), the pointer size, flags
 * (bit 0: big-endian, bit 1: the strings follow inline, Go 1.18 on), then
 * at 16 either two pointers to Go strings (version, module info) or, at
 * 32, the version as a uvarint length and its bytes.
 */
int
golabels_buildinfo_version(const uint8_t *data, size_t len,
    int (*read)(void *arg, uint64_t vaddr, void *dst, size_t n), void *arg,
    int *major, int *minor)
{
	uint64_t n, ptr = 0, str[2] = { 0, 0 };
	size_t i = 32;
	char v[64];
	uint8_t psz;

	if (len < 32 || memcmp(data, "\xff Go buildinf:", 14) != 0)
		return -EINVAL;
	psz = data[14];
	if (data[15] & 2) {
		if (uvarint(data, len, &i, &n) < 0 || n == 0 || n > len - i)
			return -EINVAL;
		return parse_version((const char *)data + i, (size_t)n, major, minor);
	}
	/* The pointer form: little-endian, 8-byte pointers only (x86-64). */
	if (psz != 8 || (data[15] & 1) || read == NULL)
		return -EINVAL;
	memcpy(&ptr, data + 16, 8);
	if (read(arg, ptr, str, sizeof(str)) < 0 || str[1] == 0 || str[1] >= sizeof(v))
		return -EINVAL;
	if (read(arg, str[0], v, (size_t)str[1]) < 0)
		return -EINVAL;
	return parse_version(v, (size_t)str[1], major, minor);
}

/* --- the executable ------------------------------------------------------ */

/* Bytes at an ELF address, from the section that holds them. */
static int
elf_read_vaddr(void *arg, uint64_t vaddr, void *dst, size_t n)
{
	Elf *e = arg;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr > sh.sh_size || n > sh.sh_size - (vaddr - sh.sh_addr))
			continue;
		if ((d = elf_getdata(scn, NULL)) == NULL || d->d_buf == NULL ||
		    d->d_size != sh.sh_size)
			return -EINVAL;
		memcpy(dst, (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr), n);
		return 0;
	}
	return -EFAULT;
}

/* What the DWARF says: a bit per field found. */
enum {
	F_G_M = 1, F_G_LABELS = 2, F_M_CURG = 4, F_HMAP = 8, F_BUCKET = 16, F_KIND = 32,
	/* Go 1.24's labelMap: struct { LabelSet } at 0, LabelSet struct { list []label } */
	F_LM_SET = 64, F_LSET = 128, F_LSLICE = 256, F_LABEL = 512,
};
#define F_RUNTIME	(F_G_M | F_G_LABELS | F_M_CURG | F_KIND)
#define F_MAP		(F_RUNTIME | F_HMAP | F_BUCKET)
#define F_SLICE		(F_RUNTIME | F_LM_SET | F_LSET | F_LSLICE | F_LABEL)

struct dwfind {
	struct go_proc	 v;
	int		 kind;		/* labelMap's Go kind */
	uint64_t	 lm_size;	/* labelMap's size in bytes */
	unsigned	 found;		/* F_* */
	unsigned	 hmap, bucket;	/* fields of the two found */
};

/* The byte offset of member name of struct die: 0, or -ENOENT. */
static int
member_off(Dwarf_Die *die, const char *name, uint16_t *off)
{
	Dwarf_Die child;
	Dwarf_Attribute a;
	Dwarf_Word w;
	const char *n;

	if (dwarf_child(die, &child) != 0)
		return -ENOENT;
	do {
		if (dwarf_tag(&child) != DW_TAG_member || (n = dwarf_diename(&child)) == NULL ||
		    strcmp(n, name) != 0)
			continue;
		if (dwarf_attr(&child, DW_AT_data_member_location, &a) == NULL ||
		    dwarf_formudata(&a, &w) != 0 || w > 0xfff0)
			return -ENOENT;
		*off = (uint16_t)w;
		return 0;
	} while (dwarf_siblingof(&child, &child) == 0);
	return -ENOENT;
}

/* A struct die's DW_AT_byte_size, 0 if none. */
static uint64_t
byte_size(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_attr(die, DW_AT_byte_size, &a) == NULL || dwarf_formudata(&a, &w) != 0)
		return 0;
	return w;
}

static void
dw_type(struct dwfind *f, Dwarf_Die *die, const char *name)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	uint16_t o, o2;

	if (strcmp(name, "runtime.g") == 0) {
		if (member_off(die, "m", &f->v.g_m) == 0)
			f->found |= F_G_M;
		if (member_off(die, "labels", &f->v.g_labels) == 0)
			f->found |= F_G_LABELS;
	} else if (strcmp(name, "runtime.m") == 0) {
		if (member_off(die, "curg", &f->v.m_curg) == 0)
			f->found |= F_M_CURG;
	} else if (strcmp(name, "runtime.hmap") == 0) {
		if (member_off(die, "count", &f->v.hmap_count) == 0 &&
		    member_off(die, "B", &f->v.hmap_b) == 0 &&
		    member_off(die, "buckets", &f->v.hmap_buckets) == 0 &&
		    member_off(die, "oldbuckets", &f->v.hmap_oldbuckets) == 0)
			f->found |= F_HMAP;
	} else if (strcmp(name, "bucket<string,string>") == 0) {
		if (dwarf_attr(die, DW_AT_byte_size, &a) != NULL && dwarf_formudata(&a, &w) == 0 &&
		    w == GO_BUCKET_SIZE &&
		    member_off(die, "keys", &f->v.bkt_keys) == 0 &&
		    member_off(die, "values", &f->v.bkt_values) == 0 &&
		    member_off(die, "overflow", &f->v.bkt_overflow) == 0)
			f->found |= F_BUCKET;
	} else if (strcmp(name, "runtime/pprof.labelMap") == 0) {
		if (dwarf_attr(die, DW_AT_GO_KIND, &a) != NULL && dwarf_formudata(&a, &w) == 0) {
			f->kind = (int)w;
			f->found |= F_KIND;
		}
		if (dwarf_attr(die, DW_AT_byte_size, &a) != NULL && dwarf_formudata(&a, &w) == 0)
			f->lm_size = w;
		if (member_off(die, "LabelSet", &o) == 0 && o == 0)
			f->found |= F_LM_SET;
	} else if (strcmp(name, "runtime/pprof.LabelSet") == 0) {
		if (byte_size(die) == 24 && member_off(die, "list", &o) == 0 && o == 0)
			f->found |= F_LSET;
	} else if (strcmp(name, "[]runtime/pprof.label") == 0) {
		/* The slice header the walk reads: the array, then the length. */
		if (member_off(die, "array", &o) == 0 && o == 0 &&
		    member_off(die, "len", &o2) == 0 && o2 == 8)
			f->found |= F_LSLICE;
	} else if (strcmp(name, "runtime/pprof.label") == 0) {
		/* A pair as the walk reads it: key {ptr, len} at 0, value at 16. */
		if (byte_size(die) == 32 && member_off(die, "key", &o) == 0 && o == 0 &&
		    member_off(die, "value", &o2) == 0 && o2 == 16)
			f->found |= F_LABEL;
	}
}

/*
 * The offsets the DWARF of e gives. Go puts every type at the top level of
 * some unit: only those are looked at. -ENOENT: no DWARF.
 */
static int
dw_offsets(Elf *e, size_t shstrndx, struct dwfind *f)
{

	Dwarf_Off off = 0, next;
	size_t hsize, dies = 0, size = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Dwarf *dw;

	memset(f, 0, sizeof(*f));
	/* The size .debug_info will have once decompressed; none (.zdebug): not read. */
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;
		GElf_Chdr ch;

		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(e, shstrndx, sh.sh_name)) == NULL)
			continue;
		if (strcmp(name, ".zdebug_info") == 0)
			return -ENOENT;
		if (strcmp(name, ".debug_info") != 0 || sh.sh_type != SHT_PROGBITS)
			continue;
		size = sh.sh_size;
		if ((sh.sh_flags & SHF_COMPRESSED) && (gelf_getchdr(scn, &ch) == NULL ||
		    (size = ch.ch_size) == 0))
			return -ENOENT;
	}
	if (size == 0 || size > MAX_DEBUG_INFO || budget_reserve(size) < 0)
		return -ENOENT;
	if ((dw = dwarf_begin_elf(e, DWARF_C_READ, NULL)) == NULL) {
		budget_release(size);
		return -ENOENT;
	}
	while ((f->found & F_MAP) != F_MAP && (f->found & F_SLICE) != F_SLICE && dies < MAX_DIES &&
	    dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(dw, off + hsize, &cu) != NULL && dwarf_child(&cu, &d) == 0) {
			do {
				int tag = dwarf_tag(&d);
				const char *name;

				if ((tag == DW_TAG_structure_type || tag == DW_TAG_typedef) &&
				    (name = dwarf_diename(&d)) != NULL)
					dw_type(f, &d, name);
			} while (++dies < MAX_DIES && dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
	dwarf_end(dw);
	budget_release(size);
	return 0;
}

/*
 * Go 1.17 to 1.24 on x86-64, for binaries without DWARF: the map layout
 * up to 1.23, 1.24's slice of pairs (what the DWARF of a go1.24.4 build
 * says: runtime.g's m at 48, labels at 352, runtime.m's curg at 192;
 * runtime/pprof.labelMap a struct whose LabelSet's list []label is at 0,
 * a label 32 bytes, key then value).
 */
static int
table_offsets(int minor, struct go_proc *v)
{
	if (minor < 17 || minor > 24)
		return -ENOTSUP;
	if (minor == 24) {
		v->g_m = 48;
		v->m_curg = 192;
		v->g_labels = 352;
		v->layout = GO_LAYOUT_SLICE;
		return 0;
	}
	v->g_m = 48;
	v->m_curg = 192;
	v->g_labels = minor <= 20 ? 360 : minor <= 22 ? 344 : 352;
	v->hmap_count = 0;
	v->hmap_b = 9;
	v->hmap_buckets = 16;
	v->hmap_oldbuckets = 24;
	v->bkt_keys = 8;
	v->bkt_values = 8 + 8 * 16;
	v->bkt_overflow = 8 + 16 * 16;
	v->layout = GO_LAYOUT_MAP;
	return 0;
}

/*
 * Where g is, as an offset from the thread pointer: Go's own TLS slot at -8
 * in a binary the Go linker linked alone (no PT_TLS); with a C linker
 * (cgo), runtime.tlsg's place in the executable's TLS block, which ends at
 * the thread pointer.
 */
static int64_t
tls_offset(Elf *e)
{
	uint64_t memsz = 0, align = 1;
	Elf_Scn *scn = NULL;
	GElf_Phdr ph;
	GElf_Shdr sh;
	size_t i, nph;
	bool tls = false;

	if (elf_getphdrnum(e, &nph) != 0)
		return -8;
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(e, (int)i, &ph) != NULL && ph.p_type == PT_TLS) {
			memsz = ph.p_memsz;
			align = ph.p_align ? ph.p_align : 1;
			tls = true;
		}
	if (!tls)
		return -8;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		Elf_Data *d;
		size_t k, cnt;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_SYMTAB ||
		    sh.sh_entsize == 0 || (d = elf_getdata(scn, NULL)) == NULL)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < cnt; k++) {
			GElf_Sym s;
			const char *nm;

			if (gelf_getsym(d, (int)k, &s) == NULL || GELF_ST_TYPE(s.st_info) != STT_TLS ||
			    (nm = elf_strptr(e, sh.sh_link, s.st_name)) == NULL ||
			    strcmp(nm, "runtime.tlsg") != 0)
				continue;
			return (int64_t)s.st_value - (int64_t)((memsz + align - 1) / align * align);
		}
	}
	return -8;
}

/*
 * Look at the executable m: whether it is Go, and where its labels are.
 * 0 with *v filled, -ENOENT (not Go, or no labels), -ENOTSUP (a Go we do
 * not read), -errno.
 */
static int
file_examine(const struct proc_mapping *m, int fd, struct go_proc *v)
{
	Elf_Scn *scn = NULL, *bi = NULL;
	bool pclntab = false;
	struct dwfind f;
	size_t shstrndx;
	GElf_Shdr sh;
	int rc = -ENOENT, major = 0, minor = 0;
	Elf *e;

	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL || elf_kind(e) != ELF_K_ELF ||
	    elf_getshdrstrndx(e, &shstrndx) != 0)
		goto out;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL ||
		    (name = elf_strptr(e, shstrndx, sh.sh_name)) == NULL)
			continue;
		if (strcmp(name, ".go.buildinfo") == 0)
			bi = scn;
		else if (strcmp(name, ".gopclntab") == 0)
			pclntab = true;
	}
	if (bi == NULL && !pclntab)
		goto out;		/* not Go */
	if (bi != NULL) {
		Elf_Data *d = elf_getdata(bi, NULL);

		if (d && d->d_buf)
			(void)golabels_buildinfo_version(d->d_buf, d->d_size, elf_read_vaddr, e,
			    &major, &minor);
	}
	memset(v, 0, sizeof(*v));
	if (dw_offsets(e, shstrndx, &f) == 0 && (f.found & (F_G_M | F_G_LABELS | F_M_CURG)) ==
	    (F_G_M | F_G_LABELS | F_M_CURG)) {
		if (!(f.found & F_KIND)) {
			rc = -ENOENT;	/* runtime/pprof not linked in: nothing sets labels */
			goto out;
		}
		*v = f.v;
		if (f.kind == GO_KIND_MAP && (f.found & (F_HMAP | F_BUCKET)) ==
		    (F_HMAP | F_BUCKET))
			v->layout = GO_LAYOUT_MAP;
		else if (f.kind == GO_KIND_STRUCT && f.lm_size == 24 &&
		    (f.found & F_SLICE) == F_SLICE)
			v->layout = GO_LAYOUT_SLICE;	/* the struct is the slice alone */
		else {
			rc = -ENOTSUP;
			goto out;
		}
	} else if (major != 1 || table_offsets(minor, v) < 0) {
		rc = -ENOTSUP;
		goto out;
	}
	v->tls_g = tls_offset(e);
	rc = 0;
out:
	if (rc == -ENOTSUP)
		log_debug("ebpf: %s: Go %d.%d without the DWARF that says where its labels are: "
		    "no Go labels", m->name, major, minor);
	if (e)
		elf_end(e);
	return rc;
}

/* file_examine, remembered per file. NULL: not Go, or not readable. */
static const struct gofile *
file_lookup(struct golabels *gl, const struct proc_mapping *m)
{
	struct gofile *f = NULL, tmp = { 0 };
	struct stat sb;
	size_t i;
	int fd = -1, rc;

	for (i = 0; i < FILE_CACHE; i++) {
		f = &gl->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0)
			break;
	}
	if (i < FILE_CACHE && m->build_id[0] != '\0')
		return f->go ? f : NULL;
	if ((fd = proctab_open_mapping(m)) < 0)
		return NULL;		/* not read: try again with the next process */
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return NULL;
	}
	tmp.size = (int64_t)sb.st_size;
	tmp.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	if (i < FILE_CACHE && f->size == tmp.size && f->mtime_ns == tmp.mtime_ns) {
		close(fd);
		return f->go ? f : NULL;
	}
	rc = file_examine(m, fd, &tmp.val);
	close(fd);
	if (rc < 0 && rc != -ENOENT && rc != -ENOTSUP)
		return NULL;
	if (i == FILE_CACHE) {
		f = &gl->files[gl->next_file];
		gl->next_file = (gl->next_file + 1) % FILE_CACHE;
	}
	*f = tmp;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	f->go = rc == 0;
	f->used = true;
	return f->go ? f : NULL;
}

void
golabels_check(struct golabels *gl, struct proc *p)
{
	const struct gofile *f;
	struct proc_mapping m;
	struct go_proc val;
	size_t i;

	if (gl == NULL || p->gone || p->kthread || p->go || p->exe == NULL ||
	    p->go_gen == p->maps_gen)
		return;
	p->go_gen = p->maps_gen;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++)
		if (strcmp(m.name, p->exe) == 0)
			break;
	if (proctab_mapping(p, i, &m) < 0 || (f = file_lookup(gl, &m)) == NULL)
		return;
	val = f->val;
	if (bpf_map_update_elem(gl->procs_fd, &p->pid, &val, BPF_ANY) < 0) {
		log_debug("ebpf: pid %u: go_procs: %s", p->pid, strerror(errno));
		return;
	}
	p->go = true;
	gl->st.procs++;
	log_debug("ebpf: pid %u: Go labels (%s; labels at g+%u, %s)", p->pid, p->exe,
	    val.g_labels, val.layout == GO_LAYOUT_MAP ? "a map" : "a slice");
}

/* --- samples -------------------------------------------------------------- */

struct pair {
	const char	*k, *v;
	size_t		 kl, vl;
};

static int
pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	size_t n = x->kl < y->kl ? x->kl : y->kl;
	int c = memcmp(x->k, y->k, n);

	return c ? c : (x->kl > y->kl) - (x->kl < y->kl);
}

/* Whether p's series labels have key k. */
static bool
series_key(const struct proc *p, const char *k)
{
	size_t i;

	if (strcmp(k, "service_name") == 0)
		return true;
	for (i = 0; i < p->labels.n; i++)
		if (strcmp(p->labels.pairs[i].key, k) == 0)
			return true;
	return false;
}

/*
 * Whether k names a span (Pyroscope's span profiles: span_id, span_name;
 * trace_id): unique per request, so never a series label. Such pairs stay
 * sample labels, which the store keeps per sample (store/span.c).
 */
static bool
span_label(const char *k)
{
	return strcmp(k, "span_id") == 0 || strcmp(k, "span_name") == 0 ||
	    strcmp(k, "trace_id") == 0;
}

/* g's pairs: copies of pr's (g->strs, freed by the caller). 0 or -ENOMEM. */
static int
set_pairs(struct goset *g, const struct pair *pr, size_t n)
{
	size_t i, len = 0;
	char *o;

	memset(g, 0, sizeof(*g));
	for (i = 0; i < n; i++)
		len += pr[i].kl + pr[i].vl + 2;
	if ((g->strs = malloc(len ? len : 1)) == NULL)
		return -ENOMEM;
	for (i = 0, o = g->strs; i < n; i++) {
		g->keys[i] = o;
		memcpy(o, pr[i].k, pr[i].kl);
		o[pr[i].kl] = '\0';
		o += pr[i].kl + 1;
		g->values[i] = o;
		memcpy(o, pr[i].v, pr[i].vl);
		o[pr[i].vl] = '\0';
		o += pr[i].vl + 1;
	}
	g->n = n;
	return 0;
}

/* A new set for key: its pairs copied, its series decided. */
static int
set_new(struct golabels *gl, const struct proc *p, const struct pair *pr, size_t n,
    struct goset *g)
{
	struct labelset ls = { .n = 0 };
	struct buf out = { 0 };
	size_t i, svc, nseries = 0;
	int64_t si;
	int added = 0, rc = 0;

	if (set_pairs(g, pr, n) < 0)
		return -ENOMEM;
	/* Admitted as series while the service has room in this window. */
	if ((si = intern_put(gl->svcs, p->service, strlen(p->service), &added)) < 0)
		return -ENOMEM;
	svc = (size_t)si;
	if (added) {
		gl->svc_sets = xgrow(gl->svc_sets, &gl->svc_cap, svc + 1, sizeof(*gl->svc_sets));
		gl->svc_sets[svc] = 0;
	}
	if (gl->svc_sets[svc] >= GOLABELS_SETS_PER_SERVICE)
		return 0;
	if (labels_parse(p->labels_text ? p->labels_text : "", &ls, NULL) < 0)
		return 0;
	for (i = 0; i < n && rc == 0; i++)
		if (!series_key(p, g->keys[i]) && !span_label(g->keys[i])) {
			rc = labels_add(&ls, g->keys[i], g->values[i], NULL);
			nseries++;
		}
	/* Only span ids (or series keys): the plain series, not one of the service's sets. */
	if (rc == 0 && nseries > 0 && labels_format(&ls, &out) == 0 && out.data != NULL) {
		g->series = out.data;
		out.data = NULL;
		gl->svc_sets[svc]++;
	}
	labels_clear(&ls);
	buf_free(&out);
	return rc == -ENOMEM ? rc : 0;
}

int
golabels_sample(struct golabels *gl, const struct proc *p, const struct prof_sample *s,
    struct golabels_set *out)
{
	struct pair pr[PROF_MAX_GOLABELS];
	struct buf key = { 0 };
	struct goset *g;
	size_t i, n = 0, k;
	int64_t idx;
	int added = 0, rc = 0;

	memset(out, 0, sizeof(*out));
	if (gl == NULL || s->rt != PROF_RT_GO || !(s->go_flags & PROF_GO_WALKED) || s->go_n == 0)
		return -ENOENT;
	for (i = 0; i < s->go_n && i < PROF_MAX_GOLABELS; i++) {
		const struct prof_golabel *l = &s->go[i];
		struct pair q;

		/* Bounds are the BPF side's, checked again; NULs would cut a label short. */
		if (l->klen == 0 || l->klen > PROF_GO_KEY_MAX || l->vlen == 0 ||
		    l->vlen > PROF_GO_VALUE_MAX || l->key > PROF_GO_STR - l->klen ||
		    l->value > PROF_GO_STR - l->vlen) {
			gl->st.dropped++;
			continue;
		}
		q.k = s->go_str + l->key;
		q.kl = l->klen;
		q.v = s->go_str + l->value;
		q.vl = l->vlen;
		if (memchr(q.k, '\0', q.kl) != NULL || memchr(q.v, '\0', q.vl) != NULL) {
			gl->st.dropped++;
			continue;
		}
		for (k = 0; k < n; k++)
			if (pair_cmp(&pr[k], &q) == 0)
				break;
		if (k < n) {
			gl->st.dropped++;	/* a key twice: a torn read */
			continue;
		}
		pr[n++] = q;
	}
	if (n == 0)
		return -ENOENT;
	qsort(pr, n, sizeof(pr[0]), pair_cmp);
	gl->st.samples++;
	buf_adds(&key, p->service);
	buf_addc(&key, '\0');
	buf_adds(&key, p->labels_text ? p->labels_text : "");
	for (i = 0; i < n; i++) {
		uint8_t kl = (uint8_t)pr[i].kl, vl = (uint8_t)pr[i].vl;	/* both < 256 */

		buf_addc(&key, '\0');
		buf_add(&key, &kl, 1);
		buf_add(&key, pr[i].k, pr[i].kl);
		buf_add(&key, &vl, 1);
		buf_add(&key, pr[i].v, pr[i].vl);
	}
	if (buf_error(&key) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if ((idx = intern_get(gl->keys, key.data, key.len)) < 0) {
		if (intern_count(gl->keys) >= GOLABELS_MAX_SETS) {
			/* Too many sets this window: p's series, the pairs as sample labels. */
			gl->st.refused++;
			free(gl->scratch.strs);
			if ((rc = set_pairs(&gl->scratch, pr, n)) < 0)
				goto out;
			g = &gl->scratch;
			goto found;
		}
		if ((idx = intern_put(gl->keys, key.data, key.len, &added)) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		gl->sets = xgrow(gl->sets, &gl->cap, (size_t)idx + 1, sizeof(*gl->sets));
		if ((rc = set_new(gl, p, pr, n, &gl->sets[idx])) < 0) {
			/* Interned but empty: its samples go to p's series, unlabelled. */
			gl->sets[idx].n = 0;
		}
		gl->nsets = (size_t)idx + 1;
	}
	g = &gl->sets[idx];
	if (g->series == NULL)
		gl->st.refused++;
found:
	out->series = g->series;
	out->n = g->n;
	out->keys = g->keys;
	out->values = g->values;
	rc = 0;
out:
	buf_free(&key);
	return rc;
}
