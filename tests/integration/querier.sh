#!/usr/bin/env bash
# Grafana's query API (querier.v1.QuerierService over Connect) against the
# running daemon with real clients: curl in both encodings (JSON, and
# protobuf built and read by protoc --encode/--decode from the project's
# .proto), every served method, sums checked against go tool pprof on the
# tree's merged.pb.gz of the same selection; 501 for what is not served,
# Connect errors (400 bad selectors, 404, 415, 401 without the token, 403 for
# a local user the mount's rules refuse); and label matchers giving the same
# sums through the tree, the profefe API and the Connect API; the reply
# cache (the same question twice, then after a profile stored in its range).
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
M="$TMP/mnt"
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
PROTO=(-I"$ROOT/pprof" -I"$ROOT/api/proto" "$ROOT/api/proto/querier/v1/querier.proto")

listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
wait_listen() {
  local i
  for i in $(seq 1 100); do [ -n "$(listen_port "$1")" ] && return 0; sleep 0.1; done
  return 1
}
# call METHOD JSON [curl args...]: POST JSON, status into $ST, body into $TMP/body
call() {
  local m="$1" d="$2"; shift 2
  ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    "$Q/$m" -d "$d" "$@")
}
# pcall METHOD REQTYPE RESPTYPE TEXT: POST protobuf (encoded from TEXT), the reply decoded as text into $TMP/pbody
pcall() {
  local m="$1" rq="$2" rs="$3" text="$4"
  printf '%s' "$text" | protoc "${PROTO[@]}" --encode="$rq" >"$TMP/preq" || { ST=encode; return; }
  ST=$(curl -s -o "$TMP/pbin" -w '%{http_code}' -X POST -H 'Content-Type: application/proto' \
    "$Q/$m" --data-binary "@$TMP/preq")
  if [ "$ST" == 200 ] && [ -n "$rs" ]; then
    protoc "${PROTO[@]}" --decode="$rs" <"$TMP/pbin" >"$TMP/pbody" 2>/dev/null || ST=decode
  fi
}
# cerr NAME STATUS CODE METHOD JSON [curl args]: a Connect error with that status and code
cerr() {
  local n="$1" want="$2" code="$3"; shift 3
  call "$@"
  if [ "$ST" == "$want" ] && jq -e --arg c "$code" '.code == $c and (.message | length > 0)' \
      "$TMP/body" >/dev/null 2>&1; then ok "$n: $want {\"code\":\"$code\"}"
  else fail "$n" "status $ST, body $(head -c 300 "$TMP/body")"; fi
}
# cpu_ns FILE|URL: the cpu/nanoseconds sum as go tool pprof reads it
cpu_ns() { pprof_sums "$@" | tr ' ' '\n' | sed -n 's/^cpu\/nanoseconds=//p'; }

command -v protoc >/dev/null && ok "protoc is installed (scripts/install-deps.sh --test)" \
  || { fail "protoc is installed (scripts/install-deps.sh --test)"; pf_done; exit 1; }
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
for p in api-1 api-2 web-1; do
  "$TMP/genprof" -out "$TMP/$p" -n 3 -dur 120ms >/dev/null || fail "generate Go profiles ($p)"
done

pf_start --http 127.0.0.1:0 || { fail "daemon starts with --http"; pf_done; exit 1; }
wait_listen "$TMP/daemon.log" || fail "daemon logs its HTTP address"
U="http://127.0.0.1:$(listen_port "$TMP/daemon.log")"
Q="$U/querier.v1.QuerierService"

# --- GetProfileStats of an empty store: Pyroscope's "no data" answer ---------
call GetProfileStats '{}'
check_eq "GetProfileStats (JSON), nothing stored: dataIngested false, oldest INT64_MAX, newest INT64_MIN" \
  "$ST $(jq -c '[.dataIngested // false, .oldestProfileTime, .newestProfileTime]' "$TMP/body")" \
  '200 [false,"9223372036854775807","-9223372036854775808"]'

