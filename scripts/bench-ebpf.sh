#!/usr/bin/env bash
# bench-ebpf: what `serve --ebpf=99` costs and how well it names frames.
#
#   1. Overhead: a fixed CPU-bound workload (one thread, built -O2
#      -fomit-frame-pointer, so its stacks are walked with unwind tables) run
#      alternately without and with the daemon sampling at 99 Hz; median over
#      RUNS pairs of the ratio with/without, for wall-clock time and for the
#      workload's own CPU time (target: <= 1.01).
#   2. The daemon's own CPU (percent of one core, user + system time of the
#      process from /proc/PID/stat) at 99 Hz over SECS seconds with no
#      workload of ours and with every CPU busy running Debian's python3,
#      gzip, xz and sqlite3 (new processes all the time), each a fresh daemon,
#      DAEMON_RUNS times: the median and every run; and its RSS; the BPF
#      program's own run time per sample (kernel.bpf_stats_enabled, restored
#      after), which is what every sampled task pays; the unwind tables loaded
#      (bytes, files). With BASE_BIN=/path/to/other/profilefs, that binary's
#      daemon runs beside ours over the same seconds (same host load): both
#      figures side by side.
#   3. Symbolization: the share of user frames with a function name, for
#      Debian's own binaries (python3.11, perl, xz, gzip, bash, sha256sum:
#      stripped, no frame pointers) and for Go programs (with .symtab,
#      stripped, and Debian's gofmt); for the Debian ones also the share of
#      stacks that reach the process root (_start, __libc_start_main, clone).
#   4. Unwind table size per binary (glibc, libstdc++, python3.11): rows and
#      bytes at 8 bytes per row, against 4 bytes per row (the OpenTelemetry
#      eBPF profiler's stated figure).
#   5. Runtimes: a Python workload (Debian's python3.11, recursive calls:
#      deep Python stacks) and a Java one (Debian's OpenJDK, JIT-compiled,
#      its perf map asked for by the daemon) run alternately without and with
#      the daemon at 99 Hz, RT_RUNS pairs, median ratio of their own CPU time
#      (target <= 1.01); the BPF program's time per sample while every CPU
#      runs the Python workload (native walk plus Python frames); the daemon's
#      CPU and RSS meanwhile. Skipped where python3.11 or javac is missing.
#      Then the same for Ruby (Debian's ruby3.1, recursive calls): its
#      slowdown, the BPF program's time per sample with every CPU in Ruby
#      (native walk plus control frames), the daemon's CPU and RSS.
#   6. Off-CPU: the daemon's CPU (percent of one core) and RSS (VmHWM, the
#      peak) with --ebpf-offcpu off, on, and on with --ebpf-offcpu-sample 10
#      (sample10), at 19 Hz and 99 Hz, while every
#      CPU runs Debian's python3, gzip, xz and sqlite3 (as in 2) and a
#      lock-contended C program (threads taking turns at one mutex, short
#      sleeps: thousands of context switches a second) runs beside them;
#      a fresh daemon per run, DAEMON_RUNS runs per setting, medians; the
#      waits recorded and the sched_switch program's run time (percent of a
#      CPU, paid by the tasks switching, not by the daemon). The CPU is
#      measured over OC_SECS seconds (default 15) once the daemon has run
#      OC_SETTLE seconds (default 10: a fresh daemon builds the unwind table
#      of every binary it meets and reads every process's maps first; its
#      CPU in those seconds is shown apart), from the threads' own run time
#      (/proc/PID/task/*/schedstat, nanoseconds: a clock tick is 0.1% of a
#      core over 10 s). Targets at 99 Hz with off-CPU on: <= 1% of a core,
#      RSS <= 150 MB. With BASE_BIN, that binary's daemon runs beside ours
#      with the same flags over the same seconds (its sched_switch program
#      not counted): both side by side, and the ratio of the two in each run
#      with its median (the host's own load, which moves both alike, mostly
#      cancels out of it).
#   6a. Off-CPU programs per context switch (ONLY=offcpu runs it first,
#      ONLY=offcpu_switch alone): two threads ping-pong over pipes, paced to
#      about 40,000 switches a second (PP_RATE round trips a second, default
#      19000), OC_SECS seconds, under a daemon at 99 Hz with --ebpf-offcpu
#      (and BASE_BIN's beside it): the run time of this daemon's off-CPU
#      programs (sched_switch, rseq_update, sys_exit once attached) per
#      switch and as a share of a CPU at 40,000 switches a second, the base
#      daemon's sched_switch program alike, each daemon's CPU; DAEMON_RUNS
#      runs, medians and spread, the load average before and after.
#   7. Go labels: a Go program running under two pprof label sets, without
#      and with the daemon (its slowdown), and the BPF program's time per
#      sample while every CPU runs it.
#   8. Node.js: as 5 for a JavaScript workload (node, its frames named from
#      V8's heap), and the BPF program's and the daemon's cost while every
#      CPU runs it. Skipped where node is missing.
#   9. Java at the root under load: the share of a JIT-compiled Java
#      program's samples (tests/ebpf/runtimes/HsDeep.java, no JVM flags)
#      whose stack reaches its thread's root, with every CPU busy, over
#      JAVA_RUNS runs (default 5): each run, the median and the spread.
#      Skipped where OpenJDK 17 or go is missing.
#   javaver (ONLY=javaver only): per OpenJDK version (17 on the host, 21 and
#      25 in the Debian 13 root, namespaced as containers), a fixed Java
#      workload (main -> alphaLevel -> betaLevel -> gammaSpin) run
#      alternately without and with the daemon at 99 Hz, JV_RUNS pairs
#      (default 3): the median ratio of the JVM's CPU time with/without
#      (target <= 1.01), and the daemon's CPU (percent of one core) while the
#      JVM ran.
#  10. CPython versions (ONLY=pyver, at the end of this file): 3.11, 3.13, 3.14
#      (the last two in their runtime roots): each one's slowdown, and the
#      daemon's CPU with every CPU running it.
#   nodever (ONLY=nodever only): per Node.js release line (the host's node;
#      the official builds 20, 22, 24, 26 in the Debian 13 root, namespaced as
#      containers), a fixed workload (tests/ebpf/runtimes/chain.js, NV_ITERS
#      rounds) run alternately without and with the daemon at 99 Hz, NV_RUNS
#      pairs (default 3): the median ratio of node's CPU time with/without
#      (target <= 1.01), and the daemon's CPU (percent of one core) meanwhile.
#  10. Memory growth (ONLY=memory, memory_cost): a fault-heavy C program
#      (maps 64 MiB, writes every page, unmaps, MEM_ROUNDS times: hundreds of thousands
#      of page faults a second) run MEM_RUNS times alternately alone, under
#      --ebpf=19 and under --ebpf=19 --ebpf-memory (its CPU time, medians,
#      ratios); then the daemon's CPU (percent of one core) and peak RSS with
#      and without --ebpf-memory while every CPU runs debian_load and the
#      fault-heavy program runs beside them, DAEMON_RUNS runs of MEM_SECS
#      seconds each after MEM_SETTLE, and the memory programs' own run time.
#
# Needs root and a kernel with BTF. Other work on the machine adds noise:
# the figures are medians and ratios. Bounded to about five minutes.
#   PROFILEFS_BIN=/tmp/x/bin/profilefs RUNS=7 SECS=10 RT_RUNS=5 scripts/bench-ebpf.sh
# ONLY=runtimes runs part 5 alone, ONLY=daemon part 2 alone, ONLY=offcpu part 6 alone,
# ONLY=golabels the Go labels part (after 6) alone, ONLY=ruby part 5's Ruby half,
# ONLY=node the Node.js part (8) alone, ONLY=java the Java-at-the-root part (9) alone. OC_HZ="99" and OC_MODES="on off" narrow
# ONLY=malloc the --ebpf-malloc part (10: allocation calls per second not selected vs selected) alone.
# ONLY=node the Node.js part (8) alone, ONLY=java the Java-at-the-root part (9) alone,
# ONLY=php the PHP part (10: PHP 8.2 and 8.4's slowdown, the daemon's CPU with every CPU in PHP) alone. OC_HZ="99" and OC_MODES="on off" narrow
# ONLY=node the Node.js part (8) alone, ONLY=java the Java-at-the-root part (9) alone,
# ONLY=memory the memory growth part (10) alone (MEM_RUNS, MEM_ROUNDS, MEM_SECS, MEM_SETTLE). OC_HZ="99" and OC_MODES="on off" narrow
# part 6 to those rates and off-CPU settings (default: 19 99, off on sample10);
# OC_SECS and OC_SETTLE set its window (about 5 minutes for the two settings
# at 99 Hz with DAEMON_RUNS=5).
# ONLY=rubyver: Ruby 3.1 (host) and 3.3 (trixie root): each one's slowdown and the daemon's CPU.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
RUNS="${RUNS:-9}"
RT_RUNS="${RT_RUNS:-5}"
DAEMON_RUNS="${DAEMON_RUNS:-3}"
BASE_BIN="${BASE_BIN:-}"
ONLY="${ONLY:-}"
SECS="${SECS:-10}"
ITERS="${WORK_ITERS:-1000000000}"
OC_HZ="${OC_HZ:-19 99}"
OC_MODES="${OC_MODES:-off on sample10}"
SETTLE="${SETTLE:-3}"	# seconds after the mount: the first samples read every process's ELF files
OC_SECS="${OC_SECS:-15}"
OC_SETTLE="${OC_SETTLE:-10}"	# part 6: its window starts after the daemon's start-up

[ "$(id -u)" -eq 0 ] || { echo "bench-ebpf: needs root" >&2; exit 1; }
[ -r /sys/kernel/btf/vmlinux ] || { echo "bench-ebpf: kernel has no BTF" >&2; exit 1; }
[ -x "$BIN" ] || { echo "bench-ebpf: no binary at $BIN (make, or set PROFILEFS_BIN)" >&2; exit 1; }

