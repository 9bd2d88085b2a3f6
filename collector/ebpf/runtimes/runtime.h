/*
 * runtime: what the eBPF sampler knows of language runtimes it samples.
 * Which runtime a process runs (CPython, HotSpot, CRuby), the service name its
 * command line gives (the script, the module, the main class or jar), and,
 * for JVMs, asking the JVM to write its perf map through the HotSpot attach
 * mechanism (jvm.c). Reading the perf map is symbolize.c's; CPython's frames
 * are python.c's (python.h); the process table (proctab.c) calls in here.
 *
 * Thread-safety: each function says.
 */
#ifndef PROFILEFS_RUNTIME_H
#define PROFILEFS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum runtime_kind {
	RUNTIME_NONE,
	RUNTIME_PYTHON,		/* CPython: the executable is python[N[.N]] */
	RUNTIME_JVM,		/* HotSpot: java, or a process that maps libjvm.so */
	RUNTIME_RUBY,		/* CRuby: the executable is ruby[N[.N]] */
	RUNTIME_NODE,		/* Node.js: the executable is node or nodejs */
	RUNTIME_PHP,		/* PHP CLI: the executable is php[N[.N]] (named only) */
};

/* The runtime an executable's base name (as /proc/PID/exe gives it) says. */
enum runtime_kind runtime_by_exe(const char *base);

/*
 * The service a runtime's command line names: for Python the script's base
 * name without ".py" (a package's __main__.py: its directory's name) or the
 * module of -m; for Java the main class, the module/class of -m, or the
 * jar's base name without ".jar"; for Ruby the script's base name without
 * ".rb" (a launcher such as /usr/bin/rake: its name); for Node.js the script's
 * base name without ".js", ".mjs" or ".cjs" (an index.js: its directory's name);
 * for PHP the script's base name without ".php". argv is /proc/PID/cmdline as read (NUL
 * separated, len bytes, not necessarily NUL-terminated). Writes out (at most
 * outsz bytes, NUL-terminated) and returns true, or false when the command
 * line names nothing (-c, -e, stdin, an interactive interpreter).
 */
bool		 runtime_service(enum runtime_kind k, const char *argv, size_t len,
		    char *out, size_t outsz);

/* --- HotSpot (jvm.c) --- */

/*
 * Ask the JVM pid (nspid in its own pid namespace) to write its perf map
 * (/tmp/perf-NSPID.map, through the jcmd command Compiler.perfmap), over the
 * HotSpot attach socket in its /tmp. uid is the process's owner: the files
 * the exchange uses must belong to it (or root), and none is followed
 * through a link. Blocks for at most timeout_ms. 0, or -errno.
 */
int		 runtime_jvm_perfmap(pid_t pid, pid_t nspid, uid_t uid, int timeout_ms);
/*
 * pid's /tmp (its root's "tmp", not followed if a link) as an open directory
 * fd for the caller to close; -EPERM unless root or uid owns it, -EREMOTE on
 * FUSE or a network filesystem, -ETIMEDOUT when it did not open within the
 * deadline (rio.h). -errno.
 */
int		 runtime_tmpdir(pid_t pid, uid_t uid);
/* How long pid has run, in seconds (/proc/PID/stat), or -1 when gone. */
double		 runtime_proc_age_s(pid_t pid);

/*
 * A worker thread that asks JVMs for their perf maps one at a time, so the
 * sampler never waits for a JVM. runtime_attach_request queues a request
 * (none if pid is queued or being asked already, or the queue is full) and
 * returns whether it did. Thread-safe; destroy joins the worker.
 */
struct runtime_attach;
struct runtime_attach *runtime_attach_create(int timeout_ms);
void		 runtime_attach_destroy(struct runtime_attach *ra);
bool		 runtime_attach_request(struct runtime_attach *ra, pid_t pid, pid_t nspid,
		    uid_t uid);

#endif
