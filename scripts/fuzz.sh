#!/usr/bin/env bash
# Fuzz the parsers of outside input with libFuzzer:
#   scripts/fuzz.sh [SECONDS] [HARNESS...]       (default: 60 s each; decode labels matchers connect pbjson path targets httpparse runtime ruby elf gopclntab perfmap stored tsv otlp debuginfod golabels hotspot v8)
# Builds the harnesses of tests/fuzz/ with clang -fsanitize=fuzzer,address,undefined
# (objects under $FUZZ_OUT, default /tmp/profilefs-fuzz; the tree is not touched),
# starts from the checked-in corpus tests/fuzz/corpus/<harness>/ and keeps new
# inputs in $FUZZ_OUT/corpus/<harness>/. Crashes are written to
# $FUZZ_OUT/crash-<harness>-*; copy the ones worth keeping into the checked-in
# corpus once fixed (tests/integration/fuzz-replay.sh then replays them on every
# test run). Prints executions, coverage and finds per harness.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"
[ $# -gt 0 ] && shift
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(decode labels matchers connect pbjson path targets httpparse runtime ruby elf gopclntab perfmap stored tsv otlp debuginfod golabels hotspot v8)
OUT="${FUZZ_OUT:-/tmp/profilefs-fuzz}"
SAN="fuzzer-no-link,address,undefined"
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)" >&2; exit 1; }

# The layer archives, instrumented; a harness links only the objects it uses.
ARCHIVES=()
for l in fs api ebpf scrape cluster query render store pprof base; do ARCHIVES+=("$OUT/build/lib$l.a"); done
make -s -j"$(nproc)" O="$OUT" CC=clang CXX=clang++ SANITIZE="$SAN" "${ARCHIVES[@]}"

PKGS=$(sed -n 's/^PKGS *:= *//p' Makefile)
CFLAGS=(-g -O1 -std=gnu11 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=all -D_FILE_OFFSET_BITS=64)
for d in base pprof store render query cluster fs api collector/ebpf collector/ebpf/runtimes collector/scrape; do CFLAGS+=(-I"$d"); done
CFLAGS+=(-Ibpf)	# collector/ebpf/runtimes/python.h: the types shared with the BPF program
CFLAGS+=(-I"$OUT/build/gen/pb" -I"$OUT/build/gen/otlp" -I"$OUT/build/gen/api" $(pkg-config --cflags $PKGS))
LIBS=($(pkg-config --libs $PKGS) -lrocksdb -liberty -lstdc++ -lpthread -lm)	# -lstdc++: base/re2shim.cc

summary=()
for h in "${HARNESSES[@]}"; do
  src="tests/fuzz/fuzz_$h.c"
  [ -f "$src" ] || { echo "fuzz.sh: no harness $src" >&2; exit 2; }
  clang "${CFLAGS[@]}" -o "$OUT/fuzz_$h" "$src" "${ARCHIVES[@]}" "${LIBS[@]}"
  mkdir -p "$OUT/corpus/$h"
  touch "$OUT/.stamp-$h"
  dict=()
  [ -f "tests/fuzz/$h.dict" ] && dict=(-dict="tests/fuzz/$h.dict")
  echo "== fuzz_$h for ${SECS}s"
  set +e
  "$OUT/fuzz_$h" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2560 \
      -print_final_stats=1 -artifact_prefix="$OUT/crash-$h-" "${dict[@]}" \
      "$OUT/corpus/$h" "tests/fuzz/corpus/$h" >"$OUT/fuzz_$h.log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/fuzz_$h.log" | tail -1 || true)
  cov=$( (grep -o 'cov: [0-9]*' "$OUT/fuzz_$h.log" || true) | tail -1 | cut -d' ' -f2)
  ncorp=$(find "$OUT/corpus/$h" -type f | wc -l)
  crashes=$(find "$OUT" -maxdepth 1 -name "crash-$h-*" -newer "$OUT/.stamp-$h" | wc -l)
  line="fuzz_$h: ${execs:-?} execs in ${SECS}s, cov ${cov:-?}, corpus $ncorp, crashes $crashes, exit $rc"
  echo "$line"
  if [ "$rc" -ne 0 ]; then grep -A15 -m1 'ERROR\|runtime error\|fuzz_[a-z]*: ' "$OUT/fuzz_$h.log" || true; fi
  summary+=("$line")
done
printf '%s\n' "${summary[@]}"
