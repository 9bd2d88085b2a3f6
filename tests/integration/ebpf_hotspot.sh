#!/usr/bin/env bash
# The eBPF sampler and Java stacks without JVM flags: a program whose hot
# method is three calls below main (HsDeep: main -> middle -> caller -> hot,
# compiled by C2 with caller and hot inlined into middle, no frame pointers)
# must show main;...;caller;hot reaching the thread's root (start_thread,
# clone) in >= 90% of its main thread's samples: walked through HotSpot's
# code cache and named from the JVM's own structures. Once for a JVM started
# before the daemon, once for one started after it. Meanwhile hostile
# "JVMs" (tests/ebpf/hsfake.c: a fake libjvm.so whose structure tables lead
# to crafted code caches, blobs, debug information and methods) are walked
# too: the daemon must keep sampling and stay up. All of it with every CPU
# busy: HS_LOAD spinning processes (default: one per CPU, besides the two
# JVMs and the three fake ones) run from before the daemon starts to the
# end, the normal case on a host, where HotSpot compiles late and the
# daemon and its threads wait for a CPU; the load average is printed.
# Needs root, a kernel with BTF and OpenJDK 17; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-hotspot-before ebpf-hotspot-after ebpf-hotspot-main-named ebpf-hotspot-hostile"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
command -v python3 >/dev/null || skip_all "python3 not installed"
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$JAVA_HOME/bin/java" ] && [ -x "$JAVA_HOME/bin/javac" ] || skip_all "no OpenJDK 17 at $JAVA_HOME"
"$JAVA_HOME/bin/java" -version 2>&1 | grep -q 'version "17\.' || skip_all "$JAVA_HOME is not OpenJDK 17"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" PPROF_BINARY_PATH=/nonexistent
SRC="$ROOT/tests/ebpf/runtimes"
B="$TMP/bin"
M="$TMP/mnt"
# CPU time each JVM's main thread runs for (the one started before the
# daemon: 3 s more, most of it under the daemon), at most WALL_MS.
CPU_MS=${HS_CPU_MS:-6000}
WALL_MS=${HS_WALL_MS:-90000}
mkdir -p "$B/java"
# Two copies under two class names: two services, one per JVM.
for c in HsBefore HsAfter; do
  sed "s/HsDeep/$c/g" "$SRC/HsDeep.java" > "$B/java/$c.java"
done
mkdir -p "$B/fakejvm"
(cd "$B/java" && "$JAVA_HOME/bin/javac" HsBefore.java HsAfter.java) &&
  cc -O1 -fPIC -shared -DHSFAKE_LIB -o "$B/fakejvm/libjvm.so" "$ROOT/tests/ebpf/hsfake.c" &&
  cc -O1 -fno-omit-frame-pointer -fno-stack-protector -o "$B/hsfake" "$ROOT/tests/ebpf/hsfake.c" \
    -L"$B/fakejvm" -ljvm -Wl,-rpath,"$B/fakejvm" ||
  { fail "build test programs"; pf_done; exit 1; }

