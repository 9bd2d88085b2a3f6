/*
 * render: the stack tree shared by the flame graph, folded and diff
 * renderers, frame naming (inlined lines expanded, unsymbolized frames shown
 * as mapping+offset), package names for colouring, and value formatting.
 * The renderers themselves live in flame.c, folded.c, top.c, timeline.c.
 */
#define _GNU_SOURCE	/* qsort_r */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "render.h"

#define NO_STACK	"[no stack]"
/*
 * Stacks are cut this many frames below the root: a few hundred bytes of
 * gzipped profile can hold a recursion millions of frames deep, and every
 * view would grow with it. The value of the frames below goes to one frame
 * named CUT_FRAME, so totals stay exact.
 */
#define CUT_FRAME	"[deeper frames cut]"
/*
 * A location's inlined lines past RENDER_MAX_INLINE: the callers' half and
 * the leaf's half are kept, the lines between become this one frame.
 */
#define INLINE_FRAME	"[inlined frames cut]"
/*
 * Past RENDER_MAX_NODES nodes (RENDER_MAX_ROOTS under the root), the rest of
 * a stack that would need a new node goes to this frame under the last node
 * it has: totals stay exact, the tree bounded (pprof's node limit, without
 * dropping any value).
 */
#define TRUNC_FRAME	"[more frames: tree limit]"

/*
 * Take n bytes of the memory budget for the tree's arrays; t->charged says
 * what render_tree_free() gives back.
 */
static int
tree_charge(struct render_tree *t, size_t n)
{
	if (budget_reserve(n) < 0)
		return -ENOMEM;
	t->charged += n;
	return 0;
}

const char *
render_tree_name(const struct render_tree *t, uint32_t i)
{
	size_t len;

	if (i == 0)
		return "all";
	assert(i < t->n);
	return intern_key(t->names, t->name[i], &len);
}

int
render_type_index(const struct profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nsample_types; i++)
		if (strcmp(profile_str(p, p->sample_types[i].type), name) == 0)
			return (int)i;
	return -1;
}

/* The display name of line `li` of location l (li == nlines: the address form). */
static void
frame_name(const struct profile *p, const struct pf_location *l, uint32_t li,
    struct buf *out)
{
	const char *s = "";

	buf_reset(out);
	if (li < l->nlines && l->lines[li].function < p->nfunctions) {
		const struct pf_function *f = &p->functions[l->lines[li].function];

		s = profile_str(p, f->name);
		if (s[0] == '\0')
			s = profile_str(p, f->system_name);
	}
	if (s[0]) {
		if (render_demangle(s, out) == 0)
			buf_adds(out, s);
		return;
	}
	if (l->mapping > 0 && l->mapping <= p->nmappings) {
		const struct pf_mapping *m = &p->mappings[l->mapping - 1];
		const char *file = profile_str(p, m->filename), *slash = strrchr(file, '/');

		if (file[0]) {
			buf_printf(out, "%s+0x%" PRIx64, slash ? slash + 1 : file,
			    l->address - m->start + m->offset);
			return;
		}
	}
	buf_printf(out, "0x%" PRIx64, l->address);
}

/* Whether a mapping's file is the kernel's. */
static bool
kernel_mapping(const struct profile *p, const struct pf_location *l)
{
	const char *f;

	if (l->mapping == 0 || l->mapping > p->nmappings)
		return false;
	f = profile_str(p, p->mappings[l->mapping - 1].filename);
	return strncmp(f, "[kernel", 7) == 0 || strcmp(f, "[vdso]") == 0 ||
	    strcmp(f, "vmlinux") == 0 || strncmp(f, "/boot/vmlinux", 13) == 0;
}

/*
 * Whether a location is an interpreter's frame, Python's or Ruby's (the eBPF
 * sampler's mappings "[python]" and "[ruby]"): coloured alike.
 */
static bool
python_mapping(const struct profile *p, const struct pf_location *l)
{
	const char *f;

	if (l->mapping == 0 || l->mapping > p->nmappings)
		return false;
	f = profile_str(p, p->mappings[l->mapping - 1].filename);
	return strcmp(f, "[python]") == 0 || strcmp(f, "[ruby]") == 0;
}

