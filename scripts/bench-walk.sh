#!/usr/bin/env bash
# Benchmark: users walking the tree of a week. Fills a week with
# scripts/bench-scale.sh's generator (real Go CPU profiles every 30 s for two
# label sets, 40,320 profiles), then, for each binary given, starts the daemon
# on a copy of that data and prints: the RSS at rest, `du -s` of the whole
# service (time, entries, the daemon's peak RSS), `grep -r` through every text
# file of the service (time, peak RSS), and the RSS after BENCH_WALK_IDLE
# seconds idle -- the old binary's figures beside the new one's.
#
# Usage: scripts/bench-walk.sh [DAYS]            (default 7)
#   PROFILEFS_BIN=bin/profilefs      the binary measured
#   PROFILEFS_BIN_OLD=/path/profilefs  an anchor (e.g. a build of main), optional
#   BENCH_WALK_DATA=DIR              a data directory filled before (kept), else
#                                    one is filled and removed at the end
#   BENCH_WALK_FLAGS="..."           extra daemon flags (default the packaged
#                                    file's --memory-limit, scripts/profilefs.default)
#   BENCH_WALK_IDLE=40               seconds idle before the last RSS
# RSS is VmRSS of /proc/PID/status; the peak is VmHWM, reset (clear_refs 5)
# before each walk when run as root.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
OLD="${PROFILEFS_BIN_OLD:-}"
DAYS="${1:-7}"
IDLE="${BENCH_WALK_IDLE:-40}"
DEFLIMIT=$(sed -n 's/.*--memory-limit[= ]\([0-9A-Za-z]*\).*/\1/p' "$ROOT/scripts/profilefs.default" | head -1)
FLAGS="${BENCH_WALK_FLAGS:---memory-limit ${DEFLIMIT:-256M}}"
TMP="$(mktemp -d /tmp/profilefs-bench-walk.XXXXXX)"
PID=
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; fi
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

DATA="${BENCH_WALK_DATA:-}"
if [ -z "$DATA" ] || [ ! -d "$DATA" ]; then
  DATA="${DATA:-$TMP/week}"
  echo "filling $DAYS days (scripts/bench-scale.sh's generator) ..."
  PROFILEFS_BIN="$BIN" BENCH_SCALE_KEEP="$DATA" BENCH_SCALE_FILL_ONLY=1 \
    bash "$ROOT/scripts/bench-scale.sh" "$DAYS" | grep -E '^(inputs|rate|windows)' || true
fi

rss() { awk '/^VmRSS:/ {printf "%d", $2 / 1024}' "/proc/$PID/status"; }
hwm() { awk '/^VmHWM:/ {printf "%d", $2 / 1024}' "/proc/$PID/status"; }
resethwm() { echo 5 > "/proc/$PID/clear_refs" 2>/dev/null || true; }
cpus() { awk '{printf "%.1f", ($14 + $15) / 100}' "/proc/$PID/stat"; }
secs() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); awk -v d=$((t1 - t0)) 'BEGIN {printf "%.1f", d / 1e9}'; }

# run NAME BINARY: one daemon on a copy of the data; figures into R_NAME_*.
run() {
  local name=$1 bin=$2
  rm -rf "$TMP/data" "$TMP/log"; cp -a "$DATA" "$TMP/data"; mkdir -p "$TMP/mnt"
  # shellcheck disable=SC2086
  "$bin" serve --data "$TMP/data" --http 127.0.0.1:0 $FLAGS "$TMP/mnt" 2>>"$TMP/log" &
  PID=$!
  for _ in $(seq 1 300); do [ -r "$TMP/mnt/README.txt" ] && break; sleep 0.1; done
  sleep 2
  local S="$TMP/mnt/weekapp" rest du1 du1peak du2 n grp grppeak idle cpu0
  rest=$(rss)
  resethwm; cpu0=$(cpus)
  du1=$(secs timeout 900 du -s "$S"); du1peak=$(hwm)
  du2=$(secs timeout 900 du -s "$S")
  n=$(timeout 900 find "$S" | wc -l)
  resethwm
  grp=$(secs timeout 900 grep -rl --include='*.txt' main.main "$S"); grppeak=$(hwm)
  local cpu1; cpu1=$(cpus)
  sleep "$IDLE"
  idle=$(rss)
  eval "R_${name}=\"$rest $du1 $du2 $n $du1peak $grp $grppeak $idle $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.1f", b - a}')\""
  echo "$name: du -s of the service $(du -s "$S" 2>/dev/null | cut -f1) KiB; the data directory $(du -sk "$TMP/data" | cut -f1) KiB"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
}

[ -n "$OLD" ] && run old "$OLD"
run new "$BIN"

echo
echo "walking a week ($DAYS days, 2 label sets, 30 s cadence; daemon flags: $FLAGS; $(nproc) cores)"
printf "%-44s %12s %12s\n" "" "${OLD:+old}" "new"
row() {
  local label=$1 i=$2 o="" nw
  # shellcheck disable=SC2086
  [ -n "$OLD" ] && o=$(set -- ${R_old}; eval echo "\${$i}")
  # shellcheck disable=SC2086
  nw=$(set -- ${R_new}; eval echo "\${$i}")
  printf "%-44s %12s %12s\n" "$label" "$o" "$nw"
}
row "RSS at rest (MiB)" 1
row "du -s of the service, first (s)" 2
row "du -s again (s)" 3
row "entries (find | wc -l)" 4
row "peak RSS during the first du (MiB)" 5
row "grep -rl --include='*.txt' (s)" 6
row "peak RSS during grep (MiB)" 7
row "RSS after ${IDLE} s idle (MiB)" 8
row "daemon CPU over du, find and grep (s)" 9
