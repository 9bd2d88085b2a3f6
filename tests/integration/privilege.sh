#!/usr/bin/env bash
# Who may use the mount, and running with least privilege: the default mount
# is its owner's alone, --allow-other lets everyone read, --group GROUP lets
# that group read and --group-write lets it ingest, each tried as another user
# (nobody, through setpriv) with ls, cat and cp; serve --user gives up root
# once mounted, which /proc/PID/status shows (uid and exact capabilities, in
# every thread), the store stays usable, eBPF sampling still names frames of
# other users' processes (one running from a deleted binary), and the tree
# is unmounted on stop by the helper that keeps CAP_SYS_ADMIN alone. Then the
# HTTP address rules: a non-loopback --http needs a token, which can come
# from a file and then does not show in ps.
set -u
. "$(dirname "$0")/../lib.sh"

NAMES="private-ls private-cat private-cp private-modes allow-other-read allow-other-no-ingest allow-other-modes group-member-reads group-nonmember group-no-write group-write-member group-write-nonmember group-write-stored group-modes user-uid user-nobody-warned user-caps user-threads user-helper user-data-owner user-store-works user-nonroot-refused user-ebpf-uid user-ebpf-caps user-ebpf-samples user-ebpf-deleted user-stop-unmounts user-stop-exit user-root-data-handed-over user-crash-unmounts user-helper-own-mount http-public-refused http-insecure http-token-file http-token-not-in-ps nonroot-daemon nonroot-daemon-stops"
skip_all() { for n in $NAMES; do echo "ok - $n # SKIP $1"; done; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root (it mounts as root and tries other users)"
command -v setpriv >/dev/null || skip_all "setpriv missing (util-linux)"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"

pf_setup
chmod 755 "$TMP"
M="$TMP/mnt"
NOGROUP="$(id -gn nobody)"
GID=4242	# a group nobody is put in with setpriv --groups; no /etc/group entry needed
PROF=""
for f in "$REAL"/google-pprof/sample.cpu "$REAL"/*/*.pb.gz; do
  [ -f "$f" ] && { PROF="$f"; break; }
done
cp "$PROF" "$TMP/p.pb" && chmod 644 "$TMP/p.pb"

# as_nobody [--groups G] CMD...: run CMD as nobody (no capabilities).
as_nobody() {
  local g=(--clear-groups)
  if [ "$1" = --groups ]; then g=(--groups "$2"); shift 2; fi
  setpriv --reuid=nobody --regid="$NOGROUP" "${g[@]}" --inh-caps=-all --bounding-set=-all "$@"
}
# status_field PID FIELD: the value of FIELD in /proc/PID/status
status_field() { awk -v f="$2:" '$1 == f { print $2; exit }' "/proc/$1/status"; }
# caps_hex BIT...: the hex mask /proc shows for those capability numbers
caps_hex() { local m=0 b; for b in "$@"; do m=$((m | (1 << b))); done; printf '%016x' "$m"; }
mounted() { grep -q " $M fuse" /proc/self/mounts; }
# denied NAME CMD...: ok if CMD fails with "Permission denied" (not some other error)
denied() {
  local n="$1" out; shift
  if out="$("$@" 2>&1 >/dev/null)"; then fail "$n" "allowed: $*"
  elif echo "$out" | grep -q "Permission denied"; then ok "$n"
  else fail "$n" "failed otherwise: $out"; fi
}

# --- default: private to the user who mounts ---------------------------------
pf_start || { fail "daemon starts"; pf_done; exit 1; }
cp "$TMP/p.pb" "$M/ingest/svc/auto/" || fail "root ingests" "cp failed"
denied "private-ls" as_nobody ls "$M"
denied "private-cat" as_nobody cat "$M/README.txt"
denied "private-cp" as_nobody cp "$TMP/p.pb" "$M/ingest/injected/cpu/"
check_eq "private-modes" "$(stat -c '%a %U' "$M" "$M/README.txt" "$M/ingest" | tr '\n' ' ')" "700 root 600 root 700 root "
pf_stop

# --- --allow-other: everyone reads, the owner alone ingests -------------------
pf_start --allow-other || { fail "daemon starts (--allow-other)"; pf_done; exit 1; }
as_nobody cat "$M/README.txt" 2>/dev/null | grep -q profilefs && as_nobody ls "$M/svc" >/dev/null 2>&1 \
  && ok "allow-other-read" || fail "allow-other-read" "nobody cannot read"
denied "allow-other-no-ingest" as_nobody cp "$TMP/p.pb" "$M/ingest/injected/cpu/"
check_eq "allow-other-modes" "$(stat -c '%a' "$M" "$M/README.txt" "$M/ingest" | tr '\n' ' ')" "755 644 755 "
pf_stop

# --- --group: the group reads; --group-write: and ingests ---------------------
pf_start --group "$GID" || { fail "daemon starts (--group)"; pf_done; exit 1; }
as_nobody --groups "$GID" cat "$M/README.txt" 2>/dev/null | grep -q profilefs \
  && as_nobody --groups "$GID" ls "$M/svc" >/dev/null 2>&1 && ok "group-member-reads" || fail "group-member-reads"
denied "group-nonmember (cat)" as_nobody cat "$M/README.txt"
denied "group-nonmember (ls)" as_nobody ls "$M"
denied "group-no-write" as_nobody --groups "$GID" cp "$TMP/p.pb" "$M/ingest/injected/cpu/"
pf_stop
pf_start --group "$GID" --group-write || { fail "daemon starts (--group-write)"; pf_done; exit 1; }
as_nobody --groups "$GID" cp "$TMP/p.pb" "$M/ingest/member/cpu/" 2>/dev/null \
  && ok "group-write-member" || fail "group-write-member" "a member could not ingest"
denied "group-write-nonmember" as_nobody cp "$TMP/p.pb" "$M/ingest/outsider/cpu/"
sleep 2
[ -d "$M/member/cpu" ] && [ ! -e "$M/outsider" ] && ok "group-write-stored" \
  || fail "group-write-stored" "$(ls "$M" | tr '\n' ' ')"
check_eq "group-modes" "$(stat -c '%a %g' "$M" "$M/README.txt" "$M/ingest" | tr '\n' ' ')" \
  "770 $GID 640 $GID 770 $GID "
pf_stop

out="$(as_nobody "$BIN" serve --data "$TMP/x" --user root "$TMP/x-mnt" 2>&1)"
rc=$?
[ "$rc" -eq 2 ] && echo "$out" | grep -q "only root" && ok "user-nonroot-refused" || fail "user-nonroot-refused" "rc=$rc $out"

# ThreadSanitizer runs a thread of its own that blocks every signal and that
# glibc does not know: it keeps root's uid and capabilities whatever the
# program does, so --user must refuse to run there, and says why.
if ldd "$BIN" 2>/dev/null | grep -q libtsan; then
  out="$(timeout 60 "$BIN" serve --data "$TMP/tsan-data" --user nobody "$M" 2>&1)"
  rc=$?
  [ "$rc" -ne 0 ] && echo "$out" | grep -q "still has uid/gid or capabilities of root" \
    && ok "user-tsan-refuses (ThreadSanitizer's own thread cannot give up root)" \
    || fail "user-tsan-refuses" "rc=$rc $(echo "$out" | tail -3)"
  umount -l "$M" 2>/dev/null
  for n in user-uid user-nobody-warned user-caps user-threads user-helper user-store-works user-data-owner user-stop-exit \
    user-stop-unmounts user-root-data-handed-over user-crash-unmounts user-helper-own-mount user-ebpf-uid user-ebpf-caps \
    user-ebpf-samples user-ebpf-deleted; do
    echo "ok - $n # SKIP ThreadSanitizer build (its thread keeps root)"
  done
else
# --- --user: give up root once mounted --------------------------------------
# The data directory left by the runs above belongs to root: it is handed over.
pf_start --user nobody -v || { fail "daemon starts (--user)"; pf_done; exit 1; }
# nobody is shared with other programs: the daemon says so.
if grep -q -- "--user nobody: a user other programs run as" "$TMP/daemon.log"; then ok "user-nobody-warned"
else fail "user-nobody-warned" "no warning in the log"; fi
check_eq "user-uid" "$(awk '$1 == "Uid:" { print $2, $3, $4, $5 }' /proc/$PF_PID/status)" "65534 65534 65534 65534"
check_eq "user-caps" "$(status_field $PF_PID CapPrm) $(status_field $PF_PID CapEff) $(status_field $PF_PID CapInh) $(status_field $PF_PID CapAmb)" \
  "$(caps_hex) $(caps_hex) $(caps_hex) $(caps_hex)"
bad=0
for t in /proc/$PF_PID/task/*; do
  [ "$(awk '$1 == "Uid:" { print $2 }' "$t/status")" = 65534 ] && [ "$(status_field "${t#/proc/}" CapPrm)" = "$(caps_hex)" ] || bad=$((bad + 1))
done
check_eq "user-threads (every thread is nobody without capabilities)" "$bad" 0
helper="$(pgrep -P "$PF_PID" | head -1)"
if [ -n "$helper" ]; then
  # Permitted, not effective until it unmounts; nothing else can come back; no ptrace.
  check_eq "user-helper (the unmount helper keeps cap_sys_admin alone, not effective)" \
    "$(awk '$1 == "Uid:" { print $2 }' /proc/$helper/status) $(status_field "$helper" CapEff) $(status_field "$helper" CapPrm) $(status_field "$helper" CapBnd) $(status_field "$helper" NoNewPrivs) $(stat -c %U /proc/$helper/status)" \
    "65534 $(caps_hex) $(caps_hex 21) $(caps_hex 21) 1 root"
else
  fail "user-helper" "no helper process"
fi
cp "$TMP/p.pb" "$M/ingest/asuser/auto/" && sleep 1.5 && [ -d "$M/asuser" ] && ok "user-store-works" \
  || fail "user-store-works" "ingest failed after giving up root"
check_eq "user-data-owner (every file of the store is nobody's)" "$(find "$TMP/data" ! -user nobody | wc -l)" 0
pf_stop
check_eq "user-stop-exit" "$PF_RC" 0
mounted && fail "user-stop-unmounts" "still mounted" || ok "user-stop-unmounts"
[ -z "$helper" ] || ! kill -0 "$helper" 2>/dev/null || fail "user-stop-unmounts" "helper still runs"
grep -q "handing the data directory over to nobody" "$TMP/daemon.log" && ok "user-root-data-handed-over" \
  || fail "user-root-data-handed-over"

# A crash (kill -9): the helper still unmounts, so no stale mount is left.
if pf_start --user nobody; then
  mounted || fail "user-crash-unmounts" "the mount does not show in /proc/self/mounts"
  kill -9 "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID=
  for i in $(seq 1 50); do mounted || break; sleep 0.1; done
  mounted && fail "user-crash-unmounts" "still mounted after kill -9" || ok "user-crash-unmounts"
  umount -l "$M" 2>/dev/null
else
  fail "user-crash-unmounts" "daemon did not start"
fi

# The helper unmounts its own daemon's tree only: once that tree was
# unmounted by someone else, not what is mounted at the same place after it
# (the kernel gives the freed mount ID to the next mount), even when its
# daemon ends only later.
if pf_start --user nobody; then
  helper="$(pgrep -P "$PF_PID" | head -1)"
  kill -STOP "$PF_PID"
  umount -l "$M"
  for i in $(seq 1 $((100 * ${PROFILEFS_SLOW:-1}))); do
    grep -q "unmounted by someone else" "$TMP/daemon.log" && break; sleep 0.1
  done
  mount -t tmpfs pfs-helper-test "$M"
  kill -9 "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID=
  for i in $(seq 1 $((100 * ${PROFILEFS_SLOW:-1}))); do kill -0 "$helper" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$helper" 2>/dev/null; then fail "user-helper-own-mount" "the helper did not end"
  elif ! grep -q " $M tmpfs" /proc/self/mounts; then fail "user-helper-own-mount" "the helper unmounted a tmpfs mounted after its tree"
  elif ! grep -q "unmounted by someone else: nothing left to unmount" "$TMP/daemon.log"; then fail "user-helper-own-mount" "no word of it in the log"
  else ok "user-helper-own-mount"; fi
  umount "$M" 2>/dev/null
else
  fail "user-helper-own-mount" "daemon did not start"
fi

# --- --user with --ebpf: the sampler's capabilities only, and it still works --
if [ -r /sys/kernel/btf/vmlinux ] && command -v cc >/dev/null && command -v go >/dev/null; then
  cc -O1 -fno-omit-frame-pointer -o "$TMP/efp_priv" "$ROOT/tests/ebpf/spin.c" &&
    cp "$TMP/efp_priv" "$TMP/efp_privdel"
  if pf_start --user nobody --ebpf=99 --ebpf-period 2 --ebpf-min-samples 0; then
    check_eq "user-ebpf-uid" "$(awk '$1 == "Uid:" { print $2 }' /proc/$PF_PID/status)" 65534
    # cap_dac_read_search (2), cap_sys_ptrace (19), cap_checkpoint_restore (40), as documented,
    # and cap_bpf (39) where bpf(2) needs it for every command (before 6.5 with
    # kernel.unprivileged_bpf_disabled set).
    want="$(caps_hex 2 19 40)"
    kv="$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')"
    if [ "$kv" -lt 6005 ] && [ "$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null || echo 0)" != 0 ]; then
      want="$(caps_hex 2 19 39 40)"
    fi
    check_eq "user-ebpf-caps" "$(status_field $PF_PID CapPrm) $(status_field $PF_PID CapEff)" "$want $want"
    # Root's processes, one running from a deleted binary: the user needs the kept caps for them.
    "$TMP/efp_priv" 3000 &
    p1=$!
    "$TMP/efp_privdel" 3000 &
    p2=$!
    sleep 0.2
    rm -f "$TMP/efp_privdel"
    wait $p1 $p2
    top_of() {
      local i
      for i in $(seq 1 30); do
        [ -e "$M/$1/cpu/all/all/merged.pb.gz" ] && break
        sleep 0.5
      done
      GOCACHE="${GOCACHE:-$TMP/gocache}" go tool pprof -top "$M/$1/cpu/all/all/merged.pb.gz" 2>/dev/null
    }
    top_of efp_priv | grep -q ' inner$' && ok "user-ebpf-samples" || fail "user-ebpf-samples" "no named frame 'inner'"
    top_of efp_privdel | grep -q ' inner$' && ok "user-ebpf-deleted" || fail "user-ebpf-deleted" "no named frame from the deleted binary"
    pf_stop
  else
    fail "user-ebpf-uid" "daemon did not start"
  fi
else
  for n in user-ebpf-uid user-ebpf-caps user-ebpf-samples user-ebpf-deleted; do echo "ok - $n # SKIP no BTF, cc or go"; done
fi

fi

# --- HTTP --------------------------------------------------------------------
out="$("$BIN" serve --data "$TMP/data" --http 0.0.0.0:0 "$M" 2>&1)"
rc=$?
[ "$rc" -eq 2 ] && echo "$out" | grep -q -- "--http-insecure" && ok "http-public-refused" \
  || fail "http-public-refused" "rc=$rc $out"
pf_start --http 0.0.0.0:0 --http-insecure && ok "http-insecure" || fail "http-insecure"
pf_stop
TOKEN="t0k-$RANDOM$RANDOM"
printf '%s\n' "$TOKEN" >"$TMP/token" && chmod 600 "$TMP/token"
: >"$TMP/daemon.log"
if pf_start -v --http 127.0.0.1:0 --http-token-file "$TMP/token"; then
  port="$(sed -n 's/.*listening on .*:\([0-9][0-9]*\).*/\1/p' "$TMP/daemon.log" | head -1)"
  c1="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/0/services")"
  c2="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port/api/0/services")"
  check_eq "http-token-file (401 without, 200 with the token)" "$c1 $c2" "401 200"
  tr '\0' ' ' </proc/$PF_PID/cmdline | grep -q "$TOKEN" && fail "http-token-not-in-ps" || ok "http-token-not-in-ps"
  pf_stop
