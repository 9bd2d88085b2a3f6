#!/usr/bin/env bash
# Benchmark: the Go pull mode scraping 200 targets (20 services x 10
# instances) at a 15 s interval with the default profiles (cpu, heap,
# goroutine: 600 jobs). The targets are one Go process listening on 200
# loopback ports (tests/go/pprofserver -replay) that serves real recorded Go
# profiles: google-pprof/sample.cpu for cpu (after sleeping ?seconds=14, as
# Go does), the parca many-*.pb.gz heap series (one Go process scraped every
# 3 s) in rotation, and a goroutine profile recorded from a live Go program.
#
# Prints the daemon's average CPU (utime+stime from /proc/PID/stat over the
# measured window, after a warm-up in which every job has started once),
# scrape outcomes and the lateness of scrape starts against their schedule
# (p50/p99/max, as recorded by the scraper in MOUNTPOINT/.targets.json).
# Usage: scripts/bench-scrape.sh [MEASURE_SECONDS] (default 75; ~2 min total).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
MEASURE="${1:-75}"
REAL="${REAL:-$ROOT/../shared/testdata/real}"
[ -d "$REAL" ] || REAL="$ROOT/tests/testdata/real"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" GOFLAGS=-mod=mod
NT=200

[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
TMP="$(mktemp -d /tmp/profilefs-bench-scrape.XXXXXX)"
PID= SRV= LIVE=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null
  [ -n "$LIVE" ] && kill "$LIVE" 2>/dev/null
  mountpoint -q "$TMP/mnt" 2>/dev/null && fusermount3 -u -z "$TMP/mnt"
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/mnt" "$TMP/replay"

(cd "$ROOT/tests/go/pprofserver" && go build -o "$TMP/pprofserver" .)
BASE=$(python3 -c '
import random, socket
while True:
    b = random.randrange(20000, 60000 - 256, 256); ss = []
    try:
        for p in range(b, b + 201):
            s = socket.socket(); s.bind(("127.0.0.1", p)); ss.append(s)
        print(b); break
    except OSError: pass
    finally:
        for s in ss: s.close()')

# The recorded profiles.
cp "$REAL/google-pprof/sample.cpu" "$TMP/replay/cpu.pb.gz"
i=0
for f in "$REAL"/parca/many-*.pb.gz; do cp "$f" "$TMP/replay/heap-$i.pb.gz"; i=$((i + 1)); done
"$TMP/pprofserver" -port "$((BASE + NT))" >/dev/null 2>&1 & LIVE=$!
for i in $(seq 1 50); do
  curl --noproxy '*' -sf "http://127.0.0.1:$((BASE + NT))/debug/pprof/goroutine" -o "$TMP/replay/goroutine.pb.gz" && break
  sleep 0.2
done
kill "$LIVE"; LIVE=
echo "recorded profiles: $(cd "$TMP/replay" && for f in *; do printf '%s %s B, ' "$f" "$(stat -c %s "$f")"; done)"

"$TMP/pprofserver" -replay "$TMP/replay" -ports "$BASE:$NT" >"$TMP/replay.log" 2>&1 & SRV=$!
for i in $(seq 1 50); do curl --noproxy '*' -sf "http://127.0.0.1:$((BASE + NT - 1))/debug/pprof/goroutine" -o /dev/null && break; sleep 0.2; done

python3 - "$BASE" "$NT" >"$TMP/targets.json" <<'EOF'
import json, sys
base, n = int(sys.argv[1]), int(sys.argv[2])
groups = []
for s in range(n // 10):
    groups.append({"targets": ["127.0.0.1:%d" % (base + s * 10 + i) for i in range(10)],
                   "labels": {"service_name": "svc%02d" % s, "env": "bench"},
                   "interval": "15s"})
json.dump(groups, sys.stdout, indent=1)
EOF

"$BIN" serve --data "$TMP/data" --scrape "$TMP/targets.json" "$TMP/mnt" >"$TMP/daemon.log" 2>&1 & PID=$!
for i in $(seq 1 100); do [ -r "$TMP/mnt/README.txt" ] && break; sleep 0.1; done
[ -r "$TMP/mnt/README.txt" ] || { echo "daemon did not start"; cat "$TMP/daemon.log"; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)
echo "warm-up 20 s: $NT targets x 3 profiles at 15 s, first starts spread over the interval ..."
sleep 20
t0=$(date +%s.%N); c0=$(cpu_ticks)
sleep "$MEASURE"
t1=$(date +%s.%N); c1=$(cpu_ticks)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
cp "$TMP/mnt/.targets.json" "$TMP/status.json"

python3 - "$TMP/status.json" "$c0" "$c1" "$t0" "$t1" "$HZ" "$rss" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c0, c1, t0, t1, hz, rss = (float(x) for x in sys.argv[2:8])
cpu = (c1 - c0) / hz / (t1 - t0) * 100
jobs = d["targets"]
scr = sum(j["scrapes"] for j in jobs)
fail = sum(j["failures"] for j in jobs)
stored = sum(j["stored"] for j in jobs)
missed = sum(j["missed_slots"] for j in jobs)
up = sum(1 for j in jobs if j["health"] == "up")
late = d["lateness_seconds"]
print("daemon CPU over %.0f s: %.2f%% of one core (target < 5%%), RSS %.0f MB" % (t1 - t0, cpu, rss / 1024))
print("jobs %d, up %d; scrapes %d, failures %d, stored %d, missed slots %d" % (len(jobs), up, scr, fail, stored, missed))
print("lateness of %d starts: p50 %.1f ms, p99 %.1f ms, max %.1f ms" %
      (late["window"], late["p50"] * 1e3, late["p99"] * 1e3, late["max"] * 1e3))
errs = sorted({j["last_error"] for j in jobs if j["last_error"]})
for e in errs[:5]:
    print("  error:", e)
EOF
