#!/usr/bin/env bash
# Foundation: CLI, the mounted tree, ingest of fresh Go profiles and of every
# real profile in shared/testdata/real, merged sums against go tool pprof,
# sizes, cp -r, read-only, bad input, restart, kill -9 durability and
# stale-mount recovery.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"

# --- command line -----------------------------------------------------------
"$BIN" --help >"$TMP/help" 2>&1; check_eq "--help exits 0" "$?" 0
grep -q "serve \[--data DIR\]" "$TMP/help" && ok "--help shows usage" || fail "--help shows usage"
"$BIN" --version | grep -q '^profilefs ' && ok "--version" || fail "--version"
"$BIN" serve --bogus "$M" >/dev/null 2>&1; check_eq "bad flag exits 2" "$?" 2
"$BIN" frobnicate >/dev/null 2>&1; check_eq "unknown command exits 2" "$?" 2
"$BIN" serve >/dev/null 2>&1; check_eq "missing mount point exits 2" "$?" 2

# --- fresh Go profiles ------------------------------------------------------
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 150ms >/dev/null || fail "generate Go profiles"

pf_start || { fail "daemon starts and mounts"; pf_done; exit 1; }
ok "daemon starts and mounts"
grep -q "ingest/" "$M/README.txt" && ok "README.txt explains the tree" || fail "README.txt explains the tree"

for f in "$TMP"/go/cpu-*.pb.gz; do cp "$f" "$M/ingest/goapp/cpu/env=test/" || fail "cp $(basename "$f") into ingest"; done
# Visible as soon as cp returns (the contract allows 2 s).
for i in $(seq 1 20); do [ -d "$M/goapp/cpu/env=test/last-1h" ] && break; sleep 0.1; done
[ -d "$M/goapp/cpu/env=test/last-1h" ] && ok "fresh profiles visible under last-1h" || fail "fresh profiles visible under last-1h"
check_eq "ls services" "$(ls "$M" | tr '\n' ' ')" "README.txt goapp ingest "
check_eq "ls selectors" "$(ls "$M/goapp/cpu" | tr '\n' ' ')" "all env=test "
ls "$M/goapp/cpu/all" | grep -q "^$(date -u +%Y-%m-%d)$" && ok "today's day directory listed" || fail "today's day directory listed"
ls "$M/goapp/cpu/all" | grep -q "^$(date -u +%Y-%m-%dT%H)$" && ok "this hour listed" || fail "this hour listed"

want=$(pprof_sums -proto "$TMP"/go/cpu-*.pb.gz)
go tool pprof -proto "$TMP"/go/cpu-*.pb.gz > "$TMP/go-merged.pb.gz" 2>/dev/null
want=$(pprof_sums "$TMP/go-merged.pb.gz")
for r in all last-1h last-15m "$(date -u +%Y-%m-%d)" "$(date -u +%Y-%m-%dT%H)"; do
  got=$(pprof_sums "$M/goapp/cpu/all/$r/merged.pb.gz")
  check_eq "merged sums equal go tool pprof -proto ($r)" "$got" "$want"
done
got=$(pprof_sums "$M/goapp/cpu/env=test/last-2h/merged.pb.gz")
check_eq "any last-N<unit> works on lookup" "$got" "$want"
from=$(date -u -d '-10 min' +%Y-%m-%dT%H%M); to=$(date -u -d '+1 min' +%Y-%m-%dT%H%M)
got=$(pprof_sums "$M/goapp/cpu/env=test/$from..$to/merged.pb.gz")
check_eq "FROM..TO range" "$got" "$want"
minute=$(date -u +%Y-%m-%dT%H%M)
[ -d "$M/goapp/cpu/all/$minute" ] || [ -d "$M/goapp/cpu/all/$(date -u -d '-1 min' +%Y-%m-%dT%H%M)" ] \
  && ok "minute range on lookup" || fail "minute range on lookup"
