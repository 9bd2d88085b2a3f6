/*
 * pytree: a stack tree in Pyroscope's serialized tree form, the bytes its
 * query API answers for PROFILE_FORMAT_TREE (SelectMergeStacktracesResponse.
 * tree) and its own clients decode (pkg/model/tree.go, UnmarshalTree). The
 * layout, all integers unsigned LEB128 varints as protobuf's:
 *
 *   node     := name_len  name[name_len]  self  n_children  child*n_children
 *
 * written depth first from a nameless virtual root whose children are the
 * stacks' roots. Children are kept sorted by name (bytewise) and written
 * from the last to the first, as Pyroscope's writer pops them off a stack.
 * Past max_nodes, as Pyroscope does: the max_nodes-th largest total is the
 * bar, children under it are summed into one child "other" of their parent
 * (self only, no children), or into the existing child called "other".
 * Only the values of the current profile are written (no base).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "render.h"

#define PYTREE_OTHER	"other"

struct pyitem {
	uint32_t	 node;		/* UINT32_MAX: a new "other" child */
	int64_t		 self_add;	/* summed children added to self */
};

static int
i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The smallest total a node needs to be written whole into *bar: the
 * max_nodes-th largest total (Pyroscope's minValue), 0 when every node
 * fits (as there, a negative total never counts as fitting). 0 or -ENOMEM.
 */
static int
pytree_bar(const struct render_tree *t, size_t max_nodes, int64_t *bar)
{
	int64_t *tot;
	size_t n = t->n - 1;

	*bar = 0;
	if (max_nodes == 0 || n <= max_nodes)
		return 0;
	if ((tot = malloc(n * sizeof(*tot))) == NULL)
		return -ENOMEM;
	memcpy(tot, t->cur + 1, n * sizeof(*tot));
	qsort(tot, n, sizeof(*tot), i64_desc);
	*bar = tot[max_nodes - 1];
	free(tot);
	return 0;
}

static void
put_node(struct buf *out, const char *name, int64_t self, size_t nkids)
{
	size_t len = strlen(name);

	buf_add_varint(out, len);
	buf_add(out, name, len);
	buf_add_varint(out, (uint64_t)self);
	buf_add_varint(out, nkids);
}

int
pytree_encode(const struct render_tree *t, size_t max_nodes, struct buf *out)
{
	struct pyitem *stack = NULL;
	size_t sp = 0, cap;
	int64_t bar;
	int rc = 0;

	if (t->n <= 1)		/* no stack: Pyroscope writes nothing */
		return buf_reserve(out, 0);
	if ((rc = pytree_bar(t, max_nodes, &bar)) < 0)
		return rc;
	/* Every node once, and at most one "other" per parent. */
	cap = 2 * (size_t)t->n;
	if ((stack = malloc(cap * sizeof(*stack))) == NULL)
		return -ENOMEM;
	stack[sp++] = (struct pyitem){ .node = 0 };
	while (sp > 0) {
		struct pyitem it = stack[--sp];
		const uint32_t *kids;
		size_t nk, k, kept = 0, other_at = SIZE_MAX;
		int64_t other = 0;

		if (it.node == UINT32_MAX) {
			put_node(out, PYTREE_OTHER, it.self_add, 0);
			continue;
		}
		kids = &t->kids[t->kid_start[it.node]];
		nk = t->kid_start[it.node + 1] - t->kid_start[it.node];
		for (k = 0; k < nk; k++) {
			bool is_other = strcmp(render_tree_name(t, kids[k]), PYTREE_OTHER) == 0;

			if (t->cur[kids[k]] >= bar || is_other) {
				if (is_other)
					other_at = sp;
				stack[sp++] = (struct pyitem){ .node = kids[k] };
				kept++;
			} else
				other += t->cur[kids[k]];
		}
		if (other > 0 && other_at != SIZE_MAX)
			stack[other_at].self_add += other;
		else if (other > 0) {
			/* A new "other", in its place by name among the kept. */
			size_t first = sp - kept, at = sp;

			while (at > first && strcmp(render_tree_name(t, stack[at - 1].node),
			    PYTREE_OTHER) > 0)
				at--;
			memmove(&stack[at + 1], &stack[at], (sp - at) * sizeof(*stack));
			stack[at] = (struct pyitem){ .node = UINT32_MAX, .self_add = other };
			sp++;
			kept++;
		}
		put_node(out, it.node == 0 ? "" : render_tree_name(t, it.node),
		    (it.node == 0 ? t->cur_self[0] : t->cur_self[it.node]) + it.self_add, kept);
	}
	free(stack);
	return buf_error(out);
}
