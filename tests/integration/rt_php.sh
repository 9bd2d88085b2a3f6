#!/usr/bin/env bash
# The eBPF sampler and PHP: PHP 8.2 (the host's php8.2, php-fpm8.2) and 8.4
# (the trixie root's, run in its own mount and PID namespaces: the daemon
# finds the binary through /proc/PID/root). Functions and methods named
# from the executor's frames (Class::method, file and line) in place of
# execute_ex:
# - CLI: a 3-deep chain below the file's code ({main} -> outer -> middle ->
#   Worker::spin), >= 90% of the samples of the script's run (PHP's own
#   start and end left out) showing it whole and reaching the process's
#   root, for a process started before the daemon (from its unwind tables
#   on) and one after (from 2 s after the daemon found it); the share of all
#   the samples is printed too;
#   the share is printed per version and case; the frames' files and lines;
# - FPM: a pool on a unix socket serving a script that burns CPU in named
#   functions, driven by a FastCGI client (tests/ebpf/runtimes/fcgi.py):
#   the workers' samples show the script's functions;
# - a hostile process of nobody (tests/ebpf/phphostile.c: crafted executor
#   structures, loops, a 2^40-byte name, a 16 MiB file name): the daemon
#   stays up and answers, its CPU and memory growth while it runs are
#   printed and bounded, the names it shows are cut; the same saying PHP
#   8.1, twice: refused, told once in the log.
# Needs root, a kernel with BTF, php8.2, the trixie root and go (pprof).
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="rt-php-82-before rt-php-82-after rt-php-84-before rt-php-84-after rt-php-lines rt-php-fpm-82 rt-php-fpm-84 rt-php-hostile rt-php-hostile-cut rt-php-unknown-version rt-php-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v php8.2 >/dev/null || skip_all "php8.2 not installed"
command -v go >/dev/null || skip_all "go not installed"
need_root trixie
R="$(roots_dir)/trixie"

pf_setup
chmod 711 "$TMP"
SRC="$ROOT/tests/ebpf/runtimes"
B="$TMP/bin"
mkdir -p "$B"
chmod 755 "$B"
RD="/tmp/rtphp.$$"		# inside the root
mkdir -p "$R$RD"
chmod 755 "$R$RD"
PIDS=""
FPM82=""	# the host's master: SIGTERM (it stops its workers; SIGKILL would orphan them)
FPM84=""	# unshare of the root's: SIGKILL (unshare ignores SIGTERM; the namespace goes with it)
cleanup_php() {
  local p
  fpm_stop
  for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
  wait $PIDS 2>/dev/null
  rm -rf "${R:?}$RD"
  pf_cleanup
}
trap cleanup_php EXIT

# folded SERVICE [RANGE]: the service's folded stacks (root first), once they exist.
folded() {
  local f="$TMP/mnt/$1/cpu/all/${2:-all}/folded.txt" i
  for i in $(seq 1 60); do
    [ -e "$f" ] && break
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.5
  done
  cat "$f" 2>/dev/null
}
# fshare WANT AMONG: "matched total" ms of the folded stacks (stdin)
# matching the regex AMONG, and of those, WANT.
fshare() {
  awk -v want="$1" -v among="$2" '
    { v = $NF; st = substr($0, 1, length($0) - length($NF) - 1)
      if (st ~ among) { total += v; if (st ~ want) hit += v } }
    END { printf "%d %d\n", hit / 1e6, total / 1e6 }'
}
raw() { go tool pprof -raw "$TMP/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null; }

# The whole chain, from the process's first frame (_start) on.
CHAIN='^_start;(.*;)?[{]main[}];outer;middle;Worker::spin(;|$)'
# chain_share NAME SERVICE [RANGE]: >= 90% of the service's samples in the
# script's run show CHAIN. Left out: PHP's own start and end (stacks from
# _start that do not go through php_execute_script, and the dynamic
# linker's at exec), a large share of a short run on a busy host; the share
# of all samples is printed too.
chain_share() {
  local t m n all
  t="$(folded "$2" "${3:-all}")"
  read -r m n all <<<"$(echo "$t" | awk -v want="$CHAIN" '
    { v = $NF; st = substr($0, 1, length($0) - length($NF) - 1); a += v
      if (st ~ want) hit += v
      else if ((st ~ /^_start;/ && st !~ /;php_execute_script/) || st ~ /^ld-linux/) out += v }
    END { printf "%d %d %d\n", hit / 1e6, (a - out) / 1e6, a / 1e6 }')"
  if [ "$n" -gt 0 ] && [ $((m * 100)) -ge $((90 * n)) ]; then
    ok "$1 ($((m * 100 / n))% of the script's $n ms ($3) show the chain; $((m * 100 / all))% of all $all ms)"
    # The largest stack of the rest, for the record.
    [ "$m" -lt "$all" ] && echo "$t" | awk -v want="$CHAIN" '{ st = substr($0, 1, length($0) - length($NF) - 1)
      if (st !~ want) print }' | sort -k2 -nr | head -1 | cut -c1-240 | sed 's/^/#   the largest other stack: /'
  else
    fail "$1" "$m of the script's $n ms show the chain (want >= 90%; all: $all ms)"
    echo "$t" | sort -k2 -nr | head -8 | cut -c1-400 | sed 's/^/#   /'
  fi
}

