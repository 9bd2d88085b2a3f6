/*
 * cluster: a fleet on ClickHouse. Every profile the local store acknowledged
 * is shipped, in batches, to a ClickHouse cluster (one row per profile, its
 * samples as arrays; ClickHouse's materialized views keep per-window sums
 * per stack), and its reader (cluster_reader()) answers the tree and the HTTP
 * API from the whole cluster through GROUP BY queries that run in ClickHouse. Sharding
 * and replication are ClickHouse's own (Distributed tables over a
 * remote_servers cluster); this module only talks HTTP to it. Reads ask each
 * shard's own tables at once, and add the answers up, only when the URLs are
 * proven to be the cluster's shards each once (read.c, chttp.c); else they
 * go through the Distributed tables.
 *
 * The local store stays the durable buffer: its outbox (store_queue_*) holds
 * what is not shipped yet, so a cluster that is down loses nothing, and a
 * batch that may have reached ClickHouse is checked before it is sent again,
 * so nothing counts twice.
 */
#ifndef PROFILEFS_CLUSTER_H
#define PROFILEFS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "store.h"

struct cluster;

struct cluster_config {
	/*
	 * "URL,URL...": one server per shard; with replicated, "URL|URL,..."
	 * names the replicas of each shard (',' between shards, '|' between
	 * a shard's replicas); URL: http://[user:pass@]host:port[/db][?database=db]
	 */
	const char	*urls;
	const char	*cluster;	/* remote_servers name; NULL: "profilefs" */
	const char	*host;		/* this host's name (the host label); NULL: gethostname */
	uint64_t	 max_backlog;	/* profiles kept unshipped; 0: 1,000,000 */
	size_t		 batch_rows;	/* samples per INSERT; 0: 1,000,000 */
	bool		 no_reads;	/* ship only; the tree shows local data */
	/*
	 * ms: a read (SELECT) the server asked has not answered within this
	 * is asked of the next server too (a replica of the same shard when
	 * reads go to the shards); the first whole answer wins. 0: 1500; < 0:
	 * never.
	 */
	int64_t		 hedge_ms;
	/*
	 * The *_local tables are Replicated*MergeTree in ZooKeeper under
	 * /clickhouse/tables/{shard}/<db>.<table>, replica '{replica}' (the
	 * servers' macros); a shard may list several replicas in urls.
	 */
	bool		 replicated;
	int64_t		 retention;	/* ns; this host's local retention, for messages */
	/*
	 * ns; written as the cluster's retention (settings.c), which decides
	 * what ClickHouse keeps: days wholly older are dropped. 0: keep
	 * everything; < 0: not given (the cluster's setting stays as it is).
	 */
	int64_t		 set_retention;
};

/*
 * Check cfg (-EINVAL with the reason in err for a malformed URL list), turn
 * on st's outbox and start the shipper thread. A cluster that cannot be
 * reached is not an error: the daemon serves local data until it can, and
 * says so in the log, the metrics and cluster_status(). cluster_reader()
 * reads the cluster once its schema is in place. *out is freed by
 * cluster_stop().
 */
int	cluster_start(struct store *st, const struct cluster_config *cfg,
	    struct cluster **out, struct buf *err);
/*
 * The fleet's reader (store.h): the local store's data until the shipper
 * first finds the cluster's schema in place, the whole cluster's from then
 * on (with no_reads: always the local store's). Valid until cluster_stop().
 */
const struct reader *cluster_reader(struct cluster *c);
/* Stop shipping (what is queued stays queued); NULL is a no-op. */
void	cluster_stop(struct cluster *c);
/*
 * The state in one line for /healthz and the log ("ok", or why not) into
 * out; returns true when the cluster is reachable with its schema.
 */
bool	cluster_status(struct cluster *c, struct buf *out);

#endif
