#!/usr/bin/env bash
# The eBPF sampler names a process by the workload it belongs to, in real
# cgroups laid out as systemd lays them out (v1's name=systemd and cpu
# hierarchies and the v2 unified tree, all three written): a system unit, a
# user's unit under user@N.service, a process moved into a unit after it
# started (named by it from then on), a podman container by its name, two
# scripts named busy under python3 and node as two services (busy.py,
# busy.js); 200 short-lived commands add at most a handful of root entries
# (the rest goes to host-other); an excluded unit stores nothing. Needs root,
# a kernel with BTF, cgroup hierarchies it may write, python3 and node;
# podman (with runc and busybox-static) for the container check.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ident-bad-rule ident-unit ident-user-unit ident-moved ident-runtimes ident-runtimes-apart ident-short ident-other-labels ident-excluded ident-container ident-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v node >/dev/null || skip_all "node not installed"
PY=$(command -v python3.11 || command -v python3) || skip_all "python3 not installed"
command -v go >/dev/null || skip_all "go not installed"
# The hierarchies this host has, of the three the sampler reads.
HIER=""
for h in systemd unified cpu; do
  d=/sys/fs/cgroup/$h
  [ -d "$d" ] && [ -w "$d" ] && HIER="$HIER $d"
done
if [ -z "$HIER" ] && [ -f /sys/fs/cgroup/cgroup.procs ] && [ -w /sys/fs/cgroup ]; then
  HIER=/sys/fs/cgroup	# a v2-only host
fi
[ -n "$HIER" ] || skip_all "no cgroup hierarchy to write"

pf_setup
[ "${KEEP_TMP:-0}" = 1 ] && echo "# kept: $TMP"
B="$TMP/bin"
mkdir -p "$B/py" "$B/js"
K=$$
WEB="pfsweb$K"; APP="pfsapp$K"; NOISE="pfsnoise$K"; CTR="pfsdb$K"
CGS="system.slice/$WEB.service user.slice/user-1000.slice/user@1000.service/app.slice/$APP.service system.slice/$NOISE.service"
PODMAN_OK=0
# The slices this test makes, removed at the end (a systemd host has its own).
MADE=""
for h in $HIER; do
  for s in system.slice user.slice; do [ -d "$h/$s" ] || MADE="$MADE $h/$s"; done
done

# cg_move PID REL: PID into cgroup REL of every hierarchy.
cg_move() {
  local h
  for h in $HIER; do
    mkdir -p "$h/$2" && echo "$1" >"$h/$2/cgroup.procs"
  done
}
ident_cleanup() {
  local h c d
  if [ "$PODMAN_OK" = 1 ]; then
    podman --storage-driver vfs rm -f -t 0 "$CTR" >/dev/null 2>&1
    podman --storage-driver vfs rmi -f "localhost/pfsident$K" >/dev/null 2>&1
  fi
  for h in $HIER; do
    for c in $CGS; do
      d="$h/$c"
      while [ "$d" != "$h" ] && [ "$d" != "$h/system.slice" ] && [ "$d" != "$h/user.slice" ]; do
        rmdir "$d" 2>/dev/null || break
        d=$(dirname "$d")
      done
    done
  done
  for d in $MADE; do
    rmdir "$d/user-1000.slice/user@1000.service/app.slice" "$d/user-1000.slice/user@1000.service" \
      "$d/user-1000.slice" 2>/dev/null
    rmdir "$d" 2>/dev/null
  done
  pf_cleanup
}
trap ident_cleanup EXIT

# spin SECONDS: a C program that spins for its CPU time.
cat >"$TMP/spin.c" <<'C'
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
	double want = argc > 1 ? atof(argv[1]) : 3;
	volatile unsigned long n = 0;

	while ((double)clock() / CLOCKS_PER_SEC < want)
		n++;
	return 0;
}
C
cc -O1 -o "$B/spin" "$TMP/spin.c" || skip_all "no C compiler"
for n in webspin appspin noisespin movespin; do cp "$B/spin" "$B/$n"; done
# busy.py: fib for SECONDS of CPU time (as fib.js), however busy the host.
cat >"$B/py/busy.py" <<'PY'
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(secs):
    while time.process_time() < secs:
        fib(18)


