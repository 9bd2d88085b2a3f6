#!/usr/bin/env bash
# The front page's quick start, as a newcomer types it: each command below is
# checked to stand in README.md as written (so the page and this test cannot
# drift apart), then run against a real mount with `prof` being the mount
# point: the first profile lands in last-1h, and every "looking at it"
# command works.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" PPROF_BINARY_PATH=/nonexistent

cmds=(
  "cp tests/testdata/demo/cpu.pb.gz prof/ingest/demo/cpu/"
  "ls prof/demo/cpu/all/"
  "cat prof/demo/cpu/all/last-1h/top.txt"
  "head prof/demo/cpu/all/last-1h/folded.txt"
  "cat prof/demo/cpu/all/last-1h/meta.json"
  "go tool pprof -top prof/demo/cpu/all/last-1h/merged.pb.gz"
)
for c in "${cmds[@]}"; do
  grep -qF -- "$c" "$ROOT/README.md" && ok "README.md says: $c" || fail "README.md says: $c"
done

pf_start || { fail "daemon starts and mounts"; pf_done; exit 1; }
ln -s "$TMP/mnt" "$TMP/prof"
cd "$ROOT"
run() { (cd "$ROOT" && eval "${1//prof\//$TMP/prof/}") >"$TMP/out" 2>&1; }

run "${cmds[0]}" && ok "the first profile is stored" || fail "the first profile is stored" "$(cat "$TMP/out")"
run "${cmds[1]}"; grep -qx last-1h "$TMP/out" && ok "it lands in last-1h" || fail "it lands in last-1h" "$(cat "$TMP/out")"
grep -qx "$(date -u +%Y-%m-%d)" "$TMP/out" && ok "and in today's day" || fail "and in today's day"
run "${cmds[2]}" && grep -q "runtime" "$TMP/out" && ok "top.txt names Go functions" || fail "top.txt" "$(head -5 "$TMP/out")"
run "${cmds[3]}" && grep -qE ' [0-9]+$' "$TMP/out" && ok "folded.txt holds stacks and values" || fail "folded.txt" "$(head -3 "$TMP/out")"
run "${cmds[4]}" && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d' "$TMP/out" \
  && ok "meta.json is JSON" || fail "meta.json" "$(head -3 "$TMP/out")"
run "${cmds[5]}" && grep -q "Showing nodes accounting for" "$TMP/out" && ok "go tool pprof reads merged.pb.gz" \
  || fail "go tool pprof reads merged.pb.gz" "$(tail -3 "$TMP/out")"
xmllint --noout "$TMP/prof/demo/cpu/all/last-1h/flamegraph.svg" 2>"$TMP/out" && ok "flamegraph.svg is well-formed SVG" \
  || fail "flamegraph.svg" "$(head -3 "$TMP/out")"

pf_stop
check_eq "Ctrl-C (SIGTERM) stops it cleanly" "$PF_RC" 0
pf_done
