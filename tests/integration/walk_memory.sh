#!/usr/bin/env bash
# Users walking the tree, on a real mount under --memory-limit 256M (the
# packaged limit): a day and a half of real heap profiles of two label sets,
# then du -s and grep -r through the whole service. A walk makes no generated
# file to learn its size (du ends quickly, the views count 0 blocks), costs
# a bounded amount of memory, and once the caches are idle (30 s) the budget
# they held and the daemon's RSS come back. A single stat and a browser-like
# open still get the exact size; cat and cp of a view stat'ed during a walk
# still get every byte. Prints the figures measured.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
M="$TMP/mnt"
LIMIT=$((256 << 20))
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" || fail "build httpload"
# A sanitizer's quarantine keeps freed memory: RSS bounds hold for plain builds.
asan=0; nm -D "$BIN" 2>/dev/null | grep -q __asan_init && asan=1

pf_start --http 127.0.0.1:0 --memory-limit 256M || { fail "daemon starts"; pf_done; exit 1; }
for _ in $(seq 1 50); do grep -q "listening on" "$TMP/daemon.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/daemon.log" | tail -1)
U="http://127.0.0.1:$PORT"
rss() { awk '/^VmRSS:/ {printf "%d", $2 / 1024}' "/proc/$PF_PID/status"; }
hwm() { awk '/^VmHWM:/ {printf "%d", $2 / 1024}' "/proc/$PF_PID/status"; }
budget() { curl -s "$U/metrics" | awk -v k="$1" '$1 == "profilefs_memory_budget_bytes{kind=\"" k "\"}" {printf "%d", $2 / 1048576}'; }

# 36 hours every 10 minutes, two label sets: 432 profiles, ~80 range directories.
now=$(date +%s)
base=$((now - 36 * 3600))
"$TMP/httpload" -c 4 -n 432 -t 120 -T "$base,600,2" \
  -p '/api/0/profiles?service=walkapp&type=heap&labels=pod={k}&created_at={t}' \
  127.0.0.1 "$PORT" "$REAL"/parca/many-*.pb.gz "$REAL"/parca/alloc_space_delta.pb.gz > "$TMP/load.out" 2>&1
grep -q "failed 0" "$TMP/load.out" && ok "432 profiles pushed" || fail "432 profiles pushed" "$(tail -2 "$TMP/load.out")"
for _ in $(seq 1 300); do
  [ "$(curl -s "$U/metrics" | awk '/^profilefs_store_windows_pending / {print $2}')" = 0 ] && break; sleep 0.2
done
S="$M/walkapp"
V="$S/heap/all/last-24h/flamegraph.svg"

# A single stat (ls -l, a browser) makes the file: its size is exact.
sz=$(stat -c %s "$V"); got=$(cat "$V" | wc -c); blocks=$(stat -c %b "$V")
check_eq "a stat outside a walk gives the exact size ($sz bytes)" "$sz" "$got"
check_eq "a view takes no blocks" "$blocks" 0

sleep 1
rest=$(rss); rest_used=$(budget used)
echo 5 > "/proc/$PF_PID/clear_refs" 2>/dev/null
t0=$(date +%s%N)
du_out=$(timeout 300 du -s "$S"); rc=$?
du_ms=$((($(date +%s%N) - t0) / 1000000)); du_peak=$(hwm)
n=$(find "$S" | wc -l)
echo "# du -s of the service: $du_ms ms, $n entries, ${du_out%%[[:space:]]*} KiB; RSS $rest MiB at rest, peak $du_peak MiB"
check_eq "du -s of the service ends" "$rc" 0
[ "${du_out%%[[:space:]]*}" -gt 0 ] 2>/dev/null && ok "du counts the stored profiles" \
  || fail "du counts the stored profiles" "$du_out"
# What a walk may cost: the caches' shares of the limit (a quarter each for
# files and merges, a sixteenth for sizes) and what is being made: under 256 MiB.
[ $((du_peak - rest)) -lt 256 ] && ok "du costs under 256 MiB of RSS ($((du_peak - rest)) MiB)" \
  || fail "du costs under 256 MiB of RSS" "$rest -> $du_peak MiB"

