#!/usr/bin/env bash
# Off-CPU profiles (serve --ebpf --ebpf-offcpu): tests/ebpf/offcpu.c, built
# -O2 -fomit-frame-pointer, waits on a mutex another thread holds, in
# nanosleep and in a pipe read, and measures its waits itself. Its offcpu
# profile, read through the mount (folded.txt, flamegraph.svg, meta.json,
# go tool pprof on merged.pb.gz), must show each kind of wait with a stack
# that reaches the thread start, kernel frames at the leaf, and waits
# summing to within 10% of what the program measured, kind by kind. A wait
# before an exec is the image's it was taken in (tests/ebpf/execwait.c). The
# daemon's own threads are not in any profile. Needs root and a kernel with
# BTF; otherwise every check is skipped.
set -u
. "$(dirname "$0")/../lib.sh"

KINDS="mutex sleep pipe"
NAMES="ebpf-offcpu-run ebpf-offcpu-listed ebpf-offcpu-type"
for k in $KINDS; do NAMES="$NAMES ebpf-offcpu-$k-stack ebpf-offcpu-$k-sum"; done
NAMES="$NAMES ebpf-offcpu-kernel ebpf-offcpu-flamegraph ebpf-offcpu-self ebpf-offcpu-glue"
NAMES="$NAMES ebpf-offcpu-bad-flags ebpf-offcpu-exec-image"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
B="$TMP/bin"
mkdir -p "$B"
cc -O2 -fomit-frame-pointer -pthread -o "$B/efp_offcpu" "$ROOT/tests/ebpf/offcpu.c" &&
  cc -O1 -o "$B/efp_execwait" "$ROOT/tests/ebpf/execwait.c" ||
  { fail "build tests/ebpf/offcpu.c, execwait.c"; pf_done; exit 1; }

# Bad flag values are refused before anything starts.
bad=0
for a in "--ebpf-offcpu=0ms" "--ebpf-offcpu=1" "--ebpf-offcpu=11s" "--ebpf-offcpu-sample=0"; do
  if timeout 10 "$BIN" serve --data "$TMP/bad" --ebpf --ebpf-offcpu "$a" "$TMP/badmnt" \
    >/dev/null 2>&1; then bad=1; fi
done
if timeout 10 "$BIN" serve --data "$TMP/bad" --ebpf-offcpu "$TMP/badmnt" >/dev/null 2>&1; then
  bad=1	# without --ebpf
fi
if [ "$bad" -eq 0 ]; then ok "ebpf-offcpu-bad-flags"; else fail "ebpf-offcpu-bad-flags"; fi

PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=19 --ebpf-offcpu=1ms --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf-offcpu daemon start"; pf_done; exit 1; }

# Short runs of a copy (another service, the same build id) first, until
# its stacks are walked with the binary's unwind table (built in the
# background, slowly on a busy host or under sanitizers): the measured run's
# stacks are then walked with it from its start.
cp "$B/efp_offcpu" "$B/efp_offcpu_prime"
for i in $(seq 1 20); do
  "$B/efp_offcpu_prime" 5 >/dev/null
  sleep 2.5
  grep -q 'start_thread;sleeper;wait_sleep' \
    "$TMP/mnt/efp_offcpu_prime/offcpu/all/last-5s/folded.txt" 2>/dev/null && break
done
out="$("$B/efp_offcpu" 30)"
if [[ "$out" =~ mutex_ns=([0-9]+)\ sleep_ns=([0-9]+)\ pipe_ns=([0-9]+) ]]; then
  declare -A MEASURED=([mutex]=${BASH_REMATCH[1]} [sleep]=${BASH_REMATCH[2]} [pipe]=${BASH_REMATCH[3]})
  ok "ebpf-offcpu-run ($out)"
else
  fail "ebpf-offcpu-run" "output: $out"; pf_done; exit 1
fi

# The profiles of the last period, once stored.
D="$TMP/mnt/efp_offcpu/offcpu/all/all"
for i in $(seq 1 40); do
  [ -e "$D/merged.pb.gz" ] && break
  sleep 0.5
done
# A wait is drained from the kernel 5 to 10 s after it ends and stored at
# the next period's end: read until it settles (tests/lib.sh settled; two
# reads 3 s apart could fall between two drains and agree without the last
# one: a TSan build, -33%).
settled cat "$D/folded.txt" >/dev/null
if ls "$TMP/mnt/efp_offcpu" 2>/dev/null | grep -qx offcpu; then ok "ebpf-offcpu-listed"
else fail "ebpf-offcpu-listed" "ls efp_offcpu: $(ls "$TMP/mnt/efp_offcpu" 2>&1 | tr '\n' ' ')"; fi

types="$(jq -r '([.sample_types[] | .type + "/" + .unit] | join(",")) + " " + .default_sample_type' \
  "$D/meta.json" 2>/dev/null)"
check_eq "ebpf-offcpu-type" "$types" "waits/count,offcpu/nanoseconds offcpu"