W="$(mktemp -d /tmp/bench-ebpf.XXXXXX)"
PID=
BPID=
STATS_OLD=
cleanup() {
  stop_daemon
  stop_base
  mountpoint -q "$W/bmnt" 2>/dev/null && fusermount3 -u -z "$W/bmnt"
  [ -n "$STATS_OLD" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"
  mountpoint -q "$W/mnt" 2>/dev/null && fusermount3 -u -z "$W/mnt"
  rm -rf "$W"
}
trap cleanup EXIT

start_daemon() {	# start_daemon ARGS...
  rm -rf "$W/data" && mkdir -p "$W/mnt"
  "$BIN" serve --data "$W/data" "$@" "$W/mnt" >>"$W/daemon.log" 2>&1 &
  PID=$!
  local i
  for i in $(seq 1 100); do
    [ -r "$W/mnt/README.txt" ] && return 0
    kill -0 "$PID" 2>/dev/null || { tail -5 "$W/daemon.log"; exit 1; }
    sleep 0.1
  done
  echo "bench-ebpf: daemon did not mount" >&2; exit 1
}
stop_daemon() {
  [ -n "$PID" ] || return 0
  kill -TERM "$PID" 2>/dev/null
  wait "$PID" 2>/dev/null
  PID=
}
start_base() {	# start_base ARGS...: BASE_BIN's daemon, beside ours
  local i
  rm -rf "$W/bdata" && mkdir -p "$W/bmnt"
  "$BASE_BIN" serve --data "$W/bdata" "$@" "$W/bmnt" >>"$W/base.log" 2>&1 &
  BPID=$!
  for i in $(seq 1 100); do
    [ -r "$W/bmnt/README.txt" ] && return 0
    kill -0 "$BPID" 2>/dev/null || { tail -5 "$W/base.log"; exit 1; }
    sleep 0.1
  done
  echo "bench-ebpf: the BASE_BIN daemon did not mount" >&2; exit 1
}
stop_base() {
  [ -n "$BPID" ] || return 0
  kill -TERM "$BPID" 2>/dev/null
  wait "$BPID" 2>/dev/null
  BPID=
}
median() { sort -g | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The run time of PID's threads in ns (no tick granularity); its threads live as long as it.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{n += $1} END {printf "%.0f\n", n}'; }

# PHP: a recursive workload (php8.2 of the host, php8.4 of the trixie root
# run in its own namespaces) without and with the daemon, RT_RUNS pairs
# each, median ratio of its own CPU time; then the daemon's CPU and RSS and
# the BPF program's time per sample while every CPU runs it (8.2).
# (Placed before the main flow so that ONLY=php runs it alone; the full
# run calls it at the end.)
php_cost() {
  local r i k ver off on old run0 cnt0 run1 cnt1 c0 c1 rss hwm spin=() cmd
  r="${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}/trixie"
  cat >"$W/phpwork.php" <<'PHP'
<?php
function fib(int $n): int { return $n < 2 ? $n : fib($n - 1) + fib($n - 2); }
function work(): void { for ($i = 0; $i < 10; $i++) fib(32); }
work();
$u = getrusage();
printf("%.4f\n", $u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"] +
    ($u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"]) / 1e6);
PHP
  mkdir -p "$r/tmp/bench-php.$$" 2>/dev/null && cp "$W/phpwork.php" "$r/tmp/bench-php.$$/"
  for ver in 8.2 8.4; do
    if [ "$ver" = 8.2 ]; then
      command -v php8.2 >/dev/null || { echo "== runtimes: PHP 8.2 skipped (no php8.2)"; continue; }
      cmd=(php8.2 "$W/phpwork.php")
    else
      [ -x "$r/usr/bin/php8.4" ] || { echo "== runtimes: PHP 8.4 skipped (no trixie root)"; continue; }
      cmd=(unshare --mount --pid --fork --kill-child --mount-proc="$r/proc" chroot "$r" php8.4 "/tmp/bench-php.$$/phpwork.php")
    fi
    echo "== runtimes: PHP $ver workload, $RT_RUNS alternating pairs, --ebpf=99"
    : >"$W/php_ratios"
    for i in $(seq 1 "$RT_RUNS"); do
      if [ $((i % 2)) -eq 1 ]; then
        off=$("${cmd[@]}")
        start_daemon --ebpf=99; sleep "$SETTLE"; on=$("${cmd[@]}"); stop_daemon
      else
        start_daemon --ebpf=99; sleep "$SETTLE"; on=$("${cmd[@]}"); stop_daemon
        off=$("${cmd[@]}")
      fi
      echo "$off $on" | awk -v i="$i" '{printf "  pair %d: php cpu %.3fs / %.3fs (without / with)\n", i, $1, $2}'
      echo "$off $on" | awk '{print ($1 > 0 ? $2 / $1 : 0)}' >>"$W/php_ratios"
    done
    printf "php %s slowdown (median cpu ratio with/without): %.4f (target <= 1.01)\n" "$ver" "$(median <"$W/php_ratios")"
  done
  rm -rf "$r/tmp/bench-php.$$"
  command -v php8.2 >/dev/null || return 0
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  start_daemon --ebpf=99 --ebpf-period 10; sleep "$SETTLE"
  for k in $(seq 1 "$(nproc)"); do
    (end=$(($(date +%s) + SECS + 2)); while [ "$(date +%s)" -lt "$end" ]; do php8.2 "$W/phpwork.php" >/dev/null; done) &
    spin+=($!)
  done
  sleep 1
  read -r run0 cnt0 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  c0=$(cpu_ticks "$PID"); sleep "$SECS"; c1=$(cpu_ticks "$PID")
  read -r run1 cnt1 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
  wait "${spin[@]}" 2>/dev/null
  stop_daemon
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  if [ -n "${run0:-}" ] && [ -n "${run1:-}" ] && [ "$cnt1" -gt "$cnt0" ]; then
    awk -v r=$((run1 - run0)) -v c=$((cnt1 - cnt0)) 'BEGIN {printf "bpf program, every CPU in PHP: %d samples, %.0f ns per sample = %.4f%% of a CPU at 99 Hz\n", c, r / c, r / c * 99 / 1e9 * 100}'
  fi
  awk -v a="$c0" -v b="$c1" -v t="$(getconf CLK_TCK)" -v s="$SECS" -v r="$rss" -v h="$hwm" \
    'BEGIN {printf "daemon, every CPU in PHP: cpu %.2f%% of one core, rss %d MiB (peak %d MiB)\n", (b - a) / t / s * 100, r / 1024, h / 1024}'
}
if [ "$ONLY" = php ]; then php_cost; exit 0; fi

# --- the workload ---------------------------------------------------------
cat >"$W/work.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long leaf(unsigned long x, long n)
{ for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL; return x; }
__attribute__((noinline)) static unsigned long mid(unsigned long x, long n)
{ for (long i = 0; i < n / 1000000; i++) x = leaf(x, 1000000); return x; }
int main(int argc, char **argv)
{
	struct rusage ru;
	sink = mid(1, atol(argv[1]));
	getrusage(RUSAGE_SELF, &ru);
	printf("%.4f\n", ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
EOF
cc -O2 -fomit-frame-pointer -o "$W/work" "$W/work.c" || exit 1

run_work() {	# prints "wall cpu"
  local t0 t1 cpu
  t0=$(date +%s%N)
  cpu=$("$W/work" "$ITERS")
  t1=$(date +%s%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}') $cpu"
}

runtimes() {
  local py=/usr/bin/python3.11 i a b have_py=0 have_java=0
  echo "== runtimes: Python and Java workloads, $RT_RUNS alternating pairs, --ebpf=99"
  cat >"$W/pywork.py" <<'PY'
import resource
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work():
    for _ in range(60):
        fib(27)
work()
r = resource.getrusage(resource.RUSAGE_SELF)
print("%.4f" % (r.ru_utime + r.ru_stime))
PY
  mkdir -p "$W/java"
  cat >"$W/java/Work.java" <<'JAVA'
public class Work {
	static long spin(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s += i * 31 ^ (s >>> 3);
		return s;
	}

	public static void main(String[] args) {
		long t = 0;
		for (int i = 0; i < 2500; i++)
			t += spin(1000000);
		long ns = ProcessHandle.current().info().totalCpuDuration().get().toNanos();
		System.out.printf("%.4f%n", ns / 1e9 + (t == 42 ? 1 : 0));
	}
}
JAVA
  [ -x "$py" ] && have_py=1
  command -v javac >/dev/null && (cd "$W/java" && javac Work.java) && have_java=1
  pyw() { if [ "$have_py" = 1 ]; then "$py" "$W/pywork.py"; else echo 0; fi; }
  jw() { if [ "$have_java" = 1 ]; then (cd "$W/java" && java -cp . Work); else echo 0; fi; }
  : >"$W/rt_ratios"
  for i in $(seq 1 "$RT_RUNS"); do
    local pyoff pyon joff jon
    if [ $((i % 2)) -eq 1 ]; then
      pyoff=$(pyw); joff=$(jw)
      start_daemon --ebpf=99; sleep "$SETTLE"; pyon=$(pyw); jon=$(jw); stop_daemon
    else
      start_daemon --ebpf=99; sleep "$SETTLE"; pyon=$(pyw); jon=$(jw); stop_daemon
      pyoff=$(pyw); joff=$(jw)
    fi
    echo "$pyoff $pyon $joff $jon" | awk -v i="$i" '{printf "  pair %d: python cpu %.3fs / %.3fs  java cpu %.3fs / %.3fs (without / with)\n", i, $1, $2, $3, $4}'
    echo "$pyoff $pyon $joff $jon" | awk '{print ($1 > 0 ? $2 / $1 : 0), ($3 > 0 ? $4 / $3 : 0)}' >>"$W/rt_ratios"
  done
  a=$(awk '{print $1}' "$W/rt_ratios" | median)
  b=$(awk '{print $2}' "$W/rt_ratios" | median)
  [ "$have_py" = 1 ] && printf "python slowdown (median cpu ratio with/without): %.4f (target <= 1.01)\n" "$a"
  [ "$have_java" = 1 ] && printf "java slowdown (median cpu ratio with/without): %.4f (target <= 1.01)\n" "$b"
  [ "$have_py" = 1 ] || return 0

  # BPF time per sample with every CPU in Python; the daemon's cost meanwhile.
  local old run0 cnt0 run1 cnt1 c0 c1 rss hwm k spin=()
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  start_daemon --ebpf=99 --ebpf-period 10; sleep "$SETTLE"
  for k in $(seq 1 "$(nproc)"); do
    (end=$(($(date +%s) + SECS + 2)); while [ "$(date +%s)" -lt "$end" ]; do "$py" "$W/pywork.py" >/dev/null; done) &
    spin+=($!)
  done
  sleep 1
  read -r run0 cnt0 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  c0=$(cpu_ticks "$PID"); sleep "$SECS"; c1=$(cpu_ticks "$PID")
  read -r run1 cnt1 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
  wait "${spin[@]}" 2>/dev/null
  stop_daemon
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  if [ -n "${run0:-}" ] && [ -n "${run1:-}" ] && [ "$cnt1" -gt "$cnt0" ]; then
    awk -v r=$((run1 - run0)) -v c=$((cnt1 - cnt0)) 'BEGIN {printf "bpf program, every CPU in Python: %d samples, %.0f ns per sample = %.4f%% of a CPU at 99 Hz\n", c, r / c, r / c * 99 / 1e9 * 100}'
  fi
  awk -v a="$c0" -v b="$c1" -v t="$(getconf CLK_TCK)" -v s="$SECS" -v r="$rss" -v h="$hwm" \
    'BEGIN {printf "daemon, every CPU in Python: cpu %.2f%% of one core, rss %d MiB (peak %d MiB)\n", (b - a) / t / s * 100, r / 1024, h / 1024}'
}

# Part 5 for Ruby: its slowdown, the BPF program's time per sample and the
# daemon's cost with every CPU in Ruby.
runtime_ruby() {
  local rb i a old run0 cnt0 run1 cnt1 c0 c1 rss hwm k spin=()
  rb="$(command -v ruby3.1 || true)"
  [ -n "$rb" ] || { echo "== runtimes: Ruby skipped (no ruby3.1)"; return 0; }
  echo "== runtimes: Ruby workload, $RT_RUNS alternating pairs, --ebpf=99"
  cat >"$W/rbwork.rb" <<'RB'
def fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)
def work = 10.times { fib(30) }
work
t = Process.times
printf("%.4f\n", t.utime + t.stime)
RB
  : >"$W/rb_ratios"
  for i in $(seq 1 "$RT_RUNS"); do
    local off on
    if [ $((i % 2)) -eq 1 ]; then
      off=$("$rb" "$W/rbwork.rb")
      start_daemon --ebpf=99; sleep "$SETTLE"; on=$("$rb" "$W/rbwork.rb"); stop_daemon
    else
      start_daemon --ebpf=99; sleep "$SETTLE"; on=$("$rb" "$W/rbwork.rb"); stop_daemon
      off=$("$rb" "$W/rbwork.rb")
    fi
    echo "$off $on" | awk -v i="$i" '{printf "  pair %d: ruby cpu %.3fs / %.3fs (without / with)\n", i, $1, $2}'
    echo "$off $on" | awk '{print ($1 > 0 ? $2 / $1 : 0)}' >>"$W/rb_ratios"
  done
  a=$(median <"$W/rb_ratios")
  printf "ruby slowdown (median cpu ratio with/without): %.4f (target <= 1.01)\n" "$a"
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  start_daemon --ebpf=99 --ebpf-period 10; sleep "$SETTLE"
  for k in $(seq 1 "$(nproc)"); do
    (end=$(($(date +%s) + SECS + 2)); while [ "$(date +%s)" -lt "$end" ]; do "$rb" "$W/rbwork.rb" >/dev/null; done) &
    spin+=($!)
  done
  sleep 1
  read -r run0 cnt0 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  c0=$(cpu_ticks "$PID"); sleep "$SECS"; c1=$(cpu_ticks "$PID")
  read -r run1 cnt1 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
  wait "${spin[@]}" 2>/dev/null
  stop_daemon
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  if [ -n "${run0:-}" ] && [ -n "${run1:-}" ] && [ "$cnt1" -gt "$cnt0" ]; then
    awk -v r=$((run1 - run0)) -v c=$((cnt1 - cnt0)) 'BEGIN {printf "bpf program, every CPU in Ruby: %d samples, %.0f ns per sample = %.4f%% of a CPU at 99 Hz\n", c, r / c, r / c * 99 / 1e9 * 100}'
  fi
  awk -v a="$c0" -v b="$c1" -v t="$(getconf CLK_TCK)" -v s="$SECS" -v r="$rss" -v h="$hwm" \
    'BEGIN {printf "daemon, every CPU in Ruby: cpu %.2f%% of one core, rss %d MiB (peak %d MiB)\n", (b - a) / t / s * 100, r / 1024, h / 1024}'
}
if [ "$ONLY" = ruby ]; then runtime_ruby; exit 0; fi
if [ "$ONLY" = runtimes ]; then runtimes; runtime_ruby; exit 0; fi

# 7. Node.js: the runtimes part for node (V8's JavaScript frames named from its
# heap): a recursive workload without and with the daemon, RT_RUNS pairs,
# median ratio of its own CPU time; the BPF program's time per sample and the
# daemon's CPU while every CPU runs it.
node_cost() {
  local i r have=1 run0 cnt0 run1 cnt1 c0 c1 old k spin=()
  command -v node >/dev/null || { echo "== node: skipped (no node)"; return 0; }
  echo "== node: a JavaScript workload ($(node --version)), $RT_RUNS alternating pairs, --ebpf=99"
  cat >"$W/nodework.js" <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work() { let s = 0; for (let i = 0; i < 40; i++) s += fib(32); return s; }
work();
const u = process.cpuUsage();
console.log(((u.user + u.system) / 1e6).toFixed(4));
JS
  : >"$W/node_ratios"
  for i in $(seq 1 "$RT_RUNS"); do
    local off on
    if [ $((i % 2)) -eq 1 ]; then
      off=$(node "$W/nodework.js")
      start_daemon --ebpf=99; sleep "$SETTLE"; on=$(node "$W/nodework.js"); stop_daemon
    else
      start_daemon --ebpf=99; sleep "$SETTLE"; on=$(node "$W/nodework.js"); stop_daemon
      off=$(node "$W/nodework.js")
    fi
    printf "  pair %d: node cpu %.3fs / %.3fs (without / with)\n" "$i" "$off" "$on"
    awk -v a="$off" -v b="$on" 'BEGIN {print (a > 0 ? b / a : 0)}' >>"$W/node_ratios"
  done
  r=$(median <"$W/node_ratios")
  printf "node slowdown (median cpu ratio with/without): %.4f (target <= 1.01)\n" "$r"
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  start_daemon --ebpf=99 --ebpf-period 10; sleep "$SETTLE"
  for k in $(seq 1 "$(nproc)"); do
    (end=$(($(date +%s) + SECS + 2)); while [ "$(date +%s)" -lt "$end" ]; do node "$W/nodework.js" >/dev/null; done) &
    spin+=($!)
  done
  sleep 1
  read -r run0 cnt0 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  c0=$(cpu_ticks "$PID"); sleep "$SECS"; c1=$(cpu_ticks "$PID")
  read -r run1 cnt1 <<<"$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1 | awk '{print $2, $4}')"
  wait "${spin[@]}" 2>/dev/null
  stop_daemon
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  if [ -n "${run0:-}" ] && [ -n "${run1:-}" ] && [ "$cnt1" -gt "$cnt0" ]; then
    awk -v r=$((run1 - run0)) -v c=$((cnt1 - cnt0)) 'BEGIN {printf "bpf program, every CPU in node: %d samples, %.0f ns per sample = %.4f%% of a CPU at 99 Hz\n", c, r / c, r / c * 99 / 1e9 * 100}'
  fi
  awk -v a="$c0" -v b="$c1" -v t="$(getconf CLK_TCK)" -v s="$SECS" \
    'BEGIN {printf "daemon, every CPU in node: cpu %.2f%% of one core\n", (b - a) / t / s * 100}'
}
if [ "$ONLY" = node ]; then node_cost; exit 0; fi

# Every CPU busy with Debian's own binaries, restarted as they end.
debian_load() {	# debian_load SECONDS: python3, gzip, xz and sqlite3 in turn on every CPU
  local end=$(($(date +%s) + $1))
  while [ "$(date +%s)" -lt "$end" ]; do
    case $((RANDOM % 4)) in
    0) timeout 3 /usr/bin/python3 -c 'import json
d = {"k%d" % i: list(range(20)) for i in range(2000)}
while True: json.loads(json.dumps(d))' ;;
    1) head -c 100000000 /dev/urandom | timeout 3 /usr/bin/gzip -6 >/dev/null ;;
    2) head -c 30000000 /dev/urandom | timeout 3 /usr/bin/xz -6 -T1 >/dev/null ;;
    3) timeout 3 /usr/bin/sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 30000000) SELECT sum(x * x % 7) FROM c;' >/dev/null ;;
    esac
  done
}
# Part 9: Java's stacks at the root with every CPU busy. HsDeep (the test's
# workload: main -> middle -> caller -> hot, C2 inlining caller and hot, no
# JVM flags) started under a fresh daemon at 99 Hz while every CPU runs
# debian_load, JAVA_RUNS times (default 5): the share of its main thread's
# samples whose stack starts at the thread's root and shows main, then
# caller;hot (target >= 90%), each run with the load average, then the
# median and the spread (lowest, highest).
java_root() {
  local r share shares=() c spin=() t load jcpu="${JAVA_CPU_MS:-5000}"
  local java=/usr/lib/jvm/java-17-openjdk-amd64/bin
  [ -x "$java/javac" ] && command -v go >/dev/null ||
    { echo "== java at the root: skipped (no OpenJDK 17 or no go)"; return 0; }
  echo "== java at the root: HsDeep (${jcpu} ms of its CPU) with all $(nproc) CPUs busy (python3, gzip, xz, sqlite3), ${JAVA_RUNS:-5} runs, --ebpf=99"
  mkdir -p "$W/hs"
  cp "$ROOT/tests/ebpf/runtimes/HsDeep.java" "$W/hs/" && (cd "$W/hs" && "$java/javac" HsDeep.java) ||
    { echo "  javac failed"; return 0; }
  for r in $(seq 1 "${JAVA_RUNS:-5}"); do
    spin=()
    for c in $(seq 1 "$(nproc)"); do debian_load 600 >/dev/null 2>&1 & spin+=($!); done
    start_daemon --ebpf=99 --ebpf-period 2
    t=$(date +%s)
    (cd "$W/hs" && exec "$java/java" -cp . HsDeep "$jcpu" 120000 >/dev/null)
    load=$(cut -d' ' -f1 /proc/loadavg)
    sleep 4
    share=$(GOCACHE="$W/gocache" PPROF_BINARY_PATH=/nonexistent go tool pprof -traces -tagfocus=comm=java \
      "$W/mnt/HsDeep/cpu/all/all/merged.pb.gz" 2>/dev/null | python3 "$ROOT/scripts/java-root-share.py" HsDeep | awk 'NR == 1 {print $1}')
    stop_daemon
    kill "${spin[@]}" 2>/dev/null; wait "${spin[@]}" 2>/dev/null
    echo "  run $r: ${share:-none}% of the main thread's samples reach the root through main;...;caller;hot, load average $load, $(($(date +%s) - t)) s"
    [ -n "$share" ] && shares+=("$share")
  done
  [ "${#shares[@]}" -gt 0 ] || return 0
  printf '%s\n' "${shares[@]}" | sort -g | awk -v m="$(printf '%s\n' "${shares[@]}" | median)" \
    '{a[NR] = $1} END {printf "java at the root with every CPU busy (median of %d): %.1f%%, spread %.1f-%.1f%% (target >= 90%%)\n", NR, m, a[1], a[NR]}'
}
if [ "$ONLY" = java ]; then java_root; exit 0; fi

