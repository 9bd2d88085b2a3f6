#!/usr/bin/env bash
# The eBPF sampler and Ruby (Debian's ruby3.1): Ruby methods named from the
# VM's control frames, label (file:line), in place of the interpreter's
# rb_vm_exec, with the native frames of C methods beneath (the C methods'
# own frames named from the VM's symbol table); per thread; for
# a process started before the daemon, ones that exit while sampled, and
# one whose libruby and script lie in another mount namespace; a method
# long enough that its line comes from the succinct table's blocks; the
# service named by the script. A process handing the sampler crafted VM
# structures (tests/ebpf/rbhostile.c) neither crashes nor stops it; a method
# named with 16 MiB is named by its first bytes, and the daemon's CPU while
# it runs is printed beside that of a method of a short name. Needs
# root and a kernel with BTF; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-ruby-named ebpf-ruby-lines ebpf-ruby-lines-long ebpf-ruby-running ebpf-ruby-exiting ebpf-ruby-native ebpf-ruby-cfunc ebpf-ruby-threads ebpf-ruby-mntns ebpf-ruby-service ebpf-ruby-hostile ebpf-ruby-bigname ebpf-ruby-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
RUBY="$(command -v ruby3.1 || true)"
[ -n "$RUBY" ] || skip_all "ruby3.1 not installed"
LIBRUBY="$(ls /usr/lib/*-linux-gnu/libruby-3.1.so.3.1.* 2>/dev/null | head -1)"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
[ "${KEEP_TMP:-0}" = 1 ] && echo "# kept: $TMP"
SRC="$ROOT/tests/ebpf/runtimes"
B="$TMP/bin"
mkdir -p "$B"

# folded SERVICE: the service's folded stacks (root first), once they exist.
folded() {
  local f="$TMP/mnt/$1/cpu/all/all/folded.txt" i
  for i in $(seq 1 60); do
    [ -e "$f" ] && break
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.5
  done
  cat "$f" 2>/dev/null
}
# fshare WANT AMONG: "matched total" ms of the folded stacks (stdin)
# matching the regex AMONG, and of those, WANT.
fshare() {
  awk -v want="$1" -v among="$2" '
    { v = $NF; st = substr($0, 1, length($0) - length($NF) - 1)
      if (st ~ among) { total += v; if (st ~ want) hit += v } }
    END { printf "%d %d\n", hit / 1e6, total / 1e6 }'
}
# want_fshare NAME SERVICE WANT AMONG PERCENT
want_fshare() {
  local t m n
  t="$(folded "$2")"
  read -r m n <<<"$(echo "$t" | fshare "$3" "$4")"
  if [ "$n" -gt 0 ] && [ $((m * 100)) -ge $(($5 * n)) ]; then ok "$1 ($m of $n ms)"
  else fail "$1" "$m of $n ms of $2 match /$3/ (want >= $5%)"; echo "$t" | sort -k2 -nr | head -8 | cut -c1-400 | sed 's/^/#   /'; fi
}
# raw SERVICE: go tool pprof -raw of the service's merged profile.
raw() { go tool pprof -raw "$TMP/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null; }

# One started before the daemon: its VM is found all the same. (The fib
# processes start without RubyGems: its loading, a large share of a short
# run's CPU on a busy host, is not what they check; the others load it.)
cp "$SRC/fib.rb" "$B/rbfib_running.rb"
"$RUBY" --disable-gems "$B/rbfib_running.rb" 14 &
RBRUN=$!
sleep 1

PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }

