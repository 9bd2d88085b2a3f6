#!/usr/bin/env bash
# Off-CPU totals that add up (serve --ebpf --ebpf-offcpu, the default
# threshold and sampling): tests/ebpf/offcpu_total.c times its own threads
# (wall minus CPU time from CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID) -
# a sleeper whose sleeps run from 0.2 ms (below the threshold) to 50 ms, and
# one spinner more than there are CPUs, preempted all the time - and its
# offcpu profile, read through the mount (go tool pprof -raw on
# merged.pb.gz, per tid label), must give each thread within 5% of what the
# thread measured. A wait from its first second (first_wait: a sleep of a
# worker started after 0.5 s of CPU time; a binary built here, never seen
# before) must have its user stack down to the thread's start. So must a
# sleep of 3 s that begins as the process starts (exec_wait, within its
# first 200 ms, before the daemon has read its mappings: its stacks are
# taken when it ends, by when its tables are loaded: the daemon builds a
# new binary's table in the background, a second or two under sanitizers
# on a busy host): main;exec_wait;nap.
# Both CPUs are busy meanwhile (the spinners). On a kernel with task work
# for BPF (6.18+; the daemon then takes the stacks by task work) all of it
# runs a second time with PROFILEFS_EBPF_NO_TASK_WORK=1 (names ending in
# -rseq): the way older kernels take them (rseq_update, sys_exit, the next
# switch out). Needs root and a kernel with BTF; otherwise every check is
# skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-offcpu-total-run ebpf-offcpu-total-stored ebpf-offcpu-total-sleeper"
NAMES="$NAMES ebpf-offcpu-total-spinners ebpf-offcpu-total-first-stack ebpf-offcpu-total-exec-stack"
NAMES="$NAMES ebpf-offcpu-total-rseq"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
B="$TMP/bin"
mkdir -p "$B"
run_case() {
  # A name of its own (its service), and a build of its own: never seen before.
  P="efp_octotal$$${S#-}"
  cc -O2 -fomit-frame-pointer -pthread -DBUILD_TAG="\"$TMP$S\"" -o "$B/$P" \
    "$ROOT/tests/ebpf/offcpu_total.c" || { fail "build tests/ebpf/offcpu_total.c"; return 1; }

  pf_start --ebpf=19 --ebpf-offcpu --ebpf-period 2 --ebpf-min-samples 0 ||
    { fail "ebpf-offcpu-total$S daemon start"; return 1; }
  sleep 4	# the daemon's programs attached, its first reads and its first tables (every process on the host) done: the exec wait is about a new process on a running daemon

  out="$("$B/$P" 8)"
  if echo "$out" | grep -q '^thread .*role=spinner'; then
    ok "ebpf-offcpu-total-run$S"
    echo "$out" | sed 's/^/#   /'
  else
    fail "ebpf-offcpu-total-run$S" "output: $out"; pf_stop; return 1
  fi

  # The last waits (a thread's exact time since its last sampled wait, moved
  # out at its exit) are drained within two drains (5 s each) and stored at
  # the next period's end (5 to 10 s after the wait): from 12 s on, read every
  # 4 s until four reads in a row (12 s, longer than that) agree; two reads 3 s
  # apart could fall between two drains (a busy host slows the daemon down).
  M="$TMP/mnt/$P/offcpu/all/all/merged.pb.gz"
  raw=""
  prev=""; same=0
  for i in $(seq 1 20); do
    sleep 4
    [ -e "$M" ] || continue
    raw="$(go tool pprof -raw -sample_index=offcpu "$M" 2>/dev/null)"
    if [ "$i" -ge 3 ] && [ -n "$raw" ] && [ "$raw" = "$prev" ]; then same=$((same + 1)); else same=0; fi
    [ "$same" -ge 3 ] && break
    prev="$raw"
  done
  if [ -n "$raw" ]; then ok "ebpf-offcpu-total-stored$S"
  else fail "ebpf-offcpu-total-stored$S" "no offcpu profile at $M: $(ls "$TMP/mnt" | head -30 | tr '\n' ' ')"; fi

  # tid -> nanoseconds off CPU in the profile: the samples' second value
  # (waits/count, offcpu/nanoseconds), by their tid label.
  declare -A GOT=()
  while read -r tid ns; do GOT[$tid]=$ns; done < <(echo "$raw" | awk '
    /^Samples:/ { s = 1; next }
    /^Locations/ { s = 0 }
    s && /^ *[0-9]+ +[0-9]+:/ { v = $2; sub(":", "", v); next }
    s && /tid:\[/ { if (match($0, /tid:\[[0-9]+\]/)) { t = substr($0, RSTART + 5, RLENGTH - 6); sum[t] += v } }
    END { for (t in sum) printf "%s %.0f\n", t, sum[t] }')

  # Each thread: the profile's total against its own wall minus CPU time.
  check_thread() {	# name tid want
    local got="${GOT[$2]:-0}"
    local pct
    pct="$(awk -v g="$got" -v w="$3" 'BEGIN { printf "%.1f", w ? 100 * g / w : 0 }')"
    echo "#   $1 tid $2: profile $(awk -v g="$got" 'BEGIN { printf "%.3f", g / 1e9 }') s," \
      "thread's wall minus CPU $(awk -v w="$3" 'BEGIN { printf "%.3f", w / 1e9 }') s: ${pct}%"
    awk -v g="$got" -v w="$3" 'BEGIN { exit !(w > 0 && g >= 0.95 * w && g <= 1.05 * w) }'
}
line="$(echo "$out" | grep 'role=sleeper')"
tid="$(echo "$line" | sed -E 's/.*tid=([0-9]+).*/\1/')"
want="$(echo "$line" | sed -E 's/.*off_ns=([0-9]+).*/\1/')"
timed="$(echo "$line" | sed -E 's/.*timed_ns=([0-9]+).*/\1/')"
echo "#   sleeper's sleeps as timed around each call: $(awk -v w="$timed" 'BEGIN { printf "%.3f", w / 1e9 }') s"
if check_thread sleeper "$tid" "$want"; then ok "ebpf-offcpu-total-sleeper$S"
else fail "ebpf-offcpu-total-sleeper$S" "not within 5% of the thread's own figure"; fi
bad=0; n=0
while read -r line; do
  tid="$(echo "$line" | sed -E 's/.*tid=([0-9]+).*/\1/')"
  want="$(echo "$line" | sed -E 's/.*off_ns=([0-9]+).*/\1/')"
  n=$((n + 1))
  check_thread spinner "$tid" "$want" || bad=$((bad + 1))
done < <(echo "$out" | grep 'role=spinner')
if [ "$bad" -eq 0 ] && [ "$n" -gt 0 ]; then ok "ebpf-offcpu-total-spinners$S ($n threads)"
else fail "ebpf-offcpu-total-spinners$S" "$bad of $n spinners not within 5%"; fi

# The wait from the first second: its user stack reaches the thread's start.
folded="$(cat "$TMP/mnt/$P/offcpu/all/all/folded.txt" 2>/dev/null)"
first="$(echo "$folded" | grep -E '(^|;)first_wait;' | head -3)"
if echo "$first" | grep -qE '(^|;)(start_thread|clone3?);first_thread;first_wait;nap;'; then
  ok "ebpf-offcpu-total-first-stack$S ($(echo "$first" | head -1 | cut -c1-160))"
else
  fail "ebpf-offcpu-total-first-stack$S" "no stack start_thread;first_thread;first_wait;nap in folded.txt"
  echo "$folded" | grep -vE 'spin|sleeper' | head -8 | sed 's/^/#   /'
fi
# The wait from the process's first 200 ms: its stacks are taken when it
# ends, by when its process's tables are loaded (asked for at its switch out).
ew="$(echo "$folded" | grep -E '(^|;)main;exec_wait;nap;' | head -1)"
if [ -n "$ew" ]; then ok "ebpf-offcpu-total-exec-stack$S ($(echo "$ew" | cut -c1-160))"
else
  fail "ebpf-offcpu-total-exec-stack$S" "no stack main;exec_wait;nap in folded.txt"
  echo "$folded" | grep -E 'exec_wait|clock_nanosleep' | grep -vE 'first_wait|sleeper|spin' | head -4 | sed 's/^/#   /'
  # Where else it went: another service, or a stack cut short.
  grep -rHE 'exec_wait' "$TMP"/mnt/*/offcpu/all/all/folded.txt 2>/dev/null | grep -v "^$TMP/mnt/$P/" |
    head -3 | cut -c1-300 | sed 's/^/#   elsewhere: /'
  echo "$folded" | awk '{ print $NF, $0 }' | sort -nr | head -6 | cut -d' ' -f2- | cut -c1-240 | sed 's/^/#   largest: /'
fi

pf_stop
}

# run_case SUFFIX: the daemon, a fresh binary of the program, the checks.
S=""
run_case
if grep -q 'taken by task work' "$TMP/daemon.log"; then
  echo "# the same with PROFILEFS_EBPF_NO_TASK_WORK=1: stacks at rseq_update, sys_exit or the next switch out"
  f0=$T_FAIL
  : >"$TMP/daemon.log"
  export PROFILEFS_EBPF_NO_TASK_WORK=1
  S="-rseq"
  run_case
  unset PROFILEFS_EBPF_NO_TASK_WORK
  if grep -q 'taken by task work' "$TMP/daemon.log"; then
    fail "ebpf-offcpu-total-rseq" "PROFILEFS_EBPF_NO_TASK_WORK=1 still took stacks by task work"
  elif [ "$T_FAIL" -eq "$f0" ]; then ok "ebpf-offcpu-total-rseq"
  else fail "ebpf-offcpu-total-rseq" "$((T_FAIL - f0)) checks failed the older kernels' way"; fi
else
  ok "ebpf-offcpu-total-rseq # SKIP the kernel has no task work for BPF: the first run took that way"
fi
if [ "$T_FAIL" -gt 0 ]; then tail -20 "$TMP/daemon.log" | sed 's/^/#   /'; fi
pf_done
