#!/bin/bash
# A stop that hangs is ended, and says where it hung.
#
# The HTTP server's listening thread is frozen alone (ptrace, one thread of
# the daemon, nothing else touched): the daemon's stop then waits on it for
# ever. The stop watch logs the step and what each thread waits on, and
# ends the process; the profiles pushed before are all in the store when a
# new daemon opens it. A stop that does not hang ends as before: exit 0,
# the watch silent.
# Needs root (ptrace of another process) and python3; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../pprof-sums.sh"

NAMES="stop-clean stop-clean-silent stop-unmounted stop-unmounted-silent stop-pushed stop-frozen-thread stop-hung-ends stop-hung-exit-status stop-hung-step stop-hung-threads stop-hung-data"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
command -v python3 >/dev/null && command -v curl >/dev/null && command -v go >/dev/null ||
  skip_all "python3, curl or go missing"

pf_setup
FREEZER=
cleanup_all() {
  [ -n "$FREEZER" ] && kill "$FREEZER" 2>/dev/null
  pf_cleanup
}
trap cleanup_all EXIT

PORT=$(free_port)
U="http://127.0.0.1:$PORT"
G="$REAL/google-pprof/sample.cpu"

# --- a clean stop: the watch says nothing --------------------------------------
pf_start --http "127.0.0.1:$PORT" || { fail "daemon start"; pf_done; exit 1; }
t0=$SECONDS
pf_stop
check_eq "stop-clean (exit status, $((SECONDS - t0)) s)" "$PF_RC" 0
grep -q "stop:" "$TMP/daemon.log" && fail "stop-clean-silent" "$(grep 'stop:' "$TMP/daemon.log" | head -3)" \
  || ok "stop-clean-silent"

# --- the mount taken away from outside: the daemon ends as cleanly -------------
: > "$TMP/daemon.log"
pf_start || { fail "daemon start (unmount)"; pf_done; exit 1; }
fusermount3 -u "$TMP/mnt" 2>/dev/null || umount "$TMP/mnt"
for i in $(seq 100); do kill -0 "$PF_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PF_PID" 2>/dev/null; then fail "stop-unmounted" "still running 10 s after the unmount"; pf_stop
else wait "$PF_PID"; check_eq "stop-unmounted (exit status)" "$?" 0; PF_PID=; fi
grep -q "stop:" "$TMP/daemon.log" && fail "stop-unmounted-silent" "$(grep 'stop:' "$TMP/daemon.log" | head -3)" \
  || ok "stop-unmounted-silent"

# --- a stop that hangs --------------------------------------------------------
: > "$TMP/daemon.log"
pf_start --http "127.0.0.1:$PORT" || { fail "daemon start (2)"; pf_done; exit 1; }
pushed=0
for i in 1 2 3; do
  c=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$G" "$U/api/0/profiles?service=held&type=cpu")
  [ "$c" = 200 ] && pushed=$((pushed + 1))
done
check_eq "stop-pushed (profiles pushed before the stop)" "$pushed" 3
want=$(pprof_sums "$TMP/mnt/held/cpu/all/all/merged.pb.gz")
[ -n "$(echo "$want" | tr -d ' ')" ] || fail "stop-pushed: the merge of what was pushed has sums"
tid=""
for t in /proc/$PF_PID/task/*; do
  [ "$(cat "$t/comm" 2>/dev/null)" = MHD-listen ] && tid=$(basename "$t")
done
# PTRACE_SEIZE then PTRACE_INTERRUPT: that thread alone stops, until the tracer goes.
python3 - "$tid" "$TMP/frozen" <<'PY' &
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
tid = int(sys.argv[1])
if libc.ptrace(0x4206, tid, None, None) != 0 or libc.ptrace(0x4207, tid, None, None) != 0:
    sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
open(sys.argv[2], "w").write("%d\n" % tid)
# Its stops left as they are; its end reaped (a traced thread's end is the
# tracer's to collect, or its process never finishes exiting).
while True:
    _, status = os.waitpid(tid, 0x40000000)	# __WALL
    if os.WIFEXITED(status) or os.WIFSIGNALED(status):
        break
PY
FREEZER=$!
for i in $(seq 50); do [ -s "$TMP/frozen" ] && break; kill -0 "$FREEZER" 2>/dev/null || break; sleep 0.1; done
if [ ! -s "$TMP/frozen" ] && ! kill -0 "$FREEZER" 2>/dev/null; then
  # ptrace refused (Yama's ptrace_scope, no CAP_SYS_PTRACE): no way to hang a stop here.
  pf_stop
  for n in stop-frozen-thread stop-hung-ends stop-hung-exit-status stop-hung-step stop-hung-threads stop-hung-data; do
    echo "ok - $n # SKIP ptrace of one thread refused"
  done
  pf_done; exit
fi
state=$(awk '{print $3}' "/proc/$PF_PID/task/$tid/stat" 2>/dev/null)
if [ -n "$tid" ] && [ -s "$TMP/frozen" ] && [ "$state" = t ]; then
  ok "stop-frozen-thread (MHD-listen, thread $tid, state $state; $pushed profiles pushed)"
else
  fail "stop-frozen-thread" "thread '${tid:-none}' state '${state:-none}'"
fi
t0=$SECONDS
kill -TERM "$PF_PID"
for i in $(seq 300); do kill -0 "$PF_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PF_PID" 2>/dev/null; then
  fail "stop-hung-ends" "still running 30 s after SIGTERM"
  kill -9 "$PF_PID"
else
  ok "stop-hung-ends ($((SECONDS - t0)) s after SIGTERM)"
fi
wait "$PF_PID"; rc=$?
PF_PID=
wait "$FREEZER" 2>/dev/null; FREEZER=
check_eq "stop-hung-exit-status" "$rc" 1
grep -q "stop: still stopping the HTTP server" "$TMP/daemon.log" && \
  grep -q "stop: stopping the HTTP server did not end within 15 s: exiting" "$TMP/daemon.log" \
  && ok "stop-hung-step" || fail "stop-hung-step" "$(grep 'stop:' "$TMP/daemon.log" | head -3)"
grep -q "stop: thread $tid (MHD-listen): state t" "$TMP/daemon.log" && ok "stop-hung-threads" \
  || fail "stop-hung-threads" "$(grep 'stop: thread' "$TMP/daemon.log" | head -5)"
mountpoint -q "$TMP/mnt" || ! stat "$TMP/mnt" >/dev/null 2>&1 && fusermount3 -u -z "$TMP/mnt" 2>/dev/null
pf_start || { fail "daemon start (3)"; pf_done; exit 1; }
check_eq "stop-hung-data (the $pushed profiles' sums after the restart)" \
  "$(pprof_sums "$TMP/mnt/held/cpu/all/all/merged.pb.gz")" "$want"
pf_stop
pf_done