declare -A REGION=([api-1]=us [api-2]=eu [web-1]=us)
for p in api-1 api-2 web-1; do
  for f in "$TMP/$p"/cpu-*.pb.gz; do
    curl -sf -XPOST "$U/api/0/profiles?service=checkout&type=cpu&labels=pod=$p,region=${REGION[$p]}" \
      --data-binary "@$f" >/dev/null || fail "push $f"
  done
  curl -sf -XPOST "$U/api/0/profiles?service=checkout&type=heap&labels=pod=$p,region=${REGION[$p]}" \
    --data-binary "@$TMP/$p/heap.pb.gz" >/dev/null || fail "push heap of $p"
done
for i in $(seq 1 30); do [ -e "$M/checkout/cpu/pod=web-1,region=us/all/merged.pb.gz" ] && break; sleep 0.1; done

# --- GetProfileStats: the pushed profiles' oldest and newest times (ms) ------
TIMES=$(for f in "$TMP"/{api-1,api-2,web-1}/{cpu-*,heap}.pb.gz; do
  gunzip -c "$f" | protoc -I"$ROOT/pprof" --decode=perftools.profiles.Profile profile.proto | sed -n 's/^time_nanos: //p'
done | sort -n)
LO=$(( $(head -1 <<<"$TIMES") / 1000000 )) HI=$(( $(tail -1 <<<"$TIMES") / 1000000 ))
call GetProfileStats '{}'
check_eq "GetProfileStats (JSON): dataIngested, oldest and newest pushed profile in ms" \
  "$ST $(jq -c '[.dataIngested, .oldestProfileTime, .newestProfileTime]' "$TMP/body")" "200 [true,\"$LO\",\"$HI\"]"
pcall GetProfileStats types.v1.GetProfileStatsRequest types.v1.GetProfileStatsResponse ''
check_eq "GetProfileStats (proto): the same" "$ST $(tr '\n' ' ' <"$TMP/pbody" 2>/dev/null)" \
  "200 data_ingested: true oldest_profile_time: $LO newest_profile_time: $HI "

# The expected sums: go tool pprof on the tree's merges.
ALL=$(cpu_ns "$M/checkout/cpu/all/all/merged.pb.gz")
SEL='pod=~api-.*,region!=eu'
SELSUM=$(cpu_ns "$M/checkout/cpu/$SEL/all/merged.pb.gz")
API1=$(cpu_ns "$M/checkout/cpu/pod=api-1,region=us/all/merged.pb.gz")
WANT_SEL=$(cpu_ns "$TMP"/api-1/cpu-*.pb.gz)
[ -n "$ALL" ] && [ "$ALL" -gt 0 ] && ok "the tree merges the pushed profiles ($ALL ns)" || fail "tree merge" "$ALL"
check_eq "tree: matcher selector $SEL sums the matching series (api-1 only)" "$SELSUM" "$WANT_SEL"
check_eq "tree: matcher selector equals the series' own directory" "$SELSUM" "$API1"

# --- ProfileTypes, LabelNames, LabelValues, Series -------------------------
call ProfileTypes '{}'
[ "$ST" == 200 ] && jq -e --arg c "$CPU" '[.profileTypes[].ID] | index($c) != null and
    index("memory:inuse_space:bytes:space:bytes") != null' "$TMP/body" >/dev/null \
  && jq -e '.profileTypes[] | select(.ID == "process_cpu:cpu:nanoseconds:cpu:nanoseconds") |
      .name == "process_cpu" and .sampleType == "cpu" and .sampleUnit == "nanoseconds" and
      .periodType == "cpu" and .periodUnit == "nanoseconds"' "$TMP/body" >/dev/null \
  && ok "ProfileTypes (JSON): Pyroscope's five-part ids, split into their fields" \
  || fail "ProfileTypes (JSON)" "$ST $(head -c 400 "$TMP/body")"
pcall ProfileTypes querier.v1.ProfileTypesRequest querier.v1.ProfileTypesResponse 'start: 1'
[ "$ST" == 200 ] && grep -q "ID: \"$CPU\"" "$TMP/pbody" && grep -q 'ID: "memory:alloc_space:bytes:space:bytes"' "$TMP/pbody" \
  && ok "ProfileTypes (proto): the same ids" || fail "ProfileTypes (proto)" "$ST $(head -c 300 "$TMP/pbody" 2>/dev/null)"
