#!/usr/bin/env bash
# The root sampler against hostile processes, as a review did it:
# - a Python frame whose code object lies in a file on a FUSE mount whose
#   server never answers (a second profilefs mount, stopped): periods go
#   on, /healthz stays ok, SIGTERM stops the daemon;
# - a JIT process whose /tmp is that mount, and a stripped binary whose
#   .gnu_debuglink leads into it: the opens are abandoned, periods go on,
#   /healthz stays ok, the binary's frames stay unnamed, SIGTERM stops;
# - a Python function of 48,000 lines recursing 90 deep: periods at their
#   rate, its function names in the profile (the daemon's CPU is printed);
# - a "java" of nobody in a user and mount namespace with /etc bound on its
#   /tmp: nothing created in /etc;
# - a stripped binary of nobody whose .gnu_debuglink names a root-only debug
#   file of the host: its symbol never comes back;
# - a 64 MiB symbol name: stored cut, the daemon's memory bounded.
# Needs root, a kernel with BTF, python3.11, setpriv, unshare and the user
# nobody; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="hebpf-build hebpf-java-etc hebpf-java-tried hebpf-debuglink-sampled hebpf-debuglink-tree hebpf-debuglink-api hebpf-debuglink-control hebpf-longname-rss hebpf-longname-cut hebpf-bigfunc-periods hebpf-bigfunc-named hebpf-stall-periods hebpf-stall-read hebpf-stall-healthz hebpf-stall-stop hebpf-openstall-opens hebpf-openstall-periods hebpf-openstall-healthz hebpf-openstall-metrics hebpf-openstall-unnamed hebpf-openstall-stop"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF"
command -v python3.11 >/dev/null || skip_all "python3.11 missing"
command -v curl >/dev/null && command -v unshare >/dev/null || skip_all "curl or unshare missing"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || skip_all "setpriv or nobody missing"
command -v objcopy >/dev/null && command -v cc >/dev/null || skip_all "no toolchain"
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
"${AS[@]}" unshare -Urm true 2>/dev/null || skip_all "user namespaces not open to nobody"

pf_setup
chmod 711 "$TMP"
SRC="$ROOT/tests/ebpf/hardening"
PIDS=""
STOPPED=""
# release_stuck: the helper processes killed, the stopped servers resumed and
# stopped, their mounts detached: what follows starts on a host with no
# filesystem that does not answer (and no process held in the kernel by one).
release_stuck() {
  local p i
  for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
  # Resumed, they first answer what waited (the release of files their readers had open).
  for p in $STOPPED; do kill -CONT "$p" 2>/dev/null; done
  sleep 1
  for p in $STOPPED; do kill -TERM "$p" 2>/dev/null; done
  for p in $STOPPED; do
    for i in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  for d in "$TMP"/stuck*; do
    [ -d "$d/mnt" ] && { fusermount3 -u -z "$d/mnt" 2>/dev/null || umount -l "$d/mnt" 2>/dev/null; }
  done
  PIDS="" STOPPED=""
}
cleanup_all() {
  release_stuck
  pf_cleanup
}
trap cleanup_all EXIT

