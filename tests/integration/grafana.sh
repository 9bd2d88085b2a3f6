#!/usr/bin/env bash
# The Grafana query API (querier.v1 over Connect, --http) with real clients
# from npm (tests/grafana, installed by scripts/install-deps.sh --test): a
# @connectrpc/connect-node client generated from the project's .proto by
# buf + protoc-gen-es calls every method in both encodings and checks the
# answers against go tool pprof on the same profiles, and the same label
# matchers through the tree, the profefe API and the Connect API
# (connect.mjs); a second client, generated from the same .proto put back to
# Pyroscope's declarations (google.v1.Profile, `optional` fields), reads every
# served method in both encodings with Pyroscope's field types: pprof names
# (not base64) in SelectMergeProfile's JSON, go tool pprof's sample types,
# SelectMergeStacktraces' TREE bytes (decoded, and byte for byte those of an
# encoder written from Pyroscope's tree.go, pytree.mjs) and PPROF, and
# GetProfileStats' times (pyroscope.mjs); Pyroscope's own flame graph component renders a
# SelectMergeStacktraces answer in Debian's Chromium, and its table's top
# frames are checked against go tool pprof -top (flame.mjs).
#
# The data set: goapp/cpu, four Go CPU profiles of tests/go/genprof pushed
# over profefe's API with the labels pod=a-1,region=us pod=a-2,region=eu
# pod=b-1,region=us pod=a-3,region=ap; realgo/cpu, google-pprof's sample.cpu
# (a Go CPU profile with inlined lines); heapapp/heap, parca's four Go heap
# profiles of one process.
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof" BUF_CACHE_DIR="$TMP/buf-cache"
G="$ROOT/tests/grafana"
M="$TMP/mnt"

if ! command -v node >/dev/null; then
  echo "# skip: no Node.js (scripts/install-deps.sh --test installs it unless PROFILEFS_NO_BROWSER=1)"
  pf_done; exit 0
fi
if [ ! -d "$G/node_modules/@connectrpc/connect-node" ] || [ ! -x "$G/node_modules/.bin/buf" ]; then
  fail "tests/grafana/node_modules" "missing: scripts/install-deps.sh --test runs its npm ci"; pf_done; exit 1
fi

