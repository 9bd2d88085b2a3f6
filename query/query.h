/*
 * query: the questions both views of the store answer, asked in one place.
 * The tree (fs/) and the HTTP API (api/) sit side by side above this layer
 * and never include each other; what they both answer -- which services
 * there are, the merge of a service's profiles of one type, selected by
 * labels, over a range -- they ask here, so that a merge over HTTP equals
 * merged.pb.gz of the same range and both are counted alike. The range
 * queries proper (query_list(), query_merge()) are the store's (store.h).
 *
 * Thread-safety: as the store's calls.
 */
#ifndef PROFILEFS_QUERY_H
#define PROFILEFS_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "base.h"
#include "pprof.h"
#include "store.h"

/*
 * The names of the services reader rd knows (the store's or the fleet's), sorted, each once; with
 * with_data only those with a series that holds data (retention may have
 * emptied the rest). *out is malloc'd (free() it, not the names: they are
 * the reader's and live as long as it). 0 with *n = 0 for none, or -errno.
 */
int	query_services(const struct reader *rd, bool with_data, const char ***out, size_t *n);

/*
 * reader_merge() (store.h) of q into res, its time observed in the merge
 * histogram (METRIC_MERGE_DURATION) under source ("fs", "http").
 */
int	query_merge_timed(const struct reader *rd, const struct query *q, const char *source,
	    struct query_result *res);

/*
 * A selector as the tree and the profefe API write it: "" (all), a label set
 * "k=v,k2=v2", or matchers "k=v,k2!=v2,k3=~re,k4!~re" (base.h), %XX-escaped.
 * A plain label set keeps its meaning (the labels present with those
 * values); matchers select as Prometheus does. query_sel_parse() fills s
 * (free with query_sel_free()); -EINVAL with the reason in err (optional).
 * query_sel_apply() points q's selection at s (valid while s is).
 */
/*
 * The keys span_id and trace_id are not labels of series (store/span.c):
 * in a selector, span_id=<id>[+<id>...] (1 to 16 hex digits each) and
 * trace_id=<32 hex digits>[+...] become s->spans, the span selector of the
 * query (only the samples of those spans), and leave the label selection.
 */
#define QUERY_SEL_SPANS	64
struct query_sel {
	struct labelset	 ls;
	struct matchers	 ms;
	bool		 matchers;
	bool		 has_spans;
	struct span_sel	 spans;
	uint64_t	 span_ids[QUERY_SEL_SPANS];
	unsigned char	 trace_ids[QUERY_SEL_SPANS][16];
};
int	query_sel_parse(const char *text, struct query_sel *s, struct buf *err);
void	query_sel_apply(const struct query_sel *s, struct query *q);
void	query_sel_free(struct query_sel *s);

/*
 * Kernel text addresses (kaddr.c). Served to a reader to whom /proc/kallsyms
 * shows zeros, the addresses of kernel frames would undo KASLR; both views
 * apply this one rule. kaddr_hide() clears, in place, the address of every
 * location in the kernel's half of the address space and the bounds of
 * every kernel mapping (names stay): how many it cleared. kaddr_any():
 * whether p holds any. kaddr_hidden_copy(): NULL in *out when p holds none,
 * else a copy with them hidden that shares everything but its locations and
 * mappings with p (valid while p is; free with kaddr_copy_free(), never
 * profile_free()); 0 or -ENOMEM. kaddr_visible(): whether thread tid (a FUSE
 * caller) could read them in /proc/kallsyms, as the kernel decides
 * (kernel.kptr_restrict, kernel.perf_event_paranoid, CAP_SYSLOG in the
 * initial user namespace); false when that cannot be told.
 */
size_t	kaddr_hide(struct profile *p);
bool	kaddr_any(const struct profile *p);
int	kaddr_hidden_copy(const struct profile *p, struct profile **out);
void	kaddr_copy_free(struct profile *c);
bool	kaddr_visible(int tid);

#endif
