#!/usr/bin/env bash
# The eBPF sampler and language runtimes: Java (Debian's OpenJDK, a program
# compiled here with javac) named from the perf map the daemon asks the JVM
# to write, with no flag on its command line; Python (Debian's python3.11 and
# the pyenv builds present on the host) as Python frames, function (file:line),
# in place of the interpreter's, with C extensions' native frames beneath,
# per thread, for processes started before the daemon and ones that exit
# while sampled; the service of each named by its script, module or main
# class. Needs root and a kernel with BTF; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

PYVERS="3.11 3.12 3.13"
NAMES="ebpf-java-named ebpf-java-service ebpf-java-stale-map ebpf-java-attach-clean ebpf-python-3.11 ebpf-python-3.12 ebpf-python-3.13 ebpf-python-lines ebpf-python-running ebpf-python-exiting ebpf-python-native ebpf-python-threads ebpf-python-truncated ebpf-python-service-module"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
[ "${KEEP_TMP:-0}" = 1 ] && echo "# kept: $TMP"
SRC="$ROOT/tests/ebpf/runtimes"
B="$TMP/bin"
mkdir -p "$B"

# traces SERVICE: go tool pprof -traces of the service's merged profile, once it exists.
traces() {
  local f="$TMP/mnt/$1/cpu/all/all/merged.pb.gz" i
  for i in $(seq 1 60); do
    [ -e "$f" ] && break
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.5
  done
  go tool pprof -sample_index=samples -traces "$f" 2>/dev/null
}
# share STACK [PID]: "matched total": samples (of PID) whose stack (leaf;...;root) contains STACK.
share() {
  awk -v want="$1" -v wpid="${2:-}" '
    function done() { if (wpid != "" && pid != wpid) v = ""; if (v != "") { total += v; if (index(";" st ";", ";" want ";")) hit += v } v = ""; st = "" }
    /^-+\+/ { done(); pid = ""; next }
    /^ *pid: / && v == "" { pid = $2; next }
    /^ *[A-Za-z_:.]+: / && v == "" { next }
    v == "" && $1 ~ /^[0-9]/ { v = $1; $1 = ""; sub(/^ +/, ""); st = $0; next }
    v != "" && NF { sub(/^ +/, ""); st = st ";" $0 }
    END { done(); print hit + 0, total + 0 }'
}
# want_share NAME SERVICE STACK PERCENT [PID]
want_share() {
  local t m n
  t="$(traces "$2")"
  read -r m n <<<"$(echo "$t" | share "$3" "${5:-}")"
  if [ "$n" -gt 0 ] && [ $((m * 100)) -ge $(($4 * n)) ]; then ok "$1 ($m of $n samples)"
  else fail "$1" "$m of $n samples of $2 carry $3 (want >= $4%)"; echo "$t" | head -40 | sed 's/^/#   /'; fi
}

# folded SERVICE: the service's folded stacks (root first), once they exist.
folded() {
  local f="$TMP/mnt/$1/cpu/all/all/folded.txt" i
  for i in $(seq 1 60); do
    [ -e "$f" ] && break
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.5
  done
  cat "$f" 2>/dev/null
}
# fshare WANT AMONG: "matched total" weights of the folded stacks (stdin)
# matching the regex AMONG, and of those, WANT.
fshare() {
  awk -v want="$1" -v among="$2" '
    { v = $NF; st = substr($0, 1, length($0) - length($NF) - 1)
      if (st ~ among) { total += v; if (st ~ want) hit += v } }
    END { printf "%d %d\n", hit / 1e6, total / 1e6 }'
}
# want_fshare NAME SERVICE WANT AMONG PERCENT
want_fshare() {
  local t m n
  t="$(folded "$2")"
  read -r m n <<<"$(echo "$t" | fshare "$3" "$4")"
  if [ "$n" -gt 0 ] && [ $((m * 100)) -ge $(($5 * n)) ]; then ok "$1 ($m of $n ms)"
  else fail "$1" "$m of $n ms of $2 match /$3/ (want >= $5%)"; echo "$t" | sort -k2 -nr | head -8 | cut -c1-400 | sed 's/^/#   /'; fi
}

