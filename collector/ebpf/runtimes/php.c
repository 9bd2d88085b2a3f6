/*
 * php: PHP frames for the eBPF sampler (see php.h).
 *
 * Layouts, per minor version, of what is read (offsets in bytes, x86-64,
 * NTS builds: executor_globals is a plain global of the binary):
 *
 *                                          8.2    8.3    8.4
 *   executor_globals.current_execute_data  0x1e8  0x1e8  0x1e8
 *   zend_execute_data.opline                 0      0      0
 *   zend_execute_data.func                  24     24     24
 *   zend_execute_data.This.u1.type_info     40     40     40   (call flags, bits 16+)
 *   zend_execute_data.prev_execute_data     48     48     48
 *   zend_function.type                       0      0      0   (1 internal, 2 user, 4 eval)
 *   zend_function.common.function_name      8      8      8
 *   zend_function.common.scope              16     16     16
 *   zend_op_array.filename                0x98   0x90   0xa8
 *   zend_op_array.line_start              0xa0   0x98   0xb0
 *   zend_op.lineno                          24     24     24
 *   zend_class_entry.name                    8      8      8
 *   zend_string: len 16, val 24
 *   ZEND_CALL_TOP                       1 << 17 (This.u1.type_info)
 *
 * (8.3 moved the common part's T after run_time_cache, closing a hole; 8.4
 * added prop_info and doc_comment to it.) 8.2 and 8.4 were read from
 * Debian's binaries (their zend_get_executed_* functions), 8.3 from its
 * headers, not run here.
 *
 * The version is the binary's own ("X-Powered-By: PHP/8.2.36" in its
 * read-only data); a binary whose zend_get_executed_filename_ex does not
 * read current_execute_data and filename at the table's offsets is left
 * alone (a build of other options, or a row wrong for it). A version not in
 * the table is refused, told once per binary.
 *
 * A zend_function read for a sample is checked first: user code (type 2
 * or 4), its function_name the pointer the BPF program saw at the sample
 * (else the frame is unreadable: the function went away since), and its
 * scope, file and first line those of the cached entry, else the entry is
 * read again. A function that cannot be read any more (the process
 * exited before its last samples were named) is named by its entry if the
 * sample's two pointers match it. The line is the opline's, read by the
 * BPF program at the sample: no line table to decode. The entries are
 * codecache.h's, one table a process. Names are cut at MAX_NAME bytes,
 * paths at MAX_PATH_CH, with STR_CUT_MARK; bytes that are not UTF-8 are
 * replaced. What cannot be read is named "[php: unreadable]", never
 * guessed.
 */
#define _GNU_SOURCE	/* memmem, asprintf */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base.h"
#include "codecache.h"
#include "php.h"

#define FN_READ		0xb8	/* bytes of a zend_function read per frame and sample */
#define STR_HDR		24	/* of a zend_string: gc, h, len; val follows */
#define STR_AHEAD	232	/* bytes read past a string's header with it */
#define MAX_NAME	512	/* bytes of a function or class name */
#define MAX_PATH_CH	1024	/* bytes of a file name */
#define FILE_CACHE	16	/* php binaries whose findings are remembered */
#define CODE_CHECK	96	/* bytes of zend_get_executed_filename_ex looked at */
#define UNREADABLE	"[php: unreadable]"
#define MEM_DEADLINE_NS	(1000LL * 1000 * 1000)
#define PHP_USER	2
#define PHP_EVAL	4

struct phpver {
	int		 major, minor;
	struct php_proc	 off;		/* eg filled per process */
	uint16_t	 fn_scope, op_filename, op_line_start;
};

/* One row a minor version (the table above). */
#define PHP_ROW(maj, min, eg_ex, fname, filename, line_start)				\
	{ maj, min, { .call_top = 1u << 17, .eg_current_ex = eg_ex, .ex_opline = 0,	\
	    .ex_func = 24, .ex_prev = 48, .ex_call_info = 40, .fn_type = 0,		\
	    .fn_name = fname, .op_lineno = 24 }, 16, filename, line_start }