static int
mark_kind(struct render_tree *t, uint32_t id, uint8_t kind)
{
	if (id >= t->nkernel) {
		size_t old = t->nkernel;

		t->kernel = xgrow(t->kernel, &t->nkernel, (size_t)id + 1, 1);
		memset(t->kernel + old, 0, t->nkernel - old);
	}
	t->kernel[id] |= kind;
	return 0;
}

bool
render_tree_is_kernel(const struct render_tree *t, uint32_t i)
{
	if (i == 0 || i >= t->n)
		return false;
	if (t->name[i] < t->nkernel && (t->kernel[t->name[i]] & RENDER_KIND_KERNEL))
		return true;
	return render_is_kernel(render_tree_name(t, i));
}

bool
render_tree_is_python(const struct render_tree *t, uint32_t i)
{
	if (i == 0 || i >= t->n)
		return false;
	return t->name[i] < t->nkernel && (t->kernel[t->name[i]] & RENDER_KIND_PYTHON);
}

/* Per location, the name ids of its frames, caller first. */
struct locnames {
	uint32_t	*ids;
	uint32_t	*first;		/* nlocations + 1 offsets into ids */
	size_t		 bytes;		/* in the memory budget */
};

/*
 * The name id of line li of location l: named functions are looked up (and
 * demangled) once per function, in fname (per function index, -1: not yet).
 */
static int64_t
line_name_id(struct render_tree *t, const struct profile *p, const struct pf_location *l,
    uint32_t li, int64_t *fname, struct buf *name)
{
	uint32_t fn = li < l->nlines ? l->lines[li].function : UINT32_MAX;
	int64_t id;
	int added;

	if (fn < p->nfunctions && fname[fn] >= 0)
		return fname[fn];
	frame_name(p, l, li, name);
	/* Folded and flame formats use ';' and newlines as separators. */
	for (char *c = name->data; c && *c; c++)
		if (*c == ';' || *c == '\n' || *c == '\r')
			*c = *c == ';' ? ':' : ' ';
	if ((id = intern_put(t->names, name->data, name->len + 1, &added)) < 0)
		return -ENOMEM;
	/* A function without a name is shown by its location's address: not cached. */
	if (fn < p->nfunctions && (profile_str(p, p->functions[fn].name)[0] ||
	    profile_str(p, p->functions[fn].system_name)[0]))
		fname[fn] = id;
	return id;
}

static int
locnames_build(struct render_tree *t, const struct profile *p, struct locnames *ln)
{
	struct buf name = { 0 };
	size_t i, total = 0, k = 0;
	uint32_t j, nl;
	int64_t id, *fname = NULL;
	int rc = 0, added;

	for (i = 0; i < p->nlocations; i++) {
		nl = p->locations[i].nlines ? p->locations[i].nlines : 1;
		total += nl < RENDER_MAX_INLINE ? nl : RENDER_MAX_INLINE;
	}
	ln->bytes = (total + 1 + p->nlocations + 1) * sizeof(uint32_t);
	if (budget_reserve(ln->bytes) < 0) {
		ln->bytes = 0;
		return -ENOMEM;
	}
	ln->ids = malloc((total + 1) * sizeof(*ln->ids));
	ln->first = malloc((p->nlocations + 1) * sizeof(*ln->first));
	fname = malloc((p->nfunctions + 1) * sizeof(*fname));
	if (ln->ids == NULL || ln->first == NULL || fname == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(fname, 0xff, (p->nfunctions + 1) * sizeof(*fname));
	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];

		ln->first[i] = (uint32_t)k;
		nl = l->nlines ? l->nlines : 1;
		for (j = nl; j-- > 0;) {
			if (nl > RENDER_MAX_INLINE && j < nl - RENDER_MAX_INLINE / 2 &&
			    j >= RENDER_MAX_INLINE / 2 - 1) {
				/* The middle of a long inline chain: one frame for all of it. */
				if (j != RENDER_MAX_INLINE / 2 - 1)
					continue;
				if ((id = intern_put(t->names, INLINE_FRAME, sizeof(INLINE_FRAME),
				    &added)) < 0) {
					rc = -ENOMEM;
					goto out;
				}
				ln->ids[k++] = (uint32_t)id;
				t->truncated = true;
				continue;
			}
			if ((id = line_name_id(t, p, l, l->nlines ? j : l->nlines, fname,
			    &name)) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			if ((kernel_mapping(p, l) &&
			    mark_kind(t, (uint32_t)id, RENDER_KIND_KERNEL) < 0) ||
			    (python_mapping(p, l) &&
			    mark_kind(t, (uint32_t)id, RENDER_KIND_PYTHON) < 0)) {
				rc = -ENOMEM;
				goto out;
			}
			ln->ids[k++] = (uint32_t)id;
		}
	}
	ln->first[p->nlocations] = (uint32_t)k;
out:
	free(fname);
	buf_free(&name);
	return rc;
}