# Python interpreters: Debian's, and pyenv's 3.12 and 3.13 where present.
pybin() {
  case "$1" in
    3.11) [ -x /usr/bin/python3.11 ] && echo /usr/bin/python3.11 ;;
    *) ls -d /root/.pyenv/versions/$1.*/bin/python$1 2>/dev/null | sort -V | tail -1 ;;
  esac
}
PY311="$(pybin 3.11)"
# One started before the daemon: its interpreter is found all the same.
if [ -n "$PY311" ]; then
  cp "$SRC/fib.py" "$B/fib_running.py"
  "$PY311" "$B/fib_running.py" 14 &
  PYRUN=$!
fi

PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }

# --- Java ------------------------------------------------------------------
if command -v javac >/dev/null && command -v java >/dev/null; then
  mkdir -p "$B/java" && cp "$SRC/Hot.java" "$B/java/" &&
    (cd "$B/java" && javac Hot.java) || fail "javac Hot.java"
  # No -XX flag: the daemon asks the JVM for its perf map. Its pid had a
  # dead process's map left in /tmp, written before it started (pids wrap at
  # 32,768): not read for its names, and replaced and removed all the same.
  (sleep 1; cd "$B/java" && exec java -cp . Hot 12000 >/dev/null) &
  JP=$!
  echo "0 7fffffffffff Stale.leftover" >"/tmp/perf-$JP.map"
  touch -d '-1 hour' "/tmp/perf-$JP.map"
  wait $JP
  sleep 3
  want_share "ebpf-java-named" Hot "Hot.spin(long)" 80 $JP
  if folded Hot | grep -q Stale.leftover; then
    fail "ebpf-java-stale-map" "a dead process's perf map named frames"
  else ok "ebpf-java-stale-map"; fi
  if [ -d "$TMP/mnt/Hot" ]; then ok "ebpf-java-service"
  else fail "ebpf-java-service" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
  # The trigger file is removed at once, the perf map the daemon had the
  # JVM write once the daemon saw the JVM exit (a loaded host's daemon may
  # take some seconds more than the 3 above).
  for _ in $(seq 1 $((100 * ${PROFILEFS_SLOW:-1}))); do
    [ -e "/tmp/.attach_pid$JP" ] || [ -e "/tmp/perf-$JP.map" ] || break
    sleep 0.2
  done
  if [ -e "/tmp/.attach_pid$JP" ] || [ -e "/tmp/perf-$JP.map" ]; then
    fail "ebpf-java-attach-clean" "$(ls /tmp/.attach_pid$JP /tmp/perf-$JP.map 2>/dev/null) left"
  else ok "ebpf-java-attach-clean"; fi
  rm -f "/tmp/perf-$JP.map"
else
  for n in ebpf-java-named ebpf-java-service ebpf-java-stale-map ebpf-java-attach-clean; do echo "ok - $n # SKIP no JDK"; done
fi

# --- Python ----------------------------------------------------------------
PIDS=""
for v in $PYVERS; do
  py="$(pybin "$v")"
  [ -n "$py" ] || continue
  cp "$SRC/fib.py" "$B/fib_${v/./_}.py"
  "$py" "$B/fib_${v/./_}.py" 8 &
  PIDS="$PIDS $!"
done
if [ -n "$PY311" ]; then
  cp "$SRC/squeeze.py" "$B/squeeze.py"
  "$PY311" "$B/squeeze.py" 8 &
  PIDS="$PIDS $!"
  # One that exits while it is sampled, several times over.
  cp "$SRC/fib.py" "$B/fib_exiting.py"
  for i in 1 2 3 4; do "$PY311" "$B/fib_exiting.py" 1.5; done &
  PIDS="$PIDS $!"
  # Two threads: each sample shows the frames of its own thread.
  cp "$SRC/threads.py" "$B/pythreads.py"
  "$PY311" "$B/pythreads.py" 8 &
  PIDS="$PIDS $!"
  # Deeper than a sample carries: the rest is one marked frame, and the stack goes on to the root.
  cp "$SRC/deep.py" "$B/pydeep.py"
  "$PY311" "$B/pydeep.py" 6 &
  PIDS="$PIDS $!"
  # python3 -m module: the service is the module.
  mkdir -p "$B/mods" && cp "$SRC/fib.py" "$B/mods/fibmod.py"
  (cd "$B/mods" && exec "$PY311" -m fibmod 2) &
  PIDS="$PIDS $!"