call LabelNames '{}'
jq -e '.names | index("service_name") != null and index("pod") != null and index("region") != null
    and index("__name__") != null' "$TMP/body" >/dev/null && ok "LabelNames (JSON): service_name, __name__ and the stored keys" \
  || fail "LabelNames" "$(head -c 300 "$TMP/body")"
pcall LabelNames types.v1.LabelNamesRequest types.v1.LabelNamesResponse 'matchers: "{service_name=\"checkout\"}"'
[ "$ST" == 200 ] && grep -q 'names: "pod"' "$TMP/pbody" && ok "LabelNames (proto)" || fail "LabelNames (proto)" "$ST"
call LabelValues '{"name":"pod","matchers":["{region!=\"eu\"}"]}'
check_eq "LabelValues (JSON) with a != matcher" "$(jq -c .names "$TMP/body")" '["api-1","web-1"]'
call LabelValues '{"name":"service_name"}'
check_eq "LabelValues of service_name: the services" "$(jq -c .names "$TMP/body")" '["checkout"]'
pcall LabelValues types.v1.LabelValuesRequest types.v1.LabelValuesResponse 'name: "pod" matchers: "{pod=~\"api-.*\"}"'
check_eq "LabelValues (proto) with a regex matcher" "$(grep -c 'names:' "$TMP/pbody" 2>/dev/null)" 2
call Series "{\"matchers\":[\"{__profile_type__=\\\"$CPU\\\", pod=~\\\"api-.*\\\"}\"],\"labelNames\":[\"pod\",\"__profile_type__\"]}"
check_eq "Series (JSON): one label set per matching series, label_names kept" \
  "$(jq -c '[.labelsSet[].labels | map(.name + "=" + .value) | join(",")] | sort' "$TMP/body")" \
  "[\"__profile_type__=$CPU,pod=api-1\",\"__profile_type__=$CPU,pod=api-2\"]"
pcall Series querier.v1.SeriesRequest querier.v1.SeriesResponse 'matchers: "{pod=\"web-1\"}"'
[ "$ST" == 200 ] && grep -q 'value: "web-1"' "$TMP/pbody" && ! grep -q 'value: "api-1"' "$TMP/pbody" \
  && ok "Series (proto)" || fail "Series (proto)" "$ST"

# --- SelectMergeStacktraces --------------------------------------------------
call SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"checkout\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
check_eq "SelectMergeStacktraces (JSON): total equals go tool pprof's on merged.pb.gz" "$(jq -r .flamegraph.total "$TMP/body")" "$ALL"
jq -e '.flamegraph as $f | $f.names[0] == "total" and ($f.levels[0].values | length) == 4 and
    ($f.levels[0].values[1] == $f.total) and
    ([$f.levels[] | .values as $v | range(0; $v | length; 4) | $v[. + 2] | tonumber] | add) == ($f.total | tonumber) and
    ([$f.levels[] | .values as $v | range(0; $v | length; 4) | $v[. + 2] | tonumber] | max) == ($f.maxSelf | tonumber)' \
  "$TMP/body" >/dev/null && ok "flamebearer levels: root is the total, selfs add up to it, max_self is the largest" \
  || fail "flamebearer levels" "$(head -c 400 "$TMP/body")"
# Every level's nodes lie within their level: offsets and totals never pass the root's width.
jq -e '.flamegraph as $f | [$f.levels[] | .values as $v | [range(0; $v | length; 4) | ($v[.] | tonumber) + ($v[. + 1] | tonumber)] | add] | max <= ($f.total | tonumber)' \
  "$TMP/body" >/dev/null && ok "flamebearer offsets stay within the root" || fail "flamebearer offsets"
call SelectMergeStacktraces "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"checkout\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\",\"max_nodes\":\"8\"}"
n=$(jq '[.flamegraph.levels[].values | length / 4] | add' "$TMP/body")
check_eq "max_nodes 8 (original field names accepted): the total stays" "$(jq -r .flamegraph.total "$TMP/body")" "$ALL"
[ "${n%.*}" -le 20 ] && jq -e '.flamegraph.names | index("other") != null' "$TMP/body" >/dev/null \
  && ok "max_nodes 8: $n nodes, the rest summed into \"other\"" || fail "max_nodes 8" "$n nodes"
