#!/usr/bin/env bash
# The eBPF sampler (serve --ebpf): whole-host CPU profiles per service, with
# real programs from tests/ebpf/ (C with frame pointers, a short-lived one, one
# run from a deleted binary, a stripped one with a .gnu_debuglink debug file,
# a syscall-heavy one, Go with and without .symtab, a perf-map JIT stand-in),
# checked with `go tool pprof -traces` on the mounted merged.pb.gz.
# Then the unwind-table walker: C built -O2 -fomit-frame-pointer (a leaf hot
# loop, 150-deep recursion, a signal handler, the vdso, a binary replaced
# while it runs), and Debian's own python3, gzip, xz and sqlite3 at work,
# whose stacks must reach the process root; its gauges in /metrics.
# Needs root and a kernel with BTF; otherwise every check is skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-dwarf-lines ebpf-cfi-leaf ebpf-cfi-leaf-root ebpf-cfi-deep ebpf-cfi-signal ebpf-cfi-signal-frame ebpf-cfi-vdso ebpf-cfi-vdso-caller ebpf-cfi-replaced ebpf-cfi-replaced-old ebpf-cfi-replaced-new ebpf-cfi-python3 ebpf-cfi-gzip ebpf-cfi-xz ebpf-cfi-sqlite3 ebpf-cfi-metrics ebpf-stack ebpf-short ebpf-deleted ebpf-debuglink ebpf-kernel ebpf-kernel-mapping ebpf-go ebpf-go-stripped ebpf-jit ebpf-drops ebpf-unprivileged ebpf-service-exe ebpf-service-comm"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
command -v cc >/dev/null || skip_all "no C compiler"

pf_setup
SRC="$ROOT/tests/ebpf"
B="$TMP/bin"
mkdir -p "$B"
CFL="-O1 -fno-omit-frame-pointer"
cc $CFL -o "$B/efp_stack" "$SRC/spin.c" &&
  cp "$B/efp_stack" "$B/efp_short" && cp "$B/efp_stack" "$B/efp_deleted" &&
  cc $CFL -g -o "$B/efp_debuglink" "$SRC/spin.c" &&
  objcopy --only-keep-debug "$B/efp_debuglink" "$B/efp_debuglink.debug" &&
  strip --strip-all "$B/efp_debuglink" &&
  objcopy --add-gnu-debuglink="$B/efp_debuglink.debug" "$B/efp_debuglink" &&
  cp "$B/efp_stack" "$B/efp_name_longer_than_comm" &&
  cc $CFL -o "$B/efp_kernel" "$SRC/syscalls.c" &&
  cc $CFL -o "$B/efp_jit" "$SRC/jit.c" &&
  cc -O2 -fomit-frame-pointer -o "$B/efp_nofp" "$SRC/spin.c" &&
  cc -O2 -fomit-frame-pointer -o "$B/efp_deep" "$SRC/unwind.c" &&
  cp "$B/efp_deep" "$B/efp_signal" && cp "$B/efp_deep" "$B/efp_vdso" &&
  cp "$B/efp_nofp" "$B/efp_replaced" ||
  { fail "build test programs"; pf_done; exit 1; }
(cd "$SRC/gospin" && GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-$TMP/gocache}" \
  go build -o "$B/efp_go" . && GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-$TMP/gocache}" \
  go build -ldflags="-s -w" -o "$B/efp_gostrip" .) || { fail "build gospin"; pf_done; exit 1; }

# Without privileges, --ebpf fails at start and says what is missing.
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$TMP" && mkdir -p "$TMP/nobody" && chmod 777 "$TMP/nobody"
  out="$(timeout 20 setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
    "$BIN" serve --data "$TMP/nobody/data" --ebpf "$TMP/nobody/mnt" 2>&1)"
  rc=$?
  if [ "$rc" -ne 0 ] && echo "$out" | grep -q "CAP_BPF"; then ok "ebpf-unprivileged"
  else fail "ebpf-unprivileged" "rc=$rc: $out"; fi
else
  echo "ok - ebpf-unprivileged # SKIP setpriv or user nobody missing"
fi

PORT=$((20000 + RANDOM % 20000))
# --ebpf-min-samples 0: each program its own service however few samples a
# loaded host leaves it (the threshold itself is ebpf_ident.sh's).
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }

