/*
 * symtab: a symbol table in memory, private to store/. Each service's
 * series share one table of strings, functions, mappings, locations and
 * stacks, each entry stored once ('Y' records) and numbered 0, 1, 2, ...
 * per kind; packs (pack.h) refer to entries by id. symtab.c holds the
 * table and loads it; pack.c adds the entries a new profile needs.
 *
 * Thread-safety: a table is used under its series' sym_lock (symtab.c).
 */
#ifndef PROFILEFS_SYMTAB_H
#define PROFILEFS_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"

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
/*
 * Load a run of n stored entries with ids first, first + 1, ... from val
 * (per entry: varint length, bytes); ids loaded already are skipped (runs
 * of one batch may overlap). -EINVAL for a malformed run.
 */
int		 symtab_load_run(struct symtab *t, int kind, uint32_t first, uint32_t n,
		    const void *val, size_t len);
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

#define TAG_REAL	0
#define TAG_HOLE	1

struct symkind {
	struct intern	*t;		/* TAG_* byte + entry bytes -> id */
	uint8_t		*durable;	/* per id */
	uint32_t	*stamp;		/* per id: the pack that last queued it */
	size_t		 cap;
};

struct symtab {
	struct symkind	 k[SYM_NKINDS];
	uint32_t	 epoch;
	struct buf	 key;		/* scratch */
};

/* Intern a tagged key into kind (what pack.c adds); *id set. 1 if added. */
int		 kind_put(struct symtab *t, int kind, uint8_t tag, const void *data, size_t len,
		    uint32_t *id);

#endif
