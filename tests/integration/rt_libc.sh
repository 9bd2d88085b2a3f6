#!/usr/bin/env bash
# Container libc frames: a C program with threads (tests/ebpf/libcthreads.c)
# run in the trixie root, whose libc has no debug package (its thread and
# process entry functions are not exported, its debug files would be looked
# for in the root only). Without any debug file, every stack still starts
# at a named root: __clone3;start_thread for the threads,
# _start;__libc_start_main;__libc_start_call_main for the main thread (known
# from libc's own code, symbolize.c), and libc's other hidden functions are
# named by where they start, libc.so.6+0xSTART (one name per function: the
# frames between qsort_r and the comparison); the share of samples starting
# at a named root is printed and must be >= 90%. Then with a real debuginfod
# (Debian's) serving the libc6-dbg package of the root's libc (downloaded
# once with the root's apt into /var/cache/profilefs/debs, never installed
# in the root), those frames get their debug names, fetched by build id.
# Last, the daemon's own debug file by build id: run in a mount namespace
# of its own whose /usr/lib/debug holds, under the root's libc build id, first
# the host's libc debug file (another build: not used, the frames keep their
# FDE names), then the right one (its names).
# Needs root, a kernel with BTF, a C compiler and the trixie root.
set -u
. "$(dirname "$0")/../lib.sh"

# Part 3's inside (this script run again in a mount namespace of its own):
# DBG_FILE at /usr/lib/debug/.build-id/ under LIBC_ID; prints what
# qsort_r calls in the program's stacks.
if [ "${RT_LIBC_HOSTDBG:-}" = 1 ]; then
  mount -t tmpfs tmpfs /usr/lib/debug || exit 1
  mkdir -p "/usr/lib/debug/.build-id/${LIBC_ID:0:2}" &&
    cp "$DBG_FILE" "/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug" || exit 1
  pf_setup
  pf_start --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --debuginfod off || exit 1
  (in_root "$R" "$IN/libcthreads" 6)
  for i in $(seq 1 20); do
    grep -q 'qsort_r;' "$TMP/mnt/libcthreads/cpu/all/all/folded.txt" 2>/dev/null && break
    sleep 0.5
  done
  sleep 2
  grep -o 'qsort_r;[^; ]*' "$TMP/mnt/libcthreads/cpu/all/all/folded.txt" | sort -u |
    sed 's/^qsort_r;//' | tr '\n' ' '
  pf_stop
  exit 0
fi

NAMES="rt-libc-roots rt-libc-fde-names rt-libc-debuginfod rt-libc-host-debug rt-libc-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v cc >/dev/null || skip_all "no C compiler"
need_root trixie
R="$(roots_dir)/trixie"
unset DEBUGINFOD_URLS

pf_setup
IN="/tmp/rtlibc.$$"		# inside the root
mkdir -p "$R$IN"
DPID=
stop_server() { [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null; DPID=; }
cleanup_all() { stop_server; rm -rf "${R:?}$IN"; pf_cleanup; }
trap cleanup_all EXIT
cc -O2 -fomit-frame-pointer -pthread -o "$R$IN/libcthreads" "$ROOT/tests/ebpf/libcthreads.c" ||
  { fail "build libcthreads.c"; pf_done; exit 1; }
LIBC="$(readlink -f "$R/usr/lib/x86_64-linux-gnu/libc.so.6")"
LIBC_ID="$(readelf -n "$LIBC" | awk '/Build ID:/ { print $3; exit }')"

# counts FOLDED: "threads main total" samples (of folded lines on stdin)
# starting at the threads' or the main thread's named root.
counts() {
  awk '{ v = $NF; t += v
    if ($0 ~ /^__clone3;start_thread;worker_(spin|sort);/) th += v
    else if ($0 ~ /^_start;__libc_start_main;__libc_start_call_main;main;/) mn += v }
    END { printf "%d %d %d\n", th / 1e6, mn / 1e6, t / 1e6 }'
}
# below_qsort: the distinct names of the frame qsort_r calls (folded on stdin).
below_qsort() { grep -o 'qsort_r;[^; ]*' | sort -u | sed 's/^qsort_r;//' | tr '\n' ' '; }

# 1. No debug file anywhere: the window is the run's last 10 s (the
# daemon's look at a new process's files apart).
PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" \
  --debuginfod off || { fail "ebpf daemon start"; pf_done; exit 1; }
