/*
 * mount: mounting the tree and running the FUSE session -- checks on the
 * mount point, a stale mount from a crash detached, who may use the mount
 * (mount options and the modes stat reports), libfuse's messages routed
 * through log.c, the caller's hooks around serving (giving up root), the
 * multi-threaded loop until SIGINT/SIGTERM, unmounting. The handlers are
 * fs.c's.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "cache.h"
#include "fs_int.h"

/*
 * What the caches may hold: a quarter of the memory budget (--memory-limit)
 * each for generated files and merges, at most 512 MiB; a sixteenth for
 * sizes, at most 64 MiB (some 400,000 files; a week of one service is
 * 344,000). Files and merges nobody read for CACHE_IDLE_NS go, and their
 * memory back to the system: a tree walk costs at most these while it runs
 * and nothing once it is over. Sizes stay (a second du makes nothing).
 */
#define FILE_CACHE_MAX		((size_t)512 << 20)
#define MERGE_CACHE_MAX		((size_t)512 << 20)
#define SIZE_CACHE_MAX		((size_t)64 << 20)
#define CACHE_IDLE_NS		(INT64_C(30) * 1000000000)

static size_t
cache_bytes(size_t share, size_t max)
{
	return budget_limit() / share < max ? budget_limit() / share : max;
}


/* libfuse's own messages go through log.c like everything else. */
static void
fuse_log_to_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n;

	if (level >= FUSE_LOG_INFO && !log_verbose)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	if (level <= FUSE_LOG_WARNING)
		log_warnx("fuse: %s", msg);
	else
		log_debug("fuse: %s", msg);
}

int
fs_cleanup_stale(const char *mountpoint)
{
	struct stat st;

	if (stat(mountpoint, &st) == 0 || errno != ENOTCONN)
		return 0;
	log_warnx("%s: stale mount from an earlier run; detaching it", mountpoint);
	if (umount2(mountpoint, MNT_DETACH) == 0)
		return 0;
	{
		/* Not root: fusermount3 may unmount what this user mounted. */
		char *const argv[] = { "fusermount3", "-u", "-z", (char *)mountpoint, NULL };
		int status = -1;
		pid_t pid = fork();

		if (pid == 0) {
			sigset_t none;

			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			execvp(argv[0], argv);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			log_warnx("%s: cannot detach the stale mount; run: fusermount3 -u %s",
			    mountpoint, mountpoint);
			return -EBUSY;
		}
	}
	return 0;
}

/*
 * The modes the tree reports, from who may use it: the owner reads
 * everything and writes into ingest/; the group (--group) reads, and writes
 * into ingest/ with group_write; with allow_other everyone else reads. Files
 * being written into ingest/ stay the writers' (owner and a writing group).
 * The kernel checks these modes (default_permissions), so they are the truth.
 *
 * The owner's bits show write, as on a file system mounted read-only: the
 * handlers refuse writes outside ingest/ (EROFS) whatever the modes say, and
 * cp -r, which gives its copies the source's modes, then makes directories
 * and files the copier can change and remove (0755 and 0644, not 0555).
 */
static void
access_modes(struct fsctx *fs, const struct fs_access *a)
{
	mode_t grp_r, grp_x, grp_w, oth_r, oth_x;

	oth_r = a->allow_other ? S_IROTH : 0;
	oth_x = a->allow_other ? S_IXOTH : 0;
	if (a->group_set) {
		grp_r = S_IRGRP;
		grp_x = S_IXGRP;
		grp_w = a->group_write ? S_IWGRP : 0;
	} else {
		/* The owner's own group is just one more set of other users. */
		grp_r = a->allow_other ? S_IRGRP : 0;
		grp_x = a->allow_other ? S_IXGRP : 0;
		grp_w = 0;
	}
	fs->uid = getuid();
	fs->gid = a->group_set ? a->group : getgid();
	fs->mode_dir = S_IRWXU | grp_r | grp_w | grp_x | oth_r | oth_x;
	fs->mode_file = S_IRUSR | S_IWUSR | grp_r | oth_r;
	fs->mode_ingest_dir = fs->mode_dir;
	fs->mode_ingest_file = S_IRUSR | S_IWUSR | (grp_w ? S_IRGRP | S_IWGRP : 0);
	/* Who writes into ingest/ may also delete what is stored. */
	fs->mode_delete = S_IWUSR | grp_w;
}

