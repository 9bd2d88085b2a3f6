/*
 * ruby: Ruby frames for the eBPF sampler. Finds libruby in a process (a
 * mapped libruby*.so exporting ruby_version and the thread-local
 * ruby_current_ec, or reading it in rb_errinfo), its version and that
 * version's layout (a table: Ruby 3.1 and 3.3; another version is refused,
 * logged once), and the TLS module id the dynamic linker gave it, and gives the BPF
 * program what it needs to read the sampled thread's control frames (the
 * rb_procs map, bpf/ruby.bpf.h). Names the iseqs it reports, label
 * (file:line), and the C methods, by name from the VM's symbol table, from
 * the process's memory, cached per process and checked at every sample. Where the frames go in a stack is
 * ebpf.c's business: in place of rb_vm_exec, as Python's replace the
 * evaluation loop.
 *
 * Not thread-safe: used from the sampler's thread only.
 */
#ifndef PROFILEFS_RUBY_H
#define PROFILEFS_RUBY_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

struct ruby;

/* procs_fd: the BPF map rb_procs. NULL on allocation failure. */
struct ruby	*ruby_create(int procs_fd);
void		 ruby_destroy(struct ruby *rb);
/*
 * Look at p's mappings if they changed since the last look: a libruby of a
 * known version found is entered into rb_procs, so that the next samples
 * carry its frames. Cheap when nothing changed.
 */
void		 ruby_check(struct ruby *rb, struct proc *p);
/* p goes away: its cache and its rb_procs entry. */
void		 ruby_forget(struct ruby *rb, struct proc *p);
/*
 * Name Ruby frame i of fr (n frames, as the sample carries them) into f:
 * func the iseq's label, srcfile its path, line from its pc, mapping
 * "[ruby]"; a C method's frame func its method's name. Returns 0 when
 * named; 1 for a frame not shown (a C method's where the VM's symbol table
 * was not found: its C function follows among the native frames); -EFAULT, with func
 * "[ruby: unreadable]", when the iseq cannot be read or is no longer the
 * one the sample saw. Call ruby_read first, once per sample. f's strings
 * are valid until the next call of ruby_read.
 */
void		 ruby_read(struct ruby *rb, struct proc *p, const struct prof_pyframe *fr,
		    size_t n);
int		 ruby_frame(struct ruby *rb, struct proc *p, const struct prof_pyframe *fr,
		    size_t n, size_t i, struct frame *f);
/*
 * A native frame f of p that its symbols left unnamed: named rb_vm_exec
 * when it lies in the VM's entry that libruby does not export (found by
 * its callers, ruby.c), else left as it is.
 */
void		 ruby_native_name(const struct ruby *rb, const struct proc *p, struct frame *f);
/* Whether func names the VM's entry (rb_vm_exec): a run of Ruby frames replaces it. */
int		 ruby_is_vm(const char *func);
/* Whether func names the VM's instruction loop, the frame below rb_vm_exec. */
int		 ruby_is_core(const char *func);

/*
 * An iseq's line table as rows: positions [previous row's end, end) are on
 * line `line` (0: unknown), decoded once from what the VM keeps (below).
 */
struct rbrow {
	uint32_t	 end;
	int32_t		 line;
};
/*
 * Decode the succinct index table of an iseq of iseq_size positions (tbl,
 * len bytes as read: 64-bit words of 7-bit ranks for the first 54
 * positions, then 80-byte blocks of a 32-bit rank, nine-bit ranks and a
 * 512-bit map) against the lines of its nlines insn info entries, into
 * *rows (malloc'd, owned by the caller). Ranks pointing outside lines give
 * line 0. 0, -EINVAL (the table is shorter than iseq_size needs), -ENOMEM.
 */
int		 ruby_succ_decode(const uint8_t *tbl, size_t len, uint32_t iseq_size,
		    const int32_t *lines, uint32_t nlines, struct rbrow **rows, uint32_t *nrows);
/*
 * The same from the plain positions array (nlines entries, ascending):
 * entry k covers [positions[k], positions[k + 1]). 0, -EINVAL (not
 * ascending), -ENOMEM.
 */
int		 ruby_positions_decode(const uint32_t *pos, const int32_t *lines, uint32_t nlines,
		    uint32_t iseq_size, struct rbrow **rows, uint32_t *nrows);
/* The line of position idx: 0 when the rows do not cover it. */
int32_t		 ruby_rows_lookup(const struct rbrow *rows, uint32_t n, uint64_t idx);

#endif
