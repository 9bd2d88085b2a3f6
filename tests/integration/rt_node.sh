#!/usr/bin/env bash
# The eBPF sampler and each Node.js release line: official builds 20, 22, 24
# and 26 (V8 11.3, 12.4, 13.6, 14.x; runtime root "node"), run inside the
# Debian 13 root as a container would (own mount and PID namespaces: the
# daemon finds node through /proc/PID/root), and the host's node. For each,
# a program whose samples are nearly all in a three-deep chain of named
# functions (tests/ebpf/runtimes/chain.js), with no flag on node's command
# line: once started before the daemon, once after. Asserts, and prints,
# the share of each process's samples (from 2 s after the daemon found its V8) whose stack holds the chain named
# (outerFn;middleFn;innerFn) reaching the thread's root, and the file:line
# of each of the three. RT_NODE_EXTRA="LABEL=/path/to/node ..." adds builds
# run on the host (e.g. a Node.js 18). Needs root and BTF; else skipped.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="rt-node-named rt-node-lines rt-node-unknown rt-node-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
need_root trixie node

WANT=90		# percent of a process's samples in the named chain, to the root
R="$(roots_dir)/trixie"
N="$(roots_dir)/node"
D="/tmp/rt_node.$$"	# inside the root
pf_setup
[ "${KEEP_TMP:-0}" = 1 ] && echo "# kept: $TMP"
cleanup_root() { rm -rf "${R:?}$D"; }
trap 'cleanup_root; pf_cleanup' EXIT
mkdir -p "$R$D/lib"
# Node.js 26 needs libatomic, which the root has not: the image would ship it.
for f in /lib/x86_64-linux-gnu/libatomic.so.1 /usr/lib/x86_64-linux-gnu/libatomic.so.1; do
  [ -e "$f" ] && { cp -L "$f" "$R$D/lib/"; break; }
done

# The builds: LABEL PATH-AS-RUN ROOT ("" for the host).
BUILDS=()
for v in $(ls "$N" | sort -n); do
  [ -x "$N/$v/package/bin/node" ] || continue
  # Hard links (same filesystem) or a copy: the root's file, not a mount of ours.
  cp -al "$N/$v" "$R$D/$v" 2>/dev/null || cp -a "$N/$v" "$R$D/$v"
  BUILDS+=("$v $D/$v/package/bin/node $R")
done
if command -v node >/dev/null; then
  BUILDS+=("host $(command -v node) -")
fi
for e in ${RT_NODE_EXTRA:-}; do BUILDS+=("${e%%=*} ${e#*=} -"); done

# run LABEL CASE SECONDS: chain.js as chain_LABEL_CASE.js (its service) under
# build LABEL, in the background; its pid in RUN_PID.
run() {
  local b label node root
  for b in "${BUILDS[@]}"; do
    read -r label node root <<<"$b"
    [ "$label" = "$1" ] || continue
    if [ "$root" = - ]; then
      cp "$ROOT/tests/ebpf/runtimes/chain.js" "$TMP/chain_$1_$2.js"
      "$node" "$TMP/chain_$1_$2.js" "$3" &
    else
      cp "$ROOT/tests/ebpf/runtimes/chain.js" "$R$D/chain_$1_$2.js"
      in_root "$root" env LD_LIBRARY_PATH="$D/lib" "$node" "$D/chain_$1_$2.js" "$3" &
    fi
    RUN_PID=$!
    return 0
  done
}

LABELS=""
for b in "${BUILDS[@]}"; do
  read -r label node root <<<"$b"
  if [ "$root" = - ]; then ver="$("$node" --version 2>/dev/null)"
  else ver="$(in_root "$root" env LD_LIBRARY_PATH="$D/lib" "$node" --version 2>/dev/null)"; fi
  [ -n "$ver" ] || { fail "rt-node-run-$label" "$node does not run"; continue; }
  [ -z "${RT_NODE_ONLY:-}" ] || [[ " $RT_NODE_ONLY " == *" $label "* ]] || continue
  echo "# $label: node $ver"
  LABELS="$LABELS $label"
done

# Started before the daemon: found when the daemon starts (8 s of CPU each:
# the daemon's start and its first look at them come first).
PIDS=""
for l in $LABELS; do run "$l" before "${RT_NODE_CPU_BEFORE:-8}"; PIDS="$PIDS $RUN_PID"; done
sleep 1
PORT=$(free_port)
pf_start -v --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "rt-node-daemon" "daemon start"; kill $PIDS; pf_done; exit 1; }
# Started after.
for l in $LABELS; do run "$l" after "${RT_NODE_CPU_AFTER:-6}"; PIDS="$PIDS $RUN_PID"; done
# A V8 the daemon does not know: a copy of the newest build whose dynamic
# symbol v8::internal::Version::major_ (which the daemon reads, V8 itself
# does not) points at another constant of the file, 56
# (v8dbg_class_Script__line_ends__Object), run twice: one warning naming
# "V8 56", its frames left native.
UNK=""
last="$(ls "$N" | sort -n | tail -1)"
if [ -n "$last" ] && cp "$N/$last/package/bin/node" "$R$D/node56" &&
  python3 - "$R$D/node56" <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b")
e = f.read(64)
shoff, = struct.unpack_from("<Q", e, 0x28)
shentsize, shnum = struct.unpack_from("<HH", e, 0x3a)
f.seek(shoff)
sh = [struct.unpack("<IIQQQQIIQQ", f.read(shentsize)) for _ in range(shnum)]
dynsym = [s for s in sh if s[1] == 11][0]
strtab = sh[dynsym[6]]
f.seek(strtab[4]); strs = f.read(strtab[5])
f.seek(dynsym[4]); syms = f.read(dynsym[5])
at = {}
for i in range(0, len(syms), 24):
    name = strs[struct.unpack_from("<I", syms, i)[0]:].split(b"\0", 1)[0]
    at[name] = (i, struct.unpack_from("<Q", syms, i + 8)[0])
