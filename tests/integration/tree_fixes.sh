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

pf_start --http 127.0.0.1:0 || { fail "daemon starts"; pf_done; exit 1; }
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
ls "$M/shop/cpu/env=prod/last-1h" >/dev/null
g0=$(metric 'profilefs_fuse_requests_total{op="getattr"}')
m0=$(metric 'profilefs_merge_duration_seconds_count')
out=$(setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups rm -rf "$M/shop/cpu/env=prod" 2>&1)
g1=$(metric 'profilefs_fuse_requests_total{op="getattr"}')
m1=$(metric 'profilefs_merge_duration_seconds_count')
lines=$(printf '%s\n' "$out" | grep -c .)
echo "# rm -rf by nobody: $lines lines, $((g1 - g0)) getattr, $((m1 - m0)) merges"
[ -d "$M/shop/cpu/env=prod" ] && ok "rm -r by nobody: the label set stays" || fail "rm -r by nobody: the label set stays"
[ $((m1 - m0)) -eq 0 ] && ok "rm -r by nobody renders nothing" || fail "rm -r by nobody renders nothing" "$((m1 - m0)) merges"

# --- rm -r of a label set, then ls at once ----------------------------------------------
out=$(rm -r "$M/shop/cpu/env=dev" 2>&1) && ok "rm -r env=dev: exit 0" || fail "rm -r env=dev: exit 0" "$out"
ls "$M/shop/cpu" | grep -q "env=dev" && fail "ls right after rm -r: env=dev gone" "$(ls "$M/shop/cpu")" \
  || ok "ls right after rm -r: env=dev gone"
grep "deleted /shop/cpu/env=dev:" "$TMP/daemon.log" | tail -1 | sed 's/^/# log: /'
grep "deleted /shop/cpu/env=dev:" "$TMP/daemon.log" | grep -q " 0 profiles of 0 label sets$" \
  && fail "the log counts the deletion" || ok "the log counts the deletion"

pf_stop
pf_done
