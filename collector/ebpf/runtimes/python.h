/*
 * python: CPython frames for the eBPF sampler. Finds the interpreter of a
 * process (the executable or libpython that exports _PyRuntime), its version
 * (Py_Version) and that version's layout (a table for CPython 3.11 and 3.12;
 * from 3.13 on, the _Py_DebugOffsets the interpreter exports), and
 * gives the BPF program what it needs to read the sampled thread's frames
 * (the py_procs map). Names the code objects it reports, function
 * (file:line), from the process's memory (process_vm_readv), cached per
 * process and checked against the object at every sample. Where the frames
 * go in a stack is ebpf.c's business.
 *
 * Not thread-safe: used from the sampler's thread only.
 */
#ifndef PROFILEFS_PYTHON_H
#define PROFILEFS_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

struct python;

/* procs_fd: the BPF map py_procs. NULL on allocation failure. */
struct python	*python_create(int procs_fd);
void		 python_destroy(struct python *py);
/*
 * Look at p's mappings if they changed since the last look: a CPython of a
 * known version found is entered into py_procs, so that the next samples
 * carry its frames. Cheap when nothing changed.
 */
void		 python_check(struct python *py, struct proc *p);
/* p goes away: its cache and its py_procs entry. */
void		 python_forget(struct python *py, struct proc *p);
/*
 * Name Python frame i of fr (n frames, as the sample carries them) into f:
 * func, srcfile and line, mapping "[python]". Frames that cannot be read or
 * no longer hold the code object the sample saw get func
 * "[python: unreadable]" (and return -EFAULT; 0 when named). Call
 * python_read first, once per sample (sample_ns: its bpf_ktime_get_ns time);
 * it reads the code objects not found unchanged since that time. f's
 * strings are valid until the next call of python_read.
 */
void		 python_read(struct python *py, struct proc *p, const struct prof_pyframe *fr,
		    size_t n, uint64_t sample_ns);
int		 python_frame(struct python *py, struct proc *p, const struct prof_pyframe *fr,
		    size_t n, size_t i, struct frame *f);
/*
 * The line of code unit idx from a code object's location table
 * (co_linetable, len bytes, CPython 3.11+), lines counted from firstlineno;
 * 0 when the table has no line for it or is malformed.
 */
int64_t		 python_linetable_line(const uint8_t *lt, size_t len, int32_t firstlineno,
		    uint64_t idx);
/*
 * The same table decoded once: rows (malloc'd, *rows owned by the caller) of
 * code units and their line, then looked up by python_lines_lookup (the
 * line python_linetable_line gives for idx). 0 or -ENOMEM.
 */
struct ltrow;
int		 python_linetable_decode(const uint8_t *lt, size_t len, int32_t firstlineno,
		    struct ltrow **rows, uint32_t *nrows);
int64_t		 python_lines_lookup(const struct ltrow *rows, uint32_t n, uint64_t idx);
/* A new period of secs seconds: the CPU budget of line tables starts again. */
void		 python_period(struct python *py, unsigned secs);
struct python_stats {
	size_t		 lines_bytes;	/* decoded line tables held */
	uint64_t	 lines_decoded;	/* since start */
	uint64_t	 frames_unlined;	/* frames named without their line (budgets), since start */
	uint64_t	 mem_stalls;	/* reads of a process's memory abandoned (memread.h) */
};
void		 python_get_stats(const struct python *py, struct python_stats *st);
/* Whether func names the interpreter's evaluation loop (its frames replace it). */
int		 python_is_eval(const char *func);
/*
 * Whether native frame f of p (as proctab_resolve named it) is the
 * evaluation loop: by its name, or, unnamed, in a part of the loop's code
 * that lies outside its symbol (a compiler's hot/cold split).
 */
bool		 python_is_eval_frame(const struct proc *p, const struct frame *f);

#endif
