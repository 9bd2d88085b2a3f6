#!/usr/bin/env bash
# Benchmark: Grafana's query API over long ranges. Pushes DAYS (default 7)
# of real Go CPU profiles (tests/go/gencpu) at a 30 s cadence for two pods
# through the HTTP API with past created_at times, waits for the
# pre-aggregated windows, restarts the daemon, and prints, medians of RUNS
# (default 5) runs, cold (the first read after a restart; the page cache
# dropped when run as root) and warm (the same read again):
#
#   SelectMergeStacktraces over the last 7 days   beside the tree's last-7d/merged.pb.gz
#   SelectSeries over the last 30 days, 1 h step  beside the tree's last-30d/timeline.csv
#
# each call checked to answer 200 with data. The API is called as Grafana
# calls it, in protobuf (application/proto; the requests encoded by protoc
# from api/proto), and once more in JSON for comparison. Targets: <= 100 ms each.
#
# Usage: scripts/bench-grafana.sh [DAYS [RUNS]]
# BENCH_GRAFANA_KEEP=DIR keeps the data directory there for further experiments.
# BENCH_BASE_BIN=FILE times another build (an earlier commit's bin/profilefs) on
# the same data, each of its runs right after the tested build's: on a shared
# machine the pair sees the same load, where two separate runs would not.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
BASE_BIN="${BENCH_BASE_BIN:-}"
DBIN="$BIN"
DAYS="${1:-7}"
RUNS="${2:-5}"
STEP=30
K=2
N=$((DAYS * 86400 / STEP * K))
PROFILES="${BENCH_SCALE_PROFILES:-/tmp/profilefs-bench-scale-cpu}"
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" GOFLAGS=-mod=mod

[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
[ -z "$BASE_BIN" ] || [ -x "$BASE_BIN" ] || { echo "BENCH_BASE_BIN $BASE_BIN: not an executable" >&2; exit 1; }
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt 64 ]; then
  echo "generating 64 Go CPU profiles (1 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/gencpu" && go build -o /tmp/profilefs-gencpu .)
  /tmp/profilefs-gencpu -out "$PROFILES" -n 64 -dur 1s 2>/dev/null
