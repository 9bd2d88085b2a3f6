/*
 * priv: serve --user. See priv.h for the sequence.
 *
 * Credentials are per thread in Linux. glibc changes the uid, gids and
 * groups of every thread at once (its setxid broadcast), but capset() acts
 * on the calling thread only, and by the time root is given up RocksDB,
 * libmicrohttpd, the scraper and the sampler run threads of their own. So
 * every thread is created keeping its capabilities across the uid change
 * (PR_SET_KEEPCAPS, set before the first thread and inherited), and
 * priv_drop() then signals each thread listed in /proc/self/task to capset()
 * itself down to the kept set, the way glibc does for setuid. libcap's
 * all-threads mode (libpsx) is not used: it reaches only threads started
 * through a wrapped pthread_create() in our own objects, not those the
 * shared libraries start. The result is read back from each thread's
 * /proc status, so a thread that was missed stops the daemon rather than
 * keeping root's capabilities.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "priv.h"

static const char *const cap_name[] = {
	"cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner",
	"cap_fsetid", "cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap",
	"cap_linux_immutable", "cap_net_bind_service", "cap_net_broadcast",
	"cap_net_admin", "cap_net_raw", "cap_ipc_lock", "cap_ipc_owner",
	"cap_sys_module", "cap_sys_rawio", "cap_sys_chroot", "cap_sys_ptrace",
	"cap_sys_pacct", "cap_sys_admin", "cap_sys_boot", "cap_sys_nice",
	"cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod",
	"cap_lease", "cap_audit_write", "cap_audit_control", "cap_setfcap",
	"cap_mac_override", "cap_mac_admin", "cap_syslog", "cap_wake_alarm",
	"cap_block_suspend", "cap_audit_read", "cap_perfmon", "cap_bpf",
	"cap_checkpoint_restore",
};

void
priv_cap_names(uint64_t caps, char *out, size_t size)
{
	size_t n = 0;
	int i;

	if (size == 0)
		return;
	out[0] = '\0';
	for (i = 0; i < 64 && n < size; i++) {
		if (!(caps & PRIV_CAP(i)))
			continue;
		if (i < (int)(sizeof(cap_name) / sizeof(cap_name[0])))
			n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "," : "", cap_name[i]);
		else
			n += (size_t)snprintf(out + n, size - n, "%scap_%d", n ? "," : "", i);
	}
	if (n == 0)
		snprintf(out, size, "none");
}

int
priv_user_lookup(const char *name, struct priv_user *u)
{
	struct passwd *pw;
	char *end;
	unsigned long id;
	int n = 32;

	memset(u, 0, sizeof(*u));
	u->helper_fd = -1;
	errno = 0;
	pw = getpwnam(name);
	if (pw == NULL && name[0] >= '0' && name[0] <= '9') {
		id = strtoul(name, &end, 10);
		if (*end == '\0')
			pw = getpwuid((uid_t)id);
	}
	if (pw == NULL) {
		fprintf(stderr, "profilefs: --user: no user '%s'%s\n", name,
		    name[0] ? " (create one, e.g. adduser --system --group profilefs)" : "");
		return -ENOENT;
	}
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	for (;;) {
		int want = n;
		gid_t *g = realloc(u->groups, (size_t)n * sizeof(gid_t));

		if (g == NULL) {
			priv_user_free(u);
			return -ENOMEM;
		}
		u->groups = g;
		if (getgrouplist(u->name, u->gid, u->groups, &want) >= 0) {
			u->ngroups = want;
			break;
		}
		if (want <= n || want > 65536) {
			u->ngroups = 0;
			break;
		}
		n = want;
	}
	return 0;
}

bool
priv_user_shared(const struct priv_user *u, unsigned *others)
{
	char path[300];
	struct dirent *de;
	struct stat st;
	DIR *d;

	*others = 0;
	if ((d = opendir("/proc")) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s", de->d_name);
			if (stat(path, &st) == 0 && st.st_uid == u->uid)
				(*others)++;
		}
		closedir(d);
	}
	return u->uid == 65534 || strcmp(u->name, "nobody") == 0 || *others > 0;
}

void
priv_user_free(struct priv_user *u)
{
	free(u->groups);
	u->groups = NULL;
	u->ngroups = 0;
}

int
priv_group_lookup(const char *name, gid_t *out)
{
	struct group *gr;
	char *end;
	unsigned long id;

	if ((gr = getgrnam(name)) != NULL) {
		*out = gr->gr_gid;
		return 0;
	}
	if (name[0] >= '0' && name[0] <= '9') {
		id = strtoul(name, &end, 10);
		if (*end == '\0' && id < (gid_t)-1) {
			*out = (gid_t)id;
			return 0;
		}
	}
	fprintf(stderr, "profilefs: --group: no group '%s'\n", name);
	return -ENOENT;
}

int
priv_keep_caps(void)
{
	if (prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) < 0) {
		log_warn("prctl(PR_SET_KEEPCAPS)");
		return -errno;
	}
	return 0;
}

/* --- the data directory -------------------------------------------------- */