# The long-running programs at once, for 6 s.
"$B/efp_stack" 6000 &
P1=$!
"$B/efp_deleted" 6000 &
P2=$!
sleep 0.2
rm -f "$B/efp_deleted"
"$B/efp_kernel" 6000 &
P3=$!
"$B/efp_go" 6000 &
P4=$!
"$B/efp_jit" 6000 &
P5=$!
"$B/efp_gostrip" 6000 &
P6=$!
"$B/efp_debuglink" 6000 &	# stripped: names from the separate debug file
P7=$!
"$B/efp_name_longer_than_comm" 3000 &	# comm is cut to 15 bytes, the exe name is not
P8=$!
wait $P1 $P2 $P3 $P4 $P5 $P6 $P7 $P8
# The short-lived one alone, so it gets a CPU: it exits before most periods end.
"$B/efp_short" 500

# traces SERVICE: go tool pprof -traces of the service's merged profile, once it exists.
traces() {
  local f="$TMP/mnt/$1/cpu/all/all/merged.pb.gz" i
  for i in $(seq 1 60); do
    [ -e "$f" ] && break
    kill -0 "$PF_PID" 2>/dev/null || break	# the daemon is gone: nothing will come
    sleep 0.5
  done
  go tool pprof -sample_index=samples -traces "$f" 2>/dev/null
}
# share STACK: "matched total": samples whose stack (leaf;...;root) contains STACK.
share() {
  awk -v want="$1" '
    function done() { if (v != "") { total += v; if (index(";" st ";", ";" want ";")) hit += v } v = ""; st = "" }
    /^-+\+/ { done(); next }
    /^ *[A-Za-z_:.]+: / && v == "" { next }       # a label line (comm:, pid:, tid:)
    v == "" && $1 ~ /^[0-9]/ { v = $1; $1 = ""; sub(/^ +/, ""); st = $0; next }
    v != "" && NF { sub(/^ +/, ""); st = st ";" $0 }
    END { done(); print hit + 0, total + 0 }'
}
# want_share NAME SERVICE STACK PERCENT
want_share() {
  local t m n
  t="$(traces "$2")"
  read -r m n <<<"$(echo "$t" | share "$3")"
  if [ "$n" -gt 0 ] && [ $((m * 100)) -ge $(($4 * n)) ]; then ok "$1 ($m of $n samples)"
  else fail "$1" "$m of $n samples of $2 carry $3 (want >= $4%)"; echo "$t" | head -40 | sed 's/^/#   /'; fi
}
# want_frame NAME SERVICE REGEX
want_frame() {
  local t
  t="$(traces "$2")"
  if echo "$t" | grep -Eq "$3"; then ok "$1"
  else fail "$1" "no frame matching /$3/ in $2"; echo "$t" | head -30 | sed 's/^/#   /'; fi
}

sleep 3	# one more period, so the last samples are stored
want_share "ebpf-stack" efp_stack "inner;outer;main" 90
want_share "ebpf-short" efp_short "inner;outer;main" 90
want_share "ebpf-deleted" efp_deleted "inner;outer;main" 90
want_share "ebpf-debuglink" efp_debuglink "inner;outer;main" 90
want_frame "ebpf-kernel" efp_kernel "do_syscall_64|entry_SYSCALL_64"
# ... in the mapping "[kernel]", and user frames keep their binary's mapping and build id.
raw="$(go tool pprof -raw "$TMP/mnt/efp_kernel/cpu/all/all/merged.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p')"
if echo "$raw" | grep -q ' \[kernel\] ' && echo "$raw" | grep -Eq " /[^ ]+ [0-9a-f]{40} "; then
  ok "ebpf-kernel-mapping"
else
  fail "ebpf-kernel-mapping" "$(echo "$raw" | head -5)"
fi
# File and line from DWARF: the stripped binary's debug file has it.
if go tool pprof -raw "$TMP/mnt/efp_debuglink/cpu/all/all/merged.pb.gz" 2>/dev/null |
  grep -Eq " inner .*spin\.c:[0-9]+"; then ok "ebpf-dwarf-lines"
