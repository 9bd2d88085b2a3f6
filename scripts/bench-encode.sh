#!/usr/bin/env bash
# Benchmark: the pprof encoder (protobuf-c, pprof/pprof.c) against the packed
# encoder written by hand that it replaced (kept in tests/tools/encbench.c), on
# the real profiles of tests/testdata/real and on one merge of Go CPU profiles.
# encbench checks that both outputs decode to the profile encoded, then times
# both (alternating); this script runs it RUNS times and prints each run's
# total, the medians and the ratio, then the last run's table (time per encode,
# heap allocations and peak heap KB per encode) and one run with gzip.
# Usage: scripts/bench-encode.sh [RUNS] (default 5).
# Built without sanitizers in $BENCH_BUILD (default /tmp/profilefs-bench-build);
# the Go profiles are generated once (about 40 s) into $BENCH_ENC_PROFILES
# (default /tmp/profilefs-bench-enc) and reused.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${1:-5}"
N=60
BUILD="${BENCH_BUILD:-/tmp/profilefs-bench-build}"
PROFILES="${BENCH_ENC_PROFILES:-/tmp/profilefs-bench-enc}"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}"

REAL="$ROOT/../shared/testdata/real"
[ -d "$REAL" ] || REAL="$ROOT/tests/testdata/real"
REAL="$(cd "$REAL" && pwd)"

# Heap figures need an uninstrumented build: ignore SANITIZE from the caller.
env -u SANITIZE -u WERROR make -C "$ROOT" -j2 O="$BUILD" "$BUILD/build/tests/tools/encbench" >/dev/null
BENCH="$BUILD/build/tests/tools/encbench"

if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt "$N" ]; then
  echo "generating $N Go CPU profiles (0.5 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/genprof" && go build -o /tmp/profilefs-genprof .)
  /tmp/profilefs-genprof -out "$PROFILES" -n "$N" -dur 500ms -hz 1000 -other=false 2>/dev/null
fi
# The refused profile (functions with id 0) is skipped by encbench with a message.
# encbench runs in $REAL, so the table names files relative to it.
cd "$REAL"
files=$(find . -type f ! -name '*.md' | sed 's|^\./||' | sort)
echo "inputs: $(echo "$files" | wc -l) real profiles from $REAL (encbench skips any the decoder refuses), and $N Go CPU profiles merged"

hand=(); pbc=()
TMP="$(mktemp /tmp/profilefs-encbench.XXXXXX)"
trap 'rm -f "$TMP"' EXIT
for r in $(seq 1 "$RUNS"); do
  "$BENCH" -n 9 -m "$PROFILES" $files >"$TMP" 2>/dev/null || { cat "$TMP"; "$BENCH" -n 1 -m "$PROFILES" $files; exit 1; }
  line=$(grep '^total:' "$TMP")
  hand+=($(echo "$line" | awk '{print $3}')); pbc+=($(echo "$line" | awk '{print $6}'))
  echo "run $r: hand-written ${hand[-1]} us   protobuf-c ${pbc[-1]} us   (sum over inputs of the median per encode)"
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mh=$(med "${hand[@]}"); mp=$(med "${pbc[@]}")
echo "median: hand-written ${mh} us, protobuf-c ${mp} us"
echo "ratio (protobuf-c / hand-written): $(awk -v p="$mp" -v h="$mh" 'BEGIN {printf "%.2f", p / h}')  (below 1: protobuf-c is faster)"
echo
echo "last run, per input:"
grep -v '^total:' "$TMP"
echo
echo "with gzip, as merged.pb.gz is served (one run):"
"$BENCH" -z -n 9 -m "$PROFILES" $files 2>/dev/null | grep -e '^total:' -e 'merged from'
