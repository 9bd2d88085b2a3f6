#!/usr/bin/env bash
# Benchmark: merged.pb.gz over 360 real Go CPU profiles, read for a range the
# daemon has not served before, against `go tool pprof -proto` merging the
# same 360 files. Runs alternate; prints each time, the medians, the ratio and
# the daemon's peak RSS. Usage: scripts/bench-merge.sh [RUNS] (default 5).
# The profiles are generated once (about 6 minutes of CPU) into
# $BENCH_PROFILES (default /tmp/profilefs-bench-cpu) and reused.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
RUNS="${1:-5}"
N=360
PROFILES="${BENCH_PROFILES:-/tmp/profilefs-bench-cpu}"
source "$ROOT/tests/pprof-sums.sh"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" PPROF_BINARY_PATH=/nonexistent

[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt "$N" ]; then
  echo "generating $N Go CPU profiles (1 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/genprof" && go build -o /tmp/profilefs-genprof .)
  /tmp/profilefs-genprof -out "$PROFILES" -n "$N" -dur 1s -hz 1000 -other=false 2>/dev/null
fi
files=$(ls "$PROFILES"/cpu-*.pb.gz | awk -v n="$N" "NR <= n")
sizes=$(stat -c %s $files | sort -n)
echo "inputs: $N Go CPU profiles, $(echo "$sizes" | awk '{s+=$1} END {printf "%.1f MB total", s/1e6}'), median $(echo "$sizes" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') bytes each"

TMP="$(mktemp -d /tmp/profilefs-bench.XXXXXX)"
cleanup() { [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; sleep 0.5; fusermount3 -u -z "$TMP/mnt" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
mkdir -p "$TMP/mnt"
"$BIN" serve --data "$TMP/data" "$TMP/mnt" 2>"$TMP/log" &
PID=$!
for i in $(seq 1 100); do head -c 9 "$TMP/mnt/README.txt" 2>/dev/null | grep -q profilefs && break; sleep 0.1; done
t0=$(date +%s.%N)
for f in $files; do cp "$f" "$TMP/mnt/ingest/bench/cpu/"; done
t1=$(date +%s.%N)
echo "ingest: $N profiles through cp in $(echo "$t1 - $t0" | bc) s"

# The profiles' times span a known window; each run asks for a range starting
# one minute earlier, so its merge has never been served (no cache hit).
first=$(ls "$TMP/mnt/bench/cpu/all/all/profiles" | awk "NR == 1 {print substr(\$0, 1, 16)}")
end=$(date -u -d '+2 min' +%Y-%m-%dT%H:%M)
start_s=$(date -u -d "${first/T/ } UTC" +%s)

go tool pprof -proto $files > "$TMP/go.pb.gz" 2>/dev/null
want=$(pprof_sums "$TMP/go.pb.gz")
ours=(); theirs=()
for r in $(seq 1 "$RUNS"); do
  from=$(date -u -d "@$((start_s - r * 60))" +%Y-%m-%dT%H:%M)
  p="$TMP/mnt/bench/cpu/all/$from..$end/merged.pb.gz"
  a=$(date +%s%N); cat "$p" > "$TMP/ours.pb.gz"; b=$(date +%s%N)
  go tool pprof -proto $files > "$TMP/go.pb.gz" 2>/dev/null; c=$(date +%s%N)
  ours+=($(( (b - a) / 1000000 ))); theirs+=($(( (c - b) / 1000000 )))
  echo "run $r: profilefs merged.pb.gz ${ours[-1]} ms   go tool pprof -proto ${theirs[-1]} ms"
done
got=$(pprof_sums "$TMP/ours.pb.gz")
[ "$got" == "$want" ] && echo "check: sums equal ($got)" || echo "check: SUMS DIFFER: ours '$got' go '$want'"
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mo=$(med "${ours[@]}"); mt=$(med "${theirs[@]}")
rss=$(awk '/VmHWM/ {print $2}' /proc/$PID/status)
echo "median: profilefs ${mo} ms, go tool pprof -proto ${mt} ms"
echo "ratio (go / profilefs): $(echo "scale=2; $mt / $mo" | bc)x (target >= 3x)"
echo "daemon peak RSS: $((rss / 1024)) MiB"
