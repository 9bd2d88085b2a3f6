#!/usr/bin/env bash
# Benchmark: storage at scale. Pushes a week of real Go CPU profiles
# (runtime/pprof, from tests/go/gencpu) at a 30 s cadence for 2 label sets
# (pod=0, pod=1), 64 distinct profiles pushed round-robin, through the HTTP API with past created_at times, waits for
# the pre-aggregated windows, restarts the daemon, and prints side by side:
# cold and warm reads of last-7d, last-24h and an unaligned FROM..TO
# (merged.pb.gz, flamegraph.svg), ls -l of last-7d, du -s, go tool pprof -proto on
# a known fraction of the same profiles (scaled to all of them), bytes on
# disk per ingested sample and per ingested byte, the ingest rate, and read
# time against range length (5 minutes to 30 days).
#
# Usage: scripts/bench-scale.sh [DAYS]   (default 7)
# "cold" is the first read after a restart of the daemon (page cache kept
# unless run as root, which drops it). BENCH_SCALE_KEEP=DIR keeps the data
# directory there for further experiments; with BENCH_SCALE_FILL_ONLY=1 too,
# the script stops once the week is stored (scripts/bench-walk.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
DAYS="${1:-7}"
STEP=30
K=2
N=$((DAYS * 86400 / STEP * K))
PROFILES="${BENCH_SCALE_PROFILES:-/tmp/profilefs-bench-scale-cpu}"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" GOFLAGS=-mod=mod

[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt 64 ]; then
  echo "generating 64 Go CPU profiles (1 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/gencpu" && go build -o /tmp/profilefs-gencpu .)
  /tmp/profilefs-gencpu -out "$PROFILES" -n 64 -dur 1s 2>/dev/null