[ ! -e "$M/goapp/cpu/all/2001-01-01" ] && ok "range without data is absent" || fail "range without data is absent"
[ ! -e "$M/goapp/cpu/all/yesterday" ] && ok "bad range name is absent" || fail "bad range name is absent"
[ ! -e "$M/goapp/cpu/env=prod/all" ] && ok "selector without data is absent" || fail "selector without data is absent"
[ ! -e "$M/nosuch" ] && ok "unknown service is absent" || fail "unknown service is absent"

# Sizes are true.
for f in merged.pb.gz meta.json; do
  p="$M/goapp/cpu/all/last-1h/$f"
  check_eq "stat size = bytes read ($f)" "$(stat -c %s "$p")" "$(cat "$p" | wc -c)"
done
n=$(grep -o '"profiles": [0-9]*' "$M/goapp/cpu/all/all/meta.json" | grep -o '[0-9]*$')
check_eq "meta.json counts the profiles" "$n" 4

# New data is seen at once, and a file read right after is whole (the kernel
# must not keep the old size of a generated file).
cp "$TMP/go/cpu-0000.pb.gz" "$M/ingest/fresh/cpu/" && ls -l "$M/fresh/cpu/all/all/merged.pb.gz" >/dev/null \
  && s1=$(pprof_sums "$M/fresh/cpu/all/all/merged.pb.gz")
cp "$TMP/go/cpu-0000.pb.gz" "$M/ingest/fresh/cpu/"
gzip -t < "$M/fresh/cpu/all/all/merged.pb.gz" && ok "merged.pb.gz whole right after new data" || fail "merged.pb.gz whole right after new data"
s2=$(pprof_sums "$M/fresh/cpu/all/all/merged.pb.gz")
d1=$(echo "$s1" | grep -o 'cpu/nanoseconds=[0-9]*' | cut -d= -f2); d2=$(echo "$s2" | grep -o 'cpu/nanoseconds=[0-9]*' | cut -d= -f2)
check_eq "merged.pb.gz includes a profile as soon as cp returns" "$d2" "$((d1 * 2))"