static const struct phpver versions[] = {
	PHP_ROW(8, 2, 0x1e8, 8, 0x98, 0xa0),
	PHP_ROW(8, 3, 0x1e8, 8, 0x90, 0x98),
	PHP_ROW(8, 4, 0x1e8, 8, 0xa8, 0xb0),
};

/* What php_check finds in one binary (dev, inode, build id). */
struct phpfile {
	uint64_t	 dev, ino;
	char		 build_id[41];
	uint64_t	 eg;		/* executor_globals; 0: absent (not PHP, or ZTS) */
	int		 major, minor;	/* 0: no version string */
	uint8_t		 code[CODE_CHECK];
	bool		 has_code;	/* code holds zend_get_executed_filename_ex's start */
	bool		 told;		/* its refusal was logged */
	bool		 used;
};

/*
 * A function's cache entry (codecache.h): what tells that the zend_function
 * at the address is still the same. No line table: the line is the
 * opline's, read at the sample.
 */
struct phpfn {
	struct cc_entry	 e;		/* name "Class::method", file */
	uint64_t	 fname, scope, filename;
	uint32_t	 line_start;
	uint8_t		 type;
	int64_t		 checked;	/* monotonic ns: the function was there then (or later) */
};

#define CACHE_SLOTS	2048	/* functions cached per process */

/* --- processes ----------------------------------------------------------- */

/* What the sampler knows of one PHP process; p->php. */
struct phpproc {
	const struct phpver *v;
	struct cc_table	 cache;
};

struct php {
	int		 procs_fd;
	struct codecache *cc;		/* the functions' entries, every read of a process */
	struct phpfile	 files[FILE_CACHE];
	size_t		 next_file;
	/* the zend_function headers of the sample being named (php_read) */
	uint8_t		 hdr[PROF_MAX_PYFRAMES][FN_READ];
	bool		 hdr_ok[PROF_MAX_PYFRAMES];
	bool		 hdr_known[PROF_MAX_PYFRAMES];	/* not read: its entry was checked since */
	int64_t		 hdr_at[PROF_MAX_PYFRAMES];
	int64_t		 sample_ns;
};

struct php *
php_create(int procs_fd)
{
	struct php *ph = calloc(1, sizeof(*ph));

	if (ph == NULL)
		return NULL;
	ph->procs_fd = procs_fd;
	if ((ph->cc = codecache_create(&(struct codecache_conf){
	    .entry_size = sizeof(struct phpfn), .slots = CACHE_SLOTS, .addr_shift = 3,
	    .mem_max = 0 /* no line tables: nothing charged */, .deadline_ns = MEM_DEADLINE_NS })) == NULL) {
		free(ph);
		return NULL;
	}
	return ph;
}

void
php_destroy(struct php *ph)
{
	if (ph)
		codecache_destroy(ph->cc);
	free(ph);
}

void
php_forget(struct php *ph, struct proc *p)
{
	struct phpproc *pp = p->php;

	if (pp) {
		if (ph && !p->gone)
			(void)bpf_map_delete_elem(ph->procs_fd, &p->pid);
		codecache_forget(ph ? ph->cc : NULL, &pp->cache);
		free(pp);
	}
	p->php = NULL;
}

static int
mem_read(struct php *ph, const struct proc *p, uint64_t addr, void *dst, size_t len)
{
	return codecache_read(ph->cc, (pid_t)p->pid, addr, dst, len);
}

/* --- finding the executor ------------------------------------------------ */

/* Whether a mapped file may be PHP: php[N.N], php-fpm[N.N], php-cgi, libphp*.so. */
static bool
php_file(const char *name)
{
	const char *b = strrchr(name, '/');

	b = b ? b + 1 : name;
	return strncmp(b, "php", 3) == 0 || strncmp(b, "libphp", 6) == 0;
}

int
php_version_find(const char *data, size_t len, int *major, int *minor)
{
	static const char tag[] = "X-Powered-By: PHP/";
	const char *s = memmem(data, len, tag, sizeof(tag) - 1), *end = data + len;
	int v[2] = { 0, 0 }, k, d;

	if (s == NULL)
		return -ENOENT;
	s += sizeof(tag) - 1;
	for (k = 0; k < 2; k++) {
		for (d = 0; s < end && *s >= '0' && *s <= '9' && d < 4; s++, d++)
			v[k] = v[k] * 10 + (*s - '0');
		if (d == 0 || s >= end || *s != '.')
			return -ENOENT;
		s++;
	}
	*major = v[0];
	*minor = v[1];
	return 0;
}

