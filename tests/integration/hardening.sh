#!/usr/bin/env bash
# Hardening (issue 15): each attack of the security and reliability review,
# reproduced as the review ran it -- as the unprivileged user nobody where it
# was a local user, over loopback HTTP otherwise -- against a daemon with a
# stated memory budget, asserting the bounded outcome: the daemon's peak RSS
# (printed) stays under the budget plus what the budget does not count, it
# keeps answering /healthz, and every profile it acknowledged is still there
# after a restart.
#
#   memory    gzip bombs over HTTP, empty-message uploads, a pwrite at
#             256 MiB - 1 and six held-open files in ingest/
#   render    deep recursive stacks: flamegraph.svg and folded.txt bounded
#   readers   three readers of merged.pb.gz while profiles arrive
#   slowloris 300 sockets sending headers a byte a second
#   ingest    two cp to one name, two interleaved writers of one name,
#             empty files and touch
#   ids       1,000 repeated ids in GET /api/0/profiles/<id>+...
#   hygiene   a newline in an ingest file name, U+FFFF in a function name,
#             invalid UTF-8 in a service name
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
export PPROF_TMPDIR="$TMP/pprof"
M="$TMP/mnt"
TOOLS="$(dirname "$0")/hardening_tools.py"
LIMIT_MB=256
# What the budget does not count: RocksDB's caches and memtables, libraries,
# thread stacks, the merge's index vectors. Measured at about 60 MiB idle.
SLACK_MB=256
# A sanitized build (CI) keeps freed memory in ASan's quarantine and adds
# shadow memory and redzones: a smaller quarantine, and room for the rest.
# ThreadSanitizer's shadow memory is several times what the program uses:
# there the peak is printed, not checked.
RSS_CHECK=1
if grep -q __asan_init "$BIN" 2>/dev/null; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
  SLACK_MB=512
elif grep -q __tsan_init "$BIN" 2>/dev/null; then
  RSS_CHECK=0
fi
# nobody runs the tools too: the system's python, not a per-user shim.
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
py() { "$PY" "$TOOLS" "$@"; }

# --group-write: nogroup (nobody's group) may write ingest/, so a local
# user can make the review's attacks as nobody (the mount is private otherwise).
pf_start --http 127.0.0.1:0 --memory-limit "${LIMIT_MB}M" --group nogroup --group-write -v \
  || { fail "daemon starts with --memory-limit"; pf_done; exit 1; }