PIDS=""
cp "$SRC/fib.rb" "$B/fib_rb.rb"
"$RUBY" --disable-gems "$B/fib_rb.rb" 8 &
PIDS="$PIDS $!"
# One that exits while it is sampled, several times over.
cp "$SRC/fib.rb" "$B/rbfib_exiting.rb"
for i in 1 2 3 4; do "$RUBY" --disable-gems "$B/rbfib_exiting.rb" 1.5; done &
PIDS="$PIDS $!"
cp "$SRC/squeeze.rb" "$B/rbsqueeze.rb"
"$RUBY" "$B/rbsqueeze.rb" 8 &
PIDS="$PIDS $!"
cp "$SRC/threads.rb" "$B/rbthreads.rb"
"$RUBY" "$B/rbthreads.rb" 8 &
PIDS="$PIDS $!"
# A method of 400 lines: its hot loop's positions lie past the table's first 54.
{
  echo "def long_one(t_end)"
  echo "  x = 0"
  for i in $(seq 1 400); do echo "  x += $i"; done
  echo "  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end"
  echo "  x"
  echo "end"
  echo "long_one(Process.clock_gettime(Process::CLOCK_MONOTONIC) + ARGV[0].to_f)"
} > "$B/rblongfn.rb"
LONGLINE=$((2 + 400 + 1))
"$RUBY" "$B/rblongfn.rb" 6 &
PIDS="$PIDS $!"
# Another mount namespace: its libruby and script are not in the daemon's.
if [ -n "$LIBRUBY" ] && command -v unshare >/dev/null; then
  mkdir -p "$TMP/ns"
  unshare -m --propagation private sh -c "mount -t tmpfs tmpfs '$TMP/ns' &&
    cp '$LIBRUBY' '$TMP/ns/libruby-3.1.so.3.1' && cp '$SRC/fib.rb' '$TMP/ns/rbfib_ns.rb' &&
    LD_LIBRARY_PATH='$TMP/ns' exec '$RUBY' --disable-gems '$TMP/ns/rbfib_ns.rb' 8" &
  PIDS="$PIDS $!"
fi
# Crafted VM structures behind a real libruby's ruby_current_ec.
HOSTILE=""
if cc -O1 -fno-omit-frame-pointer -o "$B/rbhostile" "$ROOT/tests/ebpf/rbhostile.c" -ldl 2>"$TMP/cc.log"; then
  "$B/rbhostile" 8 &
  HOSTILE=$!
  PIDS="$PIDS $HOSTILE"
else
  echo "# rbhostile.c: $(head -3 "$TMP/cc.log")"
fi
wait $PIDS $RBRUN
sleep 3

# Of the process's samples, the share in fib called by work from the top level.
want_fshare "ebpf-ruby-named" fib_rb.rb "(^|;)<main>;work;fib(;|$)" "." 80
r="$(raw fib_rb.rb)"
if echo "$r" | grep -Eq " fib /[^ ]*/fib_rb\.rb:5( |$)" &&
  echo "$r" | grep -Eq " work /[^ ]*/fib_rb\.rb:10( |$)"; then ok "ebpf-ruby-lines"
else fail "ebpf-ruby-lines" "$(echo "$r" | grep -E " (fib|work) " | head -5)"; fi
r="$(raw rblongfn.rb)"
if echo "$r" | grep -Eq " long_one /[^ ]*/rblongfn\.rb:$LONGLINE( |$)"; then ok "ebpf-ruby-lines-long"
else fail "ebpf-ruby-lines-long" "want line $LONGLINE: $(echo "$r" | grep -E " long_one " | head -5)"; fi
want_fshare "ebpf-ruby-running" rbfib_running.rb "(^|;)<main>;work;fib(;|$)" "(^|;)<main>(;|$)" 90
want_fshare "ebpf-ruby-exiting" rbfib_exiting.rb "(^|;)<main>;work;fib(;|$)" "(^|;)<main>(;|$)" 80
# libz's deflate beneath squeeze: the C method's native frames are kept.
want_fshare "ebpf-ruby-native" rbsqueeze.rb "(^|;)<main>;work;squeeze;(.*;)?deflate[^;]*(;|$)" "(^|;)<main>;work(;|$)" 70
# The C method's own frame, named from the VM's symbol table.
want_fshare "ebpf-ruby-cfunc" rbsqueeze.rb "(^|;)<main>;work;squeeze;deflate;" "(^|;)<main>;work;squeeze;" 70
t="$(folded rbthreads.rb)"
read -r a n <<<"$(echo "$t" | fshare "(^|;)alpha;spin_a(;|$)" "(^|;)(alpha|beta)(;|$)")"
read -r b _ <<<"$(echo "$t" | fshare "(^|;)beta;spin_b(;|$)" "(^|;)(alpha|beta)(;|$)")"
read -r x _ <<<"$(echo "$t" | fshare "(^|;)alpha;.*spin_b|(^|;)beta;.*spin_a" "(^|;)(alpha|beta)(;|$)")"
if [ "$n" -gt 0 ] && [ "$x" -eq 0 ] && [ $((a * 100)) -ge $((20 * n)) ] && [ $((b * 100)) -ge $((20 * n)) ]; then
  ok "ebpf-ruby-threads (alpha $a, beta $b, mixed $x of $n ms)"