in_root "$R" "$IN/libcthreads" 16 &
P=$!
sleep 15
cp "$TMP/mnt/libcthreads/cpu/all/last-10s/folded.txt" "$TMP/win.txt" 2>/dev/null
wait $P
read -r th mn tot <<<"$(counts <"$TMP/win.txt")"
pct=$(awk -v a=$((th + mn)) -v t="$tot" 'BEGIN { printf "%.1f", t ? 100 * a / t : 0 }')
echo "# no debug file: $pct% of $tot ms start at a named root ($th ms __clone3;start_thread, $mn ms _start;__libc_start_main;__libc_start_call_main)"
if [ "$tot" -gt 0 ] && [ $(((th + mn) * 100)) -ge $((tot * 90)) ] && [ "$th" -gt 0 ] && [ "$mn" -gt 0 ]; then
  ok "rt-libc-roots ($pct% of $tot ms)"
else
  fail "rt-libc-roots" "$pct% of $tot ms"; sort -k2 -nr "$TMP/win.txt" | head -6 | cut -c1-250 | sed 's/^/#   /'
fi
b="$(below_qsort <"$TMP/win.txt")"
bare=$(grep -c '\[libc\.so\.6\]' "$TMP/win.txt")
echo "# qsort_r calls: $b"
# qsort_r's sort is a hidden function (msort_with_tmp), named once by its
# FDE's start whatever address a sample is at: a name per address would give
# dozens over the run's samples. It may also be caught in another callee,
# hidden (memmove's variant, named the same way) or exported (free of its
# buffer, its own name): at most 3 FDE names, no bare [libc.so.6].
nfde=$(echo "$b" | tr ' ' '\n' | grep -Ec '^libc\.so\.6\+0x[0-9a-f]+$')
if [ "$nfde" -ge 1 ] && [ "$nfde" -le 3 ] && ! echo "$b" | grep -q '\[' && [ "$bare" -eq 0 ]; then
  ok "rt-libc-fde-names (qsort_r's callees: $b; each hidden one named once)"
else fail "rt-libc-fde-names" "below qsort_r: '$b'; $bare stacks with [libc.so.6]"; fi
grep -m1 "$LIBC_ID: .* named from their FDEs" "$TMP/daemon.log" | sed 's/.*ebpf: /# log: /'
pf_stop

# 2. Debian's debug package of that libc, served by debuginfod: its names.
DEBS=/var/cache/profilefs/debs
deb="$(ls "$DEBS"/libc6-dbg_*.deb 2>/dev/null | head -1)"
if [ -z "$deb" ] || ! dpkg-deb -c "$deb" 2>/dev/null | grep -q "${LIBC_ID:2}.debug"; then
  # Downloaded by the root's own apt into a directory of ours bound over its /mnt
  # (caches there too): nothing is installed or written in the root.
  mkdir -p "$DEBS" "$TMP/dl/cache/archives/partial" && chmod -R a+rwx "$TMP/dl"
  unshare --mount --propagation private sh -c "mount --bind '$TMP/dl' '$R/mnt' &&
    chroot '$R' sh -c 'cd /mnt && apt-get -q -o Dir::Cache=/mnt/cache -o APT::Sandbox::User=root download libc6-dbg'" \
    >"$TMP/apt.log" 2>&1
  f="$(ls "$TMP"/dl/libc6-dbg_*.deb 2>/dev/null | head -1)"
  [ -n "$f" ] && rm -f "$DEBS"/libc6-dbg_*.deb && cp "$f" "$DEBS/" && deb="$DEBS/$(basename "$f")"
fi
if [ -z "$deb" ] || ! command -v debuginfod >/dev/null; then
  echo "ok - rt-libc-host-debug # SKIP no libc6-dbg package"
  echo "ok - rt-libc-debuginfod # SKIP no libc6-dbg package ($(tail -1 "$TMP/apt.log" 2>/dev/null)) or no debuginfod"
