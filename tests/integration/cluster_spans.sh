#!/usr/bin/env bash
# Span profiles across the fleet: one ClickHouse server (the distribution's
# default config, Merge tables: tests/clickhouse/start-default.sh), two
# daemons (hosta, hostb) each given a pprof whose samples carry span_id and
# trace_id labels, one trace across both hosts and other spans beside it.
# Their shippers fill the spans table; a third daemon with an empty store
# of its own reads the cluster: the tree's trace_id=/span_id= selectors give
# go tool pprof's exact sums of the trace across both hosts, of one host's
# span alone, of two spans of two hosts; SelectMergeSpanProfile over HTTP
# gives the same total; a span no host has is absent. Deleting a series
# removes its span rows too.
# Skipped without clickhouse-server (scripts/install-deps.sh --test installs it).
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"

NAMES="cluster-spans"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
command -v clickhouse-server >/dev/null || skip_all "clickhouse-server not installed"
command -v go >/dev/null || skip_all "go not installed"
[ -r /etc/clickhouse-server/config.xml ] || skip_all "no /etc/clickhouse-server/config.xml"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
CHH=$(free_port) CHT=$(free_port) CHI=$(free_port)
CH="http://127.0.0.1:$CHH"
CH_PID=
declare -A PIDS=()

ch_stop() {
  [ -n "$CH_PID" ] || return 0
  kill -TERM "$CH_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$CH_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$CH_PID" 2>/dev/null
  CH_PID=
}
# d_start NAME ARGS...: a daemon on $TMP/mnt-NAME, data in $TMP/data-NAME
d_start() {
  local n=$1; shift
  mkdir -p "$TMP/mnt-$n"
  "$BIN" serve --data "$TMP/data-$n" --host "$n" --clickhouse "$CH" "$@" "$TMP/mnt-$n" \
    >"$TMP/daemon-$n.log" 2>&1 &
  PIDS[$n]=$!
  for _ in $(seq 100); do
    head -c 16 "$TMP/mnt-$n/README.txt" 2>/dev/null | grep -q profilefs && return 0
    kill -0 "${PIDS[$n]}" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
d_stop() {
  local p=${PIDS[$1]:-}
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  PIDS[$1]=
  mountpoint -q "$TMP/mnt-$1" 2>/dev/null && { fusermount3 -u -z "$TMP/mnt-$1" 2>/dev/null || umount -l "$TMP/mnt-$1"; }
  return 0
}
cleanup() {
  for n in "${!PIDS[@]}"; do d_stop "$n"; done
  ch_stop
  pf_cleanup
}
trap cleanup EXIT
wait_for() {
  local n=$(($1 * 5)); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
chq() { ch_post "$CH" "$1"; }
cpu_ns() { pprof_sums "$@" | tr ' ' '\n' | sed -n 's/^cpu\/nanoseconds=//p'; }
span_rows_are() { [ "$(chq "SELECT count() FROM profilefs.spans_local WHERE host = '$1'")" = "$2" ]; }
cpu_is() { [ "$(cpu_ns "$1")" = "$2" ]; }

mkprof() { python3 "$ROOT/tests/integration/spanprof.py" "$@"; }

if CH_PID=$("$ROOT/tests/clickhouse/start-default.sh" "$TMP/ch" "$CHH" "$CHT" "$CHI"); then
  ok "cluster-spans"
else
  fail "cluster-spans" "clickhouse-server did not start"; pf_done; exit 1
fi
echo "# clickhouse-server $(chq 'SELECT version()'), one server (Merge tables)"

# One trace T across both hosts; span a1, a2 on hosta, b1 on hostb; b2 of another trace.
T=0123456789abcdef0123456789abcdef T2=fedcba9876543210fedcba9876543210
# (hosta's ids in the 16 hex digits Pyroscope writes: its profile is read back whole below)
A1=00000000000000a1 A2=00000000000000a2
mkprof "$TMP/a.pb" main.spanA1:30000000:$A1:$T main.spanA2:20000000:$A2:$T main.untagged:5000000 \
  main.shared:4000000:$A1:$T
mkprof "$TMP/b.pb" main.spanB1:7000000:b1:$T main.spanB2:100000000:b2:$T2 main.shared:3000000:b1:$T \
  main.untagged:11000000

d_start hosta || { fail "daemon hosta starts" "$(tail -3 "$TMP/daemon-hosta.log")"; pf_done; exit 1; }
d_start hostb || { fail "daemon hostb starts" "$(tail -3 "$TMP/daemon-hostb.log")"; pf_done; exit 1; }
wait_for 30 grep -q "clickhouse: connected" "$TMP/daemon-hosta.log" && ok "hosta connects" || fail "hosta connects"
mkdir -p "$TMP/mnt-hosta/ingest/spansvc/cpu" "$TMP/mnt-hostb/ingest/spansvc/cpu" 2>/dev/null
cp "$TMP/a.pb" "$TMP/mnt-hosta/ingest/spansvc/cpu/a.pb" || fail "ingest on hosta"
cp "$TMP/b.pb" "$TMP/mnt-hostb/ingest/spansvc/cpu/b.pb" || fail "ingest on hostb"
# hosta: spans a1 (2 stacks) and a2 (1); hostb: b1 (2), b2 (1); untagged samples make none.
wait_for 30 span_rows_are hosta 3 && ok "hosta ships 3 span rows (a1: 2 stacks, a2: 1)" \
  || fail "hosta's span rows" "$(chq "SELECT count() FROM profilefs.spans_local WHERE host = 'hosta'"); $(grep clickhouse "$TMP/daemon-hosta.log" | tail -3)"
wait_for 30 span_rows_are hostb 3 && ok "hostb ships 3 span rows (b1: 2 stacks, b2: 1)" \
  || fail "hostb's span rows" "$(chq "SELECT count() FROM profilefs.spans_local WHERE host = 'hostb'")"
echo "# spans_local: $(chq "SELECT host, hex(span), trace, sum(vals[2]) FROM profilefs.spans_local GROUP BY host, span, trace ORDER BY host, span FORMAT CSV" | tr '\n' ' ')"
check_eq "the spans table is a Merge table here" \
  "$(chq "SELECT engine FROM system.tables WHERE database = 'profilefs' AND name = 'spans'")" Merge

# --- a reader with an empty store of its own -----------------------------------
echo "span-test-token" >"$TMP/token"; chmod 600 "$TMP/token"
d_start reader --http 127.0.0.1:0 --http-token-file "$TMP/token" \
  || { fail "the reader starts" "$(tail -3 "$TMP/daemon-reader.log")"; pf_done; exit 1; }
R="$TMP/mnt-reader/spansvc/cpu"
wait_for 30 test -d "$R" && ok "the reader lists spansvc from the cluster" || fail "the reader lists spansvc" "$(ls "$TMP/mnt-reader")"
f="$R/trace_id=$T/all/merged.pb.gz"
wait_for 30 cpu_is "$f" 64000000 \
  && ok "trace_id=$T across both hosts: 30+20+4 ms (hosta) + 7+3 ms (hostb) = $(cpu_ns "$f") ns" \
  || fail "trace across both hosts" "got '$(cpu_ns "$f")', want 64000000; $(grep -i 'clickhouse\|span' "$TMP/daemon-reader.log" | tail -3)"
check_eq "span_id=a1: hosta's samples only (34 ms)" "$(cpu_ns "$R/span_id=a1/all/merged.pb.gz")" 34000000
check_eq "span_id=b1: hostb's samples only (10 ms)" "$(cpu_ns "$R/span_id=b1/all/merged.pb.gz")" 10000000
check_eq "span_id=a2+b2: two spans of two hosts and traces (120 ms)" \
  "$(cpu_ns "$R/span_id=a2+b2/all/merged.pb.gz")" 120000000
fns=$(go tool pprof -top -symbolize=none "$R/span_id=b1/all/merged.pb.gz" 2>/dev/null | grep -o 'main\.[A-Za-z0-9]*' | sort | tr '\n' ' ')
check_eq "span_id=b1's functions are its own" "$fns" "main.shared main.spanB1 "
check_eq "the plain merge still sums every sample of both hosts (180 ms)" \
  "$(cpu_ns "$R/all/all/merged.pb.gz")" 180000000
[ ! -e "$R/span_id=dead/all/merged.pb.gz" ] && ok "a span no host has: no merged.pb.gz" \
  || fail "a span no host has" "$(cpu_ns "$R/span_id=dead/all/merged.pb.gz")"

U="http://127.0.0.1:$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon-reader.log" | tail -1)"
code=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "Authorization: Bearer span-test-token" -XPOST \
  -H 'Content-Type: application/json' "$U/querier.v1.QuerierService/SelectMergeSpanProfile" \
  -d "{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\",\"labelSelector\":\"{service_name=\\\"spansvc\\\"}\",\"spanSelector\":[\"a1\",\"b1\"],\"start\":0,\"end\":4102444800000}")
