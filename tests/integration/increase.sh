#!/usr/bin/env bash
# Snapshots of totals: Go heap profiles pushed as the process serves them
# (alloc_* counted from its start, no duration) count their increase within
# the series, as Prometheus's increase(): two pushes of 250 MB and 464 MB of
# alloc_space merge to 464 MB, not 714; a new process (totals lower) counts
# whole; a late snapshot adds nothing; the base survives a restart; inuse_*
# is still averaged over the snapshots; profiles/ serves each increase, and
# they sum to the merge; rm of one removes its increase, rm -r of the label
# set forgets the base. Checked with go tool pprof -raw.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"
TOOLS="$(dirname "$0")"

pf_start || { fail "daemon starts and mounts"; pf_done; exit 1; }
ok "daemon starts and mounts"

# totals FILE: the sums of the four columns, "alloc_objects alloc_space inuse_objects inuse_space".
totals() {
  go tool pprof -raw "$1" 2>/dev/null | python3 -c '
import re, sys
s = [0, 0, 0, 0]
on = False
for line in sys.stdin:
    if line.startswith("Samples:"):
        on = True
        continue
    if line.startswith("Locations"):
        break
    m = re.match(r"\s*(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+):", line) if on else None
    if m:
        s = [a + int(b) for a, b in zip(s, m.groups())]
print(*s)'
}

t0=$(( ($(date +%s) - 1200) * 1000000000 ))
D="$M/ingest/heapsvc/heap/pod=a"
mkdir -p "$D" 2>/dev/null
# push N SECONDS "a-alloc-MB b-alloc-MB" [inuse-factor]: a snapshot at t0 + SECONDS;
# alloc_objects is alloc_space / 1e6; inuse a 60 MB, b 12 MB times the factor.
push() {
  local n="$1" s="$2" a="$3" b="$4" f="${5:-1}"
  printf 'main;alloc_a %d %d %d %d\nmain;alloc_b %d %d %d %d\n' \
    "$a" $((a * 1000000)) $((6 * f)) $((60000000 * f)) \
    "$b" $((b * 1000000)) $((12 * f)) $((12000000 * f)) > "$TMP/s$n.txt"
  python3 "$TOOLS/heapsnap.py" "$TMP/s$n.pb.gz" $((t0 + s * 1000000000)) "$TMP/s$n.txt"
  cp "$TMP/s$n.pb.gz" "$D/" || fail "cp of snapshot $n"
}
R="$M/heapsvc/heap/all/last-1h"
# The example: 250 MB, then 464 MB of the same process.
push 1 0 150 100
push 2 60 300 164 2
read -r ao as io is <<< "$(totals "$R/merged.pb.gz")"
echo "# two snapshots (250 MB, 464 MB): merged alloc_space $as B, alloc_objects $ao"
check_eq "two snapshots of one process merge to the last one's alloc_space (464 MB, not 714)" "$as" 464000000
check_eq "... and alloc_objects" "$ao" 464
read -r _ s1 _ _ <<< "$(totals "$TMP/s1.pb.gz")"
check_eq "go tool pprof reads the pushed snapshot whole (250 MB)" "$s1" 250000000
top=$(go tool pprof -sample_index=alloc_space -top "$R/merged.pb.gz" 2>/dev/null | grep -m1 'total$')
echo "# go tool pprof -sample_index=alloc_space -top: $top"
case "$top" in *"of 442.50MB total"*) ok "pprof -top shows 442.50 MiB (464 MB) in all" ;;
  *) fail "pprof -top shows 464 MB in all" "$top" ;; esac

# A new process: lower totals count whole, then its own increases.
push 3 120 40 20
push 4 180 70 30
read -r ao as io is <<< "$(totals "$R/merged.pb.gz")"
echo "# after a restart of the process (60 MB, then 100 MB): merged alloc_space $as B"
check_eq "a new process's first snapshot counts whole, then its increase (464 + 100 MB)" "$as" 564000000

