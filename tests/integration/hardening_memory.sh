#!/usr/bin/env bash
# Memory accounting under a stated budget (--memory-limit 256M), as the
# second hardening review attacked it, each asserting the bounded outcome and
# printing the daemon's peak RSS (VmHWM) and the budget's metric:
#
#   services  2,050 services of one tiny profile each over HTTP: the first
#             2,000 (--max-services' default) stored, the rest refused with a
#             4xx that names the limit; afterwards pushes to existing services,
#             cp into ingest/ and flamegraph.svg still work, and the budget
#             holds a few KiB per service, not chunks of 256 KiB
#   render    one location of 4,000 inlined lines under 2,000 roots: the stack
#             tree is bounded and charged, flamegraph.svg of several range
#             names says what it cut, folded.txt's total stays exact; 5,000
#             roots reach the node limit, totals still exact
#   ebpf      150 short-lived programs of distinct names under --ebpf=99 and
#             --memory-limit 128M: every period stored, no refusal (root, BTF)
#   diskfull  a full data directory (small tmpfs): 507 names the free space
#             storing resumes at, and the log too
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
M="$TMP/mnt"
TOOLS="$(dirname "$0")/memory_tools.py"
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
py() { "$PY" "$TOOLS" "$@"; }
LIMIT_MB=256
# The review saw 1,088 MiB for the render attack. The bound: the budget plus
# what it does not count (RocksDB, libraries, stacks: about 60 MiB idle).
# Sanitizers: ASan's quarantine and shadow need more; under TSan the peak is
# printed, not checked.
SLACK_MB=128
RSS_CHECK=1
if grep -q __asan_init "$BIN" 2>/dev/null; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
  SLACK_MB=512
elif grep -q __tsan_init "$BIN" 2>/dev/null; then
  RSS_CHECK=0
fi

start() {
  pf_start --http 127.0.0.1:0 --memory-limit "${LIMIT_MB}M" "$@" \
    || { fail "daemon starts with --memory-limit ${LIMIT_MB}M"; pf_done; exit 1; }
  PORT=""
  for i in $(seq 1 100); do
    PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
    [ -n "$PORT" ] && break; sleep 0.1
  done
  U="http://127.0.0.1:$PORT"
}
hwm_mb() { awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$PF_PID/status"; }
budget() { curl -s "$U/metrics" | sed -n "s/^profilefs_memory_budget_bytes{kind=\"$1\"} //p"; }
refusals() { curl -s "$U/metrics" | sed -n 's/^profilefs_memory_budget_refusals_total //p'; }
# bounded NAME: alive, /healthz 200, peak RSS under the bound (printed with the budget)
bounded() {
  local h; h=$(hwm_mb)
  echo "# after $1: peak RSS ${h} MiB; budget used $(( $(budget used) >> 20 )) MiB," \
    "peak $(( $(budget peak) >> 20 )) MiB, refusals $(refusals)"
  [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$U/healthz")" == 200 ] \
    && ok "$1: daemon alive, /healthz 200" || fail "$1: daemon alive, /healthz 200"
  [ "$RSS_CHECK" == 1 ] || return 0
  [ "${h:-99999}" -lt $((LIMIT_MB + SLACK_MB)) ] && ok "$1: peak RSS ${h} MiB < $((LIMIT_MB + SLACK_MB)) MiB" \
    || fail "$1: peak RSS ${h} MiB >= $((LIMIT_MB + SLACK_MB)) MiB"
}
folded_sum() { awk '{ s += $NF } END { printf "%.0f", s }' "$1"; }

py tiny "$TMP/tiny.pb.gz" >/dev/null
py inline "$TMP/inline.pb.gz" 4000 2000
py inline "$TMP/roots.pb.gz" 100 5000

# --- services: many services, each of one tiny profile -------------------------------
start
used0=$(budget used)
out=$(py services "$U" "$TMP/tiny.pb.gz" 0 2050)
echo "# $out"
echo "$out" | grep -q "200=2000 400=50;" && ok "2,050 services: the first 2,000 stored, 50 refused with 400" \
  || fail "2,050 services: 2,000 stored, then 400" "$out"
echo "$out" | grep -q "first refused: #2000 status 400: .*2000 services are stored, the limit (--max-services)" \
  && ok "the refusal names the limit (--max-services)" || fail "the refusal names the limit" "$out"
used1=$(budget used)
per=$(( (used1 - used0) / 2000 ))
echo "# budget: $(( used0 >> 10 )) KiB before, $(( used1 >> 10 )) KiB after 2,000 services ($per bytes each)"
[ "$per" -lt 65536 ] && ok "a service costs the budget what it uses ($per bytes), not 1 MiB" \
  || fail "a service costs the budget what it uses" "$per bytes each"
check_eq "no reservation refused" "$(refusals)" 0
out=$(py services "$U" "$TMP/tiny.pb.gz" 0 20)
echo "$out" | grep -q "200=20;" && ok "pushes to existing services still work" \
  || fail "pushes to existing services still work" "$out"
cp "$TMP/tiny.pb.gz" "$M/ingest/svc-00007/cpu/" && ok "cp into ingest/ of an existing service works" \
  || fail "cp into ingest/ of an existing service works"
cp "$TMP/tiny.pb.gz" "$M/ingest/one-too-many/cpu/" 2>"$TMP/cp.err" \
  && fail "cp of a new service past the limit is refused" \
  || { grep -q "Invalid argument" "$TMP/cp.err" && ok "cp of a new service past the limit: EINVAL" \
    || fail "cp of a new service past the limit: EINVAL" "$(cat "$TMP/cp.err")"; }
grep -q "one-too-many refused: 2000 services are stored" "$TMP/daemon.log" \
  && ok "the reason of the cp refusal is logged" || fail "the reason of the cp refusal is logged"
if cat "$M/svc-00007/cpu/all/all/flamegraph.svg" > "$TMP/svc.svg" 2>"$TMP/err" && grep -q "main.work" "$TMP/svc.svg"; then
  ok "flamegraph.svg of a service still renders"
else
  fail "flamegraph.svg of a service still renders" "$(cat "$TMP/err")"
fi
check_eq "ls / lists the 2,000 services" "$(ls "$M" | grep -c '^svc-')" 2000
bounded "2,050 services"
pf_stop
check_eq "clean exit" "${PF_RC:-1}" 0
start
check_eq "after a restart, a new service is still refused" \
  "$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/tiny.pb.gz" "$U/api/0/profiles?service=late&type=cpu")" 400