folded="$(cat "$D/folded.txt" 2>/dev/null)"
# kind -> the frame only its waits carry
declare -A FRAME=([mutex]=wait_mutex [sleep]=wait_sleep [pipe]=wait_pipe)
for k in $KINDS; do
  f="${FRAME[$k]}"
  lines="$(echo "$folded" | grep -E "(^|;)$f(;|$)")"
  n="$(echo "$lines" | grep -c .)"
  # Every stack through the wait reaches the thread start (root first in folded.txt).
  rooted="$(echo "$lines" | grep -cE "(^|;)(start_thread|clone3?|main)(;)")"
  if [ "$n" -gt 0 ] && [ "$rooted" -eq "$n" ]; then ok "ebpf-offcpu-$k-stack ($n stacks)"
  else fail "ebpf-offcpu-$k-stack" "$rooted of $n stacks through $f reach the thread start";
    echo "$folded" | head -20 | sed 's/^/#   /'; fi
  got="$(echo "$lines" | awk '{ s += $NF } END { printf "%.0f", s }')"
  want="${MEASURED[$k]}"
  pct="$(awk -v g="$got" -v w="$want" 'BEGIN { printf "%.1f", w ? 100 * (g - w) / w : 100 }')"
  if awk -v g="$got" -v w="$want" 'BEGIN { exit !(w > 0 && g >= 0.9 * w && g <= 1.1 * w) }'; then
    ok "ebpf-offcpu-$k-sum (profile $got ns, program $want ns, ${pct}%)"
  else fail "ebpf-offcpu-$k-sum" "profile $got ns, program $want ns (${pct}%)"
    echo "$folded" | awk '{ print $NF, $0 }' | sort -nr | head -12 | cut -d' ' -f2- | cut -c1-300 | sed 's/^/#   /'
    # What the daemon said of the program's process, and its warnings.
    pid="$(grep -m1 -oE "pid [0-9]+ \([^)]*\): service efp_offcpu " "$TMP/daemon.log" | awk '{ print $2 }')"
    grep -E "warning|pid ${pid:-none}[: ]" "$TMP/daemon.log" | tail -15 | cut -c1-300 | sed 's/^/#   log: /'
  fi
done

# Kernel frames at the leaf: the wait is seen from where the scheduler switched.
if echo "$folded" | grep -E '(^|;)wait_sleep;' | grep -Eq 'schedule'; then ok "ebpf-offcpu-kernel"
else fail "ebpf-offcpu-kernel" "no scheduler frame under wait_sleep"; fi

# The flame graph and pprof see the same profile.
if grep -q 'wait_pipe' "$D/flamegraph.svg" 2>/dev/null &&
  go tool pprof -top -sample_index=offcpu "$D/merged.pb.gz" 2>/dev/null | grep -q wait_mutex; then
  ok "ebpf-offcpu-flamegraph"
else fail "ebpf-offcpu-flamegraph" "flamegraph.svg or pprof -top lacks the waits"; fi

# The daemon waits all the time (its poll loop, FUSE): none of that is recorded.
# Its service is its executable's name; other profilefs daemons may be there too.
S="$TMP/mnt/$(basename "$BIN")/offcpu/all/all/merged.pb.gz"
if [ ! -e "$S" ] || ! go tool pprof -raw "$S" 2>/dev/null | grep -q "pid:\[$PF_PID\]"; then
  ok "ebpf-offcpu-self"
else fail "ebpf-offcpu-self" "waits of the daemon (pid $PF_PID) in $S"; fi
# No stack starts in the tracing glue the samples were taken in.
if echo "$folded" | grep -Eq ';(bpf_prog_|bpf_trace_run)[^;]* [0-9]+$'; then
  fail "ebpf-offcpu-glue" "$(echo "$folded" | grep -E 'bpf_trace_run' | head -1)"
else ok "ebpf-offcpu-glue"; fi

# A wait before an exec, drained after it: named from the image it was taken
# in, under that program's service (efp_execwait: 2 s in before_exec), not
# the next one's (efp_after, a copy of sleep: its own 1 s only).
cp "$(command -v sleep)" "$B/efp_after"
"$B/efp_execwait" 2 "$B/efp_after" 1
EW="$TMP/mnt/efp_execwait/offcpu/all/all/folded.txt"
EA="$TMP/mnt/efp_after/offcpu/all/all/folded.txt"
settled cat "$EW" "$EA" >/dev/null
got="$(grep -E '(^|;)main;before_exec;' "$EW" 2>/dev/null | awk '{ s += $NF } END { printf "%.0f", s }')"
after="$(awk '{ s += $NF } END { printf "%.0f", s }' "$EA" 2>/dev/null)"
if awk -v g="$got" 'BEGIN { exit !(g >= 1.8e9 && g <= 2.2e9) }' &&
  ! grep -q before_exec "$EA" 2>/dev/null && awk -v a="${after:-0}" 'BEGIN { exit !(a < 1.5e9) }'; then
  ok "ebpf-offcpu-exec-image (efp_execwait main;before_exec $got ns; efp_after $after ns)"
else
  fail "ebpf-offcpu-exec-image" "efp_execwait main;before_exec $got ns (want 2 s +-10%), efp_after $after ns (want its 1 s only)"
  cat "$EW" "$EA" 2>/dev/null | cut -c1-300 | head -8 | sed 's/^/#   /'
fi

pf_stop
if [ "$T_FAIL" -gt 0 ]; then tail -20 "$TMP/daemon.log" | sed 's/^/#   /'; fi
pf_done
