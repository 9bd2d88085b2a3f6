#!/usr/bin/env bash
# Go pull mode: profilefs serve --scrape against a real Go program serving
# net/http/pprof on loopback (tests/go/pprofserver), next to hostile
# endpoints (HTML, 404, redirect loop, endless body, slow-loris, hang,
# garbage) and a port where nothing listens. Checks: every profile type shows
# up; alloc deltas never sum past the process's own total; a restart of the
# target stores no negative values; the bad targets do not stop the good one;
# editing the targets file adds and removes targets live and a broken edit
# keeps the previous list. Waits poll with generous deadlines; nothing is timed.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"
T="$TMP/targets.json"
PIDS=()
cleanup_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  pf_cleanup
}
trap cleanup_all EXIT

# wait_for SECONDS CMD...: poll CMD every 0.5 s until it succeeds or time runs out.
wait_for() {
  local n=$(( $1 * 2 )) i; shift
  for i in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  return 1
}
# status_of INSTANCE PROFILE FIELD: a field of .targets.json for one job.
status_of() {
  python3 - "$M/.targets.json" "$1" "$2" "$3" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["targets"]:
    if t["instance"] == sys.argv[2] and t["profile"] == sys.argv[3]:
        v = t[sys.argv[4]]
        print("null" if v is None else v)
        break
EOF
}
# free_port: a port nothing listens on (bind-tested), base of 8 in a row.
free_base() {
  python3 - <<'EOF'
import random, socket
while True:
    b = random.randrange(20000, 60000, 16)
    try:
        ss = []
        for p in range(b, b + 12):
            s = socket.socket(); s.bind(("127.0.0.1", p)); ss.append(s)
        print(b); break
    except OSError:
        pass
    finally:
        for s in ss: s.close()
EOF
}

(cd "$ROOT/tests/go/pprofserver" && go build -o "$TMP/pprofserver" .) && ok "build Go pprof server" \
  || { fail "build Go pprof server"; pf_done; exit 1; }

BASE=$(free_base)
GOOD=127.0.0.1:$BASE          # the Go program
DOWN=127.0.0.1:$((BASE + 1))  # nothing listens
HTTP=127.0.0.1:$((BASE + 2)) # the daemon's --http, for /metrics
HB=$((BASE + 4))              # hostile servers: HB..HB+7
"$TMP/pprofserver" -port "$BASE" >"$TMP/go.log" 2>&1 & PIDS+=($!); GO_PID=$!
python3 "$ROOT/tests/integration/scrape_hostile.py" "$HB" >"$TMP/hostile.log" 2>&1 & PIDS+=($!)
wait_for 20 curl --noproxy '*' -sf "http://$GOOD/debug/pprof/" || fail "Go server answers"
wait_for 10 grep -q "hostile servers" "$TMP/hostile.log" || fail "hostile servers start"

# Under ThreadSanitizer the daemon runs several times slower: scripts/test.sh
# sets PROFILEFS_SLOW (a factor) and the bad targets' timeout grows with it,
# so that the size limit, not the clock, still stops the endless body.
S="${PROFILEFS_SLOW:-1}"
hostile=""
for i in 0 1 2 3 4 5 6 7; do hostile="$hostile\"127.0.0.1:$((HB + i))\", "; done
cat >"$T" <<EOF
[
  {"targets": ["$GOOD"],
   "labels": {"service_name": "gosvc", "env": "test"},
   "interval": "2s",
   "profiles": ["cpu", "heap", "allocs", "goroutine", "mutex", "block", "threadcreate"]},
  {"targets": [$hostile "$DOWN"],
   "labels": {"service_name": "bad"},
   "interval": "$((2 * S))s", "timeout": "${S}s",
   "profiles": ["heap", "goroutine"]}
]
EOF

# A malformed file at start is refused with the line.
printf '[{"targets": ["%s"],\n  "interval": 15s}]\n' "$GOOD" >"$TMP/broken.json"
"$BIN" serve --data "$TMP/data0" --scrape "$TMP/broken.json" "$TMP/mnt0" >"$TMP/broken.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "line 2" "$TMP/broken.log" && ok "malformed targets file refused at start with its line" \
  || fail "malformed targets file refused at start with its line" "rc=$rc: $(tail -2 "$TMP/broken.log")"

pf_start -v --http "$HTTP" --scrape "$T" || { fail "daemon starts with --scrape"; pf_done; exit 1; }
ok "daemon starts with --scrape"

# --- every type appears for the good target ---------------------------------
G="$M/gosvc"
for t in cpu heap allocs goroutine mutex block threadcreate; do
  if wait_for 30 test -r "$G/$t/all/last-5m/merged.pb.gz"; then
    if go tool pprof -top "$G/$t/all/last-5m/merged.pb.gz" >"$TMP/top.$t" 2>&1; then
      ok "$t scraped and readable by go tool pprof"
    else
      fail "$t scraped and readable by go tool pprof" "$(head -3 "$TMP/top.$t")"
    fi
  else
    fail "$t scraped and readable by go tool pprof" "no $t profile"
  fi