# stuck_mount DIR: a second profilefs on DIR/mnt, to be stopped; its pid in STUCK_PID.
stuck_mount() {
  mkdir -p "$1/mnt"
  "$BIN" serve --data "$1/data" "$1/mnt" >"$1/log" 2>&1 &
  STUCK_PID=$!
  local i
  for i in $(seq 1 100); do
    # Not read: its pages must not be in the page cache when the server stops.
    ls "$1/mnt" 2>/dev/null | grep -q README.txt && return 0
    sleep 0.1
  done
  return 1
}
# stuck_check DIR: the server of DIR's mount is alive and stopped, and a
# lookup on it does not answer (a stuck mount, not a dead one: a dead one
# answers at once, and the opens under test would not stall). Its state
# otherwise, for the failure's message.
stuck_check() {
  local st
  st=$(awk '{print $3}' "/proc/$STUCK_PID/stat" 2>/dev/null)
  if [ "$st" != T ]; then
    STUCK_WHY="its server (pid $STUCK_PID) is ${st:-gone}, not stopped: $(tail -3 "$1/log" | tr '\n' '|')"
    return 1
  fi
  if timeout -s KILL 2 stat "$1/mnt/stuck-probe" >/dev/null 2>&1; then
    STUCK_WHY="a lookup on it answered"
    return 1
  fi
  return 0
}
periods() { grep -c "ebpf: period:" "$TMP/daemon.log"; }
# wait_periods FROM N: wait (up to 60 s) until N periods more than FROM are logged.
wait_periods() {
  local i
  for i in $(seq 1 120); do
    [ "$(periods)" -ge $(($1 + $2)) ] && return 0
    sleep 0.5
  done
  return 1
}
# exited PID: gone, or exited with a thread still held in the kernel. A
# thread whose request the stopped server had read before it stopped waits
# for the answer uninterruptibly (the kernel's FUSE rule): the process has
# exited (its first thread a zombie) but cannot be reaped until the server
# answers or the connection is aborted.
exited() { ! kill -0 "$1" 2>/dev/null || held "$1"; }
# held PID: exited, a thread left in the kernel's uninterruptible wait.
held() {
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] &&
    cat /proc/"$1"/task/*/stat 2>/dev/null | awk '$3 == "D" { d = 1 } END { exit !d }'
}
# stop_within NAME SECONDS: SIGTERM the daemon, ok if it exits within SECONDS.
stop_within() {
  local i t0=$SECONDS l0 held=""
  l0=$(wc -l < "$TMP/daemon.log")
  kill -TERM "$PF_PID" 2>/dev/null
  for i in $(seq 1 $(($2 * 10))); do
    exited "$PF_PID" && break
    sleep 0.1
  done
  if held "$PF_PID"; then
    # Resumed, the stopped servers answer: the held thread ends, the process is reaped.
    held="; a thread was held in the kernel by the stopped filesystem until it resumed"
    for i in $STOPPED; do kill -CONT "$i" 2>/dev/null; done
    for i in $(seq 100); do kill -0 "$PF_PID" 2>/dev/null || break; sleep 0.1; done
    # Still held (a server that does not answer even so): its connections aborted.
    if kill -0 "$PF_PID" 2>/dev/null; then
      for i in "$TMP"/stuck*/mnt; do
        c=$(awk -v m="$i" '$5 == m { split($3, d, ":"); print d[2] }' /proc/self/mountinfo)
        [ -n "$c" ] && echo 1 > "/sys/fs/fuse/connections/$c/abort" 2>/dev/null
      done
      for i in $(seq 50); do kill -0 "$PF_PID" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  # The daemon's stop watch ends a stop that hangs (exit 1), and says where.
  if ! exited "$PF_PID"; then
    fail "$1" "still running $2 s after SIGTERM"
    kill -9 "$PF_PID"
  elif tail -n +"$((l0 + 1))" "$TMP/daemon.log" | grep -q "stop: .* did not end within"; then
    fail "$1" "the stop hung: $(tail -n +"$((l0 + 1))" "$TMP/daemon.log" | grep 'stop: ' | tr '\n' '|')"
  else
    ok "$1 (exited $((SECONDS - t0)) s after SIGTERM$held$(tail -n +"$((l0 + 1))" "$TMP/daemon.log" |
      grep -q 'signalling it again' && echo '; the filesystem was signalled again'))"
  fi
  # Not waited for if still held: bash reaps it once it ends.
  held "$PF_PID" || wait "$PF_PID" 2>/dev/null
  PF_PID=
  fusermount3 -u -z "$TMP/mnt" 2>/dev/null
}

# --- a Python frame's code object in a file no one serves ---------------------
# A port free now (each daemon gets its own).
PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 1 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "daemon start"; pf_done; exit 1; }
stuck_mount "$TMP/stuck1" || { fail "stuck mount"; pf_done; exit 1; }
coproc PY { exec python3.11 "$SRC/stall.py" "$TMP/stuck1/mnt/README.txt"; }
PYPID=$PY_PID
PIDS="$PIDS $PYPID"
read -r -t 10 line <&"${PY[0]}"
kill -STOP "$STUCK_PID"
STOPPED="$STOPPED $STUCK_PID"
echo go >&"${PY[1]}"
sleep 1
n0=$(periods)
if wait_periods "$n0" 5; then ok "hebpf-stall-periods ($(($(periods) - n0)) periods logged after)"
else fail "hebpf-stall-periods" "$(($(periods) - n0)) periods in 60 s"; fi
# The read was tried and abandoned, once.
for i in $(seq 1 40); do
  m=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '$1 == "profilefs_ebpf_memory_reads_stalled" {print $2}')
  [ "${m:-0}" -ge 1 ] && break
  sleep 0.5
