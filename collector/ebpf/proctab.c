/*
 * proctab: the process table of the eBPF sampler.
 *
 * Reading a process: /proc/PID/maps (executable mappings only), the ELF
 * object of each file mapping opened through /proc/PID/map_files/START-END
 * (works for deleted files and other mount namespaces; falls back to
 * /proc/PID/root/PATH), its load bias from the ELF program headers,
 * /proc/PID/cgroup for the service and labels, NSpid from /proc/PID/status
 * for the perf map name (/proc/PID/root/tmp/perf-NSPID.map).
 *
 * The service rule (documented in docs/ebpf.md, "Services"):
 *   cgroup (default): the cgroup is read from every layout (v2, v1's
 *     name=systemd and cpu hierarchies), and again when it changes. A
 *     container in it (64 hex digits: docker, containerd, cri-o, podman)
 *     gives the runtime's name for it (its state on the host), else
 *     Kubernetes' container name, else the first 12 hex digits; a systemd
 *     unit "x.service" (a user's inside user@N.service too) gives "x"; a
 *     Python, Ruby, Node.js or PHP script gives its name with the language's
 *     extension ("busy.py", "busy.js"; a generic main/app/server/... name
 *     takes its directory: "shop-app.py"); a Java main class or jar its
 *     name; else the executable's base name. Labels: unit, container (id),
 *     pod (name, else uid).
 *   exe: always the executable's base name (labels as above).
 *   comm: the process's comm.
 * Kernel threads go to service "kernel". Include/exclude rules
 * (proctab_filter) mark a process excluded: its samples are dropped.
 */
#define _GNU_SOURCE	/* memmem, memfd_create */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "proctab.h"
#include "rio.h"
#include "runtime.h"

#define NBUCKETS	4096
#define MAPS_REREAD_NS	(1000LL * 1000 * 1000)	/* unknown address: re-read maps at most 1/s */
#define PERFMAP_RECHECK_NS (1000LL * 1000 * 1000)
#define PERFMAP_STALE_SLACK_NS (2000LL * 1000 * 1000)	/* perfmap_stale() */
/* A JVM is asked for its perf map again after this, doubling up to the max. */
#define JVM_ASK_FIRST_NS (250LL * 1000 * 1000)
#define JVM_ASK_MAX_NS	(30LL * 1000 * 1000 * 1000)
#define JVM_ASK_AGAIN_NS (1000LL * 1000 * 1000)	/* ... after an ask that brought new code */
#define JVM_ATTACH_TIMEOUT_MS 5000
#define JVM_FRESH_NS	(5LL * 1000 * 1000 * 1000)	/* a request answered within this */
#define CGROUP_RECHECK_NS (2LL * 1000 * 1000 * 1000)	/* a sampled process's cgroup */
#define CTR_RETRY_NS	(30LL * 1000 * 1000 * 1000)	/* an unnamed container asked again */
#define CTR_CACHE	256
#define CTR_FILE_MAX	(8 << 20)	/* bytes of a runtime's state file read */

/* A container's name as its runtime's state on the host gives it. */
struct ctrname {
	char		 id[65];
	char		 name[128];	/* "" none found */
	char		 pod[128];	/* Kubernetes' pod name, "" none */
	int64_t		 asked;		/* monotonic ns */
};

/* One --ebpf-include / --ebpf-exclude rule. */
struct pfilter {
	char		 kind;		/* 'u' unit, 'c' container, 'm' comm, 's' service */
	char		 pat[128];	/* fnmatch pattern */
	bool		 include;
};

struct pmap {
	uint64_t	 start, end, offset;
	uint64_t	 dev, ino;
	char		*path;		/* as in maps, " (deleted)" removed; "" for anonymous */
	struct elfobj	*obj;		/* NULL: not an ELF file we could read */
	uint64_t	 bias;
	bool		 deleted;	/* the name now leads to another file, or none */
};

struct proctab {
	struct symbolizer *sym;
	uint64_t	 serial;	/* the last given to a process */
	enum service_by	 by;
	char		 host[256];
	struct proc	*buckets[NBUCKETS];
	size_t		 n;
	void		(*release)(void *, struct proc *);
	void		*release_arg;
	struct runtime_attach *attach;	/* started for the first JVM */
	int		 procmap;	/* MAPS_QUERY: 1 answered, -1 not here (or not wanted), 0 not tried */
	struct ctrname	 ctrs[CTR_CACHE];
	size_t		 nctrs, ctr_next;
	struct pfilter	*filters;
	size_t		 nfilters;
	bool		 includes;	/* a rule includes: the others are left out */
	uint64_t	 drains;	/* proctab_drained */
	size_t		 nimages;	/* images kept (struct proc.pre) */
};

struct proctab *
proctab_create(struct symbolizer *sym, enum service_by by, const char *host)
{
	struct proctab *pt = calloc(1, sizeof(*pt));

	if (pt == NULL)
		return NULL;
	pt->sym = sym;
	pt->ctr_next = 0;
	pt->by = by;
	snprintf(pt->host, sizeof(pt->host), "%s", host);
	return pt;
}

static void
pmaps_free(struct pmap *maps, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(maps[i].path);
		symbolize_elf_put(maps[i].obj);
	}
	free(maps);
}

static void
maps_free(struct proc *p)
{
	pmaps_free(p->maps, p->nmaps);
	p->maps = NULL;
	p->nmaps = 0;
}

static uint32_t read_nspid(uint32_t pid);

/*
 * p's pid in its own namespace and its owner, read when first needed (perf
 * maps, the JVM): most processes never need them.
 */
static void
proc_ids(struct proc *p)
{
	char path[64];
	struct stat st;

	if (p->ids_read)
		return;
	p->ids_read = true;
	p->nspid = p->gone ? p->pid : read_nspid(p->pid);
	snprintf(path, sizeof(path), "/proc/%u", p->pid);
	p->uid = !p->gone && stat(path, &st) == 0 ? st.st_uid : 0;
	if (!p->gone) {
		double age = runtime_proc_age_s((pid_t)p->pid);

		if (age >= 0)
			p->start_ns = clock_now_ns() - (int64_t)(age * 1e9);
	}
}

/*
 * A perf map written before its process started is a dead process's that
 * had the same pid (pids wrap at 32,768 on a small host): not this one's
 * names, and not a map someone made for this process. The start time is
 * known to a clock tick (10 ms), and from the wall clock, which may have
 * been stepped since: 2 s of slack; a pid is not reused that fast.
 */
static bool
perfmap_stale(const struct proc *p, const struct stat *st)
{
	int64_t mtime = st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;

	return p->start_ns > 0 && mtime + PERFMAP_STALE_SLACK_NS < p->start_ns;
}

/*
 * A JVM we asked for perf maps has exited: remove the map it wrote because
 * we asked (through its /tmp as opened while it ran, so in its mount
 * namespace), when it is a regular file of the JVM's user, not a link. A
 * map that was there before our first request (a user's jcmd, another
 * profiler) or that the JVM was told to write at exit
 * (-XX:+DumpPerfMapAtExit) is someone else's: it stays. One a dead process
 * of the same pid left (perfmap_stale) goes too, answered or not: it names
 * no process any more.
 */
static void
jvm_tidy(struct proc *p)
{
	char name[32], path[96];
	struct stat st;
	int fd;

	if (p->jvm_tmp <= 0 || p->jvm_asked == 0 || !p->perfmap_ours)
		return;
	/* Looked at off this thread: the name may be a mount point that never answers. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/perf-%u.map", p->jvm_tmp, p->nspid);
	if ((fd = rio_open(rio_self(), (pid_t)p->pid, path, 0, 0, &st)) < 0)
		return;
	close(fd);
	snprintf(name, sizeof(name), "perf-%u.map", p->nspid);
	if (st.st_uid == p->uid && st.st_nlink == 1 && unlinkat(p->jvm_tmp, name, 0) == 0)
		log_debug("ebpf: jvm %u exited: removed the perf map it wrote for us", p->pid);
}

/*
 * Whether a JVM was told to write its perf map itself: -XX:+DumpPerfMapAtExit
 * on its command line or in the JAVA_TOOL_OPTIONS / JDK_JAVA_OPTIONS it read
 * (the first 64 KiB of each are looked at).
 */
static bool
jvm_dumps_map(uint32_t pid)
{
	static const char *const files[] = { "cmdline", "environ" };
	static const char flag[] = "+DumpPerfMapAtExit";
	char path[64], *buf;
	bool found = false;
	size_t i;
	ssize_t n;
	int fd;

	if ((buf = malloc(65536)) == NULL)
		return true;	/* unsure: leave the map alone */
	for (i = 0; i < 2 && !found; i++) {
		snprintf(path, sizeof(path), "/proc/%u/%s", pid, files[i]);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, 65536);
		close(fd);
		found = n > 0 && memmem(buf, (size_t)n, flag, sizeof(flag) - 1) != NULL;
	}
	free(buf);
	return found;
}