/* Bytes per node of the six per-node arrays. */
#define NODE_BYTES	(2 * sizeof(uint32_t) + 4 * sizeof(int64_t))

static int
tree_grow(struct render_tree *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;

	if (tree_charge(t, (cap - t->cap) * NODE_BYTES) < 0)
		return -ENOMEM;
	t->parent = xreallocarray(t->parent, cap, sizeof(*t->parent));
	t->name = xreallocarray(t->name, cap, sizeof(*t->name));
	t->cur = xreallocarray(t->cur, cap, sizeof(*t->cur));
	t->cur_self = xreallocarray(t->cur_self, cap, sizeof(*t->cur_self));
	t->base = xreallocarray(t->base, cap, sizeof(*t->base));
	t->base_self = xreallocarray(t->base_self, cap, sizeof(*t->base_self));
	t->cap = cap;
	return 0;
}

/* The slot of (parent, name) in the edge table: its node, or the free slot to take. */
static size_t
edge_slot(const struct render_tree *t, uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * UINT64_C(0x9e3779b97f4a7c15);
	size_t mask = t->nedges - 1, i = (size_t)(h >> 32) & mask;
	uint32_t id;

	while ((id = t->edges[i]) != 0 && (t->parent[id] != parent || t->name[id] != name))
		i = (i + 1) & mask;
	return i;
}

/* Double the edge table (at half load), placing nodes 1 .. n-1 again. */
static int
edges_grow(struct render_tree *t)
{
	size_t cap = t->nedges ? t->nedges * 2 : 2048, i;

	if (tree_charge(t, (cap - t->nedges) * sizeof(*t->edges)) < 0)
		return -ENOMEM;
	free(t->edges);
	t->edges = xcalloc(cap, sizeof(*t->edges));
	t->nedges = cap;
	for (i = 1; i < t->n; i++)
		t->edges[edge_slot(t, t->parent[i], t->name[i])] = (uint32_t)i;
	return 0;
}

/*
 * The child of parent called name, created if missing; -ENOMEM, -ENOSPC
 * (a new node past the tree's limits, unless forced) or the node.
 */
static int64_t
tree_child(struct render_tree *t, uint32_t parent, uint32_t name, bool force)
{
	size_t slot = edge_slot(t, parent, name);
	uint32_t id = t->edges[slot];

	if (id != 0)
		return id;
	if (!force && (t->n >= RENDER_MAX_NODES || (parent == 0 && t->nroots >= RENDER_MAX_ROOTS)))
		return -ENOSPC;
	if (t->n >= UINT32_MAX)
		return -ENOMEM;
	id = (uint32_t)t->n;
	if (t->n >= t->cap && tree_grow(t) < 0)
		return -ENOMEM;
	t->parent[id] = parent;
	t->name[id] = name;
	t->cur[id] = t->cur_self[id] = t->base[id] = t->base_self[id] = 0;
	t->n++;
	if (parent == 0)
		t->nroots++;
	if (2 * t->n > t->nedges) {
		if (edges_grow(t) < 0)
			return -ENOMEM;
	} else
		t->edges[slot] = id;
	return id;
}

/* The cumulative (or self) array of the current or base values. */
static int64_t *
tree_vals(struct render_tree *t, bool base, bool self)
{
	if (base)
		return self ? t->base_self : t->base;
	return self ? t->cur_self : t->cur;
}

