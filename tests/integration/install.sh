#!/usr/bin/env bash
# make install / make uninstall: what lands where (DESTDIR, PREFIX), the man
# page rendered with man -l, the sysusers.d entry applied by systemd-sysusers
# to the staging root, the unit checked by systemd-analyze verify with its
# exposure score printed (systemd-analyze security --offline), the unit's
# capability bounding set equal to the one profilefs(8) documents, and the
# installed daemon run as root under exactly that bounding set with
# no_new_privs, as the service manager would, giving up root to a user, each
# capability of the set shown to be needed, and every system call the daemon
# makes shown to pass the unit's filter.
set -u
. "$(dirname "$0")/../lib.sh"

pf_setup
D="$TMP/dest"
BINDIR_BUILT="$(cd "$(dirname "$BIN")" && pwd)"
# -o: install the binary as built (perhaps with sanitizers), never rebuild it here.
mk() { make -s -C "$ROOT" -o "$BINDIR_BUILT/profilefs" BIN="$BINDIR_BUILT" "$@"; }

mk install DESTDIR="$D" PREFIX=/usr >"$TMP/install.log" 2>&1 \
  && ok "make install DESTDIR PREFIX=/usr" || fail "make install DESTDIR PREFIX=/usr" "$(tail -5 "$TMP/install.log")"
want="etc/default/profilefs usr/bin/profilefs usr/lib/systemd/system/profilefs.service usr/lib/sysusers.d/profilefs.conf usr/share/man/man8/profilefs.8.gz"
check_eq "installed files" "$(cd "$D" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')" "$want "
check_eq "installed modes" "$(stat -c %a "$D/usr/bin/profilefs" "$D/usr/lib/systemd/system/profilefs.service" "$D/etc/default/profilefs" | tr '\n' ' ')" "755 644 644 "
"$D/usr/bin/profilefs" --version | grep -q '^profilefs ' && ok "installed binary runs" || fail "installed binary runs"
U="$D/usr/lib/systemd/system/profilefs.service"
grep -q '^ExecStart=/usr/bin/profilefs serve ' "$U" && grep -q '^EnvironmentFile=-/etc/default/profilefs$' "$U" \
  && ok "unit paths filled in" || fail "unit paths filled in" "$(grep -E '^(ExecStart|EnvironmentFile)' "$U")"

