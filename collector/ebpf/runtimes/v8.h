/*
 * v8: JavaScript frames of V8 processes (Node.js) for the eBPF sampler.
 * Finds the V8 of a process (the node executable or a libnode.so that
 * exports V8's postmortem constants, v8dbg_*), gives the BPF program where a
 * frame keeps its JSFunction (the v8_procs map), and names the functions the
 * samples carry, function (file:line), from the process's memory
 * (process_vm_readv): JSFunction -> SharedFunctionInfo -> its name (or its
 * ScopeInfo's) and Script (file name, and the line of the function's start
 * from the script's line ends or source). Cached per process by
 * SharedFunctionInfo, checked against the object at every sample. Where the
 * frames go in a stack is ebpf.c's business.
 *
 * Not thread-safe: used from the sampler's thread only.
 */
#ifndef PROFILEFS_V8_H
#define PROFILEFS_V8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

struct v8;

/* procs_fd: the BPF map v8_procs. NULL on allocation failure. */
struct v8	*v8_create(int procs_fd);
void		 v8_destroy(struct v8 *v);
/*
 * Look at p's mappings if they changed since the last look: a V8 whose
 * constants are all there, whose version is in the table of layouts (and
 * whose heap pointers are not compressed) is entered into v8_procs, so that
 * the next samples carry its frames; one that is not is said once per file
 * (warning: its version, or what it lacks). Cheap when nothing changed.
 */
void		 v8_check(struct v8 *v, struct proc *p);
/*
 * For tests: p runs a V8 laid out as the constants names[i] = vals[i] (n of
 * them, v8dbg_* names and V8's version, _ZN2v88internal7Version6major_E and
 * minor_) say, without a look at its files or the BPF map. 0,
 * or -EINVAL when one is missing or the layout is not known, -ENOMEM.
 */
int		 v8_attach_layout(struct v8 *v, struct proc *p, const char *const *names,
		    const int32_t *vals, size_t n);
/* p goes away: its cache and its v8_procs entry. */
void		 v8_forget(struct v8 *v, struct proc *p);
/*
 * Read what naming the sample's n frames fr needs (once per sample, before
 * v8_frame), then name frame i into f: func, srcfile and line, mapping
 * "[js]"; 0, or -errno when fr[i] is not (or no longer) a JavaScript
 * function that can be read (the caller keeps the native frame). f's
 * strings are valid until the next v8_read.
 */
void		 v8_read(struct v8 *v, struct proc *p, const struct prof_v8frame *fr, size_t n);
int		 v8_frame(struct v8 *v, struct proc *p, size_t i, struct frame *f);
struct v8_stats {
	uint64_t	 named;		/* frames named, since start */
	uint64_t	 unreadable;	/* JavaScript frames left native (unreadable), since start */
};
void		 v8_get_stats(const struct v8 *v, struct v8_stats *st);
/*
 * What V8's postmortem constants leave out, one row per V8 major version
 * (v8.c's table): how a function's ScopeInfo is laid out. v8_layout_of:
 * the row of V8 major, NULL for a version not known.
 */
struct v8_layout {
	int		 major;		/* V8's major version */
	const char	*node;		/* the Node.js release line that ships it */
	int		 first_vars;	/* its v8dbg_scopeinfo_idx_first_vars */
	bool		 flags_smi;	/* flags a Smi, else a uint32 in the slot's low half */
	int		 fn_scope;	/* ScopeType FUNCTION_SCOPE */
	bool		 pos_head;	/* start, end positions in slots 3, 4 (else after names) */
};
const struct v8_layout *v8_layout_of(int major);
/*
 * Where a function's ScopeInfo keeps its name, inferred name and start
 * position: slot indexes (tagged words after the map) from its flags slot
 * (flags_word, as read), its count of context locals and layout l. -1
 * where the ScopeInfo has no such slot. 0, or -EINVAL when it is not a
 * function's scope (or has too many locals).
 */
struct v8_si_slots {
	int		 name, inferred, start;
};
int		 v8_scopeinfo_slots(const struct v8_layout *l, uint64_t flags_word,
		    uint32_t nlocals, struct v8_si_slots *out);

#endif
