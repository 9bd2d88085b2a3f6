#!/usr/bin/env bash
# Set up and run the whole test suite: install what is missing, build (with
# sanitizers when SANITIZE is set, as CI does), run unit and integration tests.
# Needs root for the eBPF tests and /dev/fuse for the mounted ones.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
flags=()
if [ -n "${SANITIZE:-}" ]; then flags+=("SANITIZE=$SANITIZE"); fi
if [ -n "${WERROR:-}" ]; then flags+=("WERROR=1"); fi
make -j"$(nproc)" "${flags[@]}"
exec bash tests/run.sh
