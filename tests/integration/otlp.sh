#!/usr/bin/env bash
# OTLP profiles in (POST /v1development/profiles, opentelemetry-proto v1.11.0)
# with requests built by @bufbuild/protobuf from code that protoc-gen-es (run
# by buf) generated from api/otlp.proto (tests/otlp/otlp.mjs): the CPU profile
# of a real Go program, its samples spread over 30 minutes across an hour
# boundary, pushed as protobuf and JSON, gzipped and not. Each comes back
# from the tree with the totals and per-function values go tool pprof reads
# from the original, in the hours and 10-minute windows of its timestamps,
# with the resource and scope attributes as labels and the pprof labels as
# sample labels. Malformed, other-release and oversized requests get a 4xx
# with the reason (an OTLP Status) and store nothing.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
M="$TMP/mnt"
O="$ROOT/tests/otlp"
MAXBODY=4194304

# --- tools: the npm packages, the generated code, a Go CPU profile ------------
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  fail "node and npm for the OTLP client" "install them (scripts/install-deps.sh --test)"
  pf_done; exit 1
fi
[ -d "$O/node_modules/@bufbuild/protobuf" ] || \
  (cd "$O" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1)
(cd "$O" && ./node_modules/.bin/buf generate) && [ -f "$O/gen/otlp_pb.js" ] \
  && ok "buf + protoc-gen-es generate the client from api/otlp.proto" \
  || { fail "buf + protoc-gen-es generate the client from api/otlp.proto"; pf_done; exit 1; }
otlp() { node "$O/otlp.mjs" "$@"; }
(cd "$ROOT/tests/go/gencpu" && go build -o "$TMP/gencpu" .) && ok "build the Go CPU workload" \
  || { fail "build the Go CPU workload"; pf_done; exit 1; }
"$TMP/gencpu" -out "$TMP/cpu" -n 1 -dur 1s >/dev/null 2>&1
SRC="$TMP/cpu/cpu-0000.pb.gz"
[ -s "$SRC" ] && ok "a real Go CPU profile" || { fail "a real Go CPU profile"; pf_done; exit 1; }

# Samples from hh:45 of the hour before last to hh:15 of the last: two hours,
# four 10-minute windows (hh:40, hh:50, hh:00, hh:10).
now=$(date +%s)
START=$(( now / 3600 * 3600 - 3600 - 900 ))
SPREAD=1800
H1=$(date -u -d "@$START" +%Y-%m-%dT%H)
H2=$(date -u -d "@$((START + SPREAD))" +%Y-%m-%dT%H)

# listen_port LOG: the port a daemon logged it listens on (it binds port 0).
listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
# post NAME FILE CONTENT-TYPE [curl args...]: status into $ST, body into $TMP/body
post() {
  local f="$2" ct="$3"; shift 3
  ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H "Content-Type: $ct" "$@" \
    --data-binary "@$f" "$U/v1development/profiles")
}
# tops FILE: "function flat cum" per function, sorted (go tool pprof -top in ns)
tops() {
  go tool pprof -top -nodecount=1000000 -sample_index=cpu -unit=ns -symbolize=none "$1" 2>/dev/null |
    sed -n '/ flat  flat%/,$p' | tail -n +2 | awk '{ print $6, $1, $4 }' | sort
}
# stored: every stored profile in the tree (one line each)
stored() { ls "$M"/*/*/all/all/profiles 2>/dev/null | grep -c 'pb.gz$'; }
# wait_tree DIR: until DIR exists (the tree shows new data within 2 s)
wait_tree() {
  local i
  for i in $(seq 1 50); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}

pf_start --http 127.0.0.1:0 --http-max-body "$MAXBODY" --http-max-decoded 33554432 \
  || { fail "daemon starts with --http"; pf_done; exit 1; }
for i in $(seq 1 100); do [ -n "$(listen_port "$TMP/daemon.log")" ] && break; sleep 0.1; done
U="http://127.0.0.1:$(listen_port "$TMP/daemon.log")"

WANT_SUMS="$(pprof_sums "$SRC")"
tops "$SRC" >"$TMP/want.top"
[ -s "$TMP/want.top" ] || fail "go tool pprof -top reads the original"

