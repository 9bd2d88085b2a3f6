#!/usr/bin/env bash
# Hardening of the HTTP API, each attack of the review rebuilt as it ran:
#
#   access     as user nobody over loopback: the API follows the mount's access
#              rules (no other user's profiles, no pushes), /healthz and
#              /metrics stay open, and no answer holds a kernel text address
#   slowloris  ten loopback addresses (127.0.0.2-11) with 32 sockets each
#              sending request headers a byte a second, reopened as closed;
#              /healthz and pushes from 127.0.0.12 go on being answered
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
TOOLS="$ROOT/tests/tools/api_attacks.py"
command -v setpriv >/dev/null || skip_all "setpriv not installed"

listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
# as_nobody CMD...: run CMD as the unprivileged user nobody, no groups
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
# code [curl args...]: the HTTP status of one request (000: none)
code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 10 "$@"; }
# What nobody's curl reads and writes lives in $NB.
chmod 711 "$TMP"
NB="$TMP/nobody"; mkdir -p "$NB"; chmod 1777 "$NB"

pf_start --http 127.0.0.1:0 || { fail "daemon starts with --http"; pf_done; exit 1; }
for _ in $(seq 50); do [ -n "$(listen_port "$TMP/daemon.log")" ] && break; sleep 0.1; done
PORT=$(listen_port "$TMP/daemon.log")
U="http://127.0.0.1:$PORT"
FROM=2000-01-01T00:00:00
TO=2100-01-01T00:00:00
grep -q "local users as the mount's access rules" "$TMP/daemon.log" \
  && ok "the log says the API follows the mount's rules" || fail "the log says the API follows the mount's rules"

# --- access: the mount's rules, and no kernel addresses -----------------------
python3 "$TOOLS" kprofile "$TMP/k.pb.gz" >/dev/null || fail "make a profile with a kernel frame"
cp "$TMP/k.pb.gz" "$NB/k.pb.gz"; chmod 644 "$NB/k.pb.gz"
check_eq "root pushes (the owner)" "$(code --data-binary @"$TMP/k.pb.gz" "$U/api/0/profiles?service=kernel&type=cpu")" 200
check_eq "root reads the merge" "$(code -o "$TMP/root.pb.gz" "$U/api/0/profiles/merge?service=kernel&type=cpu&from=$FROM&to=$TO")" 200
check_eq "the owner's merge has its samples" "$(pprof_sums "$TMP/body")" "$(pprof_sums "$TMP/k.pb.gz")"
go tool pprof -raw "$TMP/body" >"$TMP/raw.txt" 2>&1
grep -q "do_syscall_64" "$TMP/raw.txt" && ! grep -qi "0xffff" "$TMP/raw.txt" \
  && ok "the merge keeps the kernel frame's name, not its address" \
  || fail "the merge keeps the kernel frame's name, not its address" "$(grep -A3 Locations "$TMP/raw.txt")"
id=$(curl -s "$U/api/0/profiles?service=kernel&type=cpu&from=$FROM&to=$TO" | jq -r '.body[0].id')
check_eq "GET of one stored profile" "$(code "$U/api/0/profiles/$id")" 200
go tool pprof -raw "$TMP/body" 2>&1 | grep -qi "0xffff" \
  && fail "one stored profile: no kernel address" "$(go tool pprof -raw "$TMP/body" 2>&1 | grep -i 0xffff)" \
  || ok "one stored profile: no kernel address"

st=$(as_nobody curl -s -o "$NB/nb" -w '%{http_code}' --max-time 10 "$U/api/0/profiles/merge?service=kernel&type=cpu&from=$FROM&to=$TO")
check_eq "nobody: the merge is refused" "$st" 403
grep -q '"error"' "$NB/nb" && ! grep -q "do_syscall_64" "$NB/nb" && ok "nobody: a JSON error, no stack" \
  || fail "nobody: a JSON error, no stack" "$(head -c 200 "$NB/nb")"
for p in "/api/0/profiles?service=kernel&type=cpu&from=$FROM&to=$TO" /api/0/services "/api/0/profiles/$id"; do
  check_eq "nobody: GET ${p%%\?*} refused" "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$U$p")" 403
done
check_eq "nobody: a push is refused" \
  "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=evil&type=cpu")" 403
check_eq "nobody: DELETE of a profile is refused" \
  "$(as_nobody curl -s -o "$NB/nb" -w '%{http_code}' --max-time 10 -X DELETE "$U/api/0/profiles/$id")" 403
grep -q "may not delete profiles" "$NB/nb" && ok "nobody: the refusal says it may not delete" \
  || fail "nobody: the refusal says it may not delete" "$(head -c 200 "$NB/nb")"
check_eq "nobody: DELETE of a service is refused" \
  "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X DELETE "$U/api/0/services/kernel")" 403
