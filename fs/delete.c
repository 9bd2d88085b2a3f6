/*
 * delete: the services the mount deleted from lately. `rm -r` lists a
 * directory, then removes its entries one by one; deleting a profile or a
 * label set makes other entries it listed vanish (every range and `all`
 * show the same profiles), and rm would report each as missing. So, for
 * DELETE_GRACE after the last deletion in a service (or the last use of
 * this grace), the process that deleted (rm) still finds the entries under
 * that service it listed: directories resolve as empty ones, files can be
 * removed. Other processes see the truth, and listings never show them.
 *
 * It also remembers the directory each process listed first (its walk's
 * root: rm -r lists the directory it was given before anything below it),
 * so that a deletion below a last-* range can tell an rm -r of the label set
 * above it (the range goes with its label set) from an rm -r of the range
 * itself (refused: it moves with the clock).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "fs_int.h"

#define DELETE_GRACE_NS		(INT64_C(5) * 1000000000)
#define DELETE_MAX		256	/* services remembered at most */

struct deleted {
	char		 service[SERVICE_MAX_LEN + 1];
	pid_t		 pid;		/* the caller that deleted */
	int64_t		 until;		/* mono ns */
	uint64_t	 walked;	/* profiles it deleted one by one */
};

#define WALK_MAX	64	/* walks remembered at most */

struct walk {
	char		 root[1024];	/* the first directory the process listed */
	pid_t		 pid;
	int64_t		 until;		/* mono ns */
};

static pthread_mutex_t del_lock = PTHREAD_MUTEX_INITIALIZER;
static struct deleted del_recent[DELETE_MAX];	/* protected by del_lock */
static struct walk del_walks[WALK_MAX];		/* protected by del_lock */

void
delete_note(const char *service, pid_t pid, uint64_t nprofiles)
{
	int64_t now = clock_mono_ns();
	size_t i, slot = 0;

	pthread_mutex_lock(&del_lock);
	for (i = 0; i < DELETE_MAX; i++) {
		if (del_recent[i].pid == pid && strcmp(del_recent[i].service, service) == 0) {
			slot = i;
			break;
		}
		if (del_recent[i].until < del_recent[slot].until)
			slot = i;	/* the oldest (or a free one) */
	}
	if (del_recent[slot].pid != pid || strcmp(del_recent[slot].service, service) != 0 ||
	    del_recent[slot].until <= now)
		del_recent[slot].walked = 0;
	snprintf(del_recent[slot].service, sizeof(del_recent[slot].service), "%s", service);
	del_recent[slot].pid = pid;
	del_recent[slot].walked += nprofiles;
	del_recent[slot].until = now + DELETE_GRACE_NS;
	pthread_mutex_unlock(&del_lock);
}

bool
delete_recent(const char *service, pid_t pid)
{
	int64_t now = clock_mono_ns();
	bool found = false;
	size_t i;

	pthread_mutex_lock(&del_lock);
	for (i = 0; i < DELETE_MAX && !found; i++)
		if (del_recent[i].until > now && del_recent[i].pid == pid &&
		    strcmp(del_recent[i].service, service) == 0) {
			del_recent[i].until = now + DELETE_GRACE_NS;
			found = true;
		}
	pthread_mutex_unlock(&del_lock);
	return found;
}

uint64_t
delete_walked(const char *service, pid_t pid)
{
	int64_t now = clock_mono_ns();
	uint64_t n = 0;
	size_t i;

	pthread_mutex_lock(&del_lock);
	for (i = 0; i < DELETE_MAX; i++)
		if (del_recent[i].until > now && del_recent[i].pid == pid &&
		    strcmp(del_recent[i].service, service) == 0) {
			n = del_recent[i].walked;
			del_recent[i].walked = 0;
			break;
		}
	pthread_mutex_unlock(&del_lock);
	return n;
}

bool
delete_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void
delete_walk_note(pid_t pid, const char *path)
{
	int64_t now = clock_mono_ns();
	size_t i, slot = 0;

	if (strlen(path) >= sizeof(del_walks[0].root))
		return;
	pthread_mutex_lock(&del_lock);
	for (i = 0; i < WALK_MAX; i++) {
		if (del_walks[i].pid == pid && del_walks[i].until > now) {
			slot = i;
			break;
		}
		if (del_walks[i].until < del_walks[slot].until)
			slot = i;	/* the oldest (or a free one) */
	}
	/* A directory outside the walk's root starts another walk. */
	if (i == WALK_MAX || !delete_path_under(path, del_walks[slot].root))
		snprintf(del_walks[slot].root, sizeof(del_walks[slot].root), "%s", path);
	del_walks[slot].pid = pid;
	del_walks[slot].until = now + DELETE_GRACE_NS;
	pthread_mutex_unlock(&del_lock);
}

bool
delete_walk_root(pid_t pid, char *root, size_t size)
{
	int64_t now = clock_mono_ns();
	bool found = false;
	size_t i;

	pthread_mutex_lock(&del_lock);
	for (i = 0; i < WALK_MAX && !found; i++)
		if (del_walks[i].pid == pid && del_walks[i].until > now) {
			del_walks[i].until = now + DELETE_GRACE_NS;
			snprintf(root, size, "%s", del_walks[i].root);
			found = true;
		}
	pthread_mutex_unlock(&del_lock);
	return found;
}
