#!/usr/bin/env bash
# Allocations by stack (--ebpf-malloc): tests/ebpf/mallocs.c keeps 64 MiB
# allocated from keep() and allocates and frees small blocks from churn()
# (malloc, calloc, posix_memalign, realloc). Read through the mounted tree
# with `go tool pprof -sample_index=...`: inuse_space gives keep 64 MiB within
# 15% and churn next to nothing; alloc_space gives keep and churn in the
# program's own ratio within 15%. A copy not selected gets no probe (no heap
# profile, no attach); a copy run in the Debian 13 root (its own mount
# namespace, its own, newer, C library) is probed through that library.
# Bad selectors are refused. Needs root, BTF, go and cc; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-malloc-live-full ebpf-malloc-bad-selector ebpf-malloc-needs-ebpf ebpf-malloc-attach ebpf-malloc-inuse-keep ebpf-malloc-inuse-churn ebpf-malloc-alloc-ratio ebpf-malloc-unselected ebpf-malloc-metrics ebpf-malloc-container-attach ebpf-malloc-container-inuse"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
command -v go >/dev/null || skip_all "go not installed"
need_root trixie
R="$(roots_dir)/trixie"

pf_setup
B="$TMP/bin"
mkdir -p "$B"
cc -O1 -fno-omit-frame-pointer -o "$B/mprof_main" "$ROOT/tests/ebpf/mallocs.c" &&
  cp "$B/mprof_main" "$B/mprof_other" || { fail "build tests/ebpf/mallocs.c"; pf_done; exit 1; }
# Built here, run in the root (its glibc is newer than the host's).
RD="/tmp/mprof.$$"
mkdir -p "$R$RD" && cp "$B/mprof_main" "$R$RD/mprof_ctr" ||
  { fail "copy into $R$RD"; pf_done; exit 1; }
cleanup_root() { rm -rf "${R:?}$RD"; pf_cleanup; }
trap cleanup_root EXIT

# Bad selectors are refused with the reason; --ebpf-malloc without --ebpf too.
out="$(timeout 10 "$BIN" serve --data "$TMP/bad" --ebpf --ebpf-malloc bogus "$TMP/badmnt" 2>&1)"
rc=$?
if [ "$rc" -eq 2 ] && echo "$out" | grep -q "pid:N"; then ok "ebpf-malloc-bad-selector"
else fail "ebpf-malloc-bad-selector" "rc=$rc: $out"; fi
out="$(timeout 10 "$BIN" serve --data "$TMP/bad" --ebpf-malloc pid:1 "$TMP/badmnt" 2>&1)"
rc=$?
if [ "$rc" -eq 2 ] && echo "$out" | grep -q "needs --ebpf"; then ok "ebpf-malloc-needs-ebpf"
else fail "ebpf-malloc-needs-ebpf" "rc=$rc: $out"; fi

PORT=$(free_port)
pf_start -v --ebpf=19 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" \
  --ebpf-malloc comm:mprof_main --ebpf-malloc 'comm:mprof_c?r' ||
  { fail "ebpf-malloc daemon start"; pf_done; exit 1; }

# Each program waits for its go file until it is probed: keep's blocks are
# all allocated under the probes.
MALLOCS_GO="$TMP/go.main" "$B/mprof_main" 60 >"$TMP/main.out" &
P1=$!
"$B/mprof_other" -bench 30 >"$TMP/other.out" &	# busy: surely CPU samples
P2=$!
MALLOCS_GO="$RD/go" in_root "$R" "$RD/mprof_ctr" 60 >"$TMP/ctr.out" &
P3=$!
for i in $(seq 1 150); do
  grep -q "pid $P1 (mprof_main.*allocations sampled" "$TMP/daemon.log" &&
    grep -q "(mprof_ctr, .*allocations sampled" "$TMP/daemon.log" && break
  sleep 0.1
done
if grep -q "pid $P1 (mprof_main.*allocations sampled in .*libc" "$TMP/daemon.log"; then
  ok "ebpf-malloc-attach"
