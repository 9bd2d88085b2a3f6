#!/usr/bin/env bash
# The whole test suite: unit tests (cmocka, no root needed), then the
# integration tests that mount the real filesystem (need /dev/fuse; root for
# eBPF). Ends with one line "N passed, N failed".
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export ROOT
pass=0
fail=0
mkdir -p tests/artifacts

echo "== unit tests"
for t in "${PROFILEFS_BUILD:-$ROOT/build}"/tests/test_*; do
  [ -x "$t" ] || continue
  out="$("$t" 2>&1)"
  rc=$?
  echo "$out"
  p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f))
done

for t in tests/integration/*.sh; do
  [ -f "$t" ] || continue
  if [ -n "${TESTS:-}" ] && ! echo "$t" | grep -q -- "$TESTS"; then continue; fi
  echo "== $t"
  out="$(timeout 900 bash "$t" 2>&1)"
  rc=$?
  echo "$out"
  p=$(echo "$out" | grep -c '^ok - ')
  f=$(echo "$out" | grep -c '^not ok - ')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "not ok - $t exited with status $rc"
    f=1
  fi
  pass=$((pass + p)); fail=$((fail + f))
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