# wait_file FILE: until FILE exists (at most 30 s; the daemon stores every 2 s).
wait_file() {
  local i
  for i in $(seq 1 60); do
    [ -e "$1" ] && return 0
    kill -0 "$PF_PID" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

# deep CLASS: "percent matched total" of the main thread's samples (comm
# java) whose stack, root first, starts at a thread root and shows
# CLASS.main, later CLASS.caller and CLASS.hot right below it; then the
# heaviest stacks of those that do not.
deep() {
  go tool pprof -traces -tagfocus=comm=java "$M/$1/cpu/all/all/merged.pb.gz" 2>/dev/null |
    python3 "$ROOT/scripts/java-root-share.py" "$1"
}

# check_deep NAME CLASS
check_deep() {
  local out pct
  if ! wait_file "$M/$2/cpu/all/all/merged.pb.gz"; then
    fail "$1" "no service $2: $(ls "$M" | tr '\n' ' ')"; return
  fi
  out=$(deep "$2")
  pct=$(echo "$out" | head -1 | cut -d' ' -f1)
  if [ -n "$pct" ] && python3 -c "import sys; sys.exit(0 if float('$pct') >= 90 else 1)"; then
    ok "$1 ($pct% of $(echo "$out" | head -1 | cut -d' ' -f3) reach the root through main;...;caller;hot, load $LOAD)"
    echo "$out" | tail -n +2 | sed 's/^/# not matching:/'
  else
    fail "$1" "$(echo "$out" | head -1 | cut -d' ' -f1-3) (want >= 90%); not matching: $(echo "$out" | tail -n +2)"
  fi
}

# Every CPU busy, for the whole test (stopped, by pid, before the checks).
SPIN=
SPIN_N=${HS_LOAD:-$(nproc)}
for i in $(seq 1 "$SPIN_N"); do
  (exec sh -c 'while :; do :; done') &
  SPIN="$SPIN $!"
done
stop_spin() { [ -n "$SPIN" ] && kill $SPIN 2>/dev/null; wait $SPIN 2>/dev/null; SPIN=; }
trap 'stop_spin; pf_cleanup' EXIT	# pf_setup's trap, after ours

# The JVM started before the daemon: compiled code already in its code cache.
(cd "$B/java" && exec "$JAVA_HOME/bin/java" -cp . HsBefore $((CPU_MS + 3000)) "$WALL_MS" >/dev/null) &
JB=$!
sleep 3
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 || { fail "ebpf daemon start"; pf_done; exit 1; }
# And one started after it.
(cd "$B/java" && exec "$JAVA_HOME/bin/java" -cp . HsAfter "$CPU_MS" "$WALL_MS" >/dev/null) &
JA=$!
# The hostile ones, beside them.
FAKE=
for mode in loop garbage frames; do
  "$B/hsfake" $mode 6000 >/dev/null &
  FAKE="$FAKE $!"
done
wait $JB $JA $FAKE
LOAD=$(cut -d' ' -f1 /proc/loadavg)
sleep 4
stop_spin
echo "# under load: $(echo $SPIN_N) spinning processes besides the JVMs on $(nproc) CPUs; load average (1 min) $LOAD as the JVMs ended"

check_deep ebpf-hotspot-before HsBefore
check_deep ebpf-hotspot-after HsAfter
# main named from the JVM's structures (its Method*, interpreted or compiled),
# not left as the perf map's one "Interpreter".
if go tool pprof -traces "$M/HsAfter/cpu/all/all/merged.pb.gz" 2>/dev/null | grep -q '^ *HsAfter.main'; then
  ok "ebpf-hotspot-main-named"
else
  fail "ebpf-hotspot-main-named" "$(grep -i 'hotspot' "$TMP/daemon.log" | head -3)"
fi
grep -q "pid $JB: HotSpot 17: code cache" "$TMP/daemon.log" ||
  echo "# the daemon's log says nothing of pid $JB's code cache"
rm -f "/tmp/perf-$JB.map" "/tmp/perf-$JA.map"

# The hostile JVMs were taken for OpenJDK 17 and walked; their samples stored,
# the daemon alive (and, below, exiting cleanly).
entered=0
for p in $FAKE; do grep -q "pid $p: HotSpot 17: code cache" "$TMP/daemon.log" && entered=$((entered + 1)); done
if [ "$entered" -eq 3 ] && wait_file "$M/hsfake/cpu/all/all/merged.pb.gz" && kill -0 "$PF_PID" 2>/dev/null; then
  ok "ebpf-hotspot-hostile ($(go tool pprof -top "$M/hsfake/cpu/all/all/merged.pb.gz" 2>/dev/null |
    grep -o 'Total samples = [^ ]*'), $(grep -c '\[java: unreadable\]' "$M/hsfake/cpu/all/all/folded.txt") stacks with unreadable Java frames)"
else
  fail "ebpf-hotspot-hostile" "$entered of 3 walked; services: $(ls "$M" | tr '\n' ' ')"
fi

# The kernel tells FUSE of the last closes (pprof's, grep's) after they
# return: let them reach the daemon before it stops.
sleep 1
pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
pf_done