# The client's code, generated from api/proto (+ pprof/profile.proto) by
# buf with the local protoc-gen-es of node_modules: the .proto stays the one
# source. Into a copy of tests/grafana's scripts, so that runs never share it.
W="$TMP/grafana"
mkdir -p "$W" && cp "$G"/*.mjs "$G/page.js" "$G/package.json" "$W/" && ln -s "$G/node_modules" "$W/node_modules"
if (cd "$W" && "$G/node_modules/.bin/buf" generate "$ROOT" \
      --template "$G/buf.gen.yaml" -o "$W") >"$TMP/buf.log" 2>&1 \
   && [ -f "$W/gen/querier/v1/querier_pb.js" ]; then
  ok "buf generate: the Connect client's code from api/proto"
else
  fail "buf generate" "$(tail -5 "$TMP/buf.log")"; pf_done; exit 1
fi

# A second client, of Pyroscope's schema: the same .proto files put back to
# Pyroscope's declarations where profilefs's differ (documented in them):
# the profile's package google.v1, no Profile.doc_url or Line.column, proto3
# `optional` fields.
P="$TMP/pyroschema"
mkdir -p "$P/api/proto" "$P/pprof" && cp -r "$ROOT/api/proto/." "$P/api/proto/"
sed -e 's/^package perftools\.profiles;/package google.v1;/' \
    -e '/int64 doc_url = 15;/d' -e '/int64 column = 3;/d' "$ROOT/pprof/profile.proto" >"$P/pprof/profile.proto"
sed -i -e 's/perftools\.profiles\.Profile/google.v1.Profile/g' \
    -e 's/^  int64 max_nodes = /  optional int64 max_nodes = /' -e 's/^  int64 limit = 9;/  optional int64 limit = 9;/' \
    -e 's/^  types\.v1\.StackTraceSelector stack_trace_selector = /  optional types.v1.StackTraceSelector stack_trace_selector = /' \
    -e 's/^  AsyncQueryRequest async = 9;/  optional AsyncQueryRequest async = 9;/' \
    -e 's/^  AsyncQueryResponse async = 4;/  optional AsyncQueryResponse async = 4;/' \
    -e 's/^  types\.v1\.TimeSeriesAggregationType aggregation = 7;/  optional types.v1.TimeSeriesAggregationType aggregation = 7;/' \
    "$P/api/proto/querier/v1/querier.proto"
printf 'version: v2\nmodules:\n  - path: api/proto\n  - path: pprof\n' >"$P/buf.yaml"
if (cd "$W" && "$G/node_modules/.bin/buf" generate "$P" \
      --template "$G/buf.gen.yaml" -o "$W/p" ) >"$TMP/buf-pyro.log" 2>&1 \
   && mv "$W/p/gen" "$W/pgen" && [ -f "$W/pgen/querier/v1/querier_pb.js" ] \
   && grep -q 'google.v1.Profile' "$W/pgen/profile_pb.js" && [ "$(grep -c optional "$P/api/proto/querier/v1/querier.proto")" -ge 11 ]; then
  ok "buf generate: a client of Pyroscope's schema (google.v1.Profile, optional fields)"
else
  fail "buf generate (Pyroscope's schema)" "$(tail -5 "$TMP/buf-pyro.log")"; pf_done; exit 1
fi

(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 500ms -other=false >/dev/null || fail "generate Go profiles"

# A token: the client sends it as Grafana's data source does.
echo "grafana-test-token" >"$TMP/token"; chmod 600 "$TMP/token"
pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" || { fail "daemon starts with --http"; pf_done; exit 1; }
for i in $(seq 1 100); do grep -q 'http: listening on' "$TMP/daemon.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
[ -n "$PORT" ] && ok "daemon listens on a port" || { fail "daemon listens on a port"; pf_done; exit 1; }
U="http://127.0.0.1:$PORT"

# push SERVICE TYPE LABELS FILE: over profefe's API, as pprof_import.sh does
PUSHED=()
push() {
  local code
  PUSHED+=("$4")
  code=$(curl -s -o "$TMP/reply" -w '%{http_code}' -H "Authorization: Bearer $(cat "$TMP/token")" \
    -XPOST "$U/api/0/profiles?service=$1&type=$2${3:+&labels=$3}" --data-binary "@$4")
  [ "$code" == 200 ] || fail "push $(basename "$4") to $1/$2" "HTTP $code $(head -c 200 "$TMP/reply")"
}
LABELS=(pod=a-1,region=us pod=a-2,region=eu pod=b-1,region=us pod=a-3,region=ap)
i=0
for f in "$TMP"/go/cpu-*.pb.gz; do push goapp cpu "${LABELS[$i]}" "$f"; i=$((i + 1)); done
push realgo cpu "" "$REAL/google-pprof/sample.cpu"
for f in "$REAL"/parca/many-*.pb.gz; do push heapapp heap "pod=h-1" "$f"; done
for i in $(seq 1 300); do
  [ -e "$M/goapp/cpu/pod=a-3,region=ap/all/merged.pb.gz" ] && [ -e "$M/heapapp/heap/all/all/merged.pb.gz" ] \
    && [ -e "$M/realgo/cpu/all/all/merged.pb.gz" ] && break
  sleep 0.1
done
check_eq "the pushed label sets in the tree" "$(ls "$M/goapp/cpu" | tr '\n' ' ')" \
  "all pod=a-1,region=us pod=a-2,region=eu pod=a-3,region=ap pod=b-1,region=us "

# --- the Connect client (every method, both encodings, matchers) -----------
(cd "$W" && timeout 600 node connect.mjs "$U" "$TMP/token" "$M" "$TMP") >"$TMP/connect.out" 2>&1
rc=$?
grep -E '^(not )?ok - ' "$TMP/connect.out" | while read -r l; do echo "$l"; done
T_PASS=$((T_PASS + $(grep -c '^ok - ' "$TMP/connect.out")))
T_FAIL=$((T_FAIL + $(grep -c '^not ok - ' "$TMP/connect.out")))
[ "$rc" -eq 0 ] || grep -q '^not ok - ' "$TMP/connect.out" || fail "connect.mjs" "exit $rc: $(tail -5 "$TMP/connect.out")"

# --- the client of Pyroscope's schema (every served method, both encodings) --
# One more service, once connect.mjs has counted the services: a profile
# with pprof's newer fields (Profile.doc_url, a Line.column).
python3 "$ROOT/tests/tools/oddnames_pprof.py" --plain "$TMP/newfields.pb.gz" "$(date +%s)000000000"
push newfields cpu "" "$TMP/newfields.pb.gz"
printf '%s\n' "${PUSHED[@]}" | jq -R . | jq -s . >"$TMP/pushed.json"
(cd "$W" && timeout 600 node pyroscope.mjs "$U" "$TMP/token" "$M" "$TMP") >"$TMP/pyroscope.out" 2>&1
rc=$?
grep -E '^(not )?ok - ' "$TMP/pyroscope.out" | while read -r l; do echo "$l"; done
T_PASS=$((T_PASS + $(grep -c '^ok - ' "$TMP/pyroscope.out")))
T_FAIL=$((T_FAIL + $(grep -c '^not ok - ' "$TMP/pyroscope.out")))
[ "$rc" -eq 0 ] || grep -q '^not ok - ' "$TMP/pyroscope.out" || fail "pyroscope.mjs" "exit $rc: $(tail -5 "$TMP/pyroscope.out")"

# The tree's side of the matchers: meta.json names the series the selector
# matched; ls of its parent still lists only the stored label sets.
SEL="$M/goapp/cpu/pod=~a.*,region!=eu/all"
check_eq "tree matchers: meta.json names the series pod=~a.*,region!=eu matched" \
  "$(jq -r '.series[]' "$SEL/meta.json" 2>/dev/null | sort | tr '\n' ' ')" "pod=a-1,region=us pod=a-3,region=ap "
check_eq "tree matchers: ls of the parent lists the stored label sets only" "$(ls "$M/goapp/cpu" | tr '\n' ' ')" \
  "all pod=a-1,region=us pod=a-2,region=eu pod=a-3,region=ap pod=b-1,region=us "

# --- Pyroscope's flame graph component in Chromium ---------------------------
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && [ -d "$G/node_modules/@pyroscope/flamegraph" ]; then
  (cd "$W" && CHROMIUM="${CHROMIUM:-/usr/bin/chromium}" timeout 300 node flame.mjs "$U" "$TMP/token" "$M" "$TMP" \
    "$ROOT/tests/artifacts/grafana-flamegraph.png") >"$TMP/flame.out" 2>&1
  rc=$?
  grep -E '^(not )?ok - ' "$TMP/flame.out" | while read -r l; do echo "$l"; done
  T_PASS=$((T_PASS + $(grep -c '^ok - ' "$TMP/flame.out")))
  T_FAIL=$((T_FAIL + $(grep -c '^not ok - ' "$TMP/flame.out")))
  [ "$rc" -eq 0 ] || grep -q '^not ok - ' "$TMP/flame.out" || fail "flame.mjs" "exit $rc: $(tail -5 "$TMP/flame.out")"
else
  echo "# skip: Chromium or @pyroscope/flamegraph missing: no browser test"
fi

kill -0 "$PF_PID" 2>/dev/null && ok "daemon alive after the clients" || fail "daemon alive after the clients"
pf_done
