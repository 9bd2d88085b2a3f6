/*
 * php: PHP frames for the eBPF sampler. Finds an NTS php executable (CLI,
 * FPM, CGI) or libphp in a process (a mapped file exporting
 * executor_globals), its version from the binary's "X-Powered-By: PHP/"
 * string and that version's layout (a table: PHP 8.2 to 8.4), and gives
 * the BPF program what it needs to walk the executor's frames (the
 * php_procs map, bpf/php.bpf.h). Names the user functions the samples
 * carry, Class::method or function, with their file and the line of the
 * frame's opline, from the process's memory, cached per process and
 * checked at every sample. Where the frames go in a stack is ebpf.c's
 * business: in place of execute_ex, as Python's replace the evaluation loop.
 *
 * Not thread-safe: used from the sampler's thread only.
 */
#ifndef PROFILEFS_PHP_H
#define PROFILEFS_PHP_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

struct php;

/* procs_fd: the BPF map php_procs. NULL on allocation failure. */
struct php	*php_create(int procs_fd);
void		 php_destroy(struct php *ph);
/*
 * Look at p's mappings if they changed since the last look: a php of a
 * known version found is entered into php_procs, so that the next samples
 * carry its frames. A version not known is refused, told once per binary.
 * Cheap when nothing changed.
 */
void		 php_check(struct php *ph, struct proc *p);
/* p goes away: its cache and its php_procs entry. */
void		 php_forget(struct php *ph, struct proc *p);
/*
 * Name PHP frame i of fr (n frames, as the sample carries them) into f:
 * func "Class::method" or the function's name ("{main}" for a file's own
 * code), srcfile its file, line its opline's, mapping "[php]". 0 when
 * named; -EFAULT, with func "[php: unreadable]", when the function cannot
 * be read or is no longer the one the sample saw. Call php_read first, once
 * per sample (sample_ns: its bpf_ktime_get_ns time). f's strings are valid
 * until the next call of php_read.
 */
void		 php_read(struct php *ph, struct proc *p, const struct prof_pyframe *fr,
		    size_t n, uint64_t sample_ns);
int		 php_frame(struct php *ph, struct proc *p, const struct prof_pyframe *fr,
		    size_t n, size_t i, struct frame *f);
/* Whether func names the executor's loop (execute_ex): a run of PHP frames replaces it. */
int		 php_is_vm(const char *func);
/*
 * Parse the PHP version in the bytes of a binary's read-only data (len
 * bytes): the first "X-Powered-By: PHP/MAJOR.MINOR.". 0, or -ENOENT.
 */
int		 php_version_find(const char *data, size_t len, int *major, int *minor);

#endif