pcall SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest querier.v1.SelectMergeStacktracesResponse \
  "profile_typeID: \"$CPU\" label_selector: \"{pod=~\\\"api-.*\\\", region!=\\\"eu\\\"}\" start: 1 end: 4102444800000"
check_eq "SelectMergeStacktraces (proto) with matchers: the tree's sum for $SEL" \
  "$(sed -n 's/^  total: //p' "$TMP/pbody" 2>/dev/null)" "$SELSUM"

# --- SelectMergeStacktraces in the formats PPROF and TREE ---------------------
call SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"checkout\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\",\"format\":\"PROFILE_FORMAT_PPROF\"}"
check_eq "format PPROF (JSON): pprof.profile, its sample type by name, values adding up to the merge" \
  "$ST $(jq -c '.pprof.profile as $p | [($p.sampleType[0] | $p.stringTable[(.type | tonumber)] + "/" + $p.stringTable[(.unit | tonumber)]),
      ([$p.sample[].value[0] | tonumber] | add), has("flamegraph")]' "$TMP/body")" "200 [\"cpu/nanoseconds\",$ALL,false]"
pcall SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest "" \
  "profile_typeID: \"$CPU\" label_selector: \"{service_name=\\\"checkout\\\"}\" start: 1 end: 4102444800000 format: PROFILE_FORMAT_PPROF"
# The reply is field 5 (PprofProfile) holding field 1 (the profile): decode it as a profile.
protoc "${PROTO[@]}" --decode=querier.v1.SelectMergeStacktracesResponse <"$TMP/pbin" >"$TMP/pbody" 2>&1
protoc "${PROTO[@]}" --encode=perftools.profiles.Profile \
  < <(sed -n '/^pprof {/,/^}/p' "$TMP/pbody" | sed '1d;$d' | sed -n '/^  profile {/,/^  }/p' | sed '1d;$d') >"$TMP/pp.pb" 2>/dev/null
check_eq "format PPROF (proto): go tool pprof reads pprof.profile, cpu/nanoseconds alone, the merge's sum" \
  "$ST $(pprof_sums "$TMP/pp.pb" | xargs)" "200 cpu/nanoseconds=$ALL"
call SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"checkout\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\",\"format\":\"PROFILE_FORMAT_TREE\"}"
TB=$(jq -r .tree "$TMP/body" | base64 -d | od -An -tx1 -N2 | tr -d ' ')
check_eq "format TREE (JSON): tree bytes (base64), opening with the nameless root (00 00), no flame graph" \
  "$ST $TB $(jq -c 'has("flamegraph")' "$TMP/body")" "200 0000 false"
pcall SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest querier.v1.SelectMergeStacktracesResponse \
  "profile_typeID: \"$CPU\" label_selector: \"{service_name=\\\"checkout\\\"}\" start: 1 end: 4102444800000 format: PROFILE_FORMAT_TREE"
[ "$ST" == 200 ] && grep -q '^tree: "\\000\\000' "$TMP/pbody" && ! grep -q '^flamegraph' "$TMP/pbody" \
  && ok "format TREE (proto): the tree field, opening with the nameless root" || fail "format TREE (proto)" "$ST $(head -c 200 "$TMP/pbody")"
cerr "format DOT: not served" 501 unimplemented SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"format\":\"PROFILE_FORMAT_DOT\"}"

# --- SelectMergeProfile -------------------------------------------------------
pcall SelectMergeProfile querier.v1.SelectMergeProfileRequest "" \
  "profile_typeID: \"$CPU\" label_selector: \"{service_name=\\\"checkout\\\"}\" start: 1 end: 4102444800000"
check_eq "SelectMergeProfile (proto): go tool pprof reads the pprof, same sum" "$(cpu_ns "$TMP/pbin")" "$ALL"
check_eq "SelectMergeProfile: only the requested sample type" "$(pprof_sums "$TMP/pbin" | wc -w)" 1
call SelectMergeProfile "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{pod=\\\"api-1\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
check_eq "SelectMergeProfile (JSON): sample values add up to the series' sum" \
  "$(jq '[.sample[].value[0] | tonumber] | add' "$TMP/body")" "$API1"