done
if grep -q "reading the memory of pid $PYPID did not end" "$TMP/daemon.log" && [ "${m:-0}" -ge 1 ]; then
  ok "hebpf-stall-read"
else
  fail "hebpf-stall-read" "no abandoned read of pid $PYPID (metric ${m:-none})"
fi
h=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$PORT/healthz")
case "$h" in *"ebpf: ok"*200) ok "hebpf-stall-healthz";; *) fail "hebpf-stall-healthz" "$h";; esac
stop_within "hebpf-stall-stop" 15
kill -9 $PYPID 2>/dev/null

# --- paths that cross a mount no one serves: the sampler goes on ------------
# A JIT-like process whose /tmp is the stopped mount (the sampler looks for its
# perf map there), and a stripped binary whose .gnu_debuglink leads into it (the
# mount on the .debug directory next to it). Their opens are abandoned after two
# seconds; periods go on, /healthz stays ok, the binary's frames stay unnamed,
# and SIGTERM stops the daemon.
D="$TMP/dlstall"
mkdir -p "$D/.debug"
if ! { cc -O1 -g -fno-omit-frame-pointer -o "$TMP/dlstall.full" "$SRC/secret.c" &&
       objcopy --only-keep-debug "$TMP/dlstall.full" "$TMP/dlstall.debug" &&
       cp "$TMP/dlstall.full" "$D/dlstall" && strip --strip-all "$D/dlstall" &&
       (cd "$TMP" && objcopy --add-gnu-debuglink=dlstall.debug "$D/dlstall"); }; then
  fail "hebpf-openstall-build"; pf_done; exit 1
fi
PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 1 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "daemon start (2)"; pf_done; exit 1; }
stuck_mount "$TMP/stuck2" || { fail "stuck mount (2)"; pf_done; exit 1; }
unshare -m --propagation private sh -c \
  "mount --bind '$TMP/stuck2/mnt' /tmp && exec python3.11 '$SRC/jitspin.py'" &
JPID=$!
PIDS="$PIDS $JPID"
# The binary waits (off CPU, so not looked at yet) until the server is stopped.
# It runs twice, the second time as the shell's own pid: a file whose debug
# file was not found is looked for again in the next process's root.
coproc DL { exec unshare -m --propagation private sh -c \
  "mount --bind '$TMP/stuck2/mnt' '$D/.debug' && echo ready && read go &&
   '$D/dlstall' 20; exec '$D/dlstall' 40"; }
DPID=$DL_PID
PIDS="$PIDS $DPID"
read -r -t 10 line <&"${DL[0]}"
sleep 1
kill -STOP "$STUCK_PID"
STOPPED="$STOPPED $STUCK_PID"
STUCK_WHY=
for i in $(seq 1 20); do
  [ "$(awk '{print $3}' "/proc/$STUCK_PID/stat" 2>/dev/null)" = T ] && break
  sleep 0.1
done
stuck_check "$TMP/stuck2" || echo "# the stopped mount is not stuck: $STUCK_WHY"
echo go >&"${DL[1]}"
for i in $(seq 1 180); do
  grep -q "dlstall.debug for pid [0-9]* did not end" "$TMP/daemon.log" && break
  sleep 0.5
done
m=$(curl -s -m 5 "http://127.0.0.1:$PORT/metrics" | awk '$1 == "profilefs_ebpf_file_opens_stalled" {print $2}')
# The debug file behind the stopped mount is given up on. The JIT-like
# process may be given up on too (the open of its perf map, or a read of its
# memory), or not looked into at all before the end, as a slow daemon may not:
# either way the sampler goes on, which the checks below assert.
if grep -q "dlstall.debug for pid [0-9]* did not end" "$TMP/daemon.log"; then
  jit=$(grep -c "for pid $JPID did not end" "$TMP/daemon.log")
  ok "hebpf-openstall-opens (metric ${m:-none}; the JIT-like process given up on $jit time(s))"
else
  fail "hebpf-openstall-opens" "${line:+ready; }${STUCK_WHY:+the mount was not stuck ($STUCK_WHY); }$(grep -E "did not end|dlstall" "$TMP/daemon.log" | head -12 | tr '\n' '|')"
fi
n0=$(periods)
if wait_periods "$n0" 5; then ok "hebpf-openstall-periods ($(($(periods) - n0)) periods logged after)"
else fail "hebpf-openstall-periods" "$(($(periods) - n0)) periods in 60 s"; fi
h=$(curl -s -m 5 -w ' %{http_code}' "http://127.0.0.1:$PORT/healthz")
case "$h" in *"ebpf: ok"*200) ok "hebpf-openstall-healthz";; *) fail "hebpf-openstall-healthz" "$h";; esac
m=$(curl -s -m 5 "http://127.0.0.1:$PORT/metrics")
opens=$(echo "$m" | awk '$1 == "profilefs_ebpf_file_opens_stalled" {print $2}')
reads=$(echo "$m" | awk '$1 == "profilefs_ebpf_memory_reads_stalled" {print $2}')
if echo "$m" | grep -q '^profilefs_ebpf_sampler_stalled 0' && [ "${opens:-0}" -ge 1 ]; then
  ok "hebpf-openstall-metrics"