static void images_free(struct proctab *, struct proc *);

static void
proc_free(struct proctab *pt, struct proc *p)
{
	images_free(pt, p->pre);
	if (p->jvm_tmp > 0)
		close(p->jvm_tmp);
	if (pt->release && !p->released)
		pt->release(pt->release_arg, p);
	maps_free(p);
	perfmap_free(p->perfmap);
	labels_clear(&p->labels);
	free(p->labels_text);
	free(p->exe);
	free(p);
}

/* Kept images from q on (a chain of pre). */
static void
images_free(struct proctab *pt, struct proc *q)
{
	struct proc *n;

	for (; q != NULL; q = n) {
		n = q->pre;
		q->pre = NULL;
		pt->nimages--;
		proc_free(pt, q);
	}
}

void
proctab_destroy(struct proctab *pt)
{
	struct proc *p, *n;
	size_t i;

	if (pt == NULL)
		return;
	/* The attach worker first: no answer comes after the maps are removed. */
	runtime_attach_destroy(pt->attach);
	for (i = 0; i < NBUCKETS; i++)
		for (p = pt->buckets[i]; p; p = n) {
			n = p->next;
			jvm_tidy(p);	/* a JVM that runs on keeps no map it would not update */
			proc_free(pt, p);
		}
	free(pt->filters);
	free(pt);
}

/* --- reading /proc ------------------------------------------------------- */

static bool
pmaps_same(const struct pmap *a, size_t na, const struct pmap *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].start != b[i].start || a[i].end != b[i].end ||
		    a[i].offset != b[i].offset || a[i].dev != b[i].dev || a[i].ino != b[i].ino ||
		    a[i].obj != b[i].obj || a[i].bias != b[i].bias ||
		    a[i].deleted != b[i].deleted || strcmp(a[i].path, b[i].path) != 0)
			return false;
	return true;
}

/* A hex number at *s, which moves past it; -1 if there is none. */
static int
hexnum(char **s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(*s, &end, 16);
	if (end == *s || errno != 0)
		return -1;
	*s = end;
	return 0;
}

/*
 * One line of /proc/PID/maps, "start-end perms offset major:minor inode
 * name", if its mapping is executable (most are not: those stop at the
 * permissions). *name: the offset of the name in line.
 */
static int
maps_line(char *line, unsigned long long *start, unsigned long long *end,
    unsigned long long *off, unsigned int *major, unsigned int *minor,
    unsigned long long *ino, int *name)
{
	unsigned long long v;
	char *s = line, *e;

	if (hexnum(&s, start) < 0 || *s++ != '-' || hexnum(&s, end) < 0 || *s++ != ' ')
		return -1;
	if (s[0] == '\0' || s[1] == '\0' || s[2] != 'x')
		return -1;
	while (*s && *s != ' ')
		s++;
	if (*s++ != ' ' || hexnum(&s, off) < 0 || *s++ != ' ' || hexnum(&s, &v) < 0 ||
	    *s++ != ':')
		return -1;
	*major = (unsigned int)v;
	if (hexnum(&s, &v) < 0 || *s++ != ' ')
		return -1;
	*minor = (unsigned int)v;
	errno = 0;
	*ino = strtoull(s, &e, 10);
	if (e == s || errno != 0)
		return -1;
	for (s = e; *s == ' '; s++)
		;
	*name = (int)(s - line);
	return 0;
}

/*
 * Filesystems whose files the sampler does not open: a read, even an open,
 * may wait for good on a server that does not answer (a FUSE server any
 * user may run, a network server gone). Their files keep their names.
 */