check_eq "SelectMergeSpanProfile spans a1+b1 on the reader: HTTP code and total" \
  "$code $(jq -r '.flamegraph.total // 0' "$TMP/r" 2>/dev/null)" "200 44000000"

# --- one profile read back whole from the fleet: its span labels again ---------
rows() { go tool pprof -raw -symbolize=none "$1" 2>/dev/null | python3 "$ROOT/tests/integration/pprof_rows.py"; }
PF=$(ls "$R/host=hosta/all/profiles" 2>/dev/null | head -1)
rows "$TMP/a.pb" >"$TMP/rows.pushed"
rows "$R/host=hosta/all/profiles/$PF" >"$TMP/rows.back"
echo "# hosta's a.pb: $(wc -l <"$TMP/rows.pushed") samples pushed, $(grep -c span_id "$TMP/rows.pushed") with span_id; read back from the fleet: $(wc -l <"$TMP/rows.back") samples, $(grep -c span_id "$TMP/rows.back") with span_id"
grep -q "span_id:\[$A1\] trace_id:\[$T\]" "$TMP/rows.back" && cmp -s "$TMP/rows.pushed" "$TMP/rows.back" \
  && ok "the reader's profiles/$PF: hosta's samples with their span_id and trace_id as pushed (go tool pprof -raw)" \
  || fail "a profile read back from the fleet" "$(diff "$TMP/rows.pushed" "$TMP/rows.back" | head -6)"
