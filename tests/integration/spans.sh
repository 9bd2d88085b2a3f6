#!/usr/bin/env bash
# Span profiles (traces to profiles): a Go program (tests/go/spanapp, standard
# library only) serves requests under pprof.Do(ctx, pprof.Labels("span_id",
# id, "span_name", name)), each span burning a known share of its CPU, and
# pushes its profile to Pyroscope's /ingest. Then: SelectMergeSpanProfile
# through a real Connect client (tests/grafana/spans.mjs) gives one span's
# samples and no others (the sums go tool pprof -tagfocus reads from the
# pushed file), within 10% of the program's own share; the tree's span
# selector (<service>/<type>/span_id=<id>/<range>/) gives the same sums
# through go tool pprof; Series, LabelNames and the label-set directories
# list no span ids; one stored profile read back whole (profiles/<id>.pb.gz,
# GET /api/0/profiles/<id>) has the pushed samples with their span labels
# (go tool pprof -raw and -tags agree); an OTLP request with links comes back by span and by
# trace id; span ids as series labels, bad ids and 10,000 spans in one
# profile are refused, stored or cut with a reason; a profile of 65,538 spans
# and one id not hex has the marker in meta.json, /metrics, the log and
# SelectMergeSpanProfile's headers; deletion takes the span
# data along. Then the same program under --ebpf: span ids read from its Go
# labels split its sampled time as it measured, and are no label sets.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
M="$TMP/mnt"
G="$ROOT/tests/grafana"
O="$ROOT/tests/otlp"
W="$TMP/grafana"
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
cpu_ns() { pprof_sums "$@" | tr ' ' '\n' | sed -n 's/^cpu\/nanoseconds=//p'; }

if [ ! -d "$G/node_modules/@connectrpc/connect-node" ] || [ ! -x "$G/node_modules/.bin/buf" ]; then
  fail "tests/grafana/node_modules" "missing: scripts/install-deps.sh --test runs its npm ci"; pf_done; exit 1
