#!/usr/bin/env bash
# Hardening of the HTTP API's peer check and of its error replies, each
# attack rebuilt as it ran:
#
#   closing   as nobody, blind: each request sent by a client that closes its
#             socket at once (an orphan, then a TIME_WAIT mini-socket the
#             kernel reports as uid 0 without owner), half-closes then closes,
#             or resets, on 127.0.0.1 and [::1]. No deletion, push or query
#             runs; the store is unchanged. Established clients still work:
#             curl as root and as a member of --group (--group-write), curl
#             and Go's client over keep-alive connections.
#   replies   a 260 KB gzip bomb to OTLP (and the other endpoints) at
#             --memory-limit 256M, the other error replies of the endpoints,
#             and 16 bombs at once as nobody (a --group-write member) and
#             from closing sockets: each answered with its code, the daemon
#             alive.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
NAMES="peer-closing peer-keepalive peer-v6 peer-replies"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
command -v setpriv >/dev/null || skip_all "setpriv not installed"
id nobody >/dev/null 2>&1 && id daemon >/dev/null 2>&1 || skip_all "no user nobody or daemon"

PY=/usr/bin/python3	# the system's, which nobody can run
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
# daemon (uid 1) is the --group member of the first two daemons.
as_member() { setpriv --reuid=daemon --regid=daemon --init-groups "$@"; }
listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
# code [curl args...]: the HTTP status of one request (000: none)
code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 30 "$@"; }
chmod 711 "$TMP"
NB="$TMP/nb"; mkdir -p "$NB"; chmod 1777 "$NB"
cp "$ROOT/tests/tools/peer_close.py" "$NB/"; chmod 755 "$NB/peer_close.py"
TOOL="$NB/peer_close.py"
$PY "$ROOT/tests/tools/api_attacks.py" kprofile "$NB/k.pb.gz" >/dev/null && chmod 644 "$NB/k.pb.gz" \
  || { fail "make a profile"; pf_done; exit 1; }
FROM=2000-01-01T00:00:00
TO=2100-01-01T00:00:00

