#!/usr/bin/env bash
# HTTP API (--http) against the running daemon with real clients: curl as
# profefe's pprof_import.sh sends, go tool pprof fetching /merge over HTTP,
# a multipart upload built like the pyroscope-go SDK's, bad requests (each a
# 4xx with a JSON error while nothing stored changes), limits and the token,
# binding (address in use, IPv6, localhost), and a bounded load test from 32
# connections with a small C client.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
M="$TMP/mnt"
MAXBODY=1048576

# --- tools and profiles -----------------------------------------------------
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c" && ok "build the load client" \
  || { fail "build the load client"; pf_done; exit 1; }
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 4 -dur 150ms >/dev/null || fail "generate Go profiles"

# listen_port LOG: the port a daemon logged it listens on (it binds port 0).
listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
# wait_listen LOG: until the daemon logged its address (at most 10 s)
wait_listen() {
  local i
  for i in $(seq 1 100); do [ -n "$(listen_port "$1")" ] && return 0; sleep 0.1; done
  return 1
}
# req NAME METHOD URL [curl args...]: status into $ST, body into $TMP/body
req() {
  local m="$2" u="$3"; shift 3
  ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X "$m" "$u" "$@")
}
# strict_json FILE: FILE is UTF-8 and JSON. jq alone would not tell: it reads
# invalid bytes as U+FFFD.
strict_json() {
  python3 -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8"))' "$1" 2>/dev/null
}
# bad NAME STATUS METHOD URL [curl args...]: a JSON error with that status
bad() {
  local n="$1" want="$2"; shift 2
  req "$n" "$@"
  if [ "$ST" == "$want" ] && jq -e --argjson c "$want" '.code == $c and (.error | length > 0)' \
      "$TMP/body" >/dev/null 2>&1; then ok "$n: $want with a JSON error"
  else fail "$n" "status $ST, body $(head -c 200 "$TMP/body")"; fi
}

pf_start --http 127.0.0.1:0 --http-max-body "$MAXBODY" || { fail "daemon starts with --http"; pf_done; exit 1; }
ok "daemon starts with --http"
wait_listen "$TMP/daemon.log" && ok "daemon logs its HTTP address" || fail "daemon logs its HTTP address"
PORT=$(listen_port "$TMP/daemon.log")
U="http://127.0.0.1:$PORT"
FROM=2000-01-01T00:00:00
TO=2100-01-01T00:00:00

# --- profefe: push exactly as pprof_import.sh does ---------------------------
n=0
for f in "$TMP"/go/cpu-*.pb.gz; do
  curl -s -XPOST "$U/api/0/profiles?service=goapp&instance_id=imported-profile&type=cpu&labels=k=v,k2=v2" \
    --data-binary "@$f" >"$TMP/reply.$n" || fail "curl POST $(basename "$f")"
  n=$((n + 1))
done
jq -e '.code == 200 and .body.service == "goapp" and .body.type == "cpu" and (.body.id | test("^[0-9a-f]{16}$"))
       and .body.labels == [{"key":"k","value":"v"},{"key":"k2","value":"v2"}] and (.body.created_at | length > 0)' \
  "$TMP/reply.0" >/dev/null && ok "POST reply: profefe envelope with id, type, service, labels, created_at" \
  || fail "POST reply envelope" "$(cat "$TMP/reply.0")"
for i in $(seq 1 20); do [ -e "$M/goapp/cpu/k=v,k2=v2/all/merged.pb.gz" ] && break; sleep 0.1; done
[ -e "$M/goapp/cpu/k=v,k2=v2/all/merged.pb.gz" ] && ok "pushed profiles appear in the mount within 2 s" \
  || fail "pushed profiles appear in the mount within 2 s"