# Started before the daemon: 8.2 on the host, 8.4 in the root.
cp "$SRC/chain.php" "$B/rtphp_before82.php"
php8.2 "$B/rtphp_before82.php" 120 >/dev/null &
BEFORE="$!"
cp "$SRC/chain.php" "$R$RD/rtphp_before84.php"
in_root "$R" php8.4 "$RD/rtphp_before84.php" 120 >/dev/null &
BEFORE="$BEFORE $!"
PIDS="$BEFORE"
sleep 1

PORT="$(free_port)"
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }
# The binaries' unwind tables first: at its start the daemon builds them for
# every process it finds, seconds on a busy host; the samples of a process
# before its tables are walked by frame pointer (PHP is built without) and
# stop short of the root. The share of a process started before the daemon
# is taken from then on.
t_start=$(date +%s)
for i in $(seq 1 240); do
  grep -q "/usr/bin/php8.2: unwind table" "$TMP/daemon.log" &&
    grep -q "/usr/bin/php8.4: unwind table" "$TMP/daemon.log" && break
  sleep 0.5
done
t_ready=$(( $(date +%s) + 2 ))	# from the next period on
echo "# the unwind tables of php8.2 and php8.4 ready $((t_ready - 2 - t_start)) s after the daemon's start"

cp "$SRC/chain.php" "$B/rtphp_after82.php"
php8.2 "$B/rtphp_after82.php" 12 >/dev/null &
PIDS="$PIDS $!"
cp "$SRC/chain.php" "$R$RD/rtphp_after84.php"
in_root "$R" php8.4 "$RD/rtphp_after84.php" 12 >/dev/null &
PIDS="$PIDS $!"

# fpm_stop: both pools stopped, their workers with them.
fpm_stop() {
  local i
  if [ -n "$FPM82" ]; then
    kill -TERM "$FPM82" 2>/dev/null
    for i in $(seq 1 50); do kill -0 "$FPM82" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$FPM82" 2>/dev/null
    wait "$FPM82" 2>/dev/null
  fi
  [ -n "$FPM84" ] && { kill -9 "$FPM84"; wait "$FPM84"; } 2>/dev/null
  FPM82="" FPM84=""
}

# FPM: a static pool of two workers (nobody) on a unix socket, master in the foreground.
# fpm_start DIR BIN: the pool's files in DIR (as the master sees it: PREFIX strips the root).
fpm_conf() {
  cat <<EOF
[global]
pid = $1/fpm.pid
error_log = $1/fpm.log
daemonize = no
[rtphp]
user = nobody
group = nogroup
listen = $1/fpm.sock
listen.mode = 0666
pm = static
pm.max_children = 2
EOF
}
mkdir -p "$TMP/fpm82"
chmod 755 "$TMP/fpm82"
cp "$SRC/fpmburn.php" "$TMP/fpm82/fpmburn.php"
fpm_conf "$TMP/fpm82" > "$TMP/fpm82/fpm.conf"
php-fpm8.2 -F -y "$TMP/fpm82/fpm.conf" 2>>"$TMP/fpm82/stderr" &
FPM82=$!
cp "$SRC/fpmburn.php" "$R$RD/fpmburn.php"
fpm_conf "$RD" > "$R$RD/fpm.conf"
in_root "$R" php-fpm8.4 -F -y "$RD/fpm.conf" 2>>"$TMP/fpm84.stderr" &
FPM84=$!
for i in $(seq 1 50); do
  [ -S "$TMP/fpm82/fpm.sock" ] && [ -S "$R$RD/fpm.sock" ] && break
  sleep 0.2
