#!/usr/bin/env bash
# Ruby versions: the eBPF sampler names Ruby frames of Debian's ruby3.1 (the
# host's) and of ruby3.3 run in the trixie root as a container (its own
# mount and PID namespaces: libruby found through /proc/PID/root; a libruby
# that exports neither ruby_current_ec nor rb_vm_exec), no flags. For each
# version a program with a three-deep named chain below its top level
# (<main> -> level_one -> level_two -> level_three) runs once started before
# the daemon and once after: the share of its samples whose stack holds the
# chain, each frame with its file and line, and reaches the process's root
# (_start) is printed and must be >= 90%. Needs root, a kernel with BTF,
# go (pprof) and the trixie root.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="rt-ruby-3.1-before rt-ruby-3.1-after rt-ruby-3.3-before rt-ruby-3.3-after rt-ruby-daemon"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v go >/dev/null || skip_all "go not installed"
RUBY31="$(command -v ruby3.1 || true)"
[ -n "$RUBY31" ] || skip_all "ruby3.1 not installed"
need_root trixie
R="$(roots_dir)/trixie"
[ -x "$R/usr/bin/ruby3.3" ] || { fail "rt-ruby-3.3" "no ruby3.3 in $R"; pf_done; exit 1; }

pf_setup
IN="/tmp/rtruby.$$"		# inside the root
mkdir -p "$R$IN"
cleanup_root() { rm -rf "${R:?}$IN"; pf_cleanup; }
trap cleanup_root EXIT
SECS=14

# The chain: level_three spins (calling a C method) for the seconds given.
chain() {
  cat <<'RB'
def level_three(t_end)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end
  x
end
def level_two(t_end)
  level_three(t_end)
end
def level_one(t_end)
  level_two(t_end)
end
level_one(Process.clock_gettime(Process::CLOCK_MONOTONIC) + ARGV[0].to_f)
RB
}
for v in 31 33; do for c in before after; do
  chain >"$R$IN/rbchain${v}_$c.rb"
done; done
chmod -R a+rX "$R$IN"

# start VERSION CASE: the program in the background; its pid in $!.
start() {
  if [ "$1" = 31 ]; then
    "$RUBY31" --disable-gems "$R$IN/rbchain31_$2.rb" "$SECS" &
  else
    in_root "$R" /usr/bin/ruby3.3 --disable-gems "$IN/rbchain33_$2.rb" "$SECS" &
  fi
}

start 31 before; P1=$!
start 33 before; P2=$!
sleep 2
PORT=$(free_port)
pf_start --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }
start 31 after; P3=$!
start 33 after; P4=$!
wait $P1 $P2 $P3 $P4
sleep 4

# share SERVICE FILE: "hit total" samples of the service's merged profile
# whose stack holds <main> -> level_one -> level_two -> level_three, each
# named with FILE and its line, and whose root frame is _start.
share() {
  go tool pprof -raw "$TMP/mnt/$1/cpu/all/all/merged.pb.gz" 2>/dev/null | python3 -c '
import re, sys
want = [("level_three", 3), ("level_two", 7), ("level_one", 10), ("<main>", 12)]
path = sys.argv[1]
locs, samples, part, cur = {}, [], None, None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("Samples:"): part = "s"; continue
    if line.startswith("Locations"): part = "l"; continue
    if line.startswith("Mappings"): part = None; continue
    if part == "s":
        m = re.match(r"\s*(\d+)\s+\d+:\s*([\d ]+)$", line)
        if m: samples.append((int(m.group(1)), [int(x) for x in m.group(2).split()]))
    elif part == "l":
        m = re.match(r"\s*(\d+): 0x[0-9a-f]+(?: M=\d+)? ?(.*)$", line)
        if m:
            cur = int(m.group(1)); locs[cur] = []; rest = m.group(2)
        elif cur is not None and line.strip(): rest = line.strip()
        else: continue
        # "name file:line s=N", the name pprof shortened then given whole in ()
        f = re.match(r"(\S*) (\S*):(\d+) s=\d+(?:\((.*)\))?$", rest)
        locs[cur].append((f.group(4) or f.group(1), f.group(2), int(f.group(3))) if f else ("", "", 0))
hit = tot = 0
for n, ids in samples:
    fr = [x for i in ids for x in locs.get(i, [])]	# leaf first
    tot += n
    names = [x[0] for x in fr]
    if not fr or fr[-1][0] != "_start" or "level_three" not in names: continue
    k = names.index("level_three")
    if all(k + j < len(fr) and fr[k + j] == (w, path, l) for j, (w, l) in enumerate(want)):
        hit += n
print(hit, tot)' "$2"
}
for v in 31 33; do for c in before after; do
  svc="rbchain${v}_$c.rb"
  if [ "$v" = 31 ]; then file="$R$IN/$svc"; else file="$IN/$svc"; fi
  read -r h t <<<"$(share "$svc" "$file")"
  pct=$(awk -v h="$h" -v t="$t" 'BEGIN { printf "%.1f", t ? 100 * h / t : 0 }')
  name="rt-ruby-${v:0:1}.${v:1:1}-$c"
  echo "# Ruby ${v:0:1}.${v:1:1}, started $c the daemon: $pct% of $t samples named <main>;level_one;level_two;level_three with file:line, reaching _start"
  if [ "$t" -gt 0 ] && [ $((h * 100)) -ge $((t * 90)) ]; then ok "$name ($pct% of $t samples)"
  else
    fail "$name" "$h of $t samples ($pct%), want >= 90%"
    sort -k2 -nr "$TMP/mnt/$svc/cpu/all/all/folded.txt" 2>/dev/null | head -4 | cut -c1-300 | sed 's/^/#   /'
  fi
done; done
grep -E 'Ruby .*(version|not know)' "$TMP/daemon.log" | head -3 | sed 's/^/# /'
if kill -0 "$PF_PID" 2>/dev/null; then ok "rt-ruby-daemon"; else fail "rt-ruby-daemon" "the daemon died"; fi
pf_stop
pf_done