# profiles/ and cp -r
check_eq "profiles/ lists each profile" "$(ls "$M/goapp/cpu/all/all/profiles" | wc -l)" 4
cp -r "$M/goapp/cpu/all/all/profiles" "$TMP/export" && ok "cp -r profiles/ out" || fail "cp -r profiles/ out"
# Stored compactly: each export is the same profile (pprof's sums), not the same bytes.
same=0
for f in "$TMP"/go/cpu-*.pb.gz; do
  sf=$(pprof_sums "$f")
  for g in "$TMP"/export/*; do [ "$(pprof_sums "$g")" = "$sf" ] && { same=$((same + 1)); break; }; done
done
check_eq "exported files have the sums of the ingested ones" "$same" 4
bad=0
for g in "$M"/goapp/cpu/all/all/profiles/*; do
  [ "$(stat -c %s "$g")" == "$(wc -c < "$g")" ] || bad=$((bad + 1))
done
check_eq "stat size = bytes read (profiles/)" "$bad" 0

# Other Go profile kinds through auto.
for k in heap allocs goroutine block mutex; do
  cp "$TMP/go/$k.pb.gz" "$M/ingest/goapp/auto/" || fail "cp $k into ingest/auto"
done
check_eq "auto infers the types" "$(ls "$M/goapp" | tr '\n' ' ')" "allocs block cpu goroutine heap "
# The same heap snapshot twice: a Go heap profile without a duration counts
# its increase within the series (increase()), here none the second time, so
# alloc_* are the snapshot's; inuse_* averaged.
cp "$TMP/go/heap.pb.gz" "$M/ingest/goapp/heap/" || fail "cp second heap"
h1=$(pprof_sums "$TMP/go/heap.pb.gz")
hm=$(pprof_sums "$M/goapp/heap/all/all/merged.pb.gz")
a1=$(echo "$h1" | grep -o 'alloc_space/bytes=[0-9]*' | cut -d= -f2)
am=$(echo "$hm" | grep -o 'alloc_space/bytes=[0-9]*' | cut -d= -f2)
i1=$(echo "$h1" | grep -o 'inuse_space/bytes=[0-9]*' | cut -d= -f2)
im=$(echo "$hm" | grep -o 'inuse_space/bytes=[0-9]*' | cut -d= -f2)
check_eq "a snapshot of totals counts its increase within the series (alloc_space)" "$am" "$a1"
check_eq "gauges are averaged over a range (inuse_space)" "$im" "$i1"
# Another pod: gauges are averaged per series, then summed across series.
cp "$TMP/go/heap.pb.gz" "$M/ingest/goapp/heap/pod=b/" || fail "cp heap for pod=b"
hm=$(pprof_sums "$M/goapp/heap/all/all/merged.pb.gz")
check_eq "gauges of several series add up (inuse_space)" \
  "$(echo "$hm" | grep -o 'inuse_space/bytes=[0-9]*' | cut -d= -f2)" "$((i1 * 2))"
# pod=b's first snapshot counts whole: the series' alloc_* add up.
check_eq "counters of several series add up (alloc_space)" \
  "$(echo "$hm" | grep -o 'alloc_space/bytes=[0-9]*' | cut -d= -f2)" "$((a1 * 2))"

# --- every real profile -------------------------------------------------------
n_ok=0; n_bad=0
for f in $(find "$REAL" -type f ! -name '*.md' | sort); do
  base=$(basename "$f"); svc="real-$(echo "$base" | tr -c 'a-zA-Z0-9\n' '-' | cut -c1-60)"
  if cp "$f" "$M/ingest/$svc/auto/" 2>"$TMP/cp.err"; then
    if [ "$base" == dotnet-pprof-3.pb.gz ]; then fail "dotnet-pprof-3 refused" "cp succeeded"; continue; fi
    type=$(ls "$M/$svc" | head -1)
    want=$(pprof_sums "$f")
    got=$(pprof_sums "$M/$svc/$type/all/all/merged.pb.gz")
    exp=$(pprof_sums "$M/$svc/$type/all/all/profiles/"*)
    if [ "$got" == "$want" ] && [ "$exp" == "$want" ] && [ -n "$want" ]; then n_ok=$((n_ok + 1));
    else fail "real $base" "merged '$got' exported '$exp' original '$want'"; n_bad=$((n_bad + 1)); fi
  else
    if [ "$base" == dotnet-pprof-3.pb.gz ]; then
      grep -q "Invalid argument" "$TMP/cp.err" && ok "dotnet-pprof-3 refused with EINVAL" || fail "dotnet-pprof-3 refused with EINVAL" "$(cat "$TMP/cp.err")"
      grep -q "reserved id 0" "$TMP/daemon.log" && ok "the log says why (function id 0)" || fail "the log says why (function id 0)"
    else
      fail "real $base ingested" "$(cat "$TMP/cp.err")"; n_bad=$((n_bad + 1))
    fi
  fi
done
[ "$n_bad" -eq 0 ] && [ "$n_ok" -ge 20 ] && ok "every real profile ingested, merged and exported with pprof's sums ($n_ok files)" \
  || fail "every real profile ingested" "$n_ok ok, $n_bad bad"

# The parca heap series (snapshots of one process's totals) merges to its
# increase: the first snapshot counts whole, so alloc_* are the last one's.
for f in "$REAL"/parca/many-*.pb.gz; do cp "$f" "$M/ingest/many/heap/" || fail "cp $(basename "$f")"; done
last=$(ls "$REAL"/parca/many-*.pb.gz | tail -1)
want=$(pprof_sums "$last" | grep -o 'alloc_[a-z]*/[a-z]*=[0-9]*' | tr '\n' ' ')
got=$(pprof_sums "$M/many/heap/all/all/merged.pb.gz" | grep -o 'alloc_[a-z]*/[a-z]*=[0-9]*' | tr '\n' ' ')
check_eq "parca heap series: merged alloc_* = the last snapshot's (go tool pprof)" "$got" "$want"
ls "$M/many/heap/all" | grep -q '^2022-02-10T16$' && ok "old data listed by its hour" || fail "old data listed by its hour"

