/*
 * render: the renderers of a range directory's generated files, as plain
 * functions of decoded profiles (no store, no FUSE), so unit tests can call
 * them on real profiles:
 *
 *   render.c    the stack tree every renderer starts from (frame names,
 *               inlined frames expanded, packages), and value formatting
 *   names.c     demangling (C++, Rust) and the escaping of names in text
 *   flame.c     flamegraph.svg and the differential diff.svg
 *   folded.c    folded.txt ("root;caller;leaf value")
 *   top.c       top.txt, plain and differential
 *   pytree.c    Pyroscope's serialized tree (the query API's TREE format)
 *   timeline.c  timeline.svg and timeline.csv from per-step totals
 *
 * Nothing here keeps state between calls; every function is thread-safe.
 */
#ifndef PROFILEFS_RENDER_H
#define PROFILEFS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"

struct intern;

/*
 * A tree of call stacks, root first. Node 0 is the root ("all"); every other
 * node is one frame under its parent. A Location with several lines becomes
 * several frames (the last line is the caller). Values are cumulative (the
 * node and everything under it) and self (samples ending there), for the
 * current profile and, in a diff, the base. Owned by the caller:
 * render_tree_free().
 */
struct render_tree {
	struct intern	*names;		/* frame name (NUL included) -> name id */
	/* (parent, name) -> node id: open addressing over the node arrays
	 * (0: a free slot; the root is no one's child) */
	uint32_t	*edges;
	size_t		 nedges;	/* slots, a power of two */
	uint32_t	*parent, *name;	/* per node */
	int64_t		*cur, *cur_self;
	int64_t		*base, *base_self;
	size_t		 n, cap;
	/* After render_tree_build: node i's children, sorted by name, are
	 * kids[kid_start[i] .. kid_start[i + 1]). */
	uint32_t	*kids, *kid_start;
	bool		 has_base;
	bool		 cut;		/* some stack was cut at RENDER_MAX_DEPTH */
	bool		 truncated;	/* a limit below summed frames into one */
	size_t		 nroots;	/* children of the root */
	size_t		 charged;	/* bytes of the arrays in the memory budget */
	/* Per name id, for colouring: RENDER_KIND_KERNEL when some frame of
	 * that name ran in a kernel mapping ("[kernel]", "[kernel.kallsyms]",
	 * "vmlinux"), RENDER_KIND_PYTHON in the mapping "[python]". */
	uint8_t		*kernel;
	size_t		 nkernel;
};

/*
 * Frames below the root kept per stack; deeper ones are summed into one
 * frame "[deeper frames cut]" (t->cut is set), so the tree and every view of
 * it stay bounded by the number of samples, not by a stack's depth.
 */
#define RENDER_MAX_DEPTH	4096
/*
 * The tree's other bounds, so that its memory (about 100 bytes a node, all
 * of it in the memory budget) follows the picture, not the input: a
 * location's inlined lines expanded (the callers' and the leaf's halves are
 * kept, the middle becomes "[inlined frames cut]"), the nodes in all and
 * the frames under the root. A stack needing a node past them ends in one
 * frame "[more frames: tree limit]" that holds its value. t->truncated is
 * set; the flame graph says so.
 */
#define RENDER_MAX_INLINE	128
#define RENDER_MAX_NODES	(256 * 1024)
#define RENDER_MAX_ROOTS	4096

#define RENDER_KIND_KERNEL	1
#define RENDER_KIND_PYTHON	2

/*
 * Build the tree of sample type ctype of cur and, when base is not NULL, of
 * type btype of base. *t is filled (caller frees with render_tree_free()).
 */
int	render_tree_build(struct render_tree *t, const struct profile *cur,
	    size_t ctype, const struct profile *base, size_t btype);
void	render_tree_free(struct render_tree *t);
/* The memory t holds (for caches that charge it). */
size_t	render_tree_bytes(const struct render_tree *t);
/* The name of node i (a NUL-terminated string owned by the tree). */
const char *render_tree_name(const struct render_tree *t, uint32_t i);

/*
 * The package or module a frame name belongs to, for colouring: Go
 * "path/pkg.(*T).M" -> "path/pkg", C++/Rust "ns::f" -> "ns", Java
 * "pkg.Class.m" -> "pkg.Class", kernel frames -> "[kernel]", unsymbolized
 * "libc.so.6+0x12" -> "libc.so.6". Written into out (NUL-terminated).
 */
void	render_package(const char *name, char *out, size_t n);
/* Whether a frame name is a kernel frame ("[kernel]", "_[k]", ...). */
bool	render_is_kernel(const char *name);
/* Whether node i is a kernel frame, by its name or its mapping. */
bool	render_tree_is_kernel(const struct render_tree *t, uint32_t i);
/* Whether node i is a Python frame (its mapping is "[python]"). */
bool	render_tree_is_python(const struct render_tree *t, uint32_t i);