/* Whether path is itself a mount point (its device differs from its parent's). */
static bool
is_mountpoint(const char *path)
{
	struct stat a, b;
	char parent[PATH_MAX];

	if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
		return false;
	if (stat(path, &a) < 0 || stat(parent, &b) < 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

static bool
changed_since(void *rd, uint64_t then, int64_t scope)
{
	return reader_changed_since(rd, then, scope);
}

/* The state fs_main() made for one mount (NULL members skipped). */
static void
mount_state_free(struct fsctx *fs)
{
	pins_destroy(fs, fs->pins);	/* they hold entries of fs->files */
	ingests_destroy(fs->ingests);
	handles_destroy(fs->handles);
	cache_destroy(fs->files);
	cache_destroy(fs->merges);
	cache_destroy(fs->sizes);
	fs->files = fs->merges = fs->sizes = NULL;
	fs->pins = NULL;
	fs->ingests = NULL;
	fs->handles = NULL;
}

/*
 * libfuse's stop handlers, each followed by the caller's hook: a watch on
 * the stop (it may signal this thread again should the loop miss one).
 */
static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP };
#define NSTOP	(sizeof(stop_sigs) / sizeof(stop_sigs[0]))
static struct sigaction fuse_handlers[NSTOP];
static void (*stop_hook)(int);

/* In this thread: the stop signals blocked or unblocked (how). */
static void
stop_mask(int how)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < NSTOP; i++)
		sigaddset(&set, stop_sigs[i]);
	pthread_sigmask(how, &set, NULL);
}

static void
on_stop_signal(int sig)
{
	int saved = errno;
	size_t i;

	for (i = 0; i < NSTOP; i++) {
		if (stop_sigs[i] != sig)
			continue;
		if (fuse_handlers[i].sa_flags & SA_SIGINFO)
			fuse_handlers[i].sa_sigaction(sig, NULL, NULL);
		else if (fuse_handlers[i].sa_handler != SIG_DFL &&
		    fuse_handlers[i].sa_handler != SIG_IGN)
			fuse_handlers[i].sa_handler(sig);
	}
	if (stop_hook)
		stop_hook(sig);
	errno = saved;
}

static void
stop_handlers_wrap(void (*hook)(int))
{
	struct sigaction sa;
	size_t i;

	stop_hook = hook;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NSTOP; i++)
		sigaddset(&sa.sa_mask, stop_sigs[i]);
	for (i = 0; i < NSTOP; i++)
		if (sigaction(stop_sigs[i], NULL, &fuse_handlers[i]) == 0)
			(void)sigaction(stop_sigs[i], &sa, NULL);
}

/*
 * Serving ended: the stop signals blocked again in this thread (one sent
 * later stays pending, harmless) and libfuse's handlers back for it to
 * take away.
 */
static void
stop_handlers_unwrap(void)
{
	size_t i;

	stop_mask(SIG_BLOCK);
	for (i = 0; i < NSTOP; i++)
		(void)sigaction(stop_sigs[i], &fuse_handlers[i], NULL);
	stop_hook = NULL;
}