go tool pprof -proto "$TMP"/go/cpu-*.pb.gz >"$TMP/want.pb.gz" 2>/dev/null
want=$(pprof_sums "$TMP/want.pb.gz")
got=$(pprof_sums "$U/api/0/profiles/merge?service=goapp&type=cpu&from=$FROM&to=$TO")
check_eq "go tool pprof fetches /merge over HTTP: sums equal the files'" "$got" "$want"
got=$(pprof_sums "$U/api/0/profiles/merge?service=goapp&type=cpu&labels=k2=v2&from=$FROM&to=$TO")
check_eq "/merge with a label selector" "$got" "$want"
check_eq "/merge equals merged.pb.gz of the mount" "$(pprof_sums "$M/goapp/cpu/all/all/merged.pb.gz")" "$want"
curl -s -D "$TMP/hdr" -o /dev/null "$U/api/0/profiles/merge?service=goapp&type=cpu&from=$FROM&to=$TO"
grep -qi '^Content-Type: application/octet-stream' "$TMP/hdr" && grep -qi '^Content-Disposition: attachment; filename="pprof.pb.gz"' "$TMP/hdr" \
  && ok "/merge: octet-stream with Content-Disposition" || fail "/merge headers" "$(cat "$TMP/hdr")"

req list GET "$U/api/0/profiles?service=goapp&from=$FROM&to=${TO}Z"
check_eq "GET /api/0/profiles: 200" "$ST" 200
check_eq "list has every pushed profile" "$(jq '.body | length' "$TMP/body")" "$n"
jq -e '[.body[].created_at] == ([.body[].created_at] | sort)' "$TMP/body" >/dev/null \
  && ok "list is ascending by time" || fail "list is ascending by time"
req list-limit GET "$U/api/0/profiles?service=goapp&type=cpu&from=$FROM&to=$TO&limit=2"
check_eq "list limit" "$(jq '.body | length' "$TMP/body")" 2
req list-none GET "$U/api/0/profiles?service=goapp&from=2001-01-01T00:00:00&to=2001-01-02T00:00:00.5"
check_eq "empty range: 404 nothing found" "$ST" 404

id0=$(jq -r .body.id "$TMP/reply.0"); id1=$(jq -r .body.id "$TMP/reply.1")
first=$(ls "$TMP"/go/cpu-*.pb.gz | head -1); second=$(ls "$TMP"/go/cpu-*.pb.gz | sed -n 2p)
curl -s -o "$TMP/one.pb.gz" "$U/api/0/profiles/$id0"
# Stored compactly: the same profile (pprof's sums), not the same bytes.
check_eq "GET /api/0/profiles/<id> returns the pushed profile" "$(pprof_sums "$TMP/one.pb.gz")" "$(pprof_sums "$first")"
go tool pprof -proto "$first" "$second" >"$TMP/two.pb.gz" 2>/dev/null
check_eq "GET <id1>+<id2> merges them" "$(pprof_sums "$U/api/0/profiles/$id0+$id1")" "$(pprof_sums "$TMP/two.pb.gz")"
bad "unknown id" 404 GET "$U/api/0/profiles/00000000000fffff"
bad "malformed id" 400 GET "$U/api/0/profiles/not-an-id"

req services GET "$U/api/0/services"
jq -e '.code == 200 and (.body | index("goapp"))' "$TMP/body" >/dev/null && ok "GET /api/0/services" || fail "GET /api/0/services" "$(cat "$TMP/body")"
req version GET "$U/api/0/version"
jq -e '.code == 200 and (.body.version | length > 0) and (.body | has("commit") and has("build_time"))' "$TMP/body" >/dev/null \
  && ok "GET /api/0/version" || fail "GET /api/0/version" "$(cat "$TMP/body")"

# created_at and labels that need unescaping
req created POST "$U/api/0/profiles?service=goapp&type=cpu&labels=%20zone%20=%20a%252Cb%20,=dropped&created_at=2020-02-29T12:30:45.25Z" \
  --data-binary "@$first"
jq -e '.body.created_at == "2020-02-29T12:30:45.25Z" and .body.labels == [{"key":"zone","value":"a,b"}]' "$TMP/body" >/dev/null \
  && ok "created_at and labels as profefe parses them (trim, unescape, empty key dropped)" \
  || fail "created_at and labels" "$(cat "$TMP/body")"
[ -d "$M/goapp/cpu/zone=a%2Cb/2020-02-29T12" ] && ok "created_at decides the profile's place in the tree" \
  || fail "created_at decides the profile's place in the tree"

