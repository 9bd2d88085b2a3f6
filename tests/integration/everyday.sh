#!/usr/bin/env bash
# Everyday use, done as a new user does it: go tool pprof, scp, rsync and make
# on the tree's names unquoted and relative (no ':' in any name; the colon
# forms and a trailing Z still work on lookup); a bad command line refused
# before anything is touched; a malformed label directory under ingest/
# explained; /metrics types and operation labels; the eBPF summary line and
# libbpf's messages; last-1h's length; timeline.csv's header; cp -r of
# profiles/ by another user, then rm -r; the profefe GET API with now-1h.
set -u
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../pprof-sums.sh"
pf_setup
export GOCACHE="${GOCACHE:-$TMP/gocache}" GOFLAGS=-mod=mod PPROF_BINARY_PATH=/nonexistent
M="$TMP/mnt"
chmod 711 "$TMP"	# nobody reaches the mount and its own directory below
listen_port() { sed -n 's/.*http: listening on http:\/\/.*:\([0-9]*\) (.*/\1/p' "$1" | tail -1; }
# as_nobody CMD...: run CMD as nobody, without capabilities
as_nobody() {
  setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups --inh-caps=-all \
    --bounding-set=-all "$@"
}

# --- a bad command line: exit 2 before the store, the mount point or retention -
out=$("$BIN" serve --data "$TMP/never" --http localhost "$TMP/never-mnt" 2>&1); rc=$?
check_eq "bad --http exits 2" "$rc" 2
echo "$out" | grep -q "error: --http localhost: no port (write HOST:PORT" && ! echo "$out" | grep -q warning \
  && ok "bad --http: says what is wrong, as an error" || fail "bad --http: says what is wrong, as an error" "$out"
[ ! -e "$TMP/never" ] && [ ! -e "$TMP/never-mnt" ] && ok "bad --http: no data directory or mount point made" \
  || fail "bad --http: no data directory or mount point made"
for bad in "--http 127.0.0.1:99999" "--http [::1]" "--retention soon" "--max-disk lots" "--ebpf=1000" \
    "--scrape $TMP/no-such-targets.json"; do
  # shellcheck disable=SC2086
  out=$("$BIN" serve --data "$TMP/never" $bad "$TMP/never-mnt" 2>&1); rc=$?
  [ "$rc" -eq 2 ] && [ ! -e "$TMP/never" ] && [ ! -e "$TMP/never-mnt" ] \
    && ok "bad value exits 2 untouched: $bad" || fail "bad value exits 2 untouched: $bad" "rc=$rc $out"