/*
 * Everything under the directory open at dfd becomes uid:gid. Walked by file
 * descriptor, never following a symbolic link, so nothing outside can be
 * reached by swapping a directory for a link while the walk runs.
 */
static int
chown_tree(int dfd, uid_t uid, gid_t gid, int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	if (depth > 32)
		return -ELOOP;
	if ((fd = dup(dfd)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int cfd = openat(dfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (cfd < 0) {
				rc = -errno;
				break;
			}
			rc = chown_tree(cfd, uid, gid, depth + 1);
			close(cfd);
		} else if ((st.st_uid != uid || st.st_gid != gid) &&
		    fchownat(dfd, de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
		}
	}
	closedir(d);
	if (rc == 0 && fchown(dfd, uid, gid) < 0)
		rc = -errno;
	return rc;
}

int
priv_own_dir(const char *dir, const struct priv_user *u)
{
	struct stat st;
	int fd, rc;

	if (mkdir(dir, 0700) == 0) {
		if (chown(dir, u->uid, u->gid) < 0) {
			rc = -errno;
			fprintf(stderr, "profilefs: %s: chown to %s: %s\n", dir, u->name,
			    strerror(errno));
			return rc;
		}
		return 0;
	}
	if (errno != EEXIST) {
		rc = -errno;
		fprintf(stderr, "profilefs: --data %s: %s\n", dir, strerror(errno));
		return rc;
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		fprintf(stderr, "profilefs: --data %s: %s\n", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	rc = 0;
	if (st.st_uid == u->uid) {
		/* Already the user's: what is inside was made by the user. */
	} else if (st.st_uid == 0) {
		log_info("%s: handing the data directory over to %s", dir, u->name);
		if ((rc = chown_tree(fd, u->uid, u->gid, 0)) < 0)
			fprintf(stderr, "profilefs: --data %s: giving it to %s: %s\n", dir,
			    u->name, strerror(-rc));
	} else {
		fprintf(stderr, "profilefs: --data %s belongs to uid %u, not to %s; "
		    "if it is meant for profilefs: chown -R %s: %s\n", dir, (unsigned)st.st_uid,
		    u->name, u->name, dir);
		rc = -EPERM;
	}
	close(fd);
	return rc;
}

int
priv_fs_as_user(const struct priv_user *u)
{
	setfsgid(u->gid);
	setfsuid(u->uid);
	/* Both return the previous id; asking with -1 tells whether it took. */
	if ((uid_t)setfsuid((uid_t)-1) != u->uid || (gid_t)setfsgid((gid_t)-1) != u->gid) {
		fprintf(stderr, "profilefs: --user %s: cannot create files as %s "
		    "(cap_setuid and cap_setgid are needed)\n", u->name, u->name);
		priv_fs_as_root();
		return -EPERM;
	}
	return 0;
}

void
priv_fs_as_root(void)
{
	setfsuid(0);
	setfsgid(0);
}

/* --- capabilities -------------------------------------------------------- */

/* capset(2) on the calling thread: permitted `prm`, effective `eff`, nothing inheritable. */
static int
capset_split(uint64_t prm, uint64_t eff)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	data[0].permitted = (uint32_t)prm;
	data[1].permitted = (uint32_t)(prm >> 32);
	data[0].effective = (uint32_t)eff;
	data[1].effective = (uint32_t)(eff >> 32);
	return (int)syscall(SYS_capset, &hdr, data);
}

/* capset(2) on the calling thread: permitted = effective = caps, nothing inheritable. */
static int
capset_self(uint64_t caps)
{
	return capset_split(caps, caps);
}

/* The capabilities this kernel knows: asking for a newer one fails capset. */
static uint64_t
caps_known(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int last = 40;

	if (f != NULL) {
		if (fscanf(f, "%d", &last) != 1 || last < 0 || last > 63)
			last = 40;
		fclose(f);
	}
	return last >= 63 ? ~UINT64_C(0) : (PRIV_CAP(last + 1) - 1);
}

/*
 * Whether bpf(2) refuses a thread without cap_bpf even for maps it already
 * holds: before Linux 6.5, kernel.unprivileged_bpf_disabled (Debian's
 * default) made every bpf() command need it. Probed, not read from the
 * version: with cap_bpf and cap_sys_admin out of this thread's effective set
 * for a moment, a lookup on fd -1 fails with EPERM where the gate is, EBADF
 * where it is not. Call as root, before priv_drop().
 */
bool
priv_bpf_needs_cap(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2], probe[2];
	union bpf_attr attr;
	bool gated;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return true;
	memcpy(probe, data, sizeof(probe));
	probe[CAP_SYS_ADMIN / 32].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	probe[CAP_BPF / 32].effective &= ~CAP_TO_MASK(CAP_BPF);
	if (syscall(SYS_capset, &hdr, probe) < 0)
		return true;
	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)-1;
	gated = syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr)) < 0 && errno == EPERM;
	hdr.pid = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		log_warn("restoring capabilities after the bpf() probe");
	return gated;
}

