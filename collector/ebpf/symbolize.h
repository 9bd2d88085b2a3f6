/*
 * symbolize: addresses to function names, for the eBPF sampler. Three
 * sources: ELF objects (their .symtab, else .dynsym and MiniDebugInfo, plus a
 * separate debug file found by build id or .gnu_debuglink, or fetched by
 * debuginfod.c), the kernel (/proc/kallsyms), and
 * JIT perf maps (/tmp/perf-PID.map). Which process maps what where, and the
 * load bias of each mapping, is proctab.c's business.
 *
 * What the ELF objects' tables keep is charged to the memory budget and
 * bounded (symbolize.c): a quarter of the budget for all, a quarter of that
 * for one; a table past it is cut, and tables not in use are let go, least
 * recently used first, to make room for a new one.
 *
 * Not thread-safe: one symbolizer belongs to the sampler's thread.
 */
#ifndef PROFILEFS_SYMBOLIZE_H
#define PROFILEFS_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct symbolizer;

/*
 * Bytes of a name kept where names are read (symbol tables, perf maps,
 * runtime names): a longer one is cut to this, ending in "...". A process
 * may name its functions anything; the store and every view pay for it.
 */
#define SYM_NAME_MAX	4096

/* A loaded ELF object; owned by the symbolizer's cache. */
struct elfobj;

/*
 * Open a file the sampler (often root) reads on behalf of other users' processes:
 * never blocking (a FIFO in its place is refused, not waited on), a regular
 * file only, at most max_size bytes (0: any), and with follow false not
 * through a symbolic link. An fd or -errno.
 */
int			 symbolize_open(const char *path, bool follow, off_t max_size);
struct symbolizer	*symbolize_create(void);
void			 symbolize_destroy(struct symbolizer *s);

/*
 * The ELF object of file (dev, ino), from the cache or read from `path`
 * (a path this process can open, e.g. /proc/PID/map_files/A-B). `root` is the
 * process's root (/proc/PID/root) and `name` the file's name inside it, used
 * to find debug files through .gnu_debuglink. Returns NULL when the file cannot
 * be read or is not ELF (remembered, so it is not retried on every sample).
 * A returned object holds a reference: symbolize_elf_put() it when done.
 */
struct elfobj	*symbolize_elf(struct symbolizer *s, uint64_t dev, uint64_t ino,
		    const char *path, const char *root, const char *name);
void		 symbolize_elf_put(struct elfobj *o);
/*
 * The vdso, read from this process's own image: the kernel maps the same one
 * into every 64-bit process. NULL if there is none. Owned by s (put is harmless).
 */
struct elfobj	*symbolize_vdso(struct symbolizer *s);
/* Where this process's vdso image is mapped, and its size. 0 or -ENOENT. */
int		 symbolize_vdso_image(const void **image, size_t *size);
/*
 * Load bias of a mapping of o at [start, ...) from file offset `off`:
 * ELF virtual address = runtime address - bias. -ENOENT if no loadable
 * segment covers the offset.
 */
int		 symbolize_elf_bias(const struct elfobj *o, uint64_t start, uint64_t off,
		    uint64_t *bias);
/* Name of the function containing ELF address vaddr, or NULL. Owned by o. */
const char	*symbolize_elf_lookup(const struct elfobj *o, uint64_t vaddr);
/*
 * Source file and line of ELF address vaddr from the DWARF of o (or of its
 * debug file), when it has any: 0, or -ENOENT. *file is owned by o.
 */
int		 symbolize_elf_line(struct elfobj *o, uint64_t vaddr, const char **file,
		    int64_t *line);
/*
 * symbolize_elf_lookup and symbolize_elf_line (*srcfile NULL and *line 0
 * where unknown) of o at vaddr, from a cache of the last ones asked. o must
 * be one of s's. The strings are owned by o; a file name is valid until the
 * next symbolize_elf_expire (which lets line tables go past a bound).
 */
void		 symbolize_elf_resolve(struct symbolizer *s, struct elfobj *o, uint64_t vaddr,
		    const char **func, const char **srcfile, int64_t *line);
/* The object's GNU build id in hex, "" if none. Owned by o. */
const char	*symbolize_elf_build_id(const struct elfobj *o);
/*
 * Drop unreferenced objects not used since `before` (seconds, monotonic), and
 * the DWARF line tables decoded if more than a bound are held (once a period).
 */
void		 symbolize_elf_expire(struct symbolizer *s, time_t before);
size_t		 symbolize_elf_count(const struct symbolizer *s);

/*
 * Fetch debug files of ELF objects without a symbol table from d (NULL: none;
 * owned by the caller, outliving s) once local ones are not found.
 */
struct dbginfod;
void		 symbolize_set_debuginfod(struct symbolizer *s, struct dbginfod *d);
/*
 * Read the debug files that arrived since the last call into the objects
 * waiting for them, and ask again for missing ones whose retry time came.
 * Names handed out before may move: call it between periods, when no
 * caller holds any. Returns how many objects got names.
 */
size_t		 symbolize_debuginfod_poll(struct symbolizer *s);

/* Kernel function containing addr, from /proc/kallsyms (loaded once), or NULL. */
const char	*symbolize_kernel(struct symbolizer *s, uint64_t addr);
/* Whether kernel addresses are readable (kptr_restrict allows us). */
bool		 symbolize_kernel_ok(struct symbolizer *s);

/*
 * A JIT perf map (/tmp/perf-PID.map: "START SIZE name" lines, hex). The
 * latest line covering an address wins. Owned by the caller.
 */
struct perfmap;
#define PERFMAP_MAX_BYTES	(64 << 20)
/* Read path; NULL if it cannot be read. */
struct perfmap	*perfmap_load(const char *path, uid_t owner);
/* The same from fd, which it takes (closed in any case). */
struct perfmap	*perfmap_load_fd(int fd, uid_t owner);
void		 perfmap_free(struct perfmap *m);
const char	*perfmap_lookup(const struct perfmap *m, uint64_t addr);

#endif
