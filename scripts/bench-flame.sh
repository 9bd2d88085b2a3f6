#!/usr/bin/env bash
# Benchmark: flamegraph.svg against merged.pb.gz for a range of 360 real Go
# CPU profiles, each read cold (a range the daemon has not served before, so
# both include the merge). Runs alternate; prints each time, the medians and
# the ratio (target: flamegraph <= 1.5x merged). Then checks that `ls -l` of a
# fresh range merges it (and the range before it, for diff.*) at most once,
# from the daemon's -v log. Usage: scripts/bench-flame.sh [RUNS] (default 5).
# The profiles are generated once (about 6 minutes of CPU) into
# $BENCH_PROFILES (default /tmp/profilefs-bench-cpu) and reused, as
# scripts/bench-merge.sh does.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
RUNS="${1:-5}"
N=360
PROFILES="${BENCH_PROFILES:-/tmp/profilefs-bench-cpu}"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}"

[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt "$N" ]; then
  echo "generating $N Go CPU profiles (1 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/genprof" && go build -o /tmp/profilefs-genprof .)
  /tmp/profilefs-genprof -out "$PROFILES" -n "$N" -dur 1s -hz 1000 -other=false 2>/dev/null
fi
files=$(ls "$PROFILES"/cpu-*.pb.gz | head -n "$N")
echo "inputs: $N Go CPU profiles, $(stat -c %s $files | awk '{s+=$1} END {printf "%.1f MB total", s/1e6}')"

TMP="$(mktemp -d /tmp/profilefs-bench.XXXXXX)"
cleanup() {
  if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/mnt"
"$BIN" serve -v --data "$TMP/data" "$TMP/mnt" 2>"$TMP/log" &
PID=$!
for i in $(seq 1 100); do [ -r "$TMP/mnt/README.txt" ] && break; sleep 0.1; done
for f in $files; do cp "$f" "$TMP/mnt/ingest/bench/cpu/"; done
D="$TMP/mnt/bench/cpu/all"

# Each read asks for a range starting a minute earlier than any before, so
# neither the merge nor the file is cached.
first=$(ls "$D/all/profiles" | awk 'NR == 1 {print substr($0, 1, 16)}')
end=$(date -u -d '+2 min' +%Y-%m-%dT%H:%M)
start_s=$(date -u -d "${first/T/ } UTC" +%s)
range() { echo "$(date -u -d "@$((start_s - $1 * 60))" +%Y-%m-%dT%H:%M)..$end"; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

flame=(); merged=()
for r in $(seq 1 "$RUNS"); do
  a=$(date +%s%N); cat "$D/$(range $((2 * r)))/flamegraph.svg" > "$TMP/f.svg"; b=$(date +%s%N)
  cat "$D/$(range $((2 * r + 1)))/merged.pb.gz" > "$TMP/m.pb.gz"; c=$(date +%s%N)
  flame+=($(ms "$a" "$b")); merged+=($(ms "$b" "$c"))
  echo "run $r: flamegraph.svg ${flame[-1]} ms ($(stat -c %s "$TMP/f.svg") bytes)   merged.pb.gz ${merged[-1]} ms"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mf=$(med "${flame[@]}"); mm=$(med "${merged[@]}")
echo "median: flamegraph.svg ${mf} ms, merged.pb.gz ${mm} ms"
echo "ratio (flamegraph / merged): $(echo "scale=2; $mf / $mm" | bc)x (target <= 1.5x)"

# ls -l of a fresh range: every file rendered, each merge at most once.
rg=$(range $((2 * RUNS + 2)))
a=$(date +%s%N); ls -l "$D/$rg" > /dev/null; b=$(date +%s%N)
cur=$(grep -c "views: merge bench/cpu/all/$rg:" "$TMP/log" || true)
prev=$(grep -c "views: merge bench/cpu/all/before-$rg:" "$TMP/log" || true)
echo "ls -l of a fresh range: $(ms "$a" "$b") ms; merges of the range: $cur, of the range before: $prev (want 1 and at most 1)"
[ "$cur" -eq 1 ] && [ "$prev" -le 1 ] && echo "check: each merge at most once" || echo "check: MERGED MORE THAN ONCE"
