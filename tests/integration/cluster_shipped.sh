#!/usr/bin/env bash
# What a host has shipped it does not ship again, and what it skips still
# reads back right. One ClickHouse server (the distribution's default config,
# tests/clickhouse/start-default.sh), two daemons with stores of their own:
#   - A pushes a Go CPU profile, then the same stacks again: the second
#     profile adds no row to stacks_local (RowBinary inserts, the shipped set);
#   - B, another host, ships the same stacks: the addresses are the same
#     (content addresses), and each host's sums read back through B's tree;
#   - A restarts (its shipped set is in memory only): it ships the stacks of
#     its next profile again, and the sums stay exact;
#   - the server loses its data (every table truncated): A sees the count
#     drop, ships its next profile's stacks again, and that profile reads
#     back with go tool pprof's sums (without it, its frames would be gone);
#   - a backlog of 3,000 profiles, queued while the server was down, arrives
#     once, sent by a sender thread, and every tier sums what the rows hold.
# Skipped without clickhouse-server (scripts/install-deps.sh --test installs it).
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"

NAMES="clickhouse-starts"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
command -v clickhouse-server >/dev/null || skip_all "clickhouse-server not installed"
command -v go >/dev/null || skip_all "go not installed"
[ -r /etc/clickhouse-server/config.xml ] || skip_all "no /etc/clickhouse-server/config.xml"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
CHH=$(free_port) CHT=$(free_port) CHI=$(free_port) HA=$(free_port) HB=$(free_port)
CH="http://127.0.0.1:$CHH"
CH_PID=
B_PID=

