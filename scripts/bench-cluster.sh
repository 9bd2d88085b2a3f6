#!/usr/bin/env bash
# Benchmark: the fleet on ClickHouse against the embedded store, side by side
# in one run. Starts two clickhouse-server processes on loopback as the two
# shards of one cluster (tests/clickhouse/), then:
#   1. pushes N real Go CPU profiles (a backfill of DAYS days, two label sets)
#      over HTTP into a daemon without --clickhouse: the embedded store's rate;
#   2. pushes the same into a daemon with --clickhouse while the cluster is
#      still down (the local ack rate with the outbox), then starts the
#      cluster and times the backlog's drain;
#   3. pushes N more while the cluster is up and times until the last one is
#      in ClickHouse: the end-to-end ingest rate into the cluster;
#   4. reads last-1h, last-24h and last-7d merged.pb.gz from both daemons on
#      the same data (the cluster daemon reads through ClickHouse).
#
# Usage: scripts/bench-cluster.sh [DAYS [STEP_SECONDS]]   (default 7 days, 300 s)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
DAYS="${1:-7}"
STEP="${2:-300}"
K=2
N=$((DAYS * 86400 / STEP * K))
PROFILES="${BENCH_SCALE_PROFILES:-/tmp/profilefs-bench-scale-cpu}"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" GOFLAGS=-mod=mod

command -v clickhouse-server >/dev/null || { echo "clickhouse-server is not installed (scripts/install-deps.sh --test)"; exit 1; }
[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt 64 ]; then
  echo "generating 64 Go CPU profiles (1 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/gencpu" && go build -o /tmp/profilefs-gencpu .)
  /tmp/profilefs-gencpu -out "$PROFILES" -n 64 -dur 1s 2>/dev/null
fi
files=$(ls "$PROFILES"/cpu-*.pb.gz)
TMP="$(mktemp -d /tmp/profilefs-bench-cluster.XXXXXX)"
P0=$((30000 + ($$ % 1000) * 10))
CH1=$P0 CH1T=$((P0 + 1)) CH2=$((P0 + 3)) CH2T=$((P0 + 4))
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for m in "$TMP"/mnt*; do fusermount3 -u -z "$m" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c"

samples=0
for f in $files; do
  s=$(go tool pprof -raw "$f" 2>/dev/null | awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /^ *[0-9-]+ /' | wc -l)
  samples=$((samples + s))
done
per=$(awk -v s="$samples" -v n="$(echo "$files" | wc -w)" 'BEGIN {printf "%.1f", s / n}')
echo "inputs: $(echo "$files" | wc -w) Go CPU profiles, $per samples each on average; $N pushes per run"

start_daemon() {	# start_daemon NAME [args...]: sets PORT_<NAME>
  local name=$1; shift
  mkdir -p "$TMP/mnt$name"
  "$BIN" serve --data "$TMP/data$name" --http 127.0.0.1:0 "$@" "$TMP/mnt$name" 2>>"$TMP/log$name" &
  PIDS+=($!)
  for _ in $(seq 1 300); do [ -r "$TMP/mnt$name/README.txt" ] && grep -q "listening on" "$TMP/log$name" && break; sleep 0.1; done
  eval "PORT_$name=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/log$name" | tail -1)"
}
push() {	# push PORT SERVICE: N profiles, prints the rate
  local now base
  now=$(date +%s); base=$((now - DAYS * 86400 + 60))
  # shellcheck disable=SC2086
  "$TMP/httpload" -c 16 -n "$N" -t 3600 -T "$base,$STEP,$K" \
    -p "/api/0/profiles?service=$2&type=cpu&labels=pod={k}&created_at={t}" 127.0.0.1 "$1" $files \
    | sed -n 's/^rate \([0-9]*\).*/\1/p'
}
backlog() { curl -s "http://127.0.0.1:$1/healthz" | sed -n 's/.*backlog \([0-9]*\) profiles.*/\1/p'; }
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# 1. the embedded store
start_daemon E
rate_e=$(push "$PORT_E" weekapp)