pct() { awk -v a="$1" -v b="$2" -v t="$HZ_TCK" -v s="$SECS" 'BEGIN {printf "%.2f", (b - a) / t / s * 100}'; }

daemon_cost() {
  local r a b ba bb spinners c start idle busy bidle bbusy
  echo "== daemon cost at 99 Hz over ${SECS}s, $DAEMON_RUNS runs (each a fresh daemon)${BASE_BIN:+, beside $BASE_BIN}"
  HZ_TCK=$(getconf CLK_TCK)
  STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$STATS_OLD" ] && sysctl -qw kernel.bpf_stats_enabled=1
  : >"$W/cost"
  for r in $(seq 1 "$DAEMON_RUNS"); do
    HTTP_PORT=$((20000 + RANDOM % 20000))
    start_daemon --ebpf=99 --ebpf-period 10 --http "127.0.0.1:$HTTP_PORT"
    [ -n "$BASE_BIN" ] && start_base --ebpf=99 --ebpf-period 10
    a=$(cpu_ticks "$PID"); sleep 3; b=$(cpu_ticks "$PID")
    start=$(awk -v a="$a" -v b="$b" -v t="$HZ_TCK" 'BEGIN {printf "%.2f", (b - a) / t}')
    a=$(cpu_ticks "$PID"); ba=$([ -n "$BPID" ] && cpu_ticks "$BPID" || echo 0)
    sleep "$SECS"
    b=$(cpu_ticks "$PID"); bb=$([ -n "$BPID" ] && cpu_ticks "$BPID" || echo 0)
    idle=$(pct "$a" "$b"); bidle=$(pct "$ba" "$bb")
    spinners=()
    for c in $(seq 1 "$(nproc)"); do debian_load $((SECS + 2)) >/dev/null 2>&1 & spinners+=($!); done
    sleep 1
    a=$(cpu_ticks "$PID"); ba=$([ -n "$BPID" ] && cpu_ticks "$BPID" || echo 0)
    sleep "$SECS"
    b=$(cpu_ticks "$PID"); bb=$([ -n "$BPID" ] && cpu_ticks "$BPID" || echo 0)
    busy=$(pct "$a" "$b"); bbusy=$(pct "$ba" "$bb")
    wait "${spinners[@]}" 2>/dev/null
    UNW=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk '
      $1 == "profilefs_ebpf_unwind_table_bytes" {b = $2} $1 == "profilefs_ebpf_unwind_tables" {t = $2}
      $1 == "profilefs_ebpf_unwind_build_seconds" {s = $2} $1 == "profilefs_ebpf_unwind_table_builds" {n = $2}
      END {printf "%.1f MiB in %d files (%d built, %.2f s building in all)", b / 1048576, t, n, s}')
    RSS=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
    HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
    # (Two daemons load two programs of the same name: the figure is ours alone.)
    PROG=
    [ -z "$BASE_BIN" ] && PROG=$(bpftool prog show name do_sample 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | head -1)
    stop_daemon
    stop_base
    echo "$idle $busy $bidle $bbusy" >>"$W/cost"
    printf "  run %d: daemon cpu %.2f%% of one core idle, %.2f%% busy (%.2fs in its first 3 s)%s\n" \
      "$r" "$idle" "$busy" "$start" "${BASE_BIN:+; beside it, the base daemon $bidle% idle, $bbusy% busy}"
  done
  [ -n "$STATS_OLD" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD" && STATS_OLD=
  printf "daemon cpu (median of %d): %.2f%% of one core with no workload of ours, %.2f%% with all %d CPUs busy (python3, gzip, xz, sqlite3; target <= 1%%)\n" \
    "$DAEMON_RUNS" "$(awk '{print $1}' "$W/cost" | median)" "$(awk '{print $2}' "$W/cost" | median)" "$(nproc)"
  [ -n "$BASE_BIN" ] && printf "BASE_BIN daemon cpu (median of %d, same seconds): %.2f%% idle, %.2f%% busy\n" \
    "$DAEMON_RUNS" "$(awk '{print $3}' "$W/cost" | median)" "$(awk '{print $4}' "$W/cost" | median)"
  echo "unwind tables (last run): $UNW"
  echo "daemon rss (last run): $((RSS / 1024)) MiB (peak $((HWM / 1024)) MiB)"
  if [ -n "$PROG" ]; then
    echo "$PROG" | awk '{ns = $2 / ($4 ? $4 : 1); printf "bpf program (last run): %d runs, %.0f ns per sample = %.4f%% of a CPU at 99 Hz\n", $4, ns, ns * 99 / 1e9 * 100}'
  fi
}
if [ "$ONLY" = daemon ]; then daemon_cost; exit 0; fi

# A lock-contended program: 8 threads take turns at one mutex, hold it for
# a few microseconds of work, and sleep 1 ms now and then.
cat >"$W/contend.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared;
static time_t end;
__attribute__((noinline)) static void critical(void)
{ for (int i = 0; i < 2000; i++) shared = shared * 31 + i; }
static void *worker(void *arg)
{
	unsigned n = 0;
	(void)arg;
	while (time(NULL) < end) {
		pthread_mutex_lock(&m);
		critical();
		pthread_mutex_unlock(&m);
		if (++n % 64 == 0)
			usleep(1000);
	}
	return NULL;
}
int main(int argc, char **argv)
{
	int i, n = 8;
	pthread_t t[8];
	end = time(NULL) + atoi(argv[1]);
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
EOF
cc -O2 -pthread -o "$W/contend" "$W/contend.c" || exit 1

pct_ns() { awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN {printf "%.2f", (b - a) / 1e9 / s * 100}'; }

# Part 6a: the off-CPU programs' cost per context switch. Two threads pass a
# byte over pipes, paced to about 40,000 switches a second on the host
# (PP_RATE round trips a second), OC_SECS seconds, while a daemon (and,
# with BASE_BIN, the base daemon beside it) runs --ebpf=99 --ebpf-offcpu:
# the run time of this daemon's off-CPU programs (kernel.bpf_stats_enabled:
# sched_switch, rseq_update and, once attached, sys_exit) and of the base
# daemon's sched_switch program, per switch and as a share of a CPU at
# 40,000 switches a second; DAEMON_RUNS runs, medians and spread.
oc_prog_ids() {	# oc_prog_ids PID: the ids of that daemon's off-CPU programs (its fds' prog_id: not another daemon's)
  local k
  for k in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ {print $2}' | sort -un); do
    case "$(bpftool prog show id "$k" 2>/dev/null | head -1 | awk '{print $4}')" in
    on_switch|on_switch_tw|offcpu_sys_exit|offcpu_rseq) echo "$k" ;;
    esac
  done | tr '\n' ' '
}
oc_run_ns() {	# oc_run_ns IDS...: run_time_ns summed
  local id n=0 a
  for id in "$@"; do
    a=$(bpftool prog show id "$id" 2>/dev/null | grep -o 'run_time_ns [0-9]*' | awk '{print $2}')
    n=$((n + ${a:-0}))
  done
  echo "$n"
}
oc_per_run() {	# oc_per_run ID: "name ns-per-run runs"
  bpftool prog show id "$1" 2>/dev/null | head -1 |
    awk '{for (i = 1; i < NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
      printf "%s %.0f %d\n", n, c ? t / c : 0, c}'
}
offcpu_switch_cost() {
  local r ids0 ours base a b ba bb p0 p1 q0 q1 cs0 cs1 old id
  cat >"$W/pingpong.c" <<'PP'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* pingpong SECONDS RATE: two threads pass a byte over two pipes, RATE round trips a second. */
static double secs, rate;
static int a[2], b[2];
static long n;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void *pong(void *arg) { char c; while (read(a[0], &c, 1) == 1 && c) if (write(b[1], &c, 1) != 1) break; return arg; }
int main(int argc, char **argv)
{
	pthread_t t;
	char c = 1;
	double t0, end;
	secs = atof(argv[1]);
	rate = atof(argv[2]);
	if (pipe(a) || pipe(b)) return 1;
	pthread_create(&t, NULL, pong, NULL);
	t0 = now(); end = t0 + secs;
	for (;;) {
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) break;
		if (++n % 100 == 0) {
			double x = now(), due = t0 + n / rate;
			if (x >= end) break;
			if (due > x) { struct timespec ts = { (time_t)(due - x), (long)((due - x - (time_t)(due - x)) * 1e9) }; nanosleep(&ts, NULL); }
		}
	}
	c = 0;
	if (write(a[1], &c, 1) != 1) return 1;
	pthread_join(t, NULL);
	printf("%ld\n", n);
	return 0;
}
PP
  cc -O2 -pthread -o "$W/pingpong" "$W/pingpong.c" || return 1
  echo "== off-CPU programs per context switch: two threads ping-pong over pipes (${PP_RATE:-19000}" \
    "round trips/s, about 40,000 switches/s on the host), ${OC_SECS}s, --ebpf=99 --ebpf-offcpu," \
    "$DAEMON_RUNS runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  : >"$W/pp_cost"
  for r in $(seq 1 "$DAEMON_RUNS"); do
    base=""
    if [ -n "$BASE_BIN" ]; then
      start_base --ebpf=99 --ebpf-offcpu --ebpf-period 10
      base=$(oc_prog_ids "$BPID")
    fi
    start_daemon --ebpf=99 ${OC_FLAGS:---ebpf-offcpu} --ebpf-period 10
    sleep "$SETTLE"
    ours=$(oc_prog_ids "$PID")
    a=$(cpu_ns "$PID"); ba=$([ -n "$BPID" ] && cpu_ns "$BPID" || echo 0)
    # (sys_exit may be attached while the ping-pong runs: its ids are read again after.)
    p0=$(oc_run_ns $ours); q0=$(oc_run_ns $base)
    cs0=$(awk '/^ctxt/ {print $2}' /proc/stat)
    "$W/pingpong" "$OC_SECS" "${PP_RATE:-19000}" >/dev/null
    cs1=$(awk '/^ctxt/ {print $2}' /proc/stat)
    ours=$(oc_prog_ids "$PID"); [ -n "$BASE_BIN" ] && base=$(oc_prog_ids "$BPID")
    p1=$(oc_run_ns $ours); q1=$(oc_run_ns $base)
    b=$(cpu_ns "$PID"); bb=$([ -n "$BPID" ] && cpu_ns "$BPID" || echo 0)
    for id in $ours; do echo "    $(oc_per_run "$id")"; done | awk '{printf "    ours: %s %d ns a run (%d runs since its start)\n", $1, $2, $3}'
    stop_daemon
    stop_base
    # Fields: switches/s ours-ns/switch base-ns/switch ours-daemon% base-daemon%
    awk -v p=$((p1 - p0)) -v q=$((q1 - q0)) -v c=$((cs1 - cs0)) -v s="$OC_SECS" \
      -v d="$(pct_ns "$a" "$b" "$OC_SECS")" -v bd="$(pct_ns "$ba" "$bb" "$OC_SECS")" \
      'BEGIN {printf "%d %.0f %.0f %s %s\n", c / s, p / c, q / c, d, bd}' >>"$W/pp_cost"
    tail -1 "$W/pp_cost" | awk -v r="$r" -v base="$BASE_BIN" '{printf "  run %d: %d switches/s; off-CPU programs %d ns a switch = %.2f%% of a CPU at 40,000/s; daemon %.2f%% of a core%s\n", r, $1, $2, $2 * 40000 / 1e7, $4, base != "" ? sprintf("; base: sched_switch program %d ns a switch = %.2f%% at 40,000/s, daemon %.2f%%", $3, $3 * 40000 / 1e7, $5) : ""}'
  done
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  spread() { sort -g | awk '{a[NR] = $1} END {printf "%s-%s", a[1], a[NR]}'; }
  printf "off-CPU programs per switch (median of %d): %.0f ns = %.2f%% of a CPU at 40,000 switches/s (runs %s ns), %.0f switches/s\n" \
    "$DAEMON_RUNS" "$(awk '{print $2}' "$W/pp_cost" | median)" "$(awk '{print $2 * 40000 / 1e7}' "$W/pp_cost" | median)" \
    "$(awk '{print $2}' "$W/pp_cost" | spread)" "$(awk '{print $1}' "$W/pp_cost" | median)"
  [ -n "$BASE_BIN" ] && printf "base off-CPU programs per switch (median of %d): %.0f ns = %.2f%% of a CPU at 40,000 switches/s (runs %s ns)\n" \
    "$DAEMON_RUNS" "$(awk '{print $3}' "$W/pp_cost" | median)" "$(awk '{print $3 * 40000 / 1e7}' "$W/pp_cost" | median)" \
    "$(awk '{print $3}' "$W/pp_cost" | spread)"
  echo "(target: <= 1% of a CPU at 40,000 switches/s; the load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
}
offcpu_cost() {
  local hz mode r a b ba bb c spinners old cs0 cs1 run0 run1 waits s0 bs0 t0 bt0 ta ours bases brun0 brun1 sent0 sent1
  echo "== off-CPU: daemon cost over ${OC_SECS}s (from ${OC_SETTLE}s after its start) with every" \
    "CPU busy (python3, gzip, xz, sqlite3) and a lock-contended program, $DAEMON_RUNS runs per" \
    "setting (each a fresh daemon)"
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  for hz in $OC_HZ; do
    for mode in $OC_MODES; do
      : >"$W/oc_cost"
      for r in $(seq 1 "$DAEMON_RUNS"); do
        HTTP_PORT=$((20000 + RANDOM % 20000))
        # The base daemon first: ours is the sched_switch program loaded last.
        bs0=0; bt0=0
        if [ -n "$BASE_BIN" ]; then
          case $mode in
          on) start_base --ebpf="$hz" --ebpf-offcpu --ebpf-period 10 ;;
          sample10) start_base --ebpf="$hz" --ebpf-offcpu --ebpf-offcpu-sample 10 --ebpf-period 10 ;;
          *) start_base --ebpf="$hz" --ebpf-period 10 ;;
          esac
          bs0=$(cpu_ns "$BPID"); bt0=$(date +%s%N)
        fi
        if [ "$mode" = on ]; then
          start_daemon --ebpf="$hz" --ebpf-offcpu --ebpf-period 10 --http "127.0.0.1:$HTTP_PORT"
        elif [ "$mode" = sample10 ]; then
          start_daemon --ebpf="$hz" --ebpf-offcpu --ebpf-offcpu-sample 10 --ebpf-period 10 \
            --http "127.0.0.1:$HTTP_PORT"
        else
          start_daemon --ebpf="$hz" --ebpf-period 10 --http "127.0.0.1:$HTTP_PORT"
        fi
        s0=$(cpu_ns "$PID"); t0=$(date +%s%N)
        spinners=()
        for c in $(seq 1 "$(nproc)"); do
          debian_load $((OC_SECS + OC_SETTLE + 2)) >/dev/null 2>&1 &
          spinners+=($!)
        done
        "$W/contend" $((OC_SECS + OC_SETTLE + 2)) &
        spinners+=($!)
        sleep "$OC_SETTLE"
        cs0=$(awk '/^ctxt/ {print $2}' /proc/stat)
        ours=$(oc_prog_ids "$PID"); bases=$([ -n "$BPID" ] && oc_prog_ids "$BPID")
        run0=$(oc_run_ns $ours); brun0=$(oc_run_ns $bases)
        sent0=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk -F'[ ]' '/what="offcpu_sent"/ {print $2}')
        a=$(cpu_ns "$PID"); ba=$([ -n "$BPID" ] && cpu_ns "$BPID" || echo 0); ta=$(date +%s%N)
        sleep "$OC_SECS"
        b=$(cpu_ns "$PID"); bb=$([ -n "$BPID" ] && cpu_ns "$BPID" || echo 0)
        cs1=$(awk '/^ctxt/ {print $2}' /proc/stat)
        ours=$(oc_prog_ids "$PID"); bases=$([ -n "$BPID" ] && oc_prog_ids "$BPID")
        run1=$(oc_run_ns $ours); brun1=$(oc_run_ns $bases)
        sent1=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk -F'[ ]' '/what="offcpu_sent"/ {print $2}')
        wait "${spinners[@]}" 2>/dev/null
        waits=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics" |
          awk '/^profilefs_ebpf_offcpu_waits_stored_total/ {print $2}')
        HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
        BHWM=0
        [ -n "$BPID" ] && BHWM=$(awk '/^VmHWM/ {print $2}' "/proc/$BPID/status")
        stop_daemon
        stop_base
        # Fields: cpu rss switches/s waits program% base-cpu base-rss start-up-cpu ratio
        # base-start-up-cpu base-program% stacks/s
        echo "$(pct_ns "$a" "$b" "$OC_SECS") $((HWM / 1024)) $(( (cs1 - cs0) / OC_SECS )) ${waits:-0}" \
          "$(awk -v a="${run0:-0}" -v b="${run1:-0}" -v s="$OC_SECS" 'BEGIN {printf "%.3f", (b - a) / s / 1e9 * 100}')" \
          "$(pct_ns "$ba" "$bb" "$OC_SECS") $((BHWM / 1024))" \
          "$(pct_ns "$s0" "$a" "$(awk -v a="$t0" -v b="$ta" 'BEGIN {print (b - a) / 1e9}')")" \
          "$(awk -v a="$a" -v b="$b" -v ba="$ba" -v bb="$bb" 'BEGIN {printf "%.3f", (bb > ba ? (b - a) / (bb - ba) : 0)}')" \
          "$(pct_ns "$bs0" "$ba" "$(awk -v a="$bt0" -v b="$ta" 'BEGIN {print (b - a) / 1e9}')")" \
          "$(awk -v a="${brun0:-0}" -v b="${brun1:-0}" -v s="$OC_SECS" 'BEGIN {printf "%.3f", (b - a) / s / 1e9 * 100}')" \
          "$(awk -v a="${sent0:-0}" -v b="${sent1:-0}" -v s="$OC_SECS" 'BEGIN {printf "%.0f", (b - a) / s}')" \
          >>"$W/oc_cost"
        tail -1 "$W/oc_cost" | awk -v r="$r" -v hz="$hz" -v m="$mode" -v base="$BASE_BIN" '{printf "  %d Hz, off-CPU %-8s run %d: daemon cpu %.2f%% of one core (start-up %.2f%%), peak rss %d MiB; %d context switches/s on the host; %d waits stored; off-CPU programs %.3f%% of a CPU (%d stacks/s)%s\n", hz, m, r, $1, $8, $2, $3, $4, $5, $12, base != "" ? sprintf("; beside it, the base daemon %.2f%% (%.2f%%), %d MiB, its programs %.3f%%: ratio %.2f", $6, $10, $7, $11, $9) : ""}'
      done
      printf "%d Hz, off-CPU %-8s (median of %d): daemon cpu %.2f%% of one core (runs %s; start-up, its first %d s: %.2f%%), peak rss %.0f MiB, off-CPU programs %.3f%% of a CPU\n" \
        "$hz" "$mode" "$DAEMON_RUNS" "$(awk '{print $1}' "$W/oc_cost" | median)" \
        "$(awk '{print $1}' "$W/oc_cost" | sort -g | awk '{a[NR] = $1} END {printf "%s-%s", a[1], a[NR]}')" \
        "$OC_SETTLE" "$(awk '{print $8}' "$W/oc_cost" | median)" \
        "$(awk '{print $2}' "$W/oc_cost" | median)" "$(awk '{print $5}' "$W/oc_cost" | median)"
      [ -n "$BASE_BIN" ] && printf "%d Hz, off-CPU %-8s BASE_BIN daemon (median of %d, same seconds): cpu %.2f%% of one core (start-up %.2f%%), peak rss %.0f MiB, its off-CPU programs %.3f%% of a CPU; ours / base per run: median %.2f (%s)\n" \
        "$hz" "$mode" "$DAEMON_RUNS" "$(awk '{print $6}' "$W/oc_cost" | median)" \
        "$(awk '{print $10}' "$W/oc_cost" | median)" \
        "$(awk '{print $7}' "$W/oc_cost" | median)" "$(awk '{print $11}' "$W/oc_cost" | median)" \
        "$(awk '{print $9}' "$W/oc_cost" | median)" \
        "$(awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $9}' "$W/oc_cost")"
    done
  done
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  echo "(targets at 99 Hz with off-CPU on: <= 1% of a core, rss <= 150 MB; a shared, noisy host: medians)"
}
if [ "$ONLY" = offcpu ]; then offcpu_switch_cost; offcpu_cost; exit 0; fi
if [ "$ONLY" = offcpu_switch ]; then offcpu_switch_cost; exit 0; fi

