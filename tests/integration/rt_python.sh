#!/usr/bin/env bash
# CPython versions on the eBPF sampler, with no flag: Debian 12's 3.11 on the
# host, Debian 13's 3.13 and unstable's 3.14 each in its runtime root (its own
# mount and PID namespaces, as a container: the daemon finds the interpreter
# through /proc/PID/root). tests/ebpf/runtimes/chain.py runs a three-deep
# chain of named functions below its module level; of each process's
# samples at least 90% must show <module>;outer_a;middle_b;leaf_c, each
# frame with the script's file and a line, on a stack that reaches the
# process's root (_start). Once for a process started before the daemon
# (its samples from the end of the daemon's start-up, the unwind tables of
# the interpreters built, while the others run), once for one started after
# it (3 s of its CPU, all its samples). Prints the share per version and case.
# Needs root, a kernel with BTF and the runtime roots (scripts/runtime-roots.sh).
set -u
. "$(dirname "$0")/../lib.sh"

VERS="3.11 3.13 3.14"
NAMES=""
for v in $VERS; do NAMES="$NAMES rt-python-$v-before rt-python-$v-after"; done
NAMES="$NAMES rt-python-refused rt-python-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed (go tool pprof reads the profiles)"
[ -x /usr/bin/python3.11 ] || skip_all "no /usr/bin/python3.11"
need_root trixie sid
RD="$(roots_dir)"

pf_setup
[ "${KEEP_TMP:-0}" = 1 ] && echo "# kept: $TMP"
W="rtpy.$$"
rootof() { case "$1" in 3.13) echo "$RD/trixie" ;; 3.14) echo "$RD/sid" ;; *) echo "" ;; esac; }
for v in 3.13 3.14; do mkdir -p "$(rootof "$v")/tmp/$W"; done
BEFORE=""
cleanup_roots() {
  [ -z "$BEFORE" ] || kill -KILL $BEFORE 2>/dev/null
  for v in 3.13 3.14; do rm -rf "$(rootof "$v")/tmp/$W"; done
  pf_cleanup
}
trap cleanup_roots EXIT
SRC="$ROOT/tests/ebpf/runtimes/chain.py"

# run VERSION CASE CPU_SECS MAX_SECS: chain.py as chain_<v>_<case>.py (its
# service) under that CPython, in the background; $! its pid (unshare's for a
# root: SIGKILL to it ends the process, SIGTERM it ignores).
run() {
  local v=$1 c=$2 n="chain_${1/./_}_$2.py" r
  r="$(rootof "$v")"
  if [ -z "$r" ]; then
    cp "$SRC" "$TMP/$n"
    /usr/bin/python3.11 "$TMP/$n" "$3" "$4" &
  else
    cp "$SRC" "$r/tmp/$W/$n"
    in_root "$r" "/usr/bin/python$v" "/tmp/$W/$n" "$3" "$4" &
  fi
}

BEFORE=""
for v in $VERS; do run "$v" before 300 300; BEFORE="$BEFORE $!"; done
sleep 1
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 ||
  { fail "rt-python daemon start"; pf_done; exit 1; }
# The daemon's start-up: the unwind tables of every process's files are
# built (seconds on a loaded host). The processes started before it are
# measured from then on.
for _ in $(seq 1 $((120 * ${PROFILEFS_SLOW:-1}))); do
  n=0
  for b in /usr/bin/python3.11 "$RD/trixie/usr/bin/python3.13" "$RD/sid/usr/bin/python3.14"; do
    grep -qF "ebpf: $b: unwind table" "$TMP/daemon.log" && n=$((n + 1))
  done
  [ "$n" -eq 3 ] && break
  sleep 0.5
done
echo "# interpreters' unwind tables built: $n of 3"
sleep 2
T0="$(date -u +%Y-%m-%dT%H%M%S)"
AFTER=""
# 3 s of CPU each (a sample per 10 ms of it), 90 s at most on a busy host.
for v in $VERS; do run "$v" after 3 90; AFTER="$AFTER $!"; done
wait $AFTER
echo "# the processes started after the daemon ended: $(date -u +%T)"
T1="$(date -u +%Y-%m-%dT%H%M%S)"
kill -KILL $BEFORE 2>/dev/null
wait $BEFORE 2>/dev/null
sleep 5	# two periods more: the last samples are stored

