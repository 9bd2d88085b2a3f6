#!/usr/bin/env bash
# Go pprof labels on eBPF samples (serve --ebpf): tests/ebpf/golabels, a Go
# program (standard library only) that runs CPU work under two label sets
# with pprof.Do, 3:1, and measures the thread CPU time of each. Its eBPF CPU
# profile, read through the mount, must have a label set per Go label set
# (with the host label), the tree's k=v selectors must split its CPU time in
# the proportion the program measured (within 10%), Prometheus matchers
# (=~, !~) must select the same series, and go tool pprof -tags must show the
# labels as sample labels. The same for a copy built without DWARF or
# symbols (-ldflags="-s -w": the offsets of its Go version), for one linked
# with libc through cgo (g in the C library's TLS block), and for one started
# before the daemon. A run under 64
# label sets, each with a value too long to keep, makes at most the bounded
# number of series, the rest going to the process's plain series with its
# labels as sample labels, and the long pair left out. Off-CPU waits made
# under the two label sets in the same place (a daemon with --ebpf-offcpu,
# waits added up in the kernel) are kept apart by label set: their time and
# their count split in the proportions the program measured (within 10%;
# the sets wait as long, one in four times as often). Needs root and a kernel with BTF; otherwise every
# check is skipped.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../pprof-sums.sh"

NAMES="ebpf-golabels-run ebpf-golabels-listed ebpf-golabels-split ebpf-golabels-matchers"
NAMES="$NAMES ebpf-golabels-tags ebpf-golabels-stripped ebpf-golabels-cgo ebpf-golabels-before"
NAMES="$NAMES ebpf-golabels-bounded"
NAMES="$NAMES ebpf-golabels-long ebpf-golabels-metrics ebpf-golabels-offcpu"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
[ "$(uname -m)" = x86_64 ] || skip_all "Go labels are read on x86-64 only"

pf_setup
B="$TMP/bin"
mkdir -p "$B"
(cd "$ROOT/tests/ebpf/golabels" && GOCACHE="${GOCACHE:-$TMP/gocache}" \
  go build -o "$B/efp_golabels" . && GOCACHE="${GOCACHE:-$TMP/gocache}" \
  go build -ldflags="-s -w" -o "$B/efp_golabels_strip" .) ||
  { fail "build tests/ebpf/golabels"; pf_done; exit 1; }
cp "$B/efp_golabels" "$B/efp_golabels_many"
cp "$B/efp_golabels" "$B/efp_golabels_early"
have_cgo=0
command -v cc >/dev/null && (cd "$ROOT/tests/ebpf/golabels" && CGO_ENABLED=1 \
  GOCACHE="${GOCACHE:-$TMP/gocache}" go build -tags cgotest -o "$B/efp_golabels_cgo" .) &&
  have_cgo=1

# Running before the daemon starts: found at its first samples.
"$B/efp_golabels_early" split 2 120 >/dev/null &
EARLY=$!
sleep 0.5

PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf-golabels daemon start"; pf_done; exit 1; }