pf_stop
PF_PID=
rm -rf "$TMP/data" "$TMP/daemon.log"

# --- render: one location of 4,000 inlined lines under 2,000 roots -------------------
start
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/inline.pb.gz" "$U/api/0/profiles?service=inline&type=cpu")
check_eq "the inline profile is stored" "$code" 200
for r in all last-2h last-3h last-6h; do
  f="$M/inline/cpu/all/$r/flamegraph.svg"
  if cat "$f" > "$TMP/inline.svg" 2>"$TMP/err"; then
    grep -q "profile too large" "$TMP/inline.svg" && ok "$r/flamegraph.svg renders and says what it cut" \
      || fail "$r/flamegraph.svg says what it cut"
  else
    fail "$r/flamegraph.svg renders" "$(cat "$TMP/err")"
  fi
done
d="$M/inline/cpu/all/all"
cat "$d/folded.txt" > "$TMP/inline.folded" && grep -q "\[inlined frames cut\]" "$TMP/inline.folded" \
  && ok "folded.txt shows the inlined frames cut" || fail "folded.txt shows the inlined frames cut"
# The default type is cpu (nanoseconds): 2,000 samples of 10 ms.
check_eq "folded.txt's total is exact" "$(folded_sum "$TMP/inline.folded")" 20000000000
echo "# folded.txt: $(stat -c %s "$TMP/inline.folded") bytes, longest stack $(awk -F';' '{ if (NF > m) m = NF } END { print m }' "$TMP/inline.folded") frames"
bounded "flamegraph.svg of 4,000 inlined lines under 2,000 roots, 4 range names"
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/roots.pb.gz" "$U/api/0/profiles?service=roots&type=cpu")
check_eq "the 5,000-root profile is stored" "$code" 200
cat "$M/roots/cpu/all/all/folded.txt" > "$TMP/roots.folded" \
  && grep -q "\[more frames: tree limit\]" "$TMP/roots.folded" \
  && ok "5,000 roots of 100 frames: the tree stops at its node limit, with a marker frame" \
  || fail "5,000 roots: the node limit's marker frame"
check_eq "past the node limit, folded.txt's total is exact" "$(folded_sum "$TMP/roots.folded")" 50000000000
grep -q "profile too large" "$M/roots/cpu/all/all/flamegraph.svg" && ok "flamegraph.svg says the tree was cut" \
  || fail "flamegraph.svg says the tree was cut"
bounded "5,000 roots"
pf_stop
check_eq "clean exit" "${PF_RC:-1}" 0