else
  fail "hebpf-openstall-metrics" "$(echo "$m" | grep -E 'sampler_stalled|opens_stalled|reads_stalled')"
fi
# Sampled, its frames kept by address: the debug file behind the mount named none.
fd="$TMP/mnt/dlstall/cpu/all/all/folded.txt"
for i in $(seq 1 20); do [ -s "$fd" ] && break; sleep 0.5; done
if [ -s "$fd" ] && ! grep -q pf_secret_inner "$fd"; then ok "hebpf-openstall-unnamed"
else fail "hebpf-openstall-unnamed" "$(head -c 300 "$fd" 2>/dev/null || echo 'no profile of dlstall')"; fi
stop_within "hebpf-openstall-stop" 20
kill -9 $JPID $DPID 2>/dev/null
release_stuck

# --- nobody's programs: a fake java, a debuglink to a root-only file, a long name
W="$TMP/nobody"
mkdir -p "$W/fake" "$TMP/secret" "$TMP/pub"
chmod 777 "$W"
chmod 700 "$TMP/secret"
ok_build=1
cc -O1 -o "$W/java" "$SRC/fakejava.c" -ldl &&
  cc -O1 -shared -fPIC -o "$W/libjvm.so" "$SRC/fakelibjvm.c" &&
  cc -O1 -g -fno-omit-frame-pointer -o "$TMP/secret.full" "$SRC/secret.c" &&
  objcopy --only-keep-debug "$TMP/secret.full" "$TMP/secret/secret.debug" &&
  cp "$TMP/secret/secret.debug" "$TMP/pub/secret.debug" &&
  cp "$TMP/secret.full" "$W/fake/secret" && strip --strip-all "$W/fake/secret" &&
  objcopy --add-gnu-debuglink="$TMP/secret/secret.debug" "$W/fake/secret" &&
  cp "$W/fake/secret" "$TMP/pub/secretpub" &&
  python3 "$SRC/longname_gen.py" $((64 << 20)) > "$TMP/longname.s" &&
  cc -O1 -fno-omit-frame-pointer -o "$W/longname" "$SRC/longname.c" "$TMP/longname.s" || ok_build=0
rm -f "$TMP/longname.s"
chmod 600 "$TMP/secret/secret.debug"
chmod 755 "$W/java" "$W/libjvm.so" "$W/fake/secret" "$W/longname" "$TMP/pub/secretpub"
chmod 644 "$TMP/pub/secret.debug"
chown -R nobody "$W/fake"
readelf -p .gnu_debuglink "$W/fake/secret" 2>/dev/null | grep -q 'secret.debug' || ok_build=0
nm "$W/fake/secret" 2>/dev/null | grep -q pf_secret_inner && ok_build=0
[ "$ok_build" = 1 ] && ok "hebpf-build" || { fail "hebpf-build"; pf_done; exit 1; }

PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 1 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "daemon start (4)"; pf_done; exit 1; }
# What this daemon creates (another sampler on the host may ask the fake java too).
ST=""
if command -v strace >/dev/null; then
  strace -f -qq -e trace=open,openat,creat,mknodat,linkat,renameat2 -o "$TMP/calls" -p "$PF_PID" 2>/dev/null & ST=$!
  sleep 1