static bool
fstype_remote(const char *t)
{
	static const char *const remote[] = { "fuse", "nfs", "nfs4", "cifs", "smb3", "smbfs",
	    "9p", "ceph", "afs", "coda", "ncpfs", "lustre", "gfs2", "ocfs2", "orangefs" };
	size_t i;

	if (strncmp(t, "fuse.", 5) == 0 || strcmp(t, "fuseblk") == 0)
		return true;
	for (i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		if (strcmp(t, remote[i]) == 0)
			return true;
	return false;
}

/* The device of the kernel's internal tmpfs (memfd, shared anonymous memory). */
static uint64_t
shmem_dev(void)
{
	static uint64_t dev;
	static bool known;
	struct stat st;
	int fd;

	if (!known) {
		known = true;
		if ((fd = memfd_create("profilefs-probe", MFD_CLOEXEC)) >= 0) {
			if (fstat(fd, &st) == 0)
				dev = st.st_dev;
			close(fd);
		}
	}
	return dev;
}

/* Verdicts of one read of the maps (struct fscheck), by device. */
#define FSCHECK_DEVS	16

struct fscheck {
	uint32_t	 pid;
	bool		 loaded;	/* mountinfo read (or found unreadable) */
	char		*mountinfo;	/* NULL: unreadable */
	uint64_t	 dev[FSCHECK_DEVS];
	bool		 ok[FSCHECK_DEVS];
	size_t		 n;
};

/*
 * Whether files on device dev, mapped by fc->pid, may be opened: devices of
 * block filesystems (a major number) may; an anonymous device (major 0)
 * only if the process's mountinfo shows a filesystem of it that is not
 * remote, or it is the internal tmpfs. A device in no mount (a mount
 * detached since the file was mapped) may not.
 */
static bool
fscheck_ok(struct fscheck *fc, uint64_t dev)
{
	char path[64], want[32], line[1024], type[64];
	const char *at, *end, *nl, *dash, *f3;
	bool ok = false;
	size_t i, len;
	FILE *f;

	if (major(dev) != 0 || dev == shmem_dev())
		return true;
	for (i = 0; i < fc->n; i++)
		if (fc->dev[i] == dev)
			return fc->ok[i];
	if (!fc->loaded) {
		struct buf b = { 0 };
		char chunk[4096];

		fc->loaded = true;
		snprintf(path, sizeof(path), "/proc/%u/mountinfo", fc->pid);
		if ((f = fopen(path, "re")) != NULL) {
			while ((len = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < (4u << 20))
				if (buf_add(&b, chunk, len) < 0)
					break;
			fclose(f);
		}
		if (buf_error(&b) == 0 && b.data)
			fc->mountinfo = b.data;
		else
			buf_free(&b);
	}
	snprintf(want, sizeof(want), "%u:%u ", major(dev), minor(dev));
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE OPTS" */
	for (at = fc->mountinfo; at && *at && !ok; at = nl ? nl + 1 : end) {
		nl = strchr(at, '\n');
		end = nl ? nl : at + strlen(at);
		len = (size_t)(end - at) < sizeof(line) - 1 ? (size_t)(end - at) : sizeof(line) - 1;
		memcpy(line, at, len);
		line[len] = '\0';
		f3 = line;
		for (i = 0; i < 2 && f3; i++)
			if ((f3 = strchr(f3, ' ')) != NULL)
				f3++;
		if (f3 == NULL || strncmp(f3, want, strlen(want)) != 0)
			continue;
		if ((dash = strstr(line, " - ")) != NULL && sscanf(dash + 3, "%63s", type) == 1 &&
		    !fstype_remote(type))
			ok = true;
	}
	if (fc->n < FSCHECK_DEVS) {
		fc->dev[fc->n] = dev;
		fc->ok[fc->n++] = ok;
	}
	return ok;
}

/*
 * The kernel's answer to "which mapping holds, or follows, this address"
 * (PROCMAP_QUERY, an ioctl on /proc/PID/maps since Linux 6.11; the layout of
 * struct procmap_query in linux/fs.h, which older headers lack): the
 * executable mappings one by one, with no text made or parsed, and only
 * those (most of a process's mappings are not executable).
 */
struct maps_query {
	uint64_t	 size;		/* in: sizeof this */
	uint64_t	 query_flags;	/* in: MAPS_Q_* */
	uint64_t	 query_addr;	/* in */
	uint64_t	 vma_start, vma_end;	/* out */
	uint64_t	 vma_flags;	/* out: MAPS_Q_READABLE... */
	uint64_t	 vma_page_size;	/* out */
	uint64_t	 vma_offset;	/* out: in the file */
	uint64_t	 inode;		/* out */
	uint32_t	 dev_major, dev_minor;	/* out */
	uint32_t	 vma_name_size;	/* in: room at vma_name_addr; out: name length + 1, 0: none */
	uint32_t	 build_id_size;	/* in: 0 (not asked for) */
	uint64_t	 vma_name_addr;	/* in */
	uint64_t	 build_id_addr;	/* in: 0 */
};
_Static_assert(sizeof(struct maps_query) == 104, "struct procmap_query is 104 bytes");
#define MAPS_QUERY		_IOWR('f', 17, struct maps_query)
#define MAPS_Q_EXECUTABLE	0x04
#define MAPS_Q_COVERING_OR_NEXT	0x10
#define MAPS_MAX		65536	/* executable mappings of one process read at most */

/*
 * Mapping [start, end) at offset off of file (dev, ino) named pn (as the
 * kernel prints it, " (deleted)" included) appended to p->maps (capacity
 * *cap), its ELF object looked up unless its filesystem is one not to read;
 * *jit set for anonymous executable memory. 0, or -ENOMEM.
 */
static int
maps_add(struct proctab *pt, struct proc *p, struct fscheck *fc, size_t *cap, uint64_t start,
    uint64_t end, uint64_t off, uint64_t dev, uint64_t ino, char *pn, bool *jit)
{
	char root[64], *del;
	struct pmap *m;

	p->maps = xgrow(p->maps, cap, p->nmaps + 1, sizeof(*p->maps));
	m = &p->maps[p->nmaps];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev = dev;
	m->ino = ino;
	if ((del = strstr(pn, " (deleted)")) != NULL && del[10] == '\0')
		*del = '\0';
	m->deleted = del != NULL;
	if ((m->path = strdup(pn)) == NULL)
		return -ENOMEM;
	p->nmaps++;
	snprintf(root, sizeof(root), "/proc/%u/root", p->pid);
	if (ino != 0 && pn[0] == '/' && !fscheck_ok(fc, m->dev)) {
		if (!p->remote_logged)
			log_debug("ebpf: pid %u maps %s from a remote or detached "
			    "filesystem: not read for symbols", p->pid, pn);
		p->remote_logged = true;
	} else if (ino != 0 && pn[0] == '/') {
		char mf[96], alt[PATH_MAX];

		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", p->pid,
		    (unsigned long long)start, (unsigned long long)end);
		m->obj = symbolize_elf(pt->sym, m->dev, ino, mf, root, pn);
		if (m->obj == NULL && del == NULL) {
			snprintf(alt, sizeof(alt), "%s%s", root, pn);
			m->obj = symbolize_elf(pt->sym, m->dev, ino, alt, root, pn);
		}
		if (m->obj && symbolize_elf_bias(m->obj, start, off, &m->bias) < 0) {
			symbolize_elf_put(m->obj);
			m->obj = NULL;
		}
	} else if (strcmp(pn, "[vdso]") == 0) {
		m->obj = symbolize_vdso(pt->sym);
		if (m->obj && symbolize_elf_bias(m->obj, start, off, &m->bias) < 0)
			m->obj = NULL;
	} else if (pn[0] != '/' && strcmp(pn, "[vsyscall]") != 0) {
		*jit = true;
	}
	return 0;
}

/*
 * p's executable mappings asked of the kernel one by one (MAPS_QUERY) on fd,
 * its open /proc/PID/maps. 0; -ENOTTY or -EINVAL where the kernel has no
 * such query; another -errno if an answer could not be had (the caller
 * reads the text instead). A process whose memory is gone (exiting, a
 * zombie, a kernel thread) has no mappings, as its text shows none.
 */
static int
maps_by_query(struct proctab *pt, struct proc *p, int fd, struct fscheck *fc, size_t *cap,
    bool *jit)
{
	char name[PATH_MAX];
	struct maps_query q;
	uint64_t addr = 0;
	size_t n;
	int rc;

	for (n = 0; n < MAPS_MAX; n++) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_flags = MAPS_Q_EXECUTABLE | MAPS_Q_COVERING_OR_NEXT;
		q.query_addr = addr;
		q.vma_name_addr = (uint64_t)(uintptr_t)name;
		q.vma_name_size = sizeof(name);
		if (ioctl(fd, MAPS_QUERY, &q) < 0) {
			if (errno == ENOENT || errno == ESRCH)
				return 0;	/* none past addr; no memory */
			/* The kernel short of memory: the text may do (ours is -ENOMEM). */
			return errno == ENOMEM ? -EAGAIN : -errno;
		}
		/* Kernel input all the same: each mapping past the last, a name in its room. */
		if (q.vma_end <= q.vma_start || q.vma_start < addr || q.vma_name_size > sizeof(name))
			return -EPROTO;
		if (q.vma_name_size == 0)
			name[0] = '\0';
		else
			name[q.vma_name_size - 1] = '\0';
		if ((rc = maps_add(pt, p, fc, cap, q.vma_start, q.vma_end, q.vma_offset,
		    makedev(q.dev_major, q.dev_minor), q.inode, name, jit)) < 0)
			return rc;
		addr = q.vma_end;
	}
	return 0;
}

/* p's executable mappings parsed from f, its /proc/PID/maps. 0, or -errno. */
static int
maps_by_text(struct proctab *pt, struct proc *p, FILE *f, struct fscheck *fc, size_t *cap,
    bool *jit)
{
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int rc = 0;

	while (p->nmaps < MAPS_MAX && (len = getline(&line, &lcap, f)) > 0) {
		unsigned long long start, end, off, ino;
		unsigned int major, minor;
		int name = 0;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (maps_line(line, &start, &end, &off, &major, &minor, &ino, &name) < 0)
			continue;
		if ((rc = maps_add(pt, p, fc, cap, start, end, off, makedev(major, minor), ino,
		    name > 0 ? line + name : line + len, jit)) < 0)
			break;
	}
	free(line);
	return rc;
}

/*
 * Read p's executable mappings, sorted as the kernel lists them: asked of
 * the kernel where it answers (pt->procmap, found out at the first
 * read), else parsed from the text of /proc/PID/maps.
 */
static int
read_maps(struct proctab *pt, struct proc *p)
{
	char path[64];
	struct fscheck fc = { .pid = p->pid };
	struct pmap *old;
	size_t cap = 0, nold;
	bool jit = false;
	FILE *f;
	int fd, rc = -ENOTTY;

	p->maps_read = clock_mono_ns();
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	/* A process gone (or a zombie) since keeps the mappings we read before. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	old = p->maps;
	nold = p->nmaps;
	p->maps = NULL;
	p->nmaps = 0;
	if (pt->procmap >= 0) {
		rc = maps_by_query(pt, p, fd, &fc, &cap, &jit);
		if (pt->procmap == 0 && (rc == -ENOTTY || rc == -EINVAL) && p->nmaps == 0)
			pt->procmap = -1;	/* a kernel before 6.11 */
		else if (pt->procmap == 0 && rc == 0)
			pt->procmap = 1;
	}
	if (rc < 0 && rc != -ENOMEM) {
		maps_free(p);
		cap = 0;
		jit = false;
		if (lseek(fd, 0, SEEK_SET) == 0 && (f = fdopen(fd, "re")) != NULL) {
			fd = -1;
			rc = maps_by_text(pt, p, f, &fc, &cap, &jit);
			fclose(f);
		} else {
			rc = -errno;
		}
	}
	if (fd >= 0)
		close(fd);
	free(fc.mountinfo);
	if (p->nmaps == 0 && nold > 0) {
		maps_free(p);
		p->maps = old;
		p->nmaps = nold;
	} else {
		p->jit_maps = jit;
		/* What was built on the maps (unwind tables, Python) stands if they stand. */
		if (!pmaps_same(old, nold, p->maps, p->nmaps))
			p->maps_gen++;
		pmaps_free(old, nold);
	}
	return 0;
}