PIDH=$(echo "$PF" | sed 's/.*-\([0-9a-f]*\)\.pb\.gz$/\1/')
code=$(curl -s -o "$TMP/byid.pb.gz" -w '%{http_code}' -H "Authorization: Bearer span-test-token" "$U/api/0/profiles/$PIDH")
check_eq "GET /api/0/profiles/$PIDH on the reader: HTTP code and the same samples" \
  "$code $(rows "$TMP/byid.pb.gz" | cmp -s - "$TMP/rows.pushed" && echo same)" "200 same"

# --- --query-cpu-limit: a span read of the fleet stops as the other reads do ----
# hosta ships a profile of NHEAVY spans of one trace, each its own stack; a
# reader with --query-cpu-limit 10ms refuses the trace's SelectMergeSpanProfile
# with the 503 every read past the limit gets (the plain merge of the same
# samples too); the reader without the limit answers it whole.
NHEAVY=20000 T3=00000000000000000000000000c0ffee
python3 -c "import sys; print('\n'.join('main.heavy%d:10000000:%x:%s' % (i, 0x100000 + i, sys.argv[1]) for i in range($NHEAVY)))" \
  "$T3" >"$TMP/heavy.specs"
mkprof "$TMP/heavy.pb" "@$TMP/heavy.specs"
mkdir -p "$TMP/mnt-hosta/ingest/spanheavy/cpu" 2>/dev/null
cp "$TMP/heavy.pb" "$TMP/mnt-hosta/ingest/spanheavy/cpu/heavy.pb" || fail "ingest the heavy profile on hosta"
wait_for 60 span_rows_are hosta $((3 + NHEAVY)) && ok "hosta ships $NHEAVY more span rows ($(stat -c %s "$TMP/heavy.pb") bytes of pprof)" \
  || fail "hosta's heavy span rows" "$(chq "SELECT count() FROM profilefs.spans_local WHERE host = 'hosta'")"
HID=$(printf %x $((0x100000 + 12345)))
wait_for 30 cpu_is "$R/../../spanheavy/cpu/span_id=$HID/all/merged.pb.gz" 10000000 \
  && ok "span_id=$HID, one of $NHEAVY spans (its record's ids bucketed): its own 10 ms" \
  || fail "one span of $NHEAVY" "$(cpu_ns "$R/../../spanheavy/cpu/span_id=$HID/all/merged.pb.gz")"