work(float(sys.argv[1]))
PY
cp "$ROOT/tests/ebpf/runtimes/fib.js" "$B/js/busy.js"

# The container: an image imported from a root of busybox-static alone.
if command -v podman >/dev/null && command -v runc >/dev/null && [ -x /bin/busybox ] &&
  ! ldd /bin/busybox >/dev/null 2>&1; then
  mkdir -p "$TMP/ctr/root/bin"
  cp /bin/busybox "$TMP/ctr/root/bin/" && ln -s busybox "$TMP/ctr/root/bin/sh"
  cat >"$TMP/ctr/containers.conf" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  export CONTAINERS_CONF="$TMP/ctr/containers.conf"
  if tar -C "$TMP/ctr/root" -c . | timeout 60 podman --storage-driver vfs import - "localhost/pfsident$K" >"$TMP/podman.log" 2>&1; then
    PODMAN_OK=1
  else
    echo "# podman import: $(tail -2 "$TMP/podman.log")"
  fi
fi

# A malformed rule: refused at start, with what was wrong.
out=$("$BIN" serve --data "$TMP/bad" --ebpf --ebpf-exclude "pod:x" "$TMP/badmnt" 2>&1); rc=$?
if [ "$rc" = 2 ] && echo "$out" | grep -q "not unit:NAME"; then ok "ident-bad-rule ($out)"
else fail "ident-bad-rule" "rc=$rc: $out"; fi

PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 2 --http "127.0.0.1:$PORT" --ebpf-exclude "unit:$NOISE" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }

# run_in REL PROG ARGS: PROG started in cgroup REL (moved in before it execs).
run_in() {
  local rel="$1"; shift
  sh -c 'for h in '"$HIER"'; do mkdir -p "$h/$0" && echo $$ > "$h/$0/cgroup.procs"; done; exec "$@"' "$rel" "$@" &
}

T0=$SECONDS
run_in "system.slice/$WEB.service" "$B/webspin" 1; P1=$!
run_in "user.slice/user-1000.slice/user@1000.service/app.slice/$APP.service" "$B/appspin" 1; P2=$!
run_in "system.slice/$NOISE.service" "$B/noisespin" 1; P3=$!
"$PY" "$B/py/busy.py" 1 & P4=$!
node "$B/js/busy.js" 1 & P5=$!
# Moved into the unit after it started: named by the unit from then on.
"$B/movespin" 3 & P6=$!
CPID=""
if [ "$PODMAN_OK" = 1 ]; then
  podman --storage-driver vfs --runtime runc run -d --name "$CTR" "localhost/pfsident$K" \
    /bin/sh -c 'while :; do :; done' >>"$TMP/podman.log" 2>&1 || { PODMAN_OK=0; echo "# podman run: $(tail -2 "$TMP/podman.log")"; }
fi
sleep 1
cg_move "$P6" "system.slice/$WEB.service"
wait $P1 $P2 $P3 $P4 $P5 $P6
[ "$PODMAN_OK" = 1 ] && podman --storage-driver vfs rm -f -t 0 "$CTR" >/dev/null 2>&1
echo "# workloads ran $((SECONDS - T0)) s"

