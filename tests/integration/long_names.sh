#!/usr/bin/env bash
# Strings of stored profiles are bounded on every ingest path: a profile
# whose function name is 64 MiB (and whose file name and sample label value
# are 1 MiB of multi-byte characters) is pushed over the profefe API, the
# Pyroscope /ingest API and copied into ingest/; each is stored with its
# strings cut at 4096 bytes between UTF-8 characters, ending in "…[cut]".
# The stored merged.pb.gz stays a few KiB (its size is printed), the data
# directory does not grow by the 64 MiB, the daemon lives, and a second
# push of the same profile merges with the first (the same cut names).
set -u
. "$(dirname "$0")/../lib.sh"
pf_setup

HPORT=$(free_port)
pf_start --http "127.0.0.1:$HPORT" || { fail "daemon start"; pf_done; exit 1; }
U="http://127.0.0.1:$HPORT"

# The profile: main -> a 64 MiB name of 'x' (frames are stored once each), a
# sample label whose value is 1 MiB of "é", a file name of 1 MiB of "€".
python3 - "$TMP/long.pb.gz" <<'PY'
import gzip, sys

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, wt, payload):
    key = varint((num << 3) | wt)
    if wt == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload

strings = [b"", b"cpu", b"nanoseconds", b"main", b"x" * (64 << 20), b"\xe2\x82\xac" * ((1 << 20) // 3),
           b"k", b"\xc3\xa9" * (1 << 19), b"main.go"]
p = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
lab = field(1, 0, 6) + field(2, 0, 7)
p += field(2, 2, field(1, 2, varint(2) + varint(1)) + field(2, 2, varint(10000000)) + field(3, 2, lab))
p += field(4, 2, field(1, 0, 1) + field(4, 2, field(1, 0, 1)))
p += field(4, 2, field(1, 0, 2) + field(4, 2, field(1, 0, 2)))
p += field(5, 2, field(1, 0, 1) + field(2, 0, 3) + field(3, 0, 3) + field(4, 0, 8))
p += field(5, 2, field(1, 0, 2) + field(2, 0, 4) + field(3, 0, 4) + field(4, 0, 5))
for s in strings:
    p += field(6, 2, s)
p += field(11, 2, field(1, 0, 1) + field(2, 0, 2)) + field(12, 0, 10**7)
open(sys.argv[1], "wb").write(gzip.compress(bytes(p), 6))
PY
[ -s "$TMP/long.pb.gz" ] || { fail "make the profile"; pf_done; exit 1; }
echo "# the profile: $(stat -c %s "$TMP/long.pb.gz") bytes gzipped, $(zcat "$TMP/long.pb.gz" | wc -c) unzipped"

# stored_ok NAME FILE: FILE (a stored merged.pb.gz) holds the names cut, marked.
stored_ok() {
  local n="$1" f="$2" size plain xrun marks
  size=$(stat -c %s "$f" 2>/dev/null || echo missing)
  plain=$(zcat "$f" 2>/dev/null | wc -c)
  xrun=$(zcat "$f" | LC_ALL=C tr -c 'x' '\n' | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
  marks=$(zcat "$f" | LC_ALL=C grep -ao $'\xe2\x80\xa6\[cut\]' | wc -l)
  echo "# $n: merged.pb.gz $size bytes ($plain unzipped); longest name run $xrun bytes; $marks cut marks"
  if [ "$plain" -gt 0 ] && [ "$plain" -lt 65536 ] && [ "$xrun" -le 4096 ] && [ "$xrun" -gt 4000 ] &&
    [ "$marks" -ge 3 ]; then ok "$n"
  else fail "$n" "size $size/$plain, longest run $xrun, marks $marks"; fi
}

code=$(curl -s -o "$TMP/out" -w '%{http_code}' --data-binary @"$TMP/long.pb.gz" \
  "$U/api/0/profiles?service=longprofefe&type=cpu")
check_eq "profefe push of a 64 MiB name: 200" "$code" 200
stored_ok "profefe: the stored names are cut and marked" "$TMP/mnt/longprofefe/cpu/all/all/merged.pb.gz"

code=$(curl -s -o "$TMP/out" -w '%{http_code}' --data-binary @"$TMP/long.pb.gz" \
  "$U/ingest?name=longpyro&format=pprof")
check_eq "pyroscope push of a 64 MiB name: 200" "$code" 200
stored_ok "pyroscope: the stored names are cut and marked" "$TMP/mnt/longpyro/cpu/all/all/merged.pb.gz"

mkdir -p "$TMP/mnt/ingest/longingest/cpu"
if cp "$TMP/long.pb.gz" "$TMP/mnt/ingest/longingest/cpu/a.pb.gz"; then ok "ingest/ copy of a 64 MiB name"
else fail "ingest/ copy of a 64 MiB name"; fi
stored_ok "ingest/: the stored names are cut and marked" "$TMP/mnt/longingest/cpu/all/all/merged.pb.gz"

# The same again: the cut names are the same, the two profiles merge.
curl -s -o /dev/null --data-binary @"$TMP/long.pb.gz" "$U/api/0/profiles?service=longprofefe&type=cpu"
stored_ok "a second push merges with the first" "$TMP/mnt/longprofefe/cpu/all/all/merged.pb.gz"
go_raw=""
if command -v go >/dev/null; then
  go_raw=$(go tool pprof -raw "$TMP/mnt/longprofefe/cpu/all/all/merged.pb.gz" 2>/dev/null)
  n=$(echo "$go_raw" | sed -n '/^Samples/,/^Locations/p' | awk '$1 ~ /^[0-9]+:$/ { s += $1 } END { print s + 0 }')
  check_eq "go tool pprof reads it: both pushes' samples merged (ns)" "$n" 20000000
fi
# (Apparent sizes: RocksDB allocates its log ahead.)
du_kb=$(du -sk --apparent-size "$TMP/data" | awk '{ print $1 }')
echo "# data directory: $du_kb KiB after 4 profiles with a 64 MiB name"
[ "$du_kb" -lt 65536 ] && ok "the data directory did not take the 64 MiB names ($du_kb KiB)" \
  || fail "the data directory did not take the 64 MiB names" "$du_kb KiB"
m=$(curl -s "$U/metrics" | awk '$1 == "profilefs_store_strings_cut_total" { print $2 }')
[ "${m:-0}" -ge 12 ] && ok "profilefs_store_strings_cut_total counts them ($m)" \
  || fail "profilefs_store_strings_cut_total counts them" "'$m'"
grep -q 'strings of the profile were longer than 4096 bytes: stored cut' "$TMP/daemon.log" \
  && ok "the log says so" || fail "the log says so" "$(tail -3 "$TMP/daemon.log")"
kill -0 "$PF_PID" 2>/dev/null && ok "daemon alive" || fail "daemon alive"
pf_stop
pf_done
