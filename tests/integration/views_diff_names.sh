#!/usr/bin/env bash
# What a user reads in the views: normalized diffs (diff.svg and vs/ top.txt
# compare shares, diff.absolute.svg and top.absolute.txt absolute values;
# checked against go tool pprof -normalize -diff_base and by the colours
# of the SVG), C++ and Rust names demangled as c++filt does in every view
# and the HTTP API, and control bytes in names escaped in top.txt and
# folded.txt.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"
TOOLS="$(dirname "$0")"

pf_start --http 127.0.0.1:0 || { fail "daemon starts and mounts"; pf_done; exit 1; }
ok "daemon starts and mounts"

# --- normalized diffs ----------------------------------------------------------
# Three profiles of pod-0 where the hot function has 36% of the samples,
# two of pod-1 where it has 44%: pod-0 has more of everything, but a smaller
# share of hot.
t0=$(( ($(date +%s) - 600) * 1000000000 ))
printf 'main;hot 360000000\nmain;other 640000000\n' > "$TMP/pod0.folded"
printf 'main;hot 440000000\nmain;other 560000000\n' > "$TMP/pod1.folded"
mkdir -p "$M/ingest/normsvc/cpu/pod=pod-0" "$M/ingest/normsvc/cpu/pod=pod-1" 2>/dev/null
for i in 0 1 2; do
  python3 "$TOOLS/folded2pprof.py" "$TMP/p0-$i.pb.gz" $((t0 + i * 1000000000)) "$TMP/pod0.folded"
  cp "$TMP/p0-$i.pb.gz" "$M/ingest/normsvc/cpu/pod=pod-0/" || fail "cp pod-0 profile $i"
done
for i in 0 1; do
  python3 "$TOOLS/folded2pprof.py" "$TMP/p1-$i.pb.gz" $((t0 + i * 1000000000)) "$TMP/pod1.folded"
  cp "$TMP/p1-$i.pb.gz" "$M/ingest/normsvc/cpu/pod=pod-1/" || fail "cp pod-1 profile $i"
done
V="$M/normsvc/cpu/pod=pod-0/all/vs/pod=pod-1"
ls "$V" > "$TMP/lsvs" 2>&1
check_eq "vs/ lists the normalized and the absolute files" "$(tr '\n' ' ' < "$TMP/lsvs")" \
  "diff.absolute.svg diff.pb.gz diff.svg meta.json top.absolute.txt top.txt "
ls "$M/normsvc/cpu/pod=pod-0/all" | grep -qx diff.absolute.svg && ok "a range lists diff.absolute.svg" \
  || fail "a range lists diff.absolute.svg"

# fill NAME FILE: the fill of the frame NAME in the SVG FILE, "r g b".
fill() {
  python3 - "$1" "$2" <<'EOF'
import re, sys
svg = open(sys.argv[2]).read()
for m in re.finditer(r'<title>([^<]*)</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"', svg):
    if m.group(1).startswith(sys.argv[1] + " ("):
        print(m.group(2), m.group(3), m.group(4))
        break
EOF
}
read -r r g b <<< "$(fill hot "$V/diff.svg")"
[ -n "${b:-}" ] && [ "$b" -gt "$r" ] && ok "diff.svg paints the frame whose share fell blue (rgb $r,$g,$b)" \
  || fail "diff.svg paints the frame whose share fell blue" "rgb ${r:-?},${g:-?},${b:-?}"
read -r r g b <<< "$(fill main "$V/diff.svg")"
[ "${r:-}" == "${b:-x}" ] && ok "diff.svg leaves a frame of equal share neutral" \
  || fail "diff.svg leaves a frame of equal share neutral" "rgb ${r:-?},${g:-?},${b:-?}"
read -r r g b <<< "$(fill hot "$V/diff.absolute.svg")"
[ -n "${b:-}" ] && [ "$r" -gt "$b" ] && ok "diff.absolute.svg paints the same frame red (it grew absolutely)" \
  || fail "diff.absolute.svg paints the same frame red" "rgb ${r:-?},${g:-?},${b:-?}"
grep -q "normalized: each frame" "$V/diff.svg" && grep -q "44.00%, after .* = 36.00%, share -8.00 points" "$V/diff.svg" \
  && ok "diff.svg says it compares shares, and the shares" || fail "diff.svg says it compares shares"
grep -q "absolute values compared" "$V/diff.absolute.svg" && ok "diff.absolute.svg says it compares absolute values" \
  || fail "diff.absolute.svg says it compares absolute values"
grep -q "no base" "$M/normsvc/cpu/pod=pod-0/all/diff.svg" && ok "the range's own diff.svg without a base still says so" \
  || fail "the range's own diff.svg without a base still says so"