ok "daemon starts with --memory-limit ${LIMIT_MB}M"
for i in $(seq 1 100); do
  PORT=$(sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$TMP/daemon.log" | tail -1)
  [ -n "$PORT" ] && break; sleep 0.1
done
U="http://127.0.0.1:$PORT"

hwm_mb() { awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$PF_PID/status"; }
healthy() { [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$U/healthz")" == 200 ]; }
# after NAME: the daemon is alive, answers /healthz, peak RSS under the bound
after() {
  local h; h=$(hwm_mb)
  echo "# after $1: peak RSS ${h} MiB (budget ${LIMIT_MB} MiB + ${SLACK_MB} MiB not budgeted)"
  if kill -0 "$PF_PID" 2>/dev/null && healthy; then ok "$1: daemon alive, /healthz 200"
  else fail "$1: daemon alive, /healthz 200"; fi
  [ "$RSS_CHECK" == 1 ] || return 0
  [ "${h:-99999}" -lt $((LIMIT_MB + SLACK_MB)) ] && ok "$1: peak RSS ${h} MiB < $((LIMIT_MB + SLACK_MB)) MiB" \
    || fail "$1: peak RSS ${h} MiB >= $((LIMIT_MB + SLACK_MB)) MiB"
}
# acked SERVICE: count one acknowledged profile of SERVICE (checked after a restart)
declare -A ACKED
acked() { ACKED[$1]=$(( ${ACKED[$1]:-0} + 1 )); }

# The review was a local user: nobody, if the mount lets nobody write ingest/
# (issue 14 may make the mount private; then the same attacks run as this user).
AS=()
chmod 755 "$TMP"; mkdir -p "$TMP/in"; chmod 755 "$TMP/in"
if id nobody >/dev/null 2>&1 && setpriv --reuid=nobody --regid=nogroup --clear-groups \
    sh -c "touch '$M/ingest/probe/cpu/probe' 2>/dev/null"; then
  AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  echo "# local attacks run as nobody"
else
  echo "# nobody cannot write the mount: local attacks run as $(id -un)"
fi
R="$REAL/parca"
MANY=("$R"/many-*.pb.gz)
curl -s "$U/metrics" | grep -q 'profilefs_memory_budget_bytes{kind="limit"} 268435456' \
  && ok "/metrics shows the memory budget" || fail "/metrics shows the memory budget"

# --- memory: one budget for everything that decodes or buffers ---------------
head -c $((300 << 20)) /dev/zero | gzip -9 > "$TMP/in/bomb.gz"
echo "# gzip bomb: $(stat -c %s "$TMP/in/bomb.gz") bytes, 300 MiB inflated"
for i in $(seq 1 8); do
  curl -s -o /dev/null -w '%{http_code}\n' -XPOST "$U/api/0/profiles?service=bomb&type=cpu" \
    --data-binary "@$TMP/in/bomb.gz" > "$TMP/bomb.$i" &
done
wait $(jobs -p | grep -v "^$PF_PID$") 2>/dev/null
codes=$(cat "$TMP"/bomb.* | sort | uniq -c | tr -s ' ' | tr '\n' ',')
echo "# 8 concurrent gzip bombs: status counts $codes"
[ -z "$(cat "$TMP"/bomb.* | grep -v -e '^413$' -e '^503$')" ] && ok "gzip bombs: each refused with 413 or 503" \
  || fail "gzip bombs: each refused with 413 or 503" "$codes"
py emptymsgs "$TMP/in/empty-msgs.pb" 126000
st=$(curl -s -o "$TMP/body" -w '%{http_code}' -XPOST "$U/api/0/profiles?service=emptymsgs&type=cpu" \
  --data-binary "@$TMP/in/empty-msgs.pb")
echo "# 253 KB of empty messages: $st $(head -c 200 "$TMP/body")"
case "$st" in 200) acked emptymsgs ;; 400|413|503) ;; *) fail "empty messages: a status, not $st" ;; esac
out=$("${AS[@]}" "$PY" "$TOOLS" pwrite "$M/ingest/hole/cpu/hole.pb" $(((256 << 20) - 1)))
echo "# pwrite at 256 MiB - 1: $(echo $out)"
echo "$out" | grep -q -e "pwrite EAGAIN" -e "pwrite EFBIG" && ok "pwrite at 256 MiB - 1 refused (EAGAIN or EFBIG)" \
  || fail "pwrite at 256 MiB - 1 refused" "$out"
grep -q "memory budget" "$TMP/daemon.log" && ok "refusals name the memory budget in the log" \
  || fail "refusals name the memory budget in the log"
coproc HOLD { "${AS[@]}" "$PY" "$TOOLS" holdopen "$M/ingest/held/cpu" 6 60; }
line=""
[ -n "${HOLD[0]:-}" ] && read -r -t 120 line <&"${HOLD[0]}"
echo "# six held-open ingest files of 60 MiB: $line"
echo "$line" | grep -q "refused EAGAIN" && ok "held-open ingest files: writes past the budget get EAGAIN" \
  || fail "held-open ingest files: writes past the budget get EAGAIN" "$line"
after "held-open ingest files (still open)"
if [ -n "${HOLD_PID:-}" ] && [ -n "${HOLD[1]:-}" ]; then
  exec {HOLD[1]}>&-
  read -r -t 120 line <&"${HOLD[0]}"; echo "# $line"
  wait "$HOLD_PID" 2>/dev/null
fi
after "memory attacks"

