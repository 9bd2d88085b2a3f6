#!/usr/bin/env bash
# Benchmark: a fleet of HOSTS hosts on ClickHouse against one host's embedded
# store, side by side in one run, on this machine.
#
# Two clickhouse-server processes on loopback are the two shards of one
# cluster (tests/clickhouse/, their own config and data dirs). DAEMONS daemons
# with --clickhouse stand for the fleet: each receives, over HTTP, the
# profiles of HOSTS/DAEMONS hosts (label host=d<daemon>-<n>), one real Go CPU
# profile per host every STEP seconds over the last FLEET_HOURS hours (the
# profiles are recorded from a Go program by tests/go/gencpu, round-robin).
# A daemon without --clickhouse receives the share of one host (host=d0-0):
# the embedded store the fleet is compared with. It prints:
#   - ingest into ClickHouse, end to end (pushed, stored, shipped, in the
#     tables): profiles/s and samples/s; the INSERTs of profiles, the parts,
#     and whether ClickHouse holds every profile once;
#   - bytes per sample in ClickHouse (system.parts, every table, after the
#     merges ClickHouse does by itself and after OPTIMIZE ... FINAL), and the
#     embedded store's (its data dir);
#   - cold (a freshly started daemon) and warm (the same read again) reads of
#     merged.pb.gz for last-1h, last-24h and a 6-hour FROM..TO, for all hosts
#     and for host=d0-0, through a reading daemon's mount, and the same reads
#     from the embedded store, with their ratios. The fleet's cold read is
#     timed twice: "1st", a fresh daemon with an empty data dir (every
#     stack's frames asked from ClickHouse), and "cold", a fresh daemon whose
#     data dir keeps the frames an earlier read fetched (as any reader that
#     restarts has them);
#   - the listings (services, label sets, ranges) through the fleet;
#   - whether host=d0-0's sums agree between the fleet and the embedded store.
#
#   - CPU per profile, side by side: the embedded store's daemon (every
#     thread: HTTP, decode, store, compaction) and, in the fleet's daemons,
#     the shipper threads alone (named pf-ship, and the pf-ship-send threads
#     that send a batch while it builds the next: their CPU from /metrics; a
#     build without the names: the thread busiest while only shipping was
#     left) and every thread; and
#     ClickHouse's servers.
#
# Size: `bash scripts/bench-fleet.sh [HOURS]` sets FLEET_HOURS (each host's
# hours of profiles; 1 is 36,000 profiles at the default 100 hosts).
# Knobs (environment): HOSTS (100), FLEET_HOURS (24), STEP (10 s), DAEMONS (2),
# DRAIN (1: the fleet's daemons store every push first, ClickHouse out of
# reach, then restart with it: the rate is their outboxes' drain, shipping
# and ClickHouse alone; CPU per profile is the drain's),
# PROFILES (a directory of Go CPU profiles; recorded when missing), READS (3:
# each read is timed that many times, the medians shown), OLD_BIN (another
# build of profilefs whose fleet reads are timed beside, on the same data;
# READS=0 skips the reads and listings).
# The default is 864,000 profiles (100 hosts, every 10 s for 24 h).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PROFILEFS_BIN:-$ROOT/bin/profilefs}"
HOSTS="${HOSTS:-100}"
FLEET_HOURS="${1:-${FLEET_HOURS:-24}}"
STEP="${STEP:-10}"
DAEMONS="${DAEMONS:-2}"
READS="${READS:-3}"
OLD_BIN="${OLD_BIN:-}"
PROFILES="${PROFILES:-/tmp/profilefs-bench-fleet-cpu}"
export GOCACHE="${GOCACHE:-/tmp/profilefs-gocache}" GOFLAGS=-mod=mod