ch_stop() {
  [ -n "$CH_PID" ] || return 0
  kill -TERM "$CH_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$CH_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$CH_PID" 2>/dev/null
  CH_PID=
}
b_stop() {
  [ -n "$B_PID" ] || return 0
  kill -TERM "$B_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$B_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$B_PID" 2>/dev/null
  wait "$B_PID" 2>/dev/null
  B_PID=
}
cleanup() {
  b_stop
  mountpoint -q "$TMP/mntb" 2>/dev/null && { fusermount3 -u -z "$TMP/mntb" 2>/dev/null || umount -l "$TMP/mntb"; }
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
rows_are() { [ "$(chq "SELECT count() FROM profilefs.profiles_local")" = "$1" ]; }
sums_are() { [ "$(pprof_sums "$1")" = "$2" ]; }
# times K "type=n ...": every sum times K
times() { echo "$2" | awk -v k="$1" '{for (i = 1; i <= NF; i++) {split($i, a, "="); printf "%s=%.0f ", a[1], a[2] * k}; print ""}'; }
push() { curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/go/cpu-0000.pb.gz" \
  "http://127.0.0.1:$1/api/0/profiles?service=goapp&type=cpu"; }
stack_rows() { chq "SELECT count() FROM profilefs.stacks_local"; }
stack_addrs() { chq "SELECT uniqExact(hash) FROM profilefs.stacks_local"; }

if CH_PID=$("$ROOT/tests/clickhouse/start-default.sh" "$TMP/ch" "$CHH" "$CHT" "$CHI"); then
  ok "clickhouse-starts"
else
  fail "clickhouse-starts"; pf_done; exit 1
fi
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) || { fail "build genprof"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 1 -dur 200ms >/dev/null || fail "generate a Go profile"
want=$(pprof_sums "$TMP/go/cpu-0000.pb.gz")

# --- A ships a profile, then the same stacks again -------------------------------
pf_start --host hosta --http "127.0.0.1:$HA" --clickhouse "$CH" || { fail "daemon A starts"; pf_done; exit 1; }
wait_for 30 grep -q "clickhouse: connected" "$TMP/daemon.log" || fail "A connects" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
check_eq "A's push is stored" "$(push "$HA")" 200
wait_for 30 rows_are 1 && ok "A's profile reaches ClickHouse (RowBinary)" \
  || fail "A's profile reaches ClickHouse" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
r1=$(stack_rows) u1=$(stack_addrs)
echo "# A's first profile: $u1 stacks shipped ($r1 rows in stacks_local)"
[ "${u1:-0}" -gt 0 ] && [ "$r1" = "$u1" ] && ok "each stack shipped once" || fail "each stack shipped once" "rows $r1, addresses $u1"
push "$HA" >/dev/null
wait_for 30 rows_are 2 || fail "A's second profile reaches ClickHouse"
r2=$(stack_rows)
echo "# A's second profile (the same stacks): stacks_local $r1 -> $r2 rows"
check_eq "A does not ship a stack it shipped already" "$r2" "$r1"

# --- B, another host, ships the same stacks ---------------------------------------
mkdir -p "$TMP/mntb"
"$BIN" serve --data "$TMP/datab" --host hostb --http "127.0.0.1:$HB" --clickhouse "$CH" "$TMP/mntb" >"$TMP/daemonb.log" 2>&1 &
B_PID=$!
wait_for 30 grep -q "clickhouse: connected" "$TMP/daemonb.log" || fail "B connects" "$(tail -3 "$TMP/daemonb.log")"
check_eq "B's push is stored" "$(push "$HB")" 200
wait_for 30 rows_are 3 || fail "B's profile reaches ClickHouse"
r3=$(stack_rows) u3=$(stack_addrs)
echo "# B's profile: stacks_local $r2 -> $r3 rows, $u3 addresses"
check_eq "the same stacks have the same addresses on both hosts" "$u3" "$u1"
f="$TMP/mntb/goapp/cpu/host=hosta/last-1h/merged.pb.gz"
wait_for 30 sums_are "$f" "$(times 2 "$want")" && ok "host=hosta reads back: $(pprof_sums "$f")" \
  || fail "host=hosta reads back" "got $(pprof_sums "$f"), want $(times 2 "$want")"
g="$TMP/mntb/goapp/cpu/host=hostb/last-1h/merged.pb.gz"
wait_for 30 sums_are "$g" "$want" && ok "host=hostb reads back: $(pprof_sums "$g")" \
  || fail "host=hostb reads back" "got $(pprof_sums "$g"), want $want"

# --- A restarts: its next profile's stacks are shipped again, the sums exact -------
pf_stop
pf_start --host hosta --http "127.0.0.1:$HA" --clickhouse "$CH" || fail "daemon A restarts"
wait_for 30 grep -c "clickhouse: connected" "$TMP/daemon.log" | grep -q 2 || true
push "$HA" >/dev/null
wait_for 30 rows_are 4 || fail "A's profile after the restart reaches ClickHouse"
r4=$(stack_rows)
echo "# A after a restart: stacks_local $r3 -> $r4 rows"
check_eq "A ships the stacks again after a restart, once" "$r4" $((r3 + u1))
wait_for 30 sums_are "$f" "$(times 3 "$want")" && ok "host=hosta after the restart: $(pprof_sums "$f")" \
  || fail "host=hosta after the restart" "got $(pprof_sums "$f"), want $(times 3 "$want")"

# --- the server loses its data: A ships the stacks of its next profile again -------
for t in $(chq "SELECT name FROM system.tables WHERE database = 'profilefs' AND engine LIKE '%MergeTree' FORMAT TSV"); do
  chq "TRUNCATE TABLE profilefs.$t" >/dev/null
done
check_eq "every table of the server is empty" "$(chq "SELECT count() FROM profilefs.stacks_local") $(chq "SELECT count() FROM profilefs.profiles_local")" "0 0"
sleep 2.5	# A polls the count every second
push "$HA" >/dev/null
wait_for 30 rows_are 1 || fail "A's profile after the loss reaches ClickHouse"
r5=$(stack_rows)
echo "# A after the server lost its data: $r5 rows in stacks_local"
check_eq "A ships the stacks again" "$r5" "$u1"
# A reader with nothing on disk: B keeps frames it read before in its data dir.
b_stop
fusermount3 -u -z "$TMP/mntb" 2>/dev/null
rm -rf "$TMP/datab"
"$BIN" serve --data "$TMP/datab" --host hostb --http "127.0.0.1:$HB" --clickhouse "$CH" "$TMP/mntb" >"$TMP/daemonb.log" 2>&1 &
B_PID=$!
wait_for 30 grep -q "clickhouse: connected" "$TMP/daemonb.log" || fail "B starts again" "$(tail -3 "$TMP/daemonb.log")"
wait_for 30 sums_are "$f" "$want" && ok "host=hosta after the loss reads back: $(pprof_sums "$f")" \
  || fail "host=hosta after the loss reads back" "got $(pprof_sums "$f"), want $want; $(grep clickhouse "$TMP/daemonb.log" | tail -3)"
grep -q "frames do not match\|bad stack" "$TMP/daemonb.log" && fail "no bad stacks" "$(grep -m2 'bad stack' "$TMP/daemonb.log")" || ok "no bad stacks"

# --- a backlog: sent whole by a sender thread while the shipper builds the next ---------
# 3,000 profiles queued while the server is down go in a large batch when it
# returns (after the few of the batch that failed first; a batch of 2,000
# profiles or more is sent while the next is built).
metric() { curl -s "http://127.0.0.1:$HA/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
r6=$(stack_rows)
ch_stop
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" || fail "build httpload"
"$TMP/httpload" -c 4 -n 3000 -t 120 -p "/api/0/profiles?service=backlog&type=cpu&labels=c={c}" \
  127.0.0.1 "$HA" "$TMP/go/cpu-0000.pb.gz" >"$TMP/load.out" 2>&1 || fail "3,000 pushes" "$(tail -2 "$TMP/load.out")"
CH_PID=$("$ROOT/tests/clickhouse/start-default.sh" "$TMP/ch" "$CHH" "$CHT" "$CHI") || fail "the server starts again"
backlog_in() { [ "$(chq "SELECT count() FROM profilefs.profiles_local WHERE service = 'backlog'")" = 3000 ]; }
wait_for 60 backlog_in || fail "the backlog reaches ClickHouse" "$(chq "SELECT count() FROM profilefs.profiles_local WHERE service = 'backlog'")"
# (counted once the shipper has unqueued the batch, a moment after ClickHouse took it)
sent() { awk -v s="$(metric profilefs_clickhouse_sender_cpu_seconds_total)" 'BEGIN {exit !(s > 0)}'; }
wait_for 10 sent
got=$(chq "SELECT count(), uniqExact(gid) FROM profilefs.profiles_local WHERE service = 'backlog' FORMAT TSV" | tr '\t' ' ')
echo "# the backlog in ClickHouse: $got (profiles, distinct); batches $(metric profilefs_clickhouse_batches_total), senders' CPU $(metric profilefs_clickhouse_sender_cpu_seconds_total) s"
check_eq "the backlog arrived, each profile once" "$got" "3000 3000"
sent && ok "a sender thread sent it" || fail "a sender thread sent it" "$(metric profilefs_clickhouse_sender_cpu_seconds_total)"
check_eq "the backlog's stacks were shipped before: stacks_local keeps its rows" "$(stack_rows)" "$r6"
# Every tier sums what the rows hold (two views read the samples, three sum those views).
sums=$(chq "SELECT (SELECT sum(arraySum(vals)) FROM profilefs.profiles_local WHERE service = 'backlog'), \
  (SELECT sum(value) FROM profilefs.samples10_local WHERE service = 'backlog'), \
  (SELECT sum(value) FROM profilefs.samples1h_local WHERE service = 'backlog'), \
  (SELECT sum(value) FROM profilefs.fleet1m_local WHERE service = 'backlog'), \
  (SELECT sum(value) FROM profilefs.fleet10_local WHERE service = 'backlog'), \
  (SELECT sum(value) FROM profilefs.fleet1h_local WHERE service = 'backlog') FORMAT TSV" | tr '\t' ' ')
echo "# the rows' sum and the five tiers': $sums"
echo "$sums" | awk '{for (i = 2; i <= NF; i++) if ($i != $1) exit 1; exit !(NF == 6 && $1 > 0)}' \
  && ok "the five tiers sum what the rows hold" || fail "the five tiers sum what the rows hold" "$sums"
b_stop
pf_stop
check_eq "A exits 0" "$PF_RC" 0

pf_done
