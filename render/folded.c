/*
 * folded: collapsed stacks as flamegraph.pl, speedscope and inferno read
 * them: "root;caller;leaf value", one line per distinct stack, in tree order
 * (callers sorted by name). Every sample's value is on exactly one line, so
 * the lines add up to the profile's total. Frame names never hold ';' or a
 * newline (render.c replaces them), and control bytes are written "\xHH".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "render.h"

/*
 * Deep stacks over many leaves grow as depth x leaves (a few hundred bytes of
 * recursive profile can ask for gigabytes): refuse past this with EFBIG and
 * the reason in the log, as the format has no way to leave frames out.
 */
#define FOLDED_MAX	(64u << 20)

struct todo {
	uint32_t	 node, depth;
};

int
folded_render(const struct render_tree *t, struct buf *out)
{
	struct todo *stack = NULL;
	uint32_t *path = NULL, k, d;
	size_t sp = 0;
	int rc = 0;

	if (t->n <= 1)
		return buf_reserve(out, 0);
	stack = malloc(t->n * sizeof(*stack));
	path = malloc(t->n * sizeof(*path));
	if (stack == NULL || path == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* Pre-order walk; path[1..depth] holds the frames from the root. */
	for (k = t->kid_start[1]; k-- > t->kid_start[0];)
		stack[sp++] = (struct todo){ t->kids[k], 1 };
	while (sp > 0) {
		struct todo td = stack[--sp];

		path[td.depth] = td.node;
		if (t->cur_self[td.node] != 0) {
			for (d = 1; d <= td.depth; d++) {
				if (d > 1)
					buf_addc(out, ';');
				render_add_text(out, render_tree_name(t, path[d]));
			}
			buf_addc(out, ' ');
			buf_add_i64(out, t->cur_self[td.node]);
			buf_addc(out, '\n');
			if (out->len > FOLDED_MAX) {
				log_warnx("folded.txt: more than %u MiB of stacks (%zu frames, "
				    "the deepest stack has %u or more); refused: read flamegraph.svg "
				    "or top.txt, or use go tool pprof -traces on merged.pb.gz",
				    FOLDED_MAX >> 20, t->n, td.depth);
				rc = -EFBIG;
				goto out;
			}
			if ((rc = buf_error(out)) < 0)
				goto out;
		}
		for (k = t->kid_start[td.node + 1]; k-- > t->kid_start[td.node];)
			stack[sp++] = (struct todo){ t->kids[k], td.depth + 1 };
	}
	if (out->data == NULL)
		rc = buf_reserve(out, 0);
out:
	free(stack);
	free(path);
	return rc;
}
