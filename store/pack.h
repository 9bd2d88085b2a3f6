/*
 * pack: the compact encoding of stored profiles, private to store/.
 *
 * Each series has a symbol table (struct symtab) of strings, functions,
 * mappings, locations and stacks (locations + sample labels), each stored
 * once and numbered 0, 1, 2, ... per kind. A stored profile or a
 * pre-aggregated window is then a "pack": per group of mergeable profiles a
 * small header (string ids) and its samples as (stack id, values). Packs of
 * one series add up by stack id without decoding any pprof (struct agg),
 * which is what makes long ranges cheap; a pack becomes a pprof profile
 * again through the symbol table (agg_profile) with pprof's sums intact.
 *
 * Pack value (varints; z: zigzag):
 *   offset  size  field
 *   0       1     PACK_VERSION
 *   1       var   ngroups
 *   per group:
 *           var   count (profiles merged), z first_time (ns)
 *           var   ntypes, then (type, unit) string ids per sample type
 *           var   period_type type, unit; z period, time_nanos, duration_nanos
 *           var   drop_frames, keep_frames, default_sample_type, doc_url,
 *                 the first mapping (+1, 0: none): pprof lists it first
 *           var   ncomments, string ids
 *           var   per type: the divisor d of its values, only in version 3
 *                 (written for profiles whose samples name spans; 1 in
 *                 version 2): their greatest common divisor, so a CPU
 *                 profile's nanoseconds are stored as ticks of its period
 *           var   nsamples; per sample: z stack id delta, z value / d per type
 *
 * Symbol entries (the bytes of a 'Y' record; integers little-endian):
 *   string    the bytes
 *   function  name:4 system_name:4 filename:4 start_line:8
 *   mapping   start:8 limit:8 offset:8 filename:4 build_id:4 flags:1
 *   location  mapping+1:4 address:8 folded:1, per line function:4 line:8 column:8
 *   stack     nlocs:4 loc:4 * nlocs, per label key:4 str:4 num:8 num_unit:4
 *
 * Thread-safety: a symtab is protected by its owner's lock (symtab.c holds
 * the series' sym_lock); an agg belongs to one thread.
 */
#ifndef PROFILEFS_PACK_H
#define PROFILEFS_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"
#include "symtab.h"

/* 3: values divided per column (span-tagged profiles); 2: as they are (the rest) */
#define PACK_VERSION	3
#define PACK_VERSION_PLAIN	2

/*
 * Append the pack of profile p (stored at `time`) to val, adding its symbols
 * to t; every referenced entry not yet durable is appended to news (an array
 * of struct sym_new) so the caller writes it in the same batch. The labels
 * span_id, span_name and trace_id stay out of the stacks: the samples are
 * ordered by span and the span record (span.c) is appended to spans
 * (nothing when no sample names a span).
 */
int		 pack_profile(struct symtab *t, const struct profile *p, int64_t time,
		    struct buf *val, struct buf *news, struct buf *spans);

/* Sums of packs of one series, by group (signature) and stack id. */
struct agg;

struct agg	*agg_create(void);
void		 agg_free(struct agg *a);
/* Add a pack. -EINVAL for a malformed one (a reason in err). */
int		 agg_add(struct agg *a, const void *val, size_t len, struct buf *err);
/* Append the pack of everything added (nothing added: no groups). */
int		 agg_encode(const struct agg *a, struct buf *out);
size_t		 agg_ngroups(const struct agg *a);
/* Group g: profiles it holds, the earliest time. */
uint64_t	 agg_count(const struct agg *a, size_t g);
int64_t		 agg_first_time(const struct agg *a, size_t g);
/* Group g's totals per sample type (at most max; -EINVAL if it has more). */
int		 agg_totals(const struct agg *a, size_t g, int64_t *totals, size_t max,
		    size_t *ntypes);
/* pprof's signature of group g (profile_signature's form) into out. */
int		 agg_signature(const struct agg *a, const struct symtab *t, size_t g,
		    struct buf *out);
/*
 * Group g as a pprof profile (caller frees), symbols from t. With
 * average_gauges, gauge columns are divided by the group's count as
 * merge_finish() does for that many snapshots.
 */
int		 agg_profile(const struct agg *a, const struct symtab *t, size_t g,
		    bool average_gauges, struct profile **out);

/*
 * Add to a only the samples of one-group pack val whose index lies in the
 * n (start, length) ranges rg (ascending); their totals per type into
 * totals (max types). -EINVAL for a malformed pack.
 */
int		 agg_add_ranges(struct agg *a, const void *val, size_t len,
		    const uint32_t *rg, size_t n, int64_t *totals, size_t max,
		    size_t *ntypes);

/* --- span ids per sample (span.c) --- */

#define SPAN_VERSION		2
/* From this many spans in a record, ids are stored bucketed by top byte. */
#define SPAN_BUCKETED		256
/* Distinct spans one profile may tag; past it samples stay, untagged (counted). */
#define SPAN_MAX_PER_PROFILE	65536
#define SPAN_MAX_NAMES		1024

/* The string indexes of the span labels' keys in a profile, -1: absent. */
struct span_keys {
	int64_t		 id, name, trace;
};
/* One sample's span: id 0 for none; name and trace as string indexes of p. */
struct span_tag {
	uint64_t	 id;
	int64_t		 name, trace;
};

void	span_keys_find(const struct profile *p, struct span_keys *k);
bool	span_key_is(const struct span_keys *k, int64_t key);
/* Sample s's span into *t; *bad when it names one in a form not accepted. */
void	span_tag_of(const struct profile *p, const struct span_keys *k,
	    const struct pf_sample *s, struct span_tag *t, bool *bad);
int	span_encode(const struct profile *p, const struct span_tag *tags, size_t ns,
	    size_t ncut, size_t nbad, struct buf *out);
/* The span filter ('F' value) of span record rec appended to out. */
int	span_filter(const void *rec, size_t len, struct buf *out);
int	span_counts(const void *val, size_t len, size_t *nruns, size_t *ncut, size_t *nbad);

/* A span record's runs as read back (span_runs_read). */
struct span_run {
	uint64_t	 id;
	uint32_t	 start, len;	/* pack samples [start, start + len) */
	uint32_t	 trace, name;	/* index + 1 in the record's tables, 0: none */
};
struct span_runs {
	struct span_run		*run;		/* ascending start */
	size_t			 nrun;
	const unsigned char	*traces;	/* 16 bytes each, in the record */
	size_t			 ntraces;
	const char		**name;		/* in the record, not NUL-terminated */
	size_t			*name_len, nnames;
};
int	span_runs_read(const void *val, size_t len, struct span_runs *out);
void	span_runs_free(struct span_runs *sr);

/*
 * One-group pack val as a pprof profile (caller frees) with its samples as
 * stored, not summed by stack: the samples of each run of sr get its span's
 * labels again (span_id as 16 hex digits, span_name, trace_id as 32), so
 * a profile read back whole has the labels it was stored with.
 */
int	pack_rows_profile(const void *val, size_t len, const struct symtab *t,
	    const struct span_runs *sr, struct profile **out);

/* The totals per sample type of a one-group pack (per-profile figures). */
int		 pack_totals(const void *val, size_t len, int64_t *totals, size_t max,
		    size_t *ntypes);

#endif
