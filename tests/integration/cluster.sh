#!/usr/bin/env bash
# A fleet on ClickHouse (--clickhouse): two real clickhouse-server processes
# on loopback as the two shards of one cluster (tests/clickhouse/), two
# daemons with their own data dirs and mounts pointed at it. A profile copied
# into A's ingest/ and one pushed over B's HTTP API appear in both trees with
# go tool pprof's sums; rows land on both shards; the cluster's sums equal the
# embedded store's. Faults: bad URLs, a server that answers garbage, a refused
# INSERT, a shard stopped for 30 s during steady ingest, kill -9 with a
# backlog: every acknowledged profile arrives exactly once.
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

# Ports from the pid, so that parallel runs do not meet, and below the
# kernel's ephemeral range (32768 and up): a server restarted on its port must
# not find it taken as the local end of some client's connection.
P0=$((20000 + ($$ % 1200) * 10))
CH1=$P0 CH1T=$((P0 + 1)) CH2=$((P0 + 3)) CH2T=$((P0 + 4))
HA=$((P0 + 6)) HB=$((P0 + 7)) GARBAGE=$((P0 + 8))
URLS="http://127.0.0.1:$CH1,http://127.0.0.1:$CH2"
CH_PIDS=()
EXTRA_PIDS=()

ch_start() {	# ch_start N: server N (1 or 2)
  local n=$1 http tcp
  if [ "$n" = 1 ]; then http=$CH1 tcp=$CH1T; else http=$CH2 tcp=$CH2T; fi
  CH_PIDS[$n]=$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch$n" "$http" "$tcp" $((tcp + 1)) \
    "$CH1T" "$CH2T") || return 1
}
ch_stop() {	# ch_stop N
  local pid=${CH_PIDS[$1]:-}
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
  # not this shell's child (start.sh started it): wait until it is gone, ports and all
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  CH_PIDS[$1]=
}
chq() {	# chq N SQL: run SQL on server N
  local port=$CH1; [ "$1" = 2 ] && port=$CH2
  ch_post "http://127.0.0.1:$port" "$2"
}

# Daemon B and extra daemons run beside lib.sh's A ($TMP/mnt, $TMP/data).
b_start() {
  mkdir -p "$TMP/mntb"
  "$BIN" serve --data "$TMP/datab" --host hostb --clickhouse "http://127.0.0.1:$CH2,http://127.0.0.1:$CH1" \
    --http "127.0.0.1:$HB" "$TMP/mntb" >>"$TMP/daemonb.log" 2>&1 &
  B_PID=$!
  for _ in $(seq 100); do
    head -c 16 "$TMP/mntb/README.txt" 2>/dev/null | grep -q profilefs && return 0
    sleep 0.1
  done
  return 1
}
b_stop() {
  [ -n "${B_PID:-}" ] || return 0
  kill -TERM "$B_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$B_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$B_PID" 2>/dev/null
  wait "$B_PID" 2>/dev/null
  B_PID=
}
cleanup() {
  b_stop
  for p in "${EXTRA_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  mountpoint -q "$TMP/mntb" 2>/dev/null && { fusermount3 -u -z "$TMP/mntb" 2>/dev/null || umount -l "$TMP/mntb"; }
  ch_stop 1
  ch_stop 2
  pf_cleanup
}
trap cleanup EXIT