# named SERVICE RANGE: "matched total" samples of the service in the range
# whose stack shows the chain, file and line on each of its four frames, and
# reaches _start.
named() {
  local f="$TMP/mnt/$1/cpu/all/$2/merged.pb.gz" i
  for i in $(seq 1 40); do [ -e "$f" ] && break; sleep 0.5; done
  go tool pprof -raw "$f" 2>/dev/null | tee "$TMP/raw.$1" | awk -v file="$1" '
    /^Samples:/ { sec = "s"; next }
    /^Locations/ { sec = "l"; next }
    /^Mappings/ { sec = "m"; next }
    sec == "s" && $0 ~ /:/ && $1 ~ /^[0-9]+$/ {
      split($0, a, ":"); n = split(a[2], ids, " "); s = ""
      for (k = 1; k <= n; k++) s = s " " ids[k]
      ns++; cnt[ns] = $1; st[ns] = s; next }
    # "ID: ADDR M=N FUNC FILE:LINE s=START[(SYSTEM NAME)]": pprof shows <module> as ""(<module>).
    sec == "l" && $1 ~ /^[0-9]+:$/ {
      id = $1; sub(/:$/, "", id); t = $0; sub(/^ *[0-9]+: +[^ ]+ +M=[0-9]+ /, "", t)
      sys = ""; if (match(t, /\([^()]*\)$/)) sys = substr(t, RSTART + 1, RLENGTH - 2)
      sub(/ s=[0-9]+(\(.*\))?$/, "", t)
      f = t; sub(/ [^ ]*$/, "", f); fl[id] = substr(t, length(f) + 2)
      fn[id] = f != "" ? f : sys; next }
    END {
      for (i = 1; i <= ns; i++) {
        n = split(st[i], ids, " "); root = fn[ids[n]]; chain = ""
        for (k = n; k >= 1; k--) {
          f = fn[ids[k]]
          if (f == "<module>" || f == "outer_a" || f == "middle_b" || f == "leaf_c") {
            ok = index(fl[ids[k]], "/" file ":") > 0 && fl[ids[k]] !~ /:0$/
            chain = chain (ok ? f : "?" f) ";"
          }
        }
        total += cnt[i]
        if (root == "_start" && chain ~ /^<module>;outer_a;middle_b;leaf_c;$/) hit += cnt[i]
        else if (bad++ < 3) print "#   miss: root " root " chain " chain > "/dev/stderr"
      }
      print hit + 0, total + 0 }'
}

for c in before after; do
  for v in $VERS; do
    # Before: while the others ran (the daemon's tables built); after: the whole run.
    if [ $c = before ]; then rg="$T0..$T1"; else rg=all; fi
    read -r m n <<<"$(named "chain_${v/./_}_$c.py" "$rg")"
    pc=$(( n > 0 ? m * 100 / n : 0 ))
    if [ "$n" -ge 20 ] && [ "$pc" -ge 90 ]; then ok "rt-python-$v-$c ($pc% of $n samples named to the root)"
    else fail "rt-python-$v-$c" "$pc% of $n samples named to the root (want >= 90% of >= 20)"; fi
  done
done
# A version the daemon does not know (here 3.15: a program named python3.15
# exporting the three symbols it looks for) is refused once per process,
# with a log line naming the version, and the process runs on unharmed.
cat >"$TMP/fakepy.c" <<'C'
#include <time.h>
const unsigned long Py_Version = 0x030f00f0;	/* 3.15.0 final */
char _PyRuntime[4096] = "xdebugpy";
char PyCode_Type[512];
int main(void)
{
	volatile unsigned long x = 0;
	time_t end = time(NULL) + 3;

	while (time(NULL) < end)
		x++;
	return 0;
}
C
if cc -O1 -rdynamic -o "$TMP/python3.15" "$TMP/fakepy.c" 2>"$TMP/cc.log"; then
  "$TMP/python3.15" & f1=$!
  "$TMP/python3.15" & f2=$!
  wait $f1; r1=$?; wait $f2; r2=$?
  sleep 3
  told=$(grep -c "CPython 3\.15 (.*): its _Py_DebugOffsets layout is not known" "$TMP/daemon.log")
  per=$(grep -cE "pid ($f1|$f2): CPython 3\.15" "$TMP/daemon.log")
  if [ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] && [ "$told" -eq 1 ] && [ "$per" -eq 2 ]; then
    ok "rt-python-refused (one log line for 3.15, one look per process)"
  else
    fail "rt-python-refused" "exit $r1 $r2; $told lines told 3.15, $per lines for its two processes"
    grep "CPython 3.15" "$TMP/daemon.log" | head -5 | sed 's/^/#   /'
  fi
else
  fail "rt-python-refused" "cc: $(head -3 "$TMP/cc.log")"
fi
if kill -0 "$PF_PID" 2>/dev/null; then ok "rt-python-daemon"; else fail "rt-python-daemon" "the daemon died"; fi
grep -E "CPython" "$TMP/daemon.log" | sed 's/^/# /' | head -10
pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "rt-python-clean-stop" "daemon exited with $PF_RC"
pf_done