# Mixed sample types in one range: profiles merge on the sample types they
# share (Go's samples,cpu with async-profiler's cpu), as Pyroscope merges by
# profile type; one with nothing in common (py-spy: another period type) is
# left out, and meta.json says why.
cp "$REAL/google-pprof/sample.cpu" "$M/ingest/mixed/cpu/" && cp "$TMP/go/cpu-0000.pb.gz" "$M/ingest/mixed/cpu/" \
  && cp "$REAL/pyroscope/profile_java" "$M/ingest/mixed/cpu/" && cp "$REAL/pyroscope/profile_python" "$M/ingest/mixed/cpu/" \
  || fail "cp mixed"
grep -q '"left_out": \[$' "$M/mixed/cpu/all/all/meta.json" && grep -q 'share none with the merged' "$M/mixed/cpu/all/all/meta.json" \
  && [ "$(grep -c '"id":' "$M/mixed/cpu/all/all/meta.json")" -ge 1 ] \
  && ok "meta.json lists the profile a merge left out, with the reason" || fail "meta.json left_out" "$(cat "$M/mixed/cpu/all/all/meta.json")"
want=$(for f in "$REAL/google-pprof/sample.cpu" "$TMP/go/cpu-0000.pb.gz" "$REAL/pyroscope/profile_java"; do pprof_sums "$f"; done |
  grep -o 'cpu/nanoseconds=[0-9]*' | awk -F= '{s += $2} END {printf "cpu/nanoseconds=%.0f", s}')
got=$(pprof_sums "$M/mixed/cpu/all/all/merged.pb.gz" | tr -d ' ')
check_eq "profiles merge on their shared sample types (cpu = the three's cpu)" "$got" "$want"
go tool pprof -top "$M/mixed/cpu/all/all/merged.pb.gz" >/dev/null 2>&1 && ok "mixed range still gives a valid merged profile" || fail "mixed range merged profile"
tl=$(awk -F, 'NR > 1 {s += $2} END {printf "%.0f", s}' "$M/mixed/cpu/all/all/timeline.csv")
check_eq "the timeline of a mixed range adds up to the merged total" "cpu/nanoseconds=$tl" "$want"

# --- labels and selectors -----------------------------------------------------
mkdir -p "$M/ingest/lab/cpu/region=eu,zone=a" && ok "mkdir -p in ingest" || fail "mkdir -p in ingest"
cp "$TMP/go/cpu-0001.pb.gz" "$M/ingest/lab/cpu/zone=a,region=eu/" || fail "cp with labels"
cp "$TMP/go/cpu-0002.pb.gz" "$M/ingest/lab/cpu/region=us/" || fail "cp with labels 2"
check_eq "label sets listed sorted and canonical" "$(ls "$M/lab/cpu" | tr '\n' ' ')" "all region=eu,zone=a region=us "
check_eq "a selector matches series that include its pairs" "$(ls "$M/lab/cpu/region=eu/all/profiles" | wc -l)" 1
check_eq "selector pairs in any order" "$(ls "$M/lab/cpu/zone=a,region=eu/all/profiles" | wc -l)" 1
cp "$TMP/go/cpu-0001.pb.gz" "$TMP/run=7.pb.gz" && cp "$TMP/run=7.pb.gz" "$M/ingest/eqname/cpu/" \
  && ok "a file name with '=' is a file, not labels" || fail "a file name with '=' is a file, not labels"
