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
 *           var   nsamples; per sample: z stack id delta, z value per type
 *
 * Symbol entries (the bytes of a 'Y' record; integers little-endian):
 *   string    the bytes
 *   function  name:4 system_name:4 filename:4 start_line:8
 *   mapping   start:8 limit:8 offset:8 filename:4 build_id:4 flags:1
 *   location  mapping+1:4 address:8 folded:1, per line function:4 line:8 column:8
 *   stack     nlocs:4 loc:4 * nlocs, per label key:4 str:4 num:8 num_unit:4
 *
 * Thread-safety: a symtab is protected by its owner's lock (store.c holds
 * the series' sym_lock); an agg belongs to one thread.
 */
#ifndef PROFILEFS_PACK_H
#define PROFILEFS_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"

#define PACK_VERSION	2

enum { SYM_STR, SYM_FN, SYM_MAP, SYM_LOC, SYM_STACK, SYM_NKINDS };

struct symtab;

/* A symbol entry that a pack refers to and that is not known durable yet. */
struct sym_new {
	uint8_t		 kind;
	uint32_t	 id;
};

struct symtab	*symtab_create(void);
void		 symtab_free(struct symtab *t);
/*
 * Load a stored entry (durable). Ids must come in increasing order per kind;
 * ids skipped (entries whose profile never became durable) are filled with
 * placeholders that match nothing.
 */
int		 symtab_load(struct symtab *t, int kind, uint32_t id, const void *data,
		    size_t len);
/* The bytes of entry id (NULL if out of range); valid while t lives. */
const void	*symtab_entry(const struct symtab *t, int kind, uint32_t id, size_t *len);
size_t		 symtab_count(const struct symtab *t, int kind);
/*
 * Whether some entry is not durable yet (a write in flight, or one that
 * failed): such a table must stay in memory, its ids are not on disk.
 */
bool		 symtab_pending(const struct symtab *t);
/* The memory t holds. */
size_t		 symtab_bytes(const struct symtab *t);
/* Entries written by a successful batch: later packs need not repeat them. */
void		 symtab_durable(struct symtab *t, const struct sym_new *e, size_t n);

/*
 * Append the pack of profile p (stored at `time`) to val, adding its symbols
 * to t; every referenced entry not yet durable is appended to news (an array
 * of struct sym_new) so the caller writes it in the same batch.
 */
int		 pack_profile(struct symtab *t, const struct profile *p, int64_t time,
		    struct buf *val, struct buf *news);

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

/* The totals per sample type of a one-group pack (per-profile figures). */
int		 pack_totals(const void *val, size_t len, int64_t *totals, size_t max,
		    size_t *ntypes);

#endif
