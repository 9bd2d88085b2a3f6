#!/usr/bin/env bash
# Errors where the user is: a cp into ingest/ that fails, a directory there
# that cannot be one, and a name of the tree that is not well formed
# (last-1hr, a reversed FROM..TO, a selector that does not parse) give the
# caller a bare errno; the reason is readable from inside the mount, in
# ingest/errors.txt, and in the log. A well-formed name without data is not
# noted; a flood of malformed names is logged a bounded number of times.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
M="$TMP/mnt"
TOOLS="$(dirname "$0")"

pf_start || { fail "daemon starts and mounts"; pf_done; exit 1; }
ok "daemon starts and mounts"

ls "$M/ingest" | grep -qx errors.txt && ok "ingest/ lists errors.txt" || fail "ingest/ lists errors.txt" "$(ls "$M/ingest")"
grep -q "ingest/errors.txt" "$M/README.txt" && ok "README.txt points to ingest/errors.txt" \
  || fail "README.txt points to ingest/errors.txt"

# A profile to make the tree hold a service, type and label set.
t0=$(( ($(date +%s) - 60) * 1000000000 ))
printf 'main;work 100\n' > "$TMP/p.folded"
python3 "$TOOLS/folded2pprof.py" "$TMP/p.pb.gz" "$t0" "$TMP/p.folded"
cp "$TMP/p.pb.gz" "$M/ingest/demo/cpu/" || fail "a good profile is stored"

echo "not a profile" > "$TMP/bad.txt"
! cp "$TMP/bad.txt" "$M/ingest/demo/cpu/" 2>/dev/null && ok "cp of a non-profile fails" || fail "cp of a non-profile fails"
! cp "$TMP/p.pb.gz" "$M/ingest/demo/cpuu/" 2>/dev/null && ok "cp into an unknown type fails" || fail "cp into an unknown type fails"
! cp "$TMP/p.pb.gz" "$M/ingest/my service/cpu/" 2>/dev/null && ok "cp into a bad service name fails" || fail "cp into a bad service name fails"
for n in all/last-1hr all/2026-11-22T1000..2026-11-22T0900 'pod=~[' env=prod,env=dev all/last-1h/vs/last-1hr; do
  ! ls "$M/demo/cpu/$n" >/dev/null 2>&1 || fail "ls demo/cpu/$n fails"
done
ls "$M/demo/cpu/all/2001-01-01" >/dev/null 2>&1	# well formed, no data: not noted

sleep 0.2
E="$(cat "$M/ingest/errors.txt")"
echo "$E" | sed 's/^/#   /'
has() { echo "$E" | grep -qF -- "$2" && ok "errors.txt: $1" || fail "errors.txt: $1" "no '$2'"; }
has "a non-profile, with the decoder's reason" "refused /ingest/demo/cpu/bad.txt: not a pprof profile"
has "an unknown type, with the known ones" 'unknown profile type "cpuu": known types are'
has "a bad service name, with the rule" 'service name "my service": use 1 to'
has "last-1hr" '"last-1hr" is not a range: after last- comes a number'
has "a reversed FROM..TO" '"2026-11-22T1000..2026-11-22T0900": TO is not after FROM'
has "a selector that does not parse" '"pod=~[" is not a label selector'
has "a key given twice" 'label key "env" given twice'
has "a vs/ base that is neither" '"last-1hr" is not a base to compare with'
echo "$E" | grep -q "2001-01-01" && fail "a well-formed range without data is not noted" || ok "a well-formed range without data is not noted"
grep -q "ingest/errors.txt in the mount" "$TMP/daemon.log" && ok "the log's first refusal says where the reasons are kept" \
  || fail "the log's first refusal says where the reasons are kept"
! (echo x > "$M/ingest/errors.txt") 2>/dev/null && ok "errors.txt is read-only" || fail "errors.txt is read-only"

# A flood of malformed names: errors.txt keeps the newest 100, the log a bounded number.
before=$(grep -c "lookup /demo/cpu/all/last-" "$TMP/daemon.log")
for i in $(seq 1 300); do ls "$M/demo/cpu/all/last-${i}x" >/dev/null 2>&1; done
after=$(grep -c "lookup /demo/cpu/all/last-" "$TMP/daemon.log")
sleep 0.2
lines=$(grep -c "lookup /demo/cpu/all/last-" "$M/ingest/errors.txt")
echo "# 300 malformed names: $((after - before)) logged, $lines kept in errors.txt"
[ $((after - before)) -le 60 ] && ok "a flood of malformed names is logged a bounded number of times ($((after - before)) of 300)" \
  || fail "a flood of malformed names is logged a bounded number of times" "$((after - before)) lines"
[ "$lines" -le 100 ] && [ "$lines" -ge 50 ] && ok "errors.txt keeps the newest 100 ($lines lookup lines)" \
  || fail "errors.txt keeps the newest 100" "$lines"
grep -q 'last-300x' "$M/ingest/errors.txt" && ok "errors.txt has the newest" || fail "errors.txt has the newest"
kill -0 "$PF_PID" && ok "daemon alive" || fail "daemon alive"

pf_stop
check_eq "clean exit" "$PF_RC" 0
pf_done