else fail "ebpf-dwarf-lines" "$(go tool pprof -raw "$TMP/mnt/efp_debuglink/cpu/all/all/merged.pb.gz" 2>&1 | sed -n '/^Locations/,/^Mappings/p' | head -8)"; fi
want_frame "ebpf-go" efp_go "main\.goInner"
want_frame "ebpf-go-stripped" efp_gostrip "main\.goInner"	# from .gopclntab
want_frame "ebpf-jit" efp_jit "^ +[0-9.a-z]* *jit_spin_loop$|^ +jit_spin_loop$"

# No sample or notice lost at 99 Hz (the sampler logs its counters each period at -v).
if grep -q "ebpf: period:" "$TMP/daemon.log" && ! grep -Eq "dropped [1-9][0-9]* samples|, [1-9][0-9]* events" "$TMP/daemon.log"; then
  ok "ebpf-drops"
else
  fail "ebpf-drops" "$(grep 'ebpf: period:' "$TMP/daemon.log" | tail -3)"
fi

# The default service rule names a process by its executable, not its comm.
if [ -d "$TMP/mnt/efp_name_longer_than_comm" ]; then ok "ebpf-service-exe"
else fail "ebpf-service-exe" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi

# --- the unwind-table walker ---------------------------------------------
# No frame pointers anywhere in these; each runs 8 s (the first
# samples of a process, before its tables are loaded, weigh less).
"$B/efp_nofp" 8000 &
P1=$!
"$B/efp_deep" deep 8000 &
P2=$!
"$B/efp_signal" signal 8000 &
P3=$!
"$B/efp_vdso" vdso 8000 &
P4=$!
# Replaced while it runs: the old process keeps the old (deleted) file's
# table, the new one, another program under the same name, gets its own.
"$B/efp_replaced" 8000 &
P5=$!
sleep 1
cp "$B/efp_deep" "$B/efp_replaced.new" && mv -f "$B/efp_replaced.new" "$B/efp_replaced"
"$B/efp_replaced" deep 7000 &
P6=$!
wait $P1 $P2 $P3 $P4 $P5 $P6

# Debian's own binaries (no frame pointers, stripped; names from .dynsym or
# not at all), started directly so that $! is their pid: other processes of
# the same names on the host are not ours to judge. 12 s each: the samples
# taken before a library's table is built (tens of milliseconds, far more on a
# loaded host or a sanitizer build) weigh little.
/usr/bin/python3 -c '
import json, time
def rec(n):
    return rec(n - 1) + 1 if n else len(json.dumps({"k%d" % i: list(range(30)) for i in range(300)}))
end = time.monotonic() + 12
while time.monotonic() < end:
    rec(40)' &
PY=$!
/usr/bin/gzip -6 < <(head -c 500000000 /dev/urandom) >/dev/null &
GZ=$!
/usr/bin/xz -6 -T1 < <(head -c 150000000 /dev/urandom) >/dev/null &
XZ=$!
/usr/bin/sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000000)
  SELECT sum(x * x % 7) FROM c;' >/dev/null 2>&1 &
SQ=$!
sleep 12
kill $GZ $XZ $SQ 2>/dev/null
wait $PY $GZ $XZ $SQ 2>/dev/null
sleep 3

# roots SERVICE [PID]: "matched total": samples (of PID) whose outermost frame is the process root.
roots() {
  traces "$1" | awk -v want="${2:-}" '
    function done() { if (want != "" && pid != want) v = ""; if (v != "") { total += v; if (last ~ /^(_start|__libc_start_main|__libc_start_call_main|clone|clone3|__clone|__clone3)$/) hit += v } v = ""; last = "" }
    /^-+\+/ { done(); pid = ""; next }
    /^ *pid: / && v == "" { pid = $2; next }
    /^ *[A-Za-z_:.]+: / && v == "" { next }
    v == "" && $1 ~ /^[0-9]/ { v = $1; $1 = ""; sub(/^ +/, ""); last = $0; next }
    v != "" && NF { sub(/^ +/, ""); last = $0 }
    END { done(); print hit + 0, total + 0 }'
}
# want_roots NAME SERVICE PERCENT [PID]
want_roots() {
  local m n
  read -r m n <<<"$(roots "$2" "${4:-}")"
  if [ "$n" -gt 0 ] && [ $((m * 100)) -ge $(($3 * n)) ]; then ok "$1 ($m of $n samples reach the root)"
  else fail "$1" "$m of $n samples of $2 reach _start/__libc_start_main/clone (want >= $3%)"; traces "$2" | head -60 | sed 's/^/#   /'; fi
}