done
python3 "$SRC/fcgi.py" "$TMP/fpm82/fpm.sock" "$TMP/fpm82/fpmburn.php" 6 2 > "$TMP/fcgi82.out" &
C82=$!
python3 "$SRC/fcgi.py" "$R$RD/fpm.sock" "$RD/fpmburn.php" 6 2 > "$TMP/fcgi84.out" &
C84=$!
wait $C82 $C84
for p in $PIDS; do [[ " $BEFORE " == *" $p "* ]] || wait "$p"; done
{ for p in $BEFORE; do kill -9 "$p"; done; wait $BEFORE; } 2>/dev/null
PIDS=""
sleep 3
since="last-$(( $(date +%s) - t_ready ))s"

chain_share "rt-php-82-before" rtphp_before82.php "$since"
chain_share "rt-php-82-after" rtphp_after82.php "$(found_range rtphp_after82.php "PHP [0-9.]+ in")"
chain_share "rt-php-84-before" rtphp_before84.php "$since"
chain_share "rt-php-84-after" rtphp_after84.php "$(found_range rtphp_after84.php "PHP [0-9.]+ in")"
# Each frame with its file and line: the callers' at their calls, spin's in its body.
bad=""
for s in rtphp_after82 rtphp_after84; do
  r="$(raw "$s.php")"
  for want in "[{]main[}] /[^ ]*/$s\.php:29" "outer /[^ ]*/$s\.php:26" "middle /[^ ]*/$s\.php:21" \
      "Worker::spin /[^ ]*/$s\.php:(9|1[0-3])"; do
    echo "$r" | grep -Eq " $want( |$)" || bad="$bad $s:/$want/"
  done
done
if [ -z "$bad" ]; then ok "rt-php-lines"
else fail "rt-php-lines" "missing:$bad"; raw rtphp_after84.php | grep -E "main|outer|middle|spin" | head -5 | sed 's/^/#   /'; fi

# fpm_check NAME OUT: the workers' samples in the script show its functions.
fpm_check() {
  local svc t m n req
  read -r req okc _ < "$2"
  svc="$(grep -l "fpm_handler" "$TMP"/mnt/*/cpu/all/all/folded.txt 2>/dev/null | while read -r f; do
    d="${f%/cpu/all/all/folded.txt}"; d="${d##*/}"; [[ "$d" == *"$3"* ]] && echo "$d"; done | head -1)"
  t="$( [ -n "$svc" ] && folded "$svc")"
  read -r m n <<<"$(echo "$t" | fshare "(^|;)[{]main[}];fpm_handler;fpm_leaf(;|$)" "(^|;)[{]main[}](;|$)")"
  if [ "${okc:-0}" -gt 0 ] && [ "$n" -gt 0 ] && [ $((m * 100)) -ge $((80 * n)) ]; then
    ok "$1 ($okc of $req requests answered; service $svc: $((m * 100 / n))% of $n ms in the script show {main};fpm_handler;fpm_leaf)"
  else
    fail "$1" "${okc:-0} of ${req:-0} requests answered; service '$svc': $m of $n ms"
    echo "$t" | sort -k2 -nr | head -5 | cut -c1-300 | sed 's/^/#   /'
    tail -3 "$TMP/fpm82/fpm.log" "$R$RD/fpm.log" 2>/dev/null | sed 's/^/#   /'
  fi
}
fpm_check "rt-php-fpm-82" "$TMP/fcgi82.out" 8.2
fpm_check "rt-php-fpm-84" "$TMP/fcgi84.out" 8.4
# (unshare ignores SIGTERM: the root's FPM goes with its namespace, by SIGKILL.)
fpm_stop