# Go labels: tests/ebpf/golabels (two label sets under pprof.Do) alternately
# without and with the daemon, RT_RUNS pairs, median ratio of the work its
# CPU time bought (rounds per CPU second: its slowdown); then the BPF
# program's time per sample (this daemon's do_sample) with every CPU in it.
golabels_cost() {
  local i a off on ids0 id run0 cnt0 run1 cnt1 k spin=()
  command -v go >/dev/null || { echo "== go labels: skipped (no go)"; return 0; }
  echo "== go labels: tests/ebpf/golabels, $RT_RUNS alternating pairs, --ebpf=99"
  (cd "$ROOT/tests/ebpf/golabels" && GOCACHE="$W/gocache" go build -o "$W/golabels" .) ||
    return 0
  gw() { "$W/golabels" split 3 60 | sed -n 's/.*iters=\([0-9]*\).*/\1/p'; }
  : >"$W/go_ratios"
  for i in $(seq 1 "$RT_RUNS"); do
    if [ $((i % 2)) -eq 1 ]; then
      off=$(gw); start_daemon --ebpf=99; sleep "$SETTLE"; on=$(gw); stop_daemon
    else
      start_daemon --ebpf=99; sleep "$SETTLE"; on=$(gw); stop_daemon; off=$(gw)
    fi
    echo "  pair $i: $off / $on rounds in 3 s of CPU (without / with)"
    awk -v a="$off" -v b="$on" 'BEGIN {if (b > 0) print a / b}' >>"$W/go_ratios"
  done
  a=$(median <"$W/go_ratios")
  printf "go labels slowdown (median ratio of work per CPU second without/with): %.4f (target <= 1.01)\n" "$a"
  old=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled=1
  ids0=" $(bpftool prog show name do_sample 2>/dev/null | awk -F: '/^[0-9]+:/ {printf "%s ", $1}')"
  start_daemon --ebpf=99 --ebpf-period 10; sleep "$SETTLE"
  id=$(bpftool prog show name do_sample 2>/dev/null | awk -F: '/^[0-9]+:/ {print $1}' |
    while read -r k; do [[ "$ids0" == *" $k "* ]] || echo "$k"; done | tail -1)
  for k in $(seq 1 "$(nproc)"); do
    "$W/golabels" split "$SECS" $((SECS * 4)) >/dev/null &
    spin+=($!)
  done
  sleep 1
  read -r run0 cnt0 <<<"$(bpftool prog show id "${id:-0}" 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | awk '{print $2, $4}')"
  sleep "$SECS"
  read -r run1 cnt1 <<<"$(bpftool prog show id "${id:-0}" 2>/dev/null | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*' | awk '{print $2, $4}')"
  wait "${spin[@]}" 2>/dev/null
  stop_daemon
  [ -n "$old" ] && sysctl -qw kernel.bpf_stats_enabled="$old"
  if [ -n "${run0:-}" ] && [ -n "${run1:-}" ] && [ "$cnt1" -gt "$cnt0" ]; then
    awk -v r=$((run1 - run0)) -v c=$((cnt1 - cnt0)) 'BEGIN {printf "bpf program, every CPU in the labelled Go program: %d samples, %.0f ns per sample = %.4f%% of a CPU at 99 Hz\n", c, r / c, r / c * 99 / 1e9 * 100}'
  fi
}
if [ "$ONLY" = golabels ]; then golabels_cost; exit 0; fi