/*
 * Whether name looks mangled (C++ "_Z...", Rust legacy "_ZN...", Rust v0
 * "_R..."). render_demangle writes its demangled form (as c++filt prints it)
 * into out and returns 1, or returns 0 (out untouched) when name is not a
 * mangled name the demangler reads, or is too long; -ENOMEM. The tree's
 * frame names are demangled (stored profiles keep the names as written).
 */
bool	render_is_mangled(const char *name);
int	render_demangle(const char *name, struct buf *out);
/*
 * Append name as text for a terminal: C0 and C1 control characters, DEL and
 * bytes that are not UTF-8 become "\xHH". 0 or -ENOMEM.
 */
int	render_add_text(struct buf *out, const char *name);

/* Append v in unit ("nanoseconds" -> "1.25 s", "bytes" -> "3.2 MiB", else "12,345 unit"). */
int	render_value(struct buf *out, int64_t v, const char *unit);
/* The index of the sample type called name in p, or -1. */
int	render_type_index(const struct profile *p, const char *name);

/* --- flame graphs (flame.c) --- */

struct flame_opts {
	const char	*title;		/* first line: what this graph shows */
	const char	*note;		/* second line (may be NULL): e.g. "no base" */
	const char	*unit;		/* unit of the values */
	const char	*type;		/* sample type name */
	bool		 diff;		/* colour by change against the tree's base */
	/*
	 * With diff: compare each frame's share of its side's total (the
	 * current side scaled to the base's total, as pprof -normalize does)
	 * instead of absolute values. Widths are the current profile's either way.
	 */
	bool		 normalized;
};

/* A self-contained interactive SVG of t, appended to out. */
int	flame_render(const struct render_tree *t, const struct flame_opts *o,
	    struct buf *out);

/* --- folded stacks (folded.c) --- */

/* "frame;frame;leaf value\n" per distinct stack of t's current values. */
int	folded_render(const struct render_tree *t, struct buf *out);

/* --- Pyroscope's tree bytes (pytree.c) --- */

/*
 * Append t's current values in Pyroscope's serialized tree form (the bytes of
 * its PROFILE_FORMAT_TREE answers), at most max_nodes nodes whole (0: all),
 * the rest summed into children "other" as Pyroscope does. An empty tree
 * appends nothing. 0 or -ENOMEM.
 */
int	pytree_encode(const struct render_tree *t, size_t max_nodes, struct buf *out);

/* --- top functions (top.c) --- */

/*
 * pprof -top style tables of t's functions (frame names), by flat and by
 * cumulative value, at most TOP_ROWS rows each. With a base in t: the change
 * from the base, in percent of the base total as pprof shows a diff. title
 * heads the text; unit formats the values.
 */
#define TOP_ROWS	200
int	top_render(const struct render_tree *t, const char *title, const char *unit,
	    struct buf *out);
/*
 * The same, with a base in t, comparing shares: the current values scaled to
 * the base's total first (as `go tool pprof -normalize -diff_base` does, to
 * within rounding: pprof rounds each sample, this each function's sum).
 */
int	top_render_normalized(const struct render_tree *t, const char *title,
	    const char *unit, struct buf *out);
/* The factor top_render_normalized scales t's current values by (base total / current total). */
double	render_norm_scale(const struct render_tree *t);
/* v * r rounded to the nearest integer (halves away from zero), saturated. */
int64_t	render_scale_value(int64_t v, double r);

/* --- timeline (timeline.c) --- */

/* A time series of totals over [from, to), in steps of `step` ns. */
struct timeline {
	int64_t		 from, to, step;
	size_t		 nsteps;
	int64_t		*sum;		/* per step */
	uint32_t	*count;		/* profiles per step */
	bool		 gauge;		/* values are averaged over a step's profiles */
};

/*
 * Choose a step giving at most TIMELINE_MAX_STEPS steps aligned to UTC, and
 * allocate the arrays (zeroed). Caller frees with timeline_free().
 */
#define TIMELINE_MAX_STEPS	120
int	timeline_init(struct timeline *tl, int64_t from, int64_t to, bool gauge);
/* Count one profile's total at time t (outside [from, to): ignored). */
void	timeline_add(struct timeline *tl, int64_t t, int64_t total);
/* The same for n profiles summed into total (a window past retention). */
void	timeline_add_n(struct timeline *tl, int64_t t, int64_t total, uint32_t n);
/* The value of step i: a sum, or an average for gauges. */
int64_t	timeline_value(const struct timeline *tl, size_t i);
void	timeline_free(struct timeline *tl);
/*
 * "time,<type>_<unit>" (time,cpu_nanoseconds) then one line per step: its
 * UTC RFC 3339 start, the value. CPU time (cpu, nanoseconds, summed) has a
 * third column, cpu_cores: the value over the step's length.
 */
int	timeline_csv(const struct timeline *tl, const char *type, const char *unit,
	    struct buf *out);
/*
 * A bar chart with axes, headed by where and what type and unit it shows;
 * unit formats values. CPU time is drawn in cores. Time ticks fall on round
 * times.
 */
int	timeline_svg(const struct timeline *tl, const char *where, const char *type,
	    const char *unit, struct buf *out);

#endif