done
check_eq "series labels: env and instance" "$(ls "$G/cpu" | tr '\n' ' ')" "all env=test,instance=${GOOD//:/%3A} "
grep -q "contend" "$TMP/top.mutex" && ok "mutex profile shows the contention" || fail "mutex profile shows the contention"
check_eq "good target up in .targets.json" "$(status_of "$GOOD" cpu health)" "up"
ls -a "$M" | grep -qx ".targets.json" && ok "ls -a lists .targets.json" || fail "ls -a lists .targets.json"
curl --noproxy '*' -sf "http://$HTTP/metrics" >"$TMP/metrics" || fail "GET /metrics"
grep -q "^profilefs_scrape_up{instance=\"$GOOD\",profile=\"cpu\",service=\"gosvc\"} 1\$" "$TMP/metrics" \
  && ok "per-target up in /metrics" || fail "per-target up in /metrics" "$(grep scrape_up "$TMP/metrics" | head -3)"
grep -q "^profilefs_scrape_lateness_seconds_count [1-9]" "$TMP/metrics" \
  && ok "scrape lateness histogram in /metrics" || fail "scrape lateness histogram in /metrics"

# --- the bad targets: refused with a reason, the good one unaffected --------
reason() { status_of "127.0.0.1:$((HB + $1))" heap last_error; }
wait_for 20 sh -c "[ \"\$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for t in d[\"targets\"] if t[\"service\"]==\"bad\" and t[\"health\"]==\"down\"))' '$M/.targets.json')\" -ge 18 ]" \
  && ok "every bad target is down" || fail "every bad target is down" "$(grep -c down "$M/.targets.json")"
reason 0 | grep -qi "html" && ok "HTML answer refused: $(reason 0)" || fail "HTML answer refused" "$(reason 0)"
reason 1 | grep -q "404" && ok "404 refused: $(reason 1)" || fail "404 refused" "$(reason 1)"
reason 2 | grep -qi "redirect" && ok "redirect loop refused: $(reason 2)" || fail "redirect loop refused" "$(reason 2)"
reason 3 | grep -qi "larger than" && ok "2 GB body refused: $(reason 3)" || fail "2 GB body refused" "$(reason 3)"
reason 7 | grep -qi "larger than" && ok "endless body without a length cut off: $(reason 7)" \
  || fail "endless body without a length cut off" "$(reason 7)"
reason 4 | grep -qi "timed out" && ok "slow-loris refused: $(reason 4)" || fail "slow-loris refused" "$(reason 4)"
reason 5 | grep -qi "timed out" && ok "hanging target refused: $(reason 5)" || fail "hanging target refused" "$(reason 5)"
[ "$(reason 6)" != "null" ] && ok "garbage refused: $(reason 6)" || fail "garbage refused"
status_of "$DOWN" goroutine last_error | grep -qi "connect" && ok "down target: $(status_of "$DOWN" goroutine last_error)" \
  || fail "down target reported" "$(status_of "$DOWN" goroutine last_error)"
check_eq "no service for the bad targets" "$(ls "$M" | grep -c '^bad$')" "0"
n=$(grep -c "127.0.0.1:$((HB + 5))/debug/pprof/heap heap: down" "$TMP/daemon.log")
check_eq "a down target is logged once, not once per attempt" "$n" "1"
rss=$(awk '/VmRSS/ {print $2}' /proc/"$PF_PID"/status)
[ "$rss" -lt 400000 ] && ok "memory stays bounded next to a 2 GB body (${rss} kB)" \
  || fail "memory stays bounded next to a 2 GB body" "${rss} kB"
s0=$(status_of "$GOOD" goroutine stored)
wait_for 20 sh -c "[ \$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([t[\"stored\"] for t in d[\"targets\"] if t[\"profile\"]==\"goroutine\" and t[\"service\"]==\"gosvc\"][0])' '$M/.targets.json') -ge $((s0 + 3)) ]" \
  && ok "the good target keeps being scraped next to the bad ones" || fail "the good target keeps being scraped next to the bad ones"

go tool pprof -top -cum -nodecount=500 "$G/cpu/all/last-5m/merged.pb.gz" 2>/dev/null | grep -q "main\.burn\|main\.allocate" \
  && ok "cpu profile shows the workload" || fail "cpu profile shows the workload"

# --- deltas: the merged alloc_space never exceeds the process's own total ---
wait_for 30 sh -c "[ \$(ls '$G/allocs/all/last-5m/profiles' | wc -l) -ge 3 ]"
curl --noproxy '*' -sf "http://$GOOD/debug/pprof/allocs" -o "$TMP/final-allocs.pb.gz"
merged=$(pprof_sums -sample_index=alloc_space "$G/allocs/all/last-5m/merged.pb.gz" | tr ' ' '\n' | sed -n 's#^alloc_space/bytes\(\[dflt\]\)\{0,1\}=##p')
total=$(pprof_sums "$TMP/final-allocs.pb.gz" | tr ' ' '\n' | sed -n 's#^alloc_space/bytes\(\[dflt\]\)\{0,1\}=##p')
if [ -n "$merged" ] && [ -n "$total" ] && [ "$merged" -gt 0 ] && [ "$merged" -le "$total" ]; then
  ok "merged alloc_space $merged <= the process's cumulative $total"