# Part 10, --ebpf-malloc: allocation calls per second of tests/ebpf/mallocs.c -bench (churn():
# malloc, calloc, posix_memalign, realloc, free of 1-31 KiB blocks, one thread) run by a copy
# not selected and by one selected (probed), alternately, MALLOC_RUNS pairs of MALLOC_SECS;
# the ns each call pays for its uprobes; the daemon's CPU meanwhile.
malloc_cost() {
  local r off on offs=() ons=() t0 t1 d0 d1 mo mn secs="${MALLOC_SECS:-3}"
  echo "== --ebpf-malloc: allocation calls per second, not selected vs selected, ${MALLOC_RUNS:-5} pairs of $secs s"
  cc -O2 -o "$W/mb_off" "$ROOT/tests/ebpf/mallocs.c" && cp "$W/mb_off" "$W/mb_on" || return 0
  start_daemon --ebpf=19 --ebpf-period 10 --ebpf-malloc comm:mb_on
  sleep "$SETTLE"
  for r in $(seq 1 "${MALLOC_RUNS:-5}"); do
    off=$("$W/mb_off" -bench "$secs" | awk '{print $2}')
    rm -f "$W/mb.go"
    MALLOCS_GO="$W/mb.go" "$W/mb_on" -bench "$secs" >"$W/mb.out" &
    local p=$! i
    for i in $(seq 1 100); do grep -q "pid $p (mb_on.*allocations sampled" "$W/daemon.log" && break; sleep 0.1; done
    d0=$(cpu_ns "$PID"); t0=$(date +%s%N)
    touch "$W/mb.go"; wait "$p"
    d1=$(cpu_ns "$PID"); t1=$(date +%s%N)
    on=$(awk '{print $2}' "$W/mb.out")
    echo "  run $r: not selected $off calls/s, selected $on calls/s, daemon $(awk -v a="$d0" -v b="$d1" -v s="$t0" -v e="$t1" 'BEGIN {printf "%.1f", (b - a) / (e - s) * 100}')% of a core"
    offs+=("$off"); ons+=("$on")
  done
  stop_daemon
  mo=$(printf '%s\n' "${offs[@]}" | median); mn=$(printf '%s\n' "${ons[@]}" | median)
  awk -v a="$mo" -v b="$mn" 'BEGIN {printf "malloc cost (medians): %.0f calls/s not selected, %.0f selected: %.0f ns added per allocation call (%.2fx)\n", a, b, 1e9 / b - 1e9 / a, a / b}'
}
if [ "$ONLY" = malloc ]; then malloc_cost; exit 0; fi
# javaver: each OpenJDK version's slowdown under the daemon and the daemon's
# CPU meanwhile (see the header). 21 and 25 run in the trixie root
# (scripts/runtime-roots.sh) as tests/integration/rt_java.sh runs them: own
# mount and PID namespaces, the classes bound at /mnt, a /tmp of their own.
java_versions() {
  local roots="${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}" v i off on c0 c1 t0 t1 r a b jv
  local d="$roots/trixie/tmp/bench-javaver.$$"
  echo "== java versions: a fixed workload, ${JV_RUNS:-3} alternating pairs per version, --ebpf=99"
  mkdir -p "$d" || return 0
  sed 's/RtJavaChain/JvWork/' "$ROOT/tests/ebpf/runtimes/RtJavaChain.java" |
    sed 's/^\t\twhile (tb.getCurrentThreadCpuTime() < cpu .*/\t\tfor (int i = 0; i < 15000; i++)/;
      s/^\t\t\tsink += alphaLevel(200000);/&\n\t\tSystem.out.printf("%.4f%n", ProcessHandle.current().info().totalCpuDuration().get().toNanos() \/ 1e9);/' \
    >"$d/JvWork.java"
  (cd "$d" && /usr/lib/jvm/java-17-openjdk-amd64/bin/javac JvWork.java) || { echo "  javac failed"; rm -rf "$d"; return 0; }
  jv() {	# jv VERSION: the JVM's CPU seconds for the fixed work
    if [ "$1" = 17 ]; then
      (cd "$d" && /usr/lib/jvm/java-17-openjdk-amd64/bin/java -cp . JvWork 0 600000)
    else
      unshare --mount --pid --fork --kill-child --mount-proc="$roots/trixie/proc" chroot "$roots/trixie" \
        /bin/sh -c "mount --bind /tmp/bench-javaver.$$ /mnt && mount -t tmpfs tmpfs /tmp && cd /mnt &&
        exec /usr/lib/jvm/java-$1-openjdk-amd64/bin/java -cp /mnt JvWork 0 600000" 2>/dev/null
    fi
  }
  for v in 17 21 25; do
    if [ "$v" = 17 ] && [ ! -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ] ||
       [ "$v" != 17 ] && [ ! -x "$roots/trixie/usr/lib/jvm/java-$v-openjdk-amd64/bin/java" ]; then
      echo "  OpenJDK $v: skipped (not installed; scripts/runtime-roots.sh trixie)"; continue
    fi
    : >"$W/jv_ratios"; : >"$W/jv_daemon"
    for i in $(seq 1 "${JV_RUNS:-3}"); do
      [ $((i % 2)) -eq 1 ] && off=$(jv "$v" | tail -1)
      start_daemon --ebpf=99; sleep "$SETTLE"
      c0=$(cpu_ns "$PID"); t0=$(date +%s%N)
      on=$(jv "$v" | tail -1)
      t1=$(date +%s%N); c1=$(cpu_ns "$PID")
      stop_daemon
      [ $((i % 2)) -eq 0 ] && off=$(jv "$v" | tail -1)
      awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN {printf "%.2f\n", (b - a) / (e - s) * 100}' >>"$W/jv_daemon"
      echo "$off $on $(tail -1 "$W/jv_daemon")" | awk -v i="$i" -v v="$v" \
        '{printf "  %s pair %d: jvm cpu %.3fs / %.3fs (without / with), daemon %.2f%% of a core\n", v, i, $1, $2, $3}'
      echo "$off $on" | awk '{print ($1 > 0 ? $2 / $1 : 0)}' >>"$W/jv_ratios"
    done
    a=$(median <"$W/jv_ratios")
    b=$(median <"$W/jv_daemon")
    printf "java %s: slowdown (median cpu ratio with/without) %.4f (target <= 1.01), daemon %.2f%% of one core while it ran\n" "$v" "$a" "$b"
  done
  rm -rf "$d"
}
if [ "$ONLY" = javaver ]; then java_versions; exit 0; fi
# Ruby versions: Debian's ruby3.1 on the host and ruby3.3 in the trixie root
# (as a container: own mount and PID namespaces), the same recursive
# workload: each one's slowdown (median CPU ratio with/without the daemon at
# 99 Hz over RT_RUNS alternating pairs) and the daemon's CPU while it runs.
rubyver_cost() {
  local R="${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}/trixie" v i a off on c0 c1 t0 t1 d rc
  local IN="/tmp/bench-rubyver.$$"
  echo "== Ruby versions: $RT_RUNS alternating pairs each, --ebpf=99"
  rb_run() {	# rb_run VERSION: the workload's own CPU seconds
    if [ "$1" = 3.1 ]; then ruby3.1 --disable-gems "$W/rbver.rb"
    else unshare --mount --pid --fork --kill-child --mount-proc="$R/proc" \
      chroot "$R" /usr/bin/ruby3.3 --disable-gems "$IN/rbver.rb"; fi
  }
  cat >"$W/rbver.rb" <<'RB'
def fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)
def level_two = 20.times { fib(30) }
def level_one = level_two
level_one
t = Process.times
printf("%.4f\n", t.utime + t.stime)
RB
  if [ -x "$R/usr/bin/ruby3.3" ]; then mkdir -p "$R$IN" && cp "$W/rbver.rb" "$R$IN/"; fi
  for v in 3.1 3.3; do
    if [ "$v" = 3.1 ] && ! command -v ruby3.1 >/dev/null; then echo "  Ruby 3.1 skipped (no ruby3.1)"; continue; fi
    if [ "$v" = 3.3 ] && [ ! -x "$R/usr/bin/ruby3.3" ]; then echo "  Ruby 3.3 skipped (no $R)"; continue; fi
    : >"$W/rbver_ratios"; : >"$W/rbver_cpu"
    for i in $(seq 1 "$RT_RUNS"); do
      if [ $((i % 2)) -eq 1 ]; then off=$(rb_run $v); fi
      start_daemon --ebpf=99; sleep "$SETTLE"
      c0=$(cpu_ticks "$PID"); t0=$(date +%s%N)
      on=$(rb_run $v)
      c1=$(cpu_ticks "$PID"); t1=$(date +%s%N)
      stop_daemon
      if [ $((i % 2)) -eq 0 ]; then off=$(rb_run $v); fi
      echo "$off $on" | awk -v v="$v" -v i="$i" '{printf "  ruby %s pair %d: cpu %.3fs / %.3fs (without / with)\n", v, i, $1, $2}'
      echo "$off $on" | awk '{print ($1 > 0 ? $2 / $1 : 0)}' >>"$W/rbver_ratios"
      awk -v a="$c0" -v b="$c1" -v t="$(getconf CLK_TCK)" -v ns=$((t1 - t0)) \
        'BEGIN {print (b - a) / t / (ns / 1e9) * 100}' >>"$W/rbver_cpu"
    done
    a=$(median <"$W/rbver_ratios"); d=$(median <"$W/rbver_cpu")
    printf "ruby %s: slowdown (median cpu ratio with/without) %.4f (target <= 1.01); daemon cpu while it runs %.2f%% of one core (median)\n" "$v" "$a" "$d"
  done
  rm -rf "${R:?}$IN"
}
if [ "$ONLY" = rubyver ]; then rubyver_cost; exit 0; fi
# nodever: each Node.js release line's slowdown under the daemon and the
# daemon's CPU meanwhile (see the header). The official builds (runtime root
# "node") run in the trixie root as tests/integration/rt_node.sh runs them:
# own mount and PID namespaces, node found through /proc/PID/root.
nodever_cost() {
  local roots="${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}" v i off on c0 c1 t0 t1 a b
  local d="/tmp/bench-nodever.$$" iters="${NV_ITERS:-100}"
  echo "== node versions: a fixed workload (chain.js, $iters rounds), ${NV_RUNS:-3} alternating pairs per version, --ebpf=99"
  mkdir -p "$roots/trixie$d/lib" || return 0
  sed 's/^  while (process.cpuUsage().user < until)$/  for (let r = 0; r < until; r++)/; s/ \* 1e6,/,/' \
    "$ROOT/tests/ebpf/runtimes/chain.js" >"$roots/trixie$d/nvwork.js"
  echo 'const u = process.cpuUsage(); console.log(((u.user + u.system) / 1e6).toFixed(4));' \
    >>"$roots/trixie$d/nvwork.js"
  cp -L /lib/x86_64-linux-gnu/libatomic.so.1 "$roots/trixie$d/lib/" 2>/dev/null	# node 26 needs it
  nv() {	# nv VERSION: node's CPU seconds for the fixed work
    if [ "$1" = host ]; then
      node "$roots/trixie$d/nvwork.js" "$iters"
    else
      unshare --mount --pid --fork --kill-child --mount-proc="$roots/trixie/proc" chroot "$roots/trixie" \
        env LD_LIBRARY_PATH="$d/lib" "$d/$1/package/bin/node" "$d/nvwork.js" "$iters" 2>/dev/null
    fi
  }
  for v in host $(ls "$roots/node" 2>/dev/null | sort -n); do
    if [ "$v" = host ]; then
      command -v node >/dev/null || { echo "  host node: skipped (not installed)"; continue; }
    else
      [ -x "$roots/node/$v/package/bin/node" ] || continue
      cp -al "$roots/node/$v" "$roots/trixie$d/$v" 2>/dev/null || cp -a "$roots/node/$v" "$roots/trixie$d/$v"
    fi
    : >"$W/nv_ratios"; : >"$W/nv_daemon"
    for i in $(seq 1 "${NV_RUNS:-3}"); do
      [ $((i % 2)) -eq 1 ] && off=$(nv "$v" | tail -1)
      start_daemon --ebpf=99; sleep "$SETTLE"
      c0=$(cpu_ns "$PID"); t0=$(date +%s%N)
      on=$(nv "$v" | tail -1)
      t1=$(date +%s%N); c1=$(cpu_ns "$PID")
      stop_daemon
      [ $((i % 2)) -eq 0 ] && off=$(nv "$v" | tail -1)
      awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN {printf "%.2f\n", (b - a) / (e - s) * 100}' >>"$W/nv_daemon"
      echo "$off $on $(tail -1 "$W/nv_daemon")" | awk -v i="$i" -v v="$v" \
        '{printf "  %s pair %d: node cpu %.3fs / %.3fs (without / with), daemon %.2f%% of a core\n", v, i, $1, $2, $3}'
      echo "$off $on" | awk '{print ($1 > 0 ? $2 / $1 : 0)}' >>"$W/nv_ratios"
    done
    a=$(median <"$W/nv_ratios")
    b=$(median <"$W/nv_daemon")
    printf "node %s (%s): slowdown (median cpu ratio with/without) %.4f (target <= 1.01), daemon %.2f%% of one core while it ran\n" \
      "$v" "$(if [ "$v" = host ]; then node --version; else cat "$roots/node/$v/version" 2>/dev/null; fi)" "$a" "$b"
  done
  rm -rf "${roots:?}/trixie$d"
}
if [ "$ONLY" = nodever ]; then nodever_cost; exit 0; fi
# Part 10, memory growth (--ebpf-memory): see the header.
memory_cost() {
  local r mode a b c t0 hwm spinners p0 p1 f0 f1 faults
  local runs="${MEM_RUNS:-5}" msecs="${MEM_SECS:-15}" msettle="${MEM_SETTLE:-8}" rounds="${MEM_ROUNDS:-100}"
  cat >"$W/faulter.c" <<'FAULTER'
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
/* faulter SECONDS [ROUNDS]: map 64 MiB, write each page, unmap; ROUNDS times or for SECONDS. */
int main(int argc, char **argv)
{
	double secs = atof(argv[1]), t0, t;
	long rounds = argc > 2 ? atol(argv[2]) : 0, r, page = sysconf(_SC_PAGESIZE), pages = 0;
	size_t n = 64UL << 20, i;
	struct timespec ts;
	struct rusage ru;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + ts.tv_nsec / 1e9;
	for (r = 0; rounds == 0 || r < rounds; r++) {
		char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return 1;
		madvise(p, n, MADV_NOHUGEPAGE);
		for (i = 0; i < n; i += page) p[i] = 1;
		pages += n / page;
		munmap(p, n);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t = ts.tv_sec + ts.tv_nsec / 1e9;
		if (rounds == 0 && t - t0 >= secs) break;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%.4f %ld\n", ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6, pages);
	return 0;
}
FAULTER
  cc -O2 -o "$W/faulter" "$W/faulter.c" || return 1
  echo "== memory growth: a fault-heavy program (64 MiB mapped, written, unmapped, $rounds times) alone," \
    "under --ebpf=19, under --ebpf=19 --ebpf-memory ($runs runs each, in turn)"
  : >"$W/mem_slow"
  for r in $(seq 1 "$runs"); do
    a=$("$W/faulter" 0 "$rounds" | awk '{print $1}')
    start_daemon --ebpf=19; sleep "$SETTLE"
    b=$("$W/faulter" 0 "$rounds" | awk '{print $1}'); stop_daemon
    start_daemon --ebpf=19 --ebpf-memory; sleep "$SETTLE"
    c=$("$W/faulter" 0 "$rounds" | awk '{print $1}'); stop_daemon
    echo "$a $b $c" >>"$W/mem_slow"
    echo "$a $b $c" | awk -v r="$r" '{printf "  run %d: cpu alone %.3fs, --ebpf %.3fs, --ebpf --ebpf-memory %.3fs (ratio to alone %.4f, to --ebpf %.4f)\n", r, $1, $2, $3, $3 / $1, $3 / $2}'
  done
  printf "fault-heavy program cpu (median of %d): alone %.3fs, --ebpf %.3fs, --ebpf --ebpf-memory %.3fs; with/without --ebpf-memory (median of per-run ratios to --ebpf) %.4f, to alone %.4f\n" \
    "$runs" "$(awk '{print $1}' "$W/mem_slow" | median)" "$(awk '{print $2}' "$W/mem_slow" | median)" \
    "$(awk '{print $3}' "$W/mem_slow" | median)" "$(awk '{print $3 / $2}' "$W/mem_slow" | median)" \
    "$(awk '{print $3 / $1}' "$W/mem_slow" | median)"

  echo "== memory growth: daemon cost over ${msecs}s (from ${msettle}s after its start), every CPU busy" \
    "(debian_load) and the fault-heavy program beside it, $DAEMON_RUNS runs per setting"
  STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
  [ -n "$STATS_OLD" ] && sysctl -qw kernel.bpf_stats_enabled=1
  for mode in off on; do
    : >"$W/mem_cost"
    for r in $(seq 1 "$DAEMON_RUNS"); do
      HTTP_PORT=$((20000 + RANDOM % 20000))
      if [ "$mode" = on ]; then start_daemon --ebpf=19 --ebpf-memory --ebpf-period 10 --http "127.0.0.1:$HTTP_PORT"
      else start_daemon --ebpf=19 --ebpf-period 10 --http "127.0.0.1:$HTTP_PORT"; fi
      spinners=()
      for c in $(seq 1 "$(nproc)"); do debian_load $((msecs + msettle + 2)) >/dev/null 2>&1 & spinners+=($!); done
      "$W/faulter" $((msecs + msettle + 2)) >/dev/null & spinners+=($!)
      sleep "$msettle"
      # (Other daemons' memgrow programs would mix in: run it alone.)
      p0=$(bpftool prog show 2>/dev/null | awk '/name memgrow_/ {for (i = 1; i < NF; i++) if ($i == "run_time_ns") n += $(i + 1)} END {print n + 0}')
      f0=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk '/^profilefs_ebpf_bpf_events_total/ && /mem_faults"|mem_calls"/ {n += $2} END {print n + 0}')
      a=$(cpu_ns "$PID"); t0=$(date +%s%N)
      faults=$(awk '/^pgfault / {print $2}' /proc/vmstat)
      sleep "$msecs"
      b=$(cpu_ns "$PID")
      faults=$(( $(awk '/^pgfault / {print $2}' /proc/vmstat) - faults ))
      p1=$(bpftool prog show 2>/dev/null | awk '/name memgrow_/ {for (i = 1; i < NF; i++) if ($i == "run_time_ns") n += $(i + 1)} END {print n + 0}')
      f1=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk '/^profilefs_ebpf_bpf_events_total/ && /mem_faults"|mem_calls"/ {n += $2} END {print n + 0}')
      wait "${spinners[@]}" 2>/dev/null
      hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
      stop_daemon
      echo "$(pct_ns "$a" "$b" "$msecs") $((hwm / 1024)) $((faults / msecs))" \
        "$(awk -v a="$p0" -v b="$p1" -v s="$msecs" 'BEGIN {printf "%.3f", (b - a) / s / 1e9 * 100}')" \
        "$(awk -v a="$f0" -v b="$f1" -v s="$msecs" 'BEGIN {printf "%.1f", (b - a) / s}')" >>"$W/mem_cost"
      tail -1 "$W/mem_cost" | awk -v r="$r" -v m="$mode" '{printf "  --ebpf-memory %-3s run %d: daemon cpu %.2f%% of one core, peak rss %d MiB; %d page faults/s on the host; memory programs %.3f%% of a CPU, %.1f memory samples/s sent\n", m, r, $1, $2, $3, $4, $5}'
    done
    printf "daemon with --ebpf=19, --ebpf-memory %-3s (median of %d): cpu %.2f%% of one core, peak rss %.0f MiB, %.0f page faults/s on the host, memory programs %.3f%% of a CPU, %.1f memory samples/s\n" \
      "$mode" "$DAEMON_RUNS" "$(awk '{print $1}' "$W/mem_cost" | median)" "$(awk '{print $2}' "$W/mem_cost" | median)" \
      "$(awk '{print $3}' "$W/mem_cost" | median)" "$(awk '{print $4}' "$W/mem_cost" | median)" \
      "$(awk '{print $5}' "$W/mem_cost" | median)"
    awk '{print $1}' "$W/mem_cost" | median >"$W/mem_cost_$mode"
  done
  [ -n "$STATS_OLD" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD" && STATS_OLD=
  printf "daemon cpu added by --ebpf-memory (medians): %.2f%% of one core (target <= 1%%)\n" \
    "$(awk -v a="$(cat "$W/mem_cost_off")" -v b="$(cat "$W/mem_cost_on")" 'BEGIN {print b - a}')"
}
if [ "$ONLY" = memory ]; then memory_cost; exit 0; fi