# --- render: tiny profiles with deep stacks ----------------------------------
py deep "$TMP/in/deep.pb.gz" 1000000 1
py deep "$TMP/in/wide.pb.gz" 4000 2000 1
cp "$TMP/in/deep.pb.gz" "$M/ingest/deep/cpu/" && acked deep || fail "cp the deep profile"
cp "$TMP/in/wide.pb.gz" "$M/ingest/deepwide/cpu/" && acked deepwide || fail "cp the deep and wide profile"
for s in deep deepwide; do
  d="$M/$s/cpu/all/all"
  sz=$(stat -c %s "$d/flamegraph.svg" 2>/dev/null)
  if [ -n "$sz" ] && cat "$d/flamegraph.svg" > "$TMP/$s.svg" && [ "$(stat -c %s "$TMP/$s.svg")" == "$sz" ] \
      && [ "$sz" -lt $((16 << 20)) ]; then ok "$s: flamegraph.svg bounded ($sz bytes)"
  else fail "$s: flamegraph.svg bounded" "size ${sz:-none}"; fi
  xmllint --noout "$TMP/$s.svg" 2>/dev/null && ok "$s: flamegraph.svg is well-formed XML" \
    || fail "$s: flamegraph.svg is well-formed XML"
  grep -q -e "stacks cut" -e "left out" "$TMP/$s.svg" && ok "$s: the graph says what it left out" \
    || fail "$s: the graph says what it left out"
  if cat "$d/folded.txt" > "$TMP/$s.folded" 2>"$TMP/err"; then
    echo "# $s: folded.txt $(stat -c %s "$TMP/$s.folded") bytes"
    [ "$(stat -c %s "$TMP/$s.folded")" -le $((64 << 20)) ] && ok "$s: folded.txt bounded" \
      || fail "$s: folded.txt bounded"
  else
    echo "# $s: folded.txt: $(cat "$TMP/err")"
    grep -q "File too large" "$TMP/err" && grep -q "folded.txt: more than" "$TMP/daemon.log" \
      && ok "$s: folded.txt refused with EFBIG, the reason in the log" \
      || fail "$s: folded.txt bounded or EFBIG with a reason" "$(cat "$TMP/err")"
  fi
done
go tool pprof -top "$M/deep/cpu/all/all/merged.pb.gz" 2>/dev/null | grep -q "main.leaf" \
  && ok "deep: merged.pb.gz still has every frame for go tool pprof" || fail "deep: merged.pb.gz for go tool pprof"
after "deep stacks"

# --- readers: one whole version per open while profiles arrive ---------------
cp "${MANY[0]}" "$M/ingest/readers/heap/" && acked readers
(for i in $(seq 1 30); do for f in "${MANY[@]}"; do
   if cp "$f" "$M/ingest/readers/heap/"; then echo ack; else echo "cp failed"; fi
 done; done > "$TMP/readers.acks") &
W=$!
for k in 1 2 3; do py readers "$M/readers/heap/all/all/merged.pb.gz" 300 > "$TMP/readers.$k" & done
wait $W
wait $(jobs -p | grep -v "^$PF_PID$") 2>/dev/null
for k in 1 2 3; do echo "# reader $k: $(cat "$TMP/readers.$k")"; done
n=$(grep -c ack "$TMP/readers.acks"); for i in $(seq 1 "$n"); do acked readers; done
[ "$(cat "$TMP"/readers.[123] | grep -c ' bad 0 ')" == 3 ] \
  && ok "3 readers x 300 opens during ingest: every read valid gzip of fstat's size" \
  || fail "3 readers during ingest: valid gzip of fstat's size" "$(cat "$TMP"/readers.[123] | tr '\n' ' ')"
go tool pprof -top "$M/readers/heap/all/all/merged.pb.gz" >/dev/null 2>&1 \
  && ok "go tool pprof reads merged.pb.gz on the mount" || fail "go tool pprof reads merged.pb.gz on the mount"
after "concurrent readers"

# --- slowloris: header deadline and per-address limit ------------------------
"$PY" "$TOOLS" slowloris 127.0.0.1 "$PORT" 300 30 > "$TMP/slowloris.out" & SLOW=$!
for i in $(seq 1 100); do [ -s "$TMP/slowloris.out" ] && break; sleep 0.1; done
echo "# $(head -1 "$TMP/slowloris.out")"
st=$(curl -s -m 10 -o /dev/null -w '%{http_code}' --interface 127.0.0.2 "http://127.0.0.1:$PORT/healthz")
check_eq "slowloris: /healthz from another address while 300 sockets dribble" "$st" 200
t0=$(date +%s); st=000
while [ "$st" != 200 ] && [ $(( $(date +%s) - t0 )) -lt 40 ]; do
  st=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$U/healthz"); [ "$st" == 200 ] || sleep 1
done
echo "# /healthz from the attacker's own address answered after $(( $(date +%s) - t0 )) s"
check_eq "slowloris: /healthz from the attacker's address too" "$st" 200
wait "$SLOW"
line=$(tail -1 "$TMP/slowloris.out"); echo "# $line"
echo "$line" | grep -q "still open after 30 s: 0;" && ok "slowloris: the daemon closed every dribbling socket" \
  || fail "slowloris: the daemon closed every dribbling socket" "$line"