done
: > "$TMP/afile"
out=$("$BIN" serve --data "$TMP/never" "$TMP/afile" 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "$out" | grep -q "error: mount point $TMP/afile is not a directory" \
  && ! echo "$out" | grep -q warning && [ ! -e "$TMP/never" ] \
  && ok "mount point not a directory: an error, exit 2" || fail "mount point not a directory: an error, exit 2" "rc=$rc $out"

# --- the data a user has -------------------------------------------------------
pf_start --http 127.0.0.1:0 --allow-other || { fail "daemon starts"; pf_done; exit 1; }
PORT=$(listen_port "$TMP/daemon.log")
U="http://127.0.0.1:$PORT"
# Heap profiles of one process 3 s apart: 16:07:52, :55, :58 and 16:08:01 UTC.
for f in "$REAL"/parca/many-*.pb.gz; do cp "$f" "$M/ingest/checkout/heap/" || fail "cp $f"; done
# One more from a scraped-looking instance whose label value holds a ':'.
cp "$REAL/parca/many-1644509281339135000.pb.gz" "$M/ingest/checkout/heap/instance=10.0.0.1:6060/" \
  || fail "cp into a label set with ':'"
sleep 2

# --- item: no name the tree lists has a ':' -----------------------------------
H="$M/checkout/heap"
{ ls "$M" "$M/checkout" "$H" "$H/all" "$H/all/all" "$H/all/all/profiles" "$H/all/all/vs" \
    "$H/all/2022-02-10T16" "$H/all/2022-02-10T16/vs" "$H/all/2022-02-10T16/profiles"; } > "$TMP/names" 2>&1
grep -v ':$' "$TMP/names" | grep -q ':' && fail "no name listed has a ':'" "$(grep -v ':$' "$TMP/names" | grep ':' | head -3)" \
  || ok "no name listed has a ':'"
ls "$H" | grep -qx 'instance=10.0.0.1%3A6060' && ok "a ':' in a label value is listed as %3A" \
  || fail "a ':' in a label value is listed as %3A" "$(ls "$H" | tr '\n' ' ')"
ls "$H/all/all/profiles" | grep -qx '2022-02-10T160752\.337470000Z-[0-9a-f]\{16\}\.pb\.gz' \
  && ok "profiles/ names in ISO 8601 basic form" || fail "profiles/ names in ISO 8601 basic form" "$(ls "$H/all/all/profiles" | head -2)"
# What go tool pprof sums from the raw profiles, to compare with (the alloc_*
# counters: the inuse_* gauges are averaged over a range). The snapshots of
# totals count their increase within the series (increase()): the minute
# holds the series' first one, counted whole, so it sums to :58's; :55 and
# :58 hold what :58 added to :52 (go tool pprof -base).
alloc_sums() { pprof_sums "$@" | tr ' ' '\n' | grep '^alloc_' | tr '\n' ' '; }
want_min=$(alloc_sums "$REAL/parca/many-1644509278338696000.pb.gz")
want_ft=$(go tool pprof -proto -base "$REAL/parca/many-1644509272337470000.pb.gz" \
  "$REAL/parca/many-1644509278338696000.pb.gz" 2>/dev/null > "$TMP/want-ft.pb.gz"; alloc_sums "$TMP/want-ft.pb.gz")

# go tool pprof, unquoted and relative, from the service's all/ as the user did.
cd "$H/all" || fail "cd all/"
out=$(go tool pprof -top 2022-02-10T1607/merged.pb.gz 2>&1); rc=$?
[ "$rc" -eq 0 ] && ! echo "$out" | grep -q "Fetching profile over HTTP" && echo "$out" | grep -q "flat%" \
  && ok "go tool pprof -top <minute>/merged.pb.gz, relative" || fail "go tool pprof -top <minute>/merged.pb.gz, relative" "$(echo "$out" | head -3)"
check_eq "the minute's merge is the minute's profiles" "$(alloc_sums 2022-02-10T1607/merged.pb.gz)" "$want_min"
out=$(go tool pprof -top 2022-02-10T160754..2022-02-10T160759/merged.pb.gz 2>&1); rc=$?
[ "$rc" -eq 0 ] && ! echo "$out" | grep -q "Fetching profile over HTTP" && echo "$out" | grep -q "flat%" \
  && ok "go tool pprof -top FROM..TO/merged.pb.gz, relative" || fail "go tool pprof -top FROM..TO/merged.pb.gz, relative" "$(echo "$out" | head -3)"
check_eq "FROM..TO holds :55 and :58" "$(alloc_sums 2022-02-10T160754..2022-02-10T160759/merged.pb.gz)" "$want_ft"
cd "$H" || fail "cd heap/"
out=$(go tool pprof -top instance=10.0.0.1%3A6060/all/merged.pb.gz 2>&1); rc=$?
[ "$rc" -eq 0 ] && echo "$out" | grep -q "flat%" && ok "go tool pprof -top <label set with %3A>/..., relative" \
  || fail "go tool pprof -top <label set with %3A>/..., relative" "$(echo "$out" | head -3)"
cd "$H/all/all/profiles" || fail "cd profiles/"
p1=$(ls | head -1)
out=$(go tool pprof -top "$p1" 2>&1); rc=$?
[ "$rc" -eq 0 ] && echo "$out" | grep -q "flat%" && ok "go tool pprof -top <profiles/ name>, relative" \
  || fail "go tool pprof -top <profiles/ name>, relative" "$(echo "$out" | head -3)"

# scp (both ends local: scp reads a ':' in a name as a host) and rsync.
mkdir -p "$TMP/scp" "$TMP/rsync"
scp -q "$p1" "$TMP/scp/" && cmp -s "$p1" "$TMP/scp/$p1" && ok "scp of a profiles/ file, relative" \
  || fail "scp of a profiles/ file, relative"
rsync "$p1" "$TMP/rsync/" && cmp -s "$p1" "$TMP/rsync/$p1" && ok "rsync of a profiles/ file, relative" \
  || fail "rsync of a profiles/ file, relative"
cd "$H/all" || fail "cd all/"
rsync -a 2022-02-10T1607 "$TMP/rsync/" 2>"$TMP/rsync.err" \
  && cmp -s 2022-02-10T1607/merged.pb.gz "$TMP/rsync/2022-02-10T1607/merged.pb.gz" \
  && [ "$(ls "$TMP/rsync/2022-02-10T1607/profiles" | wc -l)" -eq 3 ] \
  && ok "rsync -a of a minute's range directory, relative" || fail "rsync -a of a minute's range directory, relative" "$(head -3 "$TMP/rsync.err")"
rsync -a 2022-02-10T160754..2022-02-10T160759/ "$TMP/rsync/ft/" 2>"$TMP/rsync.err" \
  && cmp -s 2022-02-10T160754..2022-02-10T160759/merged.pb.gz "$TMP/rsync/ft/merged.pb.gz" \
  && ok "rsync -a of a FROM..TO range directory" || fail "rsync -a of a FROM..TO range directory" "$(head -3 "$TMP/rsync.err")"
cd "$TMP" || exit 1

# make, with tree paths as prerequisites (make reads ':' as a rule).
mkdir -p "$TMP/mk"
printf 'top.txt: %s\n\tgo tool pprof -top $< > $@\nprof.pb.gz: %s\n\tcp $< $@\n' \
  "$H/all/2022-02-10T1607/merged.pb.gz" "$H/all/all/profiles/$p1" > "$TMP/mk/Makefile"
make -s -C "$TMP/mk" top.txt prof.pb.gz >"$TMP/make.out" 2>&1 && grep -q "flat%" "$TMP/mk/top.txt" \
  && cmp -s "$TMP/mk/prof.pb.gz" "$H/all/all/profiles/$p1" \
  && ok "make with tree paths as prerequisites" || fail "make with tree paths as prerequisites" "$(head -3 "$TMP/make.out")"

# Lookups keep the colon forms and take a trailing Z.
bad=""
for r in 2022-02-10T16:07 2022-02-10T16:07Z 2022-02-10T1607Z; do
  cmp -s "$H/all/$r/merged.pb.gz" "$H/all/2022-02-10T1607/merged.pb.gz" || bad="$bad $r"
done
for r in 2022-02-10T16:07:54..2022-02-10T16:07:59 2022-02-10T160754Z..2022-02-10T160759Z \
    2022-02-10T16:07:54Z..2022-02-10T160759; do
  [ "$(alloc_sums "$H/all/$r/merged.pb.gz")" == "$want_ft" ] || bad="$bad $r"
done
[ -d "$H/all/2022-02-10T16Z" ] && [ -d "$H/all/2022-02-10Z" ] || bad="$bad hour/day+Z"
check_eq "colon forms and a trailing Z work on lookup" "$bad" ""
old=$(echo "$p1" | sed 's/^\(.\{13\}\)\(..\)\(..\)/\1:\2:\3/')
cmp -s "$H/all/all/profiles/$old" "$H/all/all/profiles/$p1" && ok "a profile's colon-form name works on lookup ($old)" \
  || fail "a profile's colon-form name works on lookup" "$old"
grep -q '"name": "2022-02-10T1607"' "$H/all/2022-02-10T16:07Z/meta.json" \
  && ok "meta.json names a colon-form range as the tree lists it" || fail "meta.json names a colon-form range as the tree lists it"
ls "$H/instance=10.0.0.1:6060/all/profiles" >/dev/null 2>&1 && ok "a label value's ':' works unescaped on lookup" \
  || fail "a label value's ':' works unescaped on lookup"
check_eq "vs/ of a colon-form range lists its bases without ':'" \
  "$(ls "$H/instance=10.0.0.1:6060/2022-02-10T16:08/vs" | tr '\n' ' ')" "all all@2022-02-10T1608 "

# --- item: a malformed label directory under ingest/ says why -----------------
S="$REAL/google-pprof/sample.cpu"
out=$(cp "$S" "$M/ingest/checkout/cpu/a=%zz/x.pb.gz" 2>&1); rc=$?
[ "$rc" -ne 0 ] && echo "$out" | grep -q "Invalid argument" && ok "bad %XX label directory: Invalid argument" \
  || fail "bad %XX label directory: Invalid argument" "$out"
grep -q "ingest: /ingest/checkout/cpu/a=%zz.*not a label set: bad %XX escape" "$TMP/daemon.log" \
  && ok "bad %XX label directory: the log says why" || fail "bad %XX label directory: the log says why"
out=$(cp "$S" "$M/ingest/checkout/cpu/env=a,env=b/x.pb.gz" 2>&1); rc=$?
[ "$rc" -ne 0 ] && echo "$out" | grep -q "Invalid argument" && grep -q 'label key "env" given twice' "$TMP/daemon.log" \
  && ok "a key twice: Invalid argument, and why" || fail "a key twice: Invalid argument, and why" "$out"
out=$(mkdir -p "$M/ingest/checkout/cpu/notalabel" 2>&1); rc=$?
[ "$rc" -ne 0 ] && echo "$out" | grep -q "Invalid argument" \
  && grep -q "ingest: cannot make directory /ingest/checkout/cpu/notalabel" "$TMP/daemon.log" \
  && ok "mkdir of a label directory without '=': Invalid argument, and why" \
  || fail "mkdir of a label directory without '=': Invalid argument, and why" "$out"
mkdir -p "$M/ingest/checkout/cpu/env=ok" && ok "mkdir -p of a good label directory" || fail "mkdir -p of a good label directory"

# --- item: last-1h, timeline.csv, cp -r by another user, profefe GET ----------
now=$(date -u +%Y-%m-%dT%H:%M:%S)
code=$(curl -s -o "$TMP/post" -w '%{http_code}' -XPOST "$U/api/0/profiles?service=recent&type=cpu&created_at=$now" \
  --data-binary "@$S")
check_eq "a recent profile pushed" "$code" 200
sleep 2
python3 - "$M/recent/cpu/all/last-1h/meta.json" > "$TMP/span" 2>&1 <<'EOF'
import json, sys, calendar, time
m = json.load(open(sys.argv[1]))
def ns(s):
    whole, frac = s.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 10**9 + int(frac.ljust(9, "0"))
print(ns(m["range"]["to"]) - ns(m["range"]["from"]))
EOF
check_eq "last-1h spans exactly an hour (meta.json)" "$(cat "$TMP/span")" 3600000000000
check_eq "timeline.csv's header names the unit" "$(head -1 "$M/recent/cpu/all/last-1h/timeline.csv")" "time,cpu_nanoseconds,cpu_cores"
check_eq "a heap timeline.csv's header" "$(head -1 "$H/all/all/timeline.csv")" "time,inuse_space_bytes"
mkdir -p "$TMP/nb" && chmod 777 "$TMP/nb"
as_nobody sh -c "umask 022; cp -r '$H/all/all/profiles' '$TMP/nb/'" 2>"$TMP/nb.err" \
  && ok "another user copies profiles/ with cp -r" || fail "another user copies profiles/ with cp -r" "$(head -2 "$TMP/nb.err")"
check_eq "the copy's directory is the copier's to change" "$(stat -c %a "$TMP/nb/profiles")" 755
as_nobody rm -r "$TMP/nb/profiles" </dev/null 2>"$TMP/nb.err" && [ ! -e "$TMP/nb/profiles" ] \
  && ok "and removes the copy with rm -r" || fail "and removes the copy with rm -r" "$(head -2 "$TMP/nb.err")"
out=$(sh -c ': > "$1"' sh "$H/all/all/merged.pb.gz" 2>&1); rc=$?
[ "$rc" -ne 0 ] && echo "$out" | grep -q "Read-only file system" && ok "the tree stays read-only (EROFS)" \
  || fail "the tree stays read-only (EROFS)" "$out"
code=$(curl -s -o "$TMP/list" -w '%{http_code}' "$U/api/0/profiles?service=recent&type=cpu&from=now-1h&to=now")
[ "$code" == 200 ] && [ "$(jq '.body | length' "$TMP/list")" == 1 ] && ok "profefe GET /api/0/profiles with from=now-1h&to=now" \
  || fail "profefe GET /api/0/profiles with from=now-1h&to=now" "$code $(head -c 200 "$TMP/list")"
code=$(curl -s -o "$TMP/m.pb.gz" -w '%{http_code}' "$U/api/0/profiles/merge?service=recent&type=cpu&from=now-1h&to=now")
[ "$code" == 200 ] && [ "$(pprof_sums "$TMP/m.pb.gz")" == "$(pprof_sums "$M/recent/cpu/all/last-1h/merged.pb.gz")" ] \
  && ok "profefe GET /api/0/profiles/merge with from=now-1h&to=now" || fail "profefe GET /api/0/profiles/merge with from=now-1h&to=now" "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$U/api/0/profiles?service=recent&type=cpu&from=now-1x&to=now")