echo "== overhead: workload of $ITERS iterations, $RUNS alternating pairs, --ebpf=99"
: >"$W/ratios"
for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) -eq 1 ]; then
    off=$(run_work)
    start_daemon --ebpf=99; sleep "$SETTLE"; on=$(run_work); stop_daemon
  else
    start_daemon --ebpf=99; sleep "$SETTLE"; on=$(run_work); stop_daemon
    off=$(run_work)
  fi
  echo "$off $on" | awk -v i="$i" '{printf "  pair %d: without %.3fs (cpu %.3fs)  with %.3fs (cpu %.3fs)  ratio wall %.4f cpu %.4f\n", i, $1, $2, $3, $4, $3 / $1, $4 / $2}'
  echo "$off $on" | awk '{print $3 / $1, $4 / $2}' >>"$W/ratios"
done
OV_WALL=$(awk '{print $1}' "$W/ratios" | median)
OV_CPU=$(awk '{print $2}' "$W/ratios" | median)
printf "overhead (median ratio with/without): wall %.4f, workload cpu %.4f (target <= 1.01)\n" "$OV_WALL" "$OV_CPU"

daemon_cost

echo "== symbolization: share of user frames named"
G="$ROOT/tests/ebpf/gospin"
(cd "$G" && GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-$W/gocache}" go build -o "$W/gosym" . &&
  GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-$W/gocache}" go build -ldflags="-s -w" -o "$W/gostrip" .) || exit 1
