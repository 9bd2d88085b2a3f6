/*
 * owner: acting with the file credentials of another process's owner on the
 * calling thread, so that what a root daemon opens or creates on a process's
 * behalf (its debug files, a file in its /tmp) is what that owner could.
 * Linux keeps credentials per thread and the raw system calls used here
 * (setfsuid, setfsgid, setgroups) change only the calling thread's; the
 * C library's wrappers of the same names would change every thread's.
 */
#ifndef PROFILEFS_OWNER_H
#define PROFILEFS_OWNER_H

#include <stdbool.h>
#include <sys/types.h>

#define OWNER_MAX_GROUPS	256

struct owner {
	bool		 switched;	/* this thread runs with the owner's credentials */
	bool		 public_only;	/* they could not be taken */
	uid_t		 fsuid;
	gid_t		 fsgid;
	gid_t		*groups;	/* this thread's own, to restore */
	int		 ngroups;
};

/*
 * Take the file credentials (fs uid, fs gid, groups) of process pid, read
 * from /proc/PID/status, on this thread: 0, with w->switched, or with
 * w->public_only when this process may not take them (no CAP_SETUID and
 * CAP_SETGID); -errno when the process cannot be read. owner_end() after.
 */
int	owner_begin(struct owner *w, unsigned pid);
/* This thread's own credentials back. */
void	owner_end(struct owner *w);

#endif