check_eq "profefe GET: a bad relative time is 400" "$code" 400

# --- item: /metrics ------------------------------------------------------------
ls -l "$H/all/2022-02-10T16/vs" > "$TMP/vs.ls" || fail "ls -l vs/"
curl -s "$U/metrics" > "$TMP/metrics"
grep -q '^# TYPE profilefs_memory_budget_refusals_total counter$' "$TMP/metrics" \
  && ok "refusals are a counter" || fail "refusals are a counter"
bad=$(awk '$1 == "#" && $2 == "TYPE" && $3 ~ /_total$/ && $4 != "counter" { print $3 }' "$TMP/metrics" | tr '\n' ' ')
check_eq "every *_total is a counter" "$bad" ""
for n in profilefs_store_profiles_total profilefs_store_rejected_total profilefs_store_bytes_total; do
  grep -q "^# TYPE $n counter\$" "$TMP/metrics" && ok "$n is a counter" || fail "$n is a counter"
done
missing=""
for op in getattr readdir open read create write release readlink mkdir; do
  grep -q "^profilefs_fuse_requests_total{op=\"$op\"} [1-9]" "$TMP/metrics" || missing="$missing $op"
done
check_eq "profilefs_fuse_requests_total by op" "$missing" ""
grep -q '^profilefs_fuse_requests_total [0-9]' "$TMP/metrics" && fail "no FUSE request without an op" \
  || ok "no FUSE request without an op"
