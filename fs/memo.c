/*
 * memo: answers that a walk of the tree (du, find, ls -lR, grep -r) asks
 * the store for over and over, remembered for a moment. With attributes not
 * cached by the kernel (attr_timeout 0: generated sizes change), each stat
 * in a directory is also a stat of the directory (the kernel checks its
 * search permission with fresh attributes, default_permissions), and a
 * stored profile is listed under each range that holds it (its hour, day,
 * last-7d, all, ...; under all/ and its label set): a week of one service is
 * 344,000 stats of 40,000 profiles in 700 directories.
 *
 * - A directory that exists: its path, and its mtime (the newest profile,
 *   0 if not asked), for DIR_MAX_AGE_NS at one store generation. Only
 *   existence is remembered, so data stored since shows at once (a new
 *   generation), and a name never remembered absent.
 * - A stored profile's index record (series, time, served size, bytes
 *   stored) by id: valid while nothing at or before its time changed since
 *   (reader_changed_since(): its deletion, retention), like the caches.
 *
 * Both are fixed tables (a slot per hash, the newest answer wins), under
 * m_lock; nothing is allocated per entry and their memory is bounded.
 * What the store answers is the caller's (fs.c); this only remembers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "store.h"
#include "fs_int.h"

#define DIR_SLOTS	256
#define DIR_PATH_MAX	480
#define DIR_MAX_AGE_NS	(INT64_C(1000) * 1000000)
/* Profiles of a week at a 30 s cadence for two label sets: 40,320 (3.5 MiB here, allocated at the first stat of a profile). */
#define PROFILE_SLOTS	65536

struct dir_memo {
	uint64_t	 gen;
	int64_t		 at;		/* clock_mono_ns(); 0: empty */
	int64_t		 newest;
	char		 path[DIR_PATH_MAX];
};

struct profile_memo {
	uint64_t	 id;		/* 0: empty (ids start at 1) */
	uint64_t	 gen;
	uint64_t	 series;
	int64_t		 time;
	uint64_t	 stored;
	uint64_t	 size;
	int		 rc;		/* 0 or -ENODATA (size not known yet) */
};

static pthread_mutex_t m_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dir_memo dirs[DIR_SLOTS];	/* protected by m_lock */
static struct profile_memo *profiles;		/* protected by m_lock; PROFILE_SLOTS */

bool
memo_dir_get(const struct reader *rd, const char *path, int64_t *newest)
{
	size_t n = strlen(path);
	struct dir_memo *d = &dirs[hash_bytes(path, n) % DIR_SLOTS];
	uint64_t gen = reader_generation(rd);	/* not under m_lock: a reader may lock */
	int64_t now = clock_mono_ns();
	bool hit = false;

	if (n >= DIR_PATH_MAX)
		return false;
	pthread_mutex_lock(&m_lock);
	if (d->at != 0 && d->gen == gen && now - d->at < DIR_MAX_AGE_NS &&
	    strcmp(d->path, path) == 0) {
		*newest = d->newest;
		hit = true;
	}
	pthread_mutex_unlock(&m_lock);
	return hit;
}

void
memo_dir_put(const struct reader *rd, uint64_t gen, const char *path, int64_t newest)
{
	size_t n = strlen(path);
	struct dir_memo *d = &dirs[hash_bytes(path, n) % DIR_SLOTS];
	int64_t now = clock_mono_ns();

	if (n >= DIR_PATH_MAX || gen != reader_generation(rd))
		return;
	pthread_mutex_lock(&m_lock);
	d->gen = gen;
	d->at = now;
	d->newest = newest;
	memcpy(d->path, path, n + 1);
	pthread_mutex_unlock(&m_lock);
}

int
memo_profile_size(const struct reader *rd, uint64_t id, struct store_ref *ref,
    uint64_t *size)
{
	uint64_t gen = reader_generation(rd);
	struct profile_memo *m, got = { .id = 0 };
	int rc;

	pthread_mutex_lock(&m_lock);
	if (profiles == NULL)
		profiles = calloc(PROFILE_SLOTS, sizeof(*profiles));
	m = profiles ? &profiles[id % PROFILE_SLOTS] : NULL;
	if (m && m->id == id && id != 0)
		got = *m;
	pthread_mutex_unlock(&m_lock);
	if (got.id != 0 && (got.gen == gen || !reader_changed_since(rd, got.gen, got.time))) {
		memset(ref, 0, sizeof(*ref));
		ref->id = id;
		ref->series = got.series;
		ref->time = got.time;
		ref->stored = got.stored;
		*size = got.size;
		return got.rc;
	}
	rc = reader_get_size(rd, id, ref, size);
	if ((rc != 0 && rc != -ENODATA) || m == NULL || id == 0)
		return rc;
	pthread_mutex_lock(&m_lock);
	*m = (struct profile_memo){ .id = id, .gen = gen, .series = ref->series,
	    .time = ref->time, .stored = ref->stored, .size = *size, .rc = rc };
	pthread_mutex_unlock(&m_lock);
	return rc;
}

void
memo_profile_forget(uint64_t id)
{
	pthread_mutex_lock(&m_lock);
	if (profiles && profiles[id % PROFILE_SLOTS].id == id)
		profiles[id % PROFILE_SLOTS].id = 0;
	pthread_mutex_unlock(&m_lock);
}
