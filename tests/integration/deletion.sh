#!/usr/bin/env bash
# Deletion as a user does it: rm of a stored profile, rm -r of a label set, a
# type and a service, with the merge's sums (go tool pprof -raw) before and
# after, over ranges the pre-aggregated windows served; rm by another user
# refused; HTTP DELETE of a profile and of a service's type (with the token);
# deletions kept across a restart.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
chmod 755 "$TMP"
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
M="$TMP/mnt"
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 6 -dur 100ms >/dev/null || fail "generate Go profiles"
echo "secret-token" > "$TMP/token"

pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" --allow-other \
  || { fail "daemon starts"; pf_done; exit 1; }
for i in $(seq 1 100); do grep -q "listening on http" "$TMP/daemon.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
U="http://127.0.0.1:$PORT"
AUTH="Authorization: Bearer secret-token"

# sums_of FILE...: the sums of those profiles merged by go tool pprof
sums_of() { go tool pprof -proto "$@" > "$TMP/want.pb.gz" 2>/dev/null; pprof_sums "$TMP/want.pb.gz"; }
# windows_done: until the compactor caught up (the windows hold every profile)
windows_done() {
  local i
  for i in $(seq 1 100); do
    curl -s -H "$AUTH" "$U/metrics" | grep -q '^profilefs_store_windows_pending 0$' && return 0
    sleep 0.1
  done
  return 1
}

