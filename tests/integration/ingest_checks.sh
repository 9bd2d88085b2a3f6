#!/usr/bin/env bash
# The ingest directory as a shell user uses it: a redirect (`cat f > ingest/...`)
# stores once and counts one success in /metrics, an empty file is no failed
# upload, a loop writing one name never gets ENOENT, and the mistakes a user
# makes are refused with the reason: a CPU profile under heap/, an unknown
# type (cpuu/), a service name with a space, and the Pyroscope curl of docs/http-api.md
# without -g (curl's globbing eats the braces).
set -u
source "$(dirname "$0")/../lib.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod
M="$TMP/mnt"
(cd "$ROOT/tests/go/genprof" && go build -o "$TMP/genprof" .) && ok "build Go profile generator" \
  || { fail "build Go profile generator"; pf_done; exit 1; }
"$TMP/genprof" -out "$TMP/go" -n 2 -dur 100ms >/dev/null || fail "generate Go profiles"
CPU="$TMP/go/cpu-0000.pb.gz"

pf_start --http 127.0.0.1:0 || { fail "daemon starts"; pf_done; exit 1; }
for i in $(seq 1 100); do grep -q "listening on http" "$TMP/daemon.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
U="http://127.0.0.1:$PORT"
counter() {
  curl -s "$U/metrics" | awk -v o="$1" '$1 == "profilefs_ingested_profiles_total{source=\"ingest\",outcome=\"" o "\"}" { print $2 }' \
    | grep . || echo 0
}

# --- the redirect and the counter ----------------------------------------------
ok0=$(counter ok); bad0=$(counter invalid)
cat "$CPU" > "$M/ingest/checkout/cpu/x.pb.gz" && ok "cat > ingest/...: exit 0" || fail "cat > ingest/...: exit 0"
check_eq "redirect: outcome=ok +1" "$(counter ok)" "$((ok0 + 1))"
check_eq "redirect: outcome=invalid unchanged" "$(counter invalid)" "$bad0"
grep -q "refused" "$TMP/daemon.log" && fail "redirect: nothing refused in the log" "$(grep refused "$TMP/daemon.log")" \
  || ok "redirect: nothing refused in the log"
: > "$M/ingest/checkout/cpu/empty.pb.gz" && ok ": > file succeeds" || fail ": > file succeeds"
touch "$M/ingest/checkout/cpu/t.pb.gz" && ok "touch succeeds" || fail "touch succeeds"
check_eq "touch, : > file: outcome=invalid unchanged" "$(counter invalid)" "$bad0"
check_eq "touch, : > file: nothing stored" "$(counter ok)" "$((ok0 + 1))"
grep -q "empty.pb.gz was created and closed without data; nothing stored" "$TMP/daemon.log" \
  && ok ": > file: the log says nothing was stored" || fail ": > file: the log says nothing was stored"
grep -q "refused" "$TMP/daemon.log" && fail "touch, : > file: nothing refused in the log" \
  || ok "touch, : > file: nothing refused in the log"
# cp copies a file: an empty one is a failed upload, as any non-profile.
out=$(cp /dev/null "$M/ingest/checkout/cpu/n.pb.gz" 2>&1)
case "$out" in *"Invalid argument"*) ok "cp of an empty file: Invalid argument";;
  *) fail "cp of an empty file: Invalid argument" "$out";; esac
check_eq "cp of an empty file: outcome=invalid +1" "$(counter invalid)" "$((bad0 + 1))"

# --- a loop writing one name (the kernel keeps the name 1 s) --------------------
nf=0
for i in $(seq 1 120); do cat "$CPU" > "$M/ingest/loop/cpu/same.pb.gz" 2>/dev/null || nf=$((nf + 1)); done
check_eq "120 redirects to one name: none fails" "$nf" 0
nf=0
for i in $(seq 1 30); do cp "$CPU" "$M/ingest/loop/cpu/same2.pb.gz" 2>/dev/null || nf=$((nf + 1)); done
check_eq "30 cp to one name: none fails" "$nf" 0
check_eq "every write of the loop stored" "$(grep -c 'ingest: stored /ingest/loop/cpu/same' "$TMP/daemon.log")" 150

# --- types ---------------------------------------------------------------------
out=$(cp "$CPU" "$M/ingest/checkout/heap/" 2>&1)
case "$out" in *"Invalid argument"*) ok "cpu profile into heap/: Invalid argument";;
  *) fail "cpu profile into heap/: Invalid argument" "$out";; esac