d_start limited --http 127.0.0.1:0 --http-token-file "$TMP/token" --query-cpu-limit 10ms \
  || { fail "a reader with --query-cpu-limit 10ms starts" "$(tail -3 "$TMP/daemon-limited.log")"; pf_done; exit 1; }
UL="http://127.0.0.1:$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon-limited.log" | tail -1)"
TICK=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TICK" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
# qcall URL METHOD JSON: a Connect call; status in $ST, body in $TMP/q
qcall() {
  ST=$(curl -s -o "$TMP/q" -w '%{http_code}' --max-time 120 -H "Authorization: Bearer span-test-token" \
    -XPOST -H 'Content-Type: application/json' "$1/querier.v1.QuerierService/$2" -d "$3")
}
SPANQ="{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\",\"labelSelector\":\"{service_name=\\\"spanheavy\\\"}\",\"spanSelector\":[\"$T3\"],\"start\":0,\"end\":4102444800000}"
PLAINQ="{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\",\"labelSelector\":\"{service_name=\\\"spanheavy\\\"}\",\"start\":0,\"end\":4102444800000}"
c0=$(cpu_s "${PIDS[reader]}")
qcall "$U" SelectMergeSpanProfile "$SPANQ"
echo "# reader (default limit): SelectMergeSpanProfile of trace $T3: HTTP $ST, total $(jq -r '.flamegraph.total // 0' "$TMP/q" 2>/dev/null), daemon CPU $c0 -> $(cpu_s "${PIDS[reader]}") s"
check_eq "without a limit: the trace's $NHEAVY spans are answered whole" \
  "$ST $(jq -r '.flamegraph.total // 0' "$TMP/q" 2>/dev/null)" "200 $((NHEAVY * 10000000))"
c0=$(cpu_s "${PIDS[limited]}")
qcall "$UL" SelectMergeSpanProfile "$SPANQ"
SPAN_ST=$ST SPAN_MSG=$(jq -r '.message // .error // empty' "$TMP/q" 2>/dev/null | head -c 200)
echo "# limited reader: SelectMergeSpanProfile: HTTP $SPAN_ST ($SPAN_MSG), daemon CPU $c0 -> $(cpu_s "${PIDS[limited]}") s"
c0=$(cpu_s "${PIDS[limited]}")
qcall "$UL" SelectMergeStacktraces "$PLAINQ"
PLAIN_ST=$ST PLAIN_MSG=$(jq -r '.message // .error // empty' "$TMP/q" 2>/dev/null | head -c 200)
echo "# limited reader: SelectMergeStacktraces of the same samples: HTTP $PLAIN_ST ($PLAIN_MSG), daemon CPU $c0 -> $(cpu_s "${PIDS[limited]}") s"
case "$SPAN_ST $SPAN_MSG" in
  "503 "*query-cpu-limit*) ok "--query-cpu-limit 10ms: the span read of the fleet is refused with 503 and the limit named" ;;
  *) fail "span read past --query-cpu-limit" "HTTP $SPAN_ST: $SPAN_MSG" ;;
esac
case "$PLAIN_ST $PLAIN_MSG" in
  "503 "*query-cpu-limit*) ok "--query-cpu-limit 10ms: the plain merge of the fleet is refused the same way" ;;
  *) fail "plain read past --query-cpu-limit" "HTTP $PLAIN_ST: $PLAIN_MSG" ;;
esac
kill -0 "${PIDS[limited]}" 2>/dev/null && ok "the limited reader is alive" || fail "the limited reader died"
d_stop limited


rm -r "$R/host=hostb" 2>/dev/null
wait_for 30 span_rows_are hostb 0 && ok "rm -r of hostb's series deletes its span rows" \
  || fail "deleting hostb's series" "$(chq "SELECT count() FROM profilefs.spans_local WHERE host = 'hostb'") rows left"
wait_for 30 cpu_is "$f" 54000000 && ok "the trace is hosta's share now (54 ms)" \
  || fail "the trace after deletion" "$(cpu_ns "$f")"
for n in hosta hostb reader; do
  kill -0 "${PIDS[$n]}" 2>/dev/null && ok "daemon $n alive" || fail "daemon $n alive"
done
pf_done
