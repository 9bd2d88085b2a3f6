#!/usr/bin/env bash
# Ruby versions: the eBPF sampler names Ruby frames of Debian's ruby3.1 (the
# host's) and of ruby3.3 run in the trixie root as a container (its own
# mount and PID namespaces: libruby found through /proc/PID/root; a libruby
# that exports neither ruby_current_ec nor rb_vm_exec), no flags. For each
# version a program with a three-deep named chain below its top level
# (<main> -> level_one -> level_two -> level_three) runs once started before
# the daemon and once after: the share of its samples whose stack holds the
# chain, each frame with its file and line, and reaches the process's root
# (_start) is printed and must be >= 90%. A libruby whose ruby_version says
# 3.9.9 (a copy of 3.1's, that string changed) is refused: one log line
# naming the version for two processes, no Ruby frames. Needs root, a kernel with BTF,
# go (pprof) and the trixie root.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="rt-ruby-3.1-before rt-ruby-3.1-after rt-ruby-3.3-before rt-ruby-3.3-after rt-ruby-unknown rt-ruby-daemon"
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
# The programs run RUN_S seconds; the share is measured over the last WIN_S
# seconds before they end (the daemon's first seconds, when it reads a new
# process's files and loads its unwind tables, left out; the whole run's
# share is printed beside it).
RUN_S=30
WIN_S=16

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

# start VERSION CASE SECONDS: the program in the background; its pid in $!.
start() {
  if [ "$1" = 31 ]; then
    "$RUBY31" --disable-gems "$R$IN/rbchain31_$2.rb" "$3" &
  else
    in_root "$R" /usr/bin/ruby3.3 --disable-gems "$IN/rbchain33_$2.rb" "$3" &
  fi
}

# The ones started before end after the others: the window holds them all.
start 31 before $((RUN_S + 10)); P1=$!
start 33 before $((RUN_S + 10)); P2=$!
sleep 2
PORT=$(free_port)
pf_start --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0 --http "127.0.0.1:$PORT" ||
  { fail "ebpf daemon start"; pf_done; exit 1; }
T0=$(date +%s)
start 31 after "$RUN_S"; P3=$!
start 33 after "$RUN_S"; P4=$!
# A version the daemon does not know: 3.1's libruby, its ruby_version "3.9.9".
LIBRUBY="$(ls /usr/lib/*-linux-gnu/libruby-3.1.so.3.1 2>/dev/null | head -1)"
UNK=""
if [ -n "$LIBRUBY" ] && mkdir -p "$TMP/unk" && cp "$LIBRUBY" "$TMP/unk/libruby-3.1.so.3.1" &&
  python3 - "$TMP/unk/libruby-3.1.so.3.1" <<'PY'
import struct, subprocess, sys
f = sys.argv[1]
sym = [l.split() for l in subprocess.run(["readelf", "-W", "--dyn-syms", f], capture_output=True,
       text=True).stdout.splitlines()]
va = next(int(x[1], 16) for x in sym if len(x) >= 8 and x[7] == "ruby_version")
for l in subprocess.run(["readelf", "-W", "-l", f], capture_output=True, text=True).stdout.splitlines():
    x = l.split()
    if x and x[0] == "LOAD" and int(x[2], 16) <= va < int(x[2], 16) + int(x[4], 16):
        off = va - int(x[2], 16) + int(x[1], 16)
b = bytearray(open(f, "rb").read())
assert b[off:off + 4] == b"3.1."
b[off:off + 5] = b"3.9.9"
open(f, "wb").write(b)
PY
then
  chain >"$TMP/unk/rbunknown.rb"
  for i in 1 2; do LD_LIBRARY_PATH="$TMP/unk" "$RUBY31" --disable-gems "$TMP/unk/rbunknown.rb" 4 & UNK="$UNK $!"; sleep 1; done
fi
wait $UNK
sleep $((T0 + RUN_S - 3 - $(date +%s)))
# The last WIN_S seconds, read while the programs still run (the last period flushed).
for v in 31 33; do for c in before after; do
  cp "$TMP/mnt/rbchain${v}_$c.rb/cpu/all/last-${WIN_S}s/merged.pb.gz" "$TMP/win${v}_$c.pb.gz" 2>/dev/null
done; done
wait $P1 $P2 $P3 $P4
sleep 3

# share PROFILE FILE: "hit total" samples of the profile
# whose stack holds <main> -> level_one -> level_two -> level_three, each
# named with FILE and its line, and whose root frame is _start.
share() {
  go tool pprof -raw "$1" 2>/dev/null | python3 -c '
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
  read -r h t <<<"$(share "$TMP/win${v}_$c.pb.gz" "$file")"
  read -r ha ta <<<"$(share "$TMP/mnt/$svc/cpu/all/all/merged.pb.gz" "$file")"
  pct=$(awk -v h="$h" -v t="$t" 'BEGIN { printf "%.1f", t ? 100 * h / t : 0 }')
  pcta=$(awk -v h="$ha" -v t="$ta" 'BEGIN { printf "%.1f", t ? 100 * h / t : 0 }')
  name="rt-ruby-${v:0:1}.${v:1:1}-$c"
  echo "# Ruby ${v:0:1}.${v:1:1}, started $c the daemon: $pct% of $t samples (last ${WIN_S} s; whole run: $pcta% of $ta) named <main>;level_one;level_two;level_three with file:line, reaching _start"
  if [ "$t" -gt 0 ] && [ $((h * 100)) -ge $((t * 90)) ]; then ok "$name ($pct% of $t samples)"
  else
    fail "$name" "$h of $t samples ($pct%), want >= 90%"
    sort -k2 -nr "$TMP/mnt/$svc/cpu/all/all/folded.txt" 2>/dev/null | head -4 | cut -c1-300 | sed 's/^/#   /'
  fi
done; done
if [ -n "$UNK" ]; then
  n=$(grep -c 'Ruby 3\.9\.9 .*not know' "$TMP/daemon.log")
  grep -m1 'Ruby 3\.9\.9' "$TMP/daemon.log" | sed 's/^/# log: /'
  f="$(cat "$TMP/mnt/rbunknown.rb/cpu/all/all/folded.txt" 2>/dev/null)"
  if [ "$n" -eq 1 ] && [ -n "$f" ] && ! echo "$f" | grep -q 'level_one'; then
    ok "rt-ruby-unknown (one log line for two processes; sampled, no Ruby frames)"
  else fail "rt-ruby-unknown" "$n log lines; folded: $(echo "$f" | head -2 | cut -c1-200)"; fi
else
  echo "ok - rt-ruby-unknown # SKIP no libruby-3.1 file to copy"
fi
if kill -0 "$PF_PID" 2>/dev/null; then ok "rt-ruby-daemon"; else fail "rt-ruby-daemon" "the daemon died"; fi
pf_stop
pf_done
