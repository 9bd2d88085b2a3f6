/*
 * query: the profiles of (service, type, label selector, time range), listed
 * or merged. Shared by the filesystem's views and the HTTP API so that both
 * give the same answer for the same question.
 */
#ifndef PROFILEFS_QUERY_H
#define PROFILEFS_QUERY_H

#include "store.h"

struct query {
	const char		*service;	/* NULL: every service */
	const char		*type;		/* NULL: every type */
	const struct labelset	*sel;		/* NULL or empty: all label sets */
	int64_t			 from, to;	/* ns, from <= time < to */
	size_t			 limit;		/* 0: no limit (list only) */
};

struct query_skip {
	uint64_t	 id;
	char		 reason[240];
};

struct query_result {
	struct store_ref	*refs;		/* every profile found, time order */
	size_t			 nrefs;
	struct profile		*merged;	/* NULL when nothing could be merged */
	size_t			 nmerged;	/* profiles in merged */
	struct query_skip	*skipped;	/* profiles left out of merged, and why */
	size_t			 nskipped;
	uint64_t		*series;	/* ids of the series that matched */
	size_t			 nseries;
	/*
	 * query_merge only: the per-sample-type totals of refs[i] start at
	 * totals[totals_at[i]] (SIZE_MAX: not decodable), so per-profile
	 * figures (timelines) need no second pass over the data.
	 */
	int64_t			*totals;
	size_t			*totals_at;
};

/* Whether series s is selected by q (service, type and labels). */
bool	query_match(const struct query *q, const struct series *s);
/* List the profiles of q in time order (no data read). Fills refs, series. */
int	query_list(struct store *st, const struct query *q, struct query_result *res);
/*
 * Merge the profiles of q: the largest group of mergeable profiles, with
 * gauges averaged over its snapshots; the others are listed in skipped.
 * res->merged stays NULL (and 0 is returned) when the range is empty.
 */
int	query_merge(struct store *st, const struct query *q, struct query_result *res);
void	query_result_free(struct query_result *res);

#endif
