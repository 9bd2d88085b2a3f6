#!/usr/bin/env bash
# Two makes at once in one tree (an editor's build and a terminal's) both
# succeed: every generated file (protoc-c's sources, the BPF objects and
# skeletons, vmlinux.h, the copied public headers, the flags stamp) and
# every object, .d file, archive and binary is written under a name of its
# make's own and renamed into place, so neither reads half a file of the
# other nor loses one. On a fresh copy of the source tree: two plain `make`
# at once; then, with the protos and the BPF program touched (regenerated),
# two again; then both with nothing left to do. No temporary file is left.
# No mount, no root.
set -u
. "$(dirname "$0")/../lib.sh"
pf_setup

SRC="$TMP/src"
mkdir -p "$SRC"
(cd "$ROOT" && cp -r Makefile bpf base pprof store render query collector cluster fs api main "$SRC/") ||
  { fail "copy the source tree"; pf_done; exit 1; }
# Without the run's sanitizer and -Werror settings and without a parent make's flags.
mk() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u WERROR \
    make --no-print-directory -C "$SRC" CFLAGS=-O0 "$@"
}
# twice NAME: two makes at once; both must succeed.
twice() {
  local t0 ra rb
  t0=$(date +%s)
  mk -j2 >"$TMP/a.log" 2>&1 &
  local pa=$!
  mk -j2 >"$TMP/b.log" 2>&1 &
  local pb=$!
  wait $pa; ra=$?
  wait $pb; rb=$?
  echo "# $1: make exited $ra and $rb in $(($(date +%s) - t0)) s"
  if [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] && "$SRC/bin/profilefs" --version | grep -q '^profilefs '; then
    ok "$1: both makes succeed"
  else
    fail "$1: both makes succeed" "$(grep -h -m3 -i "error\|cannot\|can't\|No such" "$TMP/a.log" "$TMP/b.log")"
  fi
}
twice "a fresh tree"
sleep 1
touch "$SRC/pprof/profile.proto" "$SRC/api/otlp.proto" "$SRC"/bpf/*.bpf.c "$SRC/base/base.h"
twice "protos, BPF programs and base.h touched"
twice "nothing to do"
left=$(find "$SRC" -name '*.tmp' -o -name '.protoc.*' | head -5)
check_eq "no temporary file left" "$left" ""
pf_done