check_eq "all matches every series" "$(ls "$M/lab/cpu/all/all/profiles" | wc -l)" 2
cp "$TMP/go/cpu-0003.pb.gz" "$M/ingest/lab/cpu/path=%2Fapi%2Fv1/" || fail "cp with escaped label"
ls "$M/lab/cpu" | grep -q '^path=%2Fapi%2Fv1$' && ok "escaped label values" || fail "escaped label values" "$(ls "$M/lab/cpu")"

# --- read-only ---------------------------------------------------------------
! touch "$M/newfile" 2>/dev/null && ok "root is read-only" || fail "root is read-only"
! sh -c "echo x > '$M/goapp/cpu/all/all/merged.pb.gz'" 2>/dev/null && ok "views are read-only" || fail "views are read-only"
! mkdir "$M/goapp/newdir" 2>/dev/null && ok "no mkdir outside ingest" || fail "no mkdir outside ingest"
# A generated file goes with its data (rm -r of a label set walks them): rm of one removes nothing.
rm -f "$M/goapp/cpu/all/all/merged.pb.gz" 2>/dev/null; [ -s "$M/goapp/cpu/all/all/merged.pb.gz" ] \
  && ok "rm of a generated file removes nothing" || fail "rm of a generated file removes nothing"
! rm -f "$M/README.txt" 2>/dev/null && ok "no unlink of README.txt" || fail "no unlink of README.txt"
[ -z "$(ls "$M/ingest/goapp/cpu" 2>/dev/null)" ] && ok "stored files do not stay listed in ingest" || fail "stored files do not stay listed"

# --- bad input ----------------------------------------------------------------
before=$(cat "$M/goapp/cpu/all/all/meta.json"; ls -R "$M/goapp" | md5sum)
head -c 4096 /dev/urandom > "$TMP/random.bin"
head -c $(( $(stat -c %s "$TMP/go/cpu-0001.pb.gz") / 2 )) "$TMP/go/cpu-0001.pb.gz" > "$TMP/truncated.pb.gz"	# half: the size varies with the samples taken
head -c 300M /dev/zero | gzip -9 > "$TMP/bomb.gz"
printf '\x0a\x04\x08\x05\x10\x06\x32\x00' > "$TMP/badstring.pb"
: > "$TMP/empty.pb"
for f in random.bin truncated.pb.gz bomb.gz badstring.pb; do
  if cp "$TMP/$f" "$M/ingest/goapp/cpu/" 2>"$TMP/cp.err"; then fail "refuse $f" "cp succeeded"
  else grep -q "Invalid argument\|File too large" "$TMP/cp.err" && ok "refuse $f ($(sed 's/.*: //' "$TMP/cp.err"))" || fail "refuse $f" "$(cat "$TMP/cp.err")"; fi
done
grep -q "refused /ingest/goapp/cpu/truncated.pb.gz: truncated gzip" "$TMP/daemon.log" && ok "log: truncated gzip" || fail "log: truncated gzip"
grep -q "refused /ingest/goapp/cpu/bomb.gz: gzip data inflates past the limit" "$TMP/daemon.log" && ok "log: gzip bomb" || fail "log: gzip bomb"
grep -q "refused /ingest/goapp/cpu/badstring.pb: sample type: string index 5 out of range" "$TMP/daemon.log" && ok "log: string index out of range" || fail "log: string index out of range"
grep -q "refused /ingest/goapp/cpu/random.bin: " "$TMP/daemon.log" && ok "log: random bytes" || fail "log: random bytes"
kill -0 "$PF_PID" && ok "daemon alive after bad input" || fail "daemon alive after bad input"
after=$(cat "$M/goapp/cpu/all/all/meta.json"; ls -R "$M/goapp" | md5sum)
[ "$before" == "$after" ] && ok "nothing stored changed by bad input" || fail "nothing stored changed by bad input"
! cp "$TMP/go/cpu-0001.pb.gz" "$M/ingest/bad%zz/cpu/" 2>/dev/null && ok "bad service name refused" || fail "bad service name refused"
! cp "$TMP/go/cpu-0001.pb.gz" "$M/ingest/svc/BadType/" 2>/dev/null && ok "bad type name refused" || fail "bad type name refused"

