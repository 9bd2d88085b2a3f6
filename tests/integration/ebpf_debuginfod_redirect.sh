#!/usr/bin/env bash
# A debuginfod server cannot send the daemon (root) to its own HTTP API: the
# server here (a small python3 one on loopback, configured with
# --debuginfod) answers the daemon's request for a stripped program's debug
# file with a 302 to http://127.0.0.1:<the daemon's API port>/api/0/services.
# The daemon refuses to follow it and says so in its log; its API gets no
# such request (the requests counted in /metrics, and a second daemon API
# port used as a trap gets no connection at all, when a second program's
# request is sent there by this host's name). A redirect within the
# configured server (same host and port) is still followed: the file it
# leads to is fetched and the program's frames are named.
# Needs root and a kernel with BTF; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="dbgr-refused-log dbgr-api-untouched dbgr-trap-untouched dbgr-metrics dbgr-same-server"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
command -v go >/dev/null || skip_all "go not installed"
unset DEBUGINFOD_URLS http_proxy https_proxy all_proxy HTTPS_PROXY ALL_PROXY

pf_setup
B="$TMP/bin"
mkdir -p "$B"
dbg_build() {
  local n="$1" h="$2" o="$3"
  cc -O1 -fno-omit-frame-pointer -g -Wl,--build-id -DHOT="$h" -DOUTER="$o" \
    -o "$B/$n" "$ROOT/tests/ebpf/dbgspin.c" &&
    objcopy --only-keep-debug "$B/$n" "$B/$n.debug" && strip --strip-all "$B/$n"
}
build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }
dbg_build dbgr_evil evil_hot_newt evil_outer_newt && dbg_build dbgr_evil2 evil2_hot_newt evil2_outer_newt &&
  dbg_build dbgr_moved moved_hot_newt moved_outer_newt ||
  { fail "build test programs"; pf_done; exit 1; }
ID_EVIL=$(build_id "$B/dbgr_evil")
ID_EVIL2=$(build_id "$B/dbgr_evil2")
ID_MOVED=$(build_id "$B/dbgr_moved")

HPORT=$(free_port)
TRAP=$(free_port)
DPORT=$(free_port)
# The server: the evil build id goes to the daemon's API, the second one to
# the trap by this host's name; the moved one to /files/<id> on itself.
python3 - "$DPORT" "$HPORT" "$TRAP" "$ID_EVIL" "$ID_EVIL2" "$ID_MOVED" "$B/dbgr_moved.debug" \
  "$TMP/dserver.log" "$(hostname)" <<'PY' &
import http.server, sys
port, api, trap, evil, evil2, moved, movedfile, log, host = sys.argv[1:10]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        open(log, "a").write(self.path + "\n")
        if self.path in ("/buildid/%s/debuginfo" % evil, "/buildid/%s/debuginfo" % evil2):
            to = "127.0.0.1:" + api if evil in self.path else "%s:%s" % (host, trap)
            self.send_response(302)
            self.send_header("Location", "http://%s/api/0/services" % to)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/buildid/%s/debuginfo" % moved:
            self.send_response(302)
            self.send_header("Location", "/files/%s" % moved)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/files/%s" % moved:
            data = open(movedfile, "rb").read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(port)), H).serve_forever()
PY
SRV_PID=$!
# The trap: whatever connects to it is written down.
python3 - "$TRAP" "$TMP/trap.log" <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(16)
while True:
    c, a = s.accept()
    open(sys.argv[2], "a").write("connection from %s\n" % (a,))
    c.close()
PY
TRAP_PID=$!
trap 'kill $SRV_PID $TRAP_PID 2>/dev/null; wait $SRV_PID $TRAP_PID 2>/dev/null; pf_cleanup' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$DPORT/" && break; sleep 0.1; done

pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$HPORT" --debuginfod "http://127.0.0.1:$DPORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }
api_calls() {
  curl -s "http://127.0.0.1:$HPORT/metrics" |
    awk '/^profilefs_http_requests_total\{handler="\/api\/0\/services"/ { s += $2 } END { print s + 0 }'
}
before=$(api_calls)
traces() {
  go tool pprof -sample_index=samples -traces "$TMP/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null
}
# Each program runs until the daemon asked the server for its file (and the
# moved one until its frames are named): at most 40 s.
named=""
for i in $(seq 1 16); do
  "$B/dbgr_evil" 700
  "$B/dbgr_evil2" 700
  "$B/dbgr_moved" 1200
  if grep -q "$ID_EVIL/" "$TMP/dserver.log" 2>/dev/null && grep -q "$ID_EVIL2/" "$TMP/dserver.log" &&
    traces dbgr_moved | grep -q moved_hot_newt; then
    named=1; break
  fi
  sleep 1
done
sleep 1
echo "# debuginfod server got: $(grep -E "$ID_EVIL|$ID_EVIL2|$ID_MOVED" "$TMP/dserver.log" 2>/dev/null | tr '\n' ' ')"
line=$(grep "the redirect of $ID_EVIL to http://127.0.0.1:$HPORT/api/0/services is refused: it leads to this host" "$TMP/daemon.log" | head -1)
if [ -n "$line" ]; then ok "dbgr-refused-log (${line#*warning: })"
else fail "dbgr-refused-log" "$(grep -i debuginfod "$TMP/daemon.log" | tail -5)"; fi
after=$(api_calls)
check_eq "dbgr-api-untouched (GET /api/0/services: $before before, $after after)" "$after" "$before"
line=$(grep "the redirect of $ID_EVIL2 to http://$(hostname):$TRAP/api/0/services is refused: it leads to this host" "$TMP/daemon.log" | head -1)
if [ -n "$line" ] && [ "$(cat "$TMP/trap.log" 2>/dev/null | wc -l)" = 0 ]; then
  ok "dbgr-trap-untouched (${line#*warning: })"
else fail "dbgr-trap-untouched" "$(cat "$TMP/trap.log" 2>/dev/null; grep -i debuginfod "$TMP/daemon.log" | tail -3)"; fi
m=$(curl -s "http://127.0.0.1:$HPORT/metrics" | grep '^profilefs_ebpf_debuginfod_requests_total{result="redirect_refused"}')
[ -n "$m" ] && ok "dbgr-metrics ($m)" || fail "dbgr-metrics" "$(curl -s "http://127.0.0.1:$HPORT/metrics" | grep debuginfod_requests)"
if [ -n "$named" ] && [ -f "$TMP/data/debuginfo/$ID_MOVED.debug" ]; then
  ok "dbgr-same-server (a redirect within the server followed: moved_hot_newt named after $i runs)"
else fail "dbgr-same-server" "$(traces dbgr_moved | head -5; grep -i debuginfod "$TMP/daemon.log" | tail -3)"; fi
kill -0 "$PF_PID" 2>/dev/null || fail "daemon alive" "it exited"
pf_stop
pf_done