# --- SelectSeries ---------------------------------------------------------------
now=$(( $(date +%s) * 1000 ))
call SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":\"$((now - 3600000))\",\"end\":\"$((now + 60000))\",\"step\":60,\"groupBy\":[\"pod\"]}"
check_eq "SelectSeries (JSON): one series per pod" "$(jq -c '[.series[].labels[0].value]' "$TMP/body")" '["api-1","api-2","web-1"]'
check_eq "SelectSeries: the points of api-1 add up to its merge" \
  "$(jq '.series[] | select(.labels[0].value == "api-1") | [.points[].value] | add | floor' "$TMP/body")" "$API1"
check_eq "SelectSeries: all points add up to the whole merge" "$(jq '[.series[].points[].value] | add | floor' "$TMP/body")" "$ALL"
jq -e --argjson s 60000 '[.series[].points[].timestamp | tonumber % $s] | all(. == 0)' "$TMP/body" >/dev/null \
  && ok "SelectSeries: timestamps in ms at step boundaries" || fail "SelectSeries timestamps"
call SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":\"$((now - 3600000))\",\"end\":\"$((now + 60000))\",\"step\":60,\"groupBy\":[\"pod\"],\"limit\":\"1\"}"
check_eq "SelectSeries limit 1: one series" "$(jq '.series | length' "$TMP/body")" 1
pcall SelectSeries querier.v1.SelectSeriesRequest querier.v1.SelectSeriesResponse \
  "profile_typeID: \"$CPU\" label_selector: \"{}\" start: $((now - 3600000)) end: $((now + 60000)) step: 3600"
[ "$ST" == 200 ] && [ "$(grep -c 'value:' "$TMP/pbody")" -ge 1 ] && ok "SelectSeries (proto): points" || fail "SelectSeries (proto)" "$ST"

# --- Diff -------------------------------------------------------------------------
L="{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{pod=\\\"api-1\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
R="{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"checkout\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
call Diff "{\"left\":$L,\"right\":$R}"
check_eq "Diff (JSON): leftTicks, rightTicks, total" "$(jq -r '.flamegraph | "\(.leftTicks) \(.rightTicks) \(.total)"' "$TMP/body")" \
  "$API1 $ALL $((API1 + ALL))"
jq -e '.flamegraph.levels[0].values | length == 7' "$TMP/body" >/dev/null && ok "Diff: seven values per node" || fail "Diff levels"
pcall Diff querier.v1.DiffRequest querier.v1.DiffResponse \
  "left { profile_typeID: \"$CPU\" label_selector: \"{}\" start: 1 end: 4102444800000 } right { profile_typeID: \"$CPU\" label_selector: \"{}\" start: 1 end: 4102444800000 }"
check_eq "Diff (proto): both sides" "$(sed -n 's/^  \(leftTicks\|rightTicks\): //p' "$TMP/pbody" 2>/dev/null | tr '\n' ' ')" "$ALL $ALL "

# --- the same selection three ways -------------------------------------------------
PROFEFE=$(cpu_ns "$U/api/0/profiles/merge?service=checkout&type=cpu&labels=pod%3D~api-.*,region!%3Deu&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00")
check_eq "matchers: profefe's /merge equals the tree's" "$PROFEFE" "$SELSUM"
call SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"checkout\\\",pod=~\\\"api-.*\\\",region!=\\\"eu\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
check_eq "matchers: the Connect API equals the tree's" "$(jq -r .flamegraph.total "$TMP/body")" "$SELSUM"
jq -e '.series == ["pod=api-1,region=us"] and .selector == "pod=~api-.*,region!=eu"' \
  "$M/checkout/cpu/$SEL/all/meta.json" >/dev/null && ok "meta.json names the series the selector matched" \
  || fail "meta.json series" "$(cat "$M/checkout/cpu/$SEL/all/meta.json" 2>&1 | head -c 300)"
check_eq "ls of the type still lists the stored label sets" "$(ls "$M/checkout/cpu" | tr '\n' ' ')" \
  "all pod=api-1,region=us pod=api-2,region=eu pod=web-1,region=us "
