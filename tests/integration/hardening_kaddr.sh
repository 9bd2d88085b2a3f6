#!/usr/bin/env bash
# Kernel text addresses and the tree: with --allow-other, a reader to whom
# /proc/kallsyms shows zeros (nobody: no CAP_SYSLOG) reads every file of the
# tree -- merged profiles, diffs, stored profiles, flame graphs, folded and
# top text, meta.json, timelines, vs/ -- and finds no kernel address (a
# location's address or a mapping's bounds in the kernel's half of the
# address space, such a hex word in text, or a "[kernel]+0x..." offset);
# root reads the same profiles with them (they are hidden by the rule, not
# missing), and nobody reading after root (and root after nobody) gets each
# its own version, whatever the caches hold. Needs root, a kernel with BTF,
# setpriv, the user nobody, go, and a kernel that shows kernel addresses to
# root but not to nobody (kernel.kptr_restrict 1, or 0 with
# perf_event_paranoid above 1); otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="kaddr-root-sees kaddr-nobody-tree kaddr-nobody-pprof kaddr-root-after kaddr-nobody-profile kaddr-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || skip_all "setpriv or nobody missing"
command -v go >/dev/null || skip_all "go not installed"
[ -x /usr/bin/python3 ] || skip_all "no /usr/bin/python3"
[ "$(cat /proc/sys/kernel/kptr_restrict)" -lt 2 ] || skip_all "kernel.kptr_restrict=2: root sees no kernel address either"
[ "$(cat /proc/sys/kernel/kptr_restrict)" -gt 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ] ||
  skip_all "kernel.kptr_restrict=0 and perf_event_paranoid<=1: every user may read kernel addresses"
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

pf_setup
chmod 711 "$TMP"
cp "$ROOT/tests/integration/kaddr_scan.py" "$TMP/scan.py"
chmod 644 "$TMP/scan.py"
scan() { /usr/bin/python3 "$TMP/scan.py" "$@"; }
nscan() { (cd / && "${AS[@]}" /usr/bin/python3 "$TMP/scan.py" "$@"); }
figure() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" | tail -1; }

# A busy process in the kernel: dd's writes to /dev/null.
mkdir -p "$TMP/bin"
cp "$(command -v dd)" "$TMP/bin/kaddrdd"
"$TMP/bin/kaddrdd" if=/dev/zero of=/dev/null bs=512 2>/dev/null &
DD=$!
trap 'kill $DD 2>/dev/null; pf_cleanup' EXIT

PROFILEFS_EBPF_SERVICE_BY=comm pf_start --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --allow-other ||
  { fail "kaddr daemon start"; pf_done; exit 1; }
SVC="$TMP/mnt/kaddrdd/cpu/all/all"
# Root's view first: the merged profile holds kernel frames with addresses.
n=0
for i in $(seq 1 60); do
  n="$(go tool pprof -raw "$SVC/merged.pb.gz" 2>/dev/null | grep -cE '0xffff[89a-f][0-9a-f]{11} ')"
  [ "${n:-0}" -gt 5 ] && break
  sleep 0.5
done
kill $DD 2>/dev/null
wait $DD 2>/dev/null
sleep 2.5	# its last period stored
if [ "${n:-0}" -gt 0 ]; then ok "kaddr-root-sees ($n kernel locations with addresses in merged.pb.gz, go tool pprof -raw)"
else fail "kaddr-root-sees" "no kernel address in root's merged.pb.gz: $(go tool pprof -raw "$SVC/merged.pb.gz" 2>&1 | head -5 | tr '\n' ' ')"; fi

# nobody reads every file of the tree.
t0=$(date +%s.%N)
out="$(nscan "$TMP/mnt")"
t1=$(date +%s.%N)
echo "$out" | grep '^#' | head -5
files=$(echo "$out" | figure files); pp=$(echo "$out" | figure pprof)
k=$(echo "$out" | figure kernel); e=$(echo "$out" | figure errors)
secs=$(echo "$t1 - $t0" | bc)
if [ "${files:-0}" -gt 50 ] && [ "${pp:-0}" -gt 10 ] && [ "${k:-1}" -eq 0 ]; then
  ok "kaddr-nobody-tree ($files files read in ${secs}s, $pp of them pprof, $k kernel addresses, $e unreadable)"
else fail "kaddr-nobody-tree" "$out"; fi

# go tool pprof -raw, as nobody, on the merged profiles of the service.
raw="$(cd / && "${AS[@]}" env HOME=/tmp GOCACHE=/tmp/kaddr-gocache go tool pprof -raw "$SVC/merged.pb.gz" 2>&1)"
nk=$(echo "$raw" | grep -cE '0x0*ffff[89a-f][0-9a-f]{11}|ffffffff8')
named=$(echo "$raw" | grep -cE ' 0x0 M=[0-9]+ [a-z_]')
if [ "$nk" -eq 0 ] && [ "$named" -gt 0 ]; then
  ok "kaddr-nobody-pprof (go tool pprof -raw: $named kernel frames named without address, $nk addresses)"
else fail "kaddr-nobody-pprof" "$nk addresses, $named named: $(echo "$raw" | grep -E 'ffff|Locations' | head -5 | tr '\n' ' ')"; fi

# Root after nobody: the service's files again, each with root's addresses.
out="$(scan "$TMP/mnt/kaddrdd")"
k=$(echo "$out" | figure kernel); files=$(echo "$out" | figure files)
if [ "${k:-0}" -gt 0 ]; then ok "kaddr-root-after (root: $k kernel addresses in $files files of the service)"
else fail "kaddr-root-after" "$out"; fi

# nobody after root: a stored profile root just read (its page cache), then the service again.
prof="$(ls "$SVC/profiles/" | head -1)"
cat "$SVC/profiles/$prof" >/dev/null
out="$(nscan "$TMP/mnt/kaddrdd")"
k=$(echo "$out" | figure kernel); files=$(echo "$out" | figure files)
if [ -n "$prof" ] && [ "${k:-1}" -eq 0 ]; then ok "kaddr-nobody-profile (nobody after root: $k kernel addresses in $files files)"
else fail "kaddr-nobody-profile" "$prof: $out"; fi

if kill -0 "$PF_PID" 2>/dev/null; then ok "kaddr-daemon"; else fail "kaddr-daemon" "the daemon died"; fi
pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "kaddr-clean-stop" "daemon exited with $PF_RC"
pf_done
