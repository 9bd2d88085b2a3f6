#!/usr/bin/env bash
# The tree as a new user meets it: rm -r of a last-* range refused (one
# line, the reason in ingest/errors.txt) while rm -r of the label set above
# it works; a non-writer's rm -r renders no view; ls right after a deletion
# no longer lists it; mkdir in ingest/; directory mtimes from the newest
# profile; the deletion log's counts.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
chmod 755 "$TMP"
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod
M="$TMP/mnt"
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 100ms >/dev/null || fail "generate Go profiles"

pf_start --http 127.0.0.1:0 --allow-other || { fail "daemon starts"; pf_done; exit 1; }
for i in $(seq 1 100); do grep -q "listening on http" "$TMP/daemon.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
U="http://127.0.0.1:$PORT"
metric() { curl -s "$U/metrics" | awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { print s + 0 }'; }

for i in 0 1; do cp "$TMP/go/cpu-000$i.pb.gz" "$M/ingest/shop/cpu/env=prod/"; done
for i in 2 3; do cp "$TMP/go/cpu-000$i.pb.gz" "$M/ingest/shop/cpu/env=dev/"; done
cp "$TMP/go/cpu-0000.pb.gz" "$M/ingest/other/cpu/"

# --- rm -r of a last-* range ------------------------------------------------------
n0=$(ls "$M/shop/cpu/all/all/profiles" | wc -l)
out=$(rm -r "$M/shop/cpu/all/last-1h" 2>&1); rc=$?
lines=$(printf '%s\n' "$out" | grep -c .)
echo "# rm -r last-1h: exit $rc, $lines lines: $out"
[ "$rc" -ne 0 ] && ok "rm -r last-1h fails" || fail "rm -r last-1h fails"
case "$out" in *"Operation not permitted"*) ok "rm -r last-1h: Operation not permitted";;
  *) fail "rm -r last-1h: Operation not permitted" "$out";; esac
[ "$lines" -eq 1 ] && ok "rm -r last-1h: one line" || fail "rm -r last-1h: one line" "$lines"
check_eq "rm -r last-1h deleted nothing" "$(ls "$M/shop/cpu/all/all/profiles" | wc -l)" "$n0"
grep -q "last-1h moves with the clock" "$M/ingest/errors.txt" && ok "errors.txt says why" \
  || fail "errors.txt says why" "$(tail -3 "$M/ingest/errors.txt")"
f=$(ls "$M/shop/cpu/all/last-1h/profiles" | head -1)
rm "$M/shop/cpu/all/last-1h/profiles/$f" 2>/dev/null && fail "rm of a profile through last-1h fails" \
  || ok "rm of a profile through last-1h fails"
check_eq "... and deleted nothing" "$(ls "$M/shop/cpu/all/all/profiles" | wc -l)" "$n0"

# --- a non-writer's rm -r -----------------------------------------------------------
# Listing a range directory merges once (it names flamegraph.<type>.svg);
# unlinkat after the listing must not look views up one by one (each lookup
# would render its file): at most one merge per range directory.
nranges=$(ls "$M/shop/cpu/env=prod" | wc -l)
g0=$(metric 'profilefs_fuse_requests_total{op="getattr"}')
m0=$(metric 'profilefs_merge_duration_seconds_count')
out=$(setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups rm -rf "$M/shop/cpu/env=prod" 2>&1)
g1=$(metric 'profilefs_fuse_requests_total{op="getattr"}')
m1=$(metric 'profilefs_merge_duration_seconds_count')
lines=$(printf '%s\n' "$out" | grep -c .)
echo "# rm -rf by nobody: $lines lines, $((g1 - g0)) getattr, $((m1 - m0)) merges, $nranges range directories"
[ -d "$M/shop/cpu/env=prod" ] && ok "rm -r by nobody: the label set stays" || fail "rm -r by nobody: the label set stays"
[ $((m1 - m0)) -le "$nranges" ] && ok "rm -r by nobody renders no view" \
  || fail "rm -r by nobody renders no view" "$((m1 - m0)) merges for $nranges ranges"
case "$out" in *"Permission denied"*) ok "rm -r by nobody: Permission denied";;
  *) fail "rm -r by nobody: Permission denied" "$out";; esac

# --- rm -r of a label set, then ls at once ----------------------------------------------
out=$(rm -r "$M/shop/cpu/env=dev" 2>&1) && ok "rm -r env=dev: exit 0" || fail "rm -r env=dev: exit 0" "$out"
ls "$M/shop/cpu" | grep -q "env=dev" && fail "ls right after rm -r: env=dev gone" "$(ls "$M/shop/cpu")" \
  || ok "ls right after rm -r: env=dev gone"
grep "deleted /shop/cpu/env=dev" "$TMP/daemon.log" | sed 's/^/# log: /'
line=$(grep "deleted /shop/cpu/env=dev:" "$TMP/daemon.log" | tail -1)
case "$line" in *": 0 profiles of 0 label sets"|"") fail "the log counts the deletion" "$line";;
  *) ok "the log counts the deletion";; esac

