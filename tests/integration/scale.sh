#!/usr/bin/env bash
# Storage at scale, on the mounted tree and the HTTP API: three days of fresh
# profiles of two label sets (Go CPU profiles and real heap profiles) pushed
# with past times; for random ranges and selectors the sums of merged.pb.gz,
# folded.txt and meta.json's count equal those of merging the pushed files
# with go tool pprof -proto (before and after the windows are built); kill -9
# during ingest and during compaction, restart, sums still exact; a full
# file system (small tmpfs) fails pushes with 507 / ENOSPC, reads go on and
# pushes resume once space returns; windows kept past the raw retention
# (--retention-aggregates) serve the old ranges; --max-disk deletes the
# oldest data.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"

(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 6 -dur 1s -other=false >/dev/null 2>&1 || fail "generate Go profiles"
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" || fail "build httpload"
cpus=("$TMP"/go/cpu-*.pb.gz)
heaps=("$REAL"/parca/many-*.pb.gz)

start_http() {
  pf_start --http 127.0.0.1:0 "$@" || return 1
  local i
  for i in $(seq 1 50); do grep -q "listening on" "$TMP/daemon.log" && break; sleep 0.1; done
  PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/daemon.log" | tail -1)
  U="http://127.0.0.1:$PORT"
}
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%S; }
tname() { date -u -d "@$1" +%Y-%m-%dT%H%M%S; }	# as the tree writes times
push() {	# push FILE SERVICE TYPE LABELS UNIXTIME -> HTTP status
  curl -s -o /dev/null -w '%{http_code}' --data-binary @"$1" \
    "$U/api/0/profiles?service=$2&type=$3&labels=$4&created_at=$(iso "$5")"
}
pending() { curl -s "$U/metrics" | awk '/^profilefs_store_windows_pending / {print $2}'; }
wait_windows() {
  local i idle=0
  for i in $(seq 1 300); do
    [ "$(pending)" = 0 ] && idle=$((idle + 1)) || idle=0
    [ $idle -ge 2 ] && return 0
    sleep 0.2
  done
  return 1
}

start_http || { fail "daemon starts"; pf_done; exit 1; }
ok "daemon starts"

