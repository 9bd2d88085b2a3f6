#!/usr/bin/env bash
# What a walk of the tree costs in FUSE requests, and what the kernel's
# caching it relies on leaves true. du -s of a service sends about one
# request per entry (the entry's stat): stored profiles come with their
# attributes in the listing (READDIRPLUS on every reply), names are kept,
# and a range directory's attributes are kept a second, so the stat of an
# entry is not also a stat of its directory (it was three requests per
# entry). With that caching on: a profile stored after a listing is listed
# and stat'ed at once, one in a new hour too; a profile deleted over HTTP
# cannot be stat'ed or read at once and leaves the listing; a stored
# profile a walker was told 0 bytes for reads whole; a growing last-* file
# reads every byte its open's stat says. Prints the figures measured.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
M="$TMP/mnt"
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" || fail "build httpload"

echo "walk-token" > "$TMP/token"
AUTH="Authorization: Bearer walk-token"
pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" --memory-limit 256M || { fail "daemon starts"; pf_done; exit 1; }
for _ in $(seq 1 50); do grep -q "listening on" "$TMP/daemon.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/daemon.log" | tail -1)
U="http://127.0.0.1:$PORT"
reqs() { curl -s -H "$AUTH" "$U/metrics" | awk '/^profilefs_fuse_requests_total/ {n += $2} END {printf "%d", n}'; }
P="$REAL/parca/many-1644509272337470000.pb.gz"
[ -r "$P" ] || P=$(ls "$REAL"/parca/*.pb.gz | head -1)

# 12 hours every 5 minutes, two label sets: 288 profiles, ~30 range directories.
now=$(date +%s)
base=$((now - 12 * 3600))
"$TMP/httpload" -H "$AUTH" -c 4 -n 288 -t 120 -T "$base,300,2" \
  -p '/api/0/profiles?service=walkreq&type=heap&labels=pod={k}&created_at={t}' \
  127.0.0.1 "$PORT" "$P" > "$TMP/load.out" 2>&1
grep -q "failed 0" "$TMP/load.out" && ok "288 profiles pushed" || fail "288 profiles pushed" "$(tail -2 "$TMP/load.out")"
for _ in $(seq 1 300); do
  [ "$(curl -s -H "$AUTH" "$U/metrics" | awk '/^profilefs_store_windows_pending / {print $2}')" = 0 ] && break; sleep 0.2
done
S="$M/walkreq"

# Requests per entry of du -s (a second one: the first also lists what it learns).
n=$(find "$S" | wc -l)
sleep 1
r0=$(reqs); du -s "$S" > /dev/null 2>&1; r1=$(reqs)
r2=$(reqs); du -s "$S" > /dev/null 2>&1; r3=$(reqs)
per1=$(awk -v a=$((r1 - r0)) -v n="$n" 'BEGIN {printf "%.2f", a / n}')
per2=$(awk -v a=$((r3 - r2)) -v n="$n" 'BEGIN {printf "%.2f", a / n}')
echo "# du -s of $n entries: $((r1 - r0)) FUSE requests ($per1 per entry), again $((r3 - r2)) ($per2)"
awk -v p="$per2" 'BEGIN {exit !(p <= 1.5)}' && ok "du -s sends at most 1.5 requests per entry ($per2)" \
  || fail "du -s sends at most 1.5 requests per entry" "$per2"

# A profile stored now: listed and stat'able at once where the listing was seen.
hour=$(date -u +%Y-%m-%dT%H)
ls -l "$S/heap/pod=0/last-1h/profiles" > /dev/null 2>&1
ls -l "$S/heap/pod=0/$hour/profiles" > /dev/null 2>&1
id=$(curl -s -H "$AUTH" --data-binary @"$P" "$U/api/0/profiles?service=walkreq&type=heap&labels=pod=0&created_at=$(date -u +%Y-%m-%dT%H:%M:%S)" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["body"]["id"])' 2>/dev/null)
ls "$S/heap/pod=0/last-1h/profiles" 2>/dev/null | grep -q -- "-$id.pb.gz" \
  && ok "a profile stored after a listing is listed at once" \
  || fail "a profile stored after a listing is listed at once" "id '$id'"
new=$(ls "$S/heap/pod=0/$hour/profiles" 2>/dev/null | grep -- "$id" | head -1)
[ -n "$new" ] && stat "$S/heap/pod=0/$hour/profiles/$new" > /dev/null 2>&1 \
  && ok "it is stat'able at once in its hour" || fail "it is stat'able at once in its hour" "id '$id' name '$new'"

# A new hour directory appears at once (stored before the others: a range not seen before).
fut=$((base - 3 * 3600)); fhour=$(date -u -d "@$fut" +%Y-%m-%dT%H)
stat "$S/heap/pod=1/$fhour" > /dev/null 2>&1 && fail "no hour directory before its first profile" \
  || ok "no hour directory before its first profile"
curl -s -o /dev/null -H "$AUTH" --data-binary @"$P" "$U/api/0/profiles?service=walkreq&type=heap&labels=pod=1&created_at=$(date -u -d "@$fut" +%Y-%m-%dT%H:%M:%S)"
stat "$S/heap/pod=1/$fhour" > /dev/null 2>&1 && ok "a new hour directory shows at once" \
  || fail "a new hour directory shows at once"

# A walker was told 0 bytes for a stored profile never served: it still reads every byte.
du -s "$S" > /dev/null 2>&1
f=$(ls "$S/heap/pod=1/$(date -u -d "@$((base + 3600))" +%Y-%m-%dT%H)/profiles" | head -1)
W="$S/heap/pod=1/$(date -u -d "@$((base + 3600))" +%Y-%m-%dT%H)/profiles/$f"
told=$(stat -c %s "$W")
python3 - "$W" > "$TMP/read.out" <<'PY' && ok "a profile walked past reads whole ($(cat "$TMP/read.out"))" || fail "a profile walked past reads whole" "$(cat "$TMP/read.out")"
import gzip, os, sys
with open(sys.argv[1], "rb") as f:
    data = f.read()
    size = os.fstat(f.fileno()).st_size
gzip.decompress(data)
print("%d bytes, fstat %d" % (len(data), size))
sys.exit(0 if len(data) > 0 and len(data) == size else 1)
PY
echo "# walked-past profile: stat said $told, read $(cat "$TMP/read.out")"

# Deleted over HTTP (not through the mount): gone at once from stat, read and the listing.
D="$S/heap/pod=0/$hour/profiles/$new"
stat "$D" > /dev/null 2>&1 && cat "$D" > /dev/null 2>&1 && ok "the new profile reads" || fail "the new profile reads"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "$AUTH" -X DELETE "$U/api/0/profiles/$id")
check_eq "DELETE of the profile over HTTP" "$code" 200
stat "$D" > /dev/null 2>&1 && fail "a deleted profile cannot be stat'ed at once" \
  || ok "a deleted profile cannot be stat'ed at once"
cat "$D" > /dev/null 2>&1 && fail "nor read" || ok "nor read"
ls "$S/heap/pod=0/$hour/profiles" 2>/dev/null | grep -q -- "$id" && fail "nor listed" || ok "nor listed"

# A growing file (last-5m's merged.pb.gz) read right after a new profile: every byte.
L="$S/heap/pod=0/last-5m/merged.pb.gz"
cat "$L" > /dev/null 2>&1
curl -s -o /dev/null -H "$AUTH" --data-binary @"$P" "$U/api/0/profiles?service=walkreq&type=heap&labels=pod=0&created_at=$(date -u +%Y-%m-%dT%H:%M:%S)"
sleep 1.6
python3 - "$L" > "$TMP/grow.out" <<'PY' && ok "a growing file reads whole ($(cat "$TMP/grow.out"))" || fail "a growing file reads whole" "$(cat "$TMP/grow.out")"
import gzip, os, sys
with open(sys.argv[1], "rb") as f:
    size = os.fstat(f.fileno()).st_size
    data = f.read()
gzip.decompress(data)
print("%d bytes, fstat %d" % (len(data), size))
sys.exit(0 if len(data) == size and size > 0 else 1)
PY

kill -0 "$PF_PID" && ok "daemon alive" || fail "daemon alive"
pf_done
