#!/usr/bin/env bash
# Memory growth profiles (serve --ebpf --ebpf-memory): tests/ebpf/memgrow.c,
# built -O2 -fomit-frame-pointer (walked with its unwind table), writes every
# page of fresh anonymous mappings: 300 MB in grow_a, 100 MB in grow_b, both
# called from main through run. Read through the mount with go tool pprof:
#   - memory-growth (sampled user page faults weighted by the page size):
#     grow_a:grow_b is 3:1 within 10% (the ratio is printed), the stacks
#     reach main, the totals are within 10% of what the program touched;
#   - memory-mmap (anonymous mmap/brk/munmap calls): the big mmaps' sizes
#     under grow_a and grow_b, and their munmaps under run;
#   - a Python program (the host's python3.11) that builds large lists in
#     build_lists shows that Python frame in its memory-growth profile;
#   - the same program in a container (the Debian 13 root, its own mount
#     and PID namespaces: found through /proc/PID/root) has its growth
#     under grow_a and main too;
#   - the daemon's own process is in no memory profile; bad values of the
#     option are refused before anything starts.
# Needs root and a kernel with BTF; otherwise every check is skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-memory-bad-flags ebpf-memory-run ebpf-memory-types ebpf-memory-ratio"
NAMES="$NAMES ebpf-memory-main ebpf-memory-total ebpf-memory-mmap ebpf-memory-munmap"
NAMES="$NAMES ebpf-memory-python ebpf-memory-container ebpf-memory-self"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
B="$TMP/bin"
mkdir -p "$B"
cc -O2 -fomit-frame-pointer -o "$B/efp_memgrow" "$ROOT/tests/ebpf/memgrow.c" ||
  { fail "build tests/ebpf/memgrow.c"; pf_done; exit 1; }

# Bad values are refused before anything starts, with the reason.
bad=0
for a in "--ebpf-memory=0" "--ebpf-memory=x" "--ebpf-memory=2000000000" "--ebpf-memory=-5"; do
  if timeout 10 "$BIN" serve --data "$TMP/bad" --ebpf "$a" "$TMP/badmnt" >"$TMP/bad.out" 2>&1 ||
    ! grep -q -- "--ebpf-memory" "$TMP/bad.out"; then bad=1; fi
done
if timeout 10 "$BIN" serve --data "$TMP/bad" --ebpf-memory "$TMP/badmnt" >/dev/null 2>&1; then
  bad=1	# without --ebpf
fi
if [ "$bad" -eq 0 ]; then ok "ebpf-memory-bad-flags"; else fail "ebpf-memory-bad-flags"; fi

# 1 fault in 256 (1 MiB of 4 KiB pages): 300 and 100 samples for the two
# functions, so that one sample more or less moves their ratio by 1%.
PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=19 --ebpf-memory=256 --ebpf-period 2 --ebpf-min-samples 0 \
  --http "127.0.0.1:$PORT" || { fail "ebpf-memory daemon start"; pf_done; exit 1; }

# A copy (another service, the same build id) first, until its stacks are
# walked with the binary's unwind table (built in the background, slowly
# under sanitizers): the measured run's are walked with it from its start.
cp "$B/efp_memgrow" "$B/efp_memgrow_prime"
for i in $(seq 1 20); do
  "$B/efp_memgrow_prime" 1 300 >/dev/null
  sleep 2.5
  grep -q 'main;run;grow_a' "$TMP/mnt/efp_memgrow_prime/memory-growth/all/last-5m/folded.txt" \
    2>/dev/null && break
done
out="$("$B/efp_memgrow" 1 1000)"
if [[ "$out" =~ grow_a=([0-9]+)\ MB\ grow_b=([0-9]+)\ MB ]]; then
  ok "ebpf-memory-run ($out)"
else
  fail "ebpf-memory-run" "output: $out"; pf_done; exit 1
fi

D="$TMP/mnt/efp_memgrow/memory-growth/all/all"
M="$TMP/mnt/efp_memgrow/memory-mmap/all/all"
for i in $(seq 1 40); do
  [ -e "$D/merged.pb.gz" ] && [ -e "$M/merged.pb.gz" ] && break
  sleep 0.5
done
sleep 5	# two more periods: the last samples are stored

types="$(jq -r '([.sample_types[] | .type + "/" + .unit] | join(",")) + " " + .default_sample_type' \
  "$D/meta.json" 2>/dev/null) $(jq -r '([.sample_types[] | .type + "/" + .unit] | join(",")) + " " + .default_sample_type' \
  "$M/meta.json" 2>/dev/null)"
check_eq "ebpf-memory-types" "$types" \
  "faults/count,fault_space/bytes fault_space calls/count,mmap_space/bytes,munmap_space/bytes mmap_space"

# pprof -top: the cumulative bytes of a function (the cum column), as pprof prints them.
cum() {	# cum FILE SAMPLE_INDEX FUNC: bytes
  go tool pprof -top -cum -unit=bytes -sample_index="$2" "$1" 2>/dev/null |
    awk -v f="$3" '$NF == f { v = $4; sub(/B$/, "", v); print v + 0; found = 1; exit } END { if (!found) print 0 }'
}
a=$(cum "$D/merged.pb.gz" fault_space grow_a)
b=$(cum "$D/merged.pb.gz" fault_space grow_b)
m=$(cum "$D/merged.pb.gz" fault_space main)
ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b ? a / b : 0 }')
if awk -v r="$ratio" 'BEGIN { exit !(r >= 2.7 && r <= 3.3) }'; then
  ok "ebpf-memory-ratio (grow_a $a bytes, grow_b $b bytes: ratio $ratio, want 3 within 10%)"