void
proctab_parse_cgroup(const char *path, char *unit, size_t unitsz, char *ctr, size_t ctrsz,
    char *pod, size_t podsz)
{
	char comp[256];
	const char *s = path, *e;

	while (*s) {
		size_t n, i, run = 0, best = 0, best_end = 0;

		while (*s == '/')
			s++;
		if (*s == '\0')
			break;
		e = strchr(s, '/');
		n = e ? (size_t)(e - s) : strlen(s);
		if (n >= sizeof(comp))
			n = sizeof(comp) - 1;
		memcpy(comp, s, n);
		comp[n] = '\0';
		s += n;
		if (n > 8 && strcmp(comp + n - 8, ".service") == 0 &&
		    strncmp(comp, "user@", 5) != 0)
			snprintf(unit, unitsz, "%s", comp);
		/* A container id is a run of 64 hex digits. */
		for (i = 0; i < n; i++) {
			run = isxdigit((unsigned char)comp[i]) ? run + 1 : 0;
			if (run > best) {
				best = run;
				best_end = i + 1;
			}
		}
		if (best == 64)
			snprintf(ctr, ctrsz, "%.12s", comp + best_end - 64);
		/* kubepods-besteffort-pod<uid>.slice (systemd) or kubepods/.../pod<uid> */
		if (strstr(path, "kubepods") != NULL) {
			const char *q = NULL;

			if (strncmp(comp, "kubepods", 8) == 0 && strstr(comp, "-pod") != NULL)
				q = strstr(comp, "-pod") + 4;
			else if (strncmp(comp, "pod", 3) == 0)
				q = comp + 3;
			if (q && *q) {
				char *d;

				snprintf(pod, podsz, "%s", q);
				if ((d = strstr(pod, ".slice")) != NULL)
					*d = '\0';
				for (d = pod; *d; d++)
					if (*d == '_')
						*d = '-';
			}
		}
	}
}

/* What a process's cgroup says of it (proctab_parse_cgroup's, and the full id). */
struct cginfo {
	char		 unit[256], ctr[64], pod[128];
	char		 ctr_id[65];	/* all 64 hex digits, "" none */
};

/* The first run of exactly 64 hex digits in path, into id (65 bytes). */
static void
cgroup_full_id(const char *path, char *id)
{
	size_t run = 0;
	const char *c;

	for (c = path;; c++) {
		if (*c && isxdigit((unsigned char)*c)) {
			run++;
			continue;
		}
		if (run == 64) {
			memcpy(id, c - 64, 64);
			id[64] = '\0';
			return;
		}
		run = 0;
		if (*c == '\0')
			return;
	}
}

/*
 * p's cgroup from every layout the host has: v2 (0::), v1's name=systemd,
 * then v1's cpu hierarchy; each field from the first path that has it. The
 * text's checksum, 0 when it could not be read.
 */