static int
tree_add(struct render_tree *t, const struct profile *p, size_t type, bool base)
{
	struct locnames ln = { 0 };
	size_t i;
	int added, rc;

	if ((rc = locnames_build(t, p, &ln)) < 0 || type >= p->nsample_types)
		goto out;
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		int64_t v = s->values[type], node = 0, id;
		uint32_t k, j, depth = 0;

		if (v == 0)
			continue;
		/* tree_child may move the arrays: look them up after each call. */
		tree_vals(t, base, false)[0] = profile_add(tree_vals(t, base, false)[0], v);
		for (k = s->nlocs; k-- > 0;) {
			uint32_t loc = s->locs[k];

			if (loc >= p->nlocations)
				continue;
			for (j = ln.first[loc]; j < ln.first[loc + 1]; j++) {
				uint32_t name = ln.ids[j];

				if (depth == RENDER_MAX_DEPTH) {
					id = intern_put(t->names, CUT_FRAME, sizeof(CUT_FRAME), &added);
					if (id < 0) {
						rc = -ENOMEM;
						goto out;
					}
					name = (uint32_t)id;
					t->cut = true;
				}
				if ((id = tree_child(t, (uint32_t)node, name, false)) == -ENOSPC) {
					/* Full: the rest of this stack is one frame under node. */
					id = intern_put(t->names, TRUNC_FRAME, sizeof(TRUNC_FRAME), &added);
					if (id >= 0)
						id = tree_child(t, (uint32_t)node, (uint32_t)id, true);
					t->truncated = true;
					if (id >= 0) {
						node = id;
						tree_vals(t, base, false)[node] =
						    profile_add(tree_vals(t, base, false)[node], v);
						goto leaf;
					}
				}
				if (id < 0) {
					rc = -ENOMEM;
					goto out;
				}
				node = id;
				tree_vals(t, base, false)[node] = profile_add(tree_vals(t, base, false)[node], v);
				if (++depth > RENDER_MAX_DEPTH)
					goto leaf;
			}
		}
leaf:
		if (node == 0) {
			/* A sample without locations still counts, under its own frame. */
			id = intern_put(t->names, NO_STACK, sizeof(NO_STACK), &added);
			if (id < 0 || (node = tree_child(t, 0, (uint32_t)id, true)) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			tree_vals(t, base, false)[node] = profile_add(tree_vals(t, base, false)[node], v);
		}
		tree_vals(t, base, true)[node] = profile_add(tree_vals(t, base, true)[node], v);
	}
out:
	free(ln.ids);
	free(ln.first);
	budget_release(ln.bytes);
	return rc;
}

/* Name ids ordered by their names (strcmp), for sorting children by name. */
static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
name_cmp(const void *a, const void *b, void *arg)
{
	const struct intern *names = arg;
	size_t la, lb;

	return strcmp(intern_key(names, *(const uint32_t *)a, &la),
	    intern_key(names, *(const uint32_t *)b, &lb));
}

/*
 * kids and kid_start from the parent links: each node's children, ordered
 * by name. Names are ranked once (there are far fewer names than nodes);
 * then the nodes, bucketed by parent, are sorted by rank within each bucket.
 */
static int
kids_build(struct render_tree *t)
{
	size_t nn = intern_count(t->names), i, j;
	uint32_t *order, *rank, *fill;

	order = malloc((nn ? nn : 1) * sizeof(*order));
	rank = malloc((nn ? nn : 1) * sizeof(*rank));
	fill = malloc((t->n + 1) * sizeof(*fill));
	if (order == NULL || rank == NULL || fill == NULL) {
		free(order);
		free(rank);
		free(fill);
		return -ENOMEM;
	}
	for (i = 0; i < nn; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, nn, sizeof(*order), name_cmp, t->names);
	for (i = 0; i < nn; i++)
		rank[order[i]] = (uint32_t)i;
	/* kid_start[p] = first index in kids whose parent is >= p. */
	for (i = 1; i < t->n; i++)
		t->kid_start[t->parent[i] + 1]++;
	for (i = 0; i < t->n; i++)
		t->kid_start[i + 1] += t->kid_start[i];
	memcpy(fill, t->kid_start, (t->n + 1) * sizeof(*fill));
	for (i = 1; i < t->n; i++)
		t->kids[fill[t->parent[i]]++] = (uint32_t)i;
	/* Within a parent, by name rank: insertion sort, children are few and mostly in order. */
	for (i = 0; i < t->n; i++) {
		uint32_t *k = &t->kids[t->kid_start[i]];
		size_t nk = t->kid_start[i + 1] - t->kid_start[i];

		if (nk > 32) {
			/* many: sort keys (rank, node) packed into the kids' slots via a buffer */
			uint64_t *key = malloc(nk * sizeof(*key));

			if (key == NULL) {
				free(order);
				free(rank);
				free(fill);
				return -ENOMEM;
			}
			for (j = 0; j < nk; j++)
				key[j] = (uint64_t)rank[t->name[k[j]]] << 32 | k[j];
			qsort(key, nk, sizeof(*key), u64_cmp);
			for (j = 0; j < nk; j++)
				k[j] = (uint32_t)key[j];
			free(key);
			continue;
		}
		for (j = 1; j < nk; j++) {
			uint32_t x = k[j], rx = rank[t->name[x]];
			size_t m = j;

			while (m > 0 && rank[t->name[k[m - 1]]] > rx) {
				k[m] = k[m - 1];
				m--;
			}
			k[m] = x;
		}
	}
	free(order);
	free(rank);
	free(fill);
	return 0;
}