/*
 * Whether this thread's permitted set holds caps: what is not there (a
 * service's CapabilityBoundingSet=, setpriv) cannot be kept. -EPERM, said why.
 */
static int
caps_have(uint64_t caps)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	uint64_t prm;
	char names[512];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	prm = (uint64_t)data[0].permitted | (uint64_t)data[1].permitted << 32;
	if ((caps & ~prm) == 0)
		return 0;
	priv_cap_names(caps & ~prm, names, sizeof(names));
	log_warnx("the sampler needs %s once running as the user, and this process does not "
	    "have it (a capability bounding set without it?)", names);
	return -EPERM;
}

/* --- the unmount helper -------------------------------------------------- */

/* Async-signal-safe message to stderr (the helper is forked from a threaded process). */
static void
helper_say(const char *what, int err)
{
	char msg[256], num[16];
	size_t n = 0, k;
	int i = 0;

	while (err > 0 && i < (int)sizeof(num)) {
		num[i++] = (char)('0' + err % 10);
		err /= 10;
	}
	for (k = 0; what[k] && n < sizeof(msg) - 40; k++)
		msg[n++] = what[k];
	if (i > 0) {
		memcpy(msg + n, " (errno ", 8);
		n += 8;
		while (i > 0)
			msg[n++] = num[--i];
		msg[n++] = ')';
	}
	msg[n++] = '\n';
	if (write(2, msg, n) < 0)
		return;
}

/*
 * One line of /proc/self/mountinfo: its mount ID (the first field) and
 * whether its mount point (the fifth, with space, tab, newline and
 * backslash written as \ooo) is path. -1 for a line that is not one.
 */