else
  fail "ebpf-memory-ratio" "grow_a $a bytes, grow_b $b bytes: ratio $ratio"
  go tool pprof -top -cum -sample_index=fault_space "$D/merged.pb.gz" 2>&1 | head -20 | sed 's/^/#   /'
fi
# Every byte under grow_a and grow_b is under main too: the walk reached it.
if awk -v a="$a" -v b="$b" -v m="$m" 'BEGIN { exit !(a + b > 0 && m >= a + b) }'; then
  ok "ebpf-memory-main (main $m bytes >= grow_a + grow_b)"
else fail "ebpf-memory-main" "main $m bytes, grow_a + grow_b $((a + b))"; fi
want=$((400 * 1024 * 1024))
if awk -v g="$((a + b))" -v w="$want" 'BEGIN { exit !(g >= 0.9 * w && g <= 1.1 * w) }'; then
  ok "ebpf-memory-total (grow_a + grow_b $((a + b)) bytes, touched $want)"
else fail "ebpf-memory-total" "grow_a + grow_b $((a + b)) bytes, touched $want"; fi

# The mmap profile: each big mapping asked for once, its size exactly.
ma=$(cum "$M/merged.pb.gz" mmap_space grow_a)
mb=$(cum "$M/merged.pb.gz" mmap_space grow_b)
if [ "$ma" -eq $((300 * 1024 * 1024)) ] && [ "$mb" -eq $((100 * 1024 * 1024)) ]; then
  ok "ebpf-memory-mmap (grow_a $ma bytes, grow_b $mb bytes)"
else fail "ebpf-memory-mmap" "grow_a $ma bytes, grow_b $mb bytes; want 314572800 and 104857600"
  go tool pprof -top -cum -sample_index=mmap_space "$M/merged.pb.gz" 2>&1 | head -20 | sed 's/^/#   /'; fi
mu=$(cum "$M/merged.pb.gz" munmap_space run)
if [ "$mu" -eq $((400 * 1024 * 1024)) ] &&
  go tool pprof -raw "$M/merged.pb.gz" 2>/dev/null | grep -q 'call:\[munmap\]'; then
  ok "ebpf-memory-munmap (run $mu bytes unmapped, labelled call=munmap)"
else fail "ebpf-memory-munmap" "run $mu bytes unmapped; want 419430400"; fi

# Python: the function that builds the lists, by its Python frame.
if command -v python3.11 >/dev/null; then
  cat >"$B/efp_memgrow_py.py" <<'EOF'
import time


def build_lists():
    out = []
    for i in range(40):
        out.append([float(j) for j in range(200000)])
    return out


time.sleep(2)
x = build_lists()
print("built", sum(len(l) for l in x))
time.sleep(0.5)
EOF
  python3.11 "$B/efp_memgrow_py.py" >/dev/null
  P="$TMP/mnt/efp_memgrow_py.py/memory-growth/all/all/merged.pb.gz"
  for i in $(seq 1 20); do [ -e "$P" ] && break; sleep 0.5; done
  sleep 4
  pb=$(cum "$P" fault_space build_lists)
  pt=$(go tool pprof -top -unit=bytes -sample_index=fault_space "$P" 2>/dev/null |
    awk '/^Showing nodes accounting for/ { for (i = 1; i < NF; i++) if ($i == "of") { v = $(i + 1); sub(/B$/, "", v); print v + 0; exit } }')
  if [ "${pb:-0}" -gt $((100 * 1024 * 1024)) ]; then
    ok "ebpf-memory-python (build_lists $pb of $pt bytes)"
  else fail "ebpf-memory-python" "build_lists $pb of $pt bytes"
    go tool pprof -top -cum -sample_index=fault_space "$P" 2>&1 | head -20 | sed 's/^/#   /'; fi
else
  echo "ok - ebpf-memory-python # SKIP no python3.11"
fi

# In a container (its own mount and PID namespaces): the same walk and names.
R="$(roots_dir)/trixie"
if bash "$ROOT/scripts/runtime-roots.sh" --check trixie >/dev/null 2>&1; then
  RD="/tmp/ebpf_memory.$$"
  mkdir -p "$R$RD"
  cp "$B/efp_memgrow" "$R$RD/efp_memgrow_ct"
  in_root "$R" "$RD/efp_memgrow_ct" 1 2000 >"$TMP/ct.out" 2>&1 &	# (in_root execs)
  wait $!
  C="$TMP/mnt/efp_memgrow_ct/memory-growth/all/all/merged.pb.gz"
  for i in $(seq 1 20); do [ -e "$C" ] && break; sleep 0.5; done
  sleep 4
  ca=$(cum "$C" fault_space grow_a)
  cm=$(cum "$C" fault_space main)
  rm -rf "${R:?}$RD"
  if [ "$ca" -gt $((250 * 1024 * 1024)) ] && [ "$cm" -ge "$ca" ]; then
    ok "ebpf-memory-container (grow_a $ca bytes, main $cm; $(cat "$TMP/ct.out"))"
  else fail "ebpf-memory-container" "grow_a $ca bytes, main $cm: $(cat "$TMP/ct.out")"; fi
else
  echo "ok - ebpf-memory-container # SKIP no runtime root trixie (scripts/runtime-roots.sh trixie)"
fi

# The daemon's own growth is not recorded (its memory moves with what it reads).
S="$TMP/mnt/$(basename "$BIN")/memory-growth/all/all/merged.pb.gz"
if [ ! -e "$S" ] || ! go tool pprof -raw "$S" 2>/dev/null | grep -q "pid:\[$PF_PID\]"; then
  ok "ebpf-memory-self"
else fail "ebpf-memory-self" "growth of the daemon (pid $PF_PID) in $S"; fi

pf_stop
if [ "$T_FAIL" -gt 0 ]; then tail -20 "$TMP/daemon.log" | sed 's/^/#   /'; fi
pf_done
