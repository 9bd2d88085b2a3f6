/*
 * priv: giving up root once what needs it is done (serve --user). The daemon
 * starts as root, opens the store as the user, loads and attaches the BPF
 * programs, binds the HTTP socket and mounts; then every thread becomes the
 * user and keeps only the capabilities the eBPF sampler still uses while it
 * runs. A small forked helper keeps CAP_SYS_ADMIN alone, to unmount the tree
 * when the daemon stops (or dies): a mount made by root cannot be undone by
 * the user. Nothing here knows what the capabilities are for: main.c says.
 */
#ifndef PROFILEFS_PRIV_H
#define PROFILEFS_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct priv_user {
	char		 name[64];
	uid_t		 uid;
	gid_t		 gid;		/* primary group */
	gid_t		*groups;	/* supplementary groups (getgrouplist) */
	int		 ngroups;
	pid_t		 helper;	/* the unmount helper, 0: none */
	int		 helper_fd;	/* its socket, -1: none */
};

/* A capability set: bit n is capability n (linux/capability.h numbering). */
#define PRIV_CAP(n)	(UINT64_C(1) << (n))

/*
 * Look up a user name (or a numeric uid) and its groups into u; free with
 * priv_user_free(). -ENOENT with a message printed when there is none.
 */
int	priv_user_lookup(const char *name, struct priv_user *u);
/*
 * Whether u is shared with other programs: nobody (65534), or a user other
 * processes run as now (their number in *others). The daemon running as a
 * shared user can be signalled, and its data changed, by those programs.
 */
bool	priv_user_shared(const struct priv_user *u, unsigned *others);
void	priv_user_free(struct priv_user *u);
/* A group name or number; -ENOENT with a message printed. */
int	priv_group_lookup(const char *name, gid_t *out);

/*
 * Let every thread created from now on keep its permitted capabilities
 * across the change of uid (PR_SET_KEEPCAPS is per thread and inherited):
 * call before any thread starts.
 */
int	priv_keep_caps(void);

/*
 * Make dir (created if missing) the user's: a directory owned by root, as
 * left by a run without --user or made by the service manager, is handed
 * over with everything in it; one owned by someone else is refused.
 */
int	priv_own_dir(const char *dir, const struct priv_user *u);

/*
 * Create files as the user (this thread and threads it starts), or as root
 * again. -EPERM, with a message, when the ids cannot be taken.
 */
int	priv_fs_as_user(const struct priv_user *u);
void	priv_fs_as_root(void);

/*
 * Fork the unmount helper for mountpoint (absolute): it keeps CAP_SYS_ADMIN
 * alone, as the user, and unmounts when priv_unmount() asks or when the
 * daemon's end of its socket closes (exit, crash). Call while still root.
 */
int	priv_unmount_helper(const char *mountpoint, struct priv_user *u);
/* Ask the helper to unmount now and wait for it; no-op without a helper. */
void	priv_unmount(struct priv_user *u);

/*
 * Become u in every thread of the process and keep exactly the capabilities
 * keep (permitted and effective; nothing inheritable or ambient), then check
 * each thread's /proc status says so. -EPERM with a message logged otherwise:
 * the caller must not go on.
 */
int	priv_drop(const struct priv_user *u, uint64_t keep);

/*
 * Whether this kernel's bpf(2) needs cap_bpf even for maps already open
 * (kernel.unprivileged_bpf_disabled before Linux 6.5). Call as root.
 */
bool	priv_bpf_needs_cap(void);

/* The names of the capabilities in caps, e.g. "cap_sys_ptrace,cap_bpf", into out. */
void	priv_cap_names(uint64_t caps, char *out, size_t size);

#endif
