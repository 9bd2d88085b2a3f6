#!/usr/bin/env bash
# The root sampler reads files that other users control: their binaries, the
# debug files those name, their perf maps. Reproduces what a review did as
# user nobody: a stripped program whose .gnu_debuglink names
# "../../../../etc/shadow", one whose debug file is a FIFO, and a planted
# perf map of another user's process. The sampler must not open them, never
# block, and go on sampling; SIGTERM still stops the daemon.
# Needs root, a kernel with BTF, setpriv and the user nobody; else skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="sampler-files-build sampler-files-shadow sampler-files-fifo sampler-files-periods sampler-files-named sampler-files-stop"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || skip_all "setpriv or nobody missing"
command -v strace >/dev/null || skip_all "strace missing"
command -v objcopy >/dev/null && command -v cc >/dev/null || skip_all "no toolchain"

pf_setup
chmod 711 "$TMP"
W="$TMP/nobody"
mkdir -p "$W" && chmod 777 "$W"
SRC="$ROOT/tests/ebpf/spin.c"
# A .gnu_debuglink section: the name, NUL, padding to 4 bytes, a CRC32.
link_section() { python3 -c 'import sys
n = sys.argv[1].encode() + b"\0"
n += b"\0" * (-len(n) % 4)
sys.stdout.buffer.write(n + b"\x00\x00\x00\x00")' "$1"; }
ok_build=1
for name in shadowlink fifolink; do
  cc -O1 -fno-omit-frame-pointer -o "$W/$name" "$SRC" && strip --strip-all "$W/$name" || ok_build=0
done
link_section "../../../../../../../../etc/shadow" > "$TMP/shadow.sec"
link_section "fifolink.debug" > "$TMP/fifo.sec"
objcopy --add-section .gnu_debuglink="$TMP/shadow.sec" "$W/shadowlink" &&
  objcopy --add-section .gnu_debuglink="$TMP/fifo.sec" "$W/fifolink" &&
  mkfifo "$W/fifolink.debug" && chmod 666 "$W/fifolink.debug" &&
  chmod 755 "$W/shadowlink" "$W/fifolink" || ok_build=0
readelf -p .gnu_debuglink "$W/shadowlink" 2>/dev/null | grep -q 'etc/shadow' || ok_build=0
[ "$ok_build" = 1 ] && ok "sampler-files-build" || { fail "sampler-files-build"; pf_done; exit 1; }

pf_start -v --ebpf=99 --ebpf-period 1 --ebpf-min-samples 0 || { fail "daemon start"; pf_done; exit 1; }
strace -f -qq -e trace=open,openat -o "$TMP/opens" -p "$PF_PID" 2>/dev/null & ST=$!
sleep 1
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
"${AS[@]}" "$W/shadowlink" 3000 & p1=$!
"${AS[@]}" "$W/fifolink" 3000 & p2=$!
wait $p1 $p2
sleep 2.5
kill $ST 2>/dev/null; wait $ST 2>/dev/null
if grep -q 'shadow' "$TMP/opens"; then
  fail "sampler-files-shadow" "$(grep shadow "$TMP/opens" | head -2)"
else
  ok "sampler-files-shadow"
fi
# The FIFO may be looked at (and refused at once), never waited on: periods go on.
n0=$(grep -c "ebpf: period:" "$TMP/daemon.log")
sleep 3
n1=$(grep -c "ebpf: period:" "$TMP/daemon.log")
if grep -q 'fifolink.debug' "$TMP/opens" && ! grep -q 'fifolink.debug.*O_NONBLOCK' "$TMP/opens"; then
  fail "sampler-files-fifo" "opened without O_NONBLOCK: $(grep fifolink.debug "$TMP/opens" | head -1)"
else
  ok "sampler-files-fifo"
fi
[ "$n1" -gt "$n0" ] && ok "sampler-files-periods" || fail "sampler-files-periods" "no period in 3 s after the hostile programs ($n0 -> $n1)"
# Both programs are still profiled, by address where no symbol could be read.
[ -d "$TMP/mnt/shadowlink/cpu" ] && [ -d "$TMP/mnt/fifolink/cpu" ] && ok "sampler-files-named" \
  || fail "sampler-files-named" "$(ls "$TMP/mnt")"
pf_stop
check_eq "sampler-files-stop" "${PF_RC:-1}" 0
pf_done