# Names that are not UTF-8: a service name is refused (Pyroscope's rule for
# application names) with an error that is valid JSON; a label value is
# stored, and every JSON reply still parses, with each bad byte as U+FFFD,
# and so does meta.json in the mount.
req bad-utf8-service POST "$U/api/0/profiles?service=bad%FFname&type=cpu" --data-binary "@$first"
[ "$ST" == 400 ] && strict_json "$TMP/body" && ok "POST with a service not in UTF-8: 400, valid JSON" \
  || fail "POST with a service not in UTF-8: 400, valid JSON" "status $ST: $(head -c 300 "$TMP/body" | od -c | head -5)"
req bad-utf8 POST "$U/api/0/profiles?service=utf8&type=cpu&labels=k=caf%C3%A9%FE" --data-binary "@$first"
strict_json "$TMP/body" && jq -e '.code == 200 and .body.service == "utf8" and
    .body.labels == [{"key":"k","value":"caf\u00e9\ufffd"}]' "$TMP/body" >/dev/null && ok "POST with a label not in UTF-8: valid JSON, bytes replaced" \
  || fail "POST with a label not in UTF-8" "status $ST: $(head -c 300 "$TMP/body" | od -c | head -5)"
req list-utf8 GET "$U/api/0/profiles?service=utf8&type=cpu&from=$FROM&to=$TO"
strict_json "$TMP/body" && jq -e '.code == 200 and (.body | length) == 1 and .body[0].labels[0].value == "caf\u00e9\ufffd"' "$TMP/body" >/dev/null \
  && ok "GET /api/0/profiles with that label: valid JSON" || fail "GET /api/0/profiles with that label" "$(head -c 300 "$TMP/body")"
badmeta="$M/utf8/cpu/all/all/meta.json"
strict_json "$badmeta" && jq -e '.service == "utf8" and (.series | length) == 1' "$badmeta" >/dev/null \
  && ok "meta.json of that label set: valid JSON" || fail "meta.json of that label set" "$(head -c 300 "$badmeta" 2>&1)"

# --- Pyroscope: multipart like the pyroscope-go SDK, and raw format=pprof ------
echo '{"inuse_space":{"units":"bytes","aggregation":"average"},"inuse_objects":{"units":"objects","aggregation":"average"}}' >"$TMP/stc.json"
now=$(date +%s)
req ingest-multipart POST "$U/ingest?name=shop.api%7Benv%3Dprod%2Cregion%3Deu%7D&from=$((now - 10))&until=$now&spyName=gospy&sampleRate=100&units=samples&aggregationType=sum" \
  -F "profile=@$first;filename=profile.pprof;type=application/octet-stream"
check_eq "pyroscope multipart upload: 200" "$ST" 200
check_eq "pyroscope reply body is empty" "$(wc -c <"$TMP/body")" 0
heap=$(ls "$TMP"/go/heap.pb.gz 2>/dev/null)
if [ -n "$heap" ]; then
  req ingest-heap POST "$U/ingest?name=shop.api%7Benv%3Dprod%7D&from=${now}000&until=${now}000" \
    -F "profile=@$heap;filename=profile.pprof;type=application/octet-stream" \
    -F "sample_type_config=@$TMP/stc.json;filename=sample_type_config.json"
  check_eq "pyroscope heap with sample_type_config: 200" "$ST" 200
fi
req ingest-raw POST "$U/ingest?name=shop.api&format=pprof&from=now-1h" --data-binary "@$second"
check_eq "pyroscope raw body with format=pprof: 200" "$ST" 200
for i in $(seq 1 20); do [ -e "$M/shop.api/cpu/env=prod,region=eu/all/merged.pb.gz" ] && break; sleep 0.1; done
[ -e "$M/shop.api/cpu/env=prod,region=eu/all/merged.pb.gz" ] && ok "pyroscope upload in the mount: name's labels, inferred type" \
  || fail "pyroscope upload in the mount" "$(ls -R "$M/shop.api" 2>&1 | head)"
[ -z "$heap" ] || [ -d "$M/shop.api/heap/env=prod" ] && ok "pyroscope heap upload typed heap" || fail "pyroscope heap upload typed heap"
req ingest-list GET "$U/api/0/profiles?service=shop.api&type=cpu&labels=region=eu&from=$FROM&to=$TO"
check_eq "pyroscope from= is the profile's time" "$(jq -r '.body[0].created_at' "$TMP/body")" \
  "$(date -u -d "@$((now - 10))" +%Y-%m-%dT%H:%M:%SZ)"