after "slowloris"

# --- ingest: one object per open ---------------------------------------------
A="${MANY[0]}"; B="$REAL/parca/fgprof.pb.gz"	# different sums, so a stored profile tells whose it is
# cp creates with O_EXCL: when both see the name free, the kernel lets one
# create it and tells the other EEXIST before it writes a byte, as on any
# file system. Either way each cp's outcome must be its own: 0 and its bytes
# stored, or an error and nothing of it stored.
# C, not the heap snapshot A: a snapshot of totals pushed again is stored as
# its increase (none), which would not tell whose it is.
C="$REAL/parca/normal-cpu.stripped.pprof"
good=0; other=0
for i in $(seq 1 20); do
  "${AS[@]}" cp "$C" "$M/ingest/twocp/other/same.pb.gz" 2>>"$TMP/twocp.err" & p1=$!
  "${AS[@]}" cp "$B" "$M/ingest/twocp/other/same.pb.gz" 2>>"$TMP/twocp.err" & p2=$!
  for p in $p1 $p2; do if wait $p; then good=$((good + 1)); acked twocp; fi; done
done
other=$(grep -v -c "File exists" "$TMP/twocp.err")
echo "# two concurrent cp to one name, 20 rounds: $good succeeded, $((40 - good)) told EEXIST"
check_eq "two concurrent cp: every failure is EEXIST before writing" "$other" 0
[ "$good" -ge 20 ] && ok "two concurrent cp: at least one cp of each round succeeds" \
  || fail "two concurrent cp: at least one cp of each round succeeds" "$good"
check_eq "two concurrent cp: exactly the successful copies stored" \
  "$(ls "$M/twocp/other/all/all/profiles" | wc -l)" "$good"
