#!/usr/bin/env bash
# A frozen ClickHouse replica does not hold reads for curl's 60 s: the
# replicated fleet of cluster_replicas.sh (ZooKeeper, two shards of two
# replicas, "r1|r2,r1|r2", reads asking each shard directly). With the
# replica each shard's reads go to first stopped by SIGSTOP (its kernel
# still takes connections, nothing answers), a read of a merged file that
# was not read before asks the other replica once the first gave no answer
# within the hedge delay (--clickhouse-hedge, 1500ms by default) and
# answers in a few seconds with the right sums (the time is printed; the
# bound asserted is 20 s). The next read asks the answering replicas first.
# The daemon says which server was slow, once, and counts the hedged reads.
# Then SIGCONT. Skipped without clickhouse-server, ZooKeeper or go.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"

NAMES="hedge-start"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
command -v clickhouse-server >/dev/null || skip_all "clickhouse-server not installed"
command -v java >/dev/null && [ -r /usr/share/java/zookeeper.jar ] || skip_all "zookeeper not installed"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent

# Ports from the pid, below the ephemeral range, apart from cluster_replicas.sh's.
P0=$((20000 + ($$ % 490) * 20))
ZK=$P0 HA=$((P0 + 1))
port() { case $1 in 11) echo $((P0 + 3)) ;; 12) echo $((P0 + 6)) ;; 21) echo $((P0 + 9)) ;; 22) echo $((P0 + 12)) ;; esac; }
url() { echo "http://127.0.0.1:$(port "$1")"; }
declare -A CH_PID
ZK_PID=

ch_start() {
  local p; p=$(port "$1")
  CH_PID[$1]=$("$ROOT/tests/clickhouse/start-replica.sh" "$TMP/ch$1" "$p" $((p + 1)) $((p + 2)) \
    "${1:0:1}" "r${1:1:1}" "$ZK" $(($(port 11) + 1)) $(($(port 12) + 1)) $(($(port 21) + 1)) \
    $(($(port 22) + 1))) || return 1
}
ch_stop() {
  local pid=${CH_PID[$1]:-}
  [ -n "$pid" ] || return 0
  kill -CONT "$pid" 2>/dev/null
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  CH_PID[$1]=
}
cleanup() {
  pf_stop
  for s in 11 12 21 22; do ch_stop $s; done
  if [ -n "$ZK_PID" ]; then kill "$ZK_PID" 2>/dev/null; wait "$ZK_PID" 2>/dev/null; fi
  pf_cleanup
}
trap cleanup EXIT
wait_for() {
  local n=$(($1 * 5)); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
sums_are() { [ "$(pprof_sums "$1")" = "$2" ]; }
metric() { curl -s "http://127.0.0.1:$HA/metrics" | awk -v m="$1" 'index($1, m) == 1 { s += $2 } END { print s + 0 }'; }

if ZK_PID=$("$ROOT/tests/clickhouse/start-zookeeper.sh" "$TMP/zk" "$ZK") && ch_start 11 && ch_start 12 &&
    ch_start 21 && ch_start 22; then
  ok "hedge-start"
else
  fail "hedge-start" "$(tail -5 "$TMP"/zk/*.log "$TMP"/ch*/stdout.log "$TMP"/ch*/error.log 2>/dev/null)"
  pf_done; exit 1
fi
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) || { fail "build genprof"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 100ms >/dev/null || fail "generate Go profiles"

pf_start --host hosta --clickhouse-replicated --clickhouse "$(url 11)|$(url 12),$(url 21)|$(url 22)" \
  --http "127.0.0.1:$HA" || { fail "daemon starts"; pf_done; exit 1; }
wait_for 30 grep -q "reads ask each shard's tables directly" "$TMP/daemon.log" \
  && ok "reads ask each shard's replicas directly" || fail "reads ask each shard's replicas directly" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
for f in 0 1 2 3; do cp "$TMP/go/cpu-000$f.pb.gz" "$TMP/mnt/ingest/steady/cpu/"; done
want=$(for f in 0 1 2 3; do pprof_sums "$TMP/go/cpu-000$f.pb.gz"; done | tr ' ' '\n' | grep = |
  awk -F= '{ s[$1] += $2; if (!($1 in o)) { o[$1] = ++k; n[k] = $1 } } END { for (i = 1; i <= k; i++) printf "%s=%.0f ", n[i], s[n[i]]; print "" }')
wait_for 30 sums_are "$TMP/mnt/steady/cpu/all/all/merged.pb.gz" "$want" \
  && ok "the fleet's sums before the stop" \
  || fail "the fleet's sums before the stop" "got $(pprof_sums "$TMP/mnt/steady/cpu/all/all/merged.pb.gz"), want $want"
# (A condition, not a deadline: 60 s for a host busy with a whole suite under ASan.
# The metric is read again at each try: a $(...) in wait_for's arguments would
# be read once, before the first.)
backlog_empty() {
  [ "$(curl -s "http://127.0.0.1:$HA/metrics" | awk '$1 == "profilefs_clickhouse_backlog_profiles" { print $2 }')" = 0 ]
}
wait_for 60 backlog_empty \
  || fail "the backlog drains before the stop" "$(curl -s "http://127.0.0.1:$HA/metrics" | grep -E '^profilefs_clickhouse_(backlog|shipped|failures|dropped|up)' | tr '\n' ' ')"

# The first replica of each shard (the one reads asked so far) freezes.
kill -STOP "${CH_PID[11]}" "${CH_PID[21]}"
ok "replicas 11 and 21 stopped (SIGSTOP)"
# timed_read NAME FILE: cat FILE, print the time, check its sums and a bound of 20 s.
timed_read() {
  local t0 t1 ms
  t0=$(date +%s%N)
  cat "$2" >"$TMP/read.pb.gz" 2>"$TMP/read.err"
  t1=$(date +%s%N)
  ms=$(((t1 - t0) / 1000000))
  echo "# $1: $ms ms"
  if [ "$ms" -lt 20000 ] && sums_are "$TMP/read.pb.gz" "$want"; then ok "$1 answers with the sums in $ms ms"
  else fail "$1 answers with the sums within 20 s" "$ms ms, sums $(pprof_sums "$TMP/read.pb.gz"), $(cat "$TMP/read.err")"; fi
}
timed_read "a new read with the replicas frozen" "$TMP/mnt/steady/cpu/host=hosta/all/merged.pb.gz"
timed_read "the next new read" "$TMP/mnt/steady/cpu/all/last-1d/merged.pb.gz"
n=$(metric profilefs_clickhouse_hedged_reads_total)
[ "$n" -ge 1 ] && ok "hedged reads counted ($n)" || fail "hedged reads counted" "$n"
line=$(grep -m1 "gave no answer to a read within 1500 ms" "$TMP/daemon.log")
[ -n "$line" ] && ok "the log names the slow server (${line#*warning: })" || fail "the log names the slow server" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
check_eq "said once per server" "$(grep -c "$(url 11) gave no answer to a read" "$TMP/daemon.log")" 1
kill -CONT "${CH_PID[11]}" "${CH_PID[21]}"
ok "replicas 11 and 21 resumed (SIGCONT)"
kill -0 "$PF_PID" 2>/dev/null && ok "daemon alive" || fail "daemon alive"
pf_stop
grep -q "AddressSanitizer\|runtime error" "$TMP/daemon.log" && fail "no sanitizer errors in the log" \
  || ok "no sanitizer errors in the log"
pf_done
