#!/usr/bin/env bash
# Benchmark: ingest over HTTP (profefe's POST /api/0/profiles) of real 5-15 KB
# Go CPU profiles from 32 keep-alive connections, against the store's ceiling:
# the same profiles handed to store_put() in a loop by a minimal C program
# (1 thread, and 32 threads so that RocksDB can group-commit as it does for
# the HTTP server's connection threads). Every store_put() is a synced write.
# Prints profiles/s and latency percentiles of each, and the ratios.
#
# Usage: scripts/bench-http.sh [N]   (N profiles per run, default 20000)
# The profiles are generated once (about 70 s of CPU) into
# $BENCH_HTTP_PROFILES (default /tmp/profilefs-bench-http-cpu) and reused.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
B="${PROFILEFS_BUILD:-$ROOT/build}"
N="${1:-20000}"
CONNS=32
PROFILES="${BENCH_HTTP_PROFILES:-/tmp/profilefs-bench-http-cpu}"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" GOFLAGS=-mod=mod

make -C "$ROOT" -j2 "$BIN" tools >/dev/null
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt 32 ]; then
  echo "generating 32 Go CPU profiles (2 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/gencpu" && go build -o /tmp/profilefs-gencpu .)
  /tmp/profilefs-gencpu -out "$PROFILES" -n 32 -dur 2s 2>/dev/null
fi
files=$(for f in "$PROFILES"/cpu-*.pb.gz; do s=$(stat -c %s "$f"); [ "$s" -ge 5000 ] && [ "$s" -le 15000 ] && echo "$f"; done)
nf=$(echo "$files" | grep -c . || true)
[ "$nf" -ge 8 ] || { echo "fewer than 8 profiles of 5-15 KB in $PROFILES: remove it to regenerate"; exit 1; }
echo "inputs: $nf Go CPU profiles (runtime/pprof), $(stat -c %s $files | sort -n | awk '{a[NR]=$1} END {printf "%d..%d bytes, median %d", a[1], a[NR], a[int((NR+1)/2)]}')"

TMP="$(mktemp -d /tmp/profilefs-bench.XXXXXX)"
cleanup() {
  if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; fi
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
cp "$B/tests/tools/httpload" "$B/tests/tools/storeput" "$TMP/"

# --- over HTTP ------------------------------------------------------------------
mkdir -p "$TMP/mnt"
"$BIN" serve --data "$TMP/data" --http 127.0.0.1:0 "$TMP/mnt" 2>"$TMP/log" &
PID=$!
for i in $(seq 1 100); do grep -q "listening on" "$TMP/log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/log")
[ -n "$PORT" ] || { cat "$TMP/log"; exit 1; }
# shellcheck disable=SC2086
"$TMP/httpload" -c $CONNS -n 1000 -t 60 -p '/api/0/profiles?service=warmup&type=cpu' 127.0.0.1 "$PORT" $files >/dev/null
# shellcheck disable=SC2086
"$TMP/httpload" -c $CONNS -n "$N" -t 600 -p '/api/0/profiles?service=bench&type=cpu&labels=conn={c}' \
  127.0.0.1 "$PORT" $files | tee "$TMP/http.out"
rss=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true

# --- the store's ceiling: store_put() in a loop ------------------------------------
echo "store_put() loop, 1 thread:"
# shellcheck disable=SC2086
"$TMP/storeput" -t 1 -n $(( N < 5000 ? N : 5000 )) "$TMP/ceiling1" $files | tee "$TMP/c1.out"
echo "store_put() loop, $CONNS threads:"
# shellcheck disable=SC2086
"$TMP/storeput" -t $CONNS -n "$N" "$TMP/ceiling32" $files | tee "$TMP/c32.out"

rate() { sed -n 's/^rate \([0-9]*\).*/\1/p' "$1"; }
p99() { sed -n 's/.* p99 \([0-9.]*\).*/\1/p' "$1"; }
h=$(rate "$TMP/http.out"); c1=$(rate "$TMP/c1.out"); c32=$(rate "$TMP/c32.out")
echo
echo "summary ($(nproc) cores, $N profiles of 5-15 KB, $CONNS connections):"
echo "  HTTP ingest:              $h profiles/s, p99 $(p99 "$TMP/http.out") ms (daemon peak RSS $((rss / 1024)) MiB)"
echo "  store_put, 1 thread:      $c1 profiles/s, p99 $(p99 "$TMP/c1.out") ms"
echo "  store_put, $CONNS threads:    $c32 profiles/s, p99 $(p99 "$TMP/c32.out") ms"
echo "  HTTP / ceiling ($CONNS threads): $(awk -v a="$h" -v b="$c32" 'BEGIN {printf "%.0f%%", 100 * a / b}')"
echo "  HTTP / ceiling (1 thread):  $(awk -v a="$h" -v b="$c1" 'BEGIN {printf "%.0f%%", 100 * a / b}')"
