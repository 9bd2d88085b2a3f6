#!/usr/bin/env bash
# The eBPF sampler and Java stacks of OpenJDK 17, 21 and 25, no JVM flags:
# a program whose hot method is three calls below main (RtJavaChain: main ->
# alphaLevel -> betaLevel -> gammaSpin, under a class name of its own per
# JVM) must show main;...;alphaLevel;betaLevel;gammaSpin, each named with its
# file and line, reaching the thread's root in >= 90% of its main thread's
# samples: walked through HotSpot's code cache and interpreter frames and
# named from the JVM's own structures, whatever moved between the versions.
# OpenJDK 17 runs on the host; 21 and 25 in the Debian 13 root
# (tests/lib.sh in_root: their own mount and PID namespaces and their own
# /tmp, as containers; libjvm.so and the perf map reached through
# /proc/PID/root, the attach socket by the JVM's namespaced pid). Each
# version once for a JVM started before the daemon and once for one started
# after it; the share is printed per version and case.
#
# Reaching the root (scripts/java-chain-share.py): the outermost frame is
# start_thread/clone3 (named), or - the root has no libc6-dbg, as a real
# container image - libc's unnamed frames ([libc.so.6]) right under the
# launcher's ThreadJavaMain: the walk reached the thread's start, only
# libc's names are missing.
#
# The JVMs in the root that the daemon asked for their perf map (a JVM
# whose frames the code cache named whole is not asked) wrote it.
# And a JVM of a version the daemon does not know (tests/ebpf/hsfake.c's
# fake libjvm.so claiming HotSpot 99) is refused with one log line naming
# the version, its samples stored (walked by frame pointer), the daemon up.
# Needs root, a kernel with BTF, OpenJDK 17 and the trixie root.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="rt-java-17-before rt-java-17-after rt-java-21-before rt-java-21-after rt-java-25-before rt-java-25-after rt-java-perfmap-namespaced rt-java-unknown-version"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
command -v python3 >/dev/null || skip_all "python3 not installed"
J17=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$J17/bin/java" ] && [ -x "$J17/bin/javac" ] || skip_all "no OpenJDK 17 at $J17"
need_root trixie
R="$(roots_dir)/trixie"
VERSIONS="17 21 25"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"
# CPU time each JVM's main thread runs for (one started before the daemon:
# 6 s more, 3 s of it before the daemon, the rest weighing down the samples
# a daemon busy at its start walks before it has read the JVM's tables), at
# most WALL_MS.
CPU_MS=${RTJ_CPU_MS:-5000}
WALL_MS=${RTJ_WALL_MS:-90000}
# The classes, compiled once (class file version 61 runs on all three),
# in a directory of the root the JVMs there see as /mnt (below).
D="$R/tmp/rtjava.$$"
mkdir -p "$D" "$TMP/fake99"
SUF=$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
for v in $VERSIONS; do
  for c in before after; do
    n="J${v}${c:0:1}x$SUF"
    eval "CLS_${v}_$c=$n"
    sed "s/RtJavaChain/$n/g" "$ROOT/tests/ebpf/runtimes/RtJavaChain.java" > "$D/$n.java"
  done
done
cleanup_d() { rm -rf "$D"; }
trap 'cleanup_d; pf_cleanup' EXIT
(cd "$D" && "$J17/bin/javac" J*.java) &&
  cc -O1 -fPIC -shared -DHSFAKE_LIB -DHSFAKE_MAJOR=99 -o "$TMP/fake99/libjvm.so" "$ROOT/tests/ebpf/hsfake.c" &&
  cc -O1 -fno-omit-frame-pointer -fno-stack-protector -o "$TMP/hsfake99" "$ROOT/tests/ebpf/hsfake.c" \
    -L"$TMP/fake99" -ljvm -Wl,-rpath,"$TMP/fake99" ||
  { fail "build test programs"; pf_done; exit 1; }

# run_jvm VERSION CLASS MS: a JVM of VERSION running CLASS for MS ms of CPU,
# in the background; JPID is the pid to wait for. 17 on the host; 21 and 25
# in the root, with the classes bound at /mnt and a /tmp of their own (the
# attach socket and the perf map are named by the JVM's pid, 1 in each).
run_jvm() {
  if [ "$1" = 17 ]; then
    (cd "$D" && exec "$J17/bin/java" -cp . "$2" "$3" "$WALL_MS" >/dev/null) &
  else
    in_root "$R" /bin/sh -c "mount --bind /tmp/rtjava.$$ /mnt && mount -t tmpfs tmpfs /tmp &&
      cd /mnt && exec /usr/lib/jvm/java-$1-openjdk-amd64/bin/java -cp /mnt $2 $3 $WALL_MS" >/dev/null 2>&1 &
  fi
  JPID=$!
}

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

