#!/usr/bin/env bash
# The eBPF sampler and Node.js: JavaScript functions named from V8's own
# structures, function (file:line), with no flag on node's command line, the
# native frames of node beneath them down to the thread's root; for a node
# started before the daemon, for ones that exit while sampled and for one in
# a mount namespace of its own; the service of each named by its script. Needs root, a kernel with BTF and
# node; otherwise skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="ebpf-node-named ebpf-node-lines ebpf-node-root ebpf-node-running ebpf-node-exiting ebpf-node-namespace ebpf-node-service ebpf-node-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v node >/dev/null || skip_all "node not installed"
command -v go >/dev/null || skip_all "go not installed"

pf_setup
[ "${KEEP_TMP:-0}" = 1 ] && echo "# kept: $TMP"
B="$TMP/bin"
mkdir -p "$B"
for n in fib_node fib_node_running fib_node_exiting; do cp "$ROOT/tests/ebpf/runtimes/fib.js" "$B/$n.js"; done
echo "# $(node --version)"

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
# fshare WANT AMONG: "matched total" weights (ms) of the folded stacks (stdin)
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

# One started before the daemon: its V8 is found all the same.
node "$B/fib_node_running.js" 4 &
RUNNING=$!

PORT=$((20000 + RANDOM % 20000))
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; kill "$RUNNING"; pf_done; exit 1; }

node "$B/fib_node.js" 3 &
PIDS="$!"
# Ones that exit while they are sampled, several times over.
for i in 1 2 3 4; do node "$B/fib_node_exiting.js" 1; done &
PIDS="$PIDS $!"
# One in a mount namespace of its own (a container's), its script on a tmpfs
# that only it sees.
NS=""
if command -v unshare >/dev/null; then
  mkdir -p "$B/ns"
  unshare -m --propagation private sh -c 'mount -t tmpfs none "$1" && cp "$2" "$1/fib_node_ns.js" && exec node "$1/fib_node_ns.js" 2' \
    sh "$B/ns" "$ROOT/tests/ebpf/runtimes/fib.js" &
  NS=$!
  PIDS="$PIDS $NS"
fi
wait $PIDS $RUNNING
sleep 3

# Of all the process's samples (its other threads, start-up and compilation
# included), the share in fib called by caller.
want_fshare "ebpf-node-named" fib_node.js "(^|;)caller;fib(;|$)" "." 80
# file:line of each function (its first line), as pprof shows them.
raw="$(go tool pprof -raw "$TMP/mnt/fib_node.js/cpu/all/all/merged.pb.gz" 2>/dev/null)"
if echo "$raw" | grep -Eq " fib /[^ ]*/fib_node\.js:7( |$)" &&
  echo "$raw" | grep -Eq " caller /[^ ]*/fib_node\.js:11( |$)"; then ok "ebpf-node-lines"
else fail "ebpf-node-lines" "$(echo "$raw" | grep -E " (fib|caller) " | head -5)"; fi
# node's own native frames beneath, to the thread's root (_start once node's
# unwind table is loaded; before, frame pointers reach node::Start).
want_fshare "ebpf-node-root" fib_node.js "^(_start;__libc_start_main;)?(__libc_start_call_main;)?node::Start[(][^;]*;(.*;)?caller;fib(;|$)" "(^|;)caller;fib(;|$)" 90
want_fshare "ebpf-node-running" fib_node_running.js "(^|;)caller;fib(;|$)" "." 80
want_fshare "ebpf-node-exiting" fib_node_exiting.js "(^|;)caller;fib(;|$)" "." 70
if [ -n "$NS" ]; then want_fshare "ebpf-node-namespace" fib_node_ns.js "(^|;)caller;fib(;|$)" "." 80
else echo "ok - ebpf-node-namespace # SKIP no unshare"; fi
if [ -d "$TMP/mnt/fib_node.js" ] && [ -d "$TMP/mnt/fib_node_running.js" ]; then ok "ebpf-node-service"
else fail "ebpf-node-service" "services: $(ls "$TMP/mnt" | tr '\n' ' ')"; fi
if kill -0 "$PF_PID" 2>/dev/null; then ok "ebpf-node-daemon"
else fail "ebpf-node-daemon" "the daemon died"; fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || fail "ebpf-node-clean-stop" "daemon exited with $PF_RC"
pf_done