fi
mkdir -p "$W" && cp "$G"/*.mjs "$G/package.json" "$W/" && ln -s "$G/node_modules" "$W/node_modules"
if (cd "$W" && "$G/node_modules/.bin/buf" generate "$ROOT" --template "$G/buf.gen.yaml" -o "$W") \
     >"$TMP/buf.log" 2>&1 && [ -f "$W/gen/querier/v1/querier_pb.js" ]; then
  ok "buf generate: the Connect client's code from api/proto"
else
  fail "buf generate" "$(tail -5 "$TMP/buf.log")"; pf_done; exit 1
fi
(cd "$ROOT/tests/go/spanapp" && go build -o "$TMP/spanapp" .) && ok "build the Go span program" \
  || { fail "build the Go span program"; pf_done; exit 1; }

echo "span-test-token" >"$TMP/token"; chmod 600 "$TMP/token"
pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" || { fail "daemon starts"; pf_done; exit 1; }
for i in $(seq 1 100); do grep -q 'http: listening on' "$TMP/daemon.log" && break; sleep 0.1; done
U="http://127.0.0.1:$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)"
AUTH=(-H "Authorization: Bearer span-test-token")

# --- the program: span A 16 parts, span B 2, untagged 2 (per cycle) -----------
"$TMP/spanapp" -out "$TMP/cpu.pb.gz" -shares "$TMP/shares.txt" -dur 4s -spans 2 -weights 16,2 \
  -push "$U/ingest?name=spanapp&format=pprof" -token "$TMP/token" 2>"$TMP/spanapp.err" \
  && ok "spanapp ran and pushed its profile to /ingest" \
  || { fail "spanapp" "$(tail -3 "$TMP/spanapp.err")"; pf_done; exit 1; }
A=$(awk 'NR==1 { print $1 }' "$TMP/shares.txt") B=$(awk 'NR==2 { print $1 }' "$TMP/shares.txt")
A_CPU=$(awk 'NR==1 { print $NF }' "$TMP/shares.txt") TOT_CPU=$(awk '$1=="total" { print $2 }' "$TMP/shares.txt")
go tool pprof -proto -tagfocus="span_id=^$A\$" "$TMP/cpu.pb.gz" >"$TMP/a.pb.gz" 2>/dev/null
go tool pprof -proto -tagfocus="span_id=^$B\$" "$TMP/cpu.pb.gz" >"$TMP/b.pb.gz" 2>/dev/null
WANT_A=$(cpu_ns "$TMP/a.pb.gz") WANT_B=$(cpu_ns "$TMP/b.pb.gz") WANT_ALL=$(cpu_ns "$TMP/cpu.pb.gz")
echo "# spanapp: span $A ${A_CPU} ns of ${TOT_CPU} ns CPU (its own clock); in its profile: span A $WANT_A ns, span B $WANT_B ns, all $WANT_ALL ns"
for i in $(seq 1 30); do [ -e "$M/spanapp/cpu/all/all/merged.pb.gz" ] && break; sleep 0.1; done

# --- Connect: SelectMergeSpanProfile, Series, LabelNames --------------------
(cd "$W" && timeout 120 node spans.mjs "$U" "$TMP/token" spanapp "$A" "$WANT_A" "$B" "$WANT_B") \
  >"$TMP/spans.out" 2>&1
rc=$?
grep -E '^(not )?ok - |^#' "$TMP/spans.out"
T_PASS=$((T_PASS + $(grep -c '^ok - ' "$TMP/spans.out")))
T_FAIL=$((T_FAIL + $(grep -c '^not ok - ' "$TMP/spans.out")))
[ "$rc" -eq 0 ] || grep -q '^not ok - ' "$TMP/spans.out" || fail "spans.mjs" "exit $rc: $(tail -5 "$TMP/spans.out")"

# The span's share of the profile against the program's own measure (10%).
read -r GOT_SHARE OWN_SHARE OKS < <(awk -v a="$WANT_A" -v t="$WANT_ALL" -v ac="$A_CPU" -v tc="$TOT_CPU" 'BEGIN {
  g = a / t; o = ac / tc; d = g - o; if (d < 0) d = -d; printf "%.4f %.4f %d\n", g, o, d <= 0.10 * o }')
[ "$OKS" = 1 ] && ok "span A's share of the CPU profile ($GOT_SHARE) is within 10% of the program's own ($OWN_SHARE)" \
  || fail "span A's share" "profile $GOT_SHARE, program $OWN_SHARE"

# --- the tree: the span selector through go tool pprof ----------------------
check_eq "tree: spanapp/cpu/span_id=$A/all/merged.pb.gz sums span A (go tool pprof)" \
  "$(cpu_ns "$M/spanapp/cpu/span_id=$A/all/merged.pb.gz")" "$WANT_A"
check_eq "tree: span_id=$A+$B sums both spans" \
  "$(cpu_ns "$M/spanapp/cpu/span_id=$A+$B/all/merged.pb.gz")" "$((WANT_A + WANT_B))"
check_eq "tree: the plain merge still sums every sample" "$(cpu_ns "$M/spanapp/cpu/all/all/merged.pb.gz")" "$WANT_ALL"
svg=$(head -c 200 "$M/spanapp/cpu/span_id=$A/last-1h/flamegraph.svg" 2>/dev/null | grep -c '<svg\|<?xml')
[ "$svg" -ge 1 ] && ok "tree: span_id=$A/last-1h/flamegraph.svg is an SVG" || fail "span flamegraph.svg"
[ ! -e "$M/spanapp/cpu/span_id=00000000deadbeef/all/merged.pb.gz" ] \
  && ok "tree: a span not stored has no merged.pb.gz (ENOENT)" || fail "unknown span has a merge"
ls "$M/spanapp/cpu/span_id=zz/all" >/dev/null 2>&1 && fail "tree: bad span id accepted" \
  || ok "tree: span_id=zz (not hex) is refused"
dirs=$(ls "$M/spanapp/cpu" | tr '\n' ' ')
case "$dirs" in *span*) fail "label-set directories list span ids" "$dirs" ;;
  *) ok "tree: the label-set directories list no span ids ($dirs)" ;; esac
grep -q 'span_id' "$M/README.txt" && ok "README.txt documents the span selector" || fail "README.txt: no span selector"

# --- one stored profile read back whole: the samples and labels pushed -------
# profiles/<id>.pb.gz and profefe's GET /api/0/profiles/<id> give each sample
# its span labels again (kept outside the stacks): go tool pprof -raw's samples
# (frames by name, sorted) and -tags of what was pushed and what reads back agree.
rows() { go tool pprof -raw -symbolize=none "$1" 2>/dev/null | python3 "$ROOT/tests/integration/pprof_rows.py"; }
PD="$M/spanapp/cpu/all/all/profiles"
PF=$(ls "$PD" 2>/dev/null | head -1) PIDH=$(ls "$PD" 2>/dev/null | head -1 | sed 's/.*-\([0-9a-f]*\)\.pb\.gz$/\1/')
rows "$TMP/cpu.pb.gz" >"$TMP/rows.pushed"
rows "$PD/$PF" >"$TMP/rows.tree"
code=$(curl -s -o "$TMP/byid.pb.gz" -w '%{http_code}' "${AUTH[@]}" "$U/api/0/profiles/$PIDH")
rows "$TMP/byid.pb.gz" >"$TMP/rows.api"
echo "# pushed: $(wc -l <"$TMP/rows.pushed") samples, $(grep -c 'span_id:' "$TMP/rows.pushed") with span_id; profiles/$PF: $(wc -l <"$TMP/rows.tree") samples, $(grep -c 'span_id:' "$TMP/rows.tree") with span_id ($(stat -c %s "$PD/$PF") bytes)"
[ -s "$TMP/rows.pushed" ] && grep -q "span_id:\[$A\]" "$TMP/rows.pushed" && cmp -s "$TMP/rows.pushed" "$TMP/rows.tree" \
  && ok "tree: profiles/<id>.pb.gz has the pushed samples with their span_id and span_name (go tool pprof -raw)" \
  || fail "profiles/<id>.pb.gz read back" "$(diff "$TMP/rows.pushed" "$TMP/rows.tree" | head -5)"
[ "$code" = 200 ] && cmp -s "$TMP/rows.pushed" "$TMP/rows.api" \
  && ok "profefe GET /api/0/profiles/$PIDH: the same samples and labels (HTTP $code)" \
  || fail "GET /api/0/profiles/<id> read back" "HTTP $code $(diff "$TMP/rows.pushed" "$TMP/rows.api" | head -5)"
go tool pprof -tags "$TMP/cpu.pb.gz" 2>/dev/null >"$TMP/tags.pushed"
go tool pprof -tags "$PD/$PF" 2>/dev/null >"$TMP/tags.tree"
grep -q "$A" "$TMP/tags.pushed" && cmp -s "$TMP/tags.pushed" "$TMP/tags.tree" \
  && ok "go tool pprof -tags: span_id and span_name as pushed ($(grep -c '%' "$TMP/tags.tree") tag lines)" \
  || fail "go tool pprof -tags of the read back profile" "$(diff "$TMP/tags.pushed" "$TMP/tags.tree" | head -5)"
check_eq "stat's size of profiles/$PF is the bytes read" "$(stat -c %s "$PD/$PF")" "$(wc -c <"$PD/$PF")"
grep -q 'span_id' <(go tool pprof -raw -symbolize=none "$M/spanapp/cpu/all/all/merged.pb.gz" 2>/dev/null) \
  && fail "merged.pb.gz holds span ids" || ok "merged.pb.gz still holds no span ids"

# --- refusals and bounds ---------------------------------------------------
code=$(curl -s -o "$TMP/r" -w '%{http_code}' "${AUTH[@]}" -XPOST --data-binary "@$TMP/cpu.pb.gz" \
  "$U/ingest?name=spanapp%7Bspan_id%3Dabc%7D&format=pprof")
[ "$code" = 400 ] && grep -q 'not a series label' "$TMP/r" && ok "span_id as a series label: 400 ($(head -c 120 "$TMP/r"))" \
  || fail "span_id as a series label" "$code $(head -c 200 "$TMP/r")"
mkprof() { python3 - "$@" <<'PY'
import sys
def varint(v):
    o = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        if v: o.append(b | 0x80)
        else: o.append(b); return bytes(o)
def fld(n, wt, p):
    k = varint(n << 3 | wt)
    return k + (varint(p) if wt == 0 else varint(len(p)) + p)
strs = ["", "samples", "count", "cpu", "nanoseconds", "main.work", "span_id", "span_name", "GET /x", "not-hex!"]
out = bytearray()
out += fld(1, 2, fld(1, 0, 1) + fld(2, 0, 2)) + fld(1, 2, fld(1, 0, 3) + fld(2, 0, 4))
base = len(strs)
n = int(sys.argv[2])
for i in range(n + 1):
    # n distinct spans, one sample each, and one sample with an id that is not hex
    sid = base + i
    strs.append("%016x" % (0x1000 + i) if i < n else "not-hex!")
    lab = fld(1, 0, 6) + fld(2, 0, sid)
    out += fld(2, 2, fld(1, 0, 1) + fld(2, 2, varint(1) + varint(10000000)) + fld(3, 2, lab) + fld(3, 2, fld(1, 0, 7) + fld(2, 0, 8)))
out += fld(4, 2, fld(1, 0, 1) + fld(4, 2, fld(1, 0, 1)))
out += fld(5, 2, fld(1, 0, 1) + fld(2, 0, 5))
for s in strs: out += fld(6, 2, s.encode())
out += fld(11, 2, fld(1, 0, 3) + fld(2, 0, 4)) + fld(12, 0, 10000000)
open(sys.argv[1], "wb").write(out)
PY
}
metric() { curl -s "${AUTH[@]}" "$U/metrics" | awk -v m="$1" '$1 == m { print $2 + 0 }'; }
CUT0=$(metric profilefs_span_ids_cut_total) BAD0=$(metric profilefs_span_ids_refused_total)
mkprof "$TMP/many.pb" 10000
code=$(curl -s -o "$TMP/r" -w '%{http_code}' "${AUTH[@]}" -XPOST --data-binary "@$TMP/many.pb" \
  "$U/ingest?name=manyspans&format=pprof")
check_eq "a profile with 10,000 distinct spans (and one id not hex) is stored: HTTP" "$code" 200
for i in $(seq 1 30); do [ -e "$M/manyspans/cpu/all/all/merged.pb.gz" ] && break; sleep 0.1; done
check_eq "its span 0x1000+9999 comes back alone (10 ms)" \
  "$(cpu_ns "$M/manyspans/cpu/span_id=$(printf %016x $((0x1000 + 9999)))/all/merged.pb.gz")" 10000000
check_eq "all its samples stay in the plain merge (10,001 x 10 ms)" \
  "$(cpu_ns "$M/manyspans/cpu/all/all/merged.pb.gz")" 100010000000
check_eq "no label-set directory per span ($(ls "$M/manyspans/cpu" | wc -l) entries)" "$(ls "$M/manyspans/cpu" | tr '\n' ' ')" "all "
# Read back whole (its record bucketed: 10,000 spans): every span's sample has
# its span_id and span_name again; the sample of the id refused stays untagged.
MF=$(ls "$M/manyspans/cpu/all/all/profiles" 2>/dev/null | head -1)
rows "$TMP/many.pb" | grep -v 'not-hex' >"$TMP/rows.many"
rows "$M/manyspans/cpu/all/all/profiles/$MF" >"$TMP/rows.manyback"
echo "# manyspans: pushed $(rows "$TMP/many.pb" | wc -l) samples; profiles/$MF: $(wc -l <"$TMP/rows.manyback") samples, $(grep -c 'span_id:' "$TMP/rows.manyback") with span_id"
check_eq "profiles/<id>.pb.gz of 10,000 spans: 10,000 samples with span_id, each as pushed" \
  "$(grep 'span_id:' "$TMP/rows.manyback" | cmp -s - "$TMP/rows.many" && echo same) $(grep -c 'span_id:' "$TMP/rows.manyback")" "same 10000"
check_eq "its sample of the id refused: kept, without labels" \
  "$(grep -v 'span_id:' "$TMP/rows.manyback")" "1 10000000 |  | main.work"
# The marker: the id refused (kept untagged) shows in meta.json, /metrics and the log.
MJ="$M/manyspans/cpu/span_id=$(printf %016x $((0x1000 + 9999)))/all/meta.json"
check_eq "meta.json of a span range: its \"spans\" marker (1 id refused, none cut)" \
  "$(jq -c .spans "$MJ" 2>&1)" \
  '{"profiles_with_cut_spans":0,"spans_cut":0,"profiles_with_refused_ids":1,"ids_refused":1}'
jq -e 'has("spans") | not' "$M/manyspans/cpu/all/all/meta.json" >/dev/null \
  && ok "meta.json of a plain range has no \"spans\"" || fail "plain meta.json has spans"
# 65,538 distinct spans (2 past the 65,536 a profile tags) and one id not hex.
mkprof "$TMP/cut.pb" 65538
code=$(curl -s -o "$TMP/r" -w '%{http_code}' "${AUTH[@]}" -XPOST --data-binary "@$TMP/cut.pb" \
  "$U/ingest?name=cutspans&format=pprof")
check_eq "a profile with 65,538 spans ($(stat -c %s "$TMP/cut.pb") bytes) is stored: HTTP" "$code" 200
for i in $(seq 1 30); do [ -e "$M/cutspans/cpu/all/all/merged.pb.gz" ] && break; sleep 0.1; done
check_eq "its first span comes back (10 ms)" \
  "$(cpu_ns "$M/cutspans/cpu/span_id=0000000000001000/all/merged.pb.gz")" 10000000
check_eq "meta.json: 2 spans cut, 1 id refused" \
  "$(jq -c .spans "$M/cutspans/cpu/span_id=0000000000001000/all/meta.json" 2>&1)" \
  '{"profiles_with_cut_spans":1,"spans_cut":2,"profiles_with_refused_ids":1,"ids_refused":1}'
CUT1=$(metric profilefs_span_ids_cut_total) BAD1=$(metric profilefs_span_ids_refused_total)
echo "# /metrics: profilefs_span_ids_cut_total ${CUT0:-none} -> ${CUT1:-none}, profilefs_span_ids_refused_total ${BAD0:-none} -> ${BAD1:-none}"
check_eq "/metrics: profilefs_span_ids_cut_total and _refused_total grew by 2 and 2" \
  "$(( ${CUT1:-0} - ${CUT0:-0} )) $(( ${BAD1:-0} - ${BAD0:-0} ))" "2 2"
grep -m1 'spans past the' "$TMP/daemon.log" | sed 's/^/# log: /'
grep -q 'keeps 0 spans past the 65536 a profile may tag and 1 samples' "$TMP/daemon.log" \
  && ok "the log says a stored profile's id was refused" || fail "no log line for the refused id"
# A cut span is in no span record: not found, and SelectMergeSpanProfile says why it may be.
CUTID=$(printf %016x $((0x1000 + 65537)))
curl -s -D "$TMP/h" -o "$TMP/r" "${AUTH[@]}" -XPOST -H 'Content-Type: application/json' \
  "$U/querier.v1.QuerierService/SelectMergeSpanProfile" \
  -d "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"cutspans\\\"}\",\"spanSelector\":[\"$CUTID\"],\"start\":0,\"end\":4102444800000}" >/dev/null
check_eq "SelectMergeSpanProfile of a cut span: empty, X-Profilefs-Spans-Cut and -Span-Ids-Refused" \
  "$(jq -r '.flamegraph.total // 0' "$TMP/r") $(tr -d '\r' <"$TMP/h" | awk -F': ' 'tolower($1) == "x-profilefs-spans-cut" || tolower($1) == "x-profilefs-span-ids-refused" { printf "%s ", $2 }')" "0 2 1 "

# --- OTLP with links -------------------------------------------------------
if [ -d "$O/node_modules/@bufbuild/protobuf" ] || (cd "$O" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1); then
  (cd "$O" && ./node_modules/.bin/buf generate >/dev/null 2>&1)
  node "$O/otlp.mjs" convert "$TMP/cpu.pb.gz" "$TMP/otlp.pb" --encoding proto --service otlpspans --links \
    --start-ns "$(( $(date +%s) - 60 ))000000000" --spread-ns 1000000000 2>"$TMP/otlp.err"
  code=$(curl -s -o "$TMP/r" -w '%{http_code}' "${AUTH[@]}" -XPOST -H 'Content-Type: application/x-protobuf' \
    --data-binary "@$TMP/otlp.pb" "$U/v1development/profiles")
  check_eq "OTLP request with links: HTTP" "$code" 200
  for i in $(seq 1 30); do [ -e "$M/otlpspans/cpu/all/all/merged.pb.gz" ] && break; sleep 0.1; done
  check_eq "OTLP: the samples linked to span A come back by span id" \
    "$(cpu_ns "$M/otlpspans/cpu/span_id=$A/all/merged.pb.gz")" "$WANT_A"
  check_eq "OTLP: and by trace id" \
    "$(cpu_ns "$M/otlpspans/cpu/trace_id=$(printf %032s "$A" | tr ' ' 0)/all/merged.pb.gz")" "$WANT_A"
  check_eq "OTLP: the plain merge holds every sample (linked or not)" \
    "$(cpu_ns "$M/otlpspans/cpu/all/all/merged.pb.gz")" "$WANT_ALL"
  OF=$(ls "$M/otlpspans/cpu/all/all/profiles" 2>/dev/null | head -1)
  TR=$(printf %032s "$A" | tr ' ' 0)
  go tool pprof -tags "$M/otlpspans/cpu/all/all/profiles/$OF" 2>/dev/null >"$TMP/tags.otlp"
  grep -q "trace_id" "$TMP/tags.otlp" && grep -q "$TR" "$TMP/tags.otlp" && grep -q "$A" "$TMP/tags.otlp" \
    && ok "OTLP: its profile read back whole has span_id and trace_id labels again (go tool pprof -tags)" \
    || fail "OTLP: profile read back" "$(head -8 "$TMP/tags.otlp")"
  case "$(ls "$M/otlpspans/cpu" | tr '\n' ' ')" in *span*|*trace*) fail "OTLP: links became label sets" ;;
    *) ok "OTLP: links are no label sets" ;; esac
else
  fail "OTLP client (tests/otlp/node_modules)" "npm ci failed"
fi

# --- deletion takes the span data along ------------------------------------
rm -r "$M/spanapp/cpu/all" 2>/dev/null || rm -r "$M/spanapp" 2>/dev/null
call_code=$(curl -s -o "$TMP/r" -w '%{http_code}' "${AUTH[@]}" -XPOST -H 'Content-Type: application/json' \
  "$U/querier.v1.QuerierService/SelectMergeSpanProfile" \
  -d "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"spanapp\\\"}\",\"spanSelector\":[\"$A\"],\"start\":0,\"end\":4102444800000}")
check_eq "after rm -r of the service: SelectMergeSpanProfile of span A is empty" \
  "$call_code $(jq -r '.flamegraph.total // 0' "$TMP/r")" "200 0"

kill -0 "$PF_PID" && ok "daemon alive" || fail "daemon died"

# --- the same program under --ebpf: its Go labels, span ids the span way -------
if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ] || [ "$(uname -m)" != x86_64 ]; then
  echo "ok - ebpf: span ids from Go labels # SKIP needs root, BTF and x86-64"
  pf_done; exit $?
fi
pf_stop
pf_start -v --ebpf=99 --ebpf-period 2 || { fail "daemon starts with --ebpf"; pf_done; exit 1; }
cp "$TMP/spanapp" "$TMP/efp_spanapp"
"$TMP/efp_spanapp" -out "$TMP/e.pb.gz" -shares "$TMP/eshares.txt" -dur 6s -spans 2 -weights 16,2 -hz 100 \
  >/dev/null 2>&1 || fail "efp_spanapp ran"
sleep 5	# two more periods: the last samples are stored
EA=$(awk 'NR==1 { print $1 }' "$TMP/eshares.txt") EB=$(awk 'NR==2 { print $1 }' "$TMP/eshares.txt")
EA_CPU=$(awk 'NR==1 { print $NF }' "$TMP/eshares.txt") EB_CPU=$(awk 'NR==2 { print $NF }' "$TMP/eshares.txt")
GA=$(cpu_ns "$M/efp_spanapp/cpu/span_id=$EA/all/merged.pb.gz") GB=$(cpu_ns "$M/efp_spanapp/cpu/span_id=$EB/all/merged.pb.gz")
read -r GOT OWN OKS < <(awk -v a="${GA:-0}" -v b="${GB:-0}" -v ma="$EA_CPU" -v mb="$EB_CPU" 'BEGIN {
  if (a + b == 0) { print "0 0 0"; exit }
  g = a / (a + b); o = ma / (ma + mb); d = g - o; if (d < 0) d = -d; printf "%.4f %.4f %d\n", g, o, d <= 0.10 * o }')
[ "$OKS" = 1 ] && ok "ebpf: span A's share of the sampled span time ($GOT: ${GA} + ${GB} ns) is within 10% of the program's own ($OWN)" \
  || fail "ebpf: span shares" "sampled $GOT (${GA:-0} + ${GB:-0} ns), program $OWN"
dirs=$(ls "$M/efp_spanapp/cpu" 2>/dev/null | tr '\n' ' ')
case "$dirs" in *span*|"") fail "ebpf: label sets" "ls efp_spanapp/cpu: '$dirs'" ;;
  *) ok "ebpf: no span ids among the label sets ($dirs)" ;; esac
pf_done
