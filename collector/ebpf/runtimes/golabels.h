/*
 * golabels: the pprof labels of Go programs (pprof.Do, pprof.SetGoroutineLabels)
 * on the eBPF sampler's samples. Finds, once per executable, where the Go
 * runtime keeps the running goroutine's labels (from its DWARF, else from its
 * Go version) and enters Go processes into the BPF map go_procs, so that
 * their samples carry the labels' bytes (bpf/golabels.bpf.h). Turns those
 * into series labels of the eBPF profile (so that tree selectors and
 * matchers select on them) and pprof sample labels, within bounds. How the
 * profile is built is cpuprof.c's; where this is called from, ebpf.c's.
 *
 * Not thread-safe: used from the sampler's thread only.
 */
#ifndef PROFILEFS_GOLABELS_H
#define PROFILEFS_GOLABELS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

/*
 * Bounds beyond the sample's (profile.h): label sets of one service made
 * series, and label sets remembered in all, within one GOLABELS_WINDOW_NS.
 * A sample whose set is refused goes to its process's plain series, its Go
 * labels kept as pprof sample labels only.
 */
#define GOLABELS_SETS_PER_SERVICE	32
#define GOLABELS_MAX_SETS		4096
#define GOLABELS_WINDOW_NS		(3600LL * 1000 * 1000 * 1000)

struct golabels;

/* procs_fd: the BPF map go_procs. NULL on allocation failure. */
struct golabels	*golabels_create(int procs_fd);
void		 golabels_destroy(struct golabels *gl);
/*
 * Look at p's executable once it is known: a Go program whose labels can be
 * found is entered into go_procs. Cheap once p was looked at.
 */
void		 golabels_check(struct golabels *gl, struct proc *p);
/* p goes away: its go_procs entry. */
void		 golabels_forget(struct golabels *gl, struct proc *p);

/* A sample's Go labels, as golabels_sample gives them (owned by gl). */
struct golabels_set {
	const char	*series;	/* p's series labels and the admitted Go pairs; NULL: p's own */
	size_t		 n;		/* pprof sample labels: the Go pairs */
	const char	*const *keys, *const *values;
};

/*
 * The labels of sample s of p: 0 with *out filled (valid until the next
 * call, or golabels_period), -ENOENT when s carries none, -errno.
 */
int		 golabels_sample(struct golabels *gl, const struct proc *p,
		    const struct prof_sample *s, struct golabels_set *out);
/* A period ends at now (monotonic ns): the admission window may start over. */
void		 golabels_period(struct golabels *gl, int64_t now);

struct golabels_stats {
	uint64_t	 procs;		/* Go processes entered, since start */
	uint64_t	 samples;	/* samples with Go labels */
	uint64_t	 refused;	/* ... whose set was not made a series (the bounds) */
	uint64_t	 dropped;	/* pairs left out (too long, bad key, a series label's key) */
	size_t		 sets;		/* label sets remembered now */
};
void		 golabels_get_stats(const struct golabels *gl, struct golabels_stats *st);

/*
 * The Go version of an executable's .go.buildinfo section (data, len bytes,
 * its address vaddr; read pointers, for the form before Go 1.18, through
 * read(arg, vaddr, dst, n): 0 or -errno) as major and minor: 0, or -EINVAL.
 */
int		 golabels_buildinfo_version(const uint8_t *data, size_t len,
		    int (*read)(void *arg, uint64_t vaddr, void *dst, size_t n), void *arg,
		    int *major, int *minor);

#endif