fi
# A "java" of nobody whose /tmp is /etc; one mapping a library named libjvm.so.
# (Both files live under /tmp, hidden once /etc is bound there: opened before.)
"${AS[@]}" unshare -Urm sh -c 'exec 3<"$0"; mount --bind /etc /tmp && exec /proc/self/fd/3 8' \
  "$W/java" & J1=$!
"${AS[@]}" unshare -Urm sh -c 'exec 3<"$0" 4<"$1"; mount --bind /etc /tmp &&
  exec /proc/self/fd/3 8 /proc/self/fd/4' "$W/java" "$W/libjvm.so" & J2=$!
# The stripped binary, run where nobody bound a directory of its own over the
# root-only one: its debuglink names secret.debug "next to it".
"${AS[@]}" unshare -Urm sh -c 'mount --bind "$0" "$1" && exec "$1/secret" 6' "$W/fake" \
  "$TMP/secret" & S1=$!
# The control: the same binary where its debug file is open to all.
"${AS[@]}" "$TMP/pub/secretpub" 6 & S2=$!
PIDS="$PIDS $J1 $J2 $S1 $S2"
made=""
for i in $(seq 1 45); do
  for p in $J1 $J2; do
    for d in /etc /tmp; do
      [ -e "$d/.attach_pid$p" ] || continue
      case "$made" in *"$d/.attach_pid$p"*) ;; *) made="$made $d/.attach_pid$p";; esac
    done
  done
  sleep 0.2
done
# strace waits for every thread to stop before it detaches; one held in the
# kernel never does: killed, it lets go at once.
if [ -n "$ST" ]; then
  kill $ST 2>/dev/null
  for i in $(seq 50); do kill -0 $ST 2>/dev/null || break; sleep 0.1; done
  kill -9 $ST 2>/dev/null
  wait $ST 2>/dev/null
fi
ours=$(grep -E "attach_pid($J1|$J2)" "$TMP/calls" 2>/dev/null | head -2)
if [ -n "$ours" ]; then
  fail "hebpf-java-etc" "the daemon made: $ours"
elif [ -n "$made" ] && [ -z "$ST" ]; then
  fail "hebpf-java-etc" "created:$made"
else
  ok "hebpf-java-etc${made:+ (another process on this host made$made)}"
fi
# The sampler did consider them: each was refused, not overlooked.
if grep -q "jvm $J1: no perf map" "$TMP/daemon.log" && grep -q "jvm $J2: no perf map" "$TMP/daemon.log"; then
  ok "hebpf-java-tried"
else
  fail "hebpf-java-tried" "$(grep -E "jvm ($J1|$J2)" "$TMP/daemon.log" | head -3)"
fi
wait $S1 $S2 2>/dev/null
sleep 2
fs="$TMP/mnt/secret/cpu/all/all/folded.txt"
fp="$TMP/mnt/secretpub/cpu/all/all/folded.txt"
if [ -s "$fs" ]; then ok "hebpf-debuglink-sampled"; else fail "hebpf-debuglink-sampled" "no profile of secret"; fi
if grep -q pf_secret_inner "$fs" 2>/dev/null; then
  fail "hebpf-debuglink-tree" "the root-only debug file named a frame: $(grep -o 'pf_secret_inner' "$fs" | head -1)"
else
  ok "hebpf-debuglink-tree"
fi
now=$(date +%s)
code=$(curl -s -o "$TMP/merge.pb" -w '%{http_code}' \
  "http://127.0.0.1:$PORT/api/0/profiles/merge?service=secret&type=cpu&from=$(date -u -d @$((now - 600)) +%Y-%m-%dT%H:%M:%SZ)&to=$(date -u -d @$((now + 60)) +%Y-%m-%dT%H:%M:%SZ)")
if [ "$code" = 200 ] && ! { gzip -dc "$TMP/merge.pb" 2>/dev/null || cat "$TMP/merge.pb"; } | grep -aq pf_secret_inner; then
  ok "hebpf-debuglink-api"
else
  fail "hebpf-debuglink-api" "HTTP $code, or the symbol in the merged profile"
fi
if grep -q pf_secret_inner "$fp" 2>/dev/null; then ok "hebpf-debuglink-control"
else fail "hebpf-debuglink-control" "a debug file open to all did not name the frame: $(head -c 200 "$fp" 2>/dev/null)"; fi

