#!/usr/bin/env bash
# One ClickHouse server with the distribution's default config (Debian's
# clickhouse-server: no cluster 'profilefs' in its remote_servers), only its
# ports and directories moved (tests/clickhouse/start-default.sh): the daemon
# given its one URL makes the schema with Merge tables over the server's own
# and says so in its log; a profile pushed to daemon A is read back as
# merged.pb.gz, with go tool pprof's sums, from the tree of daemon B, which
# has an empty store of its own. Asking for a cluster by name, or giving two
# URLs, still needs the cluster and says so. Once the server's config has
# the cluster, the Merge tables are made again as Distributed ones and the
# same profile still reads back; once it loses the cluster again, the
# Distributed tables left are refused with what to do.
# Skipped without clickhouse-server (scripts/install-deps.sh --test installs it).
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"

NAMES="clickhouse-default-config-starts"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
command -v clickhouse-server >/dev/null || skip_all "clickhouse-server not installed"
command -v go >/dev/null || skip_all "go not installed"
[ -r /etc/clickhouse-server/config.xml ] || skip_all "no /etc/clickhouse-server/config.xml"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
CHH=$(free_port) CHT=$(free_port) CHI=$(free_port)
CH="http://127.0.0.1:$CHH"
CH_PID=
B_PID=