static long
mountinfo_line(const char *line, size_t len, const char *path, bool *at)
{
	size_t i = 0, p = 0;
	long id = 0;
	int field;

	for (; i < len && line[i] >= '0' && line[i] <= '9'; i++)
		if (id < 1L << 40)
			id = id * 10 + (line[i] - '0');
	if (i == 0 || i >= len || line[i] != ' ')
		return -1;
	for (field = 2; field <= 4; field++) {	/* past the second to fourth fields */
		i++;
		while (i < len && line[i] != ' ')
			i++;
		if (i >= len)
			return -1;
	}
	i++;
	while (i < len && line[i] != ' ') {
		char c = line[i];

		if (c == '\\' && i + 3 < len && line[i + 1] >= '0' && line[i + 1] <= '3') {
			c = (char)((line[i + 1] - '0') << 6 | (line[i + 2] - '0') << 3 | (line[i + 3] - '0'));
			i += 4;
		} else
			i++;
		if (path[p] != c) {
			*at = false;
			return id;
		}
		p++;
	}
	*at = path[p] == '\0';
	return id;
}

/*
 * The ID of the mount on top at path (absolute, as realpath() gives it) in
 * this process's mount namespace: the last line of /proc/self/mountinfo
 * (fd, read from its start) with that mount point (a mount over another
 * one comes after it). -ENOENT when nothing is mounted there. *has: whether
 * the mount with ID want is there, on top or not.
 * Async-signal-safe, for the helper: read(2) into fixed buffers; a line
 * longer than the buffer is judged by its start, where both fields are.
 */
static long
mount_top_id_fd(int fd, const char *path, long want, bool *has)
{
	char buf[8192];
	size_t have = 0, start;
	long top = -ENOENT, id;
	bool at, skip = false;
	ssize_t n;

	*has = false;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			if (!skip && (id = mountinfo_line(buf + start, i - start, path, &at)) >= 0 && at) {
				top = id;
				*has |= id == want;
			}
			skip = false;
			start = i + 1;
		}
		if (start == 0 && have == sizeof(buf)) {	/* a line longer than buf */
			if (!skip && (id = mountinfo_line(buf, have, path, &at)) >= 0 && at) {
				top = id;
				*has |= id == want;
			}
			skip = true;
			start = have;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	return n < 0 ? -EIO : top;
}

static long
mount_top_id(const char *path, long want, bool *has)
{
	long top;
	int fd;

	*has = false;
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	top = mount_top_id_fd(fd, path, want, has);
	close(fd);
	return top;
}

/*
 * The unmount helper. Unmounting a tree that root mounted needs
 * CAP_SYS_ADMIN, for as long as the daemon runs (it must also unmount
 * after a crash of the daemon, so the daemon cannot hand it over at the
 * end): this process alone keeps it, and holds nothing else. It runs as
 * the user, with no file descriptor but its socket to the daemon, a
 * bounding set of CAP_SYS_ADMIN alone, no new privileges on exec, not
 * dumpable (no ptrace, no /proc/PID/mem for anyone without
 * CAP_SYS_PTRACE), and the capability permitted but not effective until
 * the moment it unmounts. Processes of the same user may still kill it
 * (the tree then stays mounted): hence a dedicated user (docs/security.md).
 * It unmounts only the daemon's own mount, mount_id: not one that another
 * daemon (or anything else) put at the mount point after this daemon's
 * tree went away, nor one stacked over it. The kernel gives a freed mount
 * ID to the next mount, so the ID alone cannot tell: the helper watches the
 * mount table (POLLPRI on /proc/self/mountinfo) while it waits and, once
 * the tree is gone (fusermount3 -u, umount -l), has nothing left to
 * unmount, whatever comes to the mount point afterwards.
 */