curl -s -o "$TMP/part.pb.gz" "$U/api/0/profiles/$(jq -r '.body[0].id' "$TMP/body")"
check_eq "the multipart part is stored (its sums)" "$(pprof_sums "$TMP/part.pb.gz")" "$(pprof_sums "$first")"

# --- bad requests: each a 4xx JSON error; nothing stored changes --------------
snap() {
  { curl -s "$U/api/0/profiles?service=goapp&from=$FROM&to=$TO"; echo
    curl -s "$U/api/0/services"; echo
    cat "$M/goapp/cpu/all/all/meta.json"; ls "$M" "$M"/*/ "$M"/*/*/ "$M/goapp/cpu/all/all/profiles"
    curl -s "$U/metrics" | grep '^profilefs_store_\(profiles\|series\|bytes\) '; } >"$1" 2>&1
}
snap "$TMP/before"
head -c 3000 /dev/urandom >"$TMP/junk"
head -c $((MAXBODY + 1)) /dev/zero >"$TMP/big"
bad "junk body" 400 POST "$U/api/0/profiles?service=goapp&type=cpu" --data-binary "@$TMP/junk"
bad "empty body" 400 POST "$U/api/0/profiles?service=goapp&type=cpu"
bad "missing service" 400 POST "$U/api/0/profiles?type=cpu" --data-binary "@$first"
bad "reserved service name" 400 POST "$U/api/0/profiles?service=ingest&type=cpu" --data-binary "@$first"
bad "unknown type" 400 POST "$U/api/0/profiles?service=goapp&type=bogus" --data-binary "@$first"
bad "missing type" 400 POST "$U/api/0/profiles?service=goapp" --data-binary "@$first"
bad "created_at not in UTF-8, quoted in the error" 400 POST "$U/api/0/profiles?service=goapp&type=cpu&created_at=%FF%C3" --data-binary "@$first"
strict_json "$TMP/body" && ok "that error is valid UTF-8" || fail "that error is valid UTF-8" "$(od -c "$TMP/body" | head -3)"
bad "bad created_at" 400 POST "$U/api/0/profiles?service=goapp&type=cpu&created_at=yesterday" --data-binary "@$first"
bad "impossible created_at" 400 POST "$U/api/0/profiles?service=goapp&type=cpu&created_at=2021-02-29T00:00:00" --data-binary "@$first"
bad "bad label escape" 400 POST "$U/api/0/profiles?service=goapp&type=cpu&labels=k=%25zz" --data-binary "@$first"
bad "duplicate label key" 400 POST "$U/api/0/profiles?service=goapp&type=cpu&labels=k=1,k=2" --data-binary "@$first"
bad "oversize body (Content-Length)" 413 POST "$U/api/0/profiles?service=goapp&type=cpu" --data-binary "@$TMP/big"
bad "oversize body (chunked)" 413 POST "$U/api/0/profiles?service=goapp&type=cpu" -H "Transfer-Encoding: chunked" --data-binary "@$TMP/big"
bad "list without from" 400 GET "$U/api/0/profiles?service=goapp&to=$TO"
bad "list with a bad time" 400 GET "$U/api/0/profiles?service=goapp&from=2020-13-01T00:00:00&to=$TO"
bad "from after to" 400 GET "$U/api/0/profiles?service=goapp&from=$TO&to=$FROM"
bad "merge without type" 400 GET "$U/api/0/profiles/merge?service=goapp&from=$FROM&to=$TO"
bad "list without service" 400 GET "$U/api/0/profiles?from=$FROM&to=$TO"
bad "bad limit" 400 GET "$U/api/0/profiles?service=goapp&from=$FROM&to=$TO&limit=x"
bad "unsupported method" 405 DELETE "$U/api/0/profiles"
bad "unknown endpoint" 404 GET "$U/api/1/nothing"
bad "pyroscope folded text" 415 POST "$U/ingest?name=x" --data-binary 'main;work 10'
bad "pyroscope jfr" 415 POST "$U/ingest?name=x&format=jfr" -F "profile=@$first"
bad "pyroscope without name" 400 POST "$U/ingest?format=pprof" --data-binary "@$first"
bad "pyroscope bad name" 400 POST "$U/ingest?name=app%7Benv&format=pprof" --data-binary "@$first"
bad "pyroscope bad from" 400 POST "$U/ingest?name=x&format=pprof&from=soon" --data-binary "@$first"
bad "pyroscope junk part" 400 POST "$U/ingest?name=x" -F "profile=@$TMP/junk"
bad "pyroscope no profile part" 400 POST "$U/ingest?name=x" -F "other=@$first"
bad "pyroscope oversize" 413 POST "$U/ingest?name=x" -F "profile=@$TMP/big"
# Malformed HTTP is libmicrohttpd's to refuse.
req "long URL" GET "$U/api/0/$(head -c 100000 /dev/zero | tr '\0' a)"
check_eq "URL over the connection buffer: 414" "$ST" 414
req "long header" GET "$U/healthz" -H "X-Filler: $(head -c 100000 /dev/zero | tr '\0' b)"
check_eq "header over the connection buffer: 431" "$ST" 431
head -c 5000 /dev/urandom | timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" 2>/dev/null
printf 'POST /api/0/profiles?service=goapp&type=cpu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n' \
  | timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" 2>/dev/null
