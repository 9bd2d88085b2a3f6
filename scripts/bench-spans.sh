#!/usr/bin/env bash
# Benchmark: what span ids (Pyroscope's span profiles, OTLP links) cost. An
# hour of one service's CPU profiles (one every 10 s, 360) in which every
# sample is tagged with one of 1,000,000 span ids (pprof labels span_id and
# span_name; each request burns 20 samples over 4 stacks of the service's
# 400), stored once with the span ids and once without them; then one span's
# flame graph over that hour, cold (a fresh process: the store's caches
# empty; with BENCH_DROP_CACHES=1 the kernel's page cache is dropped too).
# Prints, side by side, the bytes on disk per sample with and without span
# ids and the lookup times. Usage: scripts/bench-spans.sh [NSPANS] (default
# 1000000). Built with the project's flags into $BENCH_BUILD (default
# /tmp/profilefs-bench-build), without sanitizers.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NSPANS="${1:-1000000}"
OUT="${BENCH_BUILD:-/tmp/profilefs-bench-build}"
nice make -C "$ROOT" O="$OUT" -j2 tools >/dev/null
SB="$OUT/build/tests/tools/spanbench"
TMP="$(mktemp -d /tmp/profilefs-bench-spans.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT

sst() { find "$1" -name '*.sst' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
t0=$(date +%s.%N)
"$SB" put "$TMP/with" --spans "$NSPANS" >"$TMP/with.txt"
t1=$(date +%s.%N)
"$SB" put "$TMP/without" --no-spans --spans "$NSPANS" >"$TMP/without.txt"
t2=$(date +%s.%N)
read -r _ np _ ns _ rows _ ticks _ from <"$TMP/with.txt"
W=$(sst "$TMP/with") WO=$(sst "$TMP/without")
echo "workload: $np profiles over an hour, $ns span ids, $ticks samples (CPU ticks of 10 ms) in $rows pprof sample rows (span, stack)"
echo "ingest:   with span ids $(echo "$t1 - $t0" | bc) s, without $(echo "$t2 - $t1" | bc) s (360 store_put() calls, synced)"
printf '%-28s %16s %16s %16s\n' "" "with span ids" "without" "span ids alone"
printf '%-28s %16d %16d %16d\n' "bytes on disk (SST)" "$W" "$WO" "$((W - WO))"
awk -v w="$W" -v wo="$WO" -v t="$ticks" -v r="$rows" 'BEGIN {
  printf "%-28s %16.3f %16.3f %16.3f\n", "bytes per sample (tick)", w / t, wo / t, (w - wo) / t
  printf "%-28s %16.3f %16.3f %16.3f\n", "bytes per sample row", w / r, wo / r, (w - wo) / r
  printf "%-28s %16.1f %16s %16s\n", "bytes per span", (w - wo) / '"$ns"', "", "" }'
if [ "${BENCH_DROP_CACHES:-0}" = 1 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi
"$SB" get "$TMP/with" 7 "$NSPANS" "$from" >"$TMP/get.txt"
echo "one span's flame graph over the hour (query_merge with a span selector, fresh process):"
sed 's/^/  /' "$TMP/get.txt"
awk '{ print $3 }' "$TMP/get.txt" | sort -n | awk '{ a[NR] = $1 } END {
  printf "lookup: first (coldest) %s ms; median %s ms, max %s ms of %d lookups (target < 50 ms cold)\n", "'"$(awk 'NR==1 { print $3 }' "$TMP/get.txt")"'", a[int((NR + 1) / 2)], a[NR], NR }'