major = at[b"_ZN2v88internal7Version6major_E"][0]
f.seek(dynsym[4] + major + 8)
f.write(struct.pack("<Q", at[b"v8dbg_class_Script__line_ends__Object"][1]))
PY
then
  mkdir -p "$R$D/unk" && mv "$R$D/node56" "$R$D/unk/node"
  cp "$ROOT/tests/ebpf/runtimes/chain.js" "$R$D/chain_unknown.js"
  for i in 1 2; do
    in_root "$R" env LD_LIBRARY_PATH="$D/lib" "$D/unk/node" "$D/chain_unknown.js" 1 &
    PIDS="$PIDS $!"
  done
  UNK=1
fi
wait $PIDS
sleep 3

# folded SERVICE [RANGE]: the service's folded stacks (root first), once they exist.
folded() {
  local f="$TMP/mnt/$1/cpu/all/${2:-all}/folded.txt" i
  for i in $(seq 1 60); do
    [ -e "$f" ] && break
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.5
  done
  cat "$f" 2>/dev/null
}
# share: "matched total start" sample weights (ms) of the folded stacks
# (stdin) holding the chain, from the thread's root (_start, or node::Start
# before node's unwind table is in), of all, and of the matched from _start.
share() {
  awk '{ v = $NF; st = substr($0, 1, length($0) - length($NF) - 1); total += v
      if (st ~ /^((_start|__libc_start_main|__libc_start_call_main|libc[.]so[.]6[+]0x[0-9a-f]+);)*node::Start[(]/ &&
          st ~ /(^|;)outerFn;middleFn;innerFn(;|$)/) { hit += v; if (st ~ /^_start;/) st0 += v } }
    END { printf "%d %d %d\n", hit / 1e6, total / 1e6, st0 / 1e6 }'
}

bad=""
lines_bad=""
for l in $LABELS; do
  for c in before after; do
    s="chain_${l}_$c.js"
    # Judged from 2 s after the daemon found the process's V8 (its first
    # samples, before its tables and V8 are read, are native: seconds on a
    # busy host); the share of all its samples is printed too.
    rg="$(found_range "$s" "V8 [0-9.]+ ")"
    t="$(folded "$s" "$rg")"
    echo "$t" > "$TMP/folded-$s.txt"
    read -r m n s0 <<<"$(echo "$t" | share)"
    read -r ma na _ <<<"$(folded "$s" | share)"
    pct=$(( n > 0 ? m * 100 / n : 0 ))
    echo "# node $l $c: $pct% of $n ms ($rg) in outerFn;middleFn;innerFn named, to the root ($(( m > 0 ? s0 * 100 / m : 0 ))% of those from _start); $(( na > 0 ? ma * 100 / na : 0 ))% of all $na ms"
    if [ "$n" -eq 0 ] || [ $((m * 100)) -lt $((WANT * n)) ]; then
      bad="$bad $l/$c:$pct%"
      echo "$t" | sort -k2 -nr | head -4 | cut -c1-600 | sed 's/^/#   /'
    fi
    raw="$(go tool pprof -raw "$TMP/mnt/$s/cpu/all/all/merged.pb.gz" 2>/dev/null)"
    for fl in innerFn:10 middleFn:17 outerFn:24; do
      echo "$raw" | grep -Eq " ${fl%%:*} /[^ ]*/${s//./\\.}:${fl#*:}( |$)" ||
        lines_bad="$lines_bad $l/$c/$fl"
    done
  done
done
if [ -z "$bad" ]; then ok "rt-node-named (each version and case >= $WANT%)"
else fail "rt-node-named" "under $WANT%:$bad"; fi
if [ -z "$lines_bad" ]; then ok "rt-node-lines"
else fail "rt-node-lines" "function (file:line) not found:$lines_bad"; fi
grep -o "V8 [0-9.]* (Node.js [0-9]*'s layout) in [^ ]*" "$TMP/daemon.log" | sed 's/ in .*\// in /' | sort | uniq -c | sed 's/^ */# daemon: /'
if [ -n "$UNK" ]; then
  n=$(grep -c "V8 56\.[0-9]* is not a version known" "$TMP/daemon.log")
  read -r m t <<<"$(folded chain_unknown.js | awk '{ v = $NF; t += v; if ($0 ~ /innerFn/) m += v } END { printf "%d %d\n", m / 1e6, t / 1e6 }')"
  echo "# unknown V8 56: $n warning(s), $m of $t ms named innerFn"
  grep -m1 "V8 56\." "$TMP/daemon.log" | sed 's/^.*profilefs: /# log: /'
  if [ "$n" -eq 1 ] && [ "$m" -eq 0 ] && [ "$t" -gt 0 ]; then ok "rt-node-unknown"
  else fail "rt-node-unknown" "$n warnings (want 1), $m of $t ms named"; fi
else
  fail "rt-node-unknown" "could not make a node of V8 56"
fi
if kill -0 "$PF_PID" 2>/dev/null; then ok "rt-node-daemon"
else fail "rt-node-daemon" "the daemon died"; fi

pf_stop
[ "${PF_RC:-1}" -eq 0 ] || { fail "rt-node-clean-stop" "daemon exited with $PF_RC"; grep -v "debug:" "$TMP/daemon.log" | tail -5 | sed 's/^/#   /'; }
pf_done