# --- three days, two label sets, pushed out of order --------------------------------
now=$(date +%s)
base=$(( (now / 86400 - 3) * 86400 + 1234 ))
: > "$TMP/pushed"
bad=0
for i in $(shuf -i 0-299 --random-source=<(yes 7)); do
  t=$((base + i * 3 * 86400 / 300 + (i % 7) * 13))
  pod=$((i % 2))
  f=${cpus[$((i % ${#cpus[@]}))]}
  [ "$(push "$f" scale cpu "pod=$pod" "$t")" = 200 ] || bad=$((bad + 1))
  echo "$t $pod cpu $f" >> "$TMP/pushed"
  if [ $((i % 5)) = 0 ]; then
    h=${heaps[$((i / 5 % ${#heaps[@]}))]}
    [ "$(push "$h" scale heap "pod=$pod" "$((t + 1))")" = 200 ] || bad=$((bad + 1))
    # Snapshots of totals count their increase within the series: parca's
    # four hold the same alloc_* stack by stack, so the first pushed to a
    # label set counts whole (w) and every other adds nothing (z).
    w=z; grep -q " $pod heap .* w$" "$TMP/pushed" || w=w
    echo "$((t + 1)) $pod heap $h $w" >> "$TMP/pushed"
  fi
done
check_eq "360 profiles over three days pushed" "$bad" 0

# check_range TYPE SELECTOR FROM TO (unix seconds): files against go tool pprof
check_range() {
  local type=$1 sel=$2 from=$3 to=$4 dir want got n files
  files=$(awk -v a="$from" -v b="$to" -v s="$sel" -v ty="$type" \
    '$1 >= a && $1 < b && $3 == ty && (s == "all" || s == "pod=" $2) {print $4}' "$TMP/pushed")
  n=$(echo "$files" | grep -c . || true)
  dir="$M/scale/$type/$sel/$(tname "$from")..$(tname "$to")"
  if [ "$n" = 0 ]; then
    [ ! -e "$dir/merged.pb.gz" ] && return 0
    echo "empty range $dir exists"; return 1
  fi
  # shellcheck disable=SC2086
  go tool pprof -proto $files > "$TMP/want.pb.gz" 2>/dev/null
  want=$(pprof_sums "$TMP/want.pb.gz")
  got=$(pprof_sums "$dir/merged.pb.gz")
  if [ "$type" = heap ]; then	# gauges are averaged: compare the counters
    # (the increase: one snapshot's alloc_* per label set whose first push is here)
    local k
    k=$(awk -v a="$from" -v b="$to" -v s="$sel" \
      '$1 >= a && $1 < b && $3 == "heap" && $5 == "w" && (s == "all" || s == "pod=" $2)' "$TMP/pushed" | wc -l)
    want=$(pprof_sums "${heaps[0]}" | tr ' ' '\n' | grep '^alloc' | tr '=' ' ' |
      awk -v k="$k" '{printf "%s=%.0f ", $1, $2 * k}')
    got=$(echo "$got" | tr ' ' '\n' | grep '^alloc' | tr '\n' ' ')
  fi
  [ "$got" = "$want" ] || { echo "$dir: got $got want $want ($n files)"; return 1; }
  [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profiles"])' "$dir/meta.json")" = "$n" ] \
    || { echo "$dir: meta.json count"; return 1; }
  if [ "$type" = cpu ]; then
    local fsum msum
    fsum=$(awk '{s += $NF} END {printf "%.0f", s}' "$dir/folded.txt")
    msum=$(echo "$got" | grep -o 'cpu/nanoseconds=[0-9]*' | cut -d= -f2)
    [ "$fsum" = "$msum" ] || { echo "$dir: folded.txt $fsum vs $msum"; return 1; }
  fi
}
random_ranges() {	# random_ranges N LABEL
  local k a b sel type errs=0 out
  RANDOM=$2
  for k in $(seq 1 "$1"); do
    a=$((base - 600 + (RANDOM * 32768 + RANDOM) % (3 * 86400)))
    case $((k % 4)) in
      0) b=$((a + 300 + RANDOM % 3600)) ;;
      1) a=$((a - a % 3600)); b=$((a + 3600 * (1 + RANDOM % 30))) ;;
      2) a=$((a - a % 86400)); b=$((a + 86400 * (1 + RANDOM % 2))) ;;
      *) b=$((a + RANDOM * 7)) ;;
    esac
    sel=$([ $((RANDOM % 3)) = 0 ] && echo all || echo "pod=$((RANDOM % 2))")
    type=$([ $((RANDOM % 4)) = 0 ] && echo heap || echo cpu)
    out=$(check_range "$type" "$sel" "$a" "$b" 2>&1) || { errs=$((errs + 1)); echo "$out" | head -2; }
  done
  check_eq "$3" "$errs" 0
}
random_ranges 12 11 "random ranges while windows are being built: sums of go tool pprof"
wait_windows && ok "windows caught up" || fail "windows caught up" "pending $(pending)"
random_ranges 20 12 "random ranges from windows and raw edges: sums of go tool pprof"
check_range cpu all $((base - 86400)) $((now + 60)) && ok "all three days, every label set" \
  || fail "all three days, every label set"

# --- kill -9 during ingest -----------------------------------------------------------
: > "$TMP/acked"
(
  for i in $(seq 0 399); do
    t=$((base + 86400 + i * 30))
    [ "$(push "${cpus[$((i % ${#cpus[@]}))]}" crash cpu "pod=$((i % 2))" "$t")" = 200 ] && echo "$t" >> "$TMP/acked"
  done
) &
loader=$!
for i in $(seq 1 100); do [ "$(wc -l < "$TMP/acked")" -ge 60 ] && break; sleep 0.05; done
kill -9 "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID=
wait "$loader" 2>/dev/null
acked=$(wc -l < "$TMP/acked")
start_http || fail "restart after kill -9 during ingest"
got=$(ls "$M/crash/cpu/all/all/profiles" | wc -l)
[ "$got" -ge "$acked" ] && [ "$got" -le $((acked + 1)) ] && ok "every acknowledged profile survives kill -9 ($acked acknowledged, $got stored)" \
  || fail "every acknowledged profile survives kill -9" "$acked acknowledged, $got stored"
exported_sums() {	# exported_sums RANGE_DIR: go tool pprof over profiles/
  rm -rf "$TMP/exp"; mkdir -p "$TMP/exp"
  cp "$1"/profiles/* "$TMP/exp/" && go tool pprof -proto "$TMP"/exp/* > "$TMP/exp.pb.gz" 2>/dev/null
  pprof_sums "$TMP/exp.pb.gz"
}
check_eq "after kill -9 during ingest: merged.pb.gz = go tool pprof of profiles/" \
  "$(pprof_sums "$M/crash/cpu/all/all/merged.pb.gz")" "$(exported_sums "$M/crash/cpu/all/all")"

# --- kill -9 during compaction ---------------------------------------------------------
"$TMP/httpload" -c 8 -n 3000 -t 120 -T "$((base + 2 * 86400)),20,3" \
  -p '/api/0/profiles?service=compact&type=cpu&labels=pod={k}&created_at={t}' \
  127.0.0.1 "$PORT" "${cpus[@]}" > "$TMP/load.out" 2>&1 && ok "3000 back-dated profiles pushed" \
  || fail "3000 back-dated profiles pushed" "$(tail -2 "$TMP/load.out")"
p=$(pending)
kill -9 "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID=
echo "# killed with ${p:-?} series-days pending"
start_http || fail "restart after kill -9 during compaction"
check_eq "after kill -9 during compaction: every profile listed" \
  "$(ls "$M/compact/cpu/all/all/profiles" | wc -l)" 3000
check_eq "after kill -9 during compaction: merged.pb.gz = go tool pprof of profiles/" \
  "$(pprof_sums "$M/compact/cpu/all/all/merged.pb.gz")" "$(exported_sums "$M/compact/cpu/all/all")"
wait_windows && random_ranges 8 13 "after the restart, random ranges still exact" \
  || fail "windows caught up after the restart"
pf_stop

# --- a full file system ------------------------------------------------------------------
if [ "$(id -u)" = 0 ] && mkdir -p "$TMP/small" && mount -t tmpfs -o size=24m tmpfs "$TMP/small"; then
  SAVED_TMP_DATA="$TMP/data"
  mkdir -p "$TMP/small/data"
  pf_start --data "$TMP/small/data" --http 127.0.0.1:0 >/dev/null || fail "daemon on a small tmpfs"
  for i in $(seq 1 50); do grep -q "listening on" "$TMP/daemon.log" && break; sleep 0.1; done
  PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/daemon.log" | tail -1)
  U="http://127.0.0.1:$PORT"
  acked=0
  [ "$(push "${cpus[0]}" full cpu "" "$now")" = 200 ] && acked=1 && ok "push before the disk fills" \
    || fail "push before the disk fills"
  dd if=/dev/zero of="$TMP/small/filler" bs=1M count=64 2>/dev/null
  # RocksDB's write-ahead log may have room left in its preallocated file.
  for i in $(seq 1 200); do
    st=$(curl -s -o "$TMP/full.json" -w '%{http_code}' --data-binary @"${cpus[1]}" \
      "$U/api/0/profiles?service=full&type=cpu&created_at=$(iso "$((now + 1))")")
    [ "$st" = 200 ] || break
    acked=$((acked + 1))
  done
  check_eq "push on a full disk: 507" "$st" 507
  grep -q "full" "$TMP/full.json" && ok "507 says the disk is full: $(head -c 160 "$TMP/full.json")" \
    || fail "507 says why" "$(cat "$TMP/full.json")"
  cp "${cpus[2]}" "$M/ingest/full/cpu/" 2> "$TMP/cp.err" && fail "cp on a full disk fails" \
    || { grep -q "No space left" "$TMP/cp.err" && ok "cp on a full disk: ENOSPC" || fail "cp on a full disk: ENOSPC" "$(cat "$TMP/cp.err")"; }
  [ -n "$(pprof_sums "$M/full/cpu/all/all/merged.pb.gz")" ] && ok "reads go on when the disk is full" \
    || fail "reads go on when the disk is full"
  rm -f "$TMP/small/filler"
  ok_push=0
  for i in $(seq 1 50); do
    [ "$(push "${cpus[3]}" full cpu "" "$((now + 2))")" = 200 ] && { ok_push=1; break; }
    sleep 0.2
  done
  check_eq "pushes resume once space returns" "$ok_push" 1
  check_eq "nothing stored was damaged" "$(ls "$M/full/cpu/all/all/profiles" | wc -l)" $((acked + 1))
  pf_stop
  umount "$TMP/small" 2>/dev/null || umount -l "$TMP/small"
else
  echo "# skipped the full-disk test: needs root to mount a tmpfs"
fi

# --- a data dir of the previous format ------------------------------------------------
# tests/testdata/store-v1.tar.gz: written by the previous release's store_put() (values
# = gzipped pprof) from two files of tests/testdata/real, round-robin, six profiles.
rm -rf "$TMP/data" && mkdir -p "$TMP/old" && tar xzf "$ROOT/tests/testdata/store-v1.tar.gz" -C "$TMP/old"
mv "$TMP/old/v1dir" "$TMP/data"
pf_start || fail "daemon on an old data dir"
grep -q "converted 6 profiles" "$TMP/daemon.log" && ok "old data dir converted on open" \
  || fail "old data dir converted on open" "$(grep store: "$TMP/daemon.log" | tail -2)"
check_eq "every old profile listed" "$(ls "$M/ceiling/cpu/conn=0/all/profiles" | wc -l)" 6
o1="$REAL/google-pprof/sample.cpu"; o2="$REAL/parca/normal-cpu.stripped.pprof"
go tool pprof -proto "$o1" "$o2" "$o1" "$o2" "$o1" "$o2" > "$TMP/old.pb.gz" 2>/dev/null
check_eq "old profiles merge to go tool pprof's sums" \
  "$(pprof_sums "$M/ceiling/cpu/conn=0/all/merged.pb.gz")" "$(pprof_sums "$TMP/old.pb.gz")"
check_eq "old profiles export with their sums" "$(exported_sums "$M/ceiling/cpu/conn=0/all")" \
  "$(pprof_sums "$TMP/old.pb.gz")"
pf_stop
pf_start || fail "daemon on the converted data dir"
check_eq "converted once" "$(grep -c "converted 6 profiles" "$TMP/daemon.log")" 1
pf_stop

# --- windows kept past the raw retention ------------------------------------------------
rm -rf "$TMP/data"
start_http || fail "daemon for the tiers"
now=$(date +%s)
: > "$TMP/tiers"
bad=0
for i in $(seq 0 59); do	# 30 h to 14 h ago every 16 min, then 10 h to 1 h ago
  t=$((now - 30 * 3600 + i * 960 + 37))
  [ "$(push "${cpus[$((i % ${#cpus[@]}))]}" tiers cpu "pod=$((i % 2))" "$t")" = 200 ] || bad=$((bad + 1))
  echo "$t $((i % 2)) cpu ${cpus[$((i % ${#cpus[@]}))]}" >> "$TMP/tiers"
done
for i in $(seq 0 17); do
  t=$((now - 10 * 3600 + i * 1800 + 11))
  [ "$(push "${cpus[$((i % ${#cpus[@]}))]}" tiers cpu "pod=$((i % 2))" "$t")" = 200 ] || bad=$((bad + 1))
  echo "$t $((i % 2)) cpu ${cpus[$((i % ${#cpus[@]}))]}" >> "$TMP/tiers"
done
check_eq "78 profiles over 30 hours pushed" "$bad" 0
wait_windows || fail "windows caught up before the tiers"
pf_stop
start_http --retention 12h --retention-aggregates 30d || fail "daemon with --retention 12h --retention-aggregates 30d"
for i in $(seq 1 100); do grep -q "retention: deleted" "$TMP/daemon.log" && break; sleep 0.1; done
check_eq "raw profiles past 12 h are deleted; profiles/ lists the 18 left" \
  "$(ls "$M/tiers/cpu/all/all/profiles" | wc -l)" 18
tiers_sums() {	# tiers_sums FROM TO SELECTOR: go tool pprof of the pushed files in [FROM, TO)
  # shellcheck disable=SC2046
  go tool pprof -proto $(awk -v a="$1" -v b="$2" -v s="$3" \
    '$1 >= a && $1 < b && (s == "all" || s == "pod=" $2) {print $4}' "$TMP/tiers") \
    > "$TMP/tiers.pb.gz" 2>/dev/null
  pprof_sums "$TMP/tiers.pb.gz"
}
d="$M/tiers/cpu/all/all"
check_eq "all: merged.pb.gz past the raw retention = go tool pprof of every pushed file" \
  "$(pprof_sums "$d/merged.pb.gz")" "$(tiers_sums 0 $((now + 60)) all)"
check_eq "meta.json counts the profiles the windows stand for" \
  "$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["profiles"], m["past_retention"], m["merged"], len(m["ids"]))' "$d/meta.json")" \
  "78 60 78 18"
check_eq "folded.txt sums what merged.pb.gz does" \
  "$(awk '{s += $NF} END {printf "%.0f", s}' "$d/folded.txt")" \
  "$(pprof_sums "$d/merged.pb.gz" | grep -o 'cpu/nanoseconds=[0-9]*' | cut -d= -f2)"
# A range wholly past the cut, with 10-minute edges: exactly its profiles.
a=$(( (now - 28 * 3600) / 600 * 600 )); b=$(( (now - 20 * 3600) / 600 * 600 ))
check_eq "pod=1, a past range on 10-minute edges = go tool pprof of its files" \
  "$(pprof_sums "$M/tiers/cpu/pod=1/$(tname "$a")..$(tname "$b")/merged.pb.gz")" "$(tiers_sums "$a" "$b" pod=1)"
old_day=$(date -u -d "@$((now - 29 * 3600))" +%Y-%m-%dT%H)
ls "$M/tiers/cpu/all" | grep -qx "$old_day" && ok "hours past the raw retention are listed ($old_day)" \
  || fail "hours past the raw retention are listed" "$(ls "$M/tiers/cpu/all" | head -5)"
check_eq "timeline.csv past the raw retention adds up to merged.pb.gz's cpu total" \
  "$(awk -F, 'NR > 1 {s += $2} END {printf "%.0f", s}' "$d/timeline.csv")" \
  "$(pprof_sums "$d/merged.pb.gz" | grep -o 'cpu/nanoseconds=[0-9]*' | cut -d= -f2)"
ls "$M/tiers/cpu/all/$old_day/profiles" > "$TMP/past.ls" 2>&1 && [ ! -s "$TMP/past.ls" ] \
  && ok "profiles/ of an hour past the raw retention is empty" \
  || fail "profiles/ of an hour past the raw retention is empty" "$(head -2 "$TMP/past.ls")"
find "$M/tiers/cpu/pod=0" > /dev/null 2>"$TMP/find.err" && ok "find over ranges past the raw retention" \
  || fail "find over ranges past the raw retention" "$(head -2 "$TMP/find.err")"
pf_stop
start_http --retention 12h || fail "daemon without --retention-aggregates"
for i in $(seq 1 100); do [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profiles"])' "$d/meta.json" 2>/dev/null)" = 18 ] && break; sleep 0.1; done
check_eq "without --retention-aggregates the windows go too" \
  "$(pprof_sums "$d/merged.pb.gz")" "$(tiers_sums $((now - 11 * 3600)) $((now + 60)) all)"
pf_stop

# --- --max-disk -------------------------------------------------------------------------
rm -rf "$TMP/data"
start_http --max-disk 400K || fail "daemon with --max-disk"
"$TMP/httpload" -c 8 -n 4000 -t 120 -T "$((base)),60,2" \
  -p '/api/0/profiles?service=cap&type=cpu&labels=pod={k}&created_at={t}' \
  127.0.0.1 "$PORT" "${cpus[@]}" > "$TMP/load.out" 2>&1 || fail "pushes under --max-disk"
for i in $(seq 1 100); do grep -q "max-disk: deleted" "$TMP/daemon.log" && break; sleep 0.2; done
grep -q "max-disk: deleted" "$TMP/daemon.log" && ok "--max-disk deletes the oldest data: $(grep "max-disk" "$TMP/daemon.log" | tail -1 | cut -c1-160)" \
  || fail "--max-disk deletes the oldest data" "$(du -sh "$TMP/data")"
first=$(ls "$M/cap/cpu/all/all/profiles" | head -1)
[ -n "$first" ] && [ "${first:0:13}" \> "$(iso "$base" | cut -c1-13)" ] && ok "the oldest profiles went first ($first)" \
  || fail "the oldest profiles went first" "$first"
# Restarted without the cap, so that no deletion runs between the two reads.
pf_stop
start_http || fail "restart without --max-disk"
check_eq "after --max-disk: merged.pb.gz = go tool pprof of profiles/" \
  "$(pprof_sums "$M/cap/cpu/all/all/merged.pb.gz")" "$(exported_sums "$M/cap/cpu/all/all")"
pf_stop
pf_done