# A hostile "php8.2" of nobody: crafted executor structures, 8 s.
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
if cc -O1 -rdynamic -fno-omit-frame-pointer -o "$B/php8.2" "$ROOT/tests/ebpf/phphostile.c" 2>"$TMP/cc.log"; then
  hz=$(getconf CLK_TCK)
  rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$PF_PID/status")
  "${AS[@]}" "$B/php8.2" rtphp_hostile.php 10 >/dev/null &
  HPID=$!
  PIDS="$HPID"
  sleep 2
  t0=$(awk '{ print $14 + $15 }' "/proc/$PF_PID/stat")
  sleep 8
  t1=$(awk '{ print $14 + $15 }' "/proc/$PF_PID/stat")
  rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$PF_PID/status")
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$PF_PID/status")
  wait $HPID
  PIDS=""
  sleep 3
  cpu_ms=$(( (t1 - t0) * 1000 / hz ))
  grow=$(( (rss1 - rss0) / 1024 ))
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")
  m="$(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^profilefs_ebpf_bpf_events_total\{what="php_(stacks|read_errors)"' | sed 's/.*what="//; s/"}//' | tr '\n' ' ')"
  t="$(folded rtphp_hostile.php)"
  if kill -0 "$PF_PID" 2>/dev/null && [ "$code" = 200 ] && [ -n "$t" ] && [ "$cpu_ms" -lt 4000 ] &&
      [ "$grow" -lt 256 ]; then
    ok "rt-php-hostile (daemon CPU over 8 s: $cpu_ms ms; RSS growth $grow MiB, peak $((hwm / 1024)) MiB; /healthz $code; $m)"
  else
    fail "rt-php-hostile" "alive $(kill -0 "$PF_PID" 2>/dev/null && echo yes || echo no), /healthz $code, CPU $cpu_ms ms, RSS growth $grow MiB; services: $(ls "$TMP/mnt" | tr '\n' ' ')"
  fi
  # Its names: the 2^40-byte one and the 16 MiB path cut, none over 4 KiB.
  cut="$(echo "$t" | tr ';' '\n' | grep -c 'nnnn…\[cut\]')"
  long="$(echo "$t" | tr ';' '\n' | awk 'length($0) > 4096' | wc -l)"
  p="$(raw rtphp_hostile.php | grep -oE 'ffff+…\[cut\]' | head -1)"
  if [ "$cut" -gt 0 ] && [ "$long" -eq 0 ] && [ -n "$p" ] && [ "${#p}" -le 1100 ]; then
    ok "rt-php-hostile-cut (a 2^40-byte name shown in $(echo "$t" | tr ';' '\n' | grep -m1 'nnnn…\[cut\]' | wc -c) bytes, a 16 MiB path in ${#p})"
  else
    fail "rt-php-hostile-cut" "$cut cut names, $long frames over 4 KiB, path '${p:0:40}' (${#p})"
    echo "$t" | cut -c1-200 | sort -k2 -nr | head -5 | sed 's/^/#   /'
  fi
else
  echo "ok - rt-php-hostile # SKIP no C compiler: $(head -1 "$TMP/cc.log")"
  echo "ok - rt-php-hostile-cut # SKIP no C compiler"
fi
# A version the daemon does not know (the same crafted process saying 8.1),
# two processes of it: refused, told once, its frames native.
if cc -O1 -rdynamic -fno-omit-frame-pointer -DPHP_VER='"8.1.99"' -o "$B/php8.1" \
    "$ROOT/tests/ebpf/phphostile.c" 2>"$TMP/cc.log"; then
  for i in 1 2; do "${AS[@]}" "$B/php8.1" rtphp_old.php 2 >/dev/null; done
  sleep 3
  n=$(grep -c "ebpf: PHP 8.1 in .*php8.1 .*a version whose frames are not known" "$TMP/daemon.log")
  t="$(folded rtphp_old.php)"
  named=$(echo "$t" | grep -c "churn_\|nnnn")
  if [ "$n" -eq 1 ] && [ -n "$t" ] && [ "$named" -eq 0 ]; then
    ok "rt-php-unknown-version (told once for two processes: $(grep -m1 -o "ebpf: PHP 8.1 in .*" "$TMP/daemon.log" | cut -c1-140))"
  else
    fail "rt-php-unknown-version" "told $n times, $named stacks with PHP frames, profile ${#t} bytes"
  fi
else
  echo "ok - rt-php-unknown-version # SKIP no C compiler"
fi
if kill -0 "$PF_PID" 2>/dev/null; then ok "rt-php-daemon"; else fail "rt-php-daemon" "the daemon died"; fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "rt-php-clean-stop" "daemon exited with $PF_RC"
pf_done
