#!/usr/bin/env bash
# Go pprof labels on eBPF samples across Go versions, with no flag:
# tests/ebpf/golabels (standard library only) built with Debian 13's Go 1.24
# in its runtime root (runtime/pprof's labelMap a struct holding a sorted
# []label slice) and run there (its own mount and PID namespaces, as a
# container), once with DWARF and once without (-ldflags="-s -w": the
# offsets of its Go version), and with the host's Go 1.19 (labelMap a
# map[string]string). Each runs CPU work under two label sets and measures
# the thread CPU time of each; the checkout share of the samples its label
# series got must be within 10% of the share it measured. Prints both.
# Needs root, a kernel with BTF and the trixie root (scripts/runtime-roots.sh).
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../pprof-sums.sh"

NAMES="rt-golabels-1.24-build rt-golabels-1.24 rt-golabels-1.24-listed rt-golabels-1.24-stripped rt-golabels-1.19 rt-golabels-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
[ "$(uname -m)" = x86_64 ] || skip_all "Go labels are read on x86-64 only"
need_root trixie
R="$(roots_dir)/trixie"
GO124=/usr/lib/go-1.24/bin/go

pf_setup
W="rtgl.$$"
mkdir -p "$R/tmp/$W"
cleanup_root() { rm -rf "${R:?}/tmp/$W"; pf_cleanup; }
trap cleanup_root EXIT
cp -r "$ROOT/tests/ebpf/golabels/." "$R/tmp/$W/"
# Go 1.24 in its root: no module downloads (standard library only), its own toolchain.
if (in_root "$R" /bin/sh -c "cd /tmp/$W && HOME=/tmp/$W GOCACHE=/tmp/$W/cache GOTOOLCHAIN=local \
    GOPROXY=off GOFLAGS=-mod=mod $GO124 build -o efp_go124 . && HOME=/tmp/$W \
    GOCACHE=/tmp/$W/cache GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod \
    $GO124 build -ldflags='-s -w' -o efp_go124_strip .") >"$TMP/build.log" 2>&1; then
  ok "rt-golabels-1.24-build ($(in_root "$R" "$GO124" version "/tmp/$W/efp_go124" 2>/dev/null))"
else
  fail "rt-golabels-1.24-build" "$(tail -5 "$TMP/build.log")"; pf_done; exit 1
fi
mkdir -p "$TMP/bin"
(cd "$ROOT/tests/ebpf/golabels" && GOCACHE="${GOCACHE:-$TMP/gocache}" go build -o "$TMP/bin/efp_go119" .) ||
  fail "rt-golabels-1.19 build"

PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "rt-golabels daemon start"; pf_done; exit 1; }

# The three at once (each measures its own thread's CPU time, so sharing the
# CPUs changes no share): 6 s of CPU each, 150 s at most on a busy host.
in_root "$R" "/tmp/$W/efp_go124" split 6 150 >"$TMP/out.go124" 2>&1 &
P1=$!
in_root "$R" "/tmp/$W/efp_go124_strip" split 6 150 >"$TMP/out.go124_strip" 2>&1 &
P2=$!
"$TMP/bin/efp_go119" split 6 150 >"$TMP/out.go119" 2>&1 &
P3=$!
wait $P1 $P2 $P3
sleep 5	# two periods more: the last samples are stored

# cpu_of SERVICE SELECTOR: cpu/nanoseconds of a selector's merged profile.
cpu_of() {
  local s
  s="$(pprof_sums "$TMP/mnt/$1/cpu/$2/all/merged.pb.gz")"
  [[ "$s" =~ cpu/nanoseconds=([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}
# split NAME SERVICE: the checkout share sampled against the share measured.
split() {
  local out c s res
  out="$(cat "$TMP/out.${2#efp_}")"
  c="$(cpu_of "$2" handler=checkout)"
  s="$(cpu_of "$2" handler=search)"
  res="$(awk -v c="$c" -v s="$s" -v out="$out" 'BEGIN {
    if (!match(out, /checkout_ns=[0-9]+ search_ns=[0-9]+/)) { print "no output: " out; exit }
    split(substr(out, RSTART, RLENGTH), kv, /[ =]/); mc = kv[2]; ms = kv[4]
    if (c + s == 0 || mc + ms == 0) { print "no samples with labels"; exit }
    got = c / (c + s); want = mc / (mc + ms); d = got - want; if (d < 0) d = -d
    printf "%s checkout share %.3f sampled, %.3f measured (%d + %d ms sampled)\n", \
      (d <= 0.1 * want ? "ok" : "off"), got, want, c / 1e6, s / 1e6 }')"
  if [[ "$res" == ok* ]]; then ok "$1 (${res#ok })"; else fail "$1" "$res"; fi
}
split rt-golabels-1.24 efp_go124
sets="$(ls "$TMP/mnt/efp_go124/cpu" 2>/dev/null | tr '\n' ' ')"
if [[ " $sets" =~ \ handler=checkout,host=[^\ ,]*,tier=gold\  ]] &&
   [[ " $sets" =~ \ handler=search,host=[^\ ,]*,tier=free\  ]]; then
  ok "rt-golabels-1.24-listed"
else
  fail "rt-golabels-1.24-listed" "ls efp_go124/cpu: $sets"
fi
split rt-golabels-1.24-stripped efp_go124_strip
split rt-golabels-1.19 efp_go119
if kill -0 "$PF_PID" 2>/dev/null; then ok "rt-golabels-daemon"; else fail "rt-golabels-daemon" "the daemon died"; fi
grep -E "Go [0-9]+\.[0-9]+" "$TMP/daemon.log" | sed 's/^/# /' | head -5
pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "rt-golabels-clean-stop" "daemon exited with $PF_RC"
pf_done