# A 64 MiB symbol name, run 3 s by nobody.
kb() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$PF_PID/status"; }
r0=$(kb VmRSS); a0=$(kb RssAnon); h0=$(kb VmHWM); d0=$(du -sk "$TMP/data" | cut -f1)
"${AS[@]}" "$W/longname" 3
sleep 3
r1=$(kb VmRSS); a1=$(kb RssAnon); h1=$(kb VmHWM); d1=$(du -sk "$TMP/data" | cut -f1)
echo "# 64 MiB symbol name: RSS $((r0 / 1024)) -> $((r1 / 1024)) MiB, of it anonymous $((a0 / 1024)) -> $((a1 / 1024)) MiB (peak $((h0 / 1024)) -> $((h1 / 1024)) MiB), data $((d0 / 1024)) -> $((d1 / 1024)) MiB"
# The name stored whole took +450 MiB. What is measured is the daemon's own
# (anonymous) memory: the file's pages, mapped while its table is read, are the
# page cache's. The bound, 160 MiB, is what sampling the host's other processes
# meanwhile may add (new processes' tables and runtimes, ASan's quarantine):
# on a busy host that alone was seen to reach 128 MiB of VmRSS.
if [ $((a1 - a0)) -lt $((160 * 1024)) ]; then ok "hebpf-longname-rss (+$(((a1 - a0) / 1024)) MiB anonymous, bound 160; the name stored whole: +450)"
else fail "hebpf-longname-rss" "anonymous RSS grew $(((a1 - a0) / 1024)) MiB (bound 160)"; fi
ft="$TMP/mnt/longname/cpu/all/all/top.txt"
for i in $(seq 1 20); do [ -e "$ft" ] && break; sleep 0.5; done
sz=$(stat -c %s "$ft" 2>/dev/null || echo 0)
long=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$ft" 2>/dev/null)
if grep -q 'pf_longname_AAAA*\.\.\.' "$ft" 2>/dev/null && [ "$long" -le 8192 ]; then
  ok "hebpf-longname-cut (top.txt $sz bytes, longest line $long)"
else
  fail "hebpf-longname-cut" "top.txt $sz bytes, longest line $long"
fi
pf_stop

# --- a Python function of 48,000 lines, 90 deep ------------------------------
python3 "$SRC/bigfunc_gen.py" > "$TMP/hugefunc.py"
PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "daemon start (3)"; pf_done; exit 1; }
python3.11 "$TMP/hugefunc.py" & BPID=$!
PIDS="$PIDS $BPID"
sleep 3
cpu() { awk '{print $14 + $15}' "/proc/$PF_PID/stat"; }
n0=$(periods); c0=$(cpu); t0=$SECONDS
sleep 10
n1=$(periods); c1=$(cpu); t1=$SECONDS
tck=$(getconf CLK_TCK)
echo "# daemon CPU with a 48,000-line function 90 deep at 99 Hz: $(( (c1 - c0) * 100 / tck / (t1 - t0) ))% of a core over $((t1 - t0)) s; $((n1 - n0)) periods of 2 s"
m=$(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^profilefs_ebpf_python_(line_table_bytes|frames_unlined_total)' | tr '\n' ' ')
echo "# $m"
# At the normal rate: 5 periods of 2 s in 10 s; 3 leaves room for a loaded host.
if [ $((n1 - n0)) -ge 3 ]; then ok "hebpf-bigfunc-periods ($((n1 - n0)) periods in $((t1 - t0)) s)"
else fail "hebpf-bigfunc-periods" "$((n1 - n0)) periods of 2 s in $((t1 - t0)) s"; fi
f="$TMP/mnt/hugefunc.py/cpu/all/all/folded.txt"
for i in $(seq 1 20); do [ -e "$f" ] && break; sleep 0.5; done
if grep -q "hugefunc_main;hugefunc;hugefunc;hugefunc" "$f" 2>/dev/null; then
  ok "hebpf-bigfunc-named (deepest stack: $(awk '{print gsub(/;hugefunc/, "")}' "$f" | sort -n | tail -1) hugefunc frames)"
else
  fail "hebpf-bigfunc-named" "$(head -c 300 "$f" 2>/dev/null)"
fi
kill -9 $BPID 2>/dev/null
pf_stop

pf_done
