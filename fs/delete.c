/*
 * delete: the services the mount deleted from lately. `rm -r` lists a
 * directory, then removes its entries one by one; deleting a profile or a
 * label set makes other entries it listed vanish (every range and `all`
 * show the same profiles), and rm would report each as missing. So, for
 * DELETE_GRACE after the last deletion in a service (or the last use of
 * this grace), the process that deleted (rm) still finds the entries under
 * that service it listed: directories resolve as empty ones, files can be
 * removed. Other processes see the truth, and listings never show them.
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
};

static pthread_mutex_t del_lock = PTHREAD_MUTEX_INITIALIZER;
static struct deleted del_recent[DELETE_MAX];	/* protected by del_lock */

void
delete_note(const char *service, pid_t pid)
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
	snprintf(del_recent[slot].service, sizeof(del_recent[slot].service), "%s", service);
	del_recent[slot].pid = pid;
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
