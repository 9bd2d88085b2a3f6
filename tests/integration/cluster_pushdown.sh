#!/usr/bin/env bash
# The fleet's merges are pushed into ClickHouse (selectors, matchers and the
# window edges as SQL over tiers of per-window sums and the raw rows at the
# edges); a property: on random FROM..TO ranges, with random selectors, they
# give exactly the sums the embedded store gives on the same profiles.
# Two real clickhouse-server on loopback (tests/clickhouse/) as two shards,
# one daemon: it pushes profiles of six series over 3 hours of past time, CPU and heap (gauges, averaged per series); the ranges
# and selectors come from a fixed seed, so a run is repeatable. The sums of
# every case are read through the fleet (each shard's tables asked directly),
# then through the Distributed tables (URLs that are not the shards each
# once), then the same daemon is restarted without --clickhouse and reads
# its embedded store.
# Skipped without clickhouse-server (scripts/install-deps.sh --test installs it).
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"

NAMES="clickhouse-servers-start"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
command -v clickhouse-server >/dev/null || skip_all "clickhouse-server not installed"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent

P0=$((10000 + ($$ % 900) * 10))
CH1=$P0 CH1T=$((P0 + 1)) CH2=$((P0 + 3)) CH2T=$((P0 + 4)) HA=$((P0 + 6))
URLS="http://127.0.0.1:$CH1,http://127.0.0.1:$CH2"
CH_PIDS=()
cleanup() {
  for p in "${CH_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${CH_PIDS[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null
  done
  pf_cleanup
}
trap cleanup EXIT
wait_for() {
  local n=$(($1 * 5)); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
chq() { ch_post "http://127.0.0.1:$CH1" "$1"; }

if CH_PIDS[1]=$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch1" "$CH1" "$CH1T" $((CH1T + 1)) "$CH1T" "$CH2T") &&
   CH_PIDS[2]=$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch2" "$CH2" "$CH2T" $((CH2T + 1)) "$CH1T" "$CH2T"); then
  ok "clickhouse-servers-start"
else
  fail "clickhouse-servers-start" "$(tail -5 "$TMP"/ch*/stdout.log 2>/dev/null)"; pf_done; exit 1
fi
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) || { fail "build genprof"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 100ms >/dev/null || fail "generate Go profiles"
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" || { fail "build httpload"; pf_done; exit 1; }

pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" || { fail "daemon starts"; pf_done; exit 1; }
wait_for 20 grep -q "clickhouse: connected" "$TMP/daemon.log" || fail "connected" "$(tail -3 "$TMP/daemon.log")"

# 3 hours ending 10 minutes ago, a CPU profile every 40 s for each of 6
# series (host=k,env=k for k = 0..5), a heap profile every 5 minutes for 2.
now=$(date +%s)
base=$(( (now - 3 * 3600 - 600) / 40 * 40 ))
N=$((3 * 3600 / 40 * 6))
"$TMP/httpload" -c 4 -n "$N" -t 600 -T "$base,40,6" \
  -p "/api/0/profiles?service=prop&type=cpu&labels=host={k},env={k}&created_at={t}" 127.0.0.1 "$HA" \
  "$TMP"/go/cpu-000*.pb.gz >"$TMP/load.cpu" || fail "push cpu profiles"
NH=$((3 * 3600 / 300 * 2))
"$TMP/httpload" -c 2 -n "$NH" -t 600 -T "$base,300,2" \
  -p "/api/0/profiles?service=prop&type=heap&labels=host={k}&created_at={t}" 127.0.0.1 "$HA" \
  "$TMP/go/heap.pb.gz" >"$TMP/load.heap" || fail "push heap profiles"
shipped() { [ "$(chq "SELECT count() FROM profilefs.profiles")" = "$((N + NH))" ]; }
wait_for 300 shipped && ok "all $((N + NH)) profiles reached ClickHouse" \
  || fail "all profiles reached ClickHouse" "$(chq "SELECT count() FROM profilefs.profiles")"
# The mount follows the cluster through a count polled every second: read once
# the daemon has seen them all (before, a listing of the last generation may
# lack the last series' windows, as documented).
seen() { curl -s "http://127.0.0.1:$HA/metrics" | grep -qx "profilefs_clickhouse_profiles $((N + NH))"; }
wait_for 60 seen && ok "the daemon's poll saw all $((N + NH))" \
  || fail "the daemon's poll saw them all" "$(curl -s "http://127.0.0.1:$HA/metrics" | grep profilefs_clickhouse_profiles)"

# Random cases from a fixed seed: a selector and a FROM..TO with second edges.
SELS=("all" "host=0" "host!=1" "host=~[0-2]" "host!~[3-5]|1" "env=2,host=2" "host=~4|5" "env!=3")
RANDOM=20261126
CASES=()
for i in $(seq 1 24); do
  a=$((base - 300 + RANDOM % (3 * 3600 + 600)))
  b=$((a + 1 + (RANDOM * 7 + RANDOM) % 7200))
  sel=${SELS[$((RANDOM % ${#SELS[@]}))]}
  ty=cpu; [ $((i % 4)) = 0 ] && ty=heap
  r="$(date -u -d "@$a" +%Y-%m-%dT%H%M%S)..$(date -u -d "@$b" +%Y-%m-%dT%H%M%S)"
  CASES+=("prop/$ty/$sel/$r")
done
CASES+=("prop/cpu/all/all" "prop/cpu/host=3/all" "prop/heap/all/all")
read_all() {	# read_all OUT: the sums of every case, one line each
  local c
  for c in "${CASES[@]}"; do
    echo "$c $(pprof_sums "$TMP/mnt/$c/merged.pb.gz" 2>/dev/null)"
  done >"$1"
}
read_all "$TMP/fleet.sums"
# One host's last hour: its rows as stored, summed in the daemon. The window
# moves with the clock and the embedded store is read later, so it is read
# when no profile is stamped within seconds of the window's start (CPU
# profiles every 40 s, heap every 300 s from base; last-2h starts on the same
# phase), and the embedded store is asked the same window with explicit edges.
LASTS=("prop/cpu/host=2/last-1h" "prop/heap/host=1/last-1h" "prop/cpu/host=2/last-2h")
quiet() {	# quiet LO HI: no profile stamped in [LO, HI]
  local s p
  for s in 40 300; do
    p=$(( base + ( (($1 - base) + s - 1) / s ) * s ))
    [ "$p" -gt "$2" ] || return 1
  done
}
for _ in 1 2 3 4 5; do
  for _ in $(seq 60); do
    t=$(date +%s); quiet $((t + 1 - 3600 - 3)) $((t + 1 - 3600 + 8)) && break; sleep 1
  done
  ta=$(date +%s)
  for c in "${LASTS[@]}"; do
    echo "$c $(pprof_sums "$TMP/mnt/$c/merged.pb.gz" 2>/dev/null)"
  done >"$TMP/fleet.last"
  tb=$(date +%s)
  quiet $((ta + 1 - 3600 - 3)) $((tb + 1 - 3600 + 3)) && break
  : >"$TMP/fleet.last"
done
[ -s "$TMP/fleet.last" ] || fail "the last-N cases read between two profiles' times" "5 tries"
fixed() {	# fixed CASE: the case's window as of $ta with explicit edges
  local d=3600; case $1 in *last-2h) d=7200 ;; esac
  echo "${1%/last-*}/$(date -u -d "@$((ta + 1 - d))" +%Y-%m-%dT%H%M%S)..$(date -u -d "@$((ta + 1))" +%Y-%m-%dT%H%M%S)"
}
nonempty=$(awk 'NF > 1' "$TMP/fleet.sums" | wc -l)
[ "$nonempty" -ge 20 ] && ok "the fleet answers $nonempty of ${#CASES[@]} cases with profiles" \
  || fail "the fleet answers most cases with profiles" "$nonempty of ${#CASES[@]}"
grep -q "clickhouse: merging" "$TMP/daemon.log" && fail "no merge failed" "$(grep 'clickhouse: merging' "$TMP/daemon.log" | head -2)" \
  || ok "no merge failed"
grep -q "the URLs are the 2 shards of cluster profilefs: reads ask each shard's tables directly" "$TMP/daemon.log" \
  && ok "the URLs are proven to be the shards: reads ask each shard directly" \
  || fail "the URLs are proven to be the shards: reads ask each shard directly" "$(grep clickhouse "$TMP/daemon.log" | head -5)"
pf_stop
pf_start || fail "the daemon restarts without the cluster"
read_all "$TMP/embedded.sums"
for c in "${LASTS[@]}"; do
  echo "$c $(pprof_sums "$TMP/mnt/$(fixed "$c")/merged.pb.gz" 2>/dev/null)"
done >>"$TMP/embedded.sums"
cat "$TMP/fleet.last" >>"$TMP/fleet.sums"
pf_stop
grep -q '/last-.* samples/count=[1-9]' "$TMP/fleet.sums" && ok "the fleet answers the last-N cases" \
  || fail "the fleet answers the last-N cases" "$(grep /last- "$TMP/fleet.sums")"
bad=$(diff "$TMP/fleet.sums" "$TMP/embedded.sums" | grep '^[<>]' | head -6)
[ -z "$bad" ] && ok "every case: the fleet's sums equal the embedded store's" \
  || fail "every case: the fleet's sums equal the embedded store's" "$bad"
# The same cases through the Distributed tables: URLs that are not the
# cluster's shards each once (one of two shards; one shard named twice) are
# not read shard by shard, so nothing is missing or counted twice. Read
# later, the last-N ranges hold other profiles by now: the fixed ones are
# compared.
log_since() { tail -n +$((n0 + 1)) "$TMP/daemon.log"; }	# this run's lines
for urls in "http://127.0.0.1:$CH1" "http://127.0.0.1:$CH2,http://127.0.0.1:$CH2"; do
  n0=$(wc -l <"$TMP/daemon.log")
  pf_start --host hosta --clickhouse "$urls" --http "127.0.0.1:$HA" || fail "the daemon restarts with $urls"
  connected() { log_since | grep -q "clickhouse: connected"; }
  wait_for 20 connected || fail "connected ($urls)" "$(tail -3 "$TMP/daemon.log")"
  log_since | grep -q "reads ask each shard" && fail "$urls: not read shard by shard" \
    || ok "$urls: not read shard by shard"
  read_all "$TMP/dist.sums"
  # The first run read every stack of these cases from ClickHouse and kept
  # them in its store's cache: a restarted daemon reads them from its disk.
  stacks_from() { curl -s "http://127.0.0.1:$HA/metrics" | sed -n "s/^profilefs_clickhouse_stacks_read_total{from=\"$1\"} //p"; }
  [ "$(stacks_from clickhouse)" = 0 ] && [ "$(stacks_from disk)" -gt 0 ] 2>/dev/null \
    && ok "$urls: restarted, the stacks come from the local store's cache" \
    || fail "$urls: restarted, the stacks come from the local store's cache" \
      "clickhouse $(stacks_from clickhouse), disk $(stacks_from disk)"
  bad=$(diff <(grep -v '/last-' "$TMP/fleet.sums") <(grep -v '/last-' "$TMP/dist.sums") | grep '^[<>]' | head -6)
  [ -z "$bad" ] && ok "$urls: every case through the Distributed tables equals the shard-by-shard read" \
    || fail "$urls: every case through the Distributed tables equals the shard-by-shard read" "$bad"
  pf_stop
done
# Leaks are told by tests/run.sh from the report files (libfuse3's own left out).
grep -q "ERROR: AddressSanitizer\|runtime error" "$TMP/daemon.log" && fail "no sanitizer errors in the log" \
  "$(grep -m 3 -A 12 "ERROR: AddressSanitizer\|runtime error" "$TMP/daemon.log")" || ok "no sanitizer errors in the log"
pf_done