/*
 * Read m's file: executor_globals (from .dynsym), the version (from
 * .rodata) and the first bytes of zend_get_executed_filename_ex into f.
 * -errno only if the file could not be read.
 */
static int
file_read(const struct proc_mapping *m, struct phpfile *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t getfn = 0;
	size_t shstrndx;
	Elf *e;
	int fd;

	if ((fd = proctab_open_mapping(m)) < 0)
		return fd;
	if ((e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) == NULL || elf_getshdrstrndx(e, &shstrndx) < 0) {
		elf_end(e);
		close(fd);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *sn;
		Elf_Data *d;
		size_t k, cnt;

		if (gelf_getshdr(scn, &sh) == NULL)
			continue;
		sn = elf_strptr(e, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_PROGBITS && sn && strcmp(sn, ".rodata") == 0 &&
		    (d = elf_getdata(scn, NULL)) != NULL && d->d_buf != NULL)
			(void)php_version_find(d->d_buf, d->d_size, &f->major, &f->minor);
		if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0 ||
		    (d = elf_getdata(scn, NULL)) == NULL)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < cnt; k++) {
			GElf_Sym s;
			const char *nm;

			if (gelf_getsym(d, (int)k, &s) == NULL || s.st_shndx == SHN_UNDEF ||
			    (nm = elf_strptr(e, sh.sh_link, s.st_name)) == NULL)
				continue;
			if (strcmp(nm, "executor_globals") == 0)
				f->eg = s.st_value;
			else if (strcmp(nm, "zend_get_executed_filename_ex") == 0)
				getfn = s.st_value;
		}
	}
	/* The function's first bytes, from the section holding it. */
	scn = NULL;
	while (getfn && (scn = elf_nextscn(e, scn)) != NULL) {
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || getfn < sh.sh_addr ||
		    getfn + CODE_CHECK > sh.sh_addr + sh.sh_size)
			continue;
		if ((d = elf_getdata(scn, NULL)) != NULL && d->d_buf != NULL &&
		    getfn - sh.sh_addr + CODE_CHECK <= d->d_size) {
			memcpy(f->code, (const uint8_t *)d->d_buf + (getfn - sh.sh_addr), CODE_CHECK);
			f->has_code = true;
		}
		break;
	}
	elf_end(e);
	close(fd);
	return 0;
}

/* m's findings, read once per binary (every new FPM worker asks again). */
static struct phpfile *
file_get(struct php *ph, const struct proc_mapping *m)
{
	static struct phpfile scratch;
	struct phpfile *f;
	size_t i;

	for (i = 0; i < FILE_CACHE; i++) {
		f = &ph->files[i];
		if (f->used && f->dev == m->dev && f->ino == m->ino &&
		    strcmp(f->build_id, m->build_id) == 0)
			return f;
	}
	/* A file without a build id may be rewritten in place: not remembered. */
	f = m->build_id[0] ? &ph->files[ph->next_file] : &scratch;
	memset(f, 0, sizeof(*f));
	if (file_read(m, f) < 0)
		return NULL;
	if (f == &scratch)
		return f;
	ph->next_file = (ph->next_file + 1) % FILE_CACHE;
	f->dev = m->dev;
	f->ino = m->ino;
	snprintf(f->build_id, sizeof(f->build_id), "%s", m->build_id);
	f->used = true;
	return f;
}

/* Whether code (a function's first bytes) holds the 32-bit displacement off. */
static bool
code_has_disp(const uint8_t *code, uint32_t off)
{
	uint8_t le[4] = { off & 0xff, (off >> 8) & 0xff, (off >> 16) & 0xff, off >> 24 };

	return memmem(code, CODE_CHECK, le, sizeof(le)) != NULL;
}

