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
clickhouse-server --config-file="$dir/config.xml" >"$dir/stdout.log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 300); do
  if curl -sf "http://127.0.0.1:$http/ping" >/dev/null 2>&1; then
    echo "$pid"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
echo "clickhouse-server on $http did not start; see $dir" >&2
kill "$pid" 2>/dev/null || true
exit 1
