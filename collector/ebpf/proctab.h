/*
 * proctab: what the eBPF sampler knows about each process it has seen: its
 * executable mappings (with the ELF object and load bias of each), its JIT
 * perf map, and the service and series labels its samples go to. A process
 * is read from /proc on its first sample or at exec, so a process that lives
 * half a second is still symbolized after it is gone. ELF reading itself is
 * symbolize.c's.
 *
 * Not thread-safe: the table belongs to the sampler's thread.
 */
#ifndef PROFILEFS_PROCTAB_H
#define PROFILEFS_PROCTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "symbolize.h"

/* How a process's service is chosen (PROFILEFS_EBPF_SERVICE_BY). */
enum service_by {
	SERVICE_BY_CGROUP,	/* systemd unit, else executable name (default) */
	SERVICE_BY_EXE,		/* executable name */
	SERVICE_BY_COMM,	/* the process's comm */
};

/* One resolved stack frame; strings are valid until the next proctab call. */
struct frame {
	const char	*func;		/* NULL: unresolved */
	const char	*file;		/* mapping name ("/usr/bin/x", "[kernel]"), NULL: none */
	const char	*build_id;	/* hex, "" if none */
	uint64_t	 start, limit, offset;	/* the mapping, when file != NULL */
	uint64_t	 addr;
	const char	*srcfile;	/* from DWARF, NULL: unknown */
	int64_t		 line;
};

struct proc {
	uint32_t	 pid;
	uint64_t	 serial;	/* unique among the processes a proctab ever held */
	char		 service[64];
	struct labelset	 labels;	/* series labels: host, unit, container, pod */
	char		*labels_text;	/* canonical form of labels */
	char		*exe;		/* its executable as it sees it ("/usr/bin/x"), NULL: unknown */
	char		 comm[16];	/* its leader's comm when read */
	bool		 excluded;	/* by an include/exclude rule: its samples are dropped */
	/* private to proctab.c below */
	struct proc	*next;
	struct pmap	*maps;
	size_t		 nmaps;
	uint32_t	 nspid;		/* these two once ids_read (proctab.c: proc_ids) */
	uint32_t	 uid;		/* owner of /proc/PID */
	int64_t		 start_ns;	/* CLOCK_REALTIME ns of its start; 0: unknown */
	bool		 ids_read;
	int		 runtime;	/* enum runtime_kind */
	int64_t		 jvm_asked;	/* monotonic ns of the last perf map request */
	int64_t		 jvm_wait;	/* ns until the next one may be made */
	int		 jvm_tmp;	/* its /tmp, once asked; 0: none */
	int64_t		 jvm_tmp_next;	/* its /tmp could not be opened: not tried before */
	bool		 perfmap_ours;	/* its perf map is there because we asked */
	bool		 perfmap_looked;	/* perfmap_ours decided, before the first request */
	bool		 gone;		/* /proc/PID vanished: do not read it again */
	bool		 remote_logged;	/* a file it maps on a remote filesystem was told of */
	bool		 jit_maps;	/* it maps anonymous executable memory (JIT code?) */
	bool		 kthread;
	int64_t		 maps_read;	/* monotonic ns of the last maps read */
	int64_t		 miss_wait;	/* ns between reads for an unknown caller */
	struct perfmap	*perfmap;
	int64_t		 perfmap_checked;
	int64_t		 perfmap_mtime;
	int64_t		 perfmap_size;
	uint32_t	 maps_gen;	/* bumped when a read of the maps finds them changed */
	/* python.c's, released through the hook of proctab_set_release */
	void		*py;
	uint32_t	 py_gen;	/* maps_gen when python.c last looked */
	/* golabels.c's: p is in go_procs; maps_gen when it last looked */
	bool		 go;
	uint32_t	 go_gen;
	/* hotspot.c's, released through the hook of proctab_set_release */
	void		*hs;
	uint32_t	 hs_gen;	/* maps_gen when hotspot.c last looked */
	int64_t		 hs_retry;	/* monotonic ns when to look again (0: at a maps change) */
	uint32_t	 hs_tries;	/* looks at a JVM still starting */
	/* v8.c's, released through the hook of proctab_set_release */
	void		*v8;
	uint32_t	 v8_gen;	/* maps_gen when v8.c last looked */
	/* the unwinder's (unwind.c), released through the hook of proctab_set_release */
	void		*unw;
	uint32_t	 unw_gen;	/* maps_gen when the unwinder last loaded p */
	/*
	 * cpuprof.c's: p's aggregate in the period numbered cp_gen, one for
	 * CPU samples, one for off-CPU waits (which come in between), and the
	 * others' (memgrow.c: memory growth, mmap calls)
	 */
#define CPUPROF_SLOTS	4
	void		*cp_svc[CPUPROF_SLOTS];
	uint64_t	 cp_gen[CPUPROF_SLOTS];
	/* ruby.c's, released through the hook of proctab_set_release */
	void		*rb;
	uint32_t	 rb_gen;	/* maps_gen when ruby.c last looked */
	/* php.c's, released through the hook of proctab_set_release */
	void		*php;
	uint32_t	 php_gen;	/* maps_gen when php.c last looked */
	int64_t		 php_retry;	/* monotonic ns: look again (a file not read); 0: none */
	bool		 held;		/* exited, kept until proctab_forget (proctab_hold) */
	uint32_t	 exec;		/* its image (prof_notice.exec), once exec_known */
	bool		 exec_known;	/* made at an exec notice */
	bool		 released;	/* the release hook ran already (a retired image) */
	struct proc	*pre;		/* its images before its last execs, newest first */
	uint64_t	 retired_at;	/* an image of pre: the table's drains then */
	uint32_t	 cg_sum;	/* checksum of /proc/PID/cgroup as named by, 0: none */
	int64_t		 cg_checked;	/* monotonic ns of the last look at it */
};

