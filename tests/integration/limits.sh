#!/usr/bin/env bash
# Limits the store keeps whatever producers send: the data directory private
# and never a foreign one, profile times within a sane window (a profile at
# int64's end of time lands at its reception, a client's absurd created_at is
# refused), and a cap on the label sets of one service.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
M="$TMP/mnt"
REAL="${PROFILEFS_REAL:-$ROOT/../shared/testdata/real}"
[ -d "$REAL" ] || REAL="$ROOT/tests/testdata/real"
GO="$REAL/pprof-rs/profile-cpu-example.pb"

# --- the data directory -------------------------------------------------------
mkdir -p "$TMP/foreign" && echo "notes" > "$TMP/foreign/todo.txt"
"$BIN" serve --data "$TMP/foreign" "$TMP/mnt2" >"$TMP/foreign.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "not empty and holds no profilefs database" "$TMP/foreign.log" \
  && [ "$(ls "$TMP/foreign")" = "todo.txt" ] \
  && ok "a non-empty foreign --data directory is refused and left as it was" \
  || fail "a non-empty foreign --data directory is refused" "rc=$rc $(cat "$TMP/foreign.log")"

pf_start --http 127.0.0.1:0 --max-series 3 || { fail "daemon starts"; pf_done; exit 1; }
check_eq "data directory is 0700" "$(stat -c %a "$TMP/data")" 700
loose=$(find "$TMP/data" -type f -perm /077 | wc -l)
check_eq "no database file readable by others" "$loose" 0

# --- times ----------------------------------------------------------------------
# A tiny valid profile whose time_nanos is INT64_MAX (field 9).
printf '\x0a\x04\x08\x01\x10\x02\x32\x00\x32\x01a\x32\x01b\x12\x02\x10\x01\x48\xff\xff\xff\xff\xff\xff\xff\xff\x7f' > "$TMP/tmax.pb"
cp "$TMP/tmax.pb" "$M/ingest/future/cpu/" && [ -e "$M/future/cpu/all/last-5m/merged.pb.gz" ] \
  && ok "a profile dated at int64's end lands at its reception (visible in last-5m)" \
  || fail "a profile dated at int64's end lands at its reception"
grep -q "out of range; stored at its time of reception" "$TMP/daemon.log" \
  && ok "the out-of-range time is logged" || fail "the out-of-range time is logged"
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
if [ -n "$PORT" ]; then
  code=$(curl -s --noproxy '*' -o "$TMP/far.json" -w '%{http_code}' --data-binary @"$GO" \
    "http://127.0.0.1:$PORT/api/0/profiles?service=far&type=cpu&created_at=2999-01-01T00:00:00")
  [ "$code" = 400 ] && grep -q "2000-01-01 to a day from now" "$TMP/far.json" \
    && ok "created_at centuries ahead: 400 with the window" || fail "created_at centuries ahead" "$code $(cat "$TMP/far.json")"
  code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --data-binary @"$GO" \
    "http://127.0.0.1:$PORT/api/0/profiles?service=far&type=cpu&created_at=2026-01-01T00:00:00")
  check_eq "created_at this year: 200" "$code" 200
else
  fail "HTTP port in the log"
fi

# --- series per service ---------------------------------------------------------------
for i in 1 2 3; do cp "$GO" "$M/ingest/churn/cpu/req=$i/" || fail "label set $i of 3 stored"; done
if cp "$GO" "$M/ingest/churn/cpu/req=4/" 2>/dev/null; then
  fail "a 4th label set past --max-series 3 is refused"
else
  grep -q "service churn already has 3 label sets, the limit" "$TMP/daemon.log" \
    && ok "a 4th label set past --max-series 3 is refused, with the reason logged" \
    || fail "the reason of the refusal is logged"
fi
cp "$GO" "$M/ingest/churn/cpu/req=2/" && ok "an existing label set still takes profiles" \
  || fail "an existing label set still takes profiles"
check_eq "the service lists its 3 label sets and all" "$(ls "$M/churn/cpu" | wc -l)" 4
kill -0 "$PF_PID" && ok "daemon alive" || fail "daemon alive"
pf_stop
check_eq "clean exit" "${PF_RC:-1}" 0

# --- a flood of label sets ---------------------------------------------------------
# 10,000 pushes, each with a label set of its own (a request id in a label), at
# the default --max-series: the first 2,000 are stored, the rest refused with
# the reason, and the tree, merges and /healthz stay as they were.
rm -rf "$TMP/data"
pf_start --http 127.0.0.1:0 || { fail "daemon starts"; pf_done; exit 1; }
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" || fail "build httpload"
"$TMP/httpload" -c 8 -n 10000 -t 600 -T "$(( $(date +%s) - 60 )),1,10000" \
  -p '/api/0/profiles?service=flood&type=cpu&labels=req={k}' 127.0.0.1 "$PORT" "$GO" > "$TMP/flood.out" 2>&1
read -r okn badn <<<"$(sed -n 's/^requests [0-9]* ok \([0-9]*\) failed \([0-9]*\).*/\1 \2/p' "$TMP/flood.out")"
check_eq "10,000 label sets: 2,000 stored, 8,000 refused" "${okn:-?} ${badn:-?}" "2000 8000"
code=$(curl -s --noproxy '*' -o "$TMP/refused.json" -w '%{http_code}' --data-binary @"$GO" \
  "http://127.0.0.1:$PORT/api/0/profiles?service=flood&type=cpu&labels=req=one-more")
[ "${code:0:1}" = 4 ] && grep -q "already has 2000 label sets, the limit" "$TMP/refused.json" \
  && ok "one more is refused with a 4xx that says why (--max-series)" \
  || fail "one more is refused with the reason" "$code $(cat "$TMP/refused.json")"
check_eq "ls lists the 2,000 label sets and all" "$(ls "$M/flood/cpu" | wc -l)" 2001
check_eq "ls / still lists the service" "$(ls "$M" | grep -c '^flood$')" 1
want=$(pprof_sums "$GO" | grep -o 'cpu/count=[0-9]*' | cut -d= -f2)
got=$(pprof_sums "$M/flood/cpu/all/all/merged.pb.gz" | grep -o 'cpu/count=[0-9]*' | cut -d= -f2)
check_eq "the merge over 2,000 label sets sums them all" "${got:-?}" "$((want * 2000))"
code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")
check_eq "/healthz after the flood" "$code" 200
echo "# daemon RSS after 10,000 label sets: $(awk '/VmRSS/ {print $2, $3}' /proc/$PF_PID/status)"
pf_stop
check_eq "clean exit after the flood" "${PF_RC:-1}" 0
pf_done