else
  mkdir -p "$TMP/srv" && dpkg-deb -x "$deb" "$TMP/dbg" &&
    cp "$TMP/dbg/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug" "$TMP/srv/"
  DPORT=$(free_port)
  debuginfod -F -p "$DPORT" -d "$TMP/debuginfod.sqlite" -t 0 -g 0 -c 1 "$TMP/srv" \
    >>"$TMP/debuginfod.log" 2>&1 &
  DPID=$!
  URL="http://127.0.0.1:$DPORT"
  for i in $(seq 1 120); do
    code="$(curl -s -o /dev/null -w '%{http_code}' "$URL/buildid/$LIBC_ID/debuginfo")"
    [ "$code" = 200 ] && break
    sleep 0.5
  done
  rm -rf "$TMP/data"
  pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --debuginfod "$URL" ||
    { fail "ebpf daemon start"; pf_done; exit 1; }
  # Runs of 4 s until the fetched file names qsort_r's callee (at most 12).
  b=""
  for i in $(seq 1 12); do
    (in_root "$R" "$IN/libcthreads" 4)
    sleep 2
    b="$(below_qsort <"$TMP/mnt/libcthreads/cpu/all/last-5s/folded.txt" 2>/dev/null)"
    [ -n "$b" ] && ! echo "$b" | grep -q '+0x' && break
  done
  sleep 2
  cp "$TMP/mnt/libcthreads/cpu/all/all/folded.txt" "$TMP/all2.txt" 2>/dev/null
  # The stacks named from the debug file start at the same roots.
  read -r th mn tot <<<"$(grep -E 'msort|qsort_r;[a-z_]' "$TMP/all2.txt" | counts)"
  got=$(grep -c "build id $LIBC_ID: .* fetched debug file" "$TMP/daemon.log")
  echo "# debuginfod (HTTP $code for $LIBC_ID): qsort_r calls: $b; of the $tot ms under them, $th ms start at __clone3;start_thread"
  if [ -n "$b" ] && ! echo "$b" | grep -q '+0x' && [ "$got" -ge 1 ] && [ "$tot" -gt 0 ] &&
    [ $((th * 100)) -ge $((tot * 90)) ]; then
    ok "rt-libc-debuginfod (qsort_r's callee $b from the fetched debug file, after $i runs)"
  else
    fail "rt-libc-debuginfod" "below qsort_r: '$b'; fetched-file log lines: $got"
    grep -i debuginfod "$TMP/daemon.log" | tail -3 | sed 's/^/#   /'
  fi
  pf_stop
  stop_server
  # 3. The daemon's own debug file, valid for the container's libc only by build id.
  # Another build's debug file: the host's libc's, else any (copied: the
  # namespace's /usr/lib/debug hides the host's).
  HOST_ID="$(readelf -n "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" | awk '/Build ID:/ { print $3; exit }')"
  other="/usr/lib/debug/.build-id/${HOST_ID:0:2}/${HOST_ID:2}.debug"
  [ -f "$other" ] || other="$(ls /usr/lib/debug/.build-id/*/*.debug 2>/dev/null | head -1)"
  [ -n "$other" ] && cp "$other" "$TMP/other.debug" && other="$TMP/other.debug"
  hostdbg() {	# hostdbg FILE: what qsort_r calls with FILE as the libc's debug file
    RT_LIBC_HOSTDBG=1 R="$R" IN="$IN" LIBC_ID="$LIBC_ID" DBG_FILE="$1" PROFILEFS_BIN="$BIN" \
      timeout 120 unshare --mount --propagation private bash "$0"
  }
  right="$(hostdbg "$TMP/srv/${LIBC_ID:2}.debug")"
  if [ -n "$other" ]; then wrong="$(hostdbg "$other")"; else wrong="(no debug file on the host)"; fi
  # Another build's file names nothing: its hidden callees stay libc.so.6+0x...
  # (an exported one, free, named from the library's own symbols, may show).
  echo "# the daemon's debug file by build id: qsort_r calls $right (right build); $wrong (another build's file under that name)"
  if [ -n "$right" ] && ! echo "$right" | grep -q '+0x' &&
    { [ -z "$other" ] || { echo "$wrong" | grep -Eq 'libc\.so\.6\+0x[0-9a-f]+' &&
      ! echo "$wrong" | grep -q 'msort'; }; }; then
    ok "rt-libc-host-debug ($right; another build's file refused)"
  else fail "rt-libc-host-debug" "right build: '$right'; another build: '$wrong'"; fi
fi
if [ "${PF_RC:-1}" -eq 0 ]; then ok "rt-libc-daemon"; else fail "rt-libc-daemon" "daemon exited with ${PF_RC:-?}"; fi
pf_done
