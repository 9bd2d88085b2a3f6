#!/usr/bin/env bash
# Benchmark: reading generated files, which are served per open from one
# pinned version with direct_io (no page cache), against a stored profile
# under profiles/, which the page cache keeps. Prints opens/s and MB/s of
# whole-file reads (open, fstat, read to EOF, close) of a cached
# merged.pb.gz and flamegraph.svg, by 1 reader and by 3 concurrent readers,
# and the same for the stored profile; then the daemon's peak RSS and the
# memory budget's peak.
#
# Usage: scripts/bench-readers.sh [ROUNDS]   (whole-file reads per reader, default 2000)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
REAL="${REAL:-$ROOT/../shared/testdata/real}"
[ -d "$REAL" ] || REAL="$ROOT/tests/testdata/real"
ROUNDS="${1:-2000}"
make -C "$ROOT" -j2 "$BIN" >/dev/null
TMP="$(mktemp -d /tmp/profilefs-bench-readers.XXXXXX)"
cleanup() {
  if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/mnt"
"$BIN" serve --data "$TMP/data" --http 127.0.0.1:0 "$TMP/mnt" 2>"$TMP/log" &
PID=$!
for i in $(seq 1 100); do [ -r "$TMP/mnt/README.txt" ] && break; sleep 0.1; done
for r in 1 2 3 4 5 6 7 8; do for f in "$REAL"/parca/many-*.pb.gz; do cp "$f" "$TMP/mnt/ingest/bench/cpu/"; done; done
D="$TMP/mnt/bench/cpu/all/all"
stored="$D/profiles/$(ls "$D/profiles" | head -1)"

cat > "$TMP/read.py" <<'EOF'
import os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
total = 0
t0 = time.monotonic()
for _ in range(n):
    fd = os.open(path, os.O_RDONLY)
    os.fstat(fd)
    while True:
        b = os.read(fd, 131072)
        if not b:
            break
        total += len(b)
    os.close(fd)
print(f"{n / (time.monotonic() - t0):.0f} {total}")
EOF
run() {	# run NAME PATH READERS
  local name="$1" path="$2" k="$3" i t0 t1 bytes=0
  cat "$path" >/dev/null
  t0=$(date +%s%N)
  for i in $(seq 1 "$k"); do python3 "$TMP/read.py" "$path" "$ROUNDS" > "$TMP/out.$i" & done
  wait $(jobs -p | grep -v "^$PID$")
  t1=$(date +%s%N)
  for i in $(seq 1 "$k"); do bytes=$((bytes + $(cut -d' ' -f2 "$TMP/out.$i"))); done
  awk -v n="$name" -v k="$k" -v r="$ROUNDS" -v b="$bytes" -v ns=$((t1 - t0)) -v sz="$(stat -c %s "$path")" \
    'BEGIN { s = ns / 1e9; printf "%-34s %d reader(s): %7.0f opens/s %8.1f MB/s (%d bytes a file)\n", n, k, k * r / s, b / s / 1e6, sz }'
}
run "merged.pb.gz (direct_io, pinned)" "$D/merged.pb.gz" 1
run "merged.pb.gz (direct_io, pinned)" "$D/merged.pb.gz" 3
run "flamegraph.svg (direct_io, pinned)" "$D/flamegraph.svg" 1
run "flamegraph.svg (direct_io, pinned)" "$D/flamegraph.svg" 3
run "profiles/<id>.pb.gz (page cache)" "$stored" 1
run "profiles/<id>.pb.gz (page cache)" "$stored" 3
port=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/log" | tail -1)
echo "daemon peak RSS: $(awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' "/proc/$PID/status"); memory budget:" \
  "$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^profilefs_memory_budget_bytes/ { sub(/.*kind="/, ""); sub(/"}/, ""); printf "%s %.1f MiB  ", $1, $2 / 1048576 }')"
