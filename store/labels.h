/*
 * labels: label sets in their canonical text form "k=v,k2=v2": pairs sorted by
 * key (then value), keys and values escaped so that '%', '/', ',', '=' and
 * bytes outside printable ASCII appear as %XX. The same text names a label
 * set in the tree, in the store's series index and in selectors.
 */
#ifndef PROFILEFS_LABELS_H
#define PROFILEFS_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define LABELS_MAX		64	/* pairs in one set */
#define LABEL_MAX_LEN		256	/* bytes of one key or value, unescaped */

struct label {
	char	*key;
	char	*value;
};

struct labelset {
	struct label	pairs[LABELS_MAX];
	size_t		n;
};

/* Append s escaped for a label key/value or a path segment. */
int	labels_escape(struct buf *out, const char *s, size_t n);
/* The value of hex digit c, or -1. */
int	labels_hexval(int c);
/* Undo %XX escapes into out; -EINVAL on a malformed escape. */
int	labels_unescape(struct buf *out, const char *s, size_t n);

/*
 * Parse "k=v,k2=v2" (escaped form; "" is the empty set). The pairs are
 * malloc'd copies, unescaped, sorted; free with labels_clear(). -EINVAL with
 * a reason in err on a malformed set (no '=', empty key, duplicate key, too
 * many or too long).
 */
int	labels_parse(const char *s, struct labelset *ls, struct buf *err);
/* Add one pair (copied); the set is re-sorted. Duplicate keys: -EINVAL. */
int	labels_add(struct labelset *ls, const char *key, const char *value, struct buf *err);
void	labels_clear(struct labelset *ls);
/* Append the canonical text of ls to out. */
int	labels_format(const struct labelset *ls, struct buf *out);
/* Whether every pair of sel is in set (the "all" selector is the empty set). */
bool	labels_match(const struct labelset *sel, const struct labelset *set);

#endif