# --- the man page ---------------------------------------------------------------
if command -v man >/dev/null; then
  page="$(MANWIDTH=80 man -l "$D/usr/share/man/man8/profilefs.8.gz" 2>"$TMP/man.err")"
  echo "$page" | grep -q '^PRIVILEGES' && echo "$page" | grep -q -- '--group-write' && [ ! -s "$TMP/man.err" ] \
    && ok "man -l renders profilefs(8)" || fail "man -l renders profilefs(8)" "$(head -3 "$TMP/man.err")"
  w="$(zcat "$D/usr/share/man/man8/profilefs.8.gz" | groff -man -ww -z 2>&1)"
  check_eq "profilefs(8) has no groff warnings" "$w" ""
  # Every serve flag of --help is in the man page.
  missing=""
  for f in $("$BIN" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    echo "$page" | grep -q -- "$f" || missing="$missing $f"
  done
  check_eq "every flag of --help is in profilefs(8)" "$missing" ""
else
  echo "ok - man -l renders profilefs(8) # SKIP man-db not installed"
fi

# --- the unit -------------------------------------------------------------------
# The bounding set the unit grants, as cap_ names, against the man page's list.
unit_caps="$(sed -n 's/^CapabilityBoundingSet=//p' "$U" | tr ' ' '\n' | tr 'A-Z' 'a-z' | sort | tr '\n' ' ')"
man_caps="$(sed -n '/^The capabilities needed to start/,/CapabilityBoundingSet=/p' "$ROOT/scripts/profilefs.8" \
  | grep -o 'cap_[a-z_]*' | sort -u | tr '\n' ' ')"
check_eq "unit's CapabilityBoundingSet= is the documented start-up set" "$unit_caps" "$man_caps"
# No option that would put the mount in a namespace of its own.
ns="$(grep -E '^(ProtectSystem|ProtectHome|PrivateTmp|PrivateDevices|PrivateMounts|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs|ProtectControlGroups|ProtectProc|ProcSubset|ReadWritePaths|ReadOnlyPaths|InaccessiblePaths|BindPaths|PrivateNetwork|PrivateIPC)=' "$U")"
check_eq "unit has no mount namespace (the mount must reach the host)" "$ns" ""

if command -v systemd-analyze >/dev/null; then
  # verify needs ExecStart's binary where the unit says: install under a real prefix.
  P="$TMP/prefix"
  mk install PREFIX="$P" SYSCONFDIR="$P/etc" >>"$TMP/install.log" 2>&1
  out="$(systemd-analyze verify --man=no "$P/lib/systemd/system/profilefs.service" 2>&1)"
  rc=$?
  [ "$rc" -eq 0 ] && [ -z "$out" ] && ok "systemd-analyze verify" || fail "systemd-analyze verify" "rc=$rc $out"
  score="$(systemd-analyze security --offline=yes "$P/lib/systemd/system/profilefs.service" 2>&1 | grep 'Overall exposure')"
  [ -n "$score" ] && ok "systemd-analyze security" || fail "systemd-analyze security" "no score"
  echo "# $score"
  mk uninstall PREFIX="$P" SYSCONFDIR="$P/etc" >>"$TMP/install.log" 2>&1
  check_eq "uninstall from PREFIX leaves nothing" "$(find "$P" -type f | wc -l)" 0
else
  echo "ok - systemd-analyze verify # SKIP systemd-analyze missing"
fi

if command -v systemd-sysusers >/dev/null; then
  systemd-sysusers --root="$D" >/dev/null 2>&1
  grep -q '^profilefs:' "$D/etc/passwd" 2>/dev/null && grep -q '^profilefs:' "$D/etc/group" 2>/dev/null \
    && ok "sysusers.d entry creates user and group profilefs" || fail "sysusers.d entry creates user and group profilefs"
  rm -f "$D"/etc/passwd* "$D"/etc/group* "$D"/etc/shadow* "$D"/etc/gshadow* "$D"/etc/.pwd.lock
fi

# --- the daemon under the unit's bounding set, as root, with no_new_privs --------
# ThreadSanitizer's own thread keeps root whatever the program does, so
# --user refuses to run in that build (tests/integration/privilege.sh).
tsan=0
ldd "$BIN" 2>/dev/null | grep -q libtsan && tsan=1
if [ "$tsan" = 1 ]; then
  echo "ok - daemon starts under the unit's bounding set # SKIP ThreadSanitizer build: --user refuses there"
elif [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  bset="-all$(for c in $unit_caps; do printf ',+%s' "${c#cap_}"; done)"
  ebpf=()
  [ -r /sys/kernel/btf/vmlinux ] && ebpf=(--ebpf --ebpf-period 2)
  chmod 755 "$TMP"
  mkdir -p "$TMP/state" && chmod 755 "$TMP/state"
  setpriv --bounding-set="$bset" --inh-caps=-all --no-new-privs \
    "$D/usr/bin/profilefs" serve --user nobody --data "$TMP/state/data" --group 4242 "${ebpf[@]}" \
    --http 127.0.0.1:0 -v "$TMP/mnt" >"$TMP/daemon.log" 2>&1 &
  PF_PID=$!
  for i in $(seq 1 100); do
    head -c 16 "$TMP/mnt/README.txt" 2>/dev/null | grep -q profilefs && break
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.1
  done
  if grep -q "running as nobody" "$TMP/daemon.log" && head -c 16 "$TMP/mnt/README.txt" 2>/dev/null | grep -q profilefs; then
    ok "daemon starts under the unit's bounding set and gives up root${ebpf:+ (with --ebpf)}"
  else
    fail "daemon starts under the unit's bounding set" "$(grep -v 'debug:' "$TMP/daemon.log" | tail -5)"
  fi
  pf_stop
  check_eq "it stops cleanly" "$PF_RC" 0

  # A daemon that stopped leaves its unmount helper to unmount the mount
  # point as it goes: wait for it, or it could unmount the next daemon's mount.
  helpers_wait() {
    local p busy
    for _ in $(seq 1 $((100 * ${PROFILEFS_SLOW:-1}))); do
      busy=0
      for p in $(pgrep -x profilefs-umnt); do
        [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$TMP" ] && busy=1
      done
      [ "$busy" = 0 ] && return 0
      sleep 0.1
    done
    echo "# an unmount helper in $TMP is still there"
  }
  helpers_wait

  # And nothing in that set is there for nothing: without each one, start-up
  # stops with a reason (cap_syslog: kernel frames go unnamed where kallsyms
  # hides addresses; cap_bpf: kept only by kernels before 6.5, see profilefs(8)).
  if [ ${#ebpf[@]} -gt 0 ]; then
    for c in $unit_caps; do
      c="${c#cap_}"
      case "$c" in bpf|syslog) continue ;; esac
      rm -rf "$TMP/state/data" && mkdir -m 700 "$TMP/state/data"
      out="$(timeout 60 setpriv --bounding-set="$(echo "$bset" | sed "s/,+$c\b//")" --inh-caps=-all --no-new-privs \
        "$D/usr/bin/profilefs" serve --user nobody --data "$TMP/state/data" "${ebpf[@]}" "$TMP/mnt" 2>&1)"
      rc=$?
      umount -l "$TMP/mnt" 2>/dev/null
      helpers_wait
      [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && echo "$out" | grep -qiE "warning|profilefs: " \
        && ok "without cap_$c start-up stops: $(echo "$out" | grep -vE 'created mount point|handing the data|data in|sampling|mounted on' | head -1 | sed 's/^[0-9TZ:-]* //' | cut -c1-140)" \
        || fail "without cap_$c start-up stops" "rc=$rc $(echo "$out" | tail -2)"
    done
  fi
else
  echo "ok - daemon starts under the unit's bounding set # SKIP needs root, setpriv and user nobody"
fi

# --- every system call the daemon makes passes the unit's SystemCallFilter= ------
# The service manager cannot run here, so the filter is checked against what
# the daemon really calls (strace -f) while it starts, gives up root, samples,
# takes a profile through ingest/ and one over HTTP, serves files and stops.
if [ "$tsan" = 1 ]; then
  echo "ok - system calls within SystemCallFilter= # SKIP ThreadSanitizer build: --user refuses there"
elif [ "$(id -u)" -eq 0 ] && command -v strace >/dev/null && command -v systemd-analyze >/dev/null; then
  expand() {
    systemd-analyze syscall-filter "$1" | sed 1d | sed 's/^ *//' | grep -v -e '^#' -e '^$' |
      while read -r n; do case "$n" in @*) expand "$n" ;; *) echo "$n" ;; esac; done
  }
  for t in $(sed -n 's/^SystemCallFilter=//p' "$U"); do
    case "$t" in @*) expand "$t" ;; *) echo "$t" ;; esac
  done | sort -u >"$TMP/allowed"
  rm -rf "$TMP/state/data"
  ebpf=()
  [ -r /sys/kernel/btf/vmlinux ] && ebpf=(--ebpf --ebpf-period 2)
  # LeakSanitizer's check at exit attaches to every thread, which strace holds
  # already: no leak check in this one run (the other tests make it).
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout -s KILL 300 \
    strace -f -qq -c -o "$TMP/strace" "$D/usr/bin/profilefs" serve --user nobody --data "$TMP/state/data" \
    --group 4242 "${ebpf[@]}" --http 127.0.0.1:0 -v "$TMP/mnt" >"$TMP/daemon.log" 2>&1 &
  PF_PID=$!
  # Under strace -f every call of every thread stops twice, and --ebpf reads
  # each running process at start: on a loaded host with ASan the mount can
  # take tens of seconds. Wait for it (and for the HTTP line) up to 90 s
  # times PROFILEFS_SLOW.
  mounted=0
  for i in $(seq 1 $((900 * ${PROFILEFS_SLOW:-1}))); do
    if head -c 16 "$TMP/mnt/README.txt" 2>/dev/null | grep -q profilefs &&
       grep -q 'listening on' "$TMP/daemon.log"; then mounted=1; break; fi
    kill -0 "$PF_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ "$mounted" = 1 ] || { echo "# the daemon under strace did not mount (after $((i / 10)) s):"; tail -20 "$TMP/daemon.log" | sed 's/^/# /'; }
  port="$(sed -n 's/.*listening on .*:\([0-9][0-9]*\) .*/\1/p' "$TMP/daemon.log" | head -1)"
  prof="$(ls "$REAL"/google-pprof/sample.cpu "$REAL"/*/*.pb.gz 2>/dev/null | head -1)"
  cp "$prof" "$TMP/mnt/ingest/sc/auto/"
  code="$(curl -s -o /dev/null -w '%{http_code}' -XPOST "http://127.0.0.1:$port/api/0/profiles?service=h&type=auto" \
    --data-binary @"$prof")"
  sleep 3
  cat "$TMP/mnt/sc/cpu/all/all/merged.pb.gz" "$TMP/mnt/sc/cpu/all/all/flamegraph.svg" >/dev/null 2>&1
  curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
  sp="$(pgrep -P "$PF_PID" -x strace | head -1)"
  kill -TERM "$(pgrep -P "${sp:-0}" -x profilefs | head -1)" 2>/dev/null
  wait "$PF_PID" 2>/dev/null
  PF_PID=
  awk 'NR > 2 && $NF !~ /^-/ && $NF != "total" { print $NF }' "$TMP/strace" | sort -u >"$TMP/used"
  n="$(wc -l <"$TMP/used")"
  extra="$(comm -23 "$TMP/used" "$TMP/allowed" | tr '\n' ' ')"
  if [ "$n" -eq 0 ]; then
    # strace recorded nothing (it could not attach on a starved host): no measurement.
    echo "ok - system calls within SystemCallFilter= # SKIP strace recorded no call"
  else
  [ "$n" -gt 20 ] && grep -q '^capset$' "$TMP/used" && [ "$code" = 200 ] && [ -z "$extra" ] \
    && ok "the $n system calls the daemon made are all in the unit's SystemCallFilter=" \
    || fail "system calls within SystemCallFilter=" "used $n; mounted $mounted; HTTP push $code; outside the filter: $extra"
  fi
else
  echo "ok - system calls within SystemCallFilter= # SKIP needs root, strace and systemd-analyze"
fi

# --- the flags file is the administrator's ---------------------------------------
echo '# changed' >>"$D/etc/default/profilefs"
mk install DESTDIR="$D" PREFIX=/usr >>"$TMP/install.log" 2>&1
grep -q '^# changed' "$D/etc/default/profilefs" && ok "install keeps a changed flags file" \
  || fail "install keeps a changed flags file"
mk uninstall DESTDIR="$D" PREFIX=/usr >>"$TMP/install.log" 2>&1
check_eq "uninstall removes all but the changed flags file" \
  "$(cd "$D" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')" "etc/default/profilefs "

pf_done
