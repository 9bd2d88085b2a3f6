#!/usr/bin/env bash
# A hostile local user against --ebpf-malloc and --ebpf-memory
# (tests/ebpf/memhostile.c, run as nobody):
# - 100 processes that a comm selector matches: at most 32 are probed at once
#   (each holds 13 uprobe links, two descriptors each); the rest are refused with a log line and
#   /metrics, the daemon's file descriptors stay bounded, /healthz answers;
#   once they exit (their probes removed off the sampler's thread, which
#   goes on sampling), a newly started selected process is probed;
# - a program that calls malloc/free, mmap/munmap and faults pages as fast as
#   it can from 4 threads, selected for --ebpf-malloc: the daemon's CPU and
#   RSS stay bounded (printed), its memory profiles are stored, /healthz
#   answers and SIGTERM stops it.
# Needs root, BTF, cc, setpriv and the user nobody; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="hmalloc-build hmalloc-cap hmalloc-refused hmalloc-fds hmalloc-healthz hmalloc-after hmalloc-storm-cpu hmalloc-storm-rss hmalloc-storm-profiles hmalloc-storm-healthz hmalloc-stop"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || skip_all "setpriv or nobody missing"
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

pf_setup
chmod 755 "$TMP"
B="$TMP/nb"
mkdir -p "$B"
if cc -O1 -pthread -o "$B/hmal" "$ROOT/tests/ebpf/memhostile.c"; then
  cp "$B/hmal" "$B/hmalstorm" && cp "$B/hmal" "$B/hmallate" && chmod -R a+rx "$B"
  ok "hmalloc-build"
else
  fail "hmalloc-build"; pf_done; exit 1
fi

PORT=$(free_port)
pf_start -v --ebpf=19 --ebpf-period 2 --ebpf-min-samples 0 --memory-limit 256M \
  --http "127.0.0.1:$PORT" --ebpf-memory --ebpf-malloc 'comm:hmal*' ||
  { fail "hmalloc daemon start"; pf_done; exit 1; }
metric() { curl -sS --max-time 20 "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
healthz() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 "http://127.0.0.1:$PORT/healthz"; }
kb() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$PF_PID/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$PF_PID/stat"; }
fds() { ls "/proc/$PF_PID/fd" | wc -l; }
FD0=$(fds)

# --- 100 selected processes of nobody's.
HOLD=()
for i in $(seq 1 100); do
  "${AS[@]}" "$B/hmal" hold 90 &
  HOLD+=($!)
done
NP=0
for i in $(seq 1 120); do
  NP=$(metric profilefs_ebpf_malloc_processes)
  [ "${NP:-0}" -ge 32 ] && grep -q "selected but not probed" "$TMP/daemon.log" && break
  sleep 0.5
done
sleep 2
NP=$(metric profilefs_ebpf_malloc_processes)
RF=$(metric profilefs_ebpf_malloc_refused_total)
FD1=$(fds)
echo "# 100 selected processes: ${NP:-?} probed, ${RF:-?} refusals, daemon fds $FD0 -> $FD1, RSS $(kb VmRSS) kB"
if [ "${NP:-0}" -eq 32 ]; then ok "hmalloc-cap (32 of 100 probed)"
else fail "hmalloc-cap" "probed '${NP:-}'"; fi
LINE="$(grep -m1 "selected but not probed" "$TMP/daemon.log")"
if [ "${RF:-0}" != 0 ] && [ -n "$LINE" ]; then ok "hmalloc-refused (${LINE##*profilefs: })"
else fail "hmalloc-refused" "refused '${RF:-}' log '$LINE'"; fi
# 13 links a process, each a perf event's descriptor and its link's; nothing for the rest.
if [ "$FD1" -le $((FD0 + 32 * 26 + 64)) ]; then ok "hmalloc-fds ($FD1 descriptors)"
else fail "hmalloc-fds" "$FD0 -> $FD1"; fi
H=$(healthz)
if [ "$H" = 200 ]; then ok "hmalloc-healthz"; else fail "hmalloc-healthz" "HTTP $H"; fi