# 2. the outbox while the cluster is down, then its drain
start_daemon C --host benchhost --clickhouse "http://127.0.0.1:$CH1,http://127.0.0.1:$CH2"
rate_c=$(push "$PORT_C" weekapp)
echo "backlog before the cluster starts: $(backlog "$PORT_C") profiles"
PIDS+=("$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch1" "$CH1" "$CH1T" $((CH1T + 1)) "$CH1T" "$CH2T")")
PIDS+=("$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch2" "$CH2" "$CH2T" $((CH2T + 1)) "$CH1T" "$CH2T")")
while ! grep -q "clickhouse: connected" "$TMP/logC"; do sleep 0.05; done
t0=$(now_ms)
while [ "$(backlog "$PORT_C")" != 0 ]; do sleep 0.1; done
drain_ms=$(( $(now_ms) - t0 ))
drain=$(awk -v n="$N" -v t="$drain_ms" 'BEGIN {printf "%.0f", n * 1000 / (t > 0 ? t : 1)}')

# 3. steady ingest into the cluster, end to end
t0=$(now_ms)
rate_c2=$(push "$PORT_C" otherapp)
while [ "$(backlog "$PORT_C")" != 0 ]; do sleep 0.05; done
e2e_ms=$(( $(now_ms) - t0 ))
e2e=$(awk -v n="$N" -v t="$e2e_ms" 'BEGIN {printf "%.0f", n * 1000 / (t > 0 ? t : 1)}')
rows=$(curl -s "http://127.0.0.1:$CH1/" --data-binary "SELECT count() FROM profilefs.profiles")
s1=$(curl -s "http://127.0.0.1:$CH1/" --data-binary "SELECT count() FROM profilefs.profiles_local")
s2=$(curl -s "http://127.0.0.1:$CH2/" --data-binary "SELECT count() FROM profilefs.profiles_local")
bytes=$(curl -s "http://127.0.0.1:$CH1/" --data-binary "SELECT sum(bytes) FROM cluster('profilefs', system.parts) WHERE database = 'profilefs' AND active")

# 4. reads on the same data
echo
printf "%-30s %14s %14s %14s\n" "" "embedded" "cluster" "cluster again"
printf "%-30s %14s %14s %14s\n" "ingest profiles/s (HTTP ack)" "$rate_e" "$rate_c" "-"
printf "%-30s %14s %14s %14s\n" "ingest samples/s (HTTP ack)" \
  "$(awk -v r="$rate_e" -v p="$per" 'BEGIN {printf "%.0f", r * p}')" \
  "$(awk -v r="$rate_c" -v p="$per" 'BEGIN {printf "%.0f", r * p}')" "-"
printf "%-30s %14s %14s %14s\n" "into ClickHouse, end to end/s" "-" "$e2e" \
  "($(awk -v r="$e2e" -v p="$per" 'BEGIN {printf "%.0f", r * p}') samples/s)"
printf "%-30s %14s %14s %14s\n" "backlog drain profiles/s" "-" "$drain" "($N in $drain_ms ms)"
for r in last-1h last-24h last-7d; do
  a=$(ms cat "$TMP/mntE/weekapp/cpu/all/$r/merged.pb.gz")
  b=$(ms cat "$TMP/mntC/weekapp/cpu/all/$r/merged.pb.gz")
  sleep 1.1	# past the cluster's cache generation: a second full read
  c=$(ms cat "$TMP/mntC/weekapp/cpu/all/$r/merged.pb.gz")
  printf "%-30s %14s %14s %14s\n" "read $r merged.pb.gz ms" "$a" "$b" "$c"
done
# The first sample type's sum (the whole output is read: no SIGPIPE under pipefail).
first_sum() {
  go tool pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ {on = 1; getline; next} /^Locations/ {on = 0}
    on && /^ *-?[0-9]/ {s += $1} END {printf "%.0f\n", s}' || true
}
se=$(first_sum "$TMP/mntE/weekapp/cpu/all/last-7d/merged.pb.gz")
sc=$(first_sum "$TMP/mntC/weekapp/cpu/all/last-7d/merged.pb.gz")
echo
echo "last-7d sample counts: embedded $se, cluster $sc ($([ "$se" = "$sc" ] && echo equal || echo DIFFERENT))"
echo "cluster rows: $rows profiles ($s1 on shard 1, $s2 on shard 2), $bytes bytes on disk in ClickHouse" \
  "($(awk -v b="$bytes" -v r="$rows" -v p="$per" 'BEGIN {printf "%.2f", b / (r * p)}') bytes/sample, aggregates included)"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