static uint32_t
read_cgroup(struct proc *p, struct cginfo *ci)
{
	char path[64], text[8192], *line, *next;
	const char *paths[3] = { "", "", "" };	/* v2, name=systemd, cpu */
	uint32_t sum = 2166136261u;
	size_t len = 0, i;
	ssize_t n;
	int fd;

	memset(ci, 0, sizeof(*ci));
	/* One read or two, no stdio: a new process's files are read by the thousand. */
	snprintf(path, sizeof(path), "/proc/%u/cgroup", p->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	while (len < sizeof(text) - 1 &&
	    (n = read(fd, text + len, sizeof(text) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	text[len] = '\0';
	for (i = 0; i < len; i++)
		sum = (sum ^ (unsigned char)text[i]) * 16777619u;
	for (line = text; *line; line = next) {
		char *c, *ctl;

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		else
			next = line + strlen(line);
		/* "ID:CONTROLLERS:PATH" */
		if ((ctl = strchr(line, ':')) == NULL || (c = strchr(ctl + 1, ':')) == NULL)
			continue;
		*c++ = '\0';
		ctl++;
		if (strcmp(line, "0") == 0 && *ctl == '\0')
			paths[0] = c;
		else if (strcmp(ctl, "name=systemd") == 0)
			paths[1] = c;
		else {
			char *t, *save = NULL;

			for (t = strtok_r(ctl, ",", &save); t; t = strtok_r(NULL, ",", &save))
				if (strcmp(t, "cpu") == 0)
					paths[2] = c;
		}
	}
	for (i = 0; i < 3; i++) {
		char unit[256] = "", ctr[64] = "", pod[128] = "", id[65] = "";

		if (paths[i][0] == '\0' || strcmp(paths[i], "/") == 0)
			continue;
		proctab_parse_cgroup(paths[i], unit, sizeof(unit), ctr, sizeof(ctr), pod,
		    sizeof(pod));
		cgroup_full_id(paths[i], id);
		if (ci->unit[0] == '\0')
			snprintf(ci->unit, sizeof(ci->unit), "%s", unit);
		if (ci->ctr[0] == '\0' && ctr[0]) {
			snprintf(ci->ctr, sizeof(ci->ctr), "%s", ctr);
			snprintf(ci->ctr_id, sizeof(ci->ctr_id), "%s", id);
		}
		if (ci->pod[0] == '\0')
			snprintf(ci->pod, sizeof(ci->pod), "%s", pod);
	}
	return sum ? sum : 1;
}

/* A whole small file (at most CTR_FILE_MAX bytes), malloc'ed and NUL-ended; NULL: none. */
static char *
read_small(const char *path)
{
	struct stat st;
	char *d = NULL;
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CTR_FILE_MAX ||
	    (d = malloc((size_t)st.st_size + 1)) == NULL)
		goto out;
	while (len < (size_t)st.st_size &&
	    (n = read(fd, d + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	d[len] = '\0';
out:
	close(fd);
	return d;
}

/*
 * The JSON string value after key (e.g. "\"Name\":") in text, from limit
 * on not looked at, into out; escapes are kept as they are (names do not
 * have them). Whether found.
 */
static bool
json_str(const char *text, const char *limit, const char *key, char *out, size_t outsz)
{
	const char *k = strstr(text, key), *e;

	if (k == NULL || (limit && k >= limit))
		return false;
	k += strlen(key);
	while (*k == ' ')
		k++;
	if (*k == '[')	/* "names":["x", ...]: the first */
		k++;
	if (*k++ != '"' || (e = strchr(k, '"')) == NULL || e == k)
		return false;
	snprintf(out, outsz, "%.*s", (int)(e - k), k);
	return true;
}

/*
 * What the container runtimes on the host call container id: its name and
 * Kubernetes' pod name, from their state files (docker's config.v2.json,
 * containers/storage's containers.json for podman and CRI-O, the OCI config
 * of containerd's and CRI-O's Kubernetes containers).
 */
static void
ctr_read(const char *id, struct ctrname *c)
{
	static const char *const stores[] = {
		"/var/lib/containers/storage/overlay-containers/containers.json",
		"/var/lib/containers/storage/vfs-containers/containers.json",
		"/var/lib/containers/storage/btrfs-containers/containers.json",
	};
	char path[256], *t;
	size_t i;

	snprintf(path, sizeof(path), "/var/lib/docker/containers/%s/config.v2.json", id);
	if ((t = read_small(path)) != NULL) {
		if (!json_str(t, NULL, "\"io.kubernetes.container.name\":", c->name,
		    sizeof(c->name)) && json_str(t, NULL, "\"Name\":", c->name, sizeof(c->name)) &&
		    c->name[0] == '/')
			memmove(c->name, c->name + 1, strlen(c->name));
		json_str(t, NULL, "\"io.kubernetes.pod.name\":", c->pod, sizeof(c->pod));
		free(t);
		return;
	}
	snprintf(path, sizeof(path), "/run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/"
	    "config.json", id);
	if ((t = read_small(path)) == NULL) {
		snprintf(path, sizeof(path), "/run/containers/storage/overlay-containers/%s/"
		    "userdata/config.json", id);
		t = read_small(path);
	}
	if (t != NULL) {
		if (!json_str(t, NULL, "\"io.kubernetes.cri.container-name\":", c->name,
		    sizeof(c->name)))
			json_str(t, NULL, "\"io.kubernetes.container.name\":", c->name,
			    sizeof(c->name));
		if (!json_str(t, NULL, "\"io.kubernetes.cri.sandbox-name\":", c->pod, sizeof(c->pod)))
			json_str(t, NULL, "\"io.kubernetes.pod.name\":", c->pod, sizeof(c->pod));
		free(t);
		if (c->name[0])
			return;
	}
	for (i = 0; i < sizeof(stores) / sizeof(stores[0]); i++) {
		char key[80];
		const char *at, *end;

		if ((t = read_small(stores[i])) == NULL)
			continue;
		snprintf(key, sizeof(key), "\"id\":\"%s\"", id);
		if ((at = strstr(t, key)) != NULL) {
			/* This container's object ends where the next one's id begins. */
			end = strstr(at + strlen(key), "\"id\":\"");
			json_str(at, end, "\"names\":", c->name, sizeof(c->name));
		}
		free(t);
		if (c->name[0])
			return;
	}
}

/* The cached ctr_read of id, asked again after CTR_RETRY_NS when it named none. */
static const struct ctrname *
ctr_lookup(struct proctab *pt, const char *id)
{
	int64_t now = clock_mono_ns();
	struct ctrname *c = NULL;
	size_t i;

	for (i = 0; i < pt->nctrs; i++)
		if (strcmp(pt->ctrs[i].id, id) == 0) {
			c = &pt->ctrs[i];
			if (c->name[0] || now - c->asked < CTR_RETRY_NS)
				return c;
			break;
		}
	if (c == NULL) {
		if (pt->nctrs < CTR_CACHE)
			c = &pt->ctrs[pt->nctrs++];
		else
			c = &pt->ctrs[pt->ctr_next++ % CTR_CACHE];	/* the oldest made room */
	}
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->asked = now;
	ctr_read(id, c);
	return c;
}

static uint32_t
read_nspid(uint32_t pid)
{
	char path[64], line[256];
	uint32_t ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if ((f = fopen(path, "re")) == NULL)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *s = line + 6, *end;
			unsigned long v;

			/* The last number is the pid in the process's own namespace. */
			for (;;) {
				v = strtoul(s, &end, 10);
				if (end == s)
					break;
				ns = (uint32_t)v;
				s = end;
			}
			break;
		}
	}
	fclose(f);
	return ns;
}

/* Whether p maps libjvm.so: a JVM under another executable's name. */
static bool
maps_jvm(const struct proc *p)
{
	size_t i;

	for (i = 0; i < p->nmaps; i++) {
		const char *b = strrchr(p->maps[i].path, '/');

		if (b && strcmp(b + 1, "libjvm.so") == 0)
			return true;
	}
	return false;
}

/*
 * The service p's command line names (runtime_service), into out: a
 * script's name with its language's extension, so that busy.py and busy.js
 * are two services whichever ran first; a generic name (main, app, ...)
 * after its directory's ("shop-app.py"). Java's main class or jar as is.
 */
static bool
script_service(const struct proc *p, char *out, size_t outsz)
{
	static const char *const generic[] = {
		"main", "app", "index", "server", "run", "manage", "start", "worker", "wsgi",
		"asgi", "cli", "script", "test",
	};
	static const char *const ext[] = {
		[RUNTIME_PYTHON] = "py", [RUNTIME_RUBY] = "rb", [RUNTIME_NODE] = "js",
		[RUNTIME_PHP] = "php",
	};
	char path[64], argv[4096], name[96], dir[96] = "";
	size_t off, i;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", p->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, argv, sizeof(argv));	/* a longer one is cut: its end is not used */
	close(fd);
	if (n <= 0 || !runtime_service(p->runtime, argv, (size_t)n, name, sizeof(name)))
		return false;
	if (p->runtime < 0 || (size_t)p->runtime >= sizeof(ext) / sizeof(ext[0]) ||
	    ext[p->runtime] == NULL) {
		snprintf(out, outsz, "%s", name);
		return true;
	}
	for (i = 0; i < sizeof(generic) / sizeof(generic[0]); i++)
		if (strcmp(name, generic[i]) == 0)
			break;
	/* A generic name: the directory of the argument that named it. */
	for (off = 0; i < sizeof(generic) / sizeof(generic[0]) && off < (size_t)n;) {
		const char *arg = argv + off, *nul = memchr(arg, '\0', (size_t)n - off);
		const char *b, *slash;
		char full[PATH_MAX];

		if (nul == NULL)
			break;
		off += (size_t)(nul - arg) + 1;
		b = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
		if (off == (size_t)(nul - arg) + 1 || strncmp(b, name, strlen(name)) != 0 ||
		    (b[strlen(name)] != '\0' && b[strlen(name)] != '.'))
			continue;	/* (argv[0] is the interpreter) */
		if (arg[0] == '/') {
			snprintf(full, sizeof(full), "%s", arg);
		} else {
			char cwd[64];
			ssize_t k;

			snprintf(cwd, sizeof(cwd), "/proc/%u/cwd", p->pid);
			if ((k = readlink(cwd, full, sizeof(full) - 1)) <= 0)
				break;
			full[k] = '\0';
			if (strlen(full) + 1 + strlen(arg) >= sizeof(full))
				break;
			strcat(full, "/");
			strcat(full, arg);
		}
		if ((slash = strrchr(full, '/')) != NULL)
			*(char *)slash = '\0';
		/* "/srv/shop/./app.py": the last real directory */
		while ((slash = strrchr(full, '/')) != NULL && strcmp(slash, "/.") == 0)
			*(char *)slash = '\0';
		if ((slash = strrchr(full, '/')) != NULL && slash[1])
			snprintf(dir, sizeof(dir), "%s-", slash + 1);
		break;
	}
	snprintf(out, outsz, "%s%s.%s", dir, name, ext[p->runtime]);
	return true;
}

/* Whether s matches one of p's values of the rule's kind. */
static bool
filter_match(const struct pfilter *f, const struct proc *p, const char *base,
    const char *unit, const struct cginfo *ci, const struct ctrname *cn)
{
	switch (f->kind) {
	case 'u':
		return (unit[0] && fnmatch(f->pat, unit, 0) == 0) ||
		    (ci->unit[0] && fnmatch(f->pat, ci->unit, 0) == 0);
	case 'c':
		return (ci->ctr[0] && (fnmatch(f->pat, ci->ctr, 0) == 0 ||
		    fnmatch(f->pat, ci->ctr_id, 0) == 0)) ||
		    (cn && cn->name[0] && fnmatch(f->pat, cn->name, 0) == 0);
	case 'm':
		return fnmatch(f->pat, p->comm, 0) == 0 || (base && fnmatch(f->pat, base, 0) == 0);
	case 's':
		return fnmatch(f->pat, p->service, 0) == 0;
	}
	return false;
}

static bool
filter_excluded(const struct proctab *pt, const struct proc *p, const char *base,
    const char *unit, const struct cginfo *ci, const struct ctrname *cn)
{
	bool in = !pt->includes;
	size_t i;

	for (i = 0; i < pt->nfilters; i++)
		if (pt->filters[i].include && !in &&
		    filter_match(&pt->filters[i], p, base, unit, ci, cn))
			in = true;
	for (i = 0; i < pt->nfilters && in; i++)
		if (!pt->filters[i].include && filter_match(&pt->filters[i], p, base, unit, ci, cn))
			in = false;
	return !in;
}

int
proctab_filter_check(const char *rule, const char **bad)
{
	static const char *const kinds[] = { "unit:", "container:", "comm:", "service:" };
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t k = strlen(kinds[i]);

		if (strncmp(rule, kinds[i], k) != 0)
			continue;
		if (rule[k] == '\0') {
			*bad = "the name after the kind is empty";
			return -EINVAL;
		}
		if (strlen(rule + k) >= sizeof(((struct pfilter *)0)->pat)) {
			*bad = "the name is longer than 127 bytes";
			return -EINVAL;
		}
		return 0;
	}
	*bad = "not unit:NAME, container:NAME, comm:NAME or service:NAME";
	return -EINVAL;
}

int
proctab_filter(struct proctab *pt, const char *rule, bool include)
{
	struct pfilter *f;
	const char *bad, *c;

	if (proctab_filter_check(rule, &bad) < 0)
		return -EINVAL;
	if ((f = realloc(pt->filters, (pt->nfilters + 1) * sizeof(*f))) == NULL)
		return -ENOMEM;
	pt->filters = f;
	f = &pt->filters[pt->nfilters++];
	c = strchr(rule, ':');
	f->kind = strncmp(rule, "comm:", 5) == 0 ? 'm' : rule[0];
	snprintf(f->pat, sizeof(f->pat), "%s", c + 1);
	f->include = include;
	if (include)
		pt->includes = true;
	return 0;
}

/* A service name store_check_service accepts. */
static void
set_service(struct proc *p, const char *name)
{
	char *c;

	snprintf(p->service, sizeof(p->service), "%s", name && *name ? name : "unknown");
	for (c = p->service; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '/')
			*c = '_';
	if (store_service_reserved(p->service)) {
		memmove(p->service + 1, p->service, sizeof(p->service) - 2);
		p->service[sizeof(p->service) - 1] = '\0';
		p->service[0] = '_';
	}
}

/* Whether pid is a kernel thread (PF_KTHREAD in the flags of /proc/PID/stat). */
static bool
is_kthread(uint32_t pid)
{
	char path[64], line[1024], *s;
	unsigned long long flags = 0;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return false;
	line[n] = '\0';
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags": after the last ')'. */
	if ((s = strrchr(line, ')')) == NULL)
		return false;
	for (field = 2; field < 9 && s; field++)
		s = strchr(s + 1, ' ');
	if (s == NULL)
		return false;
	flags = strtoull(s + 1, NULL, 10);
	return (flags & 0x00200000) != 0;	/* PF_KTHREAD */
}

/*
 * The executable of a process whose leader has exited (its /proc/PID/exe is
 * gone with the leader's memory) while other threads run on: any live
 * thread's exe. Into exe (size n); the length, or -1.
 */
static ssize_t
thread_exe(uint32_t pid, char *exe, size_t n)
{
	char path[96];
	struct dirent *d;
	ssize_t len = -1;
	DIR *dir;
	int seen = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while (len < 0 && seen++ < 64 && (d = readdir(dir)) != NULL) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9' || strlen(d->d_name) > 10)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%s/exe", pid, d->d_name);
		len = readlink(path, exe, n - 1);
	}
	closedir(dir);
	return len;
}

static void proc_name(struct proctab *pt, struct proc *p);

static void
proc_load(struct proctab *pt, struct proc *p, const char *comm)
{
	char path[64], exe[PATH_MAX];
	const char *base = NULL;
	char cbuf[32];
	ssize_t n;
	int rc, exe_err, fd;

	snprintf(path, sizeof(path), "/proc/%u/exe", p->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe_err = errno;
	if (n <= 0 && exe_err == ENOENT && !is_kthread(p->pid))
		n = thread_exe(p->pid, exe, sizeof(exe));	/* the leader exited, threads run on */
	if (n > 0) {
		char *del;

		exe[n] = '\0';
		if ((del = strstr(exe, " (deleted)")) != NULL && del[10] == '\0')
			*del = '\0';
		base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
		p->exe = strdup(exe);	/* NULL: the profile's first mapping is left as it is */
	} else if (exe_err == ENOENT && access(path, F_OK) != 0) {
		/*
		 * /proc/PID gone, a kernel thread (no exe link at all), or a
		 * process past the release of its memory (exiting): that one
		 * is named after its leader's comm.
		 */
		snprintf(path, sizeof(path), "/proc/%u", p->pid);
		if (access(path, F_OK) != 0)
			p->gone = true;
		else if (is_kthread(p->pid))
			p->kthread = true;
	} else {
		p->gone = access(path, F_OK) != 0;
	}
	rc = read_maps(pt, p);
	if (rc == -ENOENT || rc == -ESRCH)
		p->gone = true;
	p->runtime = runtime_by_exe(base);
	if (p->runtime == RUNTIME_NONE && maps_jvm(p))
		p->runtime = RUNTIME_JVM;
	p->jvm_wait = JVM_ASK_FIRST_NS;

	/*
	 * The process's comm is its leader's (/proc/PID/comm); the caller's
	 * (the sampler's record of the leader) serves once /proc has no entry.
	 * Read it for the comm rule, the filters and the service for the rest.
	 */
	cbuf[0] = '\0';
	if (!p->gone) {
		snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			ssize_t r = read(fd, cbuf, sizeof(cbuf) - 1);

			close(fd);
			cbuf[r > 0 ? r : 0] = '\0';
			if (strchr(cbuf, '\n'))
				*strchr(cbuf, '\n') = '\0';
		}
	}
	snprintf(p->comm, sizeof(p->comm), "%s", cbuf[0] || comm == NULL ? cbuf : comm);
	proc_name(pt, p);
}

/*
 * p's service, labels and filter verdict from its cgroup (read again here),
 * runtime, executable and comm.
 */
static void
proc_name(struct proctab *pt, struct proc *p)
{
	const char *base = p->exe ? (strrchr(p->exe, '/') ? strrchr(p->exe, '/') + 1 : p->exe) :
	    NULL;
	const struct ctrname *cn = NULL;
	struct buf err = { 0 }, lt = { 0 };
	struct cginfo ci;
	char script[128], unit[256] = "";

	memset(&ci, 0, sizeof(ci));
	if (!p->gone && !p->kthread)
		p->cg_sum = read_cgroup(p, &ci);
	p->cg_checked = clock_mono_ns();
	if (ci.ctr_id[0] && pt->by == SERVICE_BY_CGROUP)
		cn = ctr_lookup(pt, ci.ctr_id);
	if (ci.unit[0])
		snprintf(unit, sizeof(unit), "%.*s", (int)strlen(ci.unit) - 8, ci.unit);
	if (p->kthread) {
		set_service(p, pt->by == SERVICE_BY_COMM ? p->comm : "kernel");
	} else if (pt->by == SERVICE_BY_COMM || base == NULL) {
		set_service(p, p->comm);
	} else if (pt->by == SERVICE_BY_CGROUP && ci.ctr[0]) {
		set_service(p, cn && cn->name[0] ? cn->name : ci.ctr);
	} else if (pt->by == SERVICE_BY_CGROUP && unit[0]) {
		set_service(p, unit);
	} else if (pt->by == SERVICE_BY_CGROUP && runtime_by_exe(base) != RUNTIME_NONE &&
	    !p->gone && script_service(p, script, sizeof(script))) {
		/* (Only the launchers: javac maps libjvm.so too.) */
		set_service(p, script);
	} else {
		set_service(p, base);
	}
	labels_clear(&p->labels);
	free(p->labels_text);
	p->labels_text = NULL;
	labels_add(&p->labels, "host", pt->host, &err);
	if (ci.unit[0])
		labels_add(&p->labels, "unit", ci.unit, &err);
	if (ci.ctr[0])
		labels_add(&p->labels, "container", ci.ctr, &err);
	if (cn && cn->pod[0])
		labels_add(&p->labels, "pod", cn->pod, &err);
	else if (ci.pod[0])
		labels_add(&p->labels, "pod", ci.pod, &err);
	if (labels_format(&p->labels, &lt) == 0 && buf_reserve(&lt, 0) == 0)
		p->labels_text = buf_steal(&lt, NULL);
	buf_free(&lt);
	buf_free(&err);
	p->excluded = filter_excluded(pt, p, base, unit, &ci, cn);
	p->cp_gen[0] = p->cp_gen[1] = 0;	/* its aggregates are looked up again */
	log_debug("ebpf: pid %u (%s): service %s {%s}%s, %zu executable mappings%s", p->pid,
	    p->comm, p->service, p->labels_text ? p->labels_text : "",
	    p->excluded ? ", excluded" : "", p->nmaps, p->gone ? ", already gone" : "");
}

/*
 * A process moved to another cgroup (a unit's, a container's) is named
 * again: its cgroup is read at most every CGROUP_RECHECK_NS while sampled.
 */
static void
proc_recheck(struct proctab *pt, struct proc *p)
{
	struct cginfo ci;
	int64_t now;

	if (p->gone || p->kthread || p->held || pt->by == SERVICE_BY_COMM)
		return;
	if ((now = clock_mono_ns()) - p->cg_checked < CGROUP_RECHECK_NS)
		return;
	p->cg_checked = now;
	if (read_cgroup(p, &ci) != p->cg_sum)
		proc_name(pt, p);
}

struct proc *
proctab_get(struct proctab *pt, uint32_t pid, const char *comm)
{
	struct proc **b = &pt->buckets[pid % NBUCKETS], *p;

	for (p = *b; p; p = p->next)
		if (p->pid == pid) {
			proc_recheck(pt, p);
			return p;
		}
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->pid = pid;
	p->serial = ++pt->serial;
	proc_load(pt, p, comm);
	if (p->labels_text == NULL) {
		proc_free(pt, p);
		return NULL;
	}
	p->next = *b;
	*b = p;
	pt->n++;
	return p;
}

struct proc *
proctab_exec(struct proctab *pt, uint32_t pid, const char *comm, uint32_t exec, bool keep)
{
	struct proc **pp = &pt->buckets[pid % NBUCKETS], *old, *p;

	/* The entry of before, out of the table: the new image gets a new one. */
	for (; (old = *pp) != NULL; pp = &old->next)
		if (old->pid == pid) {
			*pp = old->next;
			old->next = NULL;
			pt->n--;
			break;
		}
	/*
	 * Gone already (a short command's image): too late, samples say what
	 * they can; but an image of before with waits to name is kept all the
	 * same, under it (held by its exit until its waits are drained).
	 */
	if ((p = proctab_get(pt, pid, comm)) == NULL || (p->gone && (!keep || old == NULL))) {
		if (p != NULL)
			proctab_forget(pt, pid);
		if (old != NULL) {
			jvm_tidy(old);
			proc_free(pt, old);
		}
		return NULL;
	}
	p->exec = exec;
	p->exec_known = true;
	p->maps_read = 0;
	if (old == NULL)
		return p;
	jvm_tidy(old);
	if (!keep || pt->nimages >= PROCTAB_IMAGES_KEPT) {
		proc_free(pt, old);
		return p->gone ? NULL : p;
	}
	/*
	 * Kept for its waits taken before the exec and drained after it: named
	 * from its maps as they were. Its runtimes' state and unwind tables go
	 * now (the kernel's entries for the pid are the new image's from now
	 * on), and nothing of the process is read for it again.
	 */
	if (pt->release)
		pt->release(pt->release_arg, old);
	old->released = true;
	old->gone = true;
	old->held = false;
	old->retired_at = pt->drains;
	p->pre = old;
	pt->nimages++;
	return p->gone ? NULL : p;
}

struct proc *
proctab_image(struct proc *p, uint32_t exec)
{
	uint32_t oldest;
	struct proc *q;

	if (!p->exec_known || p->exec == exec)
		return p;
	/*
	 * A process's exec count only grows: an image first seen otherwise
	 * than at an exec is the one for counts older than every known one's
	 * (a count newer than p's is p's: its exec notice not read yet).
	 */
	oldest = p->exec;
	for (q = p->pre; q != NULL; q = q->pre) {
		if (q->exec_known && q->exec == exec)
			return q;
		if (q->exec_known)
			oldest = q->exec;
		else if ((int32_t)(exec - oldest) < 0)
			return q;
	}
	return p;
}

void
proctab_drained(struct proctab *pt)
{
	pt->drains++;
}

/* Images of p kept two drains or more: all their waits are drained. */
static void
images_expire(struct proctab *pt, struct proc *p)
{
	struct proc **qp;

	for (qp = &p->pre; *qp != NULL; qp = &(*qp)->pre)
		if (pt->drains >= (*qp)->retired_at + 2) {
			images_free(pt, *qp);	/* older ones too: kept no later */
			*qp = NULL;
			return;
		}
}

void
proctab_forget(struct proctab *pt, uint32_t pid)
{
	struct proc **pp = &pt->buckets[pid % NBUCKETS], *p;

	for (; (p = *pp) != NULL; pp = &p->next) {
		if (p->pid == pid) {
			*pp = p->next;
			jvm_tidy(p);
			proc_free(pt, p);
			pt->n--;
			return;
		}
	}
}

int
proctab_hold(struct proctab *pt, uint32_t pid)
{
	struct proc *p;

	for (p = pt->buckets[pid % NBUCKETS]; p; p = p->next) {
		if (p->pid == pid) {
			p->held = true;
			return 0;
		}
	}
	return -ENOENT;
}

void
proctab_expire(struct proctab *pt)
{
	char path[64];
	size_t i;

	for (i = 0; i < NBUCKETS; i++) {
		struct proc **pp = &pt->buckets[i], *p;

		while ((p = *pp) != NULL) {
			images_expire(pt, p);
			snprintf(path, sizeof(path), "/proc/%u", p->pid);
			if (!p->held && (p->gone || access(path, F_OK) != 0)) {
				*pp = p->next;
				jvm_tidy(p);
				proc_free(pt, p);
				pt->n--;
			} else {
				pp = &p->next;
			}
		}
	}
}

void
proctab_maps_text(struct proctab *pt)
{
	pt->procmap = -1;
}

void
proctab_set_release(struct proctab *pt, void (*fn)(void *, struct proc *), void *arg)
{
	pt->release = fn;
	pt->release_arg = arg;
}

int
proctab_mapping(struct proc *p, size_t i, struct proc_mapping *m)
{
	struct pmap *pm;
	size_t k;

	for (k = 0; k < p->nmaps; k++) {
		pm = &p->maps[k];
		if (pm->obj == NULL || i-- > 0)
			continue;
		memset(m, 0, offsetof(struct proc_mapping, open_path));
		m->start = pm->start;
		m->end = pm->end;
		m->bias = pm->bias;
		m->dev = pm->dev;
		m->ino = pm->ino;
		m->name = pm->path;
		m->build_id = symbolize_elf_build_id(pm->obj);
		snprintf(m->open_path, sizeof(m->open_path), "/proc/%u/map_files/%llx-%llx",
		    p->pid, (unsigned long long)pm->start, (unsigned long long)pm->end);
		m->alt_path[0] = '\0';
		if (pm->path[0] == '/' && !pm->deleted)
			snprintf(m->alt_path, sizeof(m->alt_path), "/proc/%u/root%s", p->pid,
			    pm->path);
		return 0;
	}
	return -ENOENT;
}

int
proctab_open_mapping(const struct proc_mapping *m)
{
	const char *by_name[2] = { m->alt_path, m->alt_path[0] ? m->name : "" };
	pid_t pid = rio_path_pid(m->open_path);
	struct stat st;
	size_t i;
	int fd, rc;

	if ((rc = fd = rio_open(rio_self(), pid, m->open_path, RIO_FOLLOW, 0, NULL)) >= 0)
		return fd;
	for (i = 0; i < 2 && rc != -ETIMEDOUT; i++) {
		if (by_name[i] == NULL || by_name[i][0] != '/')
			continue;
		if ((rc = fd = rio_open(rio_self(), i == 0 ? pid : 0, by_name[i], RIO_FOLLOW, 0,
		    &st)) < 0)
			continue;
		if ((uint64_t)st.st_dev == m->dev && (uint64_t)st.st_ino == m->ino)
			return fd;
		close(fd);
		rc = -ESTALE;
	}
	return rc;
}

int
proctab_exe_mapping(struct proc *p, struct frame *f)
{
	size_t k;

	if (p->exe == NULL)
		return -ENOENT;
	for (k = 0; k < p->nmaps; k++) {
		const struct pmap *pm = &p->maps[k];

		if (pm->obj == NULL || strcmp(pm->path, p->exe) != 0)
			continue;
		memset(f, 0, sizeof(*f));
		f->file = pm->path;
		f->build_id = symbolize_elf_build_id(pm->obj);
		f->start = pm->start;
		f->limit = pm->end;
		f->offset = pm->offset;
		return 0;
	}
	return -ENOENT;
}

void
proctab_refresh(struct proctab *pt, struct proc *p, int64_t min_age_ns)
{
	if (p->gone || clock_mono_ns() - p->maps_read < min_age_ns)
		return;
	if (read_maps(pt, p) == -ENOENT)
		p->gone = true;
}

size_t
proctab_count(const struct proctab *pt)
{
	return pt->n;
}

/* --- resolving ----------------------------------------------------------- */

static struct pmap *
find_map(struct proc *p, uint64_t addr)
{
	/* Mappings do not overlap: the first one ending above addr may hold it. */
	size_t lo = SEARCH_LE(p->maps, p->nmaps, end, addr);

	if (lo < p->nmaps && p->maps[lo].start <= addr)
		return &p->maps[lo];
	return NULL;
}

bool
proctab_known(struct proc *p, uint64_t addr)
{
	return find_map(p, addr) != NULL;
}

/* The JIT perf map, re-read when the file changed (checked at most once a second). */
static const char *
perfmap_name(struct proc *p, uint64_t addr)
{
	int64_t now = clock_mono_ns(), every = PERFMAP_RECHECK_NS;

	/* A JVM just asked to write its map is looked at more often. */
	if (p->jvm_asked != 0 && now - p->jvm_asked < JVM_FRESH_NS)
		every = PERFMAP_RECHECK_NS / 10;

	if (!p->gone && now - p->perfmap_checked >= every) {
		char path[96];
		struct stat st, ps;
		int fd;

		p->perfmap_checked = now;
		snprintf(path, sizeof(path), "/proc/%u", p->pid);
		if (stat(path, &ps) < 0)	/* its owner: who may write its perf map */
			ps.st_uid = 0;
		proc_ids(p);
		/*
		 * Opened off this thread (rio.h): the process may have put a
		 * mount that never answers on its /tmp. Then read here, on a
		 * local filesystem.
		 */
		snprintf(path, sizeof(path), "/proc/%u/root/tmp/perf-%u.map", p->pid, p->nspid);
		fd = rio_open(rio_self(), (pid_t)p->pid, path, 0, PERFMAP_MAX_BYTES, &st);
		if (fd >= 0 && ((st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec ==
		    p->perfmap_mtime && st.st_size == p->perfmap_size) || perfmap_stale(p, &st))) {
			close(fd);
		} else if (fd >= 0) {
			struct perfmap *m = perfmap_load_fd(fd, ps.st_uid);

			if (m) {
				/*
				 * A JVM's map that grew: it is compiling, and
				 * asking again soon pays; back off only while
				 * the asks bring nothing new.
				 */
				if (p->jvm_asked != 0 && st.st_size > p->perfmap_size &&
				    p->jvm_wait > JVM_ASK_AGAIN_NS)
					p->jvm_wait = JVM_ASK_AGAIN_NS;
				perfmap_free(p->perfmap);
				p->perfmap = m;
				p->perfmap_mtime = st.st_mtim.tv_sec * 1000000000LL +
				    st.st_mtim.tv_nsec;
				p->perfmap_size = st.st_size;
			}
		}
	}
	return p->perfmap ? perfmap_lookup(p->perfmap, addr) : NULL;
}

/*
 * A JVM's code not in its perf map: ask it to write the map again (as it
 * compiles, new methods appear), at growing intervals.
 */
static void
jvm_ask(struct proctab *pt, struct proc *p)
{
	int64_t now = clock_mono_ns();

	if (p->gone || now - p->jvm_asked < p->jvm_wait || now < p->jvm_tmp_next)
		return;
	if (pt->attach == NULL && (pt->attach = runtime_attach_create(JVM_ATTACH_TIMEOUT_MS)) == NULL)
		return;
	proc_ids(p);
	if (p->jvm_tmp <= 0) {
		int fd = runtime_tmpdir((pid_t)p->pid, p->uid);

		if (fd > 0)
			p->jvm_tmp = fd;
		else if (fd == 0)	/* (0 means none here) */
			close(fd);
		if (fd <= 0)
			log_debug("ebpf: jvm %u: no perf map: its /tmp: %s", p->pid,
			    fd < 0 ? strerror(-fd) : "none");
	}
	if (p->jvm_tmp <= 0) {
		/* Its /tmp cannot be opened, nor can the request's: tried again later. */
		p->jvm_tmp_next = now + JVM_ASK_MAX_NS;
		return;
	}
	/*
	 * Before the first request: is there a map already (not ours), or will
	 * the JVM write one at exit anyway? Looked at before asking, so that
	 * the JVM's answer cannot be taken for a map that was there.
	 */
	if (!p->perfmap_looked) {
		char path[96];
		struct stat st;
		int fd;

		/* Off this thread: the name may be a mount point that never answers. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/perf-%u.map", p->jvm_tmp, p->nspid);
		fd = rio_open(rio_self(), (pid_t)p->pid, path, 0, 0, &st);
		if (fd >= 0)
			close(fd);
		/* A dead process's map (its pid reused) is overwritten by the answer: ours. */
		p->perfmap_ours = (fd == -ENOENT || (fd >= 0 && perfmap_stale(p, &st))) &&
		    !jvm_dumps_map(p->pid);
		p->perfmap_looked = true;
	}
	if (!runtime_attach_request(pt->attach, (pid_t)p->pid, (pid_t)p->nspid, p->uid))
		return;
	if (p->jvm_asked != 0)
		p->jvm_wait = p->jvm_wait * 2 < JVM_ASK_MAX_NS ? p->jvm_wait * 2 : JVM_ASK_MAX_NS;
	p->jvm_asked = now;
}

/*
 * HotSpot names a method "ret pkg.Class.method(args)": the return type goes,
 * so that the frame starts with its class (the flame graph colours by it).
 * Other entries keep their whole name, spaces and parentheses included
 * ("StubRoutines (1)", "Interpreter", "I2C/C2I adapters"): only a name whose
 * word before '(' is a qualified method with a word before it is cut.
 */
static const char *
jvm_name(const char *name)
{
	const char *paren = strchr(name, '('), *sp, *c;
	bool dot = false;

	if (paren == NULL || paren == name || paren[-1] == ' ')
		return name;
	for (sp = paren; sp > name && sp[-1] != ' '; sp--)
		;
	if (sp == name)
		return name;	/* no return type */
	for (c = sp; c < paren; c++)
		dot |= *c == '.';
	return dot ? sp : name;
}

void
proctab_resolve(struct proctab *pt, struct proc *p, uint64_t addr, struct frame *f)
{
	struct pmap *m = find_map(p, addr);

	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->build_id = "";
	if (m == NULL && !p->gone && clock_mono_ns() - p->maps_read >= MAPS_REREAD_NS) {
		/* A mapping made after we read the maps (dlopen, JIT). */
		if (read_maps(pt, p) == -ENOENT)
			p->gone = true;
		m = find_map(p, addr);
	}
	if (m && m->obj) {
		f->file = m->path;
		f->build_id = symbolize_elf_build_id(m->obj);
		f->start = m->start;
		f->limit = m->end;
		f->offset = m->offset;
		symbolize_elf_resolve(pt->sym, m->obj, addr - m->bias, &f->func, &f->srcfile,
		    &f->line);
		return;
	}
	if (m && m->path[0] == '/') {
		/* A file we could not read as ELF: keep its name and address. */
		f->file = m->path;
		f->start = m->start;
		f->limit = m->end;
		f->offset = m->offset;
		return;
	}
	/*
	 * A perf map names JIT code: looked at for an address in anonymous
	 * executable memory, or in none known (maps read before the JIT
	 * mapped more) of a process that has such memory. Not for the others
	 * (most): that look costs reads of /proc and of its /tmp.
	 */
	f->func = m != NULL || p->jit_maps ? perfmap_name(p, addr) : NULL;
	if (p->runtime == RUNTIME_JVM) {
		if (f->func == NULL)
			jvm_ask(pt, p);
		else
			f->func = jvm_name(f->func);
	}
	if (m) {
		f->file = f->func ? "[jit]" : m->path[0] ? m->path : "[anon]";
		f->start = m->start;
		f->limit = m->end;
		f->offset = m->offset;
	}
}