# The store keeps profiles in its own encoding: compare what go tool pprof reads.
SUMS_A=$(pprof_sums "$A"); SUMS_B=$(pprof_sums "$B"); SUMS_C=$(pprof_sums "$C")
one_of_cb() { local x; x=$(pprof_sums "$1"); [ -n "$x" ] && { [ "$x" == "$SUMS_C" ] || [ "$x" == "$SUMS_B" ]; }; }
k=0
for f in "$M"/twocp/other/all/all/profiles/*; do one_of_cb "$f" || k=$((k + 1)); done
check_eq "two concurrent cp: each stored profile is one writer's" "$k" 0
out=$("${AS[@]}" "$PY" "$TOOLS" chunked "$A" "$B" "$M/ingest/chunked/other/same.pb.gz")
echo "# $out"
check_eq "two interleaved writers of one name: both closes succeed" "$out" "chunked writers: ok ok"
acked chunked; acked chunked
ls "$M/chunked/other/all/all/profiles/" > "$TMP/chunked.ls"
k=0; seen=""
for f in $(cat "$TMP/chunked.ls"); do
  x=$(pprof_sums "$M/chunked/other/all/all/profiles/$f")
  if [ "$x" == "$SUMS_A" ]; then seen="${seen}A"; elif [ "$x" == "$SUMS_B" ]; then seen="${seen}B"; else k=$((k + 1)); fi
done
[ "$(wc -l < "$TMP/chunked.ls")" == 2 ] && [ $k == 0 ] && [ "$(echo "$seen" | grep -o . | sort | tr -d '\n')" == AB ] \
  && ok "interleaved writers: each stored its own profile" || fail "interleaved writers: each stored its own profile" "$seen, $k other"
: > "$TMP/in/empty"
"${AS[@]}" cp "$TMP/in/empty" "$M/ingest/empty/cpu/empty.pb" 2>"$TMP/err"; rc=$?
[ $rc != 0 ] && grep -q "Invalid argument" "$TMP/err" && grep -q "refused /ingest/empty/cpu/empty.pb: empty" "$TMP/daemon.log" \
  && ok "cp of an empty file fails with EINVAL, the reason in the log" \
  || fail "cp of an empty file fails with EINVAL" "rc $rc: $(cat "$TMP/err")"
"${AS[@]}" touch "$M/ingest/empty/cpu/touched.pb"; check_eq "touch in ingest/ succeeds" "$?" 0
grep -q "touched.pb was created and closed without data" "$TMP/daemon.log" && [ ! -e "$M/empty" ] \
  && ok "a touched file is ignored, said in the log" || fail "a touched file is ignored"
grep -q "touch" "$M/README.txt" && ok "README.txt says what happens to touched and empty files" \
  || fail "README.txt says what happens to touched and empty files"
after "ingest"

# --- ids: deduplicated and budgeted per request ------------------------------
id=$(curl -s -XPOST "$U/api/0/profiles?service=ids&type=heap" --data-binary "@$A" | jq -r .body.id)
id2=$(curl -s -XPOST "$U/api/0/profiles?service=ids&type=heap" --data-binary "@${MANY[1]}" | jq -r .body.id)
[ -n "$id" ] && [ "$id" != null ] && acked ids && acked ids
list=$(printf "$id+%.0s" $(seq 1 1000)); list=${list%+}
t0=$(date +%s%N)
st=$(curl -s -o "$TMP/ids.pb.gz" -w '%{http_code}' "$U/api/0/profiles/$list")
echo "# 1,000 repeated ids (${#list}-byte path): $st in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
curl -s -o "$TMP/one.pb.gz" "$U/api/0/profiles/$id"
check_eq "1,000 repeated ids: 200" "$st" 200
cmp -s "$TMP/ids.pb.gz" "$TMP/one.pb.gz" && ok "1,000 repeated ids: the one profile, once" \
  || fail "1,000 repeated ids: the one profile, once"
list=$(for i in $(seq 1 500); do printf "%s+%s+" "$id" "$id2"; done); list=${list%+}
curl -s -o "$TMP/ids2.pb.gz" "$U/api/0/profiles/$list"
curl -s -o "$TMP/two.pb.gz" "$U/api/0/profiles/$id+$id2"
sums2=$(pprof_sums "$TMP/two.pb.gz")
[ -n "${sums2// /}" ] && check_eq "500 x (id1+id2): the merge of id1+id2, each once" \
  "$(pprof_sums "$TMP/ids2.pb.gz")" "$sums2" || fail "id1+id2 merge is a profile"
after "repeated ids"

# --- hygiene: names from outside in logs, XML and JSON -----------------------
evil="$(printf 'evil\n2026-01-01T00:00:00Z profilefs: forged line')"
cp "$A" "$M/ingest/hygiene/heap/$evil" && acked hygiene
grep -q "^2026-01-01T00:00:00Z profilefs: forged line" "$TMP/daemon.log" \
  && fail "a newline in an ingest file name cannot forge a log line" \
  || ok "a newline in an ingest file name cannot forge a log line"
grep -q 'evil\\x0a2026' "$TMP/daemon.log" && ok "the newline is logged as \\x0a" || fail "the newline is logged as \\x0a"
py oddname "$TMP/in/ffff.pb.gz" "6d61696e2eefbfbf" >/dev/null
cp "$TMP/in/ffff.pb.gz" "$M/ingest/ffff/cpu/" && acked ffff
xmllint --noout "$M/ffff/cpu/all/all/flamegraph.svg" && ok "U+FFFF in a function name: flamegraph.svg well-formed" \
  || fail "U+FFFF in a function name: flamegraph.svg well-formed"
st=$(curl -s -o /dev/null -w '%{http_code}' -XPOST "$U/api/0/profiles?service=bad%FF%FEsvc&type=cpu" --data-binary "@$A")
[ "$st" == 200 ] && acked "$(printf 'bad\xff\xfesvc')"
curl -s "$U/api/0/services" | jq -e . >/dev/null && ok "invalid UTF-8 in a service name: /api/0/services is valid JSON ($st)" \
  || fail "invalid UTF-8 in a service name: /api/0/services is valid JSON"
after "hygiene"

# --- nothing acknowledged is lost --------------------------------------------
pf_stop
check_eq "daemon exits 0 on SIGTERM after the attacks" "$PF_RC" 0
pf_start --memory-limit "${LIMIT_MB}M" || { fail "daemon restarts"; pf_done; exit 1; }
lost=""
for s in "${!ACKED[@]}"; do
  case "$s" in *$'\xff'*) continue ;; esac	# its directory name is escaped
  n=$(for d in "$M/$s"/*/all/all/profiles; do ls "$d"; done 2>/dev/null | wc -l)
  [ "$n" == "${ACKED[$s]}" ] || lost="$lost $s:$n/${ACKED[$s]}"
done
[ -z "$lost" ] && ok "after a restart every acknowledged profile is there (${#ACKED[@]} services)" \
  || fail "every acknowledged profile is there" "$lost"
pf_done