else
  fail "ebpf-malloc-attach" "$(grep -i malloc "$TMP/daemon.log" | tail -5)"
fi
CTR_LINE="$(grep "(mprof_ctr, .*allocations sampled" "$TMP/daemon.log" | head -1)"
if [ -n "$CTR_LINE" ]; then ok "ebpf-malloc-container-attach (${CTR_LINE##*profilefs: })"
else fail "ebpf-malloc-container-attach" "$(grep -i malloc "$TMP/daemon.log" | tail -5)"; fi
touch "$TMP/go.main" "$R$RD/go"
# Four periods of 2 s with the programs running.
sleep 9

# flat bytes of function $3 in profile $1 for sample type $2 (extra pprof flags after)
flat() {
  local prof=$1 si=$2 fn=$3; shift 3
  go tool pprof -sample_index="$si" -unit=B "$@" -top "$prof" 2>/dev/null |
    awk -v fn="$fn" '$6 == fn { v = $1; sub(/B$/, "", v); print v; f = 1 } END { if (!f) print 0 }'
}
H="$TMP/mnt/mprof_main/heap/all/all/merged.pb.gz"
KEEP_IN=$(flat "$H" inuse_space keep)
CHURN_IN=$(flat "$H" inuse_space churn)
KEEP_AL=$(flat "$H" alloc_space keep -ignore=fill)
CHURN_AL=$(flat "$H" alloc_space churn)
read -r _ KB _ CB < "$TMP/main.out"
echo "# mprof_main: inuse_space keep $KEEP_IN B churn $CHURN_IN B; alloc_space (after fill) keep $KEEP_AL B churn $CHURN_AL B; per round the program allocates keep $KB B churn $CB B"
python3 - "$KEEP_IN" "$CHURN_IN" "$KEEP_AL" "$CHURN_AL" "$KB" "$CB" <<'EOF' >"$TMP/verdict"
import sys
ki, ci, ka, ca, kb, cb = (float(x or 0) for x in sys.argv[1:])
want = 64 << 20
print("inuse_keep", "ok" if abs(ki - want) <= 0.15 * want else "bad",
      "%.1f%% of 64 MiB" % (100 * ki / want))
print("inuse_churn", "ok" if ci <= 0.05 * want else "bad", "%.2f MiB" % (ci / 2**20))
if ca > 0 and cb > 0:
    got, exp = ka / ca, kb / cb
    print("ratio", "ok" if abs(got / exp - 1) <= 0.15 else "bad",
          "keep/churn %.3f, the program's %.3f (%+.1f%%)" % (got, exp, 100 * (got / exp - 1)))
else:
    print("ratio bad no churn samples")
EOF
v() { awk -v k="$1" '$1 == k { $1 = ""; print }' "$TMP/verdict"; }
for k in inuse_keep:ebpf-malloc-inuse-keep inuse_churn:ebpf-malloc-inuse-churn ratio:ebpf-malloc-alloc-ratio; do
  r="$(v "${k%%:*}")"
  case "$r" in
    " ok"*) ok "${k#*:} (${r# ok })" ;;
    *) fail "${k#*:}" "$r" ;;
  esac
done

# Not selected: no probe, no heap profile; its CPU samples are there.
for i in $(seq 1 50); do [ -d "$TMP/mnt/mprof_other/cpu" ] && break; sleep 0.2; done
if [ -d "$TMP/mnt/mprof_other/cpu" ] && [ ! -e "$TMP/mnt/mprof_other/heap" ] &&
   ! grep -q "pid $P2 (mprof_other.*allocations sampled" "$TMP/daemon.log"; then
  ok "ebpf-malloc-unselected"
else
  fail "ebpf-malloc-unselected" "$(ls "$TMP/mnt/mprof_other" 2>&1 | tr '\n' ' ')"
fi