req "after garbage" GET "$U/healthz"
check_eq "random bytes and a bad chunk on the socket: still serving" "$ST" 200
kill -0 "$PF_PID" 2>/dev/null && ok "daemon stays up after bad requests" || fail "daemon stays up after bad requests"
snap "$TMP/after"
cmp -s "$TMP/before" "$TMP/after" && ok "bad requests changed nothing stored (list, services, meta.json, tree)" \
  || fail "bad requests changed nothing stored" "$(diff "$TMP/before" "$TMP/after" | head -5)"

# --- operations ---------------------------------------------------------------
req healthz GET "$U/healthz"
check_eq "/healthz" "$ST $(cat "$TMP/body")" "200 ok"
curl -s "$U/metrics" >"$TMP/metrics"
grep -q '^profilefs_ingested_profiles_total{source="http",outcome="ok"} ' "$TMP/metrics" \
  && grep -q '^profilefs_ingested_profiles_total{source="http",outcome="invalid"} ' "$TMP/metrics" \
  && grep -q '^profilefs_ingested_profiles_total{source="pyroscope",outcome="ok"} 3' "$TMP/metrics" \
  && grep -q '^profilefs_ingest_duration_seconds_bucket{source="http",le="+Inf"} ' "$TMP/metrics" \
  && grep -q '^profilefs_merge_duration_seconds_count' "$TMP/metrics" \
  && grep -q '^profilefs_store_disk_bytes ' "$TMP/metrics" \
  && grep -q '^# TYPE profilefs_http_requests_total counter' "$TMP/metrics" \
  && ok "/metrics: ingest outcomes by source, latencies, store size" || fail "/metrics" "$(head -30 "$TMP/metrics")"
if grep -q '^profilefs_fuse_requests_total' "$TMP/metrics"; then ok "/metrics: FUSE requests"; else fail "/metrics: FUSE requests"; fi

# --- load: 32 connections, bounded in count and time ---------------------------
LOADN=2000
"$TMP/httpload" -c 32 -n $LOADN -t 120 -p '/api/0/profiles?service=load&type=cpu&labels=conn={c}' \
  127.0.0.1 "$PORT" "$TMP"/go/cpu-*.pb.gz "$REAL/pyroscope/profile_python" >"$TMP/load.out" 2>&1 \
  && ok "load: $LOADN pushes from 32 connections, all 200 ($(grep ^rate "$TMP/load.out"))" \
  || fail "load test" "$(cat "$TMP/load.out")"
req load-list GET "$U/api/0/profiles?service=load&from=$FROM&to=$TO"
check_eq "load: every pushed profile is stored" "$(jq '.body | length' "$TMP/body")" $LOADN
check_eq "load: one series per connection" "$(ls "$M/load/cpu" | grep -c '^conn=')" 32
kill -0 "$PF_PID" 2>/dev/null && ok "daemon up after the load test" || fail "daemon up after the load test"
pf_stop
check_eq "daemon exits 0 on SIGTERM with HTTP on" "$PF_RC" 0