int
fs_main(struct fsctx *fs, const struct fs_opts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc = NULL;
	struct cache_sweeper *sw = NULL;
	struct fuse_session *se;
	struct fuse *f;
	struct stat st;
	int rc = 0;

	if (fs_cleanup_stale(o->mountpoint) < 0)
		return -EBUSY;
	if (stat(o->mountpoint, &st) < 0) {
		if (errno == ENOENT && mkdir(o->mountpoint, 0755) == 0) {
			log_info("created mount point %s", o->mountpoint);
		} else {
			rc = -errno;
			log_errx("mount point %s: %s", o->mountpoint, strerror(-rc));
			return rc;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		log_errx("mount point %s is not a directory", o->mountpoint);
		return -ENOTDIR;
	} else if (is_mountpoint(o->mountpoint)) {
		log_errx("%s is already a mount point (another profilefs on it?); "
		    "unmount it first: fusermount3 -u %s", o->mountpoint, o->mountpoint);
		return -EBUSY;
	}
	fs->mountpoint = o->mountpoint;
	if (fs->rd == NULL)
		fs->rd = store_reader(fs->st);
	fs->files = cache_create(cache_bytes(4, FILE_CACHE_MAX));
	fs->merges = cache_create(cache_bytes(4, MERGE_CACHE_MAX));
	fs->sizes = cache_create(cache_bytes(16, SIZE_CACHE_MAX));
	if (fs->files == NULL || fs->merges == NULL || fs->sizes == NULL ||
	    pins_create(&fs->pins) < 0 || ingests_create(&fs->ingests) < 0 ||
	    handles_create(&fs->handles) < 0) {
		mount_state_free(fs);
		return -ENOMEM;
	}
	/* Content of a past range outlives the puts of later profiles. */
	cache_set_changed(fs->files, changed_since, (void *)fs->rd);
	cache_set_changed(fs->merges, changed_since, (void *)fs->rd);
	cache_set_changed(fs->sizes, changed_since, (void *)fs->rd);
	cache_set_idle(fs->files, CACHE_IDLE_NS);
	cache_set_idle(fs->merges, CACHE_IDLE_NS);

	access_modes(fs, &o->access);
	fuse_set_log_func(fuse_log_to_log);
	fuse_opt_add_arg(&args, "profilefs");
	fuse_opt_add_arg(&args, "-o");
	/*
	 * default_permissions: the kernel checks the modes stat reports. Without
	 * allow_other the kernel lets only the mounting user in, whatever the modes.
	 */
	fuse_opt_add_arg(&args, o->access.allow_other || o->access.group_set ?
	    "fsname=profilefs,subtype=profilefs,default_permissions,allow_other" :
	    "fsname=profilefs,subtype=profilefs,default_permissions");
	if (o->debug)
		fuse_opt_add_arg(&args, "-d");
	f = fuse_new(&args, &fs_ops, sizeof(fs_ops), fs);
	if (f == NULL) {
		log_warnx("cannot set up the FUSE filesystem");
		fuse_opt_free_args(&args);
		return -EIO;
	}
	fs->fuse = f;
	if (fuse_mount(f, o->mountpoint) != 0) {
		log_warnx("cannot mount on %s (is /dev/fuse there and fuse3 installed? "
		    "is something else mounted there?%s)", o->mountpoint,
		    geteuid() != 0 && (o->access.allow_other || o->access.group_set) ?
		    " --allow-other and --group need root, or user_allow_other in /etc/fuse.conf" :
		    "");
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return -EIO;
	}
	se = fuse_get_session(f);
	if ((rc = ttl_attach(se)) < 0) {
		log_warnx("cannot set up the FUSE session's replies");
		goto unmount;
	}
	{
		struct cache *all[] = { fs->files, fs->merges, fs->sizes };

		if ((rc = cache_sweeper_start(all, 3, &sw)) < 0) {
			log_warnx("cannot start the cache sweeper: %s", strerror(-rc));
			goto unmount;
		}
	}
	log_info("mounted on %s (%s)", o->mountpoint, o->access.group_set ?
	    (o->access.group_write ? "owner and group read, both write ingest/" :
	    "owner and group read, owner writes ingest/") : o->access.allow_other ?
	    "everyone reads, owner writes ingest/" : "private to its owner");
	if (o->mounted && o->mounted(o->hook_arg) != 0) {
		rc = -EPERM;
		goto unmount;
	}
	if (fuse_set_signal_handlers(se) != 0) {
		rc = -EIO;
		goto unmount;
	}
	stop_handlers_wrap(o->stop_signal);
	/*
	 * The caller may have kept the stop signals blocked while it started
	 * its threads (they inherit the block): here, in this thread alone,
	 * they reach libfuse's handlers, and one pending since start-up ends
	 * the loop at once. The loop's wait in this thread is what a signal
	 * must interrupt; its workers block them themselves.
	 */
	stop_mask(SIG_UNBLOCK);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, o->threads ? o->threads : 16);
	fuse_loop_cfg_set_idle_threads(lc, 4);
	/* A positive result is the signal that ended the loop: a clean stop. */
	if (fuse_loop_mt(f, lc) < 0)
		rc = -EIO;
	fuse_loop_cfg_destroy(lc);
	stop_handlers_unwrap();
	if (o->served)
		o->served();
	fuse_remove_signal_handlers(se);
unmount:
	if (o->unmounting)
		o->unmounting(o->hook_arg);
	fuse_unmount(f);
	fuse_destroy(f);
	fuse_opt_free_args(&args);
	cache_sweeper_stop(sw);
	mount_state_free(fs);
	log_info("unmounted %s", o->mountpoint);
	return rc;
}