# --- the four encodings -----------------------------------------------------
for enc in proto json; do
  for gz in plain gzip; do
    svc="otlp-$enc-$gz"
    req="$TMP/$svc.req"
    args=(--encoding "$enc" --service "$svc" --start-ns "${START}000000000"
      --spread-ns "${SPREAD}000000000")
    [ "$gz" = gzip ] && args+=(--gzip)
    otlp convert "$SRC" "$req" "${args[@]}" || { fail "$svc: convert"; continue; }
    ct=application/x-protobuf
    [ "$enc" = json ] && ct=application/json
    hdr=()
    [ "$gz" = gzip ] && hdr=(-H "Content-Encoding: gzip")
    post "$svc" "$req" "$ct" "${hdr[@]}"
    if [ "$enc" = json ]; then
      check_eq "$svc: 200 with an empty ExportProfilesServiceResponse" "$ST $(tr -d '\n' <"$TMP/body")" "200 {}"
    else
      check_eq "$svc: 200 with an empty ExportProfilesServiceResponse" "$ST $(wc -c <"$TMP/body")" "200 0"
    fi
    D="$M/$svc/cpu"
    wait_tree "$D/all/all/merged.pb.gz" || { fail "$svc: in the tree" "$(ls -R "$M" | head)"; continue; }
    ok "$svc: in the tree as service.name's service, type cpu"
    check_eq "$svc: resource, scope attributes as labels" "$(ls "$D" | grep -v '^all$')" \
      "deployment.environment=test,host.cpus=2,profiler=go"
    check_eq "$svc: totals as go tool pprof reads the original" \
      "$(pprof_sums "$D/all/all/merged.pb.gz")" "$WANT_SUMS"
    tops "$D/all/all/merged.pb.gz" >"$TMP/got.top"
    if [ -s "$TMP/got.top" ] && cmp -s "$TMP/want.top" "$TMP/got.top"; then
      ok "$svc: every function's flat and cum as in the original (go tool pprof -top)"
    else
      fail "$svc: per-function values" "$(diff "$TMP/want.top" "$TMP/got.top" | head -5)"
    fi
    check_eq "$svc: the hours of its timestamps" "$(ls "$D/all" | grep T | tr '\n' ' ')" "$H1 $H2 "
    for h in "$H1" "$H2"; do
      want=$(jq -r --arg h "$h" '.hours[$h] | to_entries | map("\(.key)=\(.value)") | join(" ")' \
        "$req.expect.json")
      check_eq "$svc: hour $h holds its samples' values" \
        "$(pprof_sums "$D/all/$h/merged.pb.gz" | sed 's/ $//')" "$want"
    done
    check_eq "$svc: one stored profile per 10-minute window" \
      "$(ls "$D/all/all/profiles" | grep -c 'pb.gz$')" 4
    if go tool pprof -tags "$D/all/all/merged.pb.gz" 2>/dev/null | grep -q 'handler: Total'; then
      ok "$svc: sample attributes as pprof labels"
    else
      fail "$svc: sample attributes as pprof labels"
    fi
  done
done

# --- without service.name: OTel's unknown_service -----------------------------
otlp convert "$SRC" "$TMP/nosvc.req" --encoding json --service "" --start-ns "${START}000000000" \
  --spread-ns "${SPREAD}000000000"
post nosvc "$TMP/nosvc.req" application/json
wait_tree "$M/unknown_service/cpu/all/all/merged.pb.gz" && [ "$ST" = 200 ] \
  && ok "no service.name: stored as unknown_service" \
  || fail "no service.name: stored as unknown_service" "status $ST, $(ls "$M")"

