#!/usr/bin/env bash
# Run clickhouse-server with DIR/config.xml in the background and print its
# pid once HTTP_PORT answers: run-server.sh DIR HTTP_PORT. A server that
# exits while starting (a port the stopped one still held, a data directory
# still locked) is started again, three tries in all; one that does not
# answer within 60 s (times PROFILEFS_SLOW) is killed. On failure, exit 1
# with the tail of the server's own logs on stderr, so the test output says why.
set -euo pipefail
dir=$1 http=$2
wait_s=$((60 * ${PROFILEFS_SLOW:-1}))
for try in 1 2 3; do
  clickhouse-server --config-file="$dir/config.xml" >"$dir/stdout.log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq $((wait_s * 10))); do
    if curl -sf "http://127.0.0.1:$http/ping" >/dev/null 2>&1; then
      echo "$pid"
      exit 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
    echo "clickhouse-server on $http did not answer within $wait_s s (try $try)" >&2
    break
  fi
  echo "clickhouse-server on $http exited while starting (try $try)" >&2
  sleep 2
done
for f in stdout.log error.log; do
  [ -s "$dir/$f" ] && tail -n 5 "$dir/$f" | sed "s|^|  $f: |" >&2
done
exit 1