fi
files=$(ls "$PROFILES"/cpu-*.pb.gz)
TMP="$(mktemp -d /tmp/profilefs-bench-grafana.XXXXXX)"
cleanup() {
  if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; fi
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
  if [ -n "${BENCH_GRAFANA_KEEP:-}" ] && [ -d "$TMP/data" ]; then
    rm -rf "$BENCH_GRAFANA_KEEP"; mv "$TMP/data" "$BENCH_GRAFANA_KEEP"
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c"

start_daemon() {
  mkdir -p "$TMP/mnt"
  : >"$TMP/log"
  "$DBIN" serve --data "$TMP/data" --http 127.0.0.1:0 "$TMP/mnt" 2>>"$TMP/log" &
  PID=$!
  for _ in $(seq 1 300); do [ -r "$TMP/mnt/README.txt" ] && grep -q "listening on" "$TMP/log" && break; sleep 0.1; done
  PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/log" | tail -1)
  Q="http://127.0.0.1:$PORT/querier.v1.QuerierService"
}
stop_daemon() {
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
}
restart_cold() {
  stop_daemon
  if [ "$(id -u)" = 0 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
  start_daemon
}
# file read time in ms (the read's bytes to /dev/null)
ms_cat() { local t0 t1; t0=$(date +%s%N); cat "$1" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
# ms_api METHOD FILE [TYPE]: the call's time in ms (FILE the body, TYPE json or
# proto, default proto); the reply kept in $TMP/body
ms_api() {
  local out
  out=$(curl -s -o "$TMP/body" -w '%{http_code} %{time_total}' -X POST \
    -H "Content-Type: application/${3:-proto}" "$Q/$1" --data-binary "@$2")
  [ "${out%% *}" = 200 ] || { echo "$1: HTTP ${out%% *}: $(head -c 300 "$TMP/body")" >&2; exit 1; }
  awk -v t="${out#* }" 'BEGIN {printf "%d", t * 1000 + 0.5}'
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

start_daemon
now=$(date +%s)
base=$((now - DAYS * 86400))
# shellcheck disable=SC2086
"$TMP/httpload" -c 32 -n "$N" -t 3600 -T "$base,$STEP,$K" \
  -p '/api/0/profiles?service=weekapp&type=cpu&labels=pod=api-{k}&created_at={t}' \
  127.0.0.1 "$PORT" $files | tail -1
t0=$(date +%s); idle=0
while [ $idle -lt 2 ] && [ $(( $(date +%s) - t0 )) -lt 900 ]; do
  sleep 1
  p=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^profilefs_store_windows_pending / {print $2}')
  if [ "${p:-1}" = 0 ]; then idle=$((idle + 1)); else idle=0; fi
done
echo "windows caught up $(( $(date +%s) - t0 )) s after the last push"

PROTO=(-I"$ROOT/pprof" -I"$ROOT/api/proto" "$ROOT/api/proto/querier/v1/querier.proto")
end_ms=$(( $(date +%s) * 1000 ))
SMS="{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"weekapp\\\"}\",\"start\":\"$((end_ms - 7 * 86400000))\",\"end\":\"$end_ms\",\"maxNodes\":\"16384\"}"
SS="{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"weekapp\\\"}\",\"start\":\"$((end_ms - 30 * 86400000))\",\"end\":\"$end_ms\",\"step\":3600,\"groupBy\":[\"pod\"]}"
echo "$SMS" >"$TMP/sms.json"; echo "$SS" >"$TMP/ss.json"
jq -r '"profile_typeID: \"\(.profileTypeID)\" label_selector: \(.labelSelector | tojson) start: \(.start) end: \(.end) max_nodes: \(.maxNodes)"' \
  "$TMP/sms.json" | protoc "${PROTO[@]}" --encode=querier.v1.SelectMergeStacktracesRequest >"$TMP/sms.bin"
jq -r '"profile_typeID: \"\(.profileTypeID)\" label_selector: \(.labelSelector | tojson) start: \(.start) end: \(.end) step: \(.step) group_by: \"pod\""' \
  "$TMP/ss.json" | protoc "${PROTO[@]}" --encode=querier.v1.SelectSeriesRequest >"$TMP/ss.bin"
R="$TMP/mnt/weekapp/cpu/all"
declare -A cold warm json
for run in $(seq 1 "$RUNS"); do
  restart_cold
  cold[sms]+="$(ms_api SelectMergeStacktraces "$TMP/sms.bin") "; warm[sms]+="$(ms_api SelectMergeStacktraces "$TMP/sms.bin") "
  json[sms]+="$(ms_api SelectMergeStacktraces "$TMP/sms.json" json) "
  [ "$run" = 1 ] && jq -r '"  SelectMergeStacktraces: total \(.flamegraph.total) ns, \(.flamegraph.names | length) names, \([.flamegraph.levels[].values | length / 4] | add) nodes"' "$TMP/body"
  if [ -n "$BASE_BIN" ]; then
    DBIN="$BASE_BIN"; restart_cold
    cold[bsms]+="$(ms_api SelectMergeStacktraces "$TMP/sms.bin") "; warm[bsms]+="$(ms_api SelectMergeStacktraces "$TMP/sms.bin") "
    DBIN="$BIN"
  fi
  restart_cold
  cold[ss]+="$(ms_api SelectSeries "$TMP/ss.bin") "; warm[ss]+="$(ms_api SelectSeries "$TMP/ss.bin") "
  json[ss]+="$(ms_api SelectSeries "$TMP/ss.json" json) "
  [ "$run" = 1 ] && jq -r '"  SelectSeries: \(.series | length) series, \([.series[].points | length] | add) points"' "$TMP/body"
  if [ -n "$BASE_BIN" ]; then
    DBIN="$BASE_BIN"; restart_cold
    cold[bss]+="$(ms_api SelectSeries "$TMP/ss.bin") "; warm[bss]+="$(ms_api SelectSeries "$TMP/ss.bin") "
    DBIN="$BIN"
  fi
  restart_cold
  cold[merged]+="$(ms_cat "$R/last-7d/merged.pb.gz") "; warm[merged]+="$(ms_cat "$R/last-7d/merged.pb.gz") "
  restart_cold
  cold[tl]+="$(ms_cat "$R/last-30d/timeline.csv") "; warm[tl]+="$(ms_cat "$R/last-30d/timeline.csv") "
done
stop_daemon

echo
echo "$(nproc) cores, $DAYS days of 2 pods at ${STEP} s ($N profiles), medians of $RUNS runs:"
printf "%-52s %9s %9s %8s\n" "read" "cold ms" "warm ms" "target"
row() { printf "%-52s %9s %9s %8s\n" "$1" "$(median <<<"${cold[$2]}")" "$(median <<<"${warm[$2]}")" "$3"; }
row "API SelectMergeStacktraces, 7 days (proto)" sms "<= 100"
printf "%-52s %9s %9s\n" "  the same in JSON" "" "$(median <<<"${json[sms]}")"
[ -n "$BASE_BIN" ] && row "  the same by BENCH_BASE_BIN" bsms ""
row "tree last-7d/merged.pb.gz (same range)" merged ""
row "API SelectSeries, 30 days, 1 h step (proto)" ss "<= 100"
printf "%-52s %9s %9s\n" "  the same in JSON" "" "$(median <<<"${json[ss]}")"
[ -n "$BASE_BIN" ] && row "  the same by BENCH_BASE_BIN" bss ""
row "tree last-30d/timeline.csv (same range)" tl ""
echo "(all runs, cold: sms ${cold[sms]}| ss ${cold[ss]}| merged ${cold[merged]}| timeline ${cold[tl]}${BASE_BIN:+| base sms ${cold[bsms]}| base ss ${cold[bss]}})"
