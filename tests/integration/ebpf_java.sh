#!/usr/bin/env bash
# The eBPF sampler and what a user of Java and threaded programs sees:
# HotSpot's perf-map names kept whole ("StubRoutines (1)", never "(1)"),
# libjvm's C++ frames demangled, the perf map the daemon had a JVM write
# removed after the JVM exits (also when the JVM rewrote it just before) and
# one the JVM was told to write at exit kept, and the map of a JVM that runs
# on removed as the daemon stops; a process whose leader exits
# while threads renamed with prctl run on is named after the program, not a
# thread; pprof's "File:" of a profile is the executable (java, python3.11).
# Needs root, a kernel with BTF and a JDK; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-java-stub-names ebpf-java-demangled ebpf-java-file ebpf-java-map-removed ebpf-java-map-kept ebpf-java-map-removed-at-stop ebpf-thread-service ebpf-thread-no-thread-service ebpf-python-file"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
command -v javac >/dev/null && command -v java >/dev/null || skip_all "no JDK"

pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" PPROF_BINARY_PATH=/nonexistent
SRC="$ROOT/tests/ebpf"
B="$TMP/bin"
M="$TMP/mnt"
mkdir -p "$B/java"
cp "$SRC/runtimes/Late.java" "$SRC/runtimes/Hot.java" "$B/java/" &&
  (cd "$B/java" && javac Late.java Hot.java) &&
  cc -O1 -fno-omit-frame-pointer -pthread -o "$B/efp_mtexit" "$SRC/threadnames.c" ||
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

pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 || { fail "ebpf daemon start"; pf_done; exit 1; }

# --- Java --------------------------------------------------------------------
# Late: no flag; the daemon asks for the perf map, and the JVM compiles
# Late.second (new code: asked again) in its last second.
t_launch=$(date +%s)
(cd "$B/java" && exec java -cp . Late 5000 >/dev/null) &
JP=$!
# Hot: told to write its perf map at exit itself: that map is the user's.
(cd "$B/java" && exec java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp . Hot 4000 >/dev/null) &
HP=$!
# A threaded C program whose leader exits first, and Debian's python3 without a script.
"$B/efp_mtexit" 4000 &
CP=$!
# (Long enough that a daemon slowed by a sanitizer on a busy host still sees
# it alive: a process first seen after its exit is named after its comm.)
/usr/bin/python3 -c '
import time
end = time.time() + 8
n = 0
while time.time() < end:
    n += sum(i * i for i in range(1000))
' &
PP=$!
wait $JP $HP $CP $PP
sleep 4

T="$M/Late/cpu/all/all/top.txt"
if wait_file "$T"; then
  go tool pprof -top "$M/Late/cpu/all/all/merged.pb.gz" > "$TMP/late.top" 2>&1
  bad=$(grep -E '  \([0-9]+\)$' "$T" | head -3)
  if [ -z "$bad" ] && grep -q 'Late.first(long)' "$T"; then
    ok "ebpf-java-stub-names ($(grep -o 'StubRoutines ([0-9]*)' "$T" | sort -u | tr '\n' ' '))"
  else fail "ebpf-java-stub-names" "frames: $bad; $(grep -c Late. "$T") Late frames"; fi
  n=$(grep -c '::' "$T")
  if ! grep -q '_ZN\|_ZL\|_Z[0-9]' "$T" && [ "$n" -gt 0 ]; then ok "ebpf-java-demangled ($n C++ names, no mangled one)"
  else fail "ebpf-java-demangled" "$(grep '_Z' "$T" | head -3)"; fi
  grep -q '^File: java$' "$TMP/late.top" && ok "ebpf-java-file" \
    || fail "ebpf-java-file" "$(head -1 "$TMP/late.top")"
else
  fail "ebpf-java-stub-names" "no service Late: $(ls "$M" | tr '\n' ' ')"
  fail "ebpf-java-demangled" "no service Late"
  fail "ebpf-java-file" "no service Late"
