/*
 * mgroup: which profiles of a range merge. Profiles merge by signature
 * (profile_signature(): the period type, then "type/unit" per sample type,
 * separated by 0x1f); a range's profiles fall into groups of one signature
 * each, and the largest group merges with every other group of its period
 * type that shares sample types with the groups chosen so far (largest
 * first), on the types all of them share, as Pyroscope merges by profile
 * type. The store's merges (store/query.c) and the fleet's (cluster/read.c)
 * both follow this one policy; how each sums its groups is its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"

size_t
mgroup_sig_parts(const char *sig, size_t siglen, const char **part, size_t *len, size_t max)
{
	const char *p = sig, *end = sig + siglen, *q;
	size_t n = 0;

	while (p && p <= end && n < max) {
		q = memchr(p, '\x1f', (size_t)(end - p));
		part[n] = p;
		len[n++] = (size_t)((q ? q : end) - p);
		p = q ? q + 1 : NULL;
	}
	return n;
}

size_t
mgroup_choose(struct mgroup *g, size_t ng, struct mgroup_shared *sh)
{
	const char *part[PROFILE_MAX_SAMPLE_TYPES + 1];
	size_t len[PROFILE_MAX_SAMPLE_TYPES + 1], *order, best = 0, i, j, k, n;

	for (i = 1; i < ng; i++)
		if (g[i].count > g[best].count)
			best = i;
	for (i = 0; i < ng; i++)
		g[i].inc = false;
	sh->n = mgroup_sig_parts(g[best].sig, g[best].siglen, sh->part, sh->len,
	    PROFILE_MAX_SAMPLE_TYPES + 1);
	g[best].inc = true;
	order = xcalloc(ng + 1, sizeof(*order));
	for (i = 0; i < ng; i++)
		order[i] = i;
	for (i = 1; i < ng; i++)	/* by profiles, most first (stable); few groups */
		for (j = i; j > 0 && g[order[j]].count > g[order[j - 1]].count; j--) {
			k = order[j];
			order[j] = order[j - 1];
			order[j - 1] = k;
		}
	for (i = 0; i < ng; i++) {
		size_t m = 1;

		if (g[order[i]].inc)
			continue;
		n = mgroup_sig_parts(g[order[i]].sig, g[order[i]].siglen, part, len,
		    PROFILE_MAX_SAMPLE_TYPES + 1);
		if (n < 2 || len[0] != sh->len[0] || memcmp(part[0], sh->part[0], len[0]) != 0)
			continue;	/* another period type */
		for (j = 1; j < sh->n; j++)
			for (k = 1; k < n; k++)
				if (len[k] == sh->len[j] && memcmp(part[k], sh->part[j], len[k]) == 0) {
					sh->part[m] = sh->part[j];
					sh->len[m++] = sh->len[j];
					break;
				}
		if (m == 1)
			continue;	/* nothing shared: left out */
		sh->n = m;
		g[order[i]].inc = true;
	}
	free(order);
	/* Where each shared type sits in each merged group. */
	for (i = 0; i < ng; i++) {
		if (!g[i].inc)
			continue;
		n = mgroup_sig_parts(g[i].sig, g[i].siglen, part, len, PROFILE_MAX_SAMPLE_TYPES + 1);
		for (j = 1; j < sh->n; j++)
			for (k = 1; k < n; k++)
				if (len[k] == sh->len[j] && memcmp(part[k], sh->part[j], len[k]) == 0) {
					g[i].keep[j - 1] = k - 1;
					break;
				}
	}
	return best;
}

/* "cpu/nanoseconds samples/count" from a signature (period type dropped). */
static void
sig_types(const char *sig, size_t siglen, char *out, size_t n)
{
	const char *s = sig ? memchr(sig, '\x1f', siglen) : NULL;
	size_t i = 0;

	if (s == NULL) {
		snprintf(out, n, "(none)");
		return;
	}
	for (s++; s < sig + siglen && i + 1 < n; s++)
		out[i++] = *s == '\x1f' ? ' ' : *s;
	out[i] = '\0';
}

/* "cpu/nanoseconds samples/count": the shared sample types. */
static void
shared_types(const struct mgroup_shared *sh, char *out, size_t size)
{
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 1; i < sh->n; i++) {
		int w = snprintf(out + o, size - o, "%s%.*s", i > 1 ? " " : "",
		    (int)sh->len[i], sh->part[i]);

		if (w < 0 || (size_t)w >= size - o)
			break;
		o += (size_t)w;
	}
}

void
mgroup_why(const struct mgroup *g, const struct mgroup_shared *sh, char *out, size_t size)
{
	char want[120], got[120];

	shared_types(sh, want, sizeof(want));
	sig_types(g->sig, g->siglen, got, sizeof(got));
	snprintf(out, size, "sample types [%s] share none with the merged "
	    "profiles' [%s] (or the period type differs)", got, want);
}

int
mgroup_totals(const struct mgroup *g, const struct mgroup_shared *sh, const size_t *grp,
    size_t *at, size_t n, struct buf *totals)
{
	const char *part[PROFILE_MAX_SAMPLE_TYPES + 1];
	size_t len[PROFILE_MAX_SAMPLE_TYPES + 1], i, k, own, nt = sh->n - 1;
	int64_t row[PROFILE_MAX_SAMPLE_TYPES];
	int rc;

	for (i = 0; i < n; i++) {
		const struct mgroup *gr;
		bool same;

		if (at[i] == SIZE_MAX || grp[i] == SIZE_MAX)
			continue;
		gr = &g[grp[i]];
		own = mgroup_sig_parts(gr->sig, gr->siglen, part, len,
		    PROFILE_MAX_SAMPLE_TYPES + 1) - 1;
		if ((at[i] + own) * sizeof(int64_t) > totals->len)
			return -EIO;
		if (!gr->inc)
			continue;
		for (k = 0, same = own == nt; k < nt; k++)
			same &= gr->keep[k] == k;
		if (same)
			continue;
		for (k = 0; k < nt; k++)
			row[k] = ((const int64_t *)totals->data)[at[i] + gr->keep[k]];
		at[i] = totals->len / sizeof(int64_t);
		if ((rc = buf_add(totals, row, nt * sizeof(int64_t))) < 0)
			return rc;
	}
	return 0;
}