# cpu/nanoseconds (or another sample type: $3) of a selector's merged profile.
cpu_of() {
  local s
  s="$(pprof_sums "$TMP/mnt/$1/cpu/$2/all/merged.pb.gz")"
  [[ "$s" =~ ${3:-cpu/nanoseconds}=([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}

# Runs of 6 s of CPU (about 600 samples at 99 Hz, however long a busy host
# takes), until 500 samples carry the labels (a loaded host's sampler may
# see fewer): the share's standard error is then under 0.02, a quarter of
# the 10% allowed. The shares are compared over all runs.
M_CHECKOUT=0 M_SEARCH=0 runs=0
for i in 1 2 3 4; do
  out="$("$B/efp_golabels" split 6 150)"
  if [[ "$out" =~ checkout_ns=([0-9]+)\ search_ns=([0-9]+) ]]; then
    M_CHECKOUT=$((M_CHECKOUT + BASH_REMATCH[1])) M_SEARCH=$((M_SEARCH + BASH_REMATCH[2]))
    runs=$((runs + 1))
  else
    break
  fi
  sleep 5	# two more periods: the last samples are stored
  n=$(( $(cpu_of efp_golabels handler=checkout samples/count) +
        $(cpu_of efp_golabels handler=search samples/count) ))
  [ "$n" -ge 500 ] && break
done
if [ "$runs" -gt 0 ]; then
  ok "ebpf-golabels-run ($runs runs: checkout_ns=$M_CHECKOUT search_ns=$M_SEARCH)"
else
  fail "ebpf-golabels-run" "output: $out"; pf_done; exit 1
fi
"$B/efp_golabels_strip" split 2 60 >/dev/null
[ "$have_cgo" = 1 ] && "$B/efp_golabels_cgo" split 2 60 >/dev/null
"$B/efp_golabels_many" many 5 90 >/dev/null
wait "$EARLY"
sleep 5

sets="$(ls "$TMP/mnt/efp_golabels/cpu" 2>/dev/null | tr '\n' ' ')"
if [[ " $sets" =~ \ handler=checkout,host=[^\ ,]*,tier=gold\  ]] &&
   [[ " $sets" =~ \ handler=search,host=[^\ ,]*,tier=free\  ]]; then
  ok "ebpf-golabels-listed"
else
  fail "ebpf-golabels-listed" "ls efp_golabels/cpu: $sets"
fi

checkout="$(cpu_of efp_golabels handler=checkout)"
search="$(cpu_of efp_golabels handler=search)"
res="$(awk -v c="$checkout" -v s="$search" -v mc="$M_CHECKOUT" -v ms="$M_SEARCH" 'BEGIN {
  if (c + s == 0 || mc + ms == 0) { print "no samples"; exit }
  got = c / (c + s); want = mc / (mc + ms); d = got - want; if (d < 0) d = -d
  printf "%s checkout share %.3f, measured %.3f (%.0f + %.0f ns sampled)\n", \
    (d <= 0.1 * want ? "ok" : "off"), got, want, c, s }')"
if [[ "$res" == ok* ]]; then ok "ebpf-golabels-split (${res#ok })"
else fail "ebpf-golabels-split" "$res"; fi

# Matchers select the same series as the label sets they match.
re_c="$(cpu_of efp_golabels 'handler=~check.*')"
re_both="$(cpu_of efp_golabels 'handler=~checkout|search')"
nre="$(cpu_of efp_golabels 'handler!~check.*,tier=free')"
if [ "$checkout" -gt 0 ] && [ "$re_c" = "$checkout" ] && [ "$nre" = "$search" ] &&
   [ "$re_both" = "$((checkout + search))" ]; then
  ok "ebpf-golabels-matchers"
else
  fail "ebpf-golabels-matchers" "=~check.*: $re_c (checkout $checkout), !~check.*,tier=free: $nre (search $search), =~checkout|search: $re_both"
fi

tags="$(go tool pprof -tags "$TMP/mnt/efp_golabels/cpu/all/all/merged.pb.gz" 2>/dev/null)"
if grep -q '^ *handler: Total' <<<"$tags" && grep -q ': checkout$' <<<"$tags" &&
   grep -q ': search$' <<<"$tags" && grep -q ': gold$' <<<"$tags"; then
  ok "ebpf-golabels-tags"
else
  fail "ebpf-golabels-tags" "$(head -c 600 <<<"$tags")"
fi

# Without DWARF: the offsets of Go 1.17 to 1.23 by version.
sc="$(cpu_of efp_golabels_strip handler=checkout)"
ss="$(cpu_of efp_golabels_strip tier=free)"
if [ "$sc" -gt 0 ] && [ "$ss" -gt 0 ]; then ok "ebpf-golabels-stripped ($sc + $ss ns)"
else fail "ebpf-golabels-stripped" "checkout $sc, free $ss; ls: $(ls "$TMP/mnt/efp_golabels_strip/cpu" 2>&1 | tr '\n' ' ')"; fi

if [ "$have_cgo" = 1 ]; then
  cg="$(cpu_of efp_golabels_cgo handler=checkout)"
  if [ "$cg" -gt 0 ] && [ "$(cpu_of efp_golabels_cgo tier=free)" -gt 0 ]; then
    ok "ebpf-golabels-cgo ($cg ns)"
  else
    fail "ebpf-golabels-cgo" "ls: $(ls "$TMP/mnt/efp_golabels_cgo/cpu" 2>&1 | tr '\n' ' ')"
  fi
else
  echo "ok - ebpf-golabels-cgo # SKIP no C compiler for cgo"
fi

ec="$(cpu_of efp_golabels_early handler=checkout)"
if [ "$ec" -gt 0 ]; then ok "ebpf-golabels-before ($ec ns)"
else fail "ebpf-golabels-before" "ls: $(ls "$TMP/mnt/efp_golabels_early/cpu" 2>&1 | tr '\n' ' ')"; fi

# 64 sets: at most 32 become series; the others' samples are in the plain
# series, labelled; the 200-byte value is never kept.
nsets="$(ls "$TMP/mnt/efp_golabels_many/cpu" 2>/dev/null | grep -c '^host=.*,req=')"
plain="$(ls "$TMP/mnt/efp_golabels_many/cpu" 2>/dev/null | grep -v req= | grep '^host=' | head -1)"
ptags="$(go tool pprof -tags "$TMP/mnt/efp_golabels_many/cpu/$plain/all/merged.pb.gz" 2>/dev/null)"
if [ "$nsets" -ge 1 ] && [ "$nsets" -le 32 ] && [ -n "$plain" ] &&
   grep -q '^ *req: Total' <<<"$ptags"; then
  ok "ebpf-golabels-bounded ($nsets series)"
else
  fail "ebpf-golabels-bounded" "$nsets req series; plain series '$plain' tags: $(head -c 300 <<<"$ptags")"
fi
alltags="$(go tool pprof -tags "$TMP/mnt/efp_golabels_many/cpu/all/all/merged.pb.gz" 2>/dev/null)"
if grep -q '^ *req: Total' <<<"$alltags" && ! grep -q 'long' <<<"$alltags" &&
   ! ls "$TMP/mnt/efp_golabels_many/cpu" | grep -q long=; then
  ok "ebpf-golabels-long"
else
  fail "ebpf-golabels-long" "$(head -c 300 <<<"$alltags")"
fi

m="$(curl -s "http://127.0.0.1:$PORT/metrics")"
lab="$(awk '$1 == "profilefs_ebpf_go_labelled_samples_total" { print $2 }' <<<"$m")"
ref="$(awk '$1 == "profilefs_ebpf_go_label_sets_refused_total" { print $2 }' <<<"$m")"
# (Sets are refused only past the bound: 32 series, which a busy host's
# fewer samples may not reach.)
if [ "${lab:-0}" -gt 0 ] 2>/dev/null && { [ "${ref:-0}" -gt 0 ] 2>/dev/null || [ "$nsets" -lt 32 ]; } &&
   grep -q 'what="go_labels"' <<<"$m"; then
  ok "ebpf-golabels-metrics (labelled $lab, refused $ref; $nsets of 64 sets have series)"
else
  fail "ebpf-golabels-metrics" "labelled '$lab', refused '$ref'"
fi

# Off-CPU: waits in the same stack under two label sets are two entries in
# the kernel (the labels are part of the stack's hash), each its set's series.
pf_stop
PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=19 --ebpf-offcpu=1ms --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf-golabels-offcpu daemon start"; pf_done; exit 1; }
cp "$B/efp_golabels" "$B/efp_golabels_wait"
"$B/efp_golabels_wait" wait 1 0 >/dev/null	# its tables loaded before the measured run
sleep 2
out="$("$B/efp_golabels_wait" wait 20 0)"	# 20 s: its split is sampled (T about 10 ms under the walk budget), about 2,000 draws
off_of() {	# off_of SELECTOR TYPE: a sample type's sum in the set's offcpu profile
  local s
  s="$(pprof_sums "$TMP/mnt/efp_golabels_wait/offcpu/$1/all/merged.pb.gz")"
  [[ "$s" =~ $2=([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}
# The last waits drained and stored: both sets' sums settled (a fixed 6 s
# read one drain short on a busy host, the last seconds missing).
both_sums() { off_of handler=checkout offcpu/nanoseconds; off_of handler=search offcpu/nanoseconds; }
settled both_sums >/dev/null
oc="$(off_of handler=checkout offcpu/nanoseconds) $(off_of handler=checkout waits/count)"
os="$(off_of handler=search offcpu/nanoseconds) $(off_of handler=search waits/count)"
res="$(awk -v c="$oc" -v s="$os" -v out="$out" 'function m(k) {
    return match(out, k "=[0-9]+") ? substr(out, RSTART + length(k) + 1, RLENGTH - length(k) - 1) + 0 : -1 }
  function near(g, w) { return g >= 0.9 * w && g <= 1.1 * w }
  BEGIN {
  split(c, cv, " "); split(s, sv, " ")
  mc = m("checkout_ns"); ms = m("search_ns"); nc = m("checkout_waits"); ns = m("search_waits")
  if (mc < 0 || ms < 0 || nc < 0 || ns < 0 || mc + ms == 0 || nc + ns == 0) {
    print "no output: " out; exit }
  wt = mc / (mc + ms); wn = nc / (nc + ns)
  gt = cv[1] + sv[1] > 0 ? cv[1] / (cv[1] + sv[1]) : -1
  gn = cv[2] + sv[2] > 0 ? cv[2] / (cv[2] + sv[2]) : -1
  printf "%s checkout share of the time waited %.3f (measured %.3f), of the waits %.3f (counted %.3f); %s + %s ns, %s + %s waits\n", \
    (near(gt, wt) && near(gn, wn) ? "ok" : "off"), gt, wt, gn, wn, cv[1], sv[1], cv[2], sv[2] }')"
if [[ "$res" == ok* ]]; then ok "ebpf-golabels-offcpu (${res#ok })"
else fail "ebpf-golabels-offcpu" "$res; ls: $(ls "$TMP/mnt/efp_golabels_wait/offcpu" 2>&1 | tr '\n' ' ')"; fi

pf_done