# top.txt against go tool pprof -top -normalize -diff_base: every function's flat% and cum%.
grep -q "^Normalized: shares compared" "$V/top.txt" && ok "vs top.txt says it is normalized" \
  || fail "vs top.txt says it is normalized" "$(head -4 "$V/top.txt")"
# rows: "name flat cum flat% cum%" per function that changed, sorted, from a
# -top table (pprof's, or the by-flat one of top.txt): values in ms, shares
# without sign (pprof prints |change| / base total).
rows() {
  python3 -c '
import re, sys
ms = {"ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1e3, "min": 6e4, "h": 3.6e6}
def val(x):
    m = re.fullmatch(r"(-?[0-9.,]+) ?(ns|us|ms|s|min|h)", x)
    return float(m.group(1).replace(",", "")) * ms[m.group(2)] if m else float(x)
out, on = [], False
for line in sys.stdin:
    if "flat%" in line:
        if on: break
        on = True
        continue
    if on and not line.strip(): break
    if not on: continue
    line = re.sub(r"(\d) (ns|us|ms|s|min|h)\b", r"\1\2", line)
    w = line.split(None, 5)
    flat, cum = val(w[0]), val(w[3])
    if flat or cum:
        out.append("%s %.2f %.2f %.2f %.2f" % (w[5].strip(), flat, cum,
            abs(float(w[1].strip("%"))), abs(float(w[4].strip("%")))))
print("\n".join(sorted(out)))
'
}
want=$(go tool pprof -top -normalize -diff_base="$M/normsvc/cpu/pod=pod-1/all/merged.pb.gz" \
  "$M/normsvc/cpu/pod=pod-0/all/merged.pb.gz" 2>/dev/null | rows)
got=$(rows < "$V/top.txt")
[ -n "$want" ] && [ "$got" == "$want" ] && ok "vs top.txt equals go tool pprof -top -normalize -diff_base" \
  || fail "vs top.txt equals go tool pprof -top -normalize -diff_base" "got [$got] want [$want]"
want=$(go tool pprof -top -diff_base="$M/normsvc/cpu/pod=pod-1/all/merged.pb.gz" \
  "$M/normsvc/cpu/pod=pod-0/all/merged.pb.gz" 2>/dev/null | rows)
got=$(rows < "$V/top.absolute.txt")
[ -n "$want" ] && [ "$got" == "$want" ] && ok "vs top.absolute.txt equals go tool pprof -top -diff_base" \
  || fail "vs top.absolute.txt equals go tool pprof -top -diff_base" "got [$got] want [$want]"
grep -q "hot" "$V/top.txt" && grep -E -q ' -8\.00% .* hot$' "$V/top.txt" \
  && ok "vs top.txt: hot's share fell by 8 points of the base" || fail "vs top.txt: hot's share fell by 8 points" "$(cat "$V/top.txt")"

# --- demangled names -----------------------------------------------------------
# Real C++ symbols (libstdc++'s, templates and std::string included), Rust
# legacy and v0 symbols, stored mangled as a sampler that does not demangle
# stores them: every view shows what c++filt prints.
nm -D --defined-only --without-symbol-versions /usr/lib/x86_64-linux-gnu/libstdc++.so.6 2>/dev/null | \
  awk '$2 == "T" && $3 ~ /^_Z/ { print $3 }' | awk 'NR % 31 == 0' | head -60 > "$TMP/mangled"
printf '%s\n' _ZN13profile_prost4main17hd5998e9d09b507fcE \
  '_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h6ce63b91d8829310E' \
  _RNvCs1234_7mycrate3foo _RNvMNtCs7r9Mw2bBhsB_5hello5innerNtB2_6Sample3new >> "$TMP/mangled"
n=$(wc -l < "$TMP/mangled")
[ "$n" -ge 40 ] && ok "$n mangled C++ and Rust names to check" || fail "mangled C++ and Rust names to check" "$n"
awk '{ printf "main;%s %d\n", $0, (NR + 10) * 1000000 }' "$TMP/mangled" > "$TMP/mangled.folded"
python3 "$TOOLS/folded2pprof.py" "$TMP/cxx.pb.gz" "$t0" "$TMP/mangled.folded"
cp "$TMP/cxx.pb.gz" "$M/ingest/cxxsvc/cpu/" || fail "cp the C++/Rust profile"
c++filt < "$TMP/mangled" | sort > "$TMP/want-names"
R="$M/cxxsvc/cpu/all/all"
# top.txt: the name is what follows the five columns of values.
python3 -c '
import re, sys
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r"^\s*\S+ \S+\s+\S+%\s+\S+%\s+\S+ \S+\s+\S+%  (.*)$", line.rstrip("\n"))
    if m and m.group(1) != "main":
        print(m.group(1))
    if "(by cum)" in line:
        break