fi
wait $PIDS ${PYRUN:-}
sleep 3

# Of the samples in Python code (those below <module>), the share in fib called by work.
for v in $PYVERS; do
  if [ -z "$(pybin "$v")" ]; then echo "ok - ebpf-python-$v # SKIP no python$v"; continue; fi
  want_fshare "ebpf-python-$v" "fib_${v/./_}.py" "(^|;)<module>;work;fib(;|$)" "(^|;)<module>(;|$)" 90
done
if [ -n "$PY311" ]; then
  # file:line of each frame, as pprof shows them.
  raw="$(go tool pprof -raw "$TMP/mnt/fib_3_11.py/cpu/all/all/merged.pb.gz" 2>/dev/null)"
  if echo "$raw" | grep -Eq " fib /[^ ]*/fib_3_11\.py:8( |$)" &&
    echo "$raw" | grep -Eq " work /[^ ]*/fib_3_11\.py:14( |$)"; then ok "ebpf-python-lines"
  else fail "ebpf-python-lines" "$(echo "$raw" | grep -E "fib|work" | head -5)"; fi
  want_fshare "ebpf-python-running" fib_running.py "(^|;)<module>;work;fib(;|$)" "(^|;)<module>(;|$)" 90
  want_fshare "ebpf-python-exiting" fib_exiting.py "(^|;)<module>;work;fib(;|$)" "(^|;)<module>(;|$)" 80
  # libz's deflate beneath squeeze: the native frames of the C extension are kept.
  want_fshare "ebpf-python-native" squeeze.py "(^|;)<module>;work;squeeze;(.*;)?deflate(;|$)" "(^|;)<module>(;|$)" 70
  t="$(folded pythreads.py)"
  read -r a n <<<"$(echo "$t" | fshare "(^|;)alpha;spin_a(;|$)" "(^|;)(alpha|beta)(;|$)")"
  read -r b _ <<<"$(echo "$t" | fshare "(^|;)beta;spin_b(;|$)" "(^|;)(alpha|beta)(;|$)")"
  read -r x _ <<<"$(echo "$t" | fshare "(^|;)alpha;.*spin_b|(^|;)beta;.*spin_a" "(^|;)(alpha|beta)(;|$)")"
  if [ "$n" -gt 0 ] && [ "$x" -eq 0 ] && [ $((a * 100)) -ge $((30 * n)) ] && [ $((b * 100)) -ge $((30 * n)) ]; then
    ok "ebpf-python-threads (alpha $a, beta $b, mixed $x of $n ms)"
  else
    fail "ebpf-python-threads" "alpha $a, beta $b, mixed $x of $n ms"; echo "$t" | sort -k2 -nr | head -8 | cut -c1-300 | sed 's/^/#   /'
  fi
  want_fshare "ebpf-python-truncated" pydeep.py "^_start;.*;PyEval_EvalCode;[[]python: truncated[]];deep;deep;" "(^|;)deep(;|$)" 80
  if [ -d "$TMP/mnt/fibmod.py" ]; then ok "ebpf-python-service-module"
  else fail "ebpf-python-service-module" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
else
  for n in ebpf-python-lines ebpf-python-running ebpf-python-exiting ebpf-python-native ebpf-python-threads ebpf-python-truncated ebpf-python-service-module; do
    echo "ok - $n # SKIP no /usr/bin/python3.11"
  done
fi
if kill -0 "$PF_PID" 2>/dev/null; then :; else fail "ebpf-runtimes-daemon" "the daemon died"; fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-runtimes-clean-stop" "daemon exited with $PF_RC"
pf_done
