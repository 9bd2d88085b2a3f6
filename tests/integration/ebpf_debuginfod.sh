#!/usr/bin/env bash
# Symbols of stripped binaries under the eBPF sampler: a program built with
# -g and stripped, its debug file served by a real debuginfod server
# (`debuginfod -F DIR`, reached on 127.0.0.1) that the daemon fetches in the
# background (its frames are named once the file is in the cache under the
# data directory); with the server down, sampling goes on, the failure is
# said once in the log and counted in /metrics. A copy carrying only
# MiniDebugInfo (.gnu_debugdata, made as Fedora does with nm, objcopy and
# xz) names its functions; a copy with nothing shows `name+0xOFFSET` frames
# and its build id in the mapping of `go tool pprof -raw`; exported functions
# of a stripped binary are named from .dynsym. A planted link in the cache is
# never followed; a smaller cache evicts the oldest files; as --user nobody
# the fetched files are the data directory owner's.
# Needs root, a kernel with BTF and Debian's debuginfod; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="dbgi-server dbgi-fetched dbgi-cache-file dbgi-metrics-found dbgi-mini dbgi-bare-offset dbgi-bare-buildid dbgi-down-sampling dbgi-down-log-once dbgi-down-metrics dbgi-bad-flag dbgi-no-links dbgi-evicted dbgi-user-fetched dbgi-user-owner dbgi-dynsym"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v debuginfod >/dev/null || skip_all "debuginfod not installed (scripts/install-deps.sh --test)"
command -v go >/dev/null || skip_all "go not installed"
command -v cc >/dev/null || skip_all "no C compiler"
unset DEBUGINFOD_URLS

pf_setup
SRC="$ROOT/tests/ebpf"
B="$TMP/bin"
SRV="$TMP/served"
mkdir -p "$B" "$SRV"

# dbg_build NAME HOT OUTER [CFLAGS...]: $B/NAME built with -g, its debug file in
# $B/NAME.debug, stripped.
dbg_build() {
  local n="$1" h="$2" o="$3"
  shift 3
  cc -O1 -fno-omit-frame-pointer -g -Wl,--build-id -DHOT="$h" -DOUTER="$o" "$@" \
    -o "$B/$n" "$SRC/dbgspin.c" &&
    objcopy --only-keep-debug "$B/$n" "$B/$n.debug" &&
    strip --strip-all "$B/$n"
}
# build_id FILE: the GNU build id in hex.
build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }

dbg_build dbgi_served served_hot_zebra served_outer_zebra &&
  dbg_build dbgi_down down_hot_yak down_outer_yak &&
  dbg_build dbgi_down2 down2_hot_yak down2_outer_yak &&
  dbg_build dbgi_bare bare_hot_okapi bare_outer_okapi &&
  dbg_build dbgi_mini mini_hot_quokka mini_outer_quokka &&
  dbg_build dbgi_dyn dyn_hot_ibex dyn_outer_ibex -DEXPORTED -rdynamic ||
  { fail "build test programs"; pf_done; exit 1; }
# MiniDebugInfo as Fedora makes it: the function symbols .dynsym lacks, in an
# xz-compressed ELF added as .gnu_debugdata.
(cd "$B" &&
  nm -D dbgi_mini --format=posix --defined-only | awk '{ print $1 }' | sort >dynsyms &&
  nm dbgi_mini.debug --format=posix --defined-only |
    awk '$2 == "T" || $2 == "t" { print $1 }' | sort >funcsyms &&
  comm -13 dynsyms funcsyms >keep_symbols &&
  objcopy -S --remove-section .gdb_index --remove-section .comment \
    --keep-symbols=keep_symbols dbgi_mini.debug mini_debuginfo &&
  xz -f mini_debuginfo &&
  objcopy --add-section .gnu_debugdata=mini_debuginfo.xz dbgi_mini) ||
  { fail "build the MiniDebugInfo program"; pf_done; exit 1; }
cp "$B/dbgi_served.debug" "$B/dbgi_down.debug" "$B/dbgi_down2.debug" "$SRV/"
ID_SERVED="$(build_id "$B/dbgi_served")"
ID_BARE="$(build_id "$B/dbgi_bare")"