# start_on HOST [serve args...]: a daemon whose API listens on HOST (port
# chosen by the kernel); sets HOSTP (host as in a URL) PORT and U.
start_on() {
  local host=$1; shift
  : >"$TMP/daemon.log"
  pf_start --http "$host:0" "$@" || return 1
  local i
  for i in $(seq 50); do [ -n "$(listen_port "$TMP/daemon.log")" ] && break; sleep 0.1; done
  PORT=$(listen_port "$TMP/daemon.log")
  HOSTP=$host
  U="http://$host:$PORT"
  [ -n "$PORT" ]
}
# msum REGEX: the sum of the metric samples whose name{labels} match REGEX
msum() { curl -sg --max-time 10 "$U/metrics" | awk -v re="$1" '$1 !~ /^#/ && $1 ~ re { s += $2 } END { print s + 0 }'; }
# served: requests the daemon answered (or dropped), /metrics' own left out
served() {
  curl -sg --max-time 10 "$U/metrics" | awk '$1 ~ /^profilefs_http_requests_total/ &&
    $1 !~ /handler="\/metrics"/ { s += $2 } END { print s + 0 }'
}
# settle BEFORE N: wait (10 s at most) until N more requests were counted
settle() {
  local i
  for i in $(seq 100); do [ "$(served)" -ge $(($1 + $2)) ] && return 0; sleep 0.1; done
  return 0
}
alive() { kill -0 "$PF_PID" 2>/dev/null && [ "$(curl -sg -o /dev/null -w '%{http_code}' --max-time 10 "$U/healthz")" = 200 ]; }
# stored SERVICE: how many profiles of SERVICE the store lists (root asks)
stored() {
  curl -sg --max-time 10 "$U/api/0/profiles?service=$1&type=cpu&from=$FROM&to=$TO" |
    jq -r 'if .code == 200 then (.body | length) else 0 end' 2>/dev/null || echo "?"
}
push_root() { curl -sg --max-time 10 --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=$1&type=cpu" | jq -r .body.id; }
listed() { curl -sg --max-time 10 "$U/api/0/services" | jq -r '.body[]' 2>/dev/null | grep -qx "$1"; }

# closing_attacks NAME MODES...: as nobody, blind deletions, pushes and
# queries from sockets closed at once; the store is checked afterwards. A
# mode stopped-M sends while the daemon is stopped (SIGSTOP: a daemon too
# busy to accept at once), so that every request is read after its client's
# socket closed: a TIME_WAIT mini-socket, uid 0 without owner.
closing_attacks() {
  local name=$1 mode m before denied0 merges0 n bad=0 line out; shift
  id1=$(push_root victim); id2=$(push_root victim)
  [ -n "$id1" ] && [ "$id1" != null ] || { fail "$name: root pushes the victim's profiles"; return; }
  denied0=$(msum '^profilefs_http_denied_total')
  merges0=$(msum '^profilefs_http_requests_total[{]handler="/api/0/profiles/merge",.*code="([^4]|4[^0]|40[^3])')
  for mode in "$@"; do
    before=$(served)
    m=${mode#stopped-}
    [ "$m" = "$mode" ] || kill -STOP "$PF_PID"
    out=$(as_nobody $PY "$TOOL" --mode "$m" -n 5 "$HOSTP" "$PORT" DELETE /api/0/services/victim 2>&1)
    out+=" | "$(as_nobody $PY "$TOOL" --mode "$m" -n 5 "$HOSTP" "$PORT" DELETE "/api/0/profiles/$id1" 2>&1)
    out+=" | "$(as_nobody $PY "$TOOL" --mode "$m" -n 20 -j 4 --body "$NB/k.pb.gz" "$HOSTP" "$PORT" \
      POST "/api/0/profiles?service=pushed-$mode&type=cpu" 2>&1)
    out+=" | "$(as_nobody $PY "$TOOL" --mode "$m" -n 5 "$HOSTP" "$PORT" GET \
      "/api/0/profiles/merge?service=victim&type=cpu&from=$FROM&to=$TO" 2>&1)
    [ "$m" = "$mode" ] || { sleep 0.3; kill -CONT "$PF_PID"; }
    settle "$before" 35
    n=$(stored "pushed-$mode")
    echo "# $name, $mode: $out; the daemon counted $(( $(served) - before )) of 35 requests; pushes stored: $n of 20"
    [ "$n" = 0 ] || bad=1
  done
  listed victim && [ "$(code -g "$U/api/0/profiles/$id1")" = 200 ] && [ "$(stored victim)" -ge 2 ] || bad=1
  n=$(( $(msum '^profilefs_http_requests_total[{]handler="/api/0/profiles/merge",.*code="([^4]|4[^0]|40[^3])') - merges0 ))
  echo "# $name: victim still listed: $(listed victim && echo yes || echo NO), its profile $id1: $(code -g "$U/api/0/profiles/$id1"), profiles of victim: $(stored victim); merges answered other than 403: $n; refused as unidentified or not allowed: $(( $(msum '^profilefs_http_denied_total') - denied0 ))"
  [ "$n" = 0 ] || bad=1
  alive || bad=1
  [ $bad = 0 ] && ok "$name: closing clients as nobody delete, push and query nothing" \
    || fail "$name: closing clients as nobody delete, push and query nothing" "$(tail -5 "$TMP/daemon.log")"
}

# --- 1. closing sockets on 127.0.0.1; established clients still work --------
start_on 127.0.0.1 --group daemon --group-write -v || { fail "daemon starts"; pf_done; exit 1; }
closing_attacks peer-closing close shut rst pipe stopped-close stopped-shut
# The refusals say why (the daemon's log: a closed client reads no answer).
n=$(grep -c "403 the API serves local users the mount lets in; the client's socket was closed before its owner could be identified" "$TMP/daemon.log")
echo "# refusals logged as \"the client's socket was closed before its owner could be identified\": $n; as \"uid 65534 may not\": $(grep -c '403 uid 65534 may not' "$TMP/daemon.log"); as no local owner: $(grep -c '403 .*has no local owner' "$TMP/daemon.log")"
[ "$n" -ge 30 ] && ok "peer-closing-why: the refusal of a closed client says why" \
  || fail "peer-closing-why: the refusal of a closed client says why" "$(grep -m3 ' 403 ' "$TMP/daemon.log")"

# The refusal a client that stays to read it gets: a closed socket cannot, so
# the lookup is made to fail as the daemon would see it, by an established
# nobody (its owner known: refused as uid 65534) and by the reason's wording.
out=$(as_nobody $PY "$TOOL" --mode wait -n 5 127.0.0.1 "$PORT" DELETE /api/0/services/victim 2>&1)
echo "# established nobody, DELETE x5: $out"
case "$out" in *"403=5"*) ok "peer-established-nobody: refused (403)" ;;
  *) fail "peer-established-nobody: refused (403)" "$out" ;; esac