fi
files=$(ls "$PROFILES"/cpu-*.pb.gz)
TMP="$(mktemp -d /tmp/profilefs-bench-scale.XXXXXX)"
cleanup() {
  if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; fi
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
  if [ -n "${BENCH_SCALE_KEEP:-}" ] && [ -d "$TMP/data" ]; then
    rm -rf "$BENCH_SCALE_KEEP"; mv "$TMP/data" "$BENCH_SCALE_KEEP"
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c"

# Samples and bytes per input file, then per push (round-robin over the files).
tot_samples=0; tot_bytes=0; nf=0
declare -a fs fb
for f in $files; do
  s=$(go tool pprof -raw "$f" 2>/dev/null | awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /^ *[0-9-]+ /' | wc -l)
  fs[$nf]=$s; fb[$nf]=$(stat -c %s "$f"); nf=$((nf + 1))
done
tot_samples=$(awk -v n="$N" -v nf="$nf" -v list="${fs[*]}" 'BEGIN {split(list, a, " "); for (i = 0; i < n; i++) t += a[i % nf + 1]; print t}')
tot_bytes=$(awk -v n="$N" -v nf="$nf" -v list="${fb[*]}" 'BEGIN {split(list, a, " "); for (i = 0; i < n; i++) t += a[i % nf + 1]; print t}')
echo "inputs: $nf Go CPU profiles, samples per profile ${fs[*]}; $N pushes = $tot_samples samples, $tot_bytes bytes"

start_daemon() {
  mkdir -p "$TMP/mnt"
  "$BIN" serve --data "$TMP/data" --http 127.0.0.1:0 "$TMP/mnt" 2>>"$TMP/log" &
  PID=$!
  for _ in $(seq 1 300); do [ -r "$TMP/mnt/README.txt" ] && grep -q "listening on" "$TMP/log" && break; sleep 0.1; done
  PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/log" | tail -1)
}
stop_daemon() {
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
}
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }

start_daemon
now=$(date +%s)
base=$((now - DAYS * 86400))
# shellcheck disable=SC2086
"$TMP/httpload" -c 32 -n "$N" -t 3600 -T "$base,$STEP,$K" \
  -p '/api/0/profiles?service=weekapp&type=cpu&labels=pod={k}&created_at={t}' \
  127.0.0.1 "$PORT" $files | tee "$TMP/ingest.out"
rate=$(sed -n 's/^rate \([0-9]*\).*/\1/p' "$TMP/ingest.out")
# Wait until the compactor has caught up (two passes with nothing to do).
t0=$(date +%s); idle=0
while [ $idle -lt 2 ] && [ $(( $(date +%s) - t0 )) -lt 900 ]; do
  sleep 1
  p=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^profilefs_store_windows_pending / {print $2}')
  if [ "${p:-1}" = 0 ]; then idle=$((idle + 1)); else idle=0; fi
done
echo "windows caught up $(( $(date +%s) - t0 )) s after the last push"
stop_daemon
# BENCH_SCALE_FILL_ONLY=1 (with BENCH_SCALE_KEEP): only fill, for bench-walk.sh.
if [ -n "${BENCH_SCALE_FILL_ONLY:-}" ]; then exit 0; fi
disk=$(du -sb "$TMP/data" | cut -f1)
if [ "$(id -u)" = 0 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
start_daemon

R="$TMP/mnt/weekapp/cpu/all"
from=$(date -u -d "@$((now - 3 * 86400 - 1234))" +%Y-%m-%dT%H:%M:%S)
to=$(date -u -d "@$((now - 86400 + 777))" +%Y-%m-%dT%H:%M:%S)
echo
printf "%-34s %10s %10s\n" "read" "cold ms" "warm ms"
for r in last-7d last-24h "$from..$to"; do
  for f in merged.pb.gz flamegraph.svg; do
    c=$(ms cat "$R/$r/$f"); w=$(ms cat "$R/$r/$f")
    printf "%-34s %10s %10s\n" "$r/$f" "$c" "$w"
    if [ "$r/$f" = last-7d/merged.pb.gz ]; then c7=$c; w7=$w; fi
  done
done
l1=$(ms ls -l "$R/last-7d/"); l2=$(ms ls -l "$R/last-7d/")
printf "%-34s %10s %10s\n" "ls -l last-7d/" "$l1" "$l2"
# du -s walks every listed range (presets, days, hours) and stats every file
# in them, generated ones included: one day of one series, then the service.
day=$(date -u -d "@$((now - 86400))" +%Y-%m-%d)
u1=$(ms du -s "$TMP/mnt/weekapp/cpu/pod=0/$day"); u2=$(ms du -s "$TMP/mnt/weekapp/cpu/pod=0/$day")
printf "%-34s %10s %10s\n" "du -s pod=0/$day" "$u1" "$u2"
s1=$(ms timeout 900 du -s "$TMP/mnt/weekapp"); s2=$(ms timeout 900 du -s "$TMP/mnt/weekapp")
nfiles=$(find "$TMP/mnt/weekapp" 2>/dev/null | wc -l)
printf "%-34s %10s %10s\n" "du -s weekapp ($nfiles entries)" "$s1" "$s2"

# go tool pprof -proto on a fraction of the week's profiles, scaled.
FRAC=20
mkdir -p "$TMP/exp"
ls "$R/last-7d/profiles/" | awk -v f=$FRAC 'NR % f == 0' | head -n $((N / FRAC)) > "$TMP/list"
while read -r p; do cp "$R/last-7d/profiles/$p" "$TMP/exp/"; done < "$TMP/list"
ne=$(ls "$TMP/exp" | wc -l)
t0=$(date +%s%N)
go tool pprof -proto "$TMP"/exp/*.pb.gz > "$TMP/pp.pb.gz" 2>/dev/null
pp=$((($(date +%s%N) - t0) / 1000000))
pp_all=$((pp * N / (ne > 0 ? ne : 1)))
echo
echo "go tool pprof -proto of $ne profiles: $pp ms; scaled to all $N: $pp_all ms"

echo
echo "read time against range length (merged.pb.gz, first read of each):"
for r in last-5m last-1h last-6h last-24h last-3d last-7d last-30d; do
  printf "  %-10s %6s ms\n" "$r" "$(ms cat "$R/$r/merged.pb.gz")"
done
stop_daemon

echo
echo "summary ($(nproc) cores, $DAYS days, $K label sets, ${STEP} s cadence, $N profiles):"
echo "  ingest over HTTP (32 connections, synced puts): $rate profiles/s"
echo "  on disk: $disk bytes = $(awk -v d="$disk" -v s="$tot_samples" 'BEGIN {printf "%.2f", d / s}') bytes/sample," \
  "$(awk -v d="$disk" -v b="$tot_bytes" 'BEGIN {printf "%.3f", d / b}') bytes per ingested byte (windows included)"
echo "  last-7d merged.pb.gz: cold $c7 ms, warm $w7 ms; go tool pprof -proto on the same files: ~$pp_all ms" \
  "($(awk -v a="$pp_all" -v b="${c7:-1}" 'BEGIN {printf "%.0fx", a / (b > 0 ? b : 1)}') the cold read)"
echo "  ls -l last-7d/: cold $l1 ms, warm $l2 ms"
echo "  du -s of one day of one series: cold $u1 ms, warm $u2 ms; du -s of the whole service" \
  "($nfiles entries, each profile in every range that holds it): $s1 ms, again $s2 ms"
echo "  (inputs repeat every $nf pushes: zstd finds the repeats, so real fleets store more per sample)"