fi
# Removed once the daemon has seen the exit (a busy daemon sees it late: up to 20 s).
for i in $(seq 1 40); do [ -e "/tmp/perf-$JP.map" ] || break; sleep 0.5; done
# (A map older than the JVM is a dead process's of the same pid, pids wrapping
# on a host that ran many: removed if the daemon asked, else not this JVM's.)
if [ -e "/tmp/perf-$JP.map" ] && [ "$(stat -c %Y "/tmp/perf-$JP.map")" -ge "$t_launch" ]; then
  fail "ebpf-java-map-removed" "/tmp/perf-$JP.map left 20 s after the JVM exited"
else ok "ebpf-java-map-removed${JP:+$([ -e "/tmp/perf-$JP.map" ] && echo " (an older process's map, never asked for, left as it was)")}"; fi
if [ -s "/tmp/perf-$HP.map" ]; then ok "ebpf-java-map-kept (-XX:+DumpPerfMapAtExit)"
else fail "ebpf-java-map-kept" "/tmp/perf-$HP.map, which the JVM was told to write at exit, is gone"; fi
rm -f "/tmp/perf-$JP.map" "/tmp/perf-$HP.map"

# --- threads named otherwise than their process --------------------------------
# Every sample of the renamed threads is the program's: none under a service
# named after a thread, none under "kernel" (the exiting process taken for a
# kernel thread).
if wait_file "$M/efp_mtexit/cpu/all/all/merged.pb.gz"; then
  go tool pprof -tags "$M/efp_mtexit/cpu/all/all/merged.pb.gz" > "$TMP/mt.tags" 2>/dev/null
  if grep -q ': Monitor Deflati$' "$TMP/mt.tags" && grep -q ': ThreadPoolForeg$' "$TMP/mt.tags"; then
    ok "ebpf-thread-service (efp_mtexit: $(grep -E ': (Monitor Deflati|ThreadPoolForeg)$' "$TMP/mt.tags" | awk '{print $1}' | tr '\n' ' '))"
  else fail "ebpf-thread-service" "$(grep -A3 'comm:' "$TMP/mt.tags")"; fi
else fail "ebpf-thread-service" "services: $(ls "$M" | tr '\n' ' ')"; fi
if ls "$M" | grep -q 'Monitor Deflati\|ThreadPoolForeg'; then
  fail "ebpf-thread-no-thread-service" "services: $(ls "$M" | tr '\n' ' ')"
elif [ -e "$M/kernel/cpu/all/all/merged.pb.gz" ] && go tool pprof -tags "$M/kernel/cpu/all/all/merged.pb.gz" 2>/dev/null | \
    grep -q ': Monitor Deflati$\|: ThreadPoolForeg$'; then
  fail "ebpf-thread-no-thread-service" "samples of the renamed threads under service kernel"
else ok "ebpf-thread-no-thread-service"; fi

# --- pprof's File: of the python3 service ---------------------------------------
py=$(readlink -f /usr/bin/python3); py=${py##*/}
if wait_file "$M/$py/cpu/all/all/merged.pb.gz"; then
  f=$(go tool pprof -top "$M/$py/cpu/all/all/merged.pb.gz" 2>/dev/null | head -1)
  check_eq "ebpf-python-file" "$f" "File: $py"
else fail "ebpf-python-file" "no service $py: $(ls "$M" | tr '\n' ' ')"; fi

# --- a JVM that runs on as the daemon stops --------------------------------------
# Its perf map, written because the daemon asked, goes with the daemon: nothing
# would ask the JVM to update it.
(cd "$B/java" && exec java -cp . Hot 120000 >/dev/null) &
RP=$!
for i in $(seq 1 $((60 * ${PROFILEFS_SLOW:-1}))); do [ -s "/tmp/perf-$RP.map" ] && break; sleep 0.5; done
had=no; [ -s "/tmp/perf-$RP.map" ] && had=yes

pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
if [ "$had" = no ]; then fail "ebpf-java-map-removed-at-stop" "the running JVM wrote no perf map in 30 s"
elif [ -e "/tmp/perf-$RP.map" ]; then fail "ebpf-java-map-removed-at-stop" "/tmp/perf-$RP.map left as the daemon stopped"
else ok "ebpf-java-map-removed-at-stop"; fi
kill "$RP" 2>/dev/null; wait "$RP" 2>/dev/null
rm -f "/tmp/perf-$RP.map"
pf_done
