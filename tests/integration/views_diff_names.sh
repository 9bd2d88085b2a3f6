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

pf_start || { fail "daemon starts and mounts"; pf_done; exit 1; }
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

pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
pf_done