start_daemon -v --ebpf=99 --ebpf-period 2
timeout 5 /usr/bin/python3.11 -c 'import json
d = {"k%d" % i: list(range(20)) for i in range(2000)}
while True: json.loads(json.dumps(d))' &
timeout 5 /usr/bin/perl -e 'my %h; while (1) { $h{$_ % 5000} .= "x" for 1..100000; %h = () }' &
timeout 5 sh -c 'head -c 200000000 /dev/urandom | xz -6 -T1 >/dev/null' &
timeout 5 sh -c 'head -c 400000000 /dev/urandom | gzip -9 >/dev/null' &
timeout 5 sh -c 'head -c 2000000000 /dev/zero | sha256sum >/dev/null' &
timeout 5 /usr/bin/bash -c 'i=0; while :; do i=$((i + 1)); s="${s}x"; [ ${#s} -gt 1000 ] && s=; done' &
"$W/gosym" 5000 & "$W/gostrip" 5000 &
timeout 5 sh -c 'while :; do /usr/lib/go-1.19/bin/gofmt -l /usr/lib/go-1.19/src/net >/dev/null; done' &
wait $(jobs -p | grep -vx "$PID") 2>/dev/null
sleep 3
share() {	# share SERVICE: "named total" over user frames of its samples
  go tool pprof -raw "$W/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null | awk '
    /^Samples:/ { s = "s"; next } /^Locations/ { s = "l"; next } /^Mappings/ { s = "m"; next }
    s == "s" && $2 ~ /^[0-9]+:$/ { for (i = 3; i <= NF; i++) cnt[$i] += $1; next }
    s == "l" && $1 ~ /^[0-9]+:$/ { id = $1 + 0; m = ($3 ~ /^M=/) ? substr($3, 3) : 0; map[id] = m; named[id] = (m && NF >= 4) || (!m && NF >= 3); next }
    s == "m" && $1 ~ /^[0-9]+:$/ { if ($3 == "[kernel]") kern[$1 + 0] = 1 }
    END { for (id in map) { if (kern[map[id]]) continue; t += cnt[id]; if (named[id]) n += cnt[id] }
          print n + 0, t + 0 }'
}
report() {	# report LABEL SERVICE...
  local label="$1" n=0 t=0 s a b
  shift
  for s in "$@"; do
    read -r a b <<<"$(share "$s")"
    printf "  %-12s %6d of %6d user frames named\n" "$s" "$a" "$b"
    n=$((n + a)); t=$((t + b))
  done
  awk -v l="$label" -v n="$n" -v t="$t" 'BEGIN {printf "%s: %.1f%% of user frames named (%d of %d)\n", l, t ? 100 * n / t : 0, n, t}'
}
report "debian binaries" python3.11 perl xz gzip sha256sum bash
roots() {	# roots SERVICE: "reaching total" samples whose outermost frame is the process root
  go tool pprof -sample_index=samples -traces "$W/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null | awk '
    function done() { if (v != "") { t += v; if (last ~ /^(_start|__libc_start_main|__libc_start_call_main|clone|clone3)$/) h += v } v = ""; last = "" }
    /^-+\+/ { done(); next }
    /^ *[A-Za-z_:.]+: / && v == "" { next }
    v == "" && $1 ~ /^[0-9]/ { v = $1; $1 = ""; sub(/^ +/, ""); last = $0; next }
    v != "" && NF { sub(/^ +/, ""); last = $0 }
    END { done(); print h + 0, t + 0 }'
}
for s in python3.11 perl xz gzip sha256sum bash; do
  read -r a b <<<"$(roots "$s")"
  awk -v s="$s" -v a="$a" -v b="$b" 'BEGIN {printf "  %-12s %5d of %5d stacks reach the process root (%.1f%%)\n", s, a, b, b ? 100 * a / b : 0}'