check_eq "nobody's DELETE removed nothing" "$(code "$U/api/0/profiles/$id")" 200
check_eq "nobody: /healthz answers" "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$U/healthz")" 200
check_eq "nobody: /metrics answers" "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$U/metrics")" 200
[ ! -d "$TMP/mnt/evil" ] && ok "nobody's push stored nothing" || fail "nobody's push stored nothing"
pf_stop

# --allow-other: every local user reads, as the mount; pushes stay the owner's.
pf_start --http 127.0.0.1:0 --allow-other || fail "daemon starts with --allow-other"
for _ in $(seq 50); do [ -n "$(listen_port "$TMP/daemon.log")" ] && [ "$(listen_port "$TMP/daemon.log")" != "$PORT" ] && break; sleep 0.1; done
PORT=$(listen_port "$TMP/daemon.log"); U="http://127.0.0.1:$PORT"
st=$(as_nobody curl -s -o "$NB/nb" -w '%{http_code}' --max-time 10 "$U/api/0/profiles/merge?service=kernel&type=cpu&from=$FROM&to=$TO")
check_eq "--allow-other: nobody reads the merge" "$st" 200
go tool pprof -raw "$NB/nb" 2>&1 | grep -qi "0xffff" && fail "--allow-other: nobody gets no kernel address" \
  || ok "--allow-other: nobody gets no kernel address"
check_eq "--allow-other: nobody still may not push" \
  "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=evil&type=cpu")" 403
check_eq "--allow-other: nobody still may not DELETE" \
  "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X DELETE "$U/api/0/services/kernel")" 403
check_eq "--allow-other: the owner may DELETE" "$(code -X DELETE "$U/api/0/services/kernel")" 200
check_eq "--allow-other: the service is gone" "$(code "$U/api/0/profiles/$id")" 404
pf_stop

# A token: who has it may do everything (Grafana, SDKs), without it nothing.
echo "s3cret-token" >"$TMP/token"; chmod 600 "$TMP/token"
pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" || fail "daemon starts with a token"
for _ in $(seq 50); do [ -n "$(listen_port "$TMP/daemon.log")" ] && [ "$(listen_port "$TMP/daemon.log")" != "$PORT" ] && break; sleep 0.1; done
PORT=$(listen_port "$TMP/daemon.log"); U="http://127.0.0.1:$PORT"
check_eq "token: nobody with the token pushes" "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
  -H "Authorization: Bearer s3cret-token" --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=sdk&type=cpu")" 200
check_eq "token: nobody without it is refused" "$(as_nobody curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$U/api/0/services")" 401
pf_stop

# --- slowloris from ten addresses -----------------------------------------------
pf_start --http 127.0.0.1:0 || fail "daemon starts (slowloris)"
for _ in $(seq 50); do [ -n "$(listen_port "$TMP/daemon.log")" ] && [ "$(listen_port "$TMP/daemon.log")" != "$PORT" ] && break; sleep 0.1; done
PORT=$(listen_port "$TMP/daemon.log"); U="http://127.0.0.1:$PORT"
python3 "$TOOLS" slowloris "$PORT" 2 10 32 45 >"$TMP/slow.out" 2>&1 & SLOW=$!
for _ in $(seq 100); do [ -s "$TMP/slow.out" ] && break; sleep 0.1; done
echo "# $(head -1 "$TMP/slow.out")"
sleep 3	# the sockets are in and dribbling
probes=0 good=0
for i in $(seq 1 40); do
  probes=$((probes + 1))
  [ "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.12 --max-time 5 "$U/healthz")" = 200 ] && good=$((good + 1))
  sleep 0.5
done
echo "# /healthz from 127.0.0.12 during the attack: $good of $probes answered"
[ "$good" -ge $((probes - 2)) ] && ok "slowloris from 10 addresses: /healthz answers ($good of $probes)" \
  || fail "slowloris from 10 addresses: /healthz answers" "$good of $probes"
pushed=0
for i in 1 2 3 4 5; do
  [ "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.12 --max-time 10 --data-binary @"$TMP/k.pb.gz" \
    "$U/api/0/profiles?service=during&type=cpu")" = 200 ] && pushed=$((pushed + 1))
done
check_eq "slowloris from 10 addresses: pushes are stored" "$pushed" 5
check_eq "slowloris from 10 addresses: /metrics answers" \
  "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.12 --max-time 5 "$U/metrics")" 200
wait "$SLOW"
echo "# $(tail -1 "$TMP/slow.out")"
n=$(curl -s --max-time 5 "$U/metrics" | awk '$1 == "profilefs_http_share_refusals_total" { print $2 }')
echo "# connections closed for their address's share: ${n:-0}"
kill -0 "$PF_PID" 2>/dev/null && ok "the daemon is alive after the attack" || fail "the daemon is alive after the attack"
pf_stop
grep -q "AddressSanitizer\|runtime error\|ThreadSanitizer" "$TMP/daemon.log" && fail "no sanitizer errors in the log" \
  || ok "no sanitizer errors in the log"
pf_done
