#!/usr/bin/env bash
# Replay the checked-in fuzz corpus (tests/fuzz/corpus/<harness>/) through each
# harness linked with tests/fuzz/replay.c instead of libFuzzer, built by `make tests`
# with the build's own flags (so under SANITIZE=address,undefined in CI). No
# mount, no root. Prints ok/not ok per harness.
set -u
. "$(dirname "$0")/../lib.sh"
BUILD="${PROFILEFS_BUILD:-$ROOT/build}"
cd "$ROOT"

for dir in tests/fuzz/corpus/*/; do
  h="$(basename "$dir")"
  bin="$BUILD/tests/fuzz_$h"
  if [ ! -x "$bin" ]; then
    fail "fuzz replay $h" "$bin not built (make tests builds it)"
    continue
  fi
  n=$(find "$dir" -type f | wc -l)
  if out="$(REPLAY_VERBOSE=1 timeout 300 "$bin" "$dir" 2>&1)"; then
    ok "fuzz replay $h ($n inputs)"
  else
    fail "fuzz replay $h" "crashed; last lines:"
    echo "$out" | tail -25 | sed 's/^/#   /'
  fi
done
pf_done