# Hostile but small inputs: bytes after the gzip data, a flood of empty
# messages (tiny gzip, huge decoded object count), extreme times.
printf 'GARBAGE' | cat "$TMP/go/cpu-0001.pb.gz" - > "$TMP/trailing.pb.gz"
! cp "$TMP/trailing.pb.gz" "$M/ingest/goapp/cpu/" 2>/dev/null && grep -q "garbage after the gzip data" "$TMP/daemon.log" \
  && ok "refuse bytes after the gzip data" || fail "refuse bytes after the gzip data"
python3 -c 'import gzip,sys; sys.stdout.buffer.write(gzip.compress(b"\x12\x00" * (100 << 20), 6))' > "$TMP/flood.pb.gz"
! cp "$TMP/flood.pb.gz" "$M/ingest/goapp/cpu/" 2>/dev/null && grep -q "too many objects to decode" "$TMP/daemon.log" \
  && ok "refuse a flood of empty messages ($(stat -c %s "$TMP/flood.pb.gz") bytes gzipped)" || fail "refuse a flood of empty messages"
printf '\x0a\x04\x08\x01\x10\x02\x32\x00\x32\x01a\x32\x01b\x12\x02\x10\x01\x48\xff\xff\xff\xff\xff\xff\xff\xff\x7f' > "$TMP/tmax.pb"
printf '\x0a\x04\x08\x01\x10\x02\x32\x00\x32\x01a\x32\x01b\x12\x02\x10\x01\x48\x81\x80\x80\x80\x80\x80\x80\x80\x80\x01' > "$TMP/tmin.pb"
cp "$TMP/tmax.pb" "$M/ingest/extreme/cpu/" && cp "$TMP/tmin.pb" "$M/ingest/extreme/cpu/" && ok "profiles at int64's ends of time" || fail "profiles at int64's ends of time"
bad=0
for r in all 1800-01-01T0000..2200-01-01T0000 last-100000d; do
  for f in meta.json merged.pb.gz timeline.csv timeline.svg diff.pb.gz diff.svg flamegraph.svg folded.txt top.txt; do
    [ -e "$M/extreme/cpu/all/$r" ] || continue
    cat "$M/extreme/cpu/all/$r/$f" >/dev/null 2>&1 || bad=$((bad + 1))
  done
done
ls "$M/extreme/cpu/all" >/dev/null 2>&1 || bad=$((bad + 1))
kill -0 "$PF_PID" && [ "$bad" -eq 0 ] && ok "extreme times and ranges render" || fail "extreme times and ranges render" "$bad failures"
! ln -s x "$M/goapp/link" 2>/dev/null && ! mkfifo "$M/fifo" 2>/dev/null && ok "no symlinks or FIFOs" || fail "no symlinks or FIFOs"
! cp "$TMP/go/cpu-0001.pb.gz" "$M/ingest/goapp/" 2>/dev/null && grep -q "files go in ingest/<service>/<type>/" "$TMP/daemon.log" \
  && ok "cp without a type fails with a reason in the log" || fail "cp without a type fails with a reason in the log"
mkdir -p "$TMP/mnt3"
"$BIN" serve --data "$TMP/data3" "$M" >"$TMP/over.log" 2>&1
check_eq "refuse to mount over a mount (exit 1)" "$?" 1
grep -q "already a mount point" "$TMP/over.log" && ok "says the mount point is taken" || fail "says the mount point is taken" "$(cat "$TMP/over.log")"