else
  fail "ebpf-ruby-threads" "alpha $a, beta $b, mixed $x of $n ms"; echo "$t" | sort -k2 -nr | head -8 | cut -c1-300 | sed 's/^/#   /'
fi
if [ -n "$LIBRUBY" ] && command -v unshare >/dev/null; then
  want_fshare "ebpf-ruby-mntns" rbfib_ns.rb "(^|;)<main>;work;fib(;|$)" "(^|;)<main>(;|$)" 80
else
  echo "ok - ebpf-ruby-mntns # SKIP no libruby file or unshare"
fi
if [ -d "$TMP/mnt/fib_rb.rb" ] && [ -d "$TMP/mnt/rbsqueeze.rb" ]; then ok "ebpf-ruby-service"
else fail "ebpf-ruby-service" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
if [ -n "$HOSTILE" ]; then
  # It was sampled (its service exists) and the daemon still answers and names Ruby.
  m="$(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^profilefs_ebpf_bpf_events_total\{what="rb_(stacks|read_errors)"' | tr '\n' ' ')"
  if [ -d "$TMP/mnt/rbhostile" ] && kill -0 "$PF_PID" 2>/dev/null && [ -n "$(folded rbhostile)" ]; then
    ok "ebpf-ruby-hostile ($m)"
  else fail "ebpf-ruby-hostile" "services: $(ls "$TMP/mnt" | tr '\n' ' '); $m"; fi
else
  echo "ok - ebpf-ruby-hostile # SKIP no C compiler"
fi

# A method named with MB MiB, run SECS s (its name made in the process: a
# hostile program's, not the script's text).
cat > "$B/rbname.rb" <<'RB'
secs = ARGV[0].to_f
name = "m" * (ARGV[1].to_f * 1024 * 1024).to_i
eval("def #{name}(t_end)\n  x = 0\n  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end\n  x\nend\n")
send(name, Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs)
RB
# daemon_cpu SCRIPT MB: the daemon's CPU (ms) over 8 s of SCRIPT's run.
daemon_cpu() {
  local t0 t1 pid hz
  hz=$(getconf CLK_TCK)
  "$RUBY" "$1" 11 "$2" &
  pid=$!
  sleep 2
  t0=$(awk '{ print $14 + $15 }' "/proc/$PF_PID/stat")
  sleep 8
  t1=$(awk '{ print $14 + $15 }' "/proc/$PF_PID/stat")
  wait $pid
  echo $(( (t1 - t0) * 1000 / hz ))
}
cp "$B/rbname.rb" "$B/rbshortname.rb"
cp "$B/rbname.rb" "$B/rbbigname.rb"
short_ms=$(daemon_cpu "$B/rbshortname.rb" 0.00002)
big_ms=$(daemon_cpu "$B/rbbigname.rb" 16)
sleep 3
t="$(folded rbbigname.rb)"
# Its frames named by the name's first bytes and "...", the whole name never.
nm="$(echo "$t" | tr ';' '\n' | grep -E '^m+\.\.\.$' | head -1)"
long="$(echo "$t" | tr ';' '\n' | awk 'length($0) > 4096' | wc -l)"
if [ -n "$nm" ] && [ "${#nm}" -le 512 ] && [ "$long" -eq 0 ] && [ "$big_ms" -lt 4000 ]; then
  ok "ebpf-ruby-bigname (a 16 MiB name shown as ${#nm} bytes; daemon CPU over 8 s: $big_ms ms with it, $short_ms ms with a short name)"
else
  fail "ebpf-ruby-bigname" "name '${nm:0:40}' (${#nm} bytes), $long frames over 4 KiB; daemon CPU $big_ms ms (short name: $short_ms ms)"
  echo "$t" | cut -c1-200 | sort -k2 -nr | head -5 | sed 's/^/#   /'
fi
if kill -0 "$PF_PID" 2>/dev/null; then ok "ebpf-ruby-daemon"; else fail "ebpf-ruby-daemon" "the daemon died"; fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-ruby-clean-stop" "daemon exited with $PF_RC"
pf_done