else
  fail "http-token-file" "daemon did not start"
fi

# --- a daemon started by an ordinary user (fusermount3, no root at all) -------
# Debian's /dev/fuse is mode 0666; a container may make it 0600: open it for this run.
fuse_mode="$(stat -c %a /dev/fuse 2>/dev/null)"
as_nobody test -w /dev/fuse || chmod o+rw /dev/fuse 2>/dev/null
if as_nobody test -w /dev/fuse; then
  mkdir -p "$TMP/u" && chown nobody "$TMP/u"
  # As a login would start it: the full bounding set, so setuid fusermount3 can mount.
  setpriv --reuid=nobody --regid="$NOGROUP" --clear-groups --inh-caps=-all \
    "$BIN" serve --data "$TMP/u/data" "$TMP/u/mnt" >"$TMP/u.log" 2>&1 &
  up=$!
  for i in $(seq 1 50); do as_nobody cat "$TMP/u/mnt/README.txt" >/dev/null 2>&1 && break; sleep 0.2; done
  as_nobody cat "$TMP/u/mnt/README.txt" 2>/dev/null | grep -q profilefs && ! cat "$TMP/u/mnt/README.txt" >/dev/null 2>&1 \
    && ok "nonroot-daemon (mounted by nobody, private to nobody)" || fail "nonroot-daemon" "$(tail -3 "$TMP/u.log")"
  kill -TERM $up; wait $up
  check_eq "nonroot-daemon stops and unmounts" "$(grep -c " $TMP/u/mnt " /proc/self/mounts)" 0
  umount -l "$TMP/u/mnt" 2>/dev/null
else
  echo "ok - nonroot-daemon # SKIP /dev/fuse is not usable by nobody here ($(stat -c %A /dev/fuse))"
fi
[ -n "$fuse_mode" ] && chmod "$fuse_mode" /dev/fuse

pf_done