# --- restart keeps everything; SIGTERM unmounts cleanly -----------------------
# A stop signal reaches the main thread alone, the one libfuse's loop waits in
# (one taken by another thread left the daemon serving until the next request).
bad=""
for t in /proc/"$PF_PID"/task/*; do
  blk=$((0x$(sed -n 's/^SigBlk:[[:space:]]*//p' "$t/status" 2>/dev/null || echo 0) & 0x4003))
  if [ "${t##*/}" = "$PF_PID" ]; then [ "$blk" -eq 0 ] || bad="$bad main:$blk"
  else [ "$blk" -eq $((0x4003)) ] || bad="$bad ${t##*/}($(cat "$t/comm" 2>/dev/null)):$blk"; fi
done
[ -z "$bad" ] && ok "SIGINT/SIGTERM/SIGHUP blocked in every thread but the main one ($(ls /proc/"$PF_PID"/task | wc -l) threads)" \
  || fail "SIGINT/SIGTERM/SIGHUP blocked in every thread but the main one" "$bad"
# ingest/ lists what was written and the directories mkdir made, until a restart.
snap=$(ls -R --ignore=ingest "$M" | md5sum; pprof_sums "$M/goapp/cpu/all/all/merged.pb.gz")
pf_stop
check_eq "SIGTERM exits 0" "$PF_RC" 0
mountpoint -q "$M" && fail "unmounted on SIGTERM" || ok "unmounted on SIGTERM"
pf_start || fail "restart"
snap2=$(ls -R --ignore=ingest "$M" | md5sum; pprof_sums "$M/goapp/cpu/all/all/merged.pb.gz")
check_eq "restart on the same data keeps everything" "$snap2" "$snap"

# --- kill -9 right after cp; stale mount recovered -----------------------------
cp "$TMP/go/cpu-0002.pb.gz" "$M/ingest/durable/cpu/" && kill -9 "$PF_PID"
wait "$PF_PID" 2>/dev/null; PF_PID=
! ls "$M" >/dev/null 2>&1 && ok "kill -9 leaves a stale mount" || ok "kill -9 left no stale mount"
pf_start && ok "restart recovers a stale mount" || fail "restart recovers a stale mount"
check_eq "acknowledged profile survives kill -9" "$(ls "$M/durable/cpu/all/all/profiles" 2>/dev/null | wc -l)" 1
mkdir -p "$TMP/mnt2"
grep -q "data directory .* is in use" <(timeout 10 "$BIN" serve --data "$TMP/data" "$TMP/mnt2" 2>&1) \
  && ok "second daemon on the same data says it is in use" || fail "second daemon on the same data says it is in use"

# --- retention -------------------------------------------------------------------
pf_stop
pf_start --retention 30d || fail "start with --retention"
for i in $(seq 1 50); do grep -q "retention: deleted" "$TMP/daemon.log" && break; sleep 0.2; done
grep -q "retention: deleted" "$TMP/daemon.log" && ok "retention deletes old profiles" || fail "retention deletes old profiles"
[ ! -e "$M/many/heap/all/all" ] && ok "expired range is absent" || fail "expired range is absent"
check_eq "recent profiles are kept" "$(ls "$M/goapp/cpu/all/all/profiles" | wc -l)" 4

# SIGINT, even for a daemon started from a script in the background (where
# the shell leaves SIGINT ignored), unmounts and exits 0; files still open
# then (the kernel sends no release for them) leave no leak (run.sh checks).
exec 7<"$M/goapp/cpu/all/all/merged.pb.gz" 8>"$M/ingest/held/cpu/open.pb.gz"
kill -INT "$PF_PID"
for i in $(seq 1 50); do kill -0 "$PF_PID" 2>/dev/null || break; sleep 0.1; done
wait "$PF_PID" 2>/dev/null; rc=$?; PF_PID=
exec 7<&- 8>&-
check_eq "SIGINT exits 0 with files open" "$rc" 0
mountpoint -q "$M" && fail "unmounted on SIGINT" || ok "unmounted on SIGINT"

pf_done