st=$(as_nobody curl -s -o "$NB/nb.json" -w '%{http_code}' --max-time 10 -X DELETE "$U/api/0/services/victim")
grep -q '"error"' "$NB/nb.json" && [ "$st" = 403 ] && ok "peer-nobody-curl: 403 with a JSON error" \
  || fail "peer-nobody-curl: 403 with a JSON error" "$st $(head -c 200 "$NB/nb.json")"
echo "# nobody's curl DELETE: $st $(head -c 200 "$NB/nb.json")"

st=$(as_member curl -s -o "$NB/m.json" -w '%{http_code}' --max-time 10 --data-binary @"$NB/k.pb.gz" \
  "$U/api/0/profiles?service=member&type=cpu")
mid=$(jq -r .body.id "$NB/m.json" 2>/dev/null)
st2=$(as_member curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X DELETE "$U/api/0/profiles/$mid")
st3=$(as_member curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X DELETE "$U/api/0/services/pushed-none")
echo "# --group member (daemon): push $st, delete its profile $st2, delete a service with nothing $st3"
[ "$st" = 200 ] && [ "$st2" = 200 ] && [ "$st3" = 404 ] && ok "peer-member: a --group member pushes and deletes" \
  || fail "peer-member: a --group member pushes and deletes" "push $st, delete $st2, service $st3"
st=$(code --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=rootsvc&type=cpu")
st2=$(code -X DELETE "$U/api/0/services/rootsvc")
st3=$(code -X DELETE "$U/api/0/profiles/$id2")
echo "# root: push $st, delete the service $st2, delete a profile $st3"
[ "$st" = 200 ] && [ "$st2" = 200 ] && [ "$st3" = 200 ] && [ "$(stored rootsvc)" = 0 ] \
  && ok "peer-root: root pushes and deletes" || fail "peer-root: root pushes and deletes" "$st $st2 $st3"

# Keep-alive: curl's second request on the first one's connection.
out=$(as_member curl -s --max-time 10 -w '%{http_code}:%{num_connects} ' -o /dev/null "$U/api/0/services" \
  --next -s -w '%{http_code}:%{num_connects} ' -o /dev/null --data-binary @"$NB/k.pb.gz" \
  "$U/api/0/profiles?service=keepalive&type=cpu" \
  --next -s -w '%{http_code}:%{num_connects} ' -o /dev/null -X DELETE "$U/api/0/services/keepalive")
echo "# curl keep-alive as the member (code:new connections): $out"
[ "$out" = "200:1 200:0 200:0 " ] && ok "peer-keepalive: curl's requests on one connection" \
  || fail "peer-keepalive: curl's requests on one connection" "$out"
if command -v go >/dev/null; then
  mkdir -p "$TMP/goclient" && cat >"$TMP/goclient/main.go" <<'EOF'
// Three requests over one keep-alive connection of Go's HTTP client.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
)