# --- rm -r of a service walks its last-* ranges quietly ------------------------------
out=$(rm -r "$M/other" 2>&1) && ok "rm -r of a service: exit 0" || fail "rm -r of a service: exit 0" "$out"
ls "$M" | grep -qx other && fail "the service is gone" || ok "the service is gone"

# --- HTTP DELETE, then ls at once -----------------------------------------------------
cp "$TMP/go/cpu-0001.pb.gz" "$M/ingest/web/cpu/env=a/"
cp "$TMP/go/cpu-0002.pb.gz" "$M/ingest/web/cpu/env=b/"
ls "$M/web/cpu/env=a/all/profiles" >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$U/api/0/services/web?type=cpu&labels=env%3Da")
echo "# HTTP DELETE: $code"
check_eq "HTTP DELETE of a label set" "$code" 200
ls "$M/web/cpu" | grep -q "env=a" && fail "ls right after DELETE: env=a gone" || ok "ls right after DELETE: env=a gone"
check_eq "ls of all/profiles right after DELETE: env=b's only" "$(ls "$M/web/cpu/all/all/profiles" | wc -l)" 1
grep -q "dropped\|retention had emptied" "$TMP/daemon.log" && fail "no retention message without retention" \
  || ok "no retention message without retention"

# --- mkdir below ingest/ --------------------------------------------------------------
mkdir "$M/ingest/newsvc" && ok "mkdir ingest/newsvc: exit 0" || fail "mkdir ingest/newsvc: exit 0"
out=$(mkdir "$M/ingest/newsvc" 2>&1); rc=$?
[ "$rc" -ne 0 ] && ok "mkdir again: File exists ($out)" || fail "mkdir again fails"
mkdir -p "$M/ingest/newsvc/cpu/env=x" && ok "mkdir -p of a label directory" || fail "mkdir -p of a label directory"
check_eq "ls ingest/ lists errors.txt and the made directory" "$(ls "$M/ingest" | tr '\n' ' ')" "errors.txt newsvc "
check_eq "ls ingest/newsvc/cpu" "$(ls "$M/ingest/newsvc/cpu")" "env=x"
cp "$TMP/go/cpu-0003.pb.gz" "$M/ingest/newsvc/cpu/env=x/" && ok "cp into the made directory" || fail "cp into the made directory"
cp "$TMP/go/cpu-0003.pb.gz" "$M/ingest/unmade/cpu/" && ok "cp into a directory never made" || fail "cp into a directory never made"
out=$(mkdir "$M/ingest/newsvc/cpuu" 2>&1) && fail "mkdir of a bad type fails" || ok "mkdir of a bad type fails: $out"

# --- directory times: the newest profile's ---------------------------------------------
svc_m=$(stat -c %Y "$M/newsvc"); now=$(date +%s)
echo "# mtime of newsvc: $svc_m (now $now)"
newest=$(ls "$M/newsvc/cpu/all/all/profiles" | sort | tail -1 | cut -c1-17)
check_eq "newsvc's mtime is its newest profile's time" "$(date -u -d "@$svc_m" +%Y-%m-%dT%H%M%S)" "$newest"
check_eq "type directory: the same" "$(stat -c %Y "$M/newsvc/cpu")" "$svc_m"
check_eq "label set directory: the same" "$(stat -c %Y "$M/newsvc/cpu/env=x")" "$svc_m"

# --- readable times in diff.svg, cores in timeline.csv -------------------------------------
d="$M/shop/cpu/env=prod/last-1h"
title=$(grep -o '<text class="title"[^<]*' "$d/diff.svg")
echo "# diff.svg title: ${title#*>}"
echo "$title" | grep -qE '[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}' && fail "diff.svg: no nanoseconds in the title" \
  || ok "diff.svg: no nanoseconds in the title"
# (The end has its date too when the range crosses midnight.)
echo "$title" | grep -qE '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} to ([0-9]{4}-[0-9]{2}-[0-9]{2} )?[0-9]{2}:[0-9]{2}:[0-9]{2} UTC' \
  && ok "diff.svg: the range before to the second" || fail "diff.svg: the range before to the second" "$title"
check_eq "timeline.csv's header" "$(head -1 "$d/timeline.csv")" "time,cpu_nanoseconds,cpu_cores"
step=$(( $(date -u -d "$(sed -n 3p "$d/timeline.csv" | cut -d, -f1)" +%s) - $(date -u -d "$(sed -n 2p "$d/timeline.csv" | cut -d, -f1)" +%s) ))
cores=$(awk -F, -v step="$step" 'NR > 1 && $2 > 0 { printf "%.4f=%.4f\n", $2 / (step * 1e9), $3 }' "$d/timeline.csv" | head -1)
echo "# timeline.csv ns/step -> cores: $cores"
[ -n "$cores" ] && [ "${cores%=*}" == "${cores#*=}" ] && ok "cpu_cores is ns over the step" \
  || fail "cpu_cores is ns over the step" "$cores"
grep -q "cores</text>" "$d/timeline.svg" && ok "timeline.svg's axis in cores" || fail "timeline.svg's axis in cores"

pf_stop
pf_done