for i in 0 1 2; do cp "$TMP/go/cpu-000$i.pb.gz" "$M/ingest/checkout/cpu/env=prod/"; done
for i in 3 4 5; do cp "$TMP/go/cpu-000$i.pb.gz" "$M/ingest/checkout/cpu/env=dev/"; done
cp "$TMP/go/heap.pb.gz" "$M/ingest/checkout/heap/"
cp "$TMP/go/cpu-0000.pb.gz" "$M/ingest/other/cpu/"
sleep 2.5	# the compactor batches what arrives within two seconds
windows_done && ok "the windows are built" || fail "the windows are built"
DAY=$(ls "$M/checkout/cpu/all" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' | head -1)
check_eq "all, all: the sums of the six profiles" "$(pprof_sums "$M/checkout/cpu/all/all/merged.pb.gz")" \
  "$(sums_of "$TMP"/go/cpu-000[0-5].pb.gz)"
check_eq "the day (windows): the sums of the six profiles" "$(pprof_sums "$M/checkout/cpu/all/$DAY/merged.pb.gz")" \
  "$(sums_of "$TMP"/go/cpu-000[0-5].pb.gz)"

# --- rm of one profile ---------------------------------------------------------
P="$M/checkout/cpu/env=prod/all/profiles"
mkdir -p "$TMP/copy"; cp "$P"/*.pb.gz "$TMP/copy/"
first=$(ls "$P" | head -1)
out=$(setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups rm -f "$P/$first" 2>&1)
case "$out" in *"Permission denied"*) ok "rm by nobody: Permission denied";;
  *) fail "rm by nobody: Permission denied" "$out";; esac
[ -e "$P/$first" ] && ok "rm by nobody: the profile stays" || fail "rm by nobody: the profile stays"
out=$(setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups rm -rf "$M/checkout/cpu/env=dev" 2>&1)
[ -d "$M/checkout/cpu/env=dev" ] && ok "rm -r by nobody: the label set stays" || fail "rm -r by nobody: the label set stays" "$out"
(echo x > "$M/checkout/cpu/all/all/merged.pb.gz") 2>/dev/null && fail "writing a generated file fails" \
  || ok "writing a generated file fails"
rm "$P/$first" && ok "rm of a stored profile" || fail "rm of a stored profile"
[ -e "$P/$first" ] && fail "the profile is gone from profiles/" || ok "the profile is gone from profiles/"
rm "$TMP/copy/$first"
want=$(sums_of "$TMP"/copy/*.pb.gz)
check_eq "env=prod, all: the sums of the two left" "$(pprof_sums "$M/checkout/cpu/env=prod/all/merged.pb.gz")" "$want"
check_eq "env=prod, the day (window being rebuilt): the sums of the two left" \
  "$(pprof_sums "$M/checkout/cpu/env=prod/$DAY/merged.pb.gz")" "$want"
windows_done && ok "the windows are rebuilt" || fail "the windows are rebuilt"
check_eq "env=prod, the day (rebuilt window): the sums of the two left" \
  "$(pprof_sums "$M/checkout/cpu/env=prod/$DAY/merged.pb.gz")" "$want"
check_eq "meta.json counts two profiles" "$(jq .profiles "$M/checkout/cpu/env=prod/$DAY/meta.json")" 2

# --- rm -r of a label set --------------------------------------------------------
rm -r "$M/checkout/cpu/env=dev" && ok "rm -r of a label set: exit 0" || fail "rm -r of a label set: exit 0"
ls "$M/checkout/cpu" | grep -q "env=dev" && fail "the label set is no longer listed" || ok "the label set is no longer listed"
check_eq "all, all: the sums of env=prod alone" "$(pprof_sums "$M/checkout/cpu/all/all/merged.pb.gz")" "$want"
check_eq "all, the day: the sums of env=prod alone" "$(pprof_sums "$M/checkout/cpu/all/$DAY/merged.pb.gz")" "$want"

# --- HTTP DELETE ---------------------------------------------------------------
name=$(ls "$P" | head -1)
id=$(echo "$name" | sed 's/.*-\([0-9a-f]\{16\}\)\.pb\.gz$/\1/')
cat "$P/$name" > /dev/null	# the kernel now holds its entry and pages
st=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$U/api/0/profiles/$id")
check_eq "DELETE without the token: 401" "$st" 401
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "$AUTH" -X DELETE "$U/api/0/profiles/$id")
check_eq "DELETE /api/0/profiles/<id>: 200" "$st" 200
[ -e "$P/$name" ] && fail "after DELETE the kernel no longer finds the file" \
  || ok "after DELETE the kernel no longer finds the file"
cat "$P/$name" > /dev/null 2>&1 && fail "after DELETE the file cannot be read" || ok "after DELETE the file cannot be read"
st=$(curl -s -o /dev/null -w '%{http_code}' -H "$AUTH" "$U/api/0/profiles/$id")
check_eq "GET of the deleted profile: 404" "$st" 404
st=$(curl -s -o /dev/null -w '%{http_code}' -H "$AUTH" -X DELETE "$U/api/0/profiles/$id")
check_eq "DELETE again: 404" "$st" 404
check_eq "one profile left in env=prod" "$(ls "$P" | wc -l)" 1
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "$AUTH" -X DELETE "$U/api/0/services/checkout?type=heap")
check_eq "DELETE /api/0/services/checkout?type=heap: 200" "$st" 200
jq -e '.body.profiles == 1' "$TMP/body" >/dev/null && ok "the reply counts one profile" \
  || fail "the reply counts one profile" "$(cat "$TMP/body")"
[ -e "$M/checkout/heap" ] && fail "the heap type is gone" || ok "the heap type is gone"
[ -e "$M/checkout/cpu" ] && ok "the cpu type stays" || fail "the cpu type stays"

# --- restart ---------------------------------------------------------------------
left=$(pprof_sums "$M/checkout/cpu/all/all/merged.pb.gz")
pf_stop
pf_start --http 127.0.0.1:0 --http-token-file "$TMP/token" || { fail "daemon restarts"; pf_done; exit 1; }
check_eq "after a restart: the sums of what was left" "$(pprof_sums "$M/checkout/cpu/all/all/merged.pb.gz")" "$left"
check_eq "after a restart: one profile in env=prod" "$(ls "$P" | wc -l)" 1
[ -e "$M/checkout/heap" ] || [ -e "$M/checkout/cpu/env=dev" ] && fail "after a restart: deleted stays deleted" \
  || ok "after a restart: deleted stays deleted"

# --- rm -r of a type, then of a service ------------------------------------------------
cp "$TMP/go/heap.pb.gz" "$M/ingest/checkout/heap/"
rm -r "$M/checkout/cpu" && ok "rm -r of a type: exit 0" || fail "rm -r of a type: exit 0"
check_eq "only heap is left" "$(ls "$M/checkout" | tr '\n' ' ')" "heap "
rm -r "$M/checkout" && ok "rm -r of a service: exit 0" || fail "rm -r of a service: exit 0"
ls "$M" | grep -qx checkout && fail "the service is no longer listed" || ok "the service is no longer listed"
[ -d "$M/other/cpu" ] && ok "the other service stays" || fail "the other service stays"
cp "$TMP/go/cpu-0000.pb.gz" "$M/ingest/checkout/cpu/" && [ -e "$M/checkout/cpu/all/all/merged.pb.gz" ] \
  && check_eq "a new profile under the deleted name: its own sums" "$(pprof_sums "$M/checkout/cpu/all/all/merged.pb.gz")" \
  "$(sums_of "$TMP/go/cpu-0000.pb.gz")" || fail "a new profile under the deleted name"
rm "$M/README.txt" 2>/dev/null && fail "rm README.txt fails" || ok "rm README.txt fails"

pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
pf_done