# --- ebpf: many short-lived services of the sampler ---------------------------------
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && command -v cc >/dev/null \
    && cc -O1 -fno-omit-frame-pointer -o "$TMP/spin" "$ROOT/tests/ebpf/spin.c"; then
  rm -rf "$TMP/data" "$TMP/daemon.log"
  mkdir -p "$TMP/progs"
  for i in $(seq -w 1 150); do cp "$TMP/spin" "$TMP/progs/es$i"; done
  LIMIT_MB=128 PROFILEFS_EBPF_SERVICE_BY=exe start --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0
  # Five at a time, 300 ms each: on two busy cores each gets some samples.
  for b in $(seq 0 29); do
    for k in 1 2 3 4 5; do "$TMP/progs/es$(printf %03d $((b * 5 + k)))" 300 & done
    wait $(jobs -p | grep -v "^$PF_PID$") 2>/dev/null
  done
  n=0
  for i in $(seq 1 40); do
    n=$(ls "$M" | grep -c '^es[0-9]*$')
    [ "$n" -ge 140 ] && break
    sleep 0.5
  done
  sleep 3	# one more period: the last programs' profiles
  echo "# ebpf: $n of 150 short-lived programs stored as services"
  # A program the sampler never caught on a busy machine is no failure; one
  # whose profile could not be stored is.
  [ "$n" -ge 75 ] && ok "150 short-lived programs under --memory-limit 128M: $n stored as services" \
    || fail "150 short-lived programs stored as services" "$n; $(grep ebpf "$TMP/daemon.log" | tail -3)"
  grep -q "storing the profile of .* failed" "$TMP/daemon.log" \
    && fail "no eBPF profile failed to store" "$(grep "storing the profile" "$TMP/daemon.log" | head -3)" \
    || ok "no eBPF profile failed to store"
  check_eq "no reservation refused" "$(refusals)" 0
  # Beside the budget: the unwind tables (--ebpf-unwind-mem, 64 MiB).
  LIMIT_MB=$((128 + 64)) bounded "150 short-lived programs under --ebpf"
  pf_stop
  check_eq "clean exit" "${PF_RC:-1}" 0
else
  echo "# skipped the eBPF test: needs root, BTF and a C compiler"
fi

# --- diskfull: the 507 names the free space storing resumes at ----------------------
if [ "$(id -u)" = 0 ] && mkdir -p "$TMP/small" && mount -t tmpfs -o size=24m tmpfs "$TMP/small"; then
  rm -f "$TMP/daemon.log"
  mkdir -p "$TMP/small/data"
  pf_start --data "$TMP/small/data" --http 127.0.0.1:0 >/dev/null || fail "daemon on a small tmpfs"
  for i in $(seq 1 50); do grep -q "listening on" "$TMP/daemon.log" && break; sleep 0.1; done
  PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/daemon.log" | tail -1)
  U="http://127.0.0.1:$PORT"
  dd if=/dev/zero of="$TMP/small/filler" bs=1M count=64 2>/dev/null
  st=""
  for i in $(seq 1 200); do
    st=$(curl -s -o "$TMP/full.json" -w '%{http_code}' --data-binary @"$TMP/inline.pb.gz" \
      "$U/api/0/profiles?service=full&type=cpu")
    [ "$st" = 200 ] || break
  done
  check_eq "push on a full disk: 507" "$st" 507
  grep -q "storing resumes once 16 MiB are free" "$TMP/full.json" \
    && ok "507 names the free space storing resumes at: $(head -c 200 "$TMP/full.json")" \
    || fail "507 names the free space storing resumes at" "$(cat "$TMP/full.json")"
  st=$(curl -s -o "$TMP/full2.json" -w '%{http_code}' --data-binary @"$TMP/tiny.pb.gz" \
    "$U/api/0/profiles?service=full&type=cpu")
  [ "$st" = 507 ] && grep -q "once 16 MiB are free" "$TMP/full2.json" \
    && ok "later refusals name it too" || fail "later refusals name it too" "$st $(cat "$TMP/full2.json")"
  grep -q "refused until 16 MiB are free" "$TMP/daemon.log" && ok "the log names it" \
    || fail "the log names it" "$(grep store: "$TMP/daemon.log" | tail -2)"
  rm -f "$TMP/small/filler"
  ok_push=0
  for i in $(seq 1 50); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/tiny.pb.gz" \
      "$U/api/0/profiles?service=full&type=cpu")" = 200 ] && { ok_push=1; break; }
    sleep 0.2
  done
  check_eq "pushes resume once space returns" "$ok_push" 1
  [ "$ok_push" = 1 ] || echo "# $(df -h "$TMP/small" | tail -1); $(grep store: "$TMP/daemon.log" | tail -3)"
  pf_stop
  umount "$TMP/small" 2>/dev/null || umount -l "$TMP/small"
else
  echo "# skipped the full-disk test: needs root to mount a tmpfs"
fi

pf_done