void
php_check(struct php *ph, struct proc *p)
{
	const struct phpver *v = NULL;
	struct proc_mapping m;
	struct phpproc *pp;
	struct phpfile *f;
	struct php_proc val;
	size_t i, k;

	if (ph == NULL || p->gone || p->kthread || p->php || (p->php_gen == p->maps_gen &&
	    (p->php_retry == 0 || clock_mono_ns() < p->php_retry)))
		return;
	p->php_gen = p->maps_gen;
	p->php_retry = 0;
	for (i = 0; proctab_mapping(p, i, &m) == 0; i++) {
		if (!php_file(m.name))
			continue;
		/* Not opened or read now (a busy host: the opener's deadline): again in a second. */
		if ((f = file_get(ph, &m)) == NULL) {
			p->php_retry = clock_mono_ns() + 1000000000LL;
			continue;
		}
		if (f->major == 0)
			continue;
		if (f->eg == 0) {
			if (!f->told)
				log_info("ebpf: PHP %d.%d in %s (pid %u): no executor_globals (a "
				    "thread-safe build?): native frames only", f->major, f->minor,
				    m.name, p->pid);
			f->told = true;
			return;
		}
		for (k = 0; k < sizeof(versions) / sizeof(versions[0]); k++)
			if (versions[k].major == f->major && versions[k].minor == f->minor)
				v = &versions[k];
		if (v == NULL) {
			if (!f->told)
				log_info("ebpf: PHP %d.%d in %s (pid %u): a version whose frames are "
				    "not known (8.2 to 8.4 are): native frames only", f->major,
				    f->minor, m.name, p->pid);
			f->told = true;
			return;
		}
		if (f->has_code && (!code_has_disp(f->code, v->off.eg_current_ex) ||
		    !code_has_disp(f->code, v->op_filename))) {
			if (!f->told)
				log_info("ebpf: PHP %d.%d in %s (pid %u): its executor is not laid "
				    "out as PHP %d.%d's is known to be: native frames only",
				    f->major, f->minor, m.name, p->pid, v->major, v->minor);
			f->told = true;
			return;
		}
		if ((pp = calloc(1, sizeof(*pp))) == NULL)
			return;
		pp->v = v;
		val = v->off;
		val.eg = f->eg + m.bias;
		if (bpf_map_update_elem(ph->procs_fd, &p->pid, &val, BPF_ANY) < 0) {
			log_debug("ebpf: pid %u: php_procs: %s", p->pid, strerror(errno));
			free(pp);
			return;
		}
		p->php = pp;
		log_debug("ebpf: pid %u: PHP %d.%d in %s", p->pid, v->major, v->minor, m.name);
		return;
	}
}

/* --- naming functions ---------------------------------------------------- */

/*
 * n bytes of a string (of len bytes in all) as a malloc'd UTF-8 string:
 * NUL and control bytes as '?', other bytes that are not UTF-8 replaced,
 * STR_CUT_MARK after it when len > n. NULL on allocation failure.
 */
