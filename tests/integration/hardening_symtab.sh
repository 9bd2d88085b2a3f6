#!/usr/bin/env bash
# Symbol tables of hostile binaries under a stated budget: six binaries of
# nobody, each with a .symtab of 4,000,000 functions (tests/integration/
# bigsyms.py: distinct addresses, distinct names, 163 MiB a file), run at
# once while the daemon samples with --ebpf=99 and --memory-limit 256M. What
# the sampler keeps of them is charged to the budget and bounded (a quarter
# of it for all tables, a quarter of that for one; the tables used least recently
# let go for a new one), and reading one holds a bounded part of its file.
# Printed: the daemon's peak RSS (VmHWM) before and after, the budget's
# bytes (profilefs_memory_budget_bytes) and what the log says it cut or let
# go. Asserted: the peak under the budget plus a stated margin, each
# binary's samples stored with frames named from its table or marked with
# the binary's name (bigsymN+0x...), the daemon alive. Needs root, a kernel
# with BTF, cc, setpriv and the user nobody; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="symtab-generated symtab-peak symtab-budget symtab-samples symtab-log symtab-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || skip_all "setpriv or nobody missing"
command -v cc >/dev/null || skip_all "no C compiler"
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
NSYMS=4000000
NBIN=6
LIMIT_MB=256
# The bound: the budget plus what it does not count (RocksDB, libraries,
# BPF maps' copies, stacks); under ASan its shadow and quarantine too.
SLACK_MB=160
if grep -q __asan_init "$BIN" 2>/dev/null; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
  SLACK_MB=512
fi

pf_setup
chmod 711 "$TMP"
W="$TMP/nobody"
mkdir -p "$W"
cat > "$W/spin.c" <<'EOF'
#include <stdlib.h>
#include <time.h>
int
main(int argc, char **argv)
{
	volatile unsigned long x = 0;
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 10);

	while (time(NULL) < end)
		for (int i = 0; i < 100000; i++)
			x++;
	return 0;
}
EOF
t0=$(date +%s.%N)
cc -O1 -fno-omit-frame-pointer -o "$W/spin" "$W/spin.c" && strip "$W/spin" &&
  "$PY" "$ROOT/tests/integration/bigsyms.py" "$W/spin" "$W/bigsym1" "$NSYMS" ||
  { fail "symtab-generated" "could not build the binaries"; pf_done; exit 1; }
for i in $(seq 2 $NBIN); do cp "$W/bigsym1" "$W/bigsym$i"; done
chmod 755 "$W"/bigsym*
chown -R nobody "$W"
t1=$(date +%s.%N)
ok "symtab-generated ($NBIN binaries of $NSYMS functions, $(( $(stat -c %s "$W/bigsym1") >> 20 )) MiB each, in $(echo "$t1 - $t0" | bc | cut -c1-5) s)"

PROFILEFS_EBPF_SERVICE_BY=comm pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --memory-limit "${LIMIT_MB}M" \
  --http 127.0.0.1:0 || { fail "symtab daemon start"; pf_done; exit 1; }
PORT=""
for i in $(seq 1 100); do
  PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
  [ -n "$PORT" ] && break; sleep 0.1
done
U="http://127.0.0.1:$PORT"
mb() { awk -v k="$1:" '$1 == k { printf "%d", $2 / 1024 }' "/proc/$PF_PID/status"; }
budget() { curl -s "$U/metrics" | sed -n "s/^profilefs_memory_budget_bytes{kind=\"$1\"} //p"; }
sleep 4
rss0=$(mb VmRSS); hwm0=$(mb VmHWM)
echo "# before: RSS $rss0 MiB, peak $hwm0 MiB; budget used $(( $(budget used) >> 20 )) MiB"

PIDS=""
for i in $(seq 1 $NBIN); do
  (cd / && exec "${AS[@]}" "$W/bigsym$i" 14) &
  PIDS="$PIDS $!"
  sleep 0.5
done
wait $PIDS
sleep 5	# the last period stored
hwm=$(mb VmHWM); rss=$(mb VmRSS)
used=$(budget used); peak=$(budget peak)
echo "# after: RSS $rss MiB, peak $hwm MiB; budget used $(( used >> 20 )) MiB, peak $(( peak >> 20 )) MiB of ${LIMIT_MB} MiB"
if [ "${hwm:-99999}" -lt $((LIMIT_MB + SLACK_MB)) ]; then
  ok "symtab-peak (peak RSS $hwm MiB < $LIMIT_MB MiB budget + $SLACK_MB MiB margin; $hwm0 MiB before the binaries ran)"
else fail "symtab-peak" "peak RSS $hwm MiB >= $((LIMIT_MB + SLACK_MB)) MiB ($hwm0 MiB before)"; fi
if [ -n "$peak" ] && [ "$peak" -le $((LIMIT_MB << 20)) ]; then
  ok "symtab-budget (budget peak $(( peak >> 20 )) MiB, used $(( used >> 20 )) MiB after)"
else fail "symtab-budget" "budget peak '$peak'"; fi

# Each binary's samples: named from its table (hostile_fn_*), or marked with its name.
named=0 marked=0 missing=""
for i in $(seq 1 $NBIN); do
  f="$TMP/mnt/bigsym$i/cpu/all/all/folded.txt"
  t="$(cat "$f" 2>/dev/null)"
  if echo "$t" | grep -q 'hostile_fn_'; then named=$((named + 1))
  elif echo "$t" | grep -q "bigsym$i+0x"; then marked=$((marked + 1))
  else missing="$missing bigsym$i"; fi
done
if [ -z "$missing" ]; then ok "symtab-samples ($named binaries' frames named from their tables, $marked marked bigsymN+0x...)"
else fail "symtab-samples" "no frames of$missing: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
cuts=$(grep -c "functions kept: the symbol tables are held" "$TMP/daemon.log")
drops=$(grep -c "let go (.* MiB) for another's" "$TMP/daemon.log")
grep -m2 -E "functions kept|let go" "$TMP/daemon.log" | sed 's/^/#   /' | cut -c1-250
if [ "$cuts" -gt 0 ]; then ok "symtab-log ($cuts tables cut, $drops times tables let go, said in the log)"
else fail "symtab-log" "no cut said in the log"; fi
if kill -0 "$PF_PID" 2>/dev/null && [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$U/healthz")" = 200 ]; then
  ok "symtab-daemon (alive, /healthz 200)"
else fail "symtab-daemon" "the daemon died or does not answer"; fi
pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "symtab-clean-stop" "daemon exited with $PF_RC"
pf_done