command -v clickhouse-server >/dev/null || { echo "clickhouse-server is not installed (scripts/install-deps.sh --test)"; exit 1; }
[ -x "$BIN" ] || make -C "$ROOT" -j2 >/dev/null
[ $((HOSTS % DAEMONS)) = 0 ] || { echo "HOSTS must be a multiple of DAEMONS"; exit 1; }
if [ "$(ls "$PROFILES"/cpu-*.pb.gz 2>/dev/null | wc -l)" -lt 8 ]; then
  echo "recording 8 Go CPU profiles (1 s each) into $PROFILES ..."
  (cd "$ROOT/tests/go/gencpu" && go build -o /tmp/profilefs-gencpu .)
  /tmp/profilefs-gencpu -out "$PROFILES" -n 8 -dur 1s 2>/dev/null
fi
files=$(ls "$PROFILES"/cpu-*.pb.gz | head -8)
PER_HOST=$((FLEET_HOURS * 3600 / STEP))
N=$((PER_HOST * HOSTS))
K=$((HOSTS / DAEMONS))
TMP="$(mktemp -d /tmp/profilefs-bench-fleet.XXXXXX)"
P0=$((31000 + ($$ % 900) * 10))
CH1=$P0 CH1T=$((P0 + 1)) CH2=$((P0 + 3)) CH2T=$((P0 + 4))
URLS="http://127.0.0.1:$CH1,http://127.0.0.1:$CH2"
PIDS=()
declare -A LIVE=()
cleanup() {
  for p in "${LIVE[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${LIVE[@]}"; do wait "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for m in "$TMP"/mnt*; do fusermount3 -u -z "$m" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
cc -O2 -pthread -o "$TMP/httpload" "$ROOT/tests/tools/httpload.c"

samples=0
for f in $files; do
  s=$(go tool pprof -raw "$f" 2>/dev/null | awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /^ *[0-9-]+ /' | wc -l)
  samples=$((samples + s))
done
per=$(awk -v s="$samples" -v n="$(echo "$files" | wc -w)" 'BEGIN {printf "%.1f", s / n}')
echo "fleet: $HOSTS hosts through $DAEMONS daemons, a Go CPU profile ($per samples on average)" \
  "every $STEP s for $FLEET_HOURS h: $N profiles; one host's share: $PER_HOST"

chq() { curl -sS --max-time 600 "http://127.0.0.1:$1/" --data-binary "$2"; }
# start_daemon NAME [args...]: a daemon with its mount; sets PORT_<NAME>, LIVE[NAME]
start_daemon() {
  local name=$1; shift
  mkdir -p "$TMP/mnt$name"
  : >"$TMP/log$name"
  "$BIN" serve --data "$TMP/data$name" --http 127.0.0.1:0 "$@" "$TMP/mnt$name" 2>>"$TMP/log$name" &
  LIVE[$name]=$!
  for _ in $(seq 1 300); do [ -r "$TMP/mnt$name/README.txt" ] && grep -q "listening on" "$TMP/log$name" && break; sleep 0.1; done
  eval "PORT_$name=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/log$name" | tail -1)"
  [ "${NOWAIT:-0}" = 1 ] || case " $* " in *" --clickhouse "*)
    for _ in $(seq 1 300); do grep -q "clickhouse: connected" "$TMP/log$name" && break; sleep 0.05; done ;;
  esac
}
stop_daemon() {
  local pid=${LIVE[$1]:-}
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "LIVE[$1]"
  fusermount3 -u -z "$TMP/mnt$1" 2>/dev/null || true
}
backlog() { curl -s "http://127.0.0.1:$1/healthz" | sed -n 's/.*backlog \([0-9]*\) profiles.*/\1/p'; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
TCK=$(getconf CLK_TCK)
# cpu_ticks PID: utime + stime of the process (every thread, ticks)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# thread_ticks PID: "TID COMM TICKS" per thread
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    [ -r "$t/stat" ] || continue
    echo "${t##*/} $(cat "$t/comm" 2>/dev/null | tr ' ' _) $(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')"
  done 2>/dev/null
}
per_ms() { awk -v t="$1" -v n="$2" -v k="$TCK" 'BEGIN {printf "%.3f", (n > 0 ? t * 1000 / k / n : 0)}'; }
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }

PIDS+=("$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch1" "$CH1" "$CH1T" $((CH1T + 1)) "$CH1T" "$CH2T")")
PIDS+=("$("$ROOT/tests/clickhouse/start.sh" "$TMP/ch2" "$CH2" "$CH2T" $((CH2T + 1)) "$CH1T" "$CH2T")")

now=$(date +%s)
base=$((now - FLEET_HOURS * 3600 + STEP))
base=$((base - base % STEP))

# --- the embedded store: one host's share ------------------------------------------
# httpload sends request i with file i % F; host d0-0 gets requests K * j, so
# the embedded store gets, in order, the files K * m % F: the same profiles.
read -r -a farr <<<"$(echo $files)"
efiles=""
for m in $(seq 0 $((${#farr[@]} - 1))); do efiles="$efiles ${farr[$((K * m % ${#farr[@]}))]}"; done
start_daemon E
t0=$(now_ms)
# shellcheck disable=SC2086
"$TMP/httpload" -c 8 -n "$PER_HOST" -t 3600 -T "$base,$STEP,1" \
  -p "/api/0/profiles?service=fleetapp&type=cpu&labels=host=d0-0&created_at={t}" 127.0.0.1 "$PORT_E" $efiles >/dev/null
ingest_e_ms=$(( $(now_ms) - t0 ))
sleep 2	# the compactor's share of the last profiles
cpu_e=$(cpu_ticks "${LIVE[E]}")

# --- the fleet: every daemon pushed at once, timed until ClickHouse holds it all -------
# DRAIN=1: the daemons first store every push with ClickHouse out of reach
# (their outboxes fill), then restart with it: the time to empty the
# outboxes is the rate shipping and ClickHouse sustain alone.
DEAD="http://127.0.0.1:$((P0 + 7))"
for d in $(seq 0 $((DAEMONS - 1))); do
  if [ "${DRAIN:-0}" = 1 ]; then NOWAIT=1 start_daemon "D$d" --host "daemon$d" --clickhouse "$DEAD"
  else start_daemon "D$d" --host "daemon$d" --clickhouse "$URLS"; fi
done
t0=$(now_ms)
LPIDS=()
for d in $(seq 0 $((DAEMONS - 1))); do
  eval "port=\$PORT_D$d"
  "$TMP/httpload" -c 8 -n $((PER_HOST * K)) -t 7200 -T "$base,$STEP,$K" \
    -p "/api/0/profiles?service=fleetapp&type=cpu&labels=host=d$d-{k}&created_at={t}" 127.0.0.1 "$port" $files \
    >"$TMP/load$d" &
  LPIDS+=($!)
done
ch_ticks() { echo $(( $(cpu_ticks "${PIDS[0]}") + $(cpu_ticks "${PIDS[1]}") )); }
ch0=$(ch_ticks)
for p in "${LPIDS[@]}"; do wait "$p"; done
ack_ms=$(( $(now_ms) - t0 ))
if [ "${DRAIN:-0}" = 1 ]; then
  for d in $(seq 0 $((DAEMONS - 1))); do stop_daemon "D$d"; done
  for d in $(seq 0 $((DAEMONS - 1))); do
    NOWAIT=1 start_daemon "D$d" --host "daemon$d" --clickhouse "$URLS"
  done
  ch0=$(ch_ticks)
  t0=$(now_ms)
fi
for d in $(seq 0 $((DAEMONS - 1))); do thread_ticks "${LIVE[D$d]}" >"$TMP/threads-ack.$d"; done
while :; do
  # (an error while a daemon still makes the schema on the other server counts as 0)
  n=$(chq "$CH1" "SELECT count() FROM profilefs.profiles" 2>/dev/null || true)
  case "$n" in '' | *[!0-9]*) n=0 ;; esac
  [ "$n" -ge "$N" ] && break
  sleep 0.5
done
ingest_ms=$(( $(now_ms) - t0 ))
ch1=$(ch_ticks)
cpu_d=0 cpu_ship=0
for d in $(seq 0 $((DAEMONS - 1))); do
  cpu_d=$((cpu_d + $(cpu_ticks "${LIVE[D$d]}")))
  thread_ticks "${LIVE[D$d]}" >"$TMP/threads-end.$d"
  # the shipper: named pf-ship, else the thread busiest since the pushes ended
  # (and its senders: each ends with its INSERT, its CPU in /metrics)
  t=$(awk '$2 ~ /^pf-ship/ {s += $3; n++} END {if (n) print s}' "$TMP/threads-end.$d")
  eval "port=\$PORT_D$d"
  snd=$(curl -s "http://127.0.0.1:$port/metrics" |
    awk -v k="$TCK" '$1 == "profilefs_clickhouse_sender_cpu_seconds_total" {printf "%.0f", $2 * k}')
  if [ -z "$t" ]; then
    t=$(awk 'NR == FNR {a[$1] = $3; next} {print $3 - ($1 in a ? a[$1] : 0), $3}' \
      "$TMP/threads-ack.$d" "$TMP/threads-end.$d" | sort -n | tail -1 | cut -d' ' -f2)
  fi
  cpu_ship=$((cpu_ship + ${t:-0} + ${snd:-0}))
done
rate=$(awk -v n="$N" -v t="$ingest_ms" 'BEGIN {printf "%.0f", n * 1000 / t}')
batches=0
for d in $(seq 0 $((DAEMONS - 1))); do
  eval "port=\$PORT_D$d"
  b=$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "profilefs_clickhouse_batches_total" {print $2}')
  batches=$((batches + ${b:-0}))
done
parts=$(( $(chq "$CH1" "SELECT count() FROM system.parts WHERE database = 'profilefs'") + \
  $(chq "$CH2" "SELECT count() FROM system.parts WHERE database = 'profilefs'") ))
rate_s=$(awk -v n="$N" -v t="$ingest_ms" -v p="$per" 'BEGIN {printf "%.0f", n * p * 1000 / t}')
rate_e=$(awk -v n="$PER_HOST" -v t="$ingest_e_ms" 'BEGIN {printf "%.0f", n * 1000 / t}')
stacks_how=$(for d in $(seq 0 $((DAEMONS - 1))); do
  eval "port=\$PORT_D$d"
  curl -s "http://127.0.0.1:$port/metrics" | grep -E '^profilefs_clickhouse_stacks_(total|shipped_total)' || true
done | awk '{split($1, a, "[{}]"); v[a[2] == "" ? a[1] : a[2]] += $2} END {for (k in v) printf "%s %d; ", k, v[k]}')
for d in $(seq 0 $((DAEMONS - 1))); do stop_daemon "D$d"; done

# --- bytes per sample --------------------------------------------------------------
distinct=$(chq "$CH1" "SELECT uniqExact(gid) FROM profilefs.profiles")
nsamples=$(chq "$CH1" "SELECT sum(length(stacks)) FROM profilefs.profiles")
ch_bytes() {
  local b1 b2
  b1=$(chq "$CH1" "SELECT sum(bytes) FROM system.parts WHERE database = 'profilefs' AND active")
  b2=$(chq "$CH2" "SELECT sum(bytes) FROM system.parts WHERE database = 'profilefs' AND active")
  echo $((b1 + b2))
}
bytes_now=$(ch_bytes)
for s in "$CH1" "$CH2"; do
  for t in profiles_local samples10_local samples1h_local counts10_local series_local stacks_local; do
    chq "$s" "OPTIMIZE TABLE profilefs.$t FINAL" >/dev/null 2>&1 || true
  done
done
sleep 2
bytes_opt=$(ch_bytes)
by_table=$(for s in "$CH1" "$CH2"; do
  chq "$s" "SELECT table, sum(bytes) FROM system.parts WHERE database = 'profilefs' AND active GROUP BY table FORMAT TSV"
done | awk '{b[$1] += $2} END {for (t in b) printf "%s %.2f B/sample; ", t, b[t] / '"$nsamples"'}')
stop_daemon E
e_bytes=$(du -sb "$TMP/dataE" | cut -f1)

if [ "$READS" -gt 0 ]; then
# --- reads ------------------------------------------------------------------------------
# A 6-hour FROM..TO in the middle of the data (or its first half when shorter).
if [ "$FLEET_HOURS" -ge 12 ]; then f6=$((base + 3 * 3600)); t6=$((f6 + 6 * 3600)); else f6=$base; t6=$((base + FLEET_HOURS * 1800)); fi
R6="$(date -u -d "@$f6" +%Y-%m-%dT%H%M%S)..$(date -u -d "@$t6" +%Y-%m-%dT%H%M%S)"
cold_warm1() {	# cold_warm1 NAME ARGS PATH: prints "cold warm" ms; cold in a fresh daemon (WIPE=1: and data dir)
  local name=$1 args=$2 path=$3 c w
  [ "${WIPE:-0}" = 1 ] && rm -rf "$TMP/data$name"
  # shellcheck disable=SC2086
  start_daemon "$name" $args
  c=$(ms cat "$TMP/mnt$name/$path")
  w=$(ms cat "$TMP/mnt$name/$path")
  cp "$TMP/mnt$name/$path" "$TMP/out.$name.$(echo "$path" | tr '/' '_')" 2>/dev/null || true
  stop_daemon "$name"
  echo "$c $w"
}
median() { sort -n | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : 0}'; }
cold_warm() {	# cold_warm NAME ARGS PATH: the medians of READS cold_warm1
  local i out=""
  for i in $(seq 1 "$READS"); do out="$out$(cold_warm1 "$@")"$'\n'; done
  echo "$(echo -n "$out" | cut -d' ' -f1 | median) $(echo -n "$out" | cut -d' ' -f2 | median)"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a / (b > 0 ? b : 1)}'; }
echo
echo "reads: the medians of $READS (each cold read in a freshly started daemon)"
printf "%-34s %9s %9s %9s %9s %9s %9s %9s %9s" "read (ms)" "emb cold" "emb warm" "fleet 1st" "fleet cold" "fleet warm" \
  "1st x" "cold x" "warm x"
[ -n "$OLD_BIN" ] && printf " %9s %9s %9s" "old cold" "old warm" "old cold x"
echo
for sel in "all" "host=d0-0"; do
  for r in last-1h last-24h "$R6"; do
    name=$r; [ "$r" = "$R6" ] && name="6h FROM..TO"
    read -r ec ew <<<"$(cold_warm E "" "fleetapp/cpu/host=d0-0/$r/merged.pb.gz")"
    read -r f1 _ <<<"$(WIPE=1 cold_warm F "--host reader --clickhouse $URLS" "fleetapp/cpu/$sel/$r/merged.pb.gz")"
    read -r fc fw <<<"$(cold_warm F "--host reader --clickhouse $URLS" "fleetapp/cpu/$sel/$r/merged.pb.gz")"
    printf "%-34s %9s %9s %9s %9s %9s %9s %9s %9s" "$sel $name" "$ec" "$ew" "$f1" "$fc" "$fw" "$(ratio "$f1" "$ec")" \
      "$(ratio "$fc" "$ec")" "$(ratio "$fw" "$ew")"
    if [ -n "$OLD_BIN" ]; then
      read -r oc ow <<<"$(BIN=$OLD_BIN cold_warm O "--host reader --clickhouse $URLS" "fleetapp/cpu/$sel/$r/merged.pb.gz")"
      printf " %9s %9s %9s" "$oc" "$ow" "$(ratio "$oc" "$ec")"
    fi
    echo
  done
done

# --- listings and sums --------------------------------------------------------------
start_daemon F --host reader --clickhouse "$URLS"
ls_services=$(ms ls "$TMP/mntF")
ls_labels=$(ms ls "$TMP/mntF/fleetapp/cpu")
ls_ranges=$(ms ls "$TMP/mntF/fleetapp/cpu/host=d0-0")
nlabels=$(ls "$TMP/mntF/fleetapp/cpu" | wc -l)
ls_labels2=$(ms ls "$TMP/mntF/fleetapp/cpu")
first_sum() {
  go tool pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ {on = 1; getline; next} /^Locations/ {on = 0}
    on && /^ *-?[0-9]/ {s += $1} END {printf "%.0f\n", s}' || true
}
cp "$TMP/mntF/fleetapp/cpu/host=d0-0/last-24h/merged.pb.gz" "$TMP/f24.pb.gz"
stop_daemon F
start_daemon E
cp "$TMP/mntE/fleetapp/cpu/host=d0-0/last-24h/merged.pb.gz" "$TMP/e24.pb.gz"
stop_daemon E
se=$(first_sum "$TMP/e24.pb.gz"); sf=$(first_sum "$TMP/f24.pb.gz")
fi

echo
[ "$READS" -gt 0 ] && echo "ls (fleet, ms): services $ls_services, $nlabels label sets $ls_labels (again $ls_labels2), ranges of a label set $ls_ranges"
if [ "${DRAIN:-0}" = 1 ]; then
  echo "drain into ClickHouse: $N profiles stored first (acknowledged in $ack_ms ms), then shipped in" \
    "$ingest_ms ms: $rate profiles/s, $rate_s samples/s; embedded store alone: $rate_e profiles/s"
else
  echo "ingest into ClickHouse: $N profiles in $ingest_ms ms (all acknowledged in $ack_ms ms):" \
    "$rate profiles/s, $rate_s samples/s; embedded store alone: $rate_e profiles/s"
fi
echo "profiles in ClickHouse: $N, $distinct distinct ($([ "$distinct" = "$N" ] && echo "none twice" || echo "SOME TWICE OR MISSING"))"
echo "INSERTs of profiles: $batches ($([ "$batches" -gt 0 ] && echo $((N / batches)) || echo 0) profiles each on average);" \
  "parts in ClickHouse after ingest (active and merged away, both servers): $parts"
echo "ClickHouse: $nsamples samples, $bytes_now bytes ($(awk -v b="$bytes_now" -v s="$nsamples" 'BEGIN {printf "%.2f", b / s}') B/sample)," \
  "after OPTIMIZE FINAL $bytes_opt bytes ($(awk -v b="$bytes_opt" -v s="$nsamples" 'BEGIN {printf "%.2f", b / s}') B/sample)"
echo "  by table: $by_table"
echo "embedded store: $e_bytes bytes for $PER_HOST profiles ($(awk -v b="$e_bytes" -v n="$PER_HOST" -v p="$per" 'BEGIN {printf "%.2f", b / (n * p)}') B/sample, its data dir)"
[ "$READS" -gt 0 ] && echo "host=d0-0 last-24h sample sums: embedded $se, fleet $sf ($([ "$se" = "$sf" ] && echo equal || echo DIFFERENT))"
echo "CPU per profile, ms: embedded store $(per_ms "$cpu_e" "$PER_HOST") (its daemon, every thread);" \
  "shipping $(per_ms "$cpu_ship" "$N") (the shipper threads); fleet daemons $(per_ms "$cpu_d" "$N") (every thread:" \
  "HTTP, store, shipping); ClickHouse $(per_ms $((ch1 - ch0)) "$N") (both servers, while ingesting)"
[ -n "$stacks_how" ] && echo "stacks of the shipped profiles: $stacks_how"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
