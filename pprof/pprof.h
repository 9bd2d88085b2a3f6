/*
 * pprof: the pprof model layer. Profiles in memory, and the operations on them that follow
 * pprof's own rules: decode (validating as go tool pprof does), encode, merge,
 * diff. This one header is what other layers see of a profile; the wire
 * format and protobuf-c stay inside pprof/.
 *
 * In a decoded profile every cross reference is an index into the arrays of
 * the same profile, not a pprof id: sample.locs[i] indexes locations,
 * location.mapping is an index + 1 (0: no mapping), line.function an index
 * (PF_NONE: no function), and every string field indexes strings[]. Encoding
 * numbers ids 1..N in array order.
 */
#ifndef PROFILEFS_PPROF_H
#define PROFILEFS_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

#define PF_NONE			UINT32_MAX
/*
 * The decoder refuses profiles with more sample types, so arrays of this
 * many entries hold the per-type state of any decoded profile.
 */
#define PROFILE_MAX_SAMPLE_TYPES	64
/* Upper bound of a decoded (gunzipped) profile, against gzip bombs. */
#define PROFILE_MAX_DECODED	(256u << 20)
/*
 * Upper bound of the memory decoding may take for n bytes of protobuf: real
 * profiles need a few times their size; floods of empty messages need ~100x.
 */
#define PROFILE_MAX_OBJECTS(n)	((size_t)(64u << 20) + 8 * (size_t)(n) > ((size_t)512 << 20) ? \
				    ((size_t)512 << 20) : (size_t)(64u << 20) + 8 * (size_t)(n))

struct arena;

/* Sample values add as in pprof (Go): two's complement, wrapping on overflow. */
static inline int64_t
profile_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

struct pf_valuetype {
	int64_t		 type;		/* string index */
	int64_t		 unit;		/* string index */
};

struct pf_label {
	int64_t		 key;		/* string index */
	int64_t		 str;		/* string index, 0 for a numeric label */
	int64_t		 num;
	int64_t		 num_unit;	/* string index */
};

struct pf_sample {
	uint32_t	*locs;		/* leaf first */
	uint32_t	 nlocs;
	uint32_t	 nlabels;
	int64_t		*values;	/* one per sample type */
	struct pf_label	*labels;
};