kill "${HOLD[@]}" 2>/dev/null
wait "${HOLD[@]}" 2>/dev/null
# Slots free again once their probes are removed: a process started now is
# probed; meanwhile the sampler goes on (CPU profiles of a busy program).
"${AS[@]}" "$B/hmallate" hold 60 &
LATE=$!
k0=$(date +%s.%N)
for i in $(seq 1 600); do
  grep -q "pid $LATE (hmallate.*allocations sampled" "$TMP/daemon.log" && break
  sleep 0.1
done
k1=$(date +%s.%N)
if grep -q "pid $LATE (hmallate.*allocations sampled" "$TMP/daemon.log"; then
  ok "hmalloc-after (probed $(python3 -c "print('%.1f' % ($k1 - $k0))") s after the others were killed)"
else
  fail "hmalloc-after" "$(grep -i malloc "$TMP/daemon.log" | tail -3)"
fi
kill "$LATE" 2>/dev/null; wait "$LATE" 2>/dev/null

# --- a storm of allocation calls, maps and faults, probed.
c0=$(cpu); t0=$(date +%s.%N); RSS0=$(kb VmRSS)
"${AS[@]}" "$B/hmalstorm" storm 12 >"$TMP/storm.out" &
ST=$!
PEAK=0
while kill -0 "$ST" 2>/dev/null; do
  r=$(kb VmRSS); [ "${r:-0}" -gt "$PEAK" ] && PEAK=$r
  sleep 0.5
done
wait "$ST"
sleep 5	# two periods: its profiles are stored
c1=$(cpu); t1=$(date +%s.%N)
HZ=$(getconf CLK_TCK)
read -r CPUS WALL < <(python3 -c "import sys; c=(int(sys.argv[2])-int(sys.argv[1]))/int(sys.argv[3]); w=float(sys.argv[5])-float(sys.argv[4]); print('%.2f %.1f' % (c, w))" "$c0" "$c1" "$HZ" "$t0" "$t1")
echo "# storm: $(cat "$TMP/storm.out") calls/s under the probes; daemon CPU ${CPUS} s in ${WALL} s; RSS $((RSS0 / 1024)) MiB before, peak $((PEAK / 1024)) MiB; untracked $(metric profilefs_ebpf_malloc_untracked_total)"
if python3 -c "import sys; sys.exit(not float(sys.argv[1]) < 0.8 * float(sys.argv[2]))" "$CPUS" "$WALL"; then
  ok "hmalloc-storm-cpu (${CPUS} s of CPU in ${WALL} s)"
else
  fail "hmalloc-storm-cpu" "${CPUS} s of CPU in ${WALL} s"
fi
# Growth, not the level: an ASan build's RSS holds its own quarantine.
if [ $((PEAK - RSS0)) -lt $((256 * 1024)) ]; then ok "hmalloc-storm-rss (+$(((PEAK - RSS0) / 1024)) MiB)"
else fail "hmalloc-storm-rss" "$((RSS0 / 1024)) -> $((PEAK / 1024)) MiB"; fi
got=""
for t in heap memory-growth memory-mmap; do
  [ -d "$TMP/mnt/hmalstorm/$t" ] && got="$got $t"
done
if [ "$got" = " heap memory-growth memory-mmap" ]; then ok "hmalloc-storm-profiles ($got )"
else fail "hmalloc-storm-profiles" "types:$got; root: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
H=$(healthz)
if [ "$H" = 200 ]; then ok "hmalloc-storm-healthz"; else fail "hmalloc-storm-healthz" "HTTP $H"; fi

# Probes of processes gone are removed in the background (a kernel grace
# period each); a stop waits for those left.
r0=$(date +%s.%N)
for i in $(seq 1 1200); do
  [ "$(metric profilefs_ebpf_malloc_probes_removing)" = 0 ] && break
  sleep 0.1
done
echo "# probes of exited processes all removed $(python3 -c "print('%.1f' % ($(date +%s.%N) - $r0))") s after the storm's end"
pf_stop
if [ "${PF_RC:-1}" -eq 0 ]; then ok "hmalloc-stop"; else fail "hmalloc-stop" "exit status $PF_RC"; fi
pf_done