func main() {
	u, body := os.Args[1], os.Args[2]
	pb, err := os.ReadFile(body)
	if err != nil {
		panic(err)
	}
	c := &http.Client{}
	for i, r := range []struct{ m, p string }{{"GET", "/api/0/services"},
		{"POST", "/api/0/profiles?service=goclient&type=cpu"}, {"GET", "/api/0/services"}} {
		var reused bool
		tr := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }}
		var b io.Reader
		if r.m == "POST" {
			b = bytes.NewReader(pb)
		}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), tr), r.m, u+r.p, b)
		resp, err := c.Do(req)
		if err != nil {
			fmt.Printf("%d:error:%v ", i, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("%d:%d:reused=%v ", i, resp.StatusCode, reused)
	}
	fmt.Println()
}
EOF
  if (cd "$TMP/goclient" && go mod init goclient >/dev/null 2>&1 && go build -o "$NB/goclient" . 2>"$TMP/go.err"); then
    out=$(as_member "$NB/goclient" "$U" "$NB/k.pb.gz" 2>&1)
    echo "# Go's client as the member: $out"
    [ "$out" = "0:200:reused=false 1:200:reused=true 2:200:reused=true " ] \
      && ok "peer-go: Go's client over one keep-alive connection" \
      || fail "peer-go: Go's client over one keep-alive connection" "$out"
  else
    fail "peer-go: build the Go client" "$(head -5 "$TMP/go.err")"
  fi
else
  echo "ok - peer-go # SKIP go not installed"
fi
alive && ok "peer-alive-1: the daemon answers" || fail "peer-alive-1: the daemon answers"
pf_stop