# --- refused: a 4xx with the reason, nothing stored -------------------------
BEFORE=$(stored)
SERVICES_BEFORE=$(ls "$M" | tr '\n' ' ')
[ "$BEFORE" -gt 0 ] && ok "profiles stored before the bad requests: $BEFORE" || fail "profiles stored before"
# refused NAME STATUS REGEX FILE CONTENT-TYPE [curl args...]
refused() {
  local n="$1" want="$2" re="$3" f="$4" ct="$5"; shift 5
  local why
  post "$n" "$f" "$ct" "$@"
  # JSON (a JSON request's Status, a 415, the server's own 413) or a protobuf Status
  why="$(jq -er '"\(.code) \(.message // .error)"' "$TMP/body" 2>/dev/null)" ||
    why="$(otlp status "$TMP/body" 2>/dev/null)"
  if [ "$ST" = "$want" ] && echo "$why" | grep -Eq -- "$re"; then ok "$n: $want, $why"
  else fail "$n" "status $ST, reason '$why'"; fi
}
# bad NAME KIND [convert args...]: a request broken as otlp.mjs --break KIND
bad() {
  local n="$1" kind="$2"; shift 2
  otlp convert "$SRC" "$TMP/bad.req" --service otlp-bad --start-ns "${START}000000000" \
    --spread-ns "${SPREAD}000000000" --break "$kind" "$@"
}
bad "truncated" truncate
refused "truncated protobuf" 400 "not an ExportProfilesServiceRequest" "$TMP/bad.req" application/x-protobuf
bad "bad index" badindex
refused "stack index past the table" 400 "stack_table index .* out of range" "$TMP/bad.req" application/x-protobuf
bad "json bad index" badindex --encoding json
refused "JSON: stack index past the table" 400 "stack_table index .* out of range" "$TMP/bad.req" application/json
bad "v1.8" v1.8
refused "release v1.8.0's sample layout (nothing of it stored)" 400 "before v1.11.0" "$TMP/bad.req" application/x-protobuf
bad "v1.8-agg" v1.8-agg
refused "release v1.8.0's aggregated samples" 400 "neither values.*before v1.11.0" "$TMP/bad.req" application/x-protobuf
bad "v1.7" v1.7
refused "release v1.7.0's profile layout" 400 "fields of another layout" "$TMP/bad.req" application/x-protobuf
bad "nodict" nodict
refused "samples without the dictionary" 400 "no dictionary" "$TMP/bad.req" application/x-protobuf
bad "badstring" badstring
refused "string_table[0] not empty" 400 'string_table\[0\]' "$TMP/bad.req" application/x-protobuf
bad "badjson" badjson --encoding json
refused "truncated JSON" 400 "not JSON" "$TMP/bad.req" application/json
printf '{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"samples":[{"values":["x"]}]}]}]}]}' >"$TMP/bad.req"
refused "JSON: a value that is no integer" 400 "values.*not an integer" "$TMP/bad.req" application/json
otlp convert "$SRC" "$TMP/bad.req" --service "a/b" --start-ns "${START}000000000"
refused "service.name with a slash" 400 "service.name" "$TMP/bad.req" application/x-protobuf
otlp convert "$SRC" "$TMP/bad.req" --service otlp-bad --start-ns "${START}000000000" --extra-attrs 63
refused "more than 64 labels" 400 "more than 64 labels" "$TMP/bad.req" application/x-protobuf
otlp convert "$SRC" "$TMP/bad.req" --service otlp-bad --start-ns 631152000000000000
refused "samples from 1990" 400 "out of range" "$TMP/bad.req" application/x-protobuf
otlp convert "$SRC" "$TMP/bad.req" --service otlp-bad --start-ns "${START}000000000"
refused "Content-Encoding gzip on plain data" 400 "not gzip" "$TMP/bad.req" application/x-protobuf \
  -H "Content-Encoding: gzip"
refused "another content type" 415 "application/x-protobuf or application/json" "$TMP/bad.req" text/plain
refused "another content encoding" 415 "Content-Encoding br" "$TMP/bad.req" application/x-protobuf \
  -H "Content-Encoding: br"
head -c $((MAXBODY + 4096)) /dev/urandom >"$TMP/big.req"
refused "a body over --http-max-body" 413 "." "$TMP/big.req" application/x-protobuf
head -c 40000000 /dev/zero | gzip -1 >"$TMP/bomb.req"
refused "gzip past --http-max-decoded" 413 "limit" "$TMP/bomb.req" application/json -H "Content-Encoding: gzip"
check_eq "nothing stored by the refused requests" "$(stored)" "$BEFORE"
check_eq "no service made by the refused requests" "$(ls "$M" | tr '\n' ' ')" "$SERVICES_BEFORE"

kill -0 "$PF_PID" 2>/dev/null && ok "daemon alive after the bad requests" || fail "daemon alive"
pf_stop
check_eq "clean exit" "$PF_RC" 0
pf_done
