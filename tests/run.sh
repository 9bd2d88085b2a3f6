#!/usr/bin/env bash
# The whole test suite: unit tests (cmocka, no root needed), then the
# integration tests that mount the real filesystem (need /dev/fuse; root for
# eBPF). Ends with one line "N passed, N failed".
#
# The binaries under test are $PROFILEFS_BIN and $PROFILEFS_BUILD/tests/*
# (default bin/profilefs and build/). When they are built with sanitizers,
# every report (ASan, LSan, UBSan, TSan) of every process a test starts is
# written to a file under tests/artifacts/sanitizers*/, whatever the test does
# with that process's stderr or exit status, and fails the test that produced
# it. With PROFILEFS_TALLY=FILE (scripts/test.sh, several builds in one run)
# the counts are appended to FILE and the last line is "# RUN: N ok, N not ok"
# instead, so that the caller prints the one summary line. PROFILEFS_SKIP
# (a pattern like TESTS) leaves out the integration tests whose name matches.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export ROOT
pass=0
fail=0
failed=()
mkdir -p tests/artifacts

RUN="${PROFILEFS_RUN:-}"
# (A name without commas: the sanitizers read "," in an option as a separator.)
SAN_DIR="$ROOT/tests/artifacts/sanitizers${RUN:+-$(echo "$RUN" | tr -c "A-Za-z0-9_\n" -)}"
rm -rf "$SAN_DIR"
mkdir -p "$SAN_DIR"
chmod 1777 "$SAN_DIR"	# tests also run the daemon as nobody
# Options given by the caller come after the defaults and before the report
# files (the last value of an option wins). Leak reports do not change a
# process's exit status (exitcode=0; every other ASan error still aborts it):
# the report file fails the test, and a test that checks the daemon's exit
# status is not failed a second time by a leak. UBSan reports (halt_on_error,
# status 1) go to the process's stderr, not to a file.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:exitcode=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}:log_path=$SAN_DIR/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}:suppressions=$ROOT/tests/sanitizers/tsan.supp:log_path=$SAN_DIR/tsan"

# libfuse_only FILE: FILE is a LeakSanitizer report in which every leaked
# block was allocated by libfuse3 itself (the frame after the allocator is in
# libfuse3.so): the directory handle of a readdir whose release the kernel
# queued as the daemon stopped, and the like. Those are not counted. An LSan
# suppression cannot say this: "leak:libfuse3.so" matches any frame, so it
# would also hide memory that profilefs's FUSE handlers allocate and leak.
libfuse_only() {
  awk '/ERROR: / && !/ERROR: LeakSanitizer/ { other = 1 }
    /^(Direct|Indirect) leak of/ { blocks++; want = 1; next }
    want && /^ *#1 / { if ($0 ~ /libfuse3\.so/) fuse++; want = 0 }
    END { exit !(blocks > 0 && !other && fuse == blocks) }' "$1"
}

# san_check NAME: fail NAME once per new sanitizer report, and show it.
san_check() {
  local f
  for f in "$SAN_DIR"/*.[0-9]*; do
    [ -f "$f" ] || continue
    case "$f" in *.seen) continue ;; esac
    if libfuse_only "$f"; then
      echo "# $1: $(basename "$f"): only libfuse3's own allocations left at exit, not counted"
    else
      echo "not ok - $1: sanitizer report $(basename "$f"): $(grep -m1 '^SUMMARY' "$f")"
      failed+=("$1: sanitizer report $(basename "$f")")
      sed -n '1,80p' "$f" | sed 's/^/#   /'
      fail=$((fail + 1))
    fi
    mv "$f" "$f.seen"
  done
}

echo "== unit tests${RUN:+ ($RUN)}"
for t in "${PROFILEFS_BUILD:-$ROOT/build}"/tests/test_*; do
  [ -x "$t" ] || continue
  out="$("$t" 2>&1)"
  rc=$?
  echo "$out"
  p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "not ok - $(basename "$t") exited with status $rc"
    f=1
  fi
  pass=$((pass + p)); fail=$((fail + f))
  if [ "$f" -gt 0 ]; then failed+=("$(basename "$t"): $f failed"); fi
  san_check "$(basename "$t")"
done

for t in tests/integration/*.sh; do
  [ -f "$t" ] || continue
  # Either "a\|b" or "a|b" selects several (grep -E takes the plain bar).
  if [ -n "${TESTS:-}" ] && ! echo "$t" | grep -qE -- "${TESTS//\\|/|}"; then continue; fi
  if [ -n "${PROFILEFS_SKIP:-}" ] && echo "$t" | grep -qE -- "${PROFILEFS_SKIP//\\|/|}"; then
    echo "# $t: skipped in this run (PROFILEFS_SKIP)"
    continue
  fi
  echo "== $t${RUN:+ ($RUN)}"
  t0=$SECONDS
  out="$(timeout 900 bash "$t" 2>&1)"
  rc=$?
  echo "$out"
  echo "# $(basename "$t"): $((SECONDS - t0)) s"
  p=$(echo "$out" | grep -c '^ok - ')
  f=$(echo "$out" | grep -c '^not ok - ')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "not ok - $t exited with status $rc"
    f=1
  fi
  pass=$((pass + p)); fail=$((fail + f))
  if [ "$f" -gt 0 ]; then
    failed+=("$t: $f not ok: $(echo "$out" | grep -m3 '^not ok - ' | tr '\n' ' ')")
  fi
  san_check "$t"
done
san_check "after the last test"

# The failures again, together, so that the end of a long output says which.
if [ "${#failed[@]}" -gt 0 ]; then
  for l in "${failed[@]}"; do
    echo "# FAILED ${RUN:-run}: $l"
    if [ -n "${PROFILEFS_FAILURES:-}" ]; then echo "${RUN:-run}: $l" >>"$PROFILEFS_FAILURES"; fi
  done
fi
if [ -n "${PROFILEFS_TALLY:-}" ]; then
  echo "$pass $fail" >>"$PROFILEFS_TALLY"
  echo "# ${RUN:-run}: $pass ok, $fail not ok"
else
  echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