done
report "go programs" gosym gostrip gofmt
grep "ebpf: period:" "$W/daemon.log" | tail -1 | sed 's/.*ebpf: period:/last period:/'
stop_daemon

echo "== unwind table size per binary (8 bytes per row; OpenTelemetry states 4)"
CFI_TEST="${PROFILEFS_BUILD:-$ROOT/build}/tests/test_cfi"
if [ -x "$CFI_TEST" ]; then
  "$CFI_TEST" 2>&1 | awk '/ rows, .* bytes$/ {
    f = $1; sub(/:$/, "", f); n = $2; b = $(NF - 1)
    printf "  %-45s %7d rows %8.1f KiB (at 4 bytes per row: %7.1f KiB)\n", f, n, b / 1024, n * 4 / 1024 }'
else
  echo "  (build the unit tests first: $CFI_TEST)"
fi

offcpu_cost
runtimes
golabels_cost
runtime_ruby
node_cost
java_root

# Part 10 (ONLY=pyver): CPython versions, Debian 12's 3.11 on the host, 13's
# 3.13 and unstable's 3.14 each in its runtime root (scripts/runtime-roots.sh;
# run as a container: own mount and PID namespaces). Per version: the
# slowdown of a fixed recursive workload (its own CPU time, RT_RUNS
# alternating pairs without and with the daemon at 99 Hz, median ratio), then
# the daemon's CPU (its threads' run time, percent of one core) over SECS
# seconds with every CPU running that version's workload, and the share of
# those samples that carry Python frames named. A version whose root is
# missing is skipped.
pyver_cost() {
  local rd="${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}" d="pyver.$$" v r i k off on c0 c1 spin ok_named
  echo "== CPython versions (3.11 host, 3.13 and 3.14 in their roots): $RT_RUNS alternating pairs, --ebpf=99"
  cat >"$W/pyver.py" <<'PY'
import resource
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(k):
    for _ in range(k):
        fib(25)


work(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
r = resource.getrusage(resource.RUSAGE_SELF)
print("%.4f" % (r.ru_utime + r.ru_stime))
PY
  pyver_root() { case "$1" in 3.13) echo "$rd/trixie" ;; 3.14) echo "$rd/sid" ;; *) echo "" ;; esac; }
  pyver_run() {	# pyver_run VERSION: the workload under that CPython; prints its CPU seconds
    local root
    root="$(pyver_root "$1")"
    if [ -z "$root" ]; then /usr/bin/python3.11 "$W/pyver.py" "${PYVER_K:-200}"
    else unshare --mount --pid --fork --kill-child --mount-proc="$root/proc" chroot "$root" \
      "/usr/bin/python$1" "/tmp/$d/pyver.py" "${PYVER_K:-200}"; fi
  }
  for v in 3.11 3.13 3.14; do
    r="$(pyver_root "$v")"
    if [ -n "$r" ]; then
      [ -x "$r/usr/bin/python$v" ] || { echo "python $v: skipped (no root at $r)"; continue; }
      mkdir -p "$r/tmp/$d" && cp "$W/pyver.py" "$r/tmp/$d/"
    fi
    : >"$W/pyver_ratios"
    for i in $(seq 1 "$RT_RUNS"); do
      if [ $((i % 2)) -eq 1 ]; then
        off=$(pyver_run "$v")
        start_daemon --ebpf=99; sleep "$SETTLE"; on=$(pyver_run "$v"); stop_daemon
      else
        start_daemon --ebpf=99; sleep "$SETTLE"; on=$(pyver_run "$v"); stop_daemon
        off=$(pyver_run "$v")
      fi
      echo "$off $on" | awk -v i="$i" -v v="$v" '{printf "  python %s pair %d: cpu %.3fs / %.3fs (without / with)\n", v, i, $1, $2}'
      echo "$off $on" | awk '{print ($1 > 0 ? $2 / $1 : 0)}' >>"$W/pyver_ratios"
    done
    printf "python %s slowdown (median cpu ratio with/without): %.4f (target <= 1.01)\n" "$v" \
      "$(median <"$W/pyver_ratios")"
    # The daemon's CPU with every CPU in this version.
    start_daemon -v --ebpf=99 --ebpf-period 2; sleep "$SETTLE"
    spin=()
    for k in $(seq 1 "$(nproc)"); do
      (end=$(($(date +%s) + SECS + 2)); while [ "$(date +%s)" -lt "$end" ]; do pyver_run "$v" >/dev/null; done) &
      spin+=($!)
    done
    sleep 1
    c0=$(cpu_ns "$PID"); sleep "$SECS"; c1=$(cpu_ns "$PID")
    wait "${spin[@]}" 2>/dev/null
    sleep 3
    ok_named=$(grep "ebpf: period:" "$W/daemon.log" | tail -1 | grep -o '[0-9]* Python frames ([0-9]* unreadable)' |
      awk '{f = $1; u = substr($4, 2)} END {if (f) printf "%.1f%% of %d Python frames named", 100 * (f - u) / f, f; else print "no Python frames"}')
    stop_daemon
    awk -v a="$c0" -v b="$c1" -v s="$SECS" -v v="$v" -v n="$ok_named" \
      'BEGIN {printf "daemon, every CPU in python %s: cpu %.2f%% of one core; %s\n", v, (b - a) / 1e9 / s * 100, n}'
    [ -n "$r" ] && rm -rf "${r:?}/tmp/$d"
  done
}
if [ "$ONLY" = pyver ]; then pyver_cost; exit 0; fi
php_cost
rubyver_cost
