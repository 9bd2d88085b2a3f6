/*
 * qcache: the query API's reply cache (see qcache.h). A handful of entries,
 * looked up by a linear scan under one mutex: the work saved is a merge of
 * a range, far above the scan's cost. What the entries hold is counted
 * against their byte bound only (the replies are bounded by the methods).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qcache.h"

struct qentry {
	void		*key;
	size_t		 klen;
	uint64_t	 hash;
	uint64_t	 gen;
	int64_t		 upto;
	void		*reply;
	size_t		 len;
	uint64_t	 used;		/* LRU stamp */
};

struct qcache {
	pthread_mutex_t	 lock;
	struct qentry	*e;		/* protected by lock */
	size_t		 n, max;
	size_t		 bytes, max_bytes;
	uint64_t	 clock;
};

struct qcache *
qcache_create(size_t max_entries, size_t max_bytes)
{
	struct qcache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	if ((c->e = calloc(max_entries ? max_entries : 1, sizeof(*c->e))) == NULL) {
		free(c);
		return NULL;
	}
	c->max = max_entries ? max_entries : 1;
	c->max_bytes = max_bytes;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void
entry_drop(struct qcache *c, size_t i)
{
	c->bytes -= c->e[i].klen + c->e[i].len;
	free(c->e[i].key);
	free(c->e[i].reply);
	c->e[i] = c->e[--c->n];
}

void
qcache_destroy(struct qcache *c)
{
	if (c == NULL)
		return;
	while (c->n)
		entry_drop(c, c->n - 1);
	free(c->e);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The entry of key, or SIZE_MAX; under lock. */
static size_t
entry_find(const struct qcache *c, const void *key, size_t klen, uint64_t h)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->e[i].hash == h && c->e[i].klen == klen &&
		    memcmp(c->e[i].key, key, klen) == 0)
			return i;
	return SIZE_MAX;
}

int
qcache_get(struct qcache *c, const struct reader *rd, const void *key, size_t klen,
    struct buf *body)
{
	uint64_t h = hash_bytes(key, klen), gen;
	int64_t upto;
	size_t i;
	int rc = -ENOENT;

	if (c == NULL)
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	if ((i = entry_find(c, key, klen, h)) == SIZE_MAX)
		goto out;
	gen = c->e[i].gen;
	upto = c->e[i].upto;
	/* The reader's own lock is not taken under ours: ask it unlocked. */
	pthread_mutex_unlock(&c->lock);
	if (reader_generation(rd) != gen && reader_changed_since(rd, gen, upto)) {
		pthread_mutex_lock(&c->lock);
		if ((i = entry_find(c, key, klen, h)) != SIZE_MAX && c->e[i].gen == gen)
			entry_drop(c, i);
		goto out;
	}
	pthread_mutex_lock(&c->lock);
	/* Replaced or dropped meanwhile: a miss, as it would have been a moment later. */
	if ((i = entry_find(c, key, klen, h)) == SIZE_MAX || c->e[i].gen != gen)
		goto out;
	c->e[i].used = ++c->clock;
	rc = buf_add(body, c->e[i].reply, c->e[i].len);
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void
qcache_put(struct qcache *c, const void *key, size_t klen, uint64_t gen, int64_t upto,
    const void *reply, size_t len)
{
	uint64_t h = hash_bytes(key, klen);
	struct qentry e = { .klen = klen, .hash = h, .gen = gen, .upto = upto, .len = len };
	size_t i, old;

	if (c == NULL || klen + len > c->max_bytes)
		return;
	e.key = malloc(klen ? klen : 1);
	e.reply = malloc(len ? len : 1);
	if (e.key == NULL || e.reply == NULL) {
		free(e.key);
		free(e.reply);
		return;
	}
	memcpy(e.key, key, klen);
	memcpy(e.reply, reply, len);
	pthread_mutex_lock(&c->lock);
	if ((i = entry_find(c, key, klen, h)) != SIZE_MAX)
		entry_drop(c, i);
	while (c->n && (c->n == c->max || c->bytes + klen + len > c->max_bytes)) {
		for (old = 0, i = 1; i < c->n; i++)
			if (c->e[i].used < c->e[old].used)
				old = i;
		entry_drop(c, old);
	}
	e.used = ++c->clock;
	c->e[c->n++] = e;
	c->bytes += klen + len;
	pthread_mutex_unlock(&c->lock);
}
