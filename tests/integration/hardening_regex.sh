#!/usr/bin/env bash
# Hardening of the label matchers' regular expressions and of the queries'
# deadlines, each finding of the review rebuilt as it ran:
#
#   memory    the 29-byte (a|b|c|d|e|f|g|h|i|j){1,1800} took ~256 MB to compile:
#             a Series call of 64 of them by nobody, and ls of such a selector
#             directory by nobody under --allow-other; then 64 of the largest
#             count RE2 allows ({1,1000}, accepted) and a selector past the cap.
#             The daemon's peak RSS (VmHWM) stays within the memory budget plus a
#             stated margin; its CPU seconds are printed.
#   backref   (.*)(.*)(.*)(.*)(.*)\5\4\3\2x took 17-42 s against a 96-byte value:
#             refused with 400 and the reason, over Connect, profefe and the tree.
#   deadline  a Series call whose matching costs ~17 ms per series and selector
#             (linear, but long): with its client killed the daemon's CPU stops
#             growing; left alone it ends with 503 once past --query-cpu-limit.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
command -v setpriv >/dev/null || { echo "# setpriv not installed"; pf_done; exit 0; }

LIMIT_MB=256		# --memory-limit
MARGIN_MB=256		# the daemon's own RSS besides the budget (code, RocksDB, ASan's shadow)
CPU_LIMIT=8		# --query-cpu-limit, seconds

listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
hwm_mb() { awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$PF_PID/status"; }
rss_mb() { awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$PF_PID/status"; }
TICK=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TICK" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$PF_PID/stat"; }
# within_budget NAME: the daemon's peak RSS is at most the budget plus the margin
within_budget() {
  local h; h=$(hwm_mb)
  echo "# $1: daemon VmHWM ${h} MB, VmRSS $(rss_mb) MB, CPU $(cpu_s) s (budget ${LIMIT_MB} MB + margin ${MARGIN_MB} MB)"
  [ "$h" -le $((LIMIT_MB + MARGIN_MB)) ] && ok "$1: peak RSS ${h} MB within ${LIMIT_MB}+${MARGIN_MB} MB" \
    || fail "$1: peak RSS within ${LIMIT_MB}+${MARGIN_MB} MB" "VmHWM ${h} MB"
}
chmod 711 "$TMP"
NB="$TMP/nobody"; mkdir -p "$NB"; chmod 1777 "$NB"
# ncall NAME JSON-FILE: a Connect Series call as nobody; status in $ST, body in $NB/body
ncall() {
  ST=$(as_nobody curl -s -o "$NB/body" -w '%{http_code}' --max-time 120 -X POST \
    -H 'Content-Type: application/json' "$Q/$1" --data-binary "@$2")
}
# selectors N PATTERN [PER]: {"matchers":[N selectors of PER pod=~PATTERN matchers]}
selectors() {
  python3 - "$@" <<'EOF'
import json, sys
n, pat = int(sys.argv[1]), sys.argv[2]
per = int(sys.argv[3]) if len(sys.argv) > 3 else 1
sel = "{" + ",".join('k%d=~%s' % (j, json.dumps(pat)) for j in range(per)) + "}"
print(json.dumps({"matchers": [sel.replace("k0=~", "pod=~") if per == 1 else sel] * n}))
EOF
}

# ASan keeps freed blocks in a quarantine (256 MB by default) that RSS would
# count as if live: a small one, so the peak measures what the daemon holds.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}quarantine_size_mb=16"
pf_start --http 127.0.0.1:0 --allow-other --memory-limit "${LIMIT_MB}M" \
  --query-cpu-limit "${CPU_LIMIT}s" || { fail "daemon starts"; pf_done; exit 1; }
for _ in $(seq 50); do [ -n "$(listen_port "$TMP/daemon.log")" ] && break; sleep 0.1; done
U="http://127.0.0.1:$(listen_port "$TMP/daemon.log")"
Q="$U/querier.v1.QuerierService"
M="$TMP/mnt"
ok "daemon starts with --allow-other --memory-limit ${LIMIT_MB}M --query-cpu-limit ${CPU_LIMIT}s"
"$BIN" --help | grep -q -- "--query-cpu-limit DURATION" && ok "--help names --query-cpu-limit" \
  || fail "--help names --query-cpu-limit"

# Twenty series whose pod values are 250 random a/b bytes: long to match.
python3 "$ROOT/tests/integration/memory_tools.py" tiny "$TMP/tiny.pb.gz" >/dev/null \
  || { fail "make a profile"; pf_done; exit 1; }
python3 - "$TMP/pods" <<'EOF'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for i in range(20):
        f.write("%02d%s\n" % (i, "".join(random.choice("ab") for _ in range(248))))
EOF
n=0
while read -r pod; do
  curl -sf -o /dev/null -XPOST "$U/api/0/profiles?service=rx&type=cpu&labels=pod=$pod" \
    --data-binary "@$TMP/tiny.pb.gz" && n=$((n + 1))
done <"$TMP/pods"
check_eq "20 series stored (pod values of 250 bytes)" "$n" 20
for _ in $(seq 50); do [ "$(ls "$M/rx/cpu" 2>/dev/null | wc -l)" -ge 20 ] && break; sleep 0.1; done
within_budget "at the start"

# --- memory ----------------------------------------------------------------------
BIG='(a|b|c|d|e|f|g|h|i|j){1,1800}'
selectors 64 "$BIG" >"$NB/big.json"
cpu0=$(cpu_s)
ncall Series "$NB/big.json"
check_eq "nobody: Series of 64 selectors $BIG refused" "$ST" 400
grep -q "at most 1000" "$NB/body" && ok "the reason: a repetition count is at most 1000" \
  || fail "the reason names the count" "$(head -c 300 "$NB/body")"
echo "# Series of 64 x $BIG: HTTP $ST, daemon CPU $(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }') s"
within_budget "Series of 64 x $BIG as nobody"

cpu0=$(cpu_s)
out=$(as_nobody ls "$M/rx/cpu/pod=~(a|b|c|d|e|f|g|h|i|j){1%2C1800}/" 2>&1); rc=$?
# The tree has no name for a selector it cannot compile: ENOENT, as for any bad name.
[ $rc -ne 0 ] && echo "$out" | grep -qi "no such file" \
  && ok "nobody: ls of the selector directory {1,1800}: no such directory" \
  || fail "nobody: ls of the {1,1800} selector directory fails" "rc $rc: $out"
echo "# ls of pod=~$BIG/ as nobody: daemon CPU $(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }') s"
within_budget "ls of the {1,1800} selector directory as nobody"

OK1000='(a|b|c|d|e|f|g|h|i|j){1,1000}'
cpu0=$(cpu_s)
out=$(as_nobody ls "$M/rx/cpu/pod=~[0-9]{2}(a|b|c|d|e|f|g|h|i|j){1%2C1000}/" 2>&1) \
  && echo "$out" | grep -q '^all$' \
  && ok "nobody: ls of the selector directory [0-9]{2}$OK1000 (what RE2 allows) lists its ranges" \
  || fail "nobody: ls of the [0-9]{2}$OK1000 selector directory" "$out"
echo "# ls of pod=~[0-9]{2}$OK1000/ as nobody: daemon CPU $(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }') s"
selectors 64 "$OK1000" >"$NB/ok.json"
cpu0=$(cpu_s)
ncall Series "$NB/ok.json"
check_eq "nobody: Series of 64 selectors $OK1000 answered" "$ST" 200
echo "# Series of 64 x $OK1000: HTTP $ST, daemon CPU $(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }') s"
within_budget "Series of 64 x $OK1000 as nobody"

selectors 1 '(abcd|efgh|ijkl|mnop){1,1000}' 64 >"$NB/cap.json"
ncall Series "$NB/cap.json"
check_eq "one selector of 64 x (abcd|efgh|ijkl|mnop){1,1000}: refused" "$ST" 400
grep -q "would take more than 32 MiB" "$NB/body" && ok "the reason: past the selector's 32 MiB" \
  || fail "the reason names the selector's cap" "$(head -c 300 "$NB/body")"
selectors 64 '(abcd|efgh|ijkl|mnop){1,1000}' >"$NB/cap2.json"
ncall Series "$NB/cap2.json"
check_eq "64 selectors of (abcd|efgh|ijkl|mnop){1,1000}: refused" "$ST" 400
grep -q "together" "$NB/body" && ok "the reason: past the request's 32 MiB" \
  || fail "the reason names the request's cap" "$(head -c 300 "$NB/body")"
within_budget "the caps"
used=$(curl -s "$U/metrics" | awk '$1 == "profilefs_memory_budget_bytes{kind=\"used\"}" { print $2 }')
echo "# budget in use after the requests: ${used:-?} bytes"

# --- backref -----------------------------------------------------------------------
BR='(.*)(.*)(.*)(.*)(.*)\5\4\3\2x'
python3 -c 'import json, sys; print(json.dumps({"matchers": ["{pod=~%s}" % json.dumps(sys.argv[1])]}))' \
  "$BR" >"$NB/br.json"
t0=$(date +%s.%N)
ncall Series "$NB/br.json"
check_eq "nobody: Series with the back-reference $BR refused" "$ST" 400
grep -q 'back-references' "$NB/body" && ok "the reason: back-references are not supported" \
  || fail "the reason names back-references" "$(head -c 300 "$NB/body")"
echo "# back-reference over Connect: HTTP $ST in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }') s: $(jq -r .message "$NB/body" 2>/dev/null | head -c 200)"
st=$(curl -s -o "$TMP/pb" -w '%{http_code}' -G "$U/api/0/profiles/merge" --data-urlencode service=rx \
  --data-urlencode type=cpu --data-urlencode "labels=pod=~$BR")
check_eq "profefe merge with the back-reference: 400" "$st" 400
grep -q 'back-references' "$TMP/pb" && ok "profefe: the reason" || fail "profefe: the reason" "$(head -c 300 "$TMP/pb")"
out=$(ls "$M/rx/cpu/pod=~(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2x/" 2>&1)
echo "$out" | grep -qi "no such file" && ok "tree: ls of the back-reference selector: no such directory" \
  || fail "tree: ls of the back-reference selector: no such directory" "$out"
ls "$M/rx/cpu/pod=~(.*)(.*)(.*)(.*)(.*)b/" 2>/dev/null | grep -q '^all$' \
  && ok "tree: the same shape without back-references lists its ranges" \
  || fail "tree: (.*)(.*)(.*)(.*)(.*)b lists its ranges"

# --- deadline ------------------------------------------------------------------------
# (.*){1,1000}x is linear, but ~17 ms on a 250-byte value; 60 selectors of it
# (31 MiB of programs, under the cap) over 20 series: minutes of CPU.
selectors 60 '(.*){1,1000}x' >"$NB/slow.json"
# setpriv itself, not the function: $! must be curl's pid, not a subshell's.
setpriv --reuid=nobody --regid=nogroup --clear-groups curl -s -o /dev/null --max-time 300 \
  -X POST -H 'Content-Type: application/json' "$Q/Series" --data-binary "@$NB/slow.json" &
CURL=$!
sleep 1.5
c1=$(cpu_s)
kill "$CURL" 2>/dev/null; wait "$CURL" 2>/dev/null
sleep 0.5
c2=$(cpu_s)
sleep 2.5
c3=$(cpu_s)
grow=$(awk -v a="$c2" -v b="$c3" 'BEGIN { printf "%.2f", b - a }')
echo "# client killed at daemon CPU $c1 s; 0.5 s later $c2 s; 2.5 s after that $c3 s (+$grow s)"
awk -v g="$grow" 'BEGIN { exit !(g < 1.0) }' \
  && ok "the client gone, the query stops: +$grow s of CPU in 2.5 s (< 1 s)" \
  || fail "the client gone, the query stops" "+$grow s of CPU in 2.5 s"
grep -q 'code="499"' <(curl -s "$U/metrics") && ok "metrics count the request as 499" \
  || fail "metrics count the request as 499" "$(curl -s "$U/metrics" | grep -i 'querier.*code' | head -5)"

c0=$(cpu_s); t0=$(date +%s.%N)
ncall Series "$NB/slow.json"
t1=$(date +%s.%N); c1=$(cpu_s)
echo "# left alone: HTTP $ST after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, daemon CPU +$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s: $(jq -r .message "$NB/body" 2>/dev/null | head -c 200)"
check_eq "left alone, the query ends at --query-cpu-limit with 503" "$ST" 503
grep -q "query-cpu-limit" "$NB/body" && ok "the reason names --query-cpu-limit" \
  || fail "the reason names --query-cpu-limit" "$(head -c 300 "$NB/body")"
awk -v a="$c0" -v b="$c1" -v l="$CPU_LIMIT" 'BEGIN { exit !(b - a < l + 4) }' \
  && ok "it used about --query-cpu-limit of CPU (< ${CPU_LIMIT}+4 s)" \
  || fail "it used about --query-cpu-limit of CPU" "$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }') s"

# The merge path (store/query.c): SelectMergeStacktraces whose one selector
# holds 59 x pod=~"(.*){1,1000}" (each ~7 ms on a 250-byte value, and all
# hold): ~0.4 s of matching per series. Its client killed, the merge stops.
python3 -c 'import json; print(json.dumps({"profile_typeID": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
  "label_selector": "{" + ",".join(["pod=~\"(.*){1,1000}\""] * 59) + "}", "start": 0,
  "end": 4102444800000}))' >"$NB/merge.json"