static void __attribute__((noreturn))
helper_main(int sock, const char *mountpoint, const char *dir, const char *base, long mount_id,
    const struct priv_user *u)
{
	struct sigaction ign;
	struct pollfd pfd[2];
	char c = 'r';
	bool gone = false, has;
	ssize_t n;
	long top;
	int rc, cap;

	/*
	 * A stop signal goes to the whole process group or service: the helper
	 * stays until the daemon is gone, then unmounts.
	 */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGTERM, &ign, NULL);
	sigaction(SIGHUP, &ign, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	if (sock != 0 && (dup2(sock, 0) < 0)) {
		helper_say("profilefs: unmount helper: dup2", errno);
		_exit(1);
	}
	/*
	 * It unmounts by the name relative to the parent directory, entered while
	 * still root: the way there need not be searchable by the user, only the
	 * directory itself (checked below).
	 */
	if (chdir(dir) < 0) {
		helper_say("profilefs: unmount helper: cannot enter the mount point's directory",
		    errno);
		_exit(1);
	}
	/* Nothing of the daemon's: not /dev/fuse, not the store, not the HTTP socket. */
	syscall(SYS_close_range, 3U, ~0U, 0U);
	prctl(PR_SET_NAME, (unsigned long)"profilefs-umnt", 0L, 0L, 0L);
	/*
	 * While still root (CAP_SETPCAP): nothing but CAP_SYS_ADMIN can ever come
	 * back. Without CAP_SETPCAP (a unit whose bounding set leaves it out) the
	 * set stays as it is: no_new_privs below already keeps every other
	 * capability from coming back through an exec.
	 */
	for (cap = 0; cap <= 63; cap++)
		if (cap != CAP_SYS_ADMIN && prctl(PR_CAPBSET_DROP, (unsigned long)cap, 0L, 0L, 0L) < 0) {
			if (errno == EINVAL)
				continue;	/* past the kernel's last capability */
			if (errno == EPERM)
				break;
			helper_say("profilefs: unmount helper: dropping the bounding set", errno);
			_exit(1);
		}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0 ||
	    syscall(SYS_setgroups, 0, NULL) < 0 ||
	    syscall(SYS_setresgid, u->gid, u->gid, u->gid) < 0 ||
	    prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) < 0 ||
	    syscall(SYS_setresuid, u->uid, u->uid, u->uid) < 0 ||
	    capset_split(PRIV_CAP(CAP_SYS_ADMIN), 0) < 0 ||
	    prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L) < 0) {
		helper_say("profilefs: unmount helper: giving up root", errno);
		_exit(1);
	}
	if (access(".", X_OK) < 0)
		c = 'x';
	if (write(0, &c, 1) != 1)
		_exit(1);
	pfd[0].fd = 0;
	pfd[0].events = POLLIN;
	pfd[1].fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	pfd[1].events = POLLPRI;
	for (;;) {
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if ((pfd[1].revents & (POLLPRI | POLLERR)) &&
		    ((top = mount_top_id_fd(pfd[1].fd, mountpoint, mount_id, &has)) >= 0 ||
		    top == -ENOENT) && !has) {
			gone = true;
			helper_say("profilefs: unmount helper: the tree was unmounted by someone "
			    "else: nothing left to unmount", 0);
			close(pfd[1].fd);
			pfd[1].fd = -1;
		}
		if (pfd[0].revents)
			break;
	}
	do
		n = read(0, &c, 1);
	while (n < 0 && errno == EINTR);
	top = gone ? -ENOENT : mount_top_id(mountpoint, mount_id, &has);
	if (top != mount_id) {
		/* Gone already, or someone else's on top. */
		if (top >= 0)
			helper_say("profilefs: unmount helper: what is mounted at the mount point "
			    "now is not this daemon's tree: left alone", 0);
		rc = 0;
	} else {
		if (capset_split(PRIV_CAP(CAP_SYS_ADMIN), PRIV_CAP(CAP_SYS_ADMIN)) < 0)
			helper_say("profilefs: unmount helper: taking up cap_sys_admin", errno);
		rc = umount2(base, 0);
		if (rc < 0 && errno == EBUSY)
			rc = umount2(base, MNT_DETACH);
		/* EINVAL: no longer mounted since the look above: done as well. */
		if (rc < 0 && (errno == EINVAL || errno == ENOENT))
			rc = 0;
		else if (rc < 0)
			helper_say("profilefs: unmount helper: cannot unmount the tree; "
			    "run umount -l on the mount point", errno);
	}
	c = rc == 0 ? 'd' : 'f';
	if (n == 1 && write(0, &c, 1) < 0)
		_exit(1);
	_exit(rc == 0 ? 0 : 1);
}