M="$(curl -sS --max-time 20 "http://127.0.0.1:$PORT/metrics")"
S=$(echo "$M" | awk '$1 == "profilefs_ebpf_malloc_samples_total" { print $2 }')
NP=$(echo "$M" | awk '$1 == "profilefs_ebpf_malloc_processes" { print $2 }')
LB=$(echo "$M" | awk '$1 == "profilefs_ebpf_malloc_live_blocks" { print $2 }')
if [ "${S:-0}" != 0 ] && [ "${NP:-0}" = 2 ]; then
  ok "ebpf-malloc-metrics (samples $S, processes $NP, live blocks $LB)"
else
  fail "ebpf-malloc-metrics" "samples '$S' processes '$NP' live '$LB'"
fi

# In the root: probed through its own libc, the same figures.
HC="$TMP/mnt/mprof_ctr/heap/all/all/merged.pb.gz"
KEEP_C=$(flat "$HC" inuse_space keep)
echo "# mprof_ctr (trixie root): inuse_space keep $KEEP_C B"
if python3 -c "import sys; k = float(sys.argv[1]); sys.exit(abs(k - (64 << 20)) > 0.15 * (64 << 20))" "${KEEP_C:-0}"; then
  ok "ebpf-malloc-container-inuse ($((KEEP_C / 1048576)) MiB)"
else
  fail "ebpf-malloc-container-inuse" "$KEEP_C B"
fi

kill "$P1" "$P2" "$P3" 2>/dev/null
wait "$P1" "$P2" "$P3" 2>/dev/null
pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-malloc-clean-stop" "exit status $PF_RC"

# The table of live blocks full (16 entries; keep holds 32 sampled blocks):
# the samples past it are counted in alloc_* but not held for inuse_*, and
# said in /metrics and the log.
PORT=$(free_port)
PROFILEFS_EBPF_MALLOC_LIVE=16 pf_start -v --ebpf=19 --ebpf-period 2 --ebpf-min-samples 0 \
  --http "127.0.0.1:$PORT" --ebpf-malloc comm:mprof_full ||
  { fail "ebpf-malloc-live-full daemon start"; pf_done; exit 1; }
cp "$B/mprof_main" "$B/mprof_full"
rm -f "$TMP/go.full"
MALLOCS_GO="$TMP/go.full" "$B/mprof_full" 30 >/dev/null &
P4=$!
for i in $(seq 1 150); do
  grep -q "pid $P4 (mprof_full.*allocations sampled" "$TMP/daemon.log" && break
  sleep 0.1
done
touch "$TMP/go.full"
sleep 5
M="$(curl -sS --max-time 20 "http://127.0.0.1:$PORT/metrics")"
U=$(echo "$M" | awk '$1 == "profilefs_ebpf_malloc_untracked_total" { print $2 }')
F=$(echo "$M" | awk '$1 == "profilefs_ebpf_bpf_events_total{what=\"malloc_live_full\"}" { print $2 }')
HF="$TMP/mnt/mprof_full/heap/all/all/merged.pb.gz"
KEEP_FI=$(flat "$HF" inuse_space keep)
KEEP_FA=$(flat "$HF" alloc_space keep)
echo "# live table of 16: untracked $U (malloc_live_full $F); keep inuse_space $KEEP_FI B, alloc_space $KEEP_FA B"
if [ "${U:-0}" != 0 ] && [ "${F:-0}" != 0 ] && grep -q "not tracked for inuse_\*" "$TMP/daemon.log" &&
   [ "${KEEP_FI:-0}" -lt $((48 << 20)) ] && [ "${KEEP_FA:-0}" -gt $((64 << 20)) ]; then
  ok "ebpf-malloc-live-full (untracked $U, inuse $((KEEP_FI >> 20)) MiB, alloc $((KEEP_FA >> 20)) MiB)"
else
  fail "ebpf-malloc-live-full" "untracked '$U' full '$F' inuse '$KEEP_FI' alloc '$KEEP_FA' $(grep -c 'not tracked' "$TMP/daemon.log") log lines"
fi
kill "$P4" 2>/dev/null
wait "$P4" 2>/dev/null
pf_stop
pf_done