[ ! -e "$M/checkout/cpu/pod=~(" ] && ok "a bad regex in the tree: no such directory" || fail "bad regex in the tree"
check_eq "the tree's matchers: '!~'" "$(cpu_ns "$M/checkout/cpu/pod!~api-.*/all/merged.pb.gz")" \
  "$(cpu_ns "$M/checkout/cpu/pod=web-1,region=us/all/merged.pb.gz")"

# --- the reply cache: the same question again, then after new data in its range ----
WQ="{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{pod=\\\"web-1\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
call SelectMergeStacktraces "$WQ"; cp "$TMP/body" "$TMP/first"
call SelectMergeStacktraces "$WQ"
cmp -s "$TMP/body" "$TMP/first" && ok "the same question twice: the same reply" || fail "repeated reply differs"
W1=$(jq -r .flamegraph.total "$TMP/first")
EXTRA=$(ls "$TMP"/web-1/cpu-*.pb.gz | head -1)
curl -sf -XPOST "$U/api/0/profiles?service=checkout&type=cpu&labels=pod=web-1,region=us" \
  --data-binary "@$EXTRA" >/dev/null || fail "push one more profile of web-1"
call SelectMergeStacktraces "$WQ"
check_eq "a profile stored in the range: the next answer has it" \
  "$(jq -r .flamegraph.total "$TMP/body")" "$((W1 + $(cpu_ns "$EXTRA")))"
pcall SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest querier.v1.SelectMergeStacktracesResponse \
  "profile_typeID: \"$CPU\" label_selector: \"{pod=\\\"web-1\\\"}\" start: 1 end: 4102444800000"
check_eq "the same question in protobuf after it: the same total" \
  "$(sed -n 's/^  total: //p' "$TMP/pbody" 2>/dev/null)" "$((W1 + $(cpu_ns "$EXTRA")))"

# --- errors ------------------------------------------------------------------------
cerr "not implemented: SelectHeatmap" 501 unimplemented SelectHeatmap '{}'
ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: application/proto' "$Q/AnalyzeQuery" --data-binary '')
[ "$ST" == 501 ] && jq -e '.code == "unimplemented"' "$TMP/body" >/dev/null && ok "not implemented (proto request): 501 unimplemented" \
  || fail "501 with a proto request" "$ST"