int
priv_unmount_helper(const char *mountpoint, struct priv_user *u)
{
	char parent[4096];
	const char *slash = strrchr(mountpoint, '/');
	struct pollfd pfd;
	int sv[2], rc;
	long mount_id;
	bool has;
	char c;
	pid_t pid;

	if (slash == NULL || slash[1] == '\0' ||
	    (size_t)(slash - mountpoint) >= sizeof(parent))
		return -EINVAL;
	memcpy(parent, mountpoint, (size_t)(slash - mountpoint));
	parent[slash - mountpoint] = '\0';
	if (parent[0] == '\0')
		strcpy(parent, "/");
	/* Called once mounted: the tree is on top at mountpoint. */
	mount_id = mount_top_id(mountpoint, -1, &has);
	if (mount_id < 0) {
		log_warnx("%s: not found in /proc/self/mountinfo (%s)", mountpoint,
		    strerror((int)-mount_id));
		return (int)mount_id;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid == 0)
		helper_main(sv[1], mountpoint, parent, slash + 1, mount_id, u);
	if (pid < 0) {
		rc = -errno;
		goto fail;
	}
	close(sv[1]);
	u->helper = pid;
	u->helper_fd = sv[0];
	/* It says 'r' once it runs as the user with CAP_SYS_ADMIN alone. */
	pfd.fd = sv[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1 || read(sv[0], &c, 1) != 1 || (c != 'r' && c != 'x')) {
		log_warnx("the unmount helper did not start");
		return -EIO;
	}
	if (c == 'x')
		log_warnx("%s: %s cannot search %s, so the tree will stay mounted when the "
		    "daemon stops (umount it then, or mount elsewhere)", mountpoint, u->name, parent);
	log_debug("unmount helper: pid %d", (int)pid);
	return 0;
fail:
	close(sv[0]);
	close(sv[1]);
	log_warnx("cannot start the unmount helper: %s", strerror(-rc));
	return rc;
}

void
priv_unmount(struct priv_user *u)
{
	struct pollfd pfd;
	char c = 'u';

	if (u->helper_fd < 0)
		return;
	if (write(u->helper_fd, &c, 1) == 1) {
		pfd.fd = u->helper_fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1 || read(u->helper_fd, &c, 1) != 1 || c != 'd')
			log_warnx("the unmount helper could not unmount the tree");
	}
	close(u->helper_fd);
	u->helper_fd = -1;
	if (u->helper > 0)
		waitpid(u->helper, NULL, 0);
	u->helper = 0;
}

/* --- giving up root in every thread -------------------------------------- */

static uint64_t		bc_keep;
static atomic_int	bc_done, bc_failed;

static void
bc_handler(int sig)
{
	int e = errno;

	(void)sig;
	if (capset_self(bc_keep) < 0)
		atomic_fetch_add(&bc_failed, 1);
	prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L);
	atomic_fetch_add(&bc_done, 1);
	errno = e;
}

/*
 * Signal every thread but this one to capset() itself; threads that appear
 * meanwhile (started by a thread before it was signalled) are found by
 * listing again until a listing brings nothing new.
 */