# wait_for SECONDS CMD...: until CMD succeeds
wait_for() {
  local n=$(($1 * 5)); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
sums_are() { [ "$(pprof_sums "$1")" = "$2" ]; }
# cluster_count SERVICE: "profiles distinct" of SERVICE across the cluster
cluster_count() {
  chq 1 "SELECT count(), uniqExact(gid) FROM profilefs.profiles WHERE service = '$1' FORMAT TSV" | tr '\t' ' '
}
count_is() { [ "$(cluster_count "$1")" = "$2" ]; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }

# --- the cluster ---------------------------------------------------------------
if ch_start 1 && ch_start 2; then ok "clickhouse-servers-start"
else fail "clickhouse-servers-start" "$(tail -5 "$TMP"/ch*/stdout.log "$TMP"/ch*/error.log 2>/dev/null)"; pf_done; exit 1; fi
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) || { fail "build genprof"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 100ms >/dev/null || fail "generate Go profiles"

# --- bad configurations: clear errors ----------------------------------------------
"$BIN" serve --data "$TMP/dx" --clickhouse "ftp://127.0.0.1:$CH1" "$TMP/mx" >"$TMP/bad.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "does not start with http://" "$TMP/bad.log" && ok "a malformed URL is refused with its reason" \
  || fail "a malformed URL is refused with its reason" "rc $rc: $(cat "$TMP/bad.log")"

# Nothing listens there: the daemon starts, serves local data, and says so.
pf_start --host hosta --clickhouse "http://127.0.0.1:$((P0 + 9))" --http "127.0.0.1:$HA" \
  || { fail "daemon starts with an unreachable cluster"; pf_done; exit 1; }
cp "$TMP/go/cpu-0000.pb.gz" "$TMP/mnt/ingest/local/cpu/"
want1=$(pprof_sums "$TMP/go/cpu-0000.pb.gz")
wait_for 5 sums_are "$TMP/mnt/local/cpu/all/all/merged.pb.gz" "$want1" && ok "unreachable cluster: local data served" \
  || fail "unreachable cluster: local data served"
wait_for 5 grep -q "clickhouse: http://127.0.0.1:$((P0 + 9)): .*[Cc]onnect" "$TMP/daemon.log" \
  && ok "unreachable cluster: the log says why" || fail "unreachable cluster: the log says why" "$(tail -3 "$TMP/daemon.log")"
curl -s "http://127.0.0.1:$HA/healthz" | grep -q "clickhouse: .*backlog 1 profiles" && ok "unreachable cluster: /healthz says so" \
  || fail "unreachable cluster: /healthz says so" "$(curl -s "http://127.0.0.1:$HA/healthz")"
check_eq "unreachable cluster: /metrics says so" "$(metric "$HA" profilefs_clickhouse_up)" 0
pf_stop

# A server that answers garbage.
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.end_headers(); self.wfile.write(b"\x00\xffgarbage\n" * 3)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$GARBAGE" &
EXTRA_PIDS+=($!)
sleep 0.5
rm -rf "$TMP/mx"; mkdir -p "$TMP/mx"
"$BIN" serve --data "$TMP/dg" --clickhouse "http://127.0.0.1:$GARBAGE" "$TMP/mx" >"$TMP/garbage.log" 2>&1 &
g=$!
wait_for 10 grep -q "does not answer like ClickHouse" "$TMP/garbage.log" && ok "a server answering garbage: a clear error" \
  || fail "a server answering garbage: a clear error" "$(tail -3 "$TMP/garbage.log")"
kill -0 "$g" 2>/dev/null && ok "a server answering garbage: the daemon keeps running" || fail "a server answering garbage: the daemon keeps running"
kill -TERM "$g"; wait "$g" 2>/dev/null

# --- two hosts, two shards -------------------------------------------------------------
# A's data dir already holds the profile of service "local": it ships now.
pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" || { fail "daemon A starts"; pf_done; exit 1; }
b_start || { fail "daemon B starts"; pf_done; exit 1; }
ok "two daemons start against the cluster"
wait_for 20 grep -q "clickhouse: connected" "$TMP/daemon.log" && ok "A: schema created, connected" || fail "A: schema created, connected"
chq 1 "SHOW CREATE TABLE profilefs.profiles_local" | grep -q "index_granularity = 256" \
  && ok "profiles_local: 256 rows per granule" \
  || fail "profiles_local: 256 rows per granule" "$(chq 1 "SHOW CREATE TABLE profilefs.profiles_local")"
cp "$TMP/go/cpu-0000.pb.gz" "$TMP/go/cpu-0001.pb.gz" "$TMP/mnt/ingest/goapp/cpu/" || fail "cp into A's ingest/"
code=$(curl -s -o "$TMP/push.json" -w '%{http_code}' --data-binary @"$TMP/go/cpu-0002.pb.gz" \
  "http://127.0.0.1:$HB/api/0/profiles?service=goapp&type=cpu&labels=env=b")
check_eq "push over B's HTTP API" "$code" 200
go tool pprof -proto "$TMP"/go/cpu-000[012].pb.gz >"$TMP/want3.pb.gz" 2>/dev/null
want3=$(pprof_sums "$TMP/want3.pb.gz")
for m in mnt mntb; do
  wait_for 15 sums_are "$TMP/$m/goapp/cpu/all/last-1h/merged.pb.gz" "$want3" \
    && ok "$m: both hosts' profiles, sums of go tool pprof -proto" \
    || fail "$m: both hosts' profiles, sums of go tool pprof -proto" "got $(pprof_sums "$TMP/$m/goapp/cpu/all/last-1h/merged.pb.gz"), want $want3"
done
check_eq "label sets carry host" "$(ls "$TMP/mntb/goapp/cpu" | tr '\n' ' ')" "all env=b,host=hostb host=hosta "
check_eq "A's local profile from before is in B's tree" "$(pprof_sums "$TMP/mntb/local/cpu/host=hosta/all/merged.pb.gz")" "$want1"
want2=$(pprof_sums -proto "$TMP/go/cpu-0002.pb.gz")
check_eq "a selector reads one host" "$(pprof_sums "$TMP/mnt/goapp/cpu/host=hostb/last-1h/merged.pb.gz")" "$(pprof_sums "$TMP/go/cpu-0002.pb.gz")"
# Label matchers are conditions in the fleet's queries too (a label a series lacks reads as "").
check_eq "fleet: a != matcher" "$(pprof_sums "$TMP/mnt/goapp/cpu/host!=hosta/last-1h/merged.pb.gz")" "$(pprof_sums "$TMP/go/cpu-0002.pb.gz")"
check_eq "fleet: a regex matcher" "$(pprof_sums "$TMP/mnt/goapp/cpu/host=~h.*b/last-1h/merged.pb.gz")" "$(pprof_sums "$TMP/go/cpu-0002.pb.gz")"
go tool pprof -proto "$TMP"/go/cpu-000[01].pb.gz >"$TMP/want01.pb.gz" 2>/dev/null
check_eq "fleet: !~ selects the series without the label" "$(pprof_sums "$TMP/mntb/goapp/cpu/env!~b/last-1h/merged.pb.gz")" "$(pprof_sums "$TMP/want01.pb.gz")"
got=$(curl -s -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$HA/querier.v1.QuerierService/SelectMergeStacktraces" \
  -d '{"profileTypeID":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","labelSelector":"{service_name=\"goapp\",host=~\"host.*b\"}","start":"1","end":"4102444800000"}' | jq -r '.flamegraph.total // 0')
check_eq "fleet: the Grafana API with a matcher" "cpu/nanoseconds=$got" "$(pprof_sums "$TMP/go/cpu-0002.pb.gz" | tr ' ' '\n' | grep '^cpu/')"
grep -q '"profiles": 3' "$TMP/mntb/goapp/cpu/all/last-1h/meta.json" && ok "meta.json counts the fleet's profiles" \
  || fail "meta.json counts the fleet's profiles"
go tool pprof -top "$TMP/mntb/goapp/cpu/all/last-1h/merged.pb.gz" >/dev/null 2>&1 && \
  [ -s "$TMP/mntb/goapp/cpu/all/last-1h/flamegraph.svg" ] && [ -s "$TMP/mntb/goapp/cpu/all/last-1h/top.txt" ] && \
  ok "generated files of the fleet (merged, flame graph, top)" || fail "generated files of the fleet (merged, flame graph, top)"
curl -s -o "$TMP/hm.pb.gz" "http://127.0.0.1:$HA/api/0/profiles/merge?service=goapp&type=cpu&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"
check_eq "HTTP merge reads the fleet" "$(pprof_sums "$TMP/hm.pb.gz")" "$want3"
# Span profiles over the two shards: one trace on both hosts, a span on each.
T=0123456789abcdef0123456789abcdef
python3 "$ROOT/tests/integration/spanprof.py" "$TMP/sa.pb" main.sa:30000000:a1:$T main.plain:5000000
python3 "$ROOT/tests/integration/spanprof.py" "$TMP/sb.pb" main.sb:7000000:b1:$T main.plain:1000000
mkdir -p "$TMP/mnt/ingest/spansvc/cpu" "$TMP/mntb/ingest/spansvc/cpu" 2>/dev/null
{ cp "$TMP/sa.pb" "$TMP/mnt/ingest/spansvc/cpu/" && cp "$TMP/sb.pb" "$TMP/mntb/ingest/spansvc/cpu/"; } || fail "cp the span profiles"
cpu_of() { pprof_sums "$1" | tr ' ' '\n' | sed -n 's/^cpu\/nanoseconds=//p'; }
trace_is() { [ "$(cpu_of "$TMP/mntb/spansvc/cpu/trace_id=$T/all/merged.pb.gz")" = 37000000 ]; }
wait_for 15 trace_is && ok "fleet (two shards): trace_id= sums the trace across both hosts (30 + 7 ms)" \
  || fail "fleet (two shards): a trace across both hosts" "got $(cpu_of "$TMP/mntb/spansvc/cpu/trace_id=$T/all/merged.pb.gz"), want 37000000"
check_eq "fleet (two shards): span_id=a1 is hosta's samples only" "$(cpu_of "$TMP/mntb/spansvc/cpu/span_id=a1/all/merged.pb.gz")" 30000000
echo "# span rows on the shards: $(chq 1 "SELECT count() FROM profilefs.spans_local") and $(chq 2 "SELECT count() FROM profilefs.spans_local")"
# profiles/ of the other host: each stored profile, rebuilt from the cluster.
P="$TMP/mntb/goapp/cpu/host=hosta/last-1h/profiles"
np=$(ls "$P" 2>/dev/null | wc -l)
check_eq "profiles/ lists the other host's profiles" "$np" 2
go tool pprof -proto "$P"/*.pb.gz >"$TMP/pa.pb.gz" 2>/dev/null
go tool pprof -proto "$TMP"/go/cpu-000[01].pb.gz >"$TMP/want2.pb.gz" 2>/dev/null
check_eq "the other host's profiles/ files have their sums" "$(pprof_sums "$TMP/pa.pb.gz")" "$(pprof_sums "$TMP/want2.pb.gz")"

# Mixed sample types: merged on the types they share, as the embedded store does.
for f in "$REAL/google-pprof/sample.cpu" "$TMP/go/cpu-0000.pb.gz" "$REAL/pyroscope/profile_java" \
    "$REAL/pyroscope/profile_python"; do cp "$f" "$TMP/mnt/ingest/mixed/cpu/" || fail "cp $f (mixed)"; done
wantm=$(for f in "$REAL/google-pprof/sample.cpu" "$TMP/go/cpu-0000.pb.gz" "$REAL/pyroscope/profile_java"; do pprof_sums "$f"; done |
  grep -o 'cpu/nanoseconds=[0-9]*' | awk -F= '{s += $2} END {printf "cpu/nanoseconds=%.0f", s}')
mixed_ok() { [ "$(pprof_sums "$TMP/mntb/mixed/cpu/all/all/merged.pb.gz" | tr -d ' ')" = "$wantm" ]; }
wait_for 15 mixed_ok && ok "mixed sample types merge on the shared ones over the cluster" \
  || fail "mixed sample types merge on the shared ones over the cluster" "$(pprof_sums "$TMP/mntb/mixed/cpu/all/all/merged.pb.gz"), want $wantm"
# The left-out profile may reach the cluster after the others: wait for it too.
left_ok() { grep -q 'share none with the merged' "$TMP/mntb/mixed/cpu/all/all/meta.json"; }
wait_for 15 left_ok && ok "meta.json says which profile was left out" \
  || fail "meta.json says which profile was left out" "$(cat "$TMP/mntb/mixed/cpu/all/all/meta.json" 2>&1 | head -30)"
tl=$(awk -F, 'NR > 1 {s += $2} END {printf "%.0f", s}' "$TMP/mntb/mixed/cpu/all/all/timeline.csv")
check_eq "the timeline of a mixed range adds up over the cluster" "cpu/nanoseconds=$tl" "$wantm"

# Gauges: heap profiles, averaged per series as the embedded store does.
cp "$TMP/go/heap.pb.gz" "$TMP/mnt/ingest/goapp/heap/" && cp "$TMP/go/heap.pb.gz" "$TMP/mnt/ingest/goapp/heap/"
curl -s -o /dev/null --data-binary @"$TMP/go/heap.pb.gz" "http://127.0.0.1:$HB/api/0/profiles?service=goapp&type=heap"
wait_for 10 count_is goapp "6 6"

# More profiles from A until both shards hold rows (a batch goes to one shard).
for i in $(seq 1 16); do
  n1=$(chq 1 "SELECT count() FROM profilefs.profiles_local")
  n2=$(chq 2 "SELECT count() FROM profilefs.profiles_local")
  [ "${n1:-0}" -gt 0 ] && [ "${n2:-0}" -gt 0 ] && break
  cp "$TMP/go/cpu-0003.pb.gz" "$TMP/mnt/ingest/spread/cpu/"; sleep 0.5
done
[ "${n1:-0}" -gt 0 ] && [ "${n2:-0}" -gt 0 ] && ok "rows on both shards ($n1, $n2)" || fail "rows on both shards" "$n1, $n2"
chq 1 "SELECT count() FROM profilefs.stacks_local" | grep -q '^[1-9]' && ok "stacks stored once under their hash" || fail "stacks stored once under their hash"

# --- a refused INSERT: a clear error, then it arrives once ---------------------------
chq 1 "RENAME TABLE profilefs.profiles TO profilefs.profiles_away"
chq 2 "RENAME TABLE profilefs.profiles TO profilefs.profiles_away"
cp "$TMP/go/cpu-0001.pb.gz" "$TMP/mnt/ingest/refused/cpu/"
wait_for 10 grep -q "clickhouse: .*profiles.*doesn't exist" "$TMP/daemon.log" && ok "refused INSERT: the log says why" \
  || fail "refused INSERT: the log says why" "$(grep clickhouse "$TMP/daemon.log" | tail -2)"
wait_for 15 count_is refused "1 1" && ok "refused INSERT: the profile arrives once the schema is back" \
  || fail "refused INSERT: the profile arrives once the schema is back" "$(cluster_count refused)"

# --- a shard down for 30 s during steady ingest --------------------------------------------
acked=0
ch_stop 2
t_end=$(( $(date +%s) + 30 ))
read_failed=0
while [ "$(date +%s)" -lt "$t_end" ]; do
  for f in "$TMP"/go/cpu-000[0-3].pb.gz; do
    cp "$f" "$TMP/mnt/ingest/steady/cpu/" && acked=$((acked + 1))
  done
  if [ "$read_failed" = 0 ] && ! cat "$TMP/mntb/goapp/cpu/all/all/merged.pb.gz" >/dev/null 2>"$TMP/readerr"; then
    read_failed=1
  fi
  sleep 1
done
grep -q "Input/output error" "$TMP/readerr" 2>/dev/null && ok "shard down: a read fails with EIO, not a partial profile" \
  || fail "shard down: a read fails with EIO, not a partial profile" "$(cat "$TMP/readerr" 2>/dev/null)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HB/api/0/profiles/merge?service=goapp&type=cpu&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z")
check_eq "shard down: HTTP merge answers 503" "$code" 503
grep -q "clickhouse: merging\|clickhouse: listing" "$TMP/daemonb.log" && ok "shard down: the reason is logged" || fail "shard down: the reason is logged"
[ "$(metric "$HA" profilefs_clickhouse_backlog_profiles)" != 0 ] && ok "shard down: a backlog builds up" || fail "shard down: a backlog builds up"
ch_start 2 || fail "restart shard 2"
wait_for 60 count_is steady "$acked $acked" && ok "shard back: all $acked acknowledged profiles arrived once" \
  || fail "shard back: all $acked acknowledged profiles arrived once" "$(cluster_count steady)"
wait_for 10 metric_is "$HA" profilefs_clickhouse_backlog_profiles 0 && ok "shard back: the backlog drained" || fail "shard back: the backlog drained"

# --- kill -9 with a backlog ---------------------------------------------------------------------
ch_stop 2
killed=0
for i in $(seq 1 12); do
  cp "$TMP/go/cpu-000$((i % 4)).pb.gz" "$TMP/mnt/ingest/killed/cpu/" && killed=$((killed + 1))
  sleep 0.2
done
bl=$(metric "$HA" profilefs_clickhouse_backlog_profiles)
kill -9 "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID=
fusermount3 -u -z "$TMP/mnt" 2>/dev/null
[ "${bl:-0}" -gt 0 ] && ok "kill -9 with a backlog of $bl profiles" || fail "kill -9 with a backlog" "backlog '$bl'"
ch_start 2 || fail "restart shard 2 again"
pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" || fail "daemon A restarts"
wait_for 60 count_is killed "$killed $killed" && ok "after kill -9: all $killed acknowledged profiles arrived once" \
  || fail "after kill -9: all $killed acknowledged profiles arrived once" "$(cluster_count killed)"

# --- the cluster's sums are the embedded store's ------------------------------------------------
wait_for 10 metric_is "$HA" profilefs_clickhouse_backlog_profiles 0
for t in cpu heap; do
  for s in goapp steady mixed; do
    [ -d "$TMP/mnt/$s/$t" ] || continue
    eval "cl_${s}_$t=\"\$(pprof_sums \"\$TMP/mnt/$s/$t/host=hosta/all/merged.pb.gz\")\""
  done
done
pf_stop
pf_start || fail "daemon A restarts without the cluster"
for t in cpu heap; do
  for s in goapp steady mixed; do
    [ -d "$TMP/mnt/$s/$t" ] || continue
    eval "cl=\"\${cl_${s}_$t}\""
    check_eq "$s/$t: the cluster's sums equal the embedded store's" "$cl" "$(pprof_sums "$TMP/mnt/$s/$t/all/all/merged.pb.gz")"
  done
done
pf_stop

# --- deletion in the fleet ---------------------------------------------------------------------
# rm -r in A's mount of a label set B pushed, and DELETE over B's HTTP API of
# a profile A shipped: the rows leave ClickHouse, and both trees' merges (which
# ClickHouse computes from its window sums) leave them out.
pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" || fail "daemon A restarts with the cluster"
wait_for 20 test -d "$TMP/mnt/goapp/cpu/env=b,host=hostb" && ok "deletion: A sees B's label set" \
  || fail "deletion: A sees B's label set"
rm -r "$TMP/mnt/goapp/cpu/env=b,host=hostb" && ok "deletion: rm -r of B's label set in A's mount" \
  || fail "deletion: rm -r of B's label set in A's mount"
check_eq "deletion: no row of that label set in ClickHouse" \
  "$(chq 1 "SELECT count() FROM profilefs.profiles WHERE service = 'goapp' AND type = 'cpu' AND labels = 'env=b,host=hostb' FORMAT TSV")" 0
ls "$TMP/mntb/goapp/cpu" | grep -q "env=b" && fail "deletion: B no longer lists the label set" \
  || ok "deletion: B no longer lists the label set"
wait_for 10 sums_are "$TMP/mntb/goapp/cpu/all/all/merged.pb.gz" "$(pprof_sums "$TMP/want2.pb.gz")" \
  && ok "deletion: B's merge holds A's two profiles only" \
  || fail "deletion: B's merge holds A's two profiles only" "$(pprof_sums "$TMP/mntb/goapp/cpu/all/all/merged.pb.gz")"
P="$TMP/mntb/goapp/cpu/host=hosta/all/profiles"
first=$(ls "$P" | head -1); second=$(ls "$P" | tail -1)
cp "$P/$second" "$TMP/kept.pb.gz"
id=$(echo "$first" | sed 's/.*-\([0-9a-f]\{16\}\)\.pb\.gz$/\1/')
code=$(curl -s -o "$TMP/del.json" -w '%{http_code}' -X DELETE "http://127.0.0.1:$HB/api/0/profiles/$id")
check_eq "deletion: DELETE of A's profile over B's API" "$code" 200
check_eq "deletion: its row left ClickHouse" \
  "$(chq 1 "SELECT count() FROM profilefs.profiles WHERE gid = $((16#$id)) FORMAT TSV")" 0
check_eq "deletion: the window sums count one goapp cpu profile" \
  "$(chq 1 "SELECT sum(profiles) FROM profilefs.counts10 WHERE service = 'goapp' AND type = 'cpu' FORMAT TSV")" 1
for m in mnt mntb; do
  wait_for 10 sums_are "$TMP/$m/goapp/cpu/all/all/merged.pb.gz" "$(pprof_sums "$TMP/kept.pb.gz")" \
    && ok "deletion: $m's merge holds the one profile left" \
    || fail "deletion: $m's merge holds the one profile left" "$(pprof_sums "$TMP/$m/goapp/cpu/all/all/merged.pb.gz")"
done
check_eq "deletion: A's profiles/ lists one" "$(ls "$TMP/mnt/goapp/cpu/host=hosta/all/profiles" | wc -l)" 1
pf_stop

# --- stacks are addressed by their digest; a forged row is never used ------------------------
# A stack's row is found by the SHA-256 of its frames, so no pushed label can
# collide with another service's stack. Forge what a collision would have done:
# rows of a victim's addresses with other frames, merged by OPTIMIZE FINAL.
# Stacks no other section shipped, read by daemons that never read them.
python3 "$ROOT/tests/tools/api_attacks.py" kprofile "$TMP/checkout.pb.gz" >/dev/null
b_stop
pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" || fail "daemon A starts (poisoning)"
b_start || fail "daemon B starts (poisoning)"
curl -s -o /dev/null --data-binary @"$TMP/checkout.pb.gz" \
  "http://127.0.0.1:$HA/api/0/profiles?service=checkout&type=cpu" || fail "push checkout"
wait_for 20 count_is checkout "1 1" || fail "checkout reaches the cluster" "$(cluster_count checkout)"
chq 1 "SELECT DISTINCT hash FROM profilefs.stacks WHERE hash GLOBAL IN (SELECT arrayJoin(stacks) FROM profilefs.profiles WHERE service = 'checkout') FORMAT TSV" >"$TMP/victim.hashes"
nv=$(wc -l <"$TMP/victim.hashes")
[ "$nv" -gt 0 ] && ! grep -qvx '[0-9a-f]\{32\}' "$TMP/victim.hashes" \
  && ok "checkout's $nv stacks are stored under 128-bit digests" || fail "checkout's stacks are stored under 128-bit digests" "$(head -2 "$TMP/victim.hashes")"
evil=$(printf '0\0370\037\037\037\037\037EVIL\037EVIL\037evil.go\0370\0371\0370')
awk -v e="$evil" '{ printf "2000-01-01\t%s\t%s\n", $1, e }' "$TMP/victim.hashes" >"$TMP/evil.tsv"
for n in 1 2; do
  port=$CH1; [ $n = 2 ] && port=$CH2
  curl -sS "http://127.0.0.1:$port/?query=INSERT%20INTO%20profilefs.stacks_local%20FORMAT%20TabSeparated" \
    --data-binary @"$TMP/evil.tsv" || fail "forge stack rows on server $n"
  chq $n "OPTIMIZE TABLE profilefs.stacks_local FINAL"
done
check_eq "the forged rows stay beside the true ones after OPTIMIZE FINAL" \
  "$(chq 1 "SELECT count() FROM profilefs.stacks WHERE frames LIKE '%EVIL%'")" "$((nv * 2))"
want=$(pprof_sums "$TMP/checkout.pb.gz")
for m in mnt mntb; do
  check_eq "$m: checkout still shows its own stacks" "$(pprof_sums "$TMP/$m/checkout/cpu/all/all/merged.pb.gz")" "$want"
  grep -q EVIL "$TMP/$m/checkout/cpu/all/all/top.txt" && fail "$m: no forged frame in top.txt" || ok "$m: no forged frame in top.txt"
done
grep -q "does not match its address" "$TMP/daemon.log" && grep -q "does not match its address" "$TMP/daemonb.log" \
  && ok "both readers log the forged rows they ignored" || fail "both readers log the forged rows they ignored" \
  "$(grep -h "clickhouse" "$TMP/daemon.log" "$TMP/daemonb.log" | tail -4)"
[ "$(metric "$HB" profilefs_clickhouse_bad_stacks_total)" -gt 0 ] 2>/dev/null \
  && ok "/metrics counts the ignored rows" || fail "/metrics counts the ignored rows"
b_stop
pf_stop

# A database of an earlier build (64-bit stack hashes) is refused with the reason.
chq 1 "CREATE DATABASE IF NOT EXISTS oldfs"
chq 1 "CREATE TABLE oldfs.stacks_local (date Date, hash UInt64, frames String) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(date) ORDER BY hash"
mkdir -p "$TMP/mold"
"$BIN" serve --data "$TMP/dold" --clickhouse "http://127.0.0.1:$CH1/oldfs" "$TMP/mold" >"$TMP/old.log" 2>&1 &
OLD_PID=$!
EXTRA_PIDS+=("$OLD_PID")
wait_for 20 grep -q "holds the schema of an earlier profilefs" "$TMP/old.log" \
  && ok "an earlier build's database is refused with the reason" || fail "an earlier build's database is refused" "$(tail -3 "$TMP/old.log")"
kill -TERM "$OLD_PID" 2>/dev/null; wait "$OLD_PID" 2>/dev/null
mountpoint -q "$TMP/mold" && fusermount3 -u -z "$TMP/mold"

# Tables of a build before the 256-row granules (ClickHouse's default, 8192):
# used as they are, and the log says how to remake them.
chq 1 "CREATE DATABASE IF NOT EXISTS oldgran"
chq 1 "CREATE TABLE oldgran.profiles_local (date Date, time DateTime, ns Int64, host String, id UInt64, gid UInt64, batch UInt64, service String, type String, labels String, sig String, sigh UInt64, hdr String, period Int64, ntypes UInt8, gauges UInt64, totals Array(Int64), stacks Array(FixedString(32)), vals Array(Int64)) ENGINE = MergeTree PARTITION BY date ORDER BY (service, type, labels, ns, gid)"
"$BIN" serve --data "$TMP/dgran" --clickhouse "http://127.0.0.1:$CH1/oldgran" "$TMP/mold" >"$TMP/gran.log" 2>&1 &
OLD_PID=$!
EXTRA_PIDS+=("$OLD_PID")
wait_for 20 grep -q "clickhouse: connected" "$TMP/gran.log" \
  && grep -q "oldgran.profiles_local was made by an earlier build (index_granularity = 8192).*tells how to remake it" "$TMP/gran.log" \
  && ok "an earlier build's 8192-row granules: used, and the log says how to remake them" \
  || fail "an earlier build's 8192-row granules: used, and the log says so" "$(tail -3 "$TMP/gran.log")"
kill -TERM "$OLD_PID" 2>/dev/null; wait "$OLD_PID" 2>/dev/null
mountpoint -q "$TMP/mold" && fusermount3 -u -z "$TMP/mold"

# --- retention is one cluster setting -------------------------------------------------------
# A day long past on both servers, and today's rows: a daemon's own --retention
# (its local store's) drops nothing in ClickHouse; --clickhouse-retention sets
# the fleet's, which every daemon applies, and one whose --retention differs
# says which applies.
for n in 1 2; do
  chq $n "INSERT INTO profilefs.series_local VALUES ('2001-01-01', '2001-01-01 00:00:00', 'ancient', 'cpu', 'host=x', 1)"
done
old_days() { chq 1 "SELECT count() FROM system.parts WHERE database = 'profilefs' AND active AND partition = '2001-01-01'"; }
old_days_are() { [ "$(old_days)" = "$1" ]; }
recent() { chq 1 "SELECT count() FROM profilefs.profiles WHERE date >= today() - 29"; }
recent_before=$(recent)
: >"$TMP/daemon.log"
pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" --retention 1d || fail "daemon A starts (retention)"
wait_for 20 grep -q "the cluster has no retention setting" "$TMP/daemon.log" \
  && ok "no cluster setting: the log says ClickHouse keeps everything" \
  || fail "no cluster setting: the log says ClickHouse keeps everything" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
check_eq "a host's --retention 1d drops no day of the fleet" "$(old_days)" 1
mkdir -p "$TMP/mntc"
"$BIN" serve --data "$TMP/datac" --host hostc --clickhouse "$URLS" --clickhouse-retention 30d "$TMP/mntc" >"$TMP/daemonc.log" 2>&1 &
C_PID=$!
EXTRA_PIDS+=("$C_PID")
wait_for 20 grep -q "the cluster's retention is now 30d" "$TMP/daemonc.log" \
  && ok "--clickhouse-retention 30d is written" || fail "--clickhouse-retention 30d is written" "$(tail -3 "$TMP/daemonc.log")"
wait_for 20 old_days_are 0 && ok "the cluster's retention drops the days past it, on every server" \
  || fail "the cluster's retention drops the days past it" "$(old_days) left"
check_eq "the cluster's retention keeps the profiles of the last 30 days" "$(recent)" "$recent_before"
check_eq "the setting is one row per server" "$(chq 2 "SELECT value FROM profilefs.settings_local WHERE name = 'retention' FORMAT TSV")" 2592000
kill -TERM "$C_PID" 2>/dev/null; wait "$C_PID" 2>/dev/null
mountpoint -q "$TMP/mntc" && fusermount3 -u -z "$TMP/mntc"
pf_stop
pf_start --host hosta --clickhouse "$URLS" --http "127.0.0.1:$HA" --retention 1d || fail "daemon A restarts (retention)"
wait_for 20 grep -q "the cluster's retention 30d (set by hostc .*) applies to ClickHouse; this host's --retention 1d applies to its local store only" "$TMP/daemon.log" \
  && ok "a daemon whose --retention differs says the cluster's applies" \
  || fail "a daemon whose --retention differs says the cluster's applies" "$(grep retention "$TMP/daemon.log" | tail -3)"
pf_stop

grep -q "ERROR\|AddressSanitizer\|runtime error" "$TMP/daemon.log" "$TMP/daemonb.log" && fail "no sanitizer errors in the logs" \
  || ok "no sanitizer errors in the logs"
pf_done