static char *
str_clean(const uint8_t *s, size_t n, uint64_t len)
{
	struct buf b = { 0 };
	char *tmp, *out;
	size_t i;

	if ((tmp = malloc(n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		tmp[i] = s[i] < 0x20 || s[i] == 0x7f ? '?' : (char)s[i];
	if (utf8_repair(&b, tmp, n) < 0 || (len > n && buf_adds(&b, STR_CUT_MARK) < 0)) {
		free(tmp);
		buf_free(&b);
		return NULL;
	}
	free(tmp);
	if ((out = buf_steal(&b, NULL)) == NULL)
		out = strdup("");
	return out;
}

/*
 * The zend_string at addr as a malloc'd clean string of at most max bytes
 * (and the cut mark), or NULL. Its header and what follows are read at
 * once; the rest, if any, after.
 */
static char *
read_zstr(struct php *ph, const struct proc *p, uint64_t addr, size_t max)
{
	uint8_t h[STR_HDR + STR_AHEAD], *raw;
	uint64_t len;
	size_t n;
	bool ahead;
	char *out;

	if (addr == 0 || addr >= (1ULL << 47))
		return NULL;
	/* The header and, most often, the whole string in one read; else the header alone. */
	ahead = mem_read(ph, p, addr, h, sizeof(h)) == 0;
	if (!ahead && mem_read(ph, p, addr, h, STR_HDR) < 0)
		return NULL;
	len = cc_rd64(h, 16);
	n = len < max ? (size_t)len : max;
	if (ahead && n <= STR_AHEAD)
		return str_clean(h + STR_HDR, n, len);
	if ((raw = malloc(n ? n : 1)) == NULL)
		return NULL;
	if (mem_read(ph, p, addr + STR_HDR, raw, n) < 0) {
		free(raw);
		return NULL;
	}
	out = str_clean(raw, n, len);
	free(raw);
	return out;
}

/* Fill c (addr set) from hdr and p's memory: 0 or -EFAULT. */
static int
fn_load(struct php *ph, const struct phpproc *pp, const struct proc *p, struct phpfn *c,
    const uint8_t *hdr)
{
	const struct phpver *v = pp->v;
	uint8_t ce[16];
	char *cls = NULL, *fn;

	c->type = hdr[v->off.fn_type];
	c->fname = cc_rd64(hdr, v->off.fn_name);
	c->scope = cc_rd64(hdr, v->fn_scope);
	c->filename = cc_rd64(hdr, v->op_filename);
	c->line_start = cc_rd32(hdr, v->op_line_start);
	if ((c->e.file = read_zstr(ph, p, c->filename, MAX_PATH_CH)) == NULL)
		return -EFAULT;
	if (c->fname == 0) {
		/* A file's own code, or eval()'d code. */
		c->e.name = strdup(c->type == PHP_EVAL ? "{eval}" : "{main}");
		return c->e.name ? 0 : -EFAULT;
	}
	if ((fn = read_zstr(ph, p, c->fname, MAX_NAME)) == NULL)
		return -EFAULT;
	/* zend_class_entry: type, then name. */
	if (c->scope != 0 && mem_read(ph, p, c->scope, ce, sizeof(ce)) == 0)
		cls = read_zstr(ph, p, cc_rd64(ce, 8), MAX_NAME);
	if (cls == NULL) {
		c->e.name = fn;
		return 0;
	}
	if (asprintf(&c->e.name, "%s::%s", cls, fn) < 0)
		c->e.name = NULL;
	free(cls);
	free(fn);
	return c->e.name ? 0 : -EFAULT;
}

/* Whether hdr (a zend_function as read now) is the function c holds. */
static bool
fn_same(const struct phpproc *pp, const struct phpfn *c, const uint8_t *hdr)
{
	const struct phpver *v = pp->v;

	return hdr[v->off.fn_type] == c->type && cc_rd64(hdr, v->off.fn_name) == c->fname &&
	    cc_rd64(hdr, v->fn_scope) == c->scope && cc_rd64(hdr, v->op_filename) == c->filename &&
	    cc_rd32(hdr, v->op_line_start) == c->line_start;
}

/* Whether c stands for frame fr of a sample taken at sample_ns without a read. */
static bool
fn_checked(const struct phpfn *c, const struct prof_pyframe *fr, uint64_t sample_ns)
{
	return c != NULL && c->fname == fr->name && c->checked >= (int64_t)sample_ns;
}

void
php_read(struct php *ph, struct proc *p, const struct prof_pyframe *fr, size_t n,
    uint64_t sample_ns)
{
	struct iovec l[PROF_MAX_PYFRAMES], r[PROF_MAX_PYFRAMES];
	size_t i, j, k, m = 0, idx[PROF_MAX_PYFRAMES];
	struct phpproc *pp = p->php;
	ssize_t got;
	int64_t at;

	if (ph == NULL || pp == NULL || n == 0)
		return;
	if (n > PROF_MAX_PYFRAMES)
		n = PROF_MAX_PYFRAMES;
	ph->sample_ns = sample_ns;
	for (i = 0; i < n; i++) {
		ph->hdr_ok[i] = false;
		ph->hdr_known[i] = fn_checked((struct phpfn *)codecache_find(ph->cc, &pp->cache,
		    fr[i].code & ~PROF_PY_ENTRY), &fr[i], sample_ns);
		if (ph->hdr_known[i])
			continue;
		l[m].iov_base = ph->hdr[i];
		l[m].iov_len = FN_READ;
		r[m].iov_base = (void *)(uintptr_t)(fr[i].code & ~PROF_PY_ENTRY);
		r[m].iov_len = FN_READ;
		idx[m++] = i;
	}
	if (m == 0 || p->gone)
		return;
	/* One call for all frames; past one that cannot be read, the next call goes on. */
	for (j = 0; j < m; j += k + 1) {
		at = clock_mono_ns();
		got = codecache_readv(ph->cc, (pid_t)p->pid, l + j, r + j, m - j);
		for (k = 0; got > 0 && j + k < m && (size_t)got >= (k + 1) * FN_READ; k++) {
			ph->hdr_ok[idx[j + k]] = true;
			ph->hdr_at[idx[j + k]] = at;
		}
		if (got < 0 && (j == 0 || got != -EFAULT))
			break;
	}
}

int
php_frame(struct php *ph, struct proc *p, const struct prof_pyframe *fr, size_t n, size_t i,
    struct frame *f)
{
	struct phpproc *pp = p->php;
	uint64_t addr = fr[i].code & ~PROF_PY_ENTRY;
	struct phpfn *c = NULL;
	const uint8_t *hdr;
	uint8_t type;

	memset(f, 0, sizeof(*f));
	f->file = "[php]";
	f->build_id = "";
	f->func = UNREADABLE;
	if (ph == NULL || pp == NULL || i >= n || i >= PROF_MAX_PYFRAMES || addr == 0)
		return -EFAULT;
	if (ph->hdr_known[i]) {
		/* Not read: its entry was checked after the sample, unless a frame before emptied it. */
		ph->hdr_known[i] = false;
		c = (struct phpfn *)codecache_find(ph->cc, &pp->cache, addr);
		if (fn_checked(c, &fr[i], ph->sample_ns))
			goto named;
		ph->hdr_at[i] = clock_mono_ns();
		ph->hdr_ok[i] = !p->gone && mem_read(ph, p, addr, ph->hdr[i], FN_READ) == 0;
	}
	if (!ph->hdr_ok[i]) {
		/*
		 * Not readable now: most often a process that exited before its
		 * last samples were read. The entry of the function the sample
		 * saw (its address and name pointer, both read at the sample)
		 * names it; no entry, no name.
		 */
		c = (struct phpfn *)codecache_find(ph->cc, &pp->cache, addr);
		if (c == NULL || c->fname != fr[i].name || c->e.name == NULL)
			return -EFAULT;
		goto named;
	}
	hdr = ph->hdr[i];
	type = hdr[pp->v->off.fn_type];
	/* No longer (or never) user code, or another function than the sample saw. */
	if ((type != PHP_USER && type != PHP_EVAL) || cc_rd64(hdr, pp->v->off.fn_name) != fr[i].name)
		return -EFAULT;
	if ((c = (struct phpfn *)codecache_slot(ph->cc, &pp->cache, addr)) == NULL)
		return -EFAULT;
	if (c->e.addr == addr && !fn_same(pp, c, hdr))
		codecache_drop(ph->cc, &pp->cache, &c->e);	/* another function there now */
	if (c->e.addr == 0) {
		c = (struct phpfn *)codecache_claim(ph->cc, &pp->cache, &c->e, addr);
		if (fn_load(ph, pp, p, c, hdr) < 0) {
			codecache_drop(ph->cc, &pp->cache, &c->e);
			return -EFAULT;
		}
	}
	if (c->checked < ph->hdr_at[i])
		c->checked = ph->hdr_at[i];
named:
	f->func = c->e.name;
	f->srcfile = c->e.file;
	f->line = fr[i].instr ? (int64_t)(uint32_t)fr[i].instr : (int64_t)c->line_start;
	return 0;
}

int
php_is_vm(const char *func)
{
	static const char vm[] = "execute_ex";

	return func && strncmp(func, vm, sizeof(vm) - 1) == 0 &&
	    (func[sizeof(vm) - 1] == '\0' || func[sizeof(vm) - 1] == '.');
}