cerr "unknown method" 404 not_found NoSuchMethod '{}'
cerr "bad selector: unquoted value" 400 invalid_argument SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{pod=api}\"}"
cerr "bad selector: bad regex" 400 invalid_argument SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{pod=~\\\"(\\\"}\"}"
cerr "bad selector: unclosed" 400 invalid_argument LabelValues '{"name":"pod","matchers":["{pod=\"a\""]}'
cerr "bad selector in Series" 400 invalid_argument Series '{"matchers":["pod"]}'
cerr "missing profile type" 400 invalid_argument SelectMergeStacktraces '{"labelSelector":"{}"}'
cerr "bad profile type" 400 invalid_argument SelectMergeProfile '{"profileTypeID":"cpu"}'
cerr "malformed JSON" 400 invalid_argument ProfileTypes '{"start":'
cerr "wrong JSON type" 400 invalid_argument ProfileTypes '{"start":"soon"}'
cerr "SelectSeries without a step" 400 invalid_argument SelectSeries "{\"profileTypeID\":\"$CPU\",\"start\":\"1\",\"end\":\"2\"}"
ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: text/plain' "$Q/ProfileTypes" -d '{}')
[ "$ST" == 415 ] && jq -e '.code | length > 0' "$TMP/body" >/dev/null && ok "415 for a content type Connect does not use" || fail "415" "$ST"
ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: application/proto' "$Q/ProfileTypes" --data-binary $'\xff\xff\xff')
[ "$ST" == 400 ] && jq -e '.code == "invalid_argument"' "$TMP/body" >/dev/null && ok "malformed protobuf: 400 invalid_argument" || fail "bad proto" "$ST"
ST=$(curl -s -o /dev/null -w '%{http_code}' "$Q/ProfileTypes")
check_eq "GET: 405" "$ST" 405
printf '{"name":"pod"}' | gzip >"$TMP/gz"
ST=$(curl -s -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' \
  "$Q/LabelValues" --data-binary "@$TMP/gz")
check_eq "gzipped request body" "$ST $(jq -c .names "$TMP/body")" '200 ["api-1","api-2","web-1"]'
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -w '\n%{http_code}' -X POST \
    -H 'Content-Type: application/json' "$Q/ProfileTypes" -d '{}')
  ST=$(tail -1 <<<"$out")
  [ "$ST" == 403 ] && head -1 <<<"$out" | jq -e '.code == "permission_denied"' >/dev/null \
    && ok "a local user the mount's rules refuse: 403 permission_denied" || fail "403 for nobody" "$out"
fi
curl -s "$U/metrics" | grep -q 'profilefs_merge_duration_seconds_count{source="http"}' \
  && ok "the API's merges are counted with source http" || fail "merge metrics"

# --- names that are not UTF-8 or hold a NUL: kept in protobuf, repaired in JSON --
python3 "$ROOT/tests/tools/oddnames_pprof.py" "$TMP/odd.pb.gz" "$(date +%s)000000000"
curl -sf -XPOST "$U/api/0/profiles?service=oddnames&type=cpu" --data-binary "@$TMP/odd.pb.gz" >/dev/null \
  || fail "push a profile with odd names"
call SelectMergeProfile "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"oddnames\\\"}\",\"start\":\"1\",\"end\":\"4102444800000\"}"
# (The store keeps names as C strings: a NUL ends the name, in both forms.)
check_eq "odd names (JSON): stringTable holds them as strings, bad bytes as U+FFFD" \
  "$ST $(jq -c '[.stringTable[] | select(startswith("bad") or startswith("nul"))]' "$TMP/body")" \
  $'200 ["bad\xef\xbf\xbdname\xef\xbf\xbd","nul"]'
check_eq "pprof's newer fields (JSON): no Line.column, no Profile.doc_url, as Pyroscope's schema has none" \
  "$(jq -c '[.. | objects | select(has("column") or has("docUrl"))] | length' "$TMP/body")" 0
pcall SelectMergeProfile querier.v1.SelectMergeProfileRequest "" \
  "profile_typeID: \"$CPU\" label_selector: \"{service_name=\\\"oddnames\\\"}\" start: 1 end: 4102444800000"
protoc --decode_raw <"$TMP/pbin" >"$TMP/raw" 2>&1
check_eq "pprof's newer fields (proto): kept (doc_url, field 15; a line's column 7, field 3)" \
  "$(grep -c '^15: ' "$TMP/raw") $(grep -c '^    3: 7$' "$TMP/raw")" "1 1"
# (cat -v: \xff is M-^?, \xfe M-~, the NUL ^@.)
go tool pprof -symbolize=none -top "$TMP/pbin" 2>&1 | cat -v >"$TMP/oddtop"
[ "$ST" == 200 ] && grep -q '700ns.*badM-^?nameM-~$' "$TMP/oddtop" && grep -q '300ns.*nul$' "$TMP/oddtop" \
  && ok "odd names (proto): go tool pprof -top shows the names' own bytes (up to the NUL)" || fail "odd names (proto)" "$ST $(cat -v "$TMP/oddtop" | tail -4)"
pf_stop

# --- the token, as Grafana's data source sends it -------------------------------------
echo "gr4fana-t0ken" >"$TMP/token"
: >"$TMP/daemon.log"
pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" || fail "daemon with --http-token-file"
wait_listen "$TMP/daemon.log"
Q="http://127.0.0.1:$(listen_port "$TMP/daemon.log")/querier.v1.QuerierService"
cerr "no token: 401 in Connect's form" 401 unauthenticated ProfileTypes '{}'
call ProfileTypes '{}' -H "Authorization: Bearer gr4fana-t0ken"
check_eq "the Bearer token: 200" "$ST" 200
jq -e --arg c "$CPU" '[.profileTypes[].ID] | index($c) != null' "$TMP/body" >/dev/null \
  && ok "data kept across the restart" || fail "after restart" "$(head -c 200 "$TMP/body")"
pf_stop
pf_done