setpriv --reuid=nobody --regid=nogroup --clear-groups curl -s -o /dev/null --max-time 300 \
  -X POST -H 'Content-Type: application/json' "$Q/SelectMergeStacktraces" \
  --data-binary "@$NB/merge.json" &
CURL=$!
sleep 1.5
c1=$(cpu_s)
kill "$CURL" 2>/dev/null; wait "$CURL" 2>/dev/null
sleep 1
c2=$(cpu_s)
sleep 2.5
c3=$(cpu_s)
grow=$(awk -v a="$c2" -v b="$c3" 'BEGIN { printf "%.2f", b - a }')
echo "# merge: client killed at daemon CPU $c1 s; 1 s later $c2 s; 2.5 s after that $c3 s (+$grow s)"
awk -v g="$grow" 'BEGIN { exit !(g < 1.0) }' \
  && ok "the merge's client gone, the merge stops: +$grow s of CPU in 2.5 s (< 1 s)" \
  || fail "the merge's client gone, the merge stops" "+$grow s of CPU in 2.5 s"
c0=$(cpu_s); t0=$(date +%s.%N)
ncall SelectMergeStacktraces "$NB/merge.json"
echo "# merge left alone: HTTP $ST after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, daemon CPU +$(awk -v a="$c0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }') s: $(jq -r '.message // "a flame graph"' "$NB/body" 2>/dev/null | head -c 160)"
[ "$ST" = 200 ] || [ "$ST" = 503 ] && ok "the merge left alone ends: $ST" || fail "the merge left alone ends" "$ST"

within_budget "at the end"
check "the daemon is alive" kill -0 "$PF_PID"
curl -sf -o /dev/null "$U/api/0/profiles/merge?service=rx&type=cpu&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00" \
  && ok "nothing stored lost: the merge of rx answers" || fail "the merge of rx answers"
pf_done
