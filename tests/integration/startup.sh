#!/usr/bin/env bash
# Start-up as a newcomer meets it: a mistyped flag gets one line (with the
# nearest option) and a pointer, not the whole help; sizes take the forms
# df and free print; a start that fails leaves no data directory and no
# mount point behind and says "error", not "warning"; a mount point that
# holds files is warned about; systemd hears READY=1 once the tree can be
# read (Type=notify), and STOPPING=1 when it stops.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup

# --- the command line ----------------------------------------------------------
"$BIN" serve --ebfp "$TMP/m" >"$TMP/out" 2>&1; rc=$?
check_eq "a mistyped flag exits 2" "$rc" 2
grep -q "unknown option --ebfp; did you mean --ebpf?" "$TMP/out" && ok "a mistyped flag names the nearest option" \
  || fail "a mistyped flag names the nearest option" "$(cat "$TMP/out")"
n=$(wc -l < "$TMP/out")
[ "$n" -le 3 ] && ok "a mistyped flag prints $n lines, not the whole help" || fail "a mistyped flag prints a few lines" "$n lines"
grep -q "profilefs --help" "$TMP/out" && ok "and points to --help" || fail "and points to --help"
"$BIN" serve --verbose=2 "$TMP/m" >"$TMP/out" 2>&1
grep -q -- "--verbose takes no value" "$TMP/out" && ok "a value given to a flag without one is said so" || fail "a value to a flag without one" "$(cat "$TMP/out")"
"$BIN" serve "$TMP/m" --max-disk >"$TMP/out" 2>&1
grep -q -- "--max-disk needs a value" "$TMP/out" && ok "a missing value is said so" || fail "a missing value is said so" "$(cat "$TMP/out")"
for s in 10G 10GB 10GiB 512M 1048576; do
  # No mount point: exit 2 after the sizes were read, so nothing starts.
  "$BIN" serve --max-disk "$s" >"$TMP/out" 2>&1
  grep -q "needs exactly one MOUNTPOINT" "$TMP/out" && ok "--max-disk $s is a size" || fail "--max-disk $s is a size" "$(cat "$TMP/out")"
done
"$BIN" serve --max-disk 10TB "$TMP/m" >"$TMP/out" 2>&1; rc=$?
check_eq "--max-disk 10TB exits 2" "$rc" 2
grep -q "write bytes, or a number with K, M or G" "$TMP/out" && ok "a bad size lists the forms it accepts" || fail "a bad size lists the forms" "$(cat "$TMP/out")"
[ ! -e "$TMP/m" ] && ok "a usage error creates nothing" || fail "a usage error creates nothing"

# --- a start that fails creates nothing ------------------------------------------
port=$(free_port)
python3 -c "import socket,time,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', $port)); s.listen(); sys.stdout.write('up\n'); sys.stdout.flush(); time.sleep(30)" > "$TMP/holder.out" &
holder=$!
for i in $(seq 50); do grep -q up "$TMP/holder.out" && break; sleep 0.1; done
"$BIN" serve --data "$TMP/d1" --http "127.0.0.1:$port" "$TMP/m1" >"$TMP/busy.log" 2>&1; rc=$?
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
check_eq "a busy --http port: exit 1" "$rc" 1
[ ! -e "$TMP/d1" ] && [ ! -e "$TMP/m1" ] && ok "a busy --http port leaves no data directory and no mount point" \
  || fail "a busy --http port leaves nothing" "$(ls -d "$TMP"/d1 "$TMP"/m1 2>&1)"
grep -q "error: --http .*address already in use" "$TMP/busy.log" && ! grep -q "warning" "$TMP/busy.log" \
  && ok "the fatal error is labelled error, not warning" || fail "the fatal error is labelled error" "$(cat "$TMP/busy.log")"

"$BIN" serve --data "$TMP/d2" "$TMP/no/such/parent/m" >"$TMP/badmnt.log" 2>&1; rc=$?
check_eq "a mount point that cannot be made: exit 1" "$rc" 1
[ ! -e "$TMP/d2" ] && ok "a bad mount point leaves no data directory" || fail "a bad mount point leaves no data directory" "$(cat "$TMP/badmnt.log")"

# --- a mount point with files; a locked data directory; READY=1 ---------------
mkdir -p "$TMP/mnt"
touch "$TMP/mnt/left-over"
rm -f "$TMP/notify.sock"
python3 - "$TMP/notify.sock" "$TMP/mnt" > "$TMP/notify.out" 2>&1 <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
end = time.time() + 60
while time.time() < end:
    try:
        msg = s.recv(4096).decode()
    except socket.timeout:
        break
    readable = os.path.exists(os.path.join(sys.argv[2], "README.txt"))
    for line in msg.split("\n"):
        print(line, "readable" if readable else "not-readable", flush=True)
    if "STOPPING=1" in msg:
        break
PY
listener=$!
for i in $(seq 50); do [ -S "$TMP/notify.sock" ] && break; sleep 0.1; done
export NOTIFY_SOCKET="$TMP/notify.sock"
pf_start || fail "daemon starts and mounts"
unset NOTIFY_SOCKET
grep -q "mount point $TMP/mnt is not empty (1 entry, e.g. left-over)" "$TMP/daemon.log" \
  && ok "mounting over files warns" || fail "mounting over files warns" "$(head -3 "$TMP/daemon.log")"
for i in $(seq 50); do grep -q READY=1 "$TMP/notify.out" && break; sleep 0.1; done
grep -q "^READY=1 readable" "$TMP/notify.out" && ok "READY=1 is sent once README.txt can be read" \
  || fail "READY=1 once the tree is mounted" "$(cat "$TMP/notify.out")"

"$BIN" serve --data "$TMP/data" "$TMP/m3" >"$TMP/locked.log" 2>&1; rc=$?
check_eq "a data directory in use: exit 1" "$rc" 1
[ ! -e "$TMP/m3" ] && ok "a data directory in use leaves no mount point" || fail "a data directory in use leaves no mount point" "$(cat "$TMP/locked.log")"
[ -d "$TMP/data" ] && ok "and the running daemon's data is untouched" || fail "the running daemon's data is untouched"

pf_stop
check_eq "clean exit" "$PF_RC" 0
wait "$listener" 2>/dev/null
grep -q "^STOPPING=1" "$TMP/notify.out" && ok "STOPPING=1 is sent on stop" || fail "STOPPING=1 on stop" "$(cat "$TMP/notify.out")"
[ -e "$TMP/mnt/left-over" ] && ok "the files under the mount point are back" || fail "the files under the mount point are back"
[ -d "$TMP/data" ] && ok "a start that succeeded keeps its data directory" || fail "a start that succeeded keeps its data directory"
pf_done
