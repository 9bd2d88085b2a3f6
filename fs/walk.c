/*
 * walk: which callers are walking the tree (du, find -size, ls -lR, grep -r,
 * cp -r). Such a caller stats every file of every range directory: a week of
 * one service is some 180 ranges per label set, each with a dozen generated
 * files and its profiles/, and making each file to learn its size cost a du
 * of a week minutes of CPU and the caches' whole budget. A caller that
 * stats generated files or stored profiles in more than WALK_DIRS
 * directories (a range, its profiles/), each within WALK_NS of the last, is
 * walking: fs.c then answers its stat with the size known already, else 0,
 * without making the file (a view is read with direct_io and a stored
 * profile's size is asked again on open, so a reader still gets every
 * byte). A stat in a few directories -- ls -l of a range, a browser opening
 * a flame graph -- still gets the exact size.
 *
 * Callers are FUSE requests' thread ids, kept in a small table (the oldest
 * walk makes room); all state under w_lock.
 */
#include <pthread.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "fs_int.h"

#define WALKERS		64
#define WALK_DIRS	3
#define WALK_NS		(INT64_C(10) * 1000000000)

struct walker {
	pid_t		 pid;
	uint64_t	 dir;		/* hash of the range directory it last stat'ed in */
	unsigned	 ndirs;		/* directories it went to, one after another */
	int64_t		 last;		/* clock_mono_ns() */
};

static pthread_mutex_t w_lock = PTHREAD_MUTEX_INITIALIZER;
static struct walker walkers[WALKERS];

bool
walk_note(pid_t pid, const char *path)
{
	const char *slash = strrchr(path, '/');
	uint64_t dir = hash_bytes(path, slash ? (size_t)(slash - path) : 0);
	int64_t now = clock_mono_ns();
	struct walker *w = NULL, *old = &walkers[0];
	bool walking;
	size_t i;

	if (pid <= 0)
		return false;
	pthread_mutex_lock(&w_lock);
	for (i = 0; i < WALKERS; i++) {
		if (walkers[i].pid == pid) {
			w = &walkers[i];
			break;
		}
		if (walkers[i].last < old->last)
			old = &walkers[i];
	}
	if (w == NULL || now - w->last > WALK_NS) {
		w = w ? w : old;
		memset(w, 0, sizeof(*w));
		w->pid = pid;
	}
	if (w->ndirs == 0 || w->dir != dir) {
		w->dir = dir;
		w->ndirs++;
	}
	w->last = now;
	walking = w->ndirs > WALK_DIRS;
	pthread_mutex_unlock(&w_lock);
	return walking;
}

bool
walk_active(pid_t pid)
{
	int64_t now = clock_mono_ns();
	bool walking = false;
	size_t i;

	if (pid <= 0)
		return false;
	pthread_mutex_lock(&w_lock);
	for (i = 0; i < WALKERS; i++)
		if (walkers[i].pid == pid) {
			walking = now - walkers[i].last <= WALK_NS && walkers[i].ndirs > WALK_DIRS;
			break;
		}
	pthread_mutex_unlock(&w_lock);
	return walking;
}