# Walked past: a view's stat said 0 or its size; reading it gives every byte.
W="$S/heap/pod=1/last-6h/merged.pb.gz"
stat -c %s "$W" >/dev/null
cp "$W" "$TMP/w.pb.gz" && gzip -t "$TMP/w.pb.gz" 2>/dev/null && ok "cp of a view after a walk is whole" \
  || fail "cp of a view after a walk is whole"
check_eq "cat after a walk reads what a stat says" "$(cat "$V" | wc -c)" "$(stat -c %s "$V")"

# One process that walks (stats in many directories), then reads what it
# stat'ed: every byte of a view and of a stored profile whose size it was not told.
out=$(python3 - "$S/heap" <<'PY'
import os, sys, gzip
top = sys.argv[1]
ranges = sorted(os.listdir(top + "/pod=0"))[:6]
for r in ranges:
    for f in ("top.txt", "flamegraph.svg"):
        os.stat("%s/pod=0/%s/%s" % (top, r, f))
    for p in os.listdir("%s/pod=0/%s/profiles" % (top, r))[:2]:
        os.stat("%s/pod=0/%s/profiles/%s" % (top, r, p))
r = ranges[-1]
p = sorted(os.listdir("%s/pod=1/%s/profiles" % (top, r)))[0]
bad = 0
for path in ("%s/pod=1/%s/folded.txt" % (top, r), "%s/pod=1/%s/profiles/%s" % (top, r, p)):
    told = os.stat(path).st_size
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        gzip.decompress(data)
    print("%s: told %d, read %d" % (path[len(top):], told, len(data)))
    bad += len(data) == 0
print("bad %d" % bad)
PY
)
echo "$out" | sed 's/^/# /'
echo "$out" | grep -q "^bad 0$" && ok "a walker reads every byte of what it stat'ed" \
  || fail "a walker reads every byte of what it stat'ed" "$(echo "$out" | tail -3)"

echo 5 > "/proc/$PF_PID/clear_refs" 2>/dev/null
t0=$(date +%s%N)
timeout 600 grep -rl --include='*.txt' 'runtime' "$S" > "$TMP/grep.out"; rc=$?
g_ms=$((($(date +%s%N) - t0) / 1000000)); g_peak=$(hwm); g_bpeak=$(budget peak)
echo "# grep -rl --include='*.txt' of the service: $g_ms ms, $(wc -l < "$TMP/grep.out") files matched; peak RSS $g_peak MiB, budget peak $g_bpeak MiB of 256"
check_eq "grep -r of the service ends" "$rc" 0
[ "$g_bpeak" -le 256 ] && ok "the budget holds during the walk" || fail "the budget holds during the walk" "$g_bpeak MiB"
[ $((g_peak - rest)) -lt 256 ] && ok "grep -r costs under 256 MiB of RSS ($((g_peak - rest)) MiB)" \
  || fail "grep -r costs under 256 MiB of RSS" "$rest -> $g_peak MiB"

# Idle: the caches drop what nobody read for 30 s and give it back.
after=$(budget used); t0=$(date +%s)
for _ in $(seq 1 60); do
  used=$(budget used)
  [ "$used" -le $((rest_used + 2)) ] && [ $(( $(date +%s) - t0 )) -ge 33 ] && break
  sleep 1
done
idle=$(rss)
echo "# idle after $(( $(date +%s) - t0 )) s: budget used $after -> $used MiB (at rest $rest_used); RSS $idle MiB (at rest $rest, peak $g_peak)"
[ "$used" -le $((rest_used + 2)) ] && ok "the caches give their budget back when idle" \
  || fail "the caches give their budget back when idle" "$used MiB used, $rest_used at rest"
if [ $asan = 0 ]; then
  [ $((idle - rest)) -lt 64 ] && ok "RSS back within 64 MiB of rest when idle ($idle MiB)" \
    || fail "RSS back within 64 MiB of rest when idle" "$rest -> $idle MiB"
fi
kill -0 "$PF_PID" && ok "daemon alive" || fail "daemon alive"
pf_done