struct pf_mapping {
	uint64_t	 start, limit, offset;
	int64_t		 filename, build_id;	/* string indexes */
	bool		 has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pf_line {
	uint32_t	 function;	/* index or PF_NONE */
	int64_t		 line;
	int64_t		 column;
};

struct pf_location {
	uint32_t	 mapping;	/* index + 1, 0 for none */
	uint32_t	 nlines;
	uint64_t	 address;
	struct pf_line	*lines;		/* the last line is the caller, earlier ones inlined */
	bool		 is_folded;
};

struct pf_function {
	int64_t		 name, system_name, filename;	/* string indexes */
	int64_t		 start_line;
};

struct profile {
	struct arena		*arena;		/* owns everything below */
	const char		**strings;	/* strings[0] == "" */
	size_t			 nstrings;
	struct pf_valuetype	*sample_types;
	size_t			 nsample_types;
	struct pf_sample	*samples;
	size_t			 nsamples;
	struct pf_mapping	*mappings;
	size_t			 nmappings;
	struct pf_location	*locations;
	size_t			 nlocations;
	struct pf_function	*functions;
	size_t			 nfunctions;
	int64_t			*comments;	/* string indexes */
	size_t			 ncomments;
	struct pf_valuetype	 period_type;
	int64_t			 period;
	int64_t			 time_nanos;
	int64_t			 duration_nanos;
	int64_t			 drop_frames, keep_frames;	/* string indexes */
	int64_t			 default_sample_type;		/* string index */
	int64_t			 doc_url;			/* string index */
};

/*
 * Decode a pprof profile, gzipped or not. On success *out is a new profile the
 * caller frees with profile_free(). On failure returns -EINVAL (or -ENOMEM,
 * -EFBIG past PROFILE_MAX_DECODED) and, if err is given, appends the reason.
 */
int	profile_decode(const void *data, size_t len, struct profile **out,
	    struct buf *err);
/* Whether data starts with gzip's magic (1f 8b): the one test of "is it gzipped". */
bool	profile_is_gzip(const void *data, size_t len);
/* Undo gzip if the data starts with its magic; -EINVAL/-EFBIG with a reason. */
int	profile_gunzip(const void *data, size_t len, struct buf *out,
	    struct buf *err);
/*
 * The same with the limit max (bytes of out once inflated) in place of
 * PROFILE_MAX_DECODED: inflating stops a byte past it (-EFBIG), so a bomb
 * costs at most max + 1 bytes of out, whatever its ratio.
 */
int	profile_gunzip_max(const void *data, size_t len, size_t max, struct buf *out,
	    struct buf *err);
/* Append the encoded profile to out, gzipped when gzip is true. */
int	profile_encode(const struct profile *p, bool gzip, struct buf *out);
int	profile_gzip(const void *data, size_t len, struct buf *out);
void	profile_free(struct profile *p);

/*
 * The strings of p with every one longer than max bytes cut (utf8_cut(),
 * ending in STR_CUT_MARK): *out is NULL when none is (nothing to free),
 * else a new array of p->nstrings strings, one allocation with the cut
 * copies, freed with free(); its other entries point into p. *ncut (optional)
 * counts the strings cut. -ENOMEM.
 */
int	profile_cut_strings(const struct profile *p, size_t max, const char ***out,
	    size_t *ncut);

/* strings[i], or "" when i is out of range. */
const char	*profile_str(const struct profile *p, int64_t i);
/* Index of the default sample type (pprof: default_sample_type, else the last). */
size_t		 profile_default_type(const struct profile *p);
/* Whether a sample type is a gauge (averaged over a range) rather than a counter. */
bool		 profile_type_is_gauge(const char *type);
/*
 * A string that is equal for two profiles exactly when pprof would merge them
 * (period type and the list of sample types). Appended to out.
 */
int		 profile_signature(const struct profile *p, struct buf *out);
/* The total of sample type t over all samples. */
int64_t		 profile_total(const struct profile *p, size_t t);
/*
 * Keep only the sample types keep[0..n) of p (indexes into p->sample_types,
 * in the order wanted), in place: how profiles whose sample types differ
 * merge on those they share. The default sample type goes if it is dropped.
 */
void		 profile_keep_types(struct profile *p, const size_t *keep, size_t n);

/*
 * mgroup: which profiles of a range merge (mgroup.c). The profiles fall
 * into groups of one signature (profile_signature()); the largest group
 * merges with every other of its period type that shares sample types with
 * those chosen so far (largest first), on the types all of them share.
 */
struct mgroup {
	const char	*sig;		/* the group's signature (not owned) */
	size_t		 siglen;
	uint64_t	 count;		/* its profiles */
	/* Set by mgroup_choose(): */
	bool		 inc;		/* it merges */
	size_t		 keep[PROFILE_MAX_SAMPLE_TYPES];	/* shared type k: its own keep[k] */
};
/* The parts the merged groups share: [0] the period type, then the sample types. */
struct mgroup_shared {
	const char	*part[PROFILE_MAX_SAMPLE_TYPES + 1];	/* into the groups' sig */
	size_t		 len[PROFILE_MAX_SAMPLE_TYPES + 1];
	size_t		 n;
};
/*
 * Choose among g[0..ng) (ng > 0): the largest group (the first of equals),
 * returned, and the others that merge with it (inc, keep); the shared parts
 * into sh.
 */
size_t	mgroup_choose(struct mgroup *g, size_t ng, struct mgroup_shared *sh);
/* The parts of a 0x1f-separated text (a signature, a header); at most max. */
size_t	mgroup_sig_parts(const char *sig, size_t siglen, const char **part, size_t *len,
	    size_t max);
/* Why group g does not merge, for a listing of profiles left out, into out. */
void	mgroup_why(const struct mgroup *g, const struct mgroup_shared *sh, char *out,
	    size_t size);
/*
 * Per-profile totals in the merged profile's sample types (timelines read
 * them by its index): profile i's row, in its group's own types, starts at
 * int64_t index at[i] of totals (SIZE_MAX: none); grp[i] is its group
 * (SIZE_MAX: none). The rows of merged groups whose types differ from the
 * shared ones are appended to totals, reordered, and at[i] moves to them;
 * the others stay. -EIO for a row past the end of totals.
 */
int	mgroup_totals(const struct mgroup *g, const struct mgroup_shared *sh,
	    const size_t *grp, size_t *at, size_t n, struct buf *totals);

/*
 * merge: combine profiles with equal signatures, as pprof's merge does.
 * merge_add() copies what it needs: the added profile may be freed right away.
 * merge_finish() returns a new profile (caller frees) and resets nothing: call
 * merge_free() after. With average_gauges, gauge columns are divided by the
 * number of profiles added (a range's mean snapshot).
 */
struct merge;

struct merge	*merge_create(void);
/* -EINVAL with a reason in err when p's signature differs from the first. */
int		 merge_add(struct merge *m, const struct profile *p, struct buf *err);
/*
 * Add p with every value multiplied by `scale` and, when label_key is not
 * NULL, each sample labelled label_key=label_val (the diff form).
 */
int		 merge_add_scaled(struct merge *m, const struct profile *p,
		    int64_t scale, const char *label_key, const char *label_val,
		    struct buf *err);
size_t		 merge_count(const struct merge *m);

/*
 * The builder side of a merge, for producers that hold no profile to add
 * (the eBPF sampler aggregates raw stacks): merge_begin() on a new merge
 * sets the header, then objects are added in the merge's own indexes and
 * deduplicated by the identities merge_add() uses (pprof's); merge_finish()
 * makes the profile. Each returns the object's index or -errno.
 */
struct merge_header {
	const char	*const *types, *const *units;	/* ntypes sample types */
	size_t		 ntypes;
	const char	*period_type, *period_unit;
	int64_t		 period, time_nanos, duration_nanos;
};
int		 merge_begin(struct merge *m, const struct merge_header *h);
/* The period of the merge's header (the largest of the profiles added). */
int64_t		 merge_period(const struct merge *m);
int64_t		 merge_string(struct merge *m, const char *s);
/* Whether merge_string() index i is the string s. */
bool		 merge_string_is(const struct merge *m, int64_t i, const char *s);
/* f's strings are merge_string() indexes. */
int64_t		 merge_function(struct merge *m, const struct pf_function *f);
/* mp's filename and build_id are merge_string() indexes. */
int64_t		 merge_mapping(struct merge *m, const struct pf_mapping *mp);
/*
 * mapping: a merge_mapping() index + 1, 0 for none; map_start: where the
 * caller's copy of that mapping starts (address moves with the mapping the
 * merge kept); lines' functions are merge_function() indexes.
 */
int64_t		 merge_location(struct merge *m, uint32_t mapping, uint64_t map_start,
		    uint64_t address, bool is_folded, const struct pf_line *lines, size_t nlines);
/*
 * Add values (one per sample type) to the sample of this stack (merge_location()
 * indexes, leaf first) and label set (merge indexes; sorted in place).
 * All-zero values add nothing.
 */
int		 merge_sample(struct merge *m, const uint32_t *locs, size_t nlocs,
		    struct pf_label *labels, size_t nlabels, const int64_t *values);
int		 merge_finish(struct merge *m, bool average_gauges, struct profile **out);
void		 merge_free(struct merge *m);

/*
 * pprof's diff form: base negated and labelled pprof::base=true, merged with
 * cur. Both must have equal signatures (-EINVAL and a reason otherwise).
 */
int	profile_diff(const struct profile *cur, const struct profile *base,
	    struct profile **out, struct buf *err);

/*
 * delta.c: what happened between two scrapes of a cumulative profile (Go's
 * heap, allocs, block, mutex). Samples are matched by stack and labels;
 * counter columns become cur - prev, gauge columns (inuse_*) keep cur's value;
 * all-zero samples are dropped. *out is new (caller frees). -ERANGE when a
 * counter went down (the process restarted: start over with cur as the
 * base), -EINVAL when the sample types differ; the reason goes to err.
 */
int	profile_delta(const struct profile *cur, const struct profile *prev,
	    struct profile **out, struct buf *err);

/*
 * delta.c: the increase of a snapshot of totals over the previous snapshot
 * of its series, as Prometheus's increase(): like profile_delta, except that
 * a stack whose counter went down counts its whole value (that counter
 * reset). -ERANGE when a counter column's total went down (a new process:
 * the caller counts cur whole), -EINVAL when the sample types differ.
 */
int	profile_increase(const struct profile *cur, const struct profile *prev,
	    struct profile **out, struct buf *err);

/*
 * Whether p says it is a snapshot of totals since its process started: a Go
 * heap (or allocs) profile, with alloc_* columns, and no duration. Deltas
 * (`?seconds=N`, SDKs, the scraper) have a duration.
 */
bool	profile_is_snapshot(const struct profile *p);

#endif