ch_stop() {
  [ -n "$CH_PID" ] || return 0
  kill -TERM "$CH_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$CH_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$CH_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$CH_PID" 2>/dev/null || break; sleep 0.1; done
  CH_PID=
}
# b_start ARGS...: daemon B on $TMP/mntb with an empty store of its own
b_start() {
  mkdir -p "$TMP/mntb"
  rm -rf "$TMP/datab"
  "$BIN" serve --data "$TMP/datab" --host hostb "$@" "$TMP/mntb" >"$TMP/daemonb.log" 2>&1 &
  B_PID=$!
  for _ in $(seq 100); do
    head -c 16 "$TMP/mntb/README.txt" 2>/dev/null | grep -q profilefs && return 0
    kill -0 "$B_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
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
sums_are() { [ "$(pprof_sums "$1")" = "$2" ]; }
chq() { ch_post "$CH" "$1"; }
local_rows_are() { [ "$(chq "SELECT count() FROM profilefs.profiles_local WHERE service = '$1'")" = "$2" ]; }

# --- the server, as the package configures it ----------------------------------
if CH_PID=$("$ROOT/tests/clickhouse/start-default.sh" "$TMP/ch" "$CHH" "$CHT" "$CHI"); then
  ok "clickhouse-default-config-starts"
else
  fail "clickhouse-default-config-starts"; pf_done; exit 1
fi
echo "# clickhouse-server $(chq 'SELECT version()'), default config with $(cat "$TMP/ch/changed-lines") lines changed (ports, paths)"
echo "# its clusters: $(chq "SELECT groupUniqArray(cluster) FROM system.clusters")"
check_eq "no cluster 'profilefs' in its remote_servers" \
  "$(chq "SELECT count() FROM system.clusters WHERE cluster = 'profilefs'")" 0

(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) || { fail "build genprof"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 2 -dur 100ms >/dev/null || fail "generate Go profiles"
want=$(pprof_sums "$TMP/go/cpu-0000.pb.gz")

# --- daemon A pushes, daemon B (nothing stored) reads the server ---------------
pf_start --host hosta --clickhouse "$CH" || { fail "daemon A starts"; pf_done; exit 1; }
wait_for 30 grep -q "clickhouse: connected" "$TMP/daemon.log" \
  && ok "A connects to the single server" || fail "A connects" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
line="$(grep -m1 "has no cluster 'profilefs'" "$TMP/daemon.log" | sed 's/^[^ ]* //')"
[ -n "$line" ] && ok "A's log says what it did: $line" || fail "A's log says it is alone" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
grep -q "no cluster 'profilefs' in its remote_servers\$" "$TMP/daemon.log" \
  && fail "the old refusal is gone" || ok "the old refusal is gone"
engines="$(chq "SELECT name, engine FROM system.tables WHERE database = 'profilefs' AND name IN ('profiles', 'stacks', 'fleet10') ORDER BY name FORMAT TSV" | tr '\t\n' ': ')"
check_eq "the tables over every shard are Merge tables" "$engines" "fleet10:Merge profiles:Merge stacks:Merge "
cp "$TMP/go/cpu-0000.pb.gz" "$TMP/mnt/ingest/goapp/cpu/"
wait_for 30 local_rows_are goapp 1 \
  && ok "the profile lands in profiles_local" || fail "the profile lands in profiles_local" "$(grep clickhouse "$TMP/daemon.log" | tail -3)"
check_eq "and reads back through the Merge table" \
  "$(chq "SELECT count() FROM profilefs.profiles WHERE service = 'goapp'")" 1
b_start --clickhouse "$CH" || fail "daemon B starts" "$(tail -3 "$TMP/daemonb.log")"
f="$TMP/mntb/goapp/cpu/all/last-1h/merged.pb.gz"
wait_for 30 sums_are "$f" "$want" \
  && ok "B's fleet tree: merged.pb.gz has go tool pprof's sums ($want)" \
  || fail "B's fleet tree: merged.pb.gz" "got $(pprof_sums "$f"), want $want; $(grep clickhouse "$TMP/daemonb.log" | tail -3)"
check_eq "B's tree shows A's host label" "$(ls "$TMP/mntb/goapp/cpu" | tr '\n' ' ')" "all host=hosta "
b_stop

# --- a cluster asked for by name, or two URLs: the cluster is still needed ------
"$BIN" serve --data "$TMP/dx" --clickhouse "$CH" --clickhouse-cluster mycluster "$TMP/mx" >"$TMP/bad.log" 2>&1 &
X=$!
wait_for 20 grep -q "no cluster 'mycluster'" "$TMP/bad.log" \
  && ok "--clickhouse-cluster NAME not configured: $(grep -m1 -o "has no cluster 'mycluster'.*" "$TMP/bad.log" | cut -c1-150)" \
  || fail "--clickhouse-cluster NAME not configured" "$(tail -3 "$TMP/bad.log")"
kill -TERM "$X"; wait "$X" 2>/dev/null; fusermount3 -u -z "$TMP/mx" 2>/dev/null
"$BIN" serve --data "$TMP/dy" --clickhouse "$CH,http://127.0.0.1:$CHH/other" "$TMP/my" >"$TMP/bad2.log" 2>&1 &
X=$!
wait_for 20 grep -q "several servers are given" "$TMP/bad2.log" \
  && ok "two URLs without the cluster: refused with the reason" \
  || fail "two URLs without the cluster" "$(grep clickhouse "$TMP/bad2.log" | tail -3)"
kill -TERM "$X"; wait "$X" 2>/dev/null; fusermount3 -u -z "$TMP/my" 2>/dev/null
pf_stop
check_eq "A exits 0" "$PF_RC" 0

# --- the server gains the cluster: Distributed tables from then on ---------------
ch_stop
cat >"$TMP/ch/metrika.xml" <<XML
<yandex><clickhouse_remote_servers>
  <profilefs><shard><replica><host>127.0.0.1</host><port>$CHT</port></replica></shard></profilefs>
</clickhouse_remote_servers></yandex>
XML
sed -i "s|</yandex>|<include_from>$TMP/ch/metrika.xml</include_from></yandex>|" "$TMP/ch/config.xml"
CH_PID=$("$ROOT/tests/clickhouse/run-server.sh" "$TMP/ch" "$CHH") || fail "server restarts with the cluster"
check_eq "the server has cluster 'profilefs' now" \
  "$(chq "SELECT count() FROM system.clusters WHERE cluster = 'profilefs'")" 1
b_start --clickhouse "$CH" || fail "daemon B starts again" "$(tail -3 "$TMP/daemonb.log")"
wait_for 30 grep -q "clickhouse: connected" "$TMP/daemonb.log" || true
line="$(grep -m1 "made again as a Distributed" "$TMP/daemonb.log" | sed 's/^[^ ]* //')"
[ -n "$line" ] && ok "B's log: $line" || fail "B remakes the Merge tables" "$(grep clickhouse "$TMP/daemonb.log" | tail -3)"
engines="$(chq "SELECT name, engine FROM system.tables WHERE database = 'profilefs' AND name IN ('profiles', 'stacks', 'fleet10') ORDER BY name FORMAT TSV" | tr '\t\n' ': ')"
check_eq "the tables over every shard are Distributed now" "$engines" "fleet10:Distributed profiles:Distributed stacks:Distributed "
wait_for 30 sums_are "$f" "$want" && ok "the profile still reads back through them" \
  || fail "the profile still reads back" "got $(pprof_sums "$f")"
b_stop

# --- and loses it again: Distributed tables over a cluster it lacks are refused ---
ch_stop
sed -i "s|<include_from>$TMP/ch/metrika.xml</include_from>||" "$TMP/ch/config.xml"
CH_PID=$("$ROOT/tests/clickhouse/run-server.sh" "$TMP/ch" "$CHH") || fail "server restarts without the cluster"
b_start --clickhouse "$CH" || fail "daemon B starts a third time" "$(tail -3 "$TMP/daemonb.log")"
wait_for 30 grep -q "holds Distributed tables over it" "$TMP/daemonb.log" \
  && ok "cluster gone, Distributed tables left: refused, $(grep -m1 -o 'put the cluster back[^)]*)' "$TMP/daemonb.log")" \
  || fail "cluster gone: refused with what to do" "$(grep clickhouse "$TMP/daemonb.log" | tail -3)"
check_eq "the profile's row is still there" "$(chq "SELECT count() FROM profilefs.profiles_local WHERE service = 'goapp'")" 1
kill -0 "$B_PID" 2>/dev/null && ok "B stays up on its local store" || fail "B stays up"
b_stop

pf_done
