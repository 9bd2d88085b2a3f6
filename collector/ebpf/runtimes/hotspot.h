/*
 * hotspot: HotSpot JVM frames for the eBPF sampler. Finds a JVM's libjvm.so,
 * reads the structure tables it exports for debuggers (gHotSpotVMStructs,
 * gHotSpotVMTypes, gHotSpotVMIntConstants) from the process's memory, and
 * gives the BPF walker (bpf/hotspot.bpf.h) where the code cache, its heaps,
 * their segment maps and the interpreter lie and where a code blob keeps its
 * frame size (the hs_procs map), so that Java stacks are walked through
 * compiled, interpreted and stub frames without -XX:+PreserveFramePointer.
 * Names the Java frames the walker reports from the JVM's metadata: an
 * interpreted frame from its Method* and bytecode pointer, a compiled one
 * from its nmethod's scopes (one frame per method inlined at the pc), as
 * "pkg.Class.method(args)" (the symbolizer's spelling of the perf map's
 * names) with the source file and line; cached per process and read again
 * when a method or nmethod no longer checks out. Stubs are named after their
 * code blob ("StubRoutines (1)", as the perf map names them). OpenJDK 17,
 * 21 and 25 (hotspot.c's versions[]: what moved between them): another
 * version is left alone (logged once, naming it), its stacks walked by frame
 * pointer as before.
 *
 * Not thread-safe: used from the sampler's thread only.
 */
#ifndef PROFILEFS_HOTSPOT_H
#define PROFILEFS_HOTSPOT_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "proctab.h"

struct hotspot;

/* procs_fd: the BPF map hs_procs. NULL on allocation failure. */
struct hotspot	*hotspot_create(int procs_fd);
void		 hotspot_destroy(struct hotspot *hs);
/*
 * Look at p if it is a JVM not entered yet: a supported one whose code
 * cache is set up is entered into hs_procs. Cheap when there is nothing new
 * (a JVM still starting is looked at again every 100 ms, for a minute at
 * most; its tables are read once).
 */
void		 hotspot_check(struct hotspot *hs, struct proc *p);
/* p goes away (or is left alone): its cache and its hs_procs entry. */
void		 hotspot_forget(struct hotspot *hs, struct proc *p);
/*
 * Read what the HotSpot frames of sample s refer to (their methods' and
 * code blobs' headers), in one read of p's memory; call once per sample,
 * before hotspot_frames.
 */
void		 hotspot_read(struct hotspot *hs, struct proc *p, const struct prof_sample *s);
/*
 * If user frame i of sample s is a HotSpot frame the walker noted, the Java
 * frames it stands for, innermost first, in *out (valid until the next
 * call): one for an interpreted frame, one per method inlined into the
 * outermost for a compiled one (func "pkg.Class.method(args)", file
 * "[java]"; a method that cannot be read: func "[java: unreadable]").
 * A stub's frame: its code blob's name. Returns how many; 0: not such a
 * frame, or its blob unreadable (the perf map names it).
 */
size_t		 hotspot_frames(struct hotspot *hs, struct proc *p, const struct prof_sample *s,
		    size_t i, const struct frame **out);
struct hotspot_stats {
	uint64_t	 jvms;		/* JVMs entered into hs_procs, since start */
	uint64_t	 refused;	/* JVMs left alone (version, tables), since start */
	uint64_t	 frames;	/* Java frames named from the JVM's structures, since start */
	uint64_t	 unreadable;	/* ... whose method could not be read */
	uint64_t	 mem_stalls;	/* reads of a process's memory abandoned (memread.h) */
};
void		 hotspot_get_stats(const struct hotspot *hs, struct hotspot_stats *st);
/*
 * A method signature ("(I[Ljava/lang/String;)V") as Java spells it: the
 * return type into ret, the parameters into args ("int, java.lang.String[]"),
 * each at most its size, NUL-terminated. 0, or -EINVAL when malformed.
 */
int		 hotspot_signature(const char *sig, size_t len, char *ret, size_t retsz,
		    char *args, size_t argsz);
/*
 * An integer of HotSpot's compressed streams (UNSIGNED5: each byte less x,
 * the bytes excluded below it, 0 in JDK 17 and 1 from JDK 21; one below
 * 256 - 64 - x ends it, each further byte weighs 64 times more, five at
 * most) at *pos of b (len bytes), *pos moved past it; -1 past the end or at
 * an excluded byte.
 */
int64_t		 hotspot_unsigned5(const uint8_t *b, size_t len, size_t *pos, unsigned x);
/*
 * The line of bytecode index bci (-1: the method's first line) from a
 * method's compressed line number table t (len bytes, its integers
 * UNSIGNED5 with x excluded bytes); 0 when it has none.
 */
int64_t		 hotspot_line(const uint8_t *t, size_t len, int64_t bci, unsigned x);
/*
 * The scope chain of an nmethod from the scope at decode offset dec of its
 * scopes data (len bytes): each scope's method (index into meta, nmeta
 * entries, 1 first) into out and bytecode index into bcis, innermost first,
 * at most max; x: as hotspot_unsigned5's. Returns how many; stops at a
 * malformed scope.
 */
size_t		 hotspot_scopes(const uint8_t *scopes, size_t len, const uint64_t *meta,
		    size_t nmeta, int64_t dec, uint64_t *out, int64_t *bcis, size_t max,
		    unsigned x);

#endif