int
render_tree_build(struct render_tree *t, const struct profile *cur, size_t ctype,
    const struct profile *base, size_t btype)
{
	int rc;

	memset(t, 0, sizeof(*t));
	t->names = intern_create(256);
	if (t->names == NULL || tree_grow(t) < 0 || edges_grow(t) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	t->n = 1;
	t->parent[0] = 0;
	t->name[0] = 0;
	t->cur[0] = t->cur_self[0] = t->base[0] = t->base_self[0] = 0;
	t->has_base = base != NULL;
	if ((rc = tree_add(t, cur, ctype, false)) < 0)
		goto fail;
	if (base && (rc = tree_add(t, base, btype, true)) < 0)
		goto fail;
	if ((rc = tree_charge(t, (t->n + 1 + t->n + 1) * sizeof(*t->kids))) < 0)
		goto fail;
	t->kids = malloc((t->n ? t->n : 1) * sizeof(*t->kids));
	t->kid_start = calloc(t->n + 1, sizeof(*t->kid_start));
	if (t->kids == NULL || t->kid_start == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = kids_build(t)) < 0)
		goto fail;
	return 0;
fail:
	render_tree_free(t);
	return rc;
}

size_t
render_tree_bytes(const struct render_tree *t)
{
	/* parent, name, kids, kid_start; cur, cur_self, base, base_self */
	size_t per = 4 * sizeof(uint32_t) + 4 * sizeof(int64_t);

	return sizeof(*t) + t->cap * per + t->nkernel +
	    (t->names ? intern_bytes(t->names) : 0) + t->nedges * sizeof(*t->edges);
}

void
render_tree_free(struct render_tree *t)
{
	if (t->names)
		intern_destroy(t->names);
	free(t->edges);
	free(t->parent);
	free(t->name);
	free(t->cur);
	free(t->cur_self);
	free(t->base);
	free(t->base_self);
	free(t->kids);
	free(t->kid_start);
	free(t->kernel);
	budget_release(t->charged);
	memset(t, 0, sizeof(*t));
}

/* --- names and values ---------------------------------------------------- */

double
render_norm_scale(const struct render_tree *t)
{
	/* pprof: a side whose total is 0 scales by 0. */
	if (t->n == 0 || !t->has_base || t->cur[0] == 0)
		return 0;
	return (double)t->base[0] / (double)t->cur[0];
}

int64_t
render_scale_value(int64_t v, double r)
{
	double d = round((double)v * r);	/* as pprof: half away from zero */

	if (d >= 9.2e18 || d <= -9.2e18)
		return d > 0 ? INT64_MAX : INT64_MIN;
	return (int64_t)d;
}

bool
render_is_kernel(const char *name)
{
	size_t n = strlen(name);

	return (n > 4 && strcmp(name + n - 4, "_[k]") == 0) ||
	    (n > 9 && strcmp(name + n - 9, " [kernel]") == 0) ||
	    strncmp(name, "[kernel", 7) == 0 || strncmp(name, "vmlinux+", 8) == 0;
}