want_share "ebpf-cfi-leaf" efp_nofp "inner;outer;main" 90
want_roots "ebpf-cfi-leaf-root" efp_nofp 90
# 150 frames of descend between deep_leaf and main, and the walk goes on to _start.
deep="deep_leaf$(printf ';descend%.0s' $(seq 1 151));main"
want_share "ebpf-cfi-deep" efp_deep "$deep" 90
want_share "ebpf-cfi-signal" efp_signal "sig_leaf;on_signal" 50
# ... and through the signal frame down to the interrupted code and the root.
t="$(traces efp_signal)"
read -r m n <<<"$(echo "$t" | share "sig_leaf;on_signal")"
read -r m2 n2 <<<"$(roots efp_signal)"
if [ "$m" -gt 0 ] && echo "$t" | awk '/sig_leaf/ {h = 1} h && /sig_wait/ {w = 1} h && /^ +_start$/ {if (w) found = 1; h = 0} END {exit !found}' &&
  [ $((m2 * 100)) -ge $((90 * n2)) ]; then
  ok "ebpf-cfi-signal-frame ($m2 of $n2 reach the root)"
else
  fail "ebpf-cfi-signal-frame" "handler stacks do not continue through the signal frame ($m2 of $n2 reach the root)"
fi
want_frame "ebpf-cfi-vdso" efp_vdso "^ +[0-9]* *(__vdso_)?clock_gettime$"
want_share "ebpf-cfi-vdso-caller" efp_vdso "vdso_caller;main" 90
want_roots "ebpf-cfi-replaced" efp_replaced 90
want_share "ebpf-cfi-replaced-old" efp_replaced "inner;outer;main" 20
want_share "ebpf-cfi-replaced-new" efp_replaced "deep_leaf;descend" 20
want_roots "ebpf-cfi-python3" python3.11 90 $PY
want_roots "ebpf-cfi-gzip" gzip 90 $GZ
want_roots "ebpf-cfi-xz" xz 90 $XZ
want_roots "ebpf-cfi-sqlite3" sqlite3 90 $SQ

m="$(curl -s "http://127.0.0.1:$PORT/metrics")"
b="$(echo "$m" | awk '$1 == "profilefs_ebpf_unwind_table_bytes" {print $2}')"
t="$(echo "$m" | awk '$1 == "profilefs_ebpf_unwind_tables" {print $2}')"
c="$(echo "$m" | awk '$1 == "profilefs_ebpf_unwind_table_capacity_bytes" {print $2}')"
if [ -n "$b" ] && [ -n "$t" ] && awk -v b="$b" -v t="$t" -v c="$c" 'BEGIN {exit !(b > 0 && t > 0 && b <= c && c == 64 * 1048576)}'; then
  ok "ebpf-cfi-metrics ($t tables, $b of $c bytes)"
else
  fail "ebpf-cfi-metrics" "$(echo "$m" | grep unwind)"
fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-clean-stop" "daemon exited with $PF_RC"

# PROFILEFS_EBPF_SERVICE_BY=comm overrides the rule.
rm -rf "$TMP/data"
PROFILEFS_EBPF_SERVICE_BY=comm pf_start --ebpf=99 --ebpf-period 1 --ebpf-min-samples 0 ||
  { fail "ebpf daemon start (comm)"; pf_done; exit 1; }
"$B/efp_name_longer_than_comm" 2000
for i in $(seq 1 40); do
  [ -d "$TMP/mnt/efp_name_longer" ] && break
  sleep 0.5
done
if [ -d "$TMP/mnt/efp_name_longer" ] && [ ! -d "$TMP/mnt/efp_name_longer_than_comm" ]; then
  ok "ebpf-service-comm"
else
  fail "ebpf-service-comm" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"
fi
pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-clean-stop" "daemon exited with $PF_RC"
pf_done