else
  fail "merged alloc_space <= the process's cumulative total" "merged '$merged', total '$total'"
fi
heapsum=$(pprof_sums "$G/heap/all/last-5m/merged.pb.gz")
echo "$heapsum" | grep -q "inuse_space/bytes=[1-9]" && ok "heap keeps inuse_space as a snapshot" \
  || fail "heap keeps inuse_space as a snapshot" "$heapsum"

# --- a restart of the target: starts over, never negative -------------------
kill "$GO_PID"; wait "$GO_PID" 2>/dev/null
wait_for 20 sh -c "[ \"\$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([t[\"health\"] for t in d[\"targets\"] if t[\"profile\"]==\"allocs\" and t[\"service\"]==\"gosvc\"][0])' '$M/.targets.json')\" = down ]" \
  && ok "stopped target goes down" || fail "stopped target goes down"
"$TMP/pprofserver" -port "$BASE" >>"$TMP/go.log" 2>&1 & PIDS+=($!); GO_PID=$!
wait_for 60 sh -c "[ \"\$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(min(t[\"restarts\"] for t in d[\"targets\"] if t[\"profile\"] in (\"allocs\",\"heap\") and t[\"service\"]==\"gosvc\"))' '$M/.targets.json')\" -ge 1 ]" \
  && ok "restart detected for heap and allocs" || fail "restart detected for heap and allocs" "$(grep -i restart "$TMP/daemon.log" | tail -2)"
a0=$(status_of "$GOOD" allocs stored)
wait_for 30 sh -c "[ \$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([t[\"stored\"] for t in d[\"targets\"] if t[\"profile\"]==\"allocs\" and t[\"service\"]==\"gosvc\"][0])' '$M/.targets.json') -ge $((a0 + 2)) ]" \
  && ok "deltas resume after the restart" || fail "deltas resume after the restart"
neg=0
for f in "$G"/allocs/all/last-5m/profiles/*.pb.gz "$G"/heap/all/last-5m/profiles/*.pb.gz \
    "$G"/block/all/last-5m/profiles/*.pb.gz "$G"/mutex/all/last-5m/profiles/*.pb.gz; do
  if go tool pprof -raw -symbolize=none "$f" 2>/dev/null | awk '/^Samples:/ {s=1; getline; next} /^Locations/ {s=0} s && /^ *-?[0-9]+( +-?[0-9]+)*:/ { sub(/:.*/, ""); if ($0 ~ /-/) bad=1 } END { exit bad }'; then :; else
    neg=$((neg + 1)); fi
done
check_eq "no stored profile has a negative value" "$neg" "0"

# --- live edits of the targets file -----------------------------------------
cat >"$T.new" <<EOF
[{"targets": ["$GOOD"],
  "labels": {"service_name": "gosvc", "env": "test"},
  "interval": "2s",
  "profiles": ["cpu", "heap", "allocs", "goroutine", "mutex", "block", "threadcreate"]},
 {"targets": ["localhost:$BASE"],
  "labels": {"service_name": "gosvc2"},
  "interval": "2s", "profiles": ["goroutine"]}]
EOF
mv "$T.new" "$T"
wait_for 30 test -r "$M/gosvc2/goroutine/all/last-5m/merged.pb.gz" && ok "added target scraped without a restart" \
  || fail "added target scraped without a restart"
wait_for 10 sh -c "! grep -q '\"bad\"' '$M/.targets.json'" && ok "removed targets are gone" \
  || fail "removed targets are gone"
curl --noproxy '*' -sf "http://$HTTP/metrics" >"$TMP/metrics2"
check_eq "removed targets leave /metrics" "$(grep -c 'service="bad"' "$TMP/metrics2")" "0"
grep -q 'profilefs_scrape_up{instance="localhost:'"$BASE"'",profile="goroutine",service="gosvc2"} 1' "$TMP/metrics2" \
  && ok "added target in /metrics" || fail "added target in /metrics"
check_eq "jobs after the edit" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"])' "$M/.targets.json")" "8"
check_eq "kept target kept its delta base" "$(status_of "$GOOD" allocs restarts)" "1"

printf '[{"targets": ["%s"],\n  "labels": {"service_name": "gosvc"},\n  "interval": "2s",,\n}]\n' "$GOOD" >"$T.new"
mv "$T.new" "$T"
wait_for 10 sh -c "grep -q '\"error\": \"line 3' '$M/.targets.json'" && ok "broken edit reported with its line: $(grep '"error"' "$M/.targets.json")" \
  || fail "broken edit reported with its line" "$(grep '"error"' "$M/.targets.json")"
check_eq "previous targets stay after a broken edit" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"])' "$M/.targets.json")" "8"
grep -q "line 3: .*keeping the previous targets" "$TMP/daemon.log" && ok "broken edit logged with line and reason" \
  || fail "broken edit logged with line and reason"

pf_stop
check_eq "SIGTERM with scraping exits 0" "$PF_RC" 0
pf_done