# The unknown version, from before the daemon starts to its refusal (a
# daemon busy at its start may look at it late; then it spins no more).
"$TMP/hsfake99" loop "$WALL_MS" >/dev/null &
FAKE=$!
BEFORE=
for v in $VERSIONS; do
  eval "run_jvm $v \$CLS_${v}_before $((CPU_MS + 6000))"
  BEFORE="$BEFORE $JPID"
done
sleep 3
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 || { fail "ebpf daemon start"; pf_done; exit 1; }
for i in $(seq 1 60); do
  grep -q "pid $FAKE: HotSpot 99: not a version" "$TMP/daemon.log" && break
  sleep 0.5
done
kill "$FAKE" 2>/dev/null; wait "$FAKE" 2>/dev/null
# The ones started after it, once those are done (fewer JVMs at once on a
# small host: each JVM's first samples wait less for a daemon that reads
# every process's tables).
wait $BEFORE
AFTER=
for v in $VERSIONS; do
  eval "run_jvm $v \$CLS_${v}_after $CPU_MS"
  AFTER="$AFTER $JPID"
done
wait $AFTER
sleep 4

for v in $VERSIONS; do
  for c in before after; do
    eval "n=\$CLS_${v}_$c"
    name="rt-java-$v-$c"
    if ! wait_file "$M/$n/cpu/all/all/merged.pb.gz"; then
      fail "$name" "no service $n: $(ls "$M" | grep '^J' | tr '\n' ' ')"; continue
    fi
    out=$(go tool pprof -traces -lines -tagfocus=comm=java "$M/$n/cpu/all/all/merged.pb.gz" 2>/dev/null |
      python3 "$ROOT/scripts/java-chain-share.py" "$n")
    pct=$(echo "$out" | head -1 | cut -d' ' -f1)
    if [ -n "$pct" ] && python3 -c "import sys; sys.exit(0 if float('$pct') >= 90 else 1)"; then
      ok "$name ($pct% of $(echo "$out" | head -1 | cut -d' ' -f3) show main;alphaLevel;betaLevel;gammaSpin with lines, reaching the root)"
      echo "$out" | tail -n +2 | sed 's/^/# not matching:/'
    else
      fail "$name" "$(echo "$out" | head -1 | cut -d' ' -f1-3) (want >= 90%); not matching: $(echo "$out" | tail -n +2)"
    fi
  done
  grep -q "HotSpot $v: code cache" "$TMP/daemon.log" ||
    echo "# the daemon's log says nothing of a HotSpot $v code cache"
done

# The namespaced JVMs (pid 1 in their own PID namespace, their own /tmp):
# each the daemon asked for its perf map while it ran wrote it, through its
# attach socket in its /tmp (a JVM whose frames the code cache named whole
# is not asked; an ask after its exit finds no process: not counted).
wrote=0; failed=0; why=
for v in 21 25; do
  for c in before after; do
    eval "n=\$CLS_${v}_$c"
    p=$(grep -o "pid [0-9]* (java): service $n " "$TMP/daemon.log" | head -1 | cut -d' ' -f2)
    [ -n "$p" ] || continue
    if grep -q "jvm $p: perf map written" "$TMP/daemon.log"; then wrote=$((wrote + 1)); fi
    bad=$(grep "jvm $p: no perf map" "$TMP/daemon.log" | grep -v "No such file or directory\|No such process" | head -1)
    [ -z "$bad" ] || { failed=$((failed + 1)); why="$why $n: ${bad##*ebpf: };"; }
  done
done
if [ "$failed" = 0 ]; then ok "rt-java-perfmap-namespaced ($wrote of the 4 JVMs in the root asked for their perf map and wrote it, none failed)"
else fail "rt-java-perfmap-namespaced" "$failed asks failed:$why"; fi

# The unknown version: refused once, naming it; its samples kept; daemon up.
n=$(grep -c "pid $FAKE: HotSpot 99: not a version this daemon walks (OpenJDK 17, 21, 25)" "$TMP/daemon.log")
if [ "$n" = 1 ] && wait_file "$M/hsfake99/cpu/all/all/merged.pb.gz" && kill -0 "$PF_PID" 2>/dev/null &&
    ! grep -q "pid $FAKE: HotSpot 99: code cache" "$TMP/daemon.log"; then
  ok "rt-java-unknown-version (logged once: $(grep -o "HotSpot 99: not a version[^:]*" "$TMP/daemon.log" | head -1))"
else
  fail "rt-java-unknown-version" "$n log lines; $(grep "pid $FAKE" "$TMP/daemon.log" | head -3)"
fi

# The kernel tells FUSE of the last closes (pprof's) after they return: let
# them reach the daemon before it stops.
sleep 1
pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
pf_done