b=$(awk '$1 == "profilefs_store_profiles_total" { print $2 }' "$TMP/metrics")
cp "$S" "$M/ingest/recent/cpu/" || fail "one more profile"
a=$(curl -s "$U/metrics" | awk '$1 == "profilefs_store_profiles_total" { print $2 }')
[ -n "$b" ] && [ "$a" -gt "$b" ] && ok "profilefs_store_profiles_total grows ($b -> $a)" \
  || fail "profilefs_store_profiles_total grows" "$b -> $a"
pf_stop

# --- item: the eBPF summary without -v, libbpf's lines at -v and -vv ----------
ebpf_run() {	# ebpf_run LOG ARGS...: start with --ebpf, wait for the summary, stop
  local log="$1" i; shift
  "$BIN" serve --data "$TMP/ebpf-data" --ebpf=99 --ebpf-period 1 "$@" "$TMP/ebpf-mnt" >"$log" 2>&1 &
  local pid=$!
  for i in $(seq 1 300); do
    grep -q "ebpf: first 1 s:" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}
if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
  for n in "ebpf summary without -v" "no libbpf debug lines without -v" "libbpf's name said once at -v" \
      "libbpf's relocations only at -vv"; do echo "ok - $n # SKIP needs root and BTF"; done
else
  ebpf_run "$TMP/e0.log"
  grep -Eq "ebpf: first 1 s: [0-9]+ samples, [0-9]+ processes tracked, [0-9]+ profiles stored \([0-9]+ samples\), [0-9]+ samples dropped" "$TMP/e0.log" \
    && ok "ebpf summary without -v" || fail "ebpf summary without -v" "$(tail -3 "$TMP/e0.log")"
  check_eq "no libbpf debug lines without -v" "$(grep -c 'debug: libbpf' "$TMP/e0.log")" 0
  ebpf_run "$TMP/e1.log" -v
  n1=$(grep -c 'libbpf' "$TMP/e1.log")
  [ "$(grep -c 'libbpf: libbpf:' "$TMP/e1.log")" -eq 0 ] && [ "$n1" -lt 20 ] \
    && ok "libbpf's name said once at -v, and few of its lines ($n1)" || fail "libbpf's name said once at -v" "$n1 lines"
  ebpf_run "$TMP/e2.log" -vv
  n2=$(grep -c 'debug: libbpf' "$TMP/e2.log")
  [ "$n2" -gt "$n1" ] && [ "$(grep -c 'libbpf: libbpf:' "$TMP/e2.log")" -eq 0 ] \
    && ok "libbpf's relocations only at -vv ($n2 lines)" || fail "libbpf's relocations only at -vv" "$n2 lines"
fi

fusermount3 -u -z "$TMP/ebpf-mnt" 2>/dev/null
pf_done