# A real debuginfod over the debug files (its own database; never upstream).
DPORT=$((20000 + RANDOM % 20000))
start_server() {
  debuginfod -F -p "$DPORT" -d "$TMP/debuginfod.sqlite" -t 0 -g 0 -c 1 "$SRV" \
    >>"$TMP/debuginfod.log" 2>&1 &
  DPID=$!
}
start_server
stop_server() { [ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null; DPID=; }
trap 'stop_server; pf_cleanup' EXIT
URL="http://127.0.0.1:$DPORT"
for i in $(seq 1 120); do
  code="$(curl -s -o /dev/null -w '%{http_code}' "$URL/buildid/$ID_SERVED/debuginfo")"
  [ "$code" = 200 ] && break
  sleep 0.5
done
if [ "$code" = 200 ]; then ok "dbgi-server (debuginfod serves $ID_SERVED)"
else fail "dbgi-server" "debuginfod never served the file (last HTTP $code)"; tail -5 "$TMP/debuginfod.log" | sed 's/^/#   /'; pf_done; exit 1; fi

# A bad --debuginfod is refused at start.
if out="$("$BIN" serve --data "$TMP/bad" --debuginfod "ftp://x" "$TMP/badmnt" 2>&1)"; then
  fail "dbgi-bad-flag" "started"
elif echo "$out" | grep -q "http:// or https://"; then ok "dbgi-bad-flag"
else fail "dbgi-bad-flag" "$out"; fi

HPORT=$((20000 + RANDOM % 20000))
[ "$HPORT" = "$DPORT" ] && HPORT=$((HPORT + 1))
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$HPORT" --debuginfod "$URL" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }

# traces SERVICE: go tool pprof -traces of the service's merged profile.
traces() {
  go tool pprof -sample_index=samples -traces "$TMP/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null
}
# Each program spins for 2.5 s at a time until its frames carry the name
# (at most 40 s): the first samples come before the file is fetched.
named=""
for i in $(seq 1 16); do
  "$B/dbgi_served" 2500
  if traces dbgi_served | grep -q served_hot_zebra; then named=1; break; fi
  sleep 1
done
if [ -n "$named" ] && traces dbgi_served | grep -A3 served_hot_zebra | grep -q served_outer_zebra; then
  ok "dbgi-fetched (served_hot_zebra under served_outer_zebra after $i runs)"
else
  fail "dbgi-fetched" "no served_hot_zebra frame"; traces dbgi_served | head -30 | sed 's/^/#   /'
  grep -i debuginfod "$TMP/daemon.log" | tail -5 | sed 's/^/#   /'
fi
f="$TMP/data/debuginfo/$ID_SERVED.debug"
if [ -f "$f" ] && [ ! -L "$f" ] && cmp -s "$f" "$B/dbgi_served.debug"; then ok "dbgi-cache-file"
else fail "dbgi-cache-file" "$(ls -la "$TMP/data/debuginfo" 2>&1)"; fi
m="$(curl -s "http://127.0.0.1:$HPORT/metrics")"
if echo "$m" | grep -Eq '^profilefs_ebpf_debuginfod_requests_total\{result="found"\} [1-9]'; then
  ok "dbgi-metrics-found"
else fail "dbgi-metrics-found" "$(echo "$m" | grep debuginfod)"; fi

# Links planted in the cache are never followed: one in place of the bare
# program's debug file (its real debug file: followed, it would name okapi
# functions), one in place of the MiniDebugInfo program's download.
ln -s "$B/dbgi_bare.debug" "$TMP/data/debuginfo/$ID_BARE.debug"
echo keep >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/data/debuginfo/.tmp-$(build_id "$B/dbgi_mini")"

# MiniDebugInfo only: named from .gnu_debugdata (not served: 404 from debuginfod).
"$B/dbgi_mini" 3000
"$B/dbgi_bare" 3000
"$B/dbgi_dyn" 3000
sleep 3	# one more period, so the last samples are stored
t="$(traces dbgi_mini)"
if echo "$t" | grep -q mini_hot_quokka && echo "$t" | grep -q mini_outer_quokka; then ok "dbgi-mini"
else fail "dbgi-mini" "no mini_hot_quokka frame"; echo "$t" | head -20 | sed 's/^/#   /'; fi

# Exported functions of a stripped binary: named from .dynsym.
t="$(traces dbgi_dyn)"
if echo "$t" | grep -q dyn_hot_ibex && echo "$t" | grep -q dyn_outer_ibex; then ok "dbgi-dynsym"
else fail "dbgi-dynsym" "no dyn_hot_ibex frame"; echo "$t" | head -20 | sed 's/^/#   /'; fi

# Nothing at all: frames are the file and offset, the mapping has the build id.
top="$(cat "$TMP/mnt/dbgi_bare/cpu/all/all/folded.txt" 2>/dev/null)"
if echo "$top" | grep -Eq 'dbgi_bare\+0x[0-9a-f]+' && ! echo "$top" | grep -q okapi; then
  ok "dbgi-bare-offset"
else fail "dbgi-bare-offset" "$(echo "$top" | head -5)"; fi
raw="$(go tool pprof -raw "$TMP/mnt/dbgi_bare/cpu/all/all/merged.pb.gz" 2>/dev/null)"
if echo "$raw" | sed -n '/^Mappings/,$p' | grep "dbgi_bare" | grep -q "$ID_BARE"; then
  ok "dbgi-bare-buildid"
else fail "dbgi-bare-buildid" "$(echo "$raw" | sed -n '/^Mappings/,$p' | head -5)"; fi

if [ -L "$TMP/data/debuginfo/$ID_BARE.debug" ] && [ "$(cat "$TMP/victim")" = keep ] &&
  ! echo "$top" | grep -q okapi; then
  ok "dbgi-no-links"
else fail "dbgi-no-links" "$(ls -la "$TMP/data/debuginfo" | grep -v none)"; fi

# The server goes down: sampling goes on, the failure is said once and counted.
stop_server
"$B/dbgi_down" 3000
"$B/dbgi_down2" 3000
sleep 3
t="$(traces dbgi_down)"
if echo "$t" | grep -Eq 'dbgi_down\+0x|^ *[0-9]'; then ok "dbgi-down-sampling"
else fail "dbgi-down-sampling" "no samples of dbgi_down"; fi
n="$(grep -c "debuginfod $URL: .*stay unnamed" "$TMP/daemon.log")"
check_eq "dbgi-down-log-once" "$n" 1
m="$(curl -s "http://127.0.0.1:$HPORT/metrics")"
if echo "$m" | grep -Eq '^profilefs_ebpf_debuginfod_failures_total [1-9]' &&
  echo "$m" | grep -Eq '^profilefs_ebpf_debuginfod_up 0'; then ok "dbgi-down-metrics"
else fail "dbgi-down-metrics" "$(echo "$m" | grep debuginfod)"; fi
if ! kill -0 "$PF_PID" 2>/dev/null; then fail "daemon alive" "it exited"; fi

pf_stop

# A smaller cache: the oldest files go at start until it fits.
pf_start --ebpf --ebpf-min-samples 0 --debuginfod "$URL" --debuginfod-cache 4K --http "127.0.0.1:$HPORT" ||
  { fail "ebpf daemon restart"; pf_done; exit 1; }
m="$(curl -s "http://127.0.0.1:$HPORT/metrics")"
if [ ! -e "$TMP/data/debuginfo/$ID_SERVED.debug" ] &&
  echo "$m" | grep -Eq '^profilefs_ebpf_debuginfod_evictions_total [1-9]'; then ok "dbgi-evicted"
else fail "dbgi-evicted" "$(ls -la "$TMP/data/debuginfo" | grep -v none; echo "$m" | grep debuginfod)"; fi
pf_stop

# As --user nobody: the cache is the data directory's owner's and fetches run
# unprivileged (ThreadSanitizer's thread keeps root: --user refuses there).
if ldd "$BIN" 2>/dev/null | grep -q libtsan || ! id nobody >/dev/null 2>&1; then
  echo "ok - dbgi-user-fetched # SKIP ThreadSanitizer build or no user nobody"
  echo "ok - dbgi-user-owner # SKIP ThreadSanitizer build or no user nobody"
else
  start_server
  for i in $(seq 1 120); do
    code="$(curl -s -o /dev/null -w '%{http_code}' "$URL/buildid/$(build_id "$B/dbgi_down")/debuginfo")"
    [ "$code" = 200 ] && break
    sleep 0.5
  done
  rm -rf "$TMP/data"
  chmod 711 "$TMP"
  pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --user nobody --debuginfod "$URL" ||
    { fail "ebpf daemon start as nobody"; pf_done; exit 1; }
  named=""
  for i in $(seq 1 16); do
    "$B/dbgi_down" 2500
    if traces dbgi_down | grep -q down_hot_yak; then named=1; break; fi
    sleep 1
  done
  if [ -n "$named" ]; then ok "dbgi-user-fetched (after $i runs)"
  else fail "dbgi-user-fetched" "no down_hot_yak frame"; grep -i debuginfod "$TMP/daemon.log" | tail -5 | sed 's/^/#   /'; fi
  f="$TMP/data/debuginfo/$(build_id "$B/dbgi_down").debug"
  check_eq "dbgi-user-owner" "$(stat -c %U "$f" 2>&1)" nobody
  pf_stop
fi
pf_done