/* An executable file mapping of a process, for the unwinder. */
struct proc_mapping {
	uint64_t	 start, end, bias;
	uint64_t	 dev, ino;
	const char	*name;		/* path inside the process ("/usr/lib/..."), or "[vdso]" */
	const char	*build_id;	/* hex, "" if none */
	char		 open_path[128];	/* /proc/PID/map_files/START-END */
	char		 alt_path[4096];	/* /proc/PID/root/NAME, "" if the file was deleted */
};

struct proctab;

/* host: the value of the host label. */
struct proctab	*proctab_create(struct symbolizer *sym, enum service_by by, const char *host);
void		 proctab_destroy(struct proctab *pt);
/*
 * The process pid, read from /proc if not known yet (comm names it when
 * /proc has nothing). NULL only on allocation failure. Owned by the table.
 */
struct proc	*proctab_get(struct proctab *pt, uint32_t pid, const char *comm);
/*
 * pid has just exec'd into image exec: read it now (its libraries are not
 * mapped yet, so the first address outside the known mappings re-reads the
 * maps at once). With keep, the process's entry of before (its maps,
 * service, names; no runtime's state, and never read again) is kept as an
 * image of the new one (proctab_image) for two drains (proctab_drained), up
 * to PROCTAB_IMAGES_KEPT in all; else it is forgotten. Returns the process,
 * NULL if it is gone already (its earlier image forgotten too). Owned by
 * the table.
 */
#define PROCTAB_IMAGES_KEPT	4096
struct proc	*proctab_exec(struct proctab *pt, uint32_t pid, const char *comm, uint32_t exec,
		    bool keep);
/*
 * The image of p that a stack taken in image exec belongs to: p itself, or
 * one of its images kept from before an exec (the newest that is exec, or
 * one first seen otherwise than at an exec); p if none is kept.
 */
struct proc	*proctab_image(struct proc *p, uint32_t exec);
/* A drain of waits ended: images kept two drains go at the next proctab_expire. */
void		 proctab_drained(struct proctab *pt);
/* Forget pid (it exited, or exec'd: its mappings are no longer valid). */
void		 proctab_forget(struct proctab *pt, uint32_t pid);
/*
 * pid exited, but samples of it are still to come (off-CPU waits added up
 * in the kernel): proctab_expire keeps it until proctab_forget. -ENOENT if
 * pid is not in the table.
 */
int		 proctab_hold(struct proctab *pt, uint32_t pid);
/* Resolve a user address of p; f's strings are the table's. */
void		 proctab_resolve(struct proctab *pt, struct proc *p, uint64_t addr,
		    struct frame *f);
/*
 * Mapping i (0, 1, ...) of p whose ELF file was read: 0, or -ENOENT past
 * the last one. m's strings are valid until p's maps are read again.
 */
int		 proctab_mapping(struct proc *p, size_t i, struct proc_mapping *m);
/*
 * Open m's file for reading: through the mapping (deleted files, other mount
 * namespaces), else by name in the process's root, else by name in ours (the
 * process may be gone), the latter two only if they are the mapping's own
 * file (device and inode). Off this thread with a deadline and only on a
 * local filesystem (rio.h). The descriptor (the caller's), or -errno.
 */
int		 proctab_open_mapping(const struct proc_mapping *m);
/*
 * The first executable mapping of p's executable (p->exe) as a frame's
 * mapping fields (file, build_id, start, limit, offset); -ENOENT if p's maps
 * hold none. f's strings are valid until p's maps are read again.
 */
int		 proctab_exe_mapping(struct proc *p, struct frame *f);
/* Whether addr lies in one of p's executable mappings as last read. */
bool		 proctab_known(struct proc *p, uint64_t addr);
/* Re-read p's maps now unless they were read within the last min_age_ns. */
void		 proctab_refresh(struct proctab *pt, struct proc *p, int64_t min_age_ns);
/*
 * Read maps from their text from now on, even where the kernel answers the
 * query that makes none (the reader kernels before 6.11 get; tests compare
 * the two).
 */
void		 proctab_maps_text(struct proctab *pt);
/* fn(arg, p) runs before p is freed (forgotten, expired, table destroyed). */
void		 proctab_set_release(struct proctab *pt, void (*fn)(void *, struct proc *),
		    void *arg);
/* Forget processes whose /proc entry is gone (exit notices can be lost). */
void		 proctab_expire(struct proctab *pt);
size_t		 proctab_count(const struct proctab *pt);
/*
 * An include (include true) or exclude rule: "unit:NAME", "container:NAME",
 * "comm:NAME" or "service:NAME", NAME an fnmatch pattern (a unit with or
 * without ".service"; a container by name or id). With any include rule,
 * only processes one includes are kept; an exclude rule wins. 0, -EINVAL
 * (proctab_filter_check says why), -ENOMEM.
 */
int		 proctab_filter(struct proctab *pt, const char *rule, bool include);
/* Whether rule is well-formed: 0, or -EINVAL with *bad a static reason. */
int		 proctab_filter_check(const char *rule, const char **bad);
/*
 * What the service rule takes from a cgroup path: the systemd unit
 * ("x.service", not user@N.service), a container id (first 12 of 64 hex
 * digits) and a kubepods pod uid; each left untouched when absent.
 */
void		 proctab_parse_cgroup(const char *path, char *unit, size_t unitsz,
		    char *ctr, size_t ctrsz, char *pod, size_t podsz);

#endif
