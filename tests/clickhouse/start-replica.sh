#!/usr/bin/env bash
# Start one clickhouse-server of the replicated test cluster (replica.xml.in)
# in the background: start-replica.sh DIR HTTP TCP INTER SHARD REPLICA ZK T11
# T12 T21 T22. Prints the server's pid once its HTTP interface answers; exits
# 1 if it does not within 30 s. DIR keeps its data: the same call restarts
# the replica.
set -euo pipefail
dir=$1 http=$2 tcp=$3 inter=$4 shard=$5 replica=$6 zk=$7 t11=$8 t12=$9 t21=${10} t22=${11}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
cp "$here/users.xml" "$dir/users.xml"
sed -e "s|@DIR@|$dir|g" -e "s|@HTTP@|$http|g" -e "s|@TCP@|$tcp|g" -e "s|@INTER@|$inter|g" \
    -e "s|@SHARD@|$shard|g" -e "s|@REPLICA@|$replica|g" -e "s|@ZK@|$zk|g" \
    -e "s|@T11@|$t11|g" -e "s|@T12@|$t12|g" -e "s|@T21@|$t21|g" -e "s|@T22@|$t22|g" \
    "$here/replica.xml.in" > "$dir/config.xml"
exec "$here/run-server.sh" "$dir" "$http"