# --- 2. the same on [::1] ----------------------------------------------------
if $PY -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
  start_on "[::1]" --group daemon --group-write || { fail "daemon starts on [::1]"; pf_done; exit 1; }
  HOSTP=::1
  closing_attacks peer-v6 close rst stopped-close
  st=$(code -g --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=v6root&type=cpu")
  st2=$(as_member curl -sg -o /dev/null -w '%{http_code}' --max-time 10 --data-binary @"$NB/k.pb.gz" \
    "$U/api/0/profiles?service=v6member&type=cpu")
  echo "# [::1]: root push $st, member push $st2"
  [ "$st" = 200 ] && [ "$st2" = 200 ] && ok "peer-v6-established: root and the member push" \
    || fail "peer-v6-established: root and the member push" "$st $st2"
  pf_stop
else
  echo "ok - peer-v6 # SKIP no IPv6 loopback"
fi

# --- 3. error replies: the gzip bomb at --memory-limit 256M, and the others ---
head -c 256M /dev/zero | gzip -9 >"$NB/bomb.gz"; chmod 644 "$NB/bomb.gz"
echo "# the bomb: $(stat -c %s "$NB/bomb.gz") bytes of gzip, 256 MiB once inflated"
# nogroup is --group-write: nobody reaches the decoders.
start_on 127.0.0.1 --memory-limit 256M --group nogroup --group-write || { fail "daemon starts"; pf_done; exit 1; }
bad=0
# reply NAME WANT-REGEX [curl args...]: one request; its code printed and checked
reply() {
  local name=$1 want=$2 st; shift 2
  kill -0 "$PF_PID" 2>/dev/null || return 0	# dead: said once already
  rm -f "$TMP/body"
  st=$(code "$@")
  echo "# $name: $st $(head -c 240 "$TMP/body" | tr -d '\0' | tr '\n' ' ')"
  if ! echo "$st" | grep -qxE "$want"; then fail "peer-replies: $name answers $want" "got $st"; bad=1; fi
  alive || { fail "peer-replies: the daemon is alive after $name"; bad=1; }
}
OT="$U/v1development/profiles"
reply "otlp bomb (protobuf)" '503|413' -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' --data-binary @"$NB/bomb.gz" "$OT"
grep -q "memory budget" "$TMP/body" 2>/dev/null || grep -q "limit" "$TMP/body" 2>/dev/null || { fail "peer-replies: the bomb's answer says why"; bad=1; }
reply "otlp bomb (json)" '503|413' -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary @"$NB/bomb.gz" "$OT"
jq -e '.message | length > 0' "$TMP/body" >/dev/null 2>&1 || { fail "peer-replies: the JSON bomb's Status has a message" "$(head -c 200 "$TMP/body")"; bad=1; }
reply "profefe bomb" '503|413' --data-binary @"$NB/bomb.gz" "$U/api/0/profiles?service=bomb&type=cpu"
reply "pyroscope bomb" '503|413' --data-binary @"$NB/bomb.gz" "$U/ingest?name=bomb&format=pprof"
reply "connect bomb" '503|413' -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary @"$NB/bomb.gz" \
  "$U/querier.v1.QuerierService/SelectMergeStacktraces"
printf 'not gzip at all' >"$TMP/notgz"
head -c 100 "$NB/bomb.gz" >"$TMP/trunc.gz"
reply "otlp: no Content-Type" 415 --data-binary @"$TMP/notgz" -H 'Content-Type:' "$OT"
reply "otlp: Content-Encoding br" 415 -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: br' --data-binary @"$TMP/notgz" "$OT"
reply "otlp: gzip that is not" 400 -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' --data-binary @"$TMP/notgz" "$OT"
reply "otlp: truncated gzip" 400 -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary @"$TMP/trunc.gz" "$OT"
reply "otlp: not protobuf" 400 -H 'Content-Type: application/x-protobuf' --data-binary @"$TMP/notgz" "$OT"
reply "connect: truncated gzip" 400 -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' --data-binary @"$TMP/trunc.gz" \
  "$U/querier.v1.QuerierService/SelectMergeStacktraces"
reply "connect: end before start" 400 -H 'Content-Type: application/json' --data-binary '{"start":"2000","end":"1000"}' \
  "$U/querier.v1.QuerierService/ProfileTypes"
reply "profefe: bad service" 400 --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=a%2Fb&type=cpu"
reply "profefe: unknown type" 400 --data-binary @"$NB/k.pb.gz" "$U/api/0/profiles?service=a&type=nosuch"
reply "profefe: truncated gzip profile" 400 --data-binary @"$TMP/trunc.gz" "$U/api/0/profiles?service=a&type=cpu"
reply "pyroscope: bad name" 400 --data-binary @"$NB/k.pb.gz" "$U/ingest?name=a%2Fb&format=pprof"
reply "delete: bad type" 400 -X DELETE "$U/api/0/services/a?type=a%2Fb"
reply "delete: bad labels" 400 -X DELETE "$U/api/0/services/a?labels=k%3D1%2Ck%3D2"
reply "delete: bad service" '400|404' -X DELETE "$U/api/0/services/..%2F.."
# Many at once, as nobody (a --group-write member, so the bodies are inflated).
out=$(as_nobody $PY "$TOOL" --mode wait -n 16 -j 16 --body "$NB/bomb.gz" --type application/x-protobuf \
  --encoding gzip 127.0.0.1 "$PORT" POST /v1development/profiles 2>&1)
echo "# 16 bombs at once from nobody: $out"
case "$out" in *error*|*none*) fail "peer-replies: 16 bombs at once are each answered" "$out"; bad=1 ;; esac
out=$(as_nobody $PY "$TOOL" --mode close -n 16 -j 16 --body "$NB/bomb.gz" --type application/x-protobuf \
  --encoding gzip 127.0.0.1 "$PORT" POST /v1development/profiles 2>&1)
echo "# 16 bombs at once from nobody's closing sockets: $out"
sleep 1
alive || { fail "peer-replies: the daemon is alive after 16 bombs at once"; bad=1; }
echo "# the daemon's peak RSS: $(awk '/VmHWM/ { print $2 " kB" }' "/proc/$PF_PID/status" 2>/dev/null); budget peak: $(msum 'profilefs_memory_budget_bytes[{]kind="peak"') bytes; refusals: $(msum '^profilefs_memory_budget_refusals')"
[ $bad = 0 ] && ok "peer-replies: every error is answered, the daemon alive"
pf_stop
[ "${PF_RC:-0}" = 0 ] && ok "peer-stop: the daemon stops cleanly" || fail "peer-stop: the daemon stops cleanly" "status $PF_RC"
pf_done
