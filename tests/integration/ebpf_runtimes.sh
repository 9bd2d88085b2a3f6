#!/usr/bin/env bash
# The eBPF sampler and language runtimes: Java (Debian's OpenJDK, a program
# compiled here with javac) named from the perf map the daemon asks the JVM
# to write, with no flag on its command line; Python (Debian's python3.11 and
# the pyenv builds present on the host) as Python frames, function (file:line),
# in place of the interpreter's; the service of each named by its script or
# main class. Needs root and a kernel with BTF; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-java-named ebpf-java-service ebpf-java-attach-clean"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
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

PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=99 --ebpf-period 2 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }

# --- Java ------------------------------------------------------------------
if command -v javac >/dev/null && command -v java >/dev/null; then
  mkdir -p "$B/java" && cp "$SRC/Hot.java" "$B/java/" &&
    (cd "$B/java" && javac Hot.java) || fail "javac Hot.java"
  # No -XX flag: the daemon asks the JVM for its perf map.
  (cd "$B/java" && exec java -cp . Hot 10000 >/dev/null) &
  JP=$!
  wait $JP
  sleep 3
  want_share "ebpf-java-named" Hot "Hot.spin(long)" 80 $JP
  if [ -d "$TMP/mnt/Hot" ]; then ok "ebpf-java-service"
  else fail "ebpf-java-service" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
  # The trigger file is removed at once, the perf map the daemon had the
  # JVM write once the JVM has exited.
  if [ -e "/tmp/.attach_pid$JP" ] || [ -e "/tmp/perf-$JP.map" ]; then
    fail "ebpf-java-attach-clean" "$(ls /tmp/.attach_pid$JP /tmp/perf-$JP.map 2>/dev/null) left"
  else ok "ebpf-java-attach-clean"; fi
  rm -f "/tmp/perf-$JP.map"
else
  for n in ebpf-java-named ebpf-java-service ebpf-java-attach-clean; do echo "ok - $n # SKIP no JDK"; done
fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-runtimes-clean-stop" "daemon exited with $PF_RC"
pf_done
