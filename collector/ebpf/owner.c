/*
 * owner: another process's owner's file credentials on the calling thread
 * (see owner.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "owner.h"


void
owner_end(struct owner *w)
{
	if (w->switched) {
		syscall(SYS_setfsuid, w->fsuid);
		syscall(SYS_setfsgid, w->fsgid);
		syscall(SYS_setgroups, (size_t)w->ngroups, w->groups);
	}
	free(w->groups);
	memset(w, 0, sizeof(*w));
}

int
owner_begin(struct owner *w, unsigned pid)
{
	char path[64], line[4096];
	gid_t groups[OWNER_MAX_GROUPS];
	unsigned long ids[4], g[4];
	int n = 0, have = 0;
	FILE *f;

	memset(w, 0, sizeof(*w));
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) == 4)
			have |= 1;
		else if (sscanf(line, "Gid: %lu %lu %lu %lu", &g[0], &g[1], &g[2], &g[3]) == 4)
			have |= 2;
		else if (strncmp(line, "Groups:", 7) == 0) {
			char *c = line + 7, *end;

			for (;;) {
				unsigned long v = strtoul(c, &end, 10);

				if (end == c || n >= OWNER_MAX_GROUPS)
					break;
				groups[n++] = (gid_t)v;
				c = end;
			}
			have |= 4;
		}
	}
	fclose(f);
	if (have != 7)
		return -ESRCH;
	w->fsuid = (uid_t)syscall(SYS_setfsuid, -1);
	w->fsgid = (gid_t)syscall(SYS_setfsgid, -1);
	if ((w->ngroups = getgroups(0, NULL)) < 0 ||
	    (w->groups = calloc((size_t)w->ngroups + 1, sizeof(gid_t))) == NULL ||
	    getgroups(w->ngroups, w->groups) < 0) {
		free(w->groups);
		w->groups = NULL;
		return -ENOMEM;
	}
	/* The owner's file identity: its fs ids (field 4). */
	if (syscall(SYS_setgroups, (size_t)n, groups) < 0) {
		w->public_only = true;
		return 0;
	}
	w->switched = true;
	syscall(SYS_setfsgid, (gid_t)g[3]);
	syscall(SYS_setfsuid, (uid_t)ids[3]);
	if ((uid_t)syscall(SYS_setfsuid, -1) != (uid_t)ids[3] ||
	    (gid_t)syscall(SYS_setfsgid, -1) != (gid_t)g[3]) {
		owner_end(w);
		w->public_only = true;
	}
	return 0;
}