' "$R/top.txt" | sort > "$TMP/top-names"
diff "$TMP/want-names" "$TMP/top-names" > "$TMP/d" && ok "top.txt names equal c++filt's ($n names)" \
  || fail "top.txt names equal c++filt's" "$(head -6 "$TMP/d")"
sed 's/ [0-9]*$//; s/^main;//' "$R/folded.txt" | sort > "$TMP/folded-names"
diff "$TMP/want-names" "$TMP/folded-names" > "$TMP/d" && ok "folded.txt names equal c++filt's" \
  || fail "folded.txt names equal c++filt's" "$(head -6 "$TMP/d")"
python3 -c '
import html, re, sys
svg = open(sys.argv[1], encoding="utf-8").read()
for t in re.findall(r"<title>([^<]*)</title>", svg):
    t = html.unescape(t)
    name = t[:t.rfind(" (")]
    if name not in ("all", "main"):
        print(name)
' "$R/flamegraph.svg" | sort > "$TMP/svg-names"
diff "$TMP/want-names" "$TMP/svg-names" > "$TMP/d" && ok "flamegraph.svg names equal c++filt's" \
  || fail "flamegraph.svg names equal c++filt's" "$(head -6 "$TMP/d")"
grep -c '_Z\|_RNv' "$R/top.txt" "$R/folded.txt" "$R/flamegraph.svg" | grep -v ':0$' > "$TMP/d" \
  && fail "no mangled name left in a view" "$(cat "$TMP/d")" || ok "no mangled name left in a view"
# The pprof files keep the stored (mangled) names, as pprof itself keeps them and
# demangles on display: merged.pb.gz and the HTTP API's merge are the same data.
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
curl -sf -o "$TMP/api.pb.gz" "http://127.0.0.1:$PORT/api/0/profiles/merge?service=cxxsvc&type=cpu&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00" \
  && zcat "$TMP/api.pb.gz" | grep -a -q _ZN13profile_prost4main17hd5998e9d09b507fcE \
  && zcat "$R/merged.pb.gz" | grep -a -q _ZN13profile_prost4main17hd5998e9d09b507fcE \
  && ok "merged.pb.gz and the API's merge keep the stored names" \
  || fail "merged.pb.gz and the API's merge keep the stored names"
# pprof-rs writes demangled names (with the hash) and the mangled system names:
# the views show the names, which are c++filt's of the system names.
cp "$REAL/pprof-rs/profile-cpu-example.pb" "$M/ingest/rustsvc/cpu/" || fail "cp the pprof-rs profile"
go tool pprof -raw -symbolize=none "$REAL/pprof-rs/profile-cpu-example.pb" 2>/dev/null | \
  grep -o 's=[0-9]*(_ZN[^)]*)' | sed 's/^s=[0-9]*(//; s/)$//' | sort -u | c++filt | sort -u > "$TMP/rust-want"
sed 's/ [0-9]*$//' "$M/rustsvc/cpu/all/all/folded.txt" | tr ';' '\n' | sort -u > "$TMP/rust-got"
[ -s "$TMP/rust-want" ] && [ -z "$(comm -23 "$TMP/rust-want" "$TMP/rust-got")" ] \
  && ok "pprof-rs's Rust frames are c++filt's names ($(wc -l < "$TMP/rust-want"))" \
  || fail "pprof-rs's Rust frames are c++filt's names" "$(comm -23 "$TMP/rust-want" "$TMP/rust-got" | head -3)"

# --- control bytes in names ------------------------------------------------------
# A function named with ESC sequences (colour, clear screen, OSC title), BEL,
# DEL, a C1 CSI and a byte that is not UTF-8: top.txt and folded.txt write
# them as \xHH, and keep UTF-8 text as it is.
printf 'main;evil\033[31mred\033[2J\033]2Lpwned\007\177\302\233x\377;caf\303\251 7\n' > "$TMP/esc.folded"
python3 "$TOOLS/folded2pprof.py" "$TMP/esc.pb.gz" "$t0" "$TMP/esc.folded"
cp "$TMP/esc.pb.gz" "$M/ingest/escsvc/cpu/" || fail "cp the profile with control bytes"
for f in top.txt folded.txt; do
  bad=$(python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
s = b.decode("utf-8", "replace")
print(sum(1 for c in s if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c == "\ufffd"))
' "$M/escsvc/cpu/all/all/$f")
  check_eq "$f holds no control byte" "$bad" 0
  grep -F -q 'evil\x1b[31mred\x1b[2J\x1b]2Lpwned\x07\x7f\xc2\x9bx\xff' "$M/escsvc/cpu/all/all/$f" \
    && grep -q 'café' "$M/escsvc/cpu/all/all/$f" \
    && ok "$f writes them as \\xHH and keeps UTF-8" || fail "$f writes them as \\xHH" "$(grep evil "$M/escsvc/cpu/all/all/$f")"
done

pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
pf_done