void
render_package(const char *name, char *out, size_t n)
{
	const char *s = name, *end, *p, *slash, *dcolon, *paren;
	size_t len;

	if (n == 0)
		return;
	if (render_is_kernel(name)) {
		snprintf(out, n, "[kernel]");
		return;
	}
	/* Unsymbolized "file+0x1f": the file. */
	if ((p = strstr(name, "+0x")) != NULL && strchr(name, ' ') == NULL) {
		end = p;
		goto done;
	}
	/* Ignore argument lists and C++ templates past the name proper. */
	paren = strchr(s, '(');
	dcolon = strstr(s, "::");
	if (dcolon && (paren == NULL || dcolon < paren)) {
		/* C++/Rust: the first namespace ("std::vector<..>::push_back" -> "std"). */
		end = dcolon;
		if ((p = strchr(s, '<')) != NULL && p < end)
			end = p;
		goto done;
	}
	slash = NULL;
	for (p = s; *p && (paren == NULL || p < paren); p++)
		if (*p == '/')
			slash = p;
	if (slash) {
		/* Go "path/pkg.(*T).M" or Java "java/lang/Thread.run": up to the first '.' after the last '/'. */
		end = strchr(slash, '.');
		if (end == NULL)
			end = slash;
		goto done;
	}
	/* Dotted without a path: Java "pkg.Class.method" -> up to the class
	 * (the first capitalised component followed by more), else Go "pkg.F". */
	end = strchr(s, '.');
	if (end == NULL || end == s) {
		end = s + strlen(s);
		/* Python "func (file.py:12)" and the like: the file. */
		if ((p = strchr(s, '(')) != NULL && p > s) {
			s = p + 1;
			end = s + strcspn(s, ":)");
		}
		goto done;
	}
	for (p = s; p && *p; ) {
		const char *dot = strchr(p, '.');

		if (dot == NULL)
			break;
		if (*p >= 'A' && *p <= 'Z' && p != s) {
			end = dot;
			break;
		}
		p = dot + 1;
	}
done:
	len = (size_t)(end - s);
	if (len >= n)
		len = n - 1;
	memcpy(out, s, len);
	out[len] = '\0';
}

static int
add_grouped(struct buf *out, int64_t v)
{
	char digits[32], grouped[48];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n, i, k = 0;

	n = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, u);
	if (v < 0)
		grouped[k++] = '-';
	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			grouped[k++] = ',';
		grouped[k++] = digits[i];
	}
	grouped[k] = '\0';
	return buf_adds(out, grouped);
}

/* "%.2f unit" */
static int
render_fixed(struct buf *out, double v, const char *unit)
{
	buf_add_fixed(out, v, 2);
	buf_addc(out, ' ');
	return buf_adds(out, unit);
}

int
render_value(struct buf *out, int64_t v, const char *unit)
{
	double d = (double)v, a = d < 0 ? -d : d;
	static const char *const bytes[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i;

	if (strcmp(unit, "nanoseconds") == 0 || strcmp(unit, "ns") == 0) {
		if (a >= 3600e9)
			return render_fixed(out, d / 3600e9, "h");
		if (a >= 60e9)
			return render_fixed(out, d / 60e9, "min");
		if (a >= 1e9)
			return render_fixed(out, d / 1e9, "s");
		if (a >= 1e6)
			return render_fixed(out, d / 1e6, "ms");
		if (a >= 1e3)
			return render_fixed(out, d / 1e3, "us");
		return buf_printf(out, "%" PRId64 " ns", v);
	}
	if (strcmp(unit, "microseconds") == 0)
		return render_fixed(out, d / 1e3, "ms");
	if (strcmp(unit, "milliseconds") == 0 || strcmp(unit, "ms") == 0)
		return a >= 1e3 ? render_fixed(out, d / 1e3, "s") :
		    buf_printf(out, "%" PRId64 " ms", v);
	if (strcmp(unit, "bytes") == 0) {
		for (i = 0; i < 4 && a >= 1024; i++) {
			a /= 1024;
			d /= 1024;
		}
		return i ? render_fixed(out, d, bytes[i]) :
		    buf_printf(out, "%" PRId64 " B", v);
	}
	add_grouped(out, v);
	if (unit[0] && strcmp(unit, "count") != 0)
		buf_printf(out, " %s", unit);
	return 0;
}
