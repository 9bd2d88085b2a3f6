# Shared helpers for the integration tests (sourced). Each test prints
# "ok - NAME" or "not ok - NAME: why"; tests/run.sh counts them.
#
# Every test mounts the real filesystem into a fresh temporary directory,
# with a timeout, and always unmounts (trap).

ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
REAL="${REAL:-$ROOT/../shared/testdata/real}"
[ -d "$REAL" ] || REAL="$ROOT/tests/testdata/real"
T_PASS=0
T_FAIL=0

ok()   { echo "ok - $1"; T_PASS=$((T_PASS + 1)); }
fail() { echo "not ok - $1${2:+: $2}"; T_FAIL=$((T_FAIL + 1)); }
# check NAME CMD...: ok if CMD succeeds
check() { local n="$1"; shift; if "$@" >/dev/null 2>&1; then ok "$n"; else fail "$n" "command failed: $*"; fi; }
# check_eq NAME GOT WANT
check_eq() { if [ "$2" == "$3" ]; then ok "$1"; else fail "$1" "got '$2', want '$3'"; fi; }

# ch_post URL SQL [curl args...]: SQL to a ClickHouse server over HTTP, its
# answer on stdout, curl's status. A SELECT ClickHouse fails on a connection
# between its servers that was left out of step (codes 32, 101, 102, 210) is
# asked once more, as the daemon does: that connection is gone by then.
ch_post() {
  local url=$1 sql=$2 out rc; shift 2
  out=$(curl -sS --max-time 20 "$@" "$url/" --data-binary "$sql"); rc=$?
  if [ "${sql:0:6}" = SELECT ] && printf '%s' "$out" | head -c 12 | grep -qE '^Code: (32|101|102|210)[,.]'; then
    echo "# clickhouse: '${sql:0:60}' failed between servers (${out:0:120}); asked once more" >&2
    out=$(curl -sS --max-time 20 "$@" "$url/" --data-binary "$sql"); rc=$?
  fi
  [ -z "$out" ] || printf '%s\n' "$out"
  return $rc
}

# free_port: a loopback TCP port free now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# pf_start [extra serve args...]: start a daemon on $TMP/mnt with data in $TMP/data
pf_start() {
  mkdir -p "$TMP/mnt" 2>/dev/null
  "$BIN" serve --data "$TMP/data" "$@" "$TMP/mnt" >>"$TMP/daemon.log" 2>&1 &
  PF_PID=$!
  local i
  for i in $(seq 1 100); do
    # Read it: test -r can pass on a stale mount that is about to be replaced.
    head -c 16 "$TMP/mnt/README.txt" 2>/dev/null | grep -q profilefs && return 0
    kill -0 "$PF_PID" 2>/dev/null || { echo "daemon exited:"; tail -20 "$TMP/daemon.log"; return 1; }
    sleep 0.1
  done
  echo "daemon did not mount within 10 s"; tail -20 "$TMP/daemon.log"; return 1
}

# pf_stop: SIGTERM and wait (clean unmount expected)
pf_stop() {
  [ -n "${PF_PID:-}" ] || return 0
  kill -TERM "$PF_PID" 2>/dev/null
  local i
  for i in $(seq 1 100); do
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$PF_PID" 2>/dev/null; then kill -9 "$PF_PID"; fi
  wait "$PF_PID" 2>/dev/null
  PF_RC=$?
  PF_PID=
  return 0
}

pf_cleanup() {
  pf_stop
  if mountpoint -q "$TMP/mnt" 2>/dev/null || ! stat "$TMP/mnt" >/dev/null 2>&1; then
    fusermount3 -u -z "$TMP/mnt" 2>/dev/null || umount -l "$TMP/mnt" 2>/dev/null
  fi
  if [ "${KEEP_TMP:-0}" != 1 ]; then rm -rf "$TMP"; fi
}

pf_setup() {
  TMP="$(mktemp -d /tmp/profilefs-test.XXXXXX)"
  trap pf_cleanup EXIT
}

pf_done() {
  echo "# $(basename "$0"): $T_PASS passed, $T_FAIL failed"
  [ "$T_FAIL" -eq 0 ]
}

# settled CMD...: CMD's output once it stops changing: CMD run every 4 s
# until three runs in a row after the first print the same, non-empty (12 s:
# longer than an off-CPU wait takes from its end to the store, 5 to 10 s,
# and than a busy host's late drain), for 80 s at most; its last output.
settled() {
  local prev="" cur="" same=0 i
  for i in $(seq 1 20); do
    sleep 4
    cur="$("$@" 2>/dev/null)"
    if [ -n "$cur" ] && [ "$cur" = "$prev" ]; then same=$((same + 1)); else same=0; fi
    [ "$same" -ge 3 ] && break
    prev="$cur"
  done
  printf '%s\n' "$cur"
}

# found_range SERVICE WHAT: the range from 2 s after the daemon (its log,
# $TMP/daemon.log, at -v) said it found WHAT (a regex: "PHP [0-9.]+ in",
# "V8 [0-9.]+ ") in the service's process, until now; "all" if not found or
# too recent. Before that, a process's samples (the first ones the daemon
# reads, seconds late on a busy host) have neither the runtime's frames nor
# unwind tables.
found_range() {
  local pid ts at n
  pid=$(grep -m1 -oE "pid [0-9]+ \([^)]*\): service $1 " "$TMP/daemon.log" | awk '{ print $2 }')
  [ -n "$pid" ] || { echo all; return; }
  ts=$(grep -m1 -E "ebpf: pid $pid: $2" "$TMP/daemon.log" 2>/dev/null | cut -d' ' -f1)
  at=$(date -d "$ts" +%s 2>/dev/null) || { echo all; return; }
  n=$(( $(date +%s) - at - 2 ))
  if [ -n "$ts" ] && [ "$n" -ge 2 ]; then echo "last-${n}s"; else echo all; fi
}

# Runtime roots (scripts/runtime-roots.sh): the newer runtimes live in debootstrapped roots.
# roots_dir prints where they are; need_root NAME... fails the calling test (with the command
# that makes the root) unless each is ready; in_root ROOT CMD... runs CMD inside ROOT as a
# container would: its own mount and PID namespaces (proc mounted for it), the binaries found
# only through /proc/PID/root. in_root execs: call it in the background (`in_root R cmd &
# pid=$!`, and $pid is unshare's: killing it kills the process inside) or in $( ).
roots_dir() { echo "${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}"; }
need_root() {
	local r
	for r in "$@"; do
		if ! bash "$(dirname "${BASH_SOURCE[0]}")/../scripts/runtime-roots.sh" --check "$r" >/dev/null; then
			echo "not ok - runtime root '$r' is missing: make it with: bash scripts/runtime-roots.sh $r"
			echo "0 passed, 1 failed"
			exit 1
		fi
	done
}
in_root() {
	local root=$1; shift
	exec unshare --mount --pid --fork --kill-child --mount-proc="$root/proc" \
		chroot "$root" "$@"
}