static int
bc_all_threads(uint64_t keep)
{
	pid_t self = (pid_t)syscall(SYS_gettid), pid = getpid();
	pid_t *seen = NULL;
	size_t nseen = 0, cap = 0, i;
	struct sigaction sa;
	int sig = SIGRTMIN + 5, round, sent = 0, gone = 0, rc = 0;

	bc_keep = keep;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bc_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) < 0)
		return -errno;
	for (round = 0; round < 100; round++) {
		struct dirent *de;
		DIR *d = opendir("/proc/self/task");
		int fresh = 0, ms;

		if (d == NULL)
			return -errno;
		while ((de = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(de->d_name);

			if (tid <= 0 || tid == self)
				continue;
			for (i = 0; i < nseen && seen[i] != tid; i++)
				;
			if (i < nseen)
				continue;
			seen = xgrow(seen, &cap, nseen + 1, sizeof(*seen));
			seen[nseen++] = tid;
			fresh++;
			if (syscall(SYS_tgkill, pid, tid, sig) == 0)
				sent++;
			else
				gone++;	/* exited since the listing */
		}
		closedir(d);
		if (fresh == 0)
			break;
		/* Wait for the handlers; a thread blocking the signal is caught below. */
		for (ms = 0; ms < 3000 && atomic_load(&bc_done) < sent; ms++)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (atomic_load(&bc_failed) > 0)
		rc = -EPERM;
	log_debug("capabilities set in %d threads (%d gone meanwhile)", sent, gone);
	free(seen);
	return rc;
}

/* Every thread's status: uid and gid all u's, CapPrm = CapEff = keep, no CapInh/CapAmb. */
static int
verify_threads(const struct priv_user *u, uint64_t keep)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int bad = 0;

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char path[300], line[256];
		unsigned long long prm = ~0ULL, eff = ~0ULL, inh = ~0ULL, amb = 0;
		unsigned ids[4], gids[4];
		bool uid_ok = false, gid_ok = false;
		FILE *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;	/* gone */
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "Uid: %u %u %u %u", &ids[0], &ids[1], &ids[2], &ids[3]) == 4)
				uid_ok = ids[0] == u->uid && ids[1] == u->uid && ids[2] == u->uid &&
				    ids[3] == u->uid;
			else if (sscanf(line, "Gid: %u %u %u %u", &gids[0], &gids[1], &gids[2],
			    &gids[3]) == 4)
				gid_ok = gids[0] == u->gid && gids[1] == u->gid &&
				    gids[2] == u->gid && gids[3] == u->gid;
			else if (sscanf(line, "CapPrm: %llx", &prm) != 1 &&
			    sscanf(line, "CapEff: %llx", &eff) != 1 &&
			    sscanf(line, "CapInh: %llx", &inh) != 1)
				sscanf(line, "CapAmb: %llx", &amb);
		}
		fclose(f);
		if (!uid_ok || !gid_ok || prm != keep || eff != keep || inh != 0 || amb != 0) {
			log_warnx("thread %s still has uid/gid or capabilities of root "
			    "(CapPrm %016llx CapEff %016llx)", de->d_name, prm, eff);
			bad++;
		}
	}
	closedir(d);
	return bad ? -EPERM : 0;
}

int
priv_drop(const struct priv_user *u, uint64_t keep)
{
	char names[512];
	int rc;

	keep &= caps_known();
	if ((rc = caps_have(keep)) < 0)
		return rc;
	if (setgroups((size_t)u->ngroups, u->groups) < 0 ||
	    setresgid(u->gid, u->gid, u->gid) < 0 ||
	    setresuid(u->uid, u->uid, u->uid) < 0) {
		rc = -errno;
		log_warn("becoming user %s", u->name);
		return rc;
	}
	/* fsuid follows the uid; the permitted set stays (PR_SET_KEEPCAPS) until: */
	if ((rc = bc_all_threads(keep)) < 0 || capset_self(keep) < 0 ||
	    prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) < 0) {
		log_warnx("cannot limit the capabilities of every thread");
		return rc < 0 ? rc : -EPERM;
	}
	if ((rc = verify_threads(u, keep)) < 0)
		return rc;
	priv_cap_names(keep, names, sizeof(names));
	log_info("running as %s (uid %u, gid %u) with capabilities: %s", u->name,
	    (unsigned)u->uid, (unsigned)u->gid, names);
	return 0;
}