# has SERVICE: its CPU profile shows up within 20 s.
has() {
  local i
  for i in $(seq 1 40); do
    [ -e "$TMP/mnt/$1/cpu/all/all/folded.txt" ] && return 0
    sleep 0.5
  done
  return 1
}
svcs() { ls "$TMP/mnt" | tr '\n' ' '; }
tags() { go tool pprof -tags "$TMP/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null; }

if has "$WEB"; then ok "ident-unit ($WEB from system.slice/$WEB.service)"
else fail "ident-unit" "services: $(svcs)"; fi
if has "$APP"; then ok "ident-user-unit ($APP from user@1000.service/app.slice/$APP.service)"
else fail "ident-user-unit" "services: $(svcs)"; fi
# movespin: its own name before the move, then the unit's.
if has "$WEB" && tags "$WEB" | grep -q movespin; then ok "ident-moved (movespin's samples in $WEB after the move)"
else fail "ident-moved" "comm of $WEB: $(tags "$WEB" | grep -A4 comm | tr -s ' \n' ' ')"; fi
if has busy.py && has busy.js; then ok "ident-runtimes (busy.py, busy.js)"
else fail "ident-runtimes" "services: $(svcs)"; fi
# Each has only its own language's frames: no fib of one added to the other's.
py_in_js=$(grep -c "<module>" "$TMP/mnt/busy.js/cpu/all/all/folded.txt" 2>/dev/null)
js_in_py=$(grep -c "caller;fib" "$TMP/mnt/busy.py/cpu/all/all/folded.txt" 2>/dev/null)
if [ "${py_in_js:-1}" = 0 ] && [ "${js_in_py:-1}" = 0 ]; then ok "ident-runtimes-apart"
else fail "ident-runtimes-apart" "Python stacks in busy.js: $py_in_js, JS stacks in busy.py: $js_in_py"; fi

# An excluded unit: nothing under its name, its program's or in host-other.
sleep 2
if [ ! -e "$TMP/mnt/$NOISE" ] && [ ! -e "$TMP/mnt/noisespin" ] &&
  ! tags host-other | grep -q "$NOISE"; then ok "ident-excluded"
else fail "ident-excluded" "services: $(svcs); host-other: $(tags host-other | grep -c "$NOISE")"; fi

if [ "$PODMAN_OK" = 1 ]; then
  if has "$CTR"; then ok "ident-container ($CTR, podman $(podman --version | awk '{print $3}'), runc)"
  else fail "ident-container" "services: $(svcs); $(grep -i container "$TMP/daemon.log" | tail -2)"; fi
else
  echo "ok - ident-container # SKIP podman, runc or busybox-static missing, or podman failed"
fi

# 200 short-lived commands: at most a handful of new root entries. Ten
# programs under names of their own (the whole host is sampled: others run
# cat and ls too), 20 times each.
CMDS=""
for c in true cat ls date head wc mkdir basename sleep env; do
  cp "$(command -v $c)" "$B/q${K}$c" && CMDS="$CMDS|q${K}$c"
done
sleep 4
ls "$TMP/mnt" | sort >"$TMP/root0"
T1=$(date +%s%N)
for i in $(seq 1 20); do
  "$B/q${K}true"; "$B/q${K}cat" /dev/null; "$B/q${K}ls" "$TMP" >/dev/null; "$B/q${K}date" >/dev/null
  "$B/q${K}head" -c1 /dev/zero >/dev/null; "$B/q${K}wc" -c /dev/null >/dev/null
  "$B/q${K}mkdir" -p "$TMP/d/$i"; "$B/q${K}basename" /a/b >/dev/null; "$B/q${K}sleep" 0
  "$B/q${K}env" true
done
T2=$(date +%s%N)
sleep 6
ls "$TMP/mnt" | sort >"$TMP/root1"
new=$(comm -13 "$TMP/root0" "$TMP/root1" | tr '\n' ' ')
ours=$(comm -13 "$TMP/root0" "$TMP/root1" | grep -cE "^(host-other${CMDS})\$")
echo "# 200 commands in $(((T2 - T1) / 1000000)) ms; root: $(wc -l <"$TMP/root0") entries before, $(wc -l <"$TMP/root1") after; new: ${new:-none}"
if [ "$ours" -le 2 ]; then ok "ident-short ($ours new root entries of the 200 commands')"
else fail "ident-short" "$ours new root entries of the commands': $new"; fi
# What went to the service for the rest carries comm and the unit.
if [ -e "$TMP/mnt/host-other" ]; then
  t=$(tags host-other)
  if echo "$t" | grep -q "^ *comm:" ; then ok "ident-other-labels ($(echo "$t" | grep -A3 "^ *comm:" | tail -3 | tr -s ' \n' ' '))"
  else fail "ident-other-labels" "$(echo "$t" | head -10 | tr '\n' ' ')"; fi
else
  echo "ok - ident-other-labels # SKIP nothing went to host-other"
fi

echo "# root at the end: $(ls "$TMP/mnt" | wc -l) entries: $(svcs)"
echo "# test took $SECONDS s"
if kill -0 "$PF_PID" 2>/dev/null; then ok "ident-daemon"
else fail "ident-daemon" "$(tail -5 "$TMP/daemon.log")"; fi
pf_done