grep -q "are those of a cpu profile, not heap" "$TMP/daemon.log" && ok "wrong type: the reason in the log" \
  || fail "wrong type: the reason in the log"
[ -e "$M/checkout/heap" ] && fail "wrong type: nothing stored as heap" || ok "wrong type: nothing stored as heap"
cp "$TMP/go/heap.pb.gz" "$M/ingest/checkout/allocs/" && ok "a heap profile fits allocs/" || fail "a heap profile fits allocs/"
out=$(mkdir -p "$M/ingest/checkout/cpuu" 2>&1)
case "$out" in *"Invalid argument"*) ok "mkdir ingest/checkout/cpuu: Invalid argument";;
  *) fail "mkdir ingest/checkout/cpuu: Invalid argument" "$out";; esac
cp "$CPU" "$M/ingest/checkout/cpuu/" 2>/dev/null && fail "cp into cpuu/ fails" || ok "cp into cpuu/ fails"
grep -q 'unknown profile type "cpuu": known types are cpu heap' "$TMP/daemon.log" \
  && ok "cpuu: the log names the known types" || fail "cpuu: the log names the known types"
[ -e "$M/checkout/cpuu" ] && fail "no type cpuu" || ok "no type cpuu"
cp "$CPU" "$M/ingest/checkout/auto/" && [ -e "$M/checkout/cpu/all/all/merged.pb.gz" ] \
  && ok "auto/ infers cpu" || fail "auto/ infers cpu"

# --- service names ---------------------------------------------------------------
out=$(mkdir -p "$M/ingest/check out/cpu" 2>&1)
case "$out" in *"Invalid argument"*) ok "mkdir 'ingest/check out': Invalid argument";;
  *) fail "mkdir 'ingest/check out': Invalid argument" "$out";; esac
cp "$CPU" "$M/ingest/check out/cpu/" 2>/dev/null && fail "cp into 'check out' fails" || ok "cp into 'check out' fails"
grep -q 'service name "check out": use 1 to 200 letters' "$TMP/daemon.log" \
  && ok "'check out': the reason in the log" || fail "'check out': the reason in the log"
ls "$M" | grep -q "check out" && fail "no service 'check out'" || ok "no service 'check out'"

# --- HTTP: the Pyroscope curl of docs/http-api.md without -g, unknown and wrong types -------------
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -XPOST "$U/ingest?name=checkout{env=prod}&format=pprof" \
  --data-binary "@$CPU")
check_eq "pyroscope curl without -g: 400" "$st" 400
grep -q "pass -g" "$TMP/body" && ok "pyroscope curl without -g: the reply says to pass -g" \
  || fail "pyroscope curl without -g: the reply says to pass -g" "$(cat "$TMP/body")"
[ -e "$M/checkoutenv=prod" ] && fail "no service checkoutenv=prod" || ok "no service checkoutenv=prod"
st=$(curl -s -g -o "$TMP/body" -w '%{http_code}' -XPOST "$U/ingest?name=checkout{env=prod}&format=pprof" \
  --data-binary "@$CPU")
check_eq "pyroscope curl -g: 200" "$st" 200
st=$(curl -s -g -o "$TMP/body" -w '%{http_code}' -XPOST "$U/ingest?name=checkout.inuse_space&format=pprof" \
  --data-binary "@$CPU")
check_eq "pyroscope app.inuse_space with a CPU profile: 400" "$st" 400
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -XPOST "$U/api/0/profiles?service=checkout&type=cpuu" \
  --data-binary "@$CPU")
check_eq "profefe type=cpuu: 400" "$st" 400
grep -q "known types are cpu heap" "$TMP/body" && ok "profefe type=cpuu: the reply names the known types" \
  || fail "profefe type=cpuu: the reply names the known types" "$(cat "$TMP/body")"
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -XPOST "$U/api/0/profiles?service=checkout&type=heap" \
  --data-binary "@$CPU")
check_eq "profefe type=heap with a CPU profile: 400" "$st" 400
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -XPOST "$U/api/0/profiles?service=check%20out&type=cpu" \
  --data-binary "@$CPU")
check_eq "profefe service with a space: 400" "$st" 400

pf_stop
check_eq "daemon exits 0" "$PF_RC" 0
pf_done