# The base is kept on disk: a restart of the daemon goes on from it.
pf_stop
pf_start || { fail "daemon restarts"; pf_done; exit 1; }
push 5 240 80 40
read -r ao as io is <<< "$(totals "$R/merged.pb.gz")"
echo "# after a daemon restart and a 120 MB snapshot: merged alloc_space $as B"
check_eq "after a daemon restart the next snapshot counts its increase (464 + 120 MB)" "$as" 584000000

# A late snapshot (older than the last one) adds nothing to the counters.
push 6 30 200 120
read -r ao as io is <<< "$(totals "$R/merged.pb.gz")"
echo "# after a late snapshot: merged alloc_space $as B, alloc_objects $ao; inuse_space $is B"
check_eq "a late snapshot adds nothing to alloc_space" "$as" 584000000
check_eq "... nor to alloc_objects" "$ao" 584
# inuse: 72 MB in five snapshots, 144 MB in one: the mean is 84 MB.
check_eq "inuse_space is still averaged over the six snapshots (84 MB)" "$is" 84000000

# profiles/ serves each stored profile as its increase: valid pprof, summing to the merge.
sum=0
n=0
for f in "$R"/profiles/*.pb.gz; do
  read -r _ s _ _ <<< "$(totals "$f")"
  echo "# $(basename "$f"): alloc_space $s B"
  sum=$((sum + s))
  n=$((n + 1))
done
check_eq "profiles/ holds the six snapshots" "$n" 6
check_eq "the increases in profiles/ sum to the merge" "$sum" 584000000

# Deleting a stored snapshot removes the increase it brought (214 MB).
P="$M/heapsvc/heap/pod=a/all/profiles"
second=$(ls "$P" | sed -n 3p)
rm "$P/$second" || fail "rm of the second snapshot"
read -r ao as io is <<< "$(totals "$R/merged.pb.gz")"
echo "# after rm of the 214 MB increase: merged alloc_space $as B"
check_eq "rm of a snapshot removes the increase it brought (584 - 214 MB)" "$as" 370000000
# Deleting the label set forgets its last snapshot: the next push counts whole.
rm -r "$M/heapsvc/heap/pod=a" || fail "rm -r of the label set"
push 7 270 150 100
read -r ao as io is <<< "$(totals "$R/merged.pb.gz")"
echo "# after rm -r of the label set and a 250 MB snapshot: merged alloc_space $as B"
check_eq "after rm -r of the label set the next snapshot counts whole (250 MB)" "$as" 250000000

# A profile with a duration (a delta) is summed as it is.
printf 'main;alloc_a 5 5000000 1 1000000\n' > "$TMP/d.txt"
python3 "$TOOLS/heapsnap.py" "$TMP/d.pb.gz" $((t0 + 300 * 1000000000)) "$TMP/d.txt"
python3 - "$TMP/d.pb.gz" <<'PY'
import gzip, sys
b = gzip.decompress(open(sys.argv[1], "rb").read())
open(sys.argv[1], "wb").write(gzip.compress(b + bytes([10 << 3]) + bytes([0x80, 0x94, 0xeb, 0xdc, 0x03])))
PY
mkdir -p "$M/ingest/heapsvc/heap/pod=b" 2>/dev/null
cp "$TMP/d.pb.gz" "$M/ingest/heapsvc/heap/pod=b/" || fail "cp of a delta"
cp "$TMP/d.pb.gz" "$M/ingest/heapsvc/heap/pod=b/d2.pb.gz" || fail "cp of a delta again"
read -r ao as io is <<< "$(totals "$M/heapsvc/heap/pod=b/last-1h/merged.pb.gz")"
echo "# two deltas of 5 MB with a duration: merged alloc_space $as B"
check_eq "profiles with a duration are summed as they are" "$as" 10000000

kill -0 "$PF_PID" && ok "daemon alive" || fail "daemon alive"
pf_stop
check_eq "clean exit" "$PF_RC" 0
pf_done