# --- binding, token and connection limit (short-lived daemons) -----------------
# run2 NAME ARGS...: start a second daemon on $TMP/mnt2, logging to $TMP/d2.log
run2() {
  mkdir -p "$TMP/mnt2"; : >"$TMP/d2.log"
  "$BIN" serve --data "$TMP/data2" "$@" "$TMP/mnt2" >>"$TMP/d2.log" 2>&1 &
  D2=$!
}
stop2() {
  kill -TERM "$D2" 2>/dev/null
  for i in $(seq 1 100); do kill -0 "$D2" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$D2" 2>/dev/null; wait "$D2" 2>/dev/null
  fusermount3 -u -z "$TMP/mnt2" 2>/dev/null
}
pf_start --http "127.0.0.1:$PORT" || fail "restart on the same port"
run2 --http "127.0.0.1:$PORT"
wait "$D2"; rc=$?
[ "$rc" -ne 0 ] && grep -q "address already in use" "$TMP/d2.log" && ok "address in use: exit $rc with a clear message" \
  || fail "address in use" "rc $rc: $(cat "$TMP/d2.log")"
pf_stop
for spec in "[::1]:0" "localhost:0"; do
  if [ "$spec" == "[::1]:0" ] && ! ip -6 addr show lo 2>/dev/null | grep -q '::1'; then ok "# skip $spec: no IPv6 loopback"; continue; fi
  run2 --http "$spec"
  if wait_listen "$TMP/d2.log"; then
    p=$(listen_port "$TMP/d2.log")
    h=$(sed -n 's/.*listening on http:\/\/\(.*\):[0-9]* (.*/\1/p' "$TMP/d2.log")
    curl -s -g "http://$h:$p/healthz" | grep -q ok && ok "binds $spec (as $h:$p)" || fail "binds $spec" "$(cat "$TMP/d2.log")"
  else
    fail "binds $spec" "$(cat "$TMP/d2.log")"
  fi
  stop2
done
for spec in "nohost" ":8080" "127.0.0.1:99999" "[::1" "256.1.1.1:80"; do
  run2 --http "$spec"; wait "$D2"; rc=$?
  [ "$rc" -ne 0 ] && grep -q -- "--http" "$TMP/d2.log" && ok "bad --http '$spec' refused: $(grep -- --http "$TMP/d2.log" | head -1 | sed 's/.*--http //')" \
    || fail "bad --http '$spec'" "rc $rc"
  fusermount3 -u -z "$TMP/mnt2" 2>/dev/null
done

run2 --http 127.0.0.1:0 --http-token s3cret --http-max-conns 4 --http-max-decoded 100K
if wait_listen "$TMP/d2.log"; then
  U2="http://127.0.0.1:$(listen_port "$TMP/d2.log")"
  bad "no token" 401 POST "$U2/api/0/profiles?service=t&type=cpu" --data-binary "@$first"
  bad "wrong token" 401 POST "$U2/api/0/profiles?service=t&type=cpu" -H "Authorization: Bearer nope" --data-binary "@$first"
  bad "token on queries too" 401 GET "$U2/api/0/services"
  req token-ok POST "$U2/api/0/profiles?service=t&type=cpu" -H "Authorization: Bearer s3cret" --data-binary "@$first"
  check_eq "right token: 200" "$ST" 200
  bad "unzipped size over --http-max-decoded" 413 POST "$U2/api/0/profiles?service=t&type=heap" \
    -H "Authorization: Bearer s3cret" --data-binary "@$REAL/parca/alloc_space_delta.pb.gz"
  req token-healthz GET "$U2/healthz"
  check_eq "/healthz needs no token" "$ST" 200
  # Hold 6 idle connections: past --http-max-conns 4 the next request gets a 503.
  holders=()
  for i in 1 2 3 4 5 6; do (exec 3<>"/dev/tcp/127.0.0.1/$(listen_port "$TMP/d2.log")"; sleep 2) & holders+=($!); done
  sleep 0.5
  bad "connection limit" 503 GET "$U2/healthz"
  wait "${holders[@]}"
  req after-limit GET "$U2/healthz"
  check_eq "served again once connections close" "$ST" 200
else
  fail "daemon with --http-token starts" "$(cat "$TMP/d2.log")"
fi
stop2

pf_done
