#!/usr/bin/env bash
# The layers are enforced by the build (see the Makefile's header): each
# layer's sources are compiled with the public headers of the layers below it
# only. On a copy of the source tree, built out of tree with the Makefile's
# own rules, this shows that a file including another layer's internal header
# or the public header of a layer above it does not compile, that a relative
# #include is refused by `make layercheck`, and that the real tree builds
# (with a user CFLAGS=-O0, which must not drop the project's flags). No
# mount, no root.
set -u
. "$(dirname "$0")/../lib.sh"
pf_setup

SRC="$TMP/src"
OUT="$TMP/out"
mkdir -p "$SRC"
(cd "$ROOT" && cp -r Makefile bpf base pprof store render query collector cluster fs api main "$SRC/" &&
  mkdir -p "$SRC/tests" && cp -r tests/unit tests/fuzz tests/tools "$SRC/tests/") ||
  { fail "copy the source tree"; pf_done; exit 1; }

# mk ARGS...: the Makefile of the copy, out of tree, without the sanitizer and
# -Werror settings of the run that started the test (they may name several
# builds) and without a parent make's flags.
mk() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u WERROR \
    make --no-print-directory -C "$SRC" O="$OUT" "$@"
}

# builds NAME LAYER FILE: compiling FILE (placed in LAYER/) succeeds.
# fails_with NAME LAYER FILE WHY: compiling it fails, and the compiler says WHY.
obj() {
  local d="$1"
  case "$d" in ebpf|scrape) d="collector/$d" ;; esac
  echo "$OUT/build/$d/$(basename "$2" .c).o"
}
builds() {
  local out
  if out="$(mk "$(obj "$2" "$3")" 2>&1)"; then ok "$1"
  else fail "$1" "$(echo "$out" | grep -m3 -i 'error')"; fi
}
fails_with() {
  local out
  if out="$(mk "$(obj "$2" "$3")" 2>&1)"; then
    fail "$1" "it compiled"
  elif echo "$out" | grep -q -- "$4"; then
    ok "$1"
  else
    fail "$1" "failed for another reason: $(echo "$out" | grep -m3 -i 'error')"
  fi
}

# A probe in render/: what render may include compiles ...
printf '#include "base.h"\n#include "pprof.h"\n#include "render.h"\nint probe_ok(void);\nint probe_ok(void) { return 0; }\n' \
  >"$SRC/render/probe_ok.c"
builds "render/ compiles with base.h, pprof.h and its own render.h" render probe_ok.c

# ... fs's internal header does not,
printf '#include "cache.h"\nint probe_int(void);\nint probe_int(void) { return 0; }\n' >"$SRC/render/probe_int.c"
fails_with "render/ including fs's internal cache.h fails the build" render probe_int.c "cache.h: No such file"

# ... nor does the public header of a layer that is not below it.
printf '#include "store.h"\nint probe_up(void);\nint probe_up(void) { return 0; }\n' >"$SRC/render/probe_up.c"
fails_with "render/ including store.h (not a layer below render) fails the build" render probe_up.c "store.h: No such file"

# A real file of fs/ moved to render/: it needs fs's internals and does not
# build there, while it builds in fs/.
cp "$SRC/fs/views.c" "$SRC/render/views_moved.c"
builds "fs/views.c builds in fs/" fs views.c
fails_with "fs/views.c copied to render/ fails the build (cache.h)" render views_moved.c "cache.h: No such file"

# fs/ sees no producer's public header, and their internals even less;
# main/ sees every public header but no layer's internals.
printf '#include "targets.h"\nint probe_coll(void);\nint probe_coll(void) { return 0; }\n' >"$SRC/fs/probe_coll.c"
fails_with "fs/ including the scraper's internal targets.h fails the build" fs probe_coll.c "targets.h: No such file"
printf '#include "scrape.h"\nint probe_up2(void);\nint probe_up2(void) { return 0; }\n' >"$SRC/fs/probe_up2.c"
fails_with "fs/ including scrape.h fails the build (fs imports no producer)" fs probe_up2.c "scrape.h: No such file"
# fs/ and api/ are two views side by side: neither includes the other.
printf '#include "api.h"\nint probe_fa(void);\nint probe_fa(void) { return 0; }\n' >"$SRC/fs/probe_fa.c"
fails_with "fs/ including api.h fails the build" fs probe_fa.c "api.h: No such file"
printf '#include "fs.h"\nint probe_af(void);\nint probe_af(void) { return 0; }\n' >"$SRC/api/probe_af.c"
fails_with "api/ including fs.h fails the build" api probe_af.c "fs.h: No such file"
printf '#include "store.h"\n#include "render.h"\n#include "api.h"\nint probe_aok(void);\nint probe_aok(void) { return 0; }\n' >"$SRC/api/probe_aok.c"
builds "api/ compiles with store.h, render.h and its own api.h" api probe_aok.c
# What both views answer they ask query/, below them: it sees neither.
printf '#include "store.h"\n#include "query.h"\nint probe_qf(void);\nint probe_qf(void) { return 0; }\n' >"$SRC/fs/probe_qf.c"
builds "fs/ compiles with query.h" fs probe_qf.c
printf '#include "api.h"\nint probe_qa(void);\nint probe_qa(void) { return 0; }\n' >"$SRC/query/probe_qa.c"
fails_with "query/ including api.h fails the build" query probe_qa.c "api.h: No such file"
printf '#include "fs.h"\nint probe_qs(void);\nint probe_qs(void) { return 0; }\n' >"$SRC/query/probe_qs.c"
fails_with "query/ including fs.h fails the build" query probe_qs.c "fs.h: No such file"
rm -f "$SRC"/query/probe_*.c
# The agent does not see the API; only the agent sees bpf/.
printf '#include "api.h"\nint probe_ea(void);\nint probe_ea(void) { return 0; }\n' >"$SRC/collector/ebpf/probe_ea.c"
fails_with "collector/ebpf/ including api.h fails the build" ebpf probe_ea.c "api.h: No such file"
printf '#include "api_int.h"\nint probe_ea2(void);\nint probe_ea2(void) { return 0; }\n' >"$SRC/collector/ebpf/probe_ea2.c"
fails_with "collector/ebpf/ including api_int.h fails the build" ebpf probe_ea2.c "api_int.h: No such file"
printf '#include <stdint.h>\n#include "profile.h"\n#include "ebpf.h"\nint probe_eok(void);\nint probe_eok(void) { return 0; }\n' >"$SRC/collector/ebpf/probe_eok.c"
builds "collector/ebpf/ compiles with bpf/profile.h and its own ebpf.h" ebpf probe_eok.c
printf '#include <stdint.h>\n#include "profile.h"\nint probe_sb(void);\nint probe_sb(void) { return 0; }\n' >"$SRC/collector/scrape/probe_sb.c"
fails_with "collector/scrape/ including bpf/profile.h fails the build" scrape probe_sb.c "profile.h: No such file"
printf '#include "proctab.h"\nint probe_sp(void);\nint probe_sp(void) { return 0; }\n' >"$SRC/collector/scrape/probe_sp.c"
fails_with "collector/scrape/ including the agent's proctab.h fails the build" scrape probe_sp.c "proctab.h: No such file"
rm -f "$SRC"/api/probe_*.c "$SRC"/collector/ebpf/probe_*.c "$SRC"/collector/scrape/probe_*.c
printf '#include "fs_int.h"\nint probe_main(void);\nint probe_main(void) { return 0; }\n' >"$SRC/main/probe_main.c"
fails_with "main/ including fs's internal fs_int.h fails the build" main probe_main.c "fs_int.h: No such file"
# The fleet's layer (cluster/) sits beside collector/: it sees the store's
# public header, and the filesystem does not see it (reads reach it through
# the reader main hands to fs/, store.h's struct reader).
printf '#include "store.h"\n#include "cluster.h"\nint probe_cl(void);\nint probe_cl(void) { return 0; }\n' >"$SRC/cluster/probe_cl.c"
builds "cluster/ compiles with store.h and its own cluster.h" cluster probe_cl.c
printf '#include "fs.h"\nint probe_cl2(void);\nint probe_cl2(void) { return 0; }\n' >"$SRC/cluster/probe_cl2.c"
fails_with "cluster/ including fs.h fails the build" cluster probe_cl2.c "fs.h: No such file"
printf '#include "cluster.h"\nint probe_up3(void);\nint probe_up3(void) { return 0; }\n' >"$SRC/fs/probe_up3.c"
fails_with "fs/ including cluster.h fails the build" fs probe_up3.c "cluster.h: No such file"
rm -f "$SRC"/render/probe_*.c "$SRC/render/views_moved.c" "$SRC"/fs/probe_*.c "$SRC/main/probe_main.c" \
  "$SRC"/cluster/probe_*.c

# A relative include would step around the include paths: make layercheck
# refuses it (and `make` runs layercheck).
out="$(mk layercheck 2>&1)" && ok "make layercheck passes on the real tree" \
  || fail "make layercheck passes on the real tree" "$out"
printf '#include "../fs/cache.h"\nint probe_rel(void);\nint probe_rel(void) { return 0; }\n' >"$SRC/render/probe_rel.c"
out="$(mk layercheck 2>&1)"
rc=$?
if [ "$rc" -ne 0 ] && echo "$out" | grep -q "render/probe_rel.c" && echo "$out" | grep -q "relative #include"; then
  ok "make layercheck refuses a relative #include"
else
  fail "make layercheck refuses a relative #include" "rc=$rc: $out"
fi
rm -f "$SRC/render/probe_rel.c"
# Only store/ sees RocksDB: its header anywhere else is refused too.
printf '#include <rocksdb/c.h>\nint probe_rdb(void);\nint probe_rdb(void) { return 0; }\n' >"$SRC/api/probe_rdb.c"
out="$(mk layercheck 2>&1)"
rc=$?
if [ "$rc" -ne 0 ] && echo "$out" | grep -q "api/probe_rdb.c" && echo "$out" | grep -q "RocksDB"; then
  ok "make layercheck refuses RocksDB's header outside store/"
else
  fail "make layercheck refuses RocksDB's header outside store/" "rc=$rc: $out"
fi
rm -f "$SRC/api/probe_rdb.c"

# The real tree builds with the per-layer flags; a user's CFLAGS=-O0 is added
# to the project's (-std, -I, pkg-config), not put in their place; pkg-config
# runs once per make (--cflags and --libs), not once per object.
mkdir -p "$TMP/pc"
printf '#!/bin/sh\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$TMP/pc/calls" "$(command -v pkg-config)" >"$TMP/pc/pkg-config"
chmod +x "$TMP/pc/pkg-config"
out="$(PATH="$TMP/pc:$PATH" mk -j2 CFLAGS=-O0 V=1 "$OUT/bin/profilefs" 2>&1)"
rc=$?
if [ "$rc" -eq 0 ] && [ -x "$OUT/bin/profilefs" ]; then ok "the real tree builds with CFLAGS=-O0"
else fail "the real tree builds with CFLAGS=-O0" "$(echo "$out" | grep -m5 -i error)"; fi
line="$(echo "$out" | grep -m1 -- ' -c -o .*/render/flame.o')"
case "$line" in
  *-std=gnu11*-I*-O0*) ok "CFLAGS=-O0 comes after the project's -std and -I flags" ;;
  *) fail "CFLAGS=-O0 comes after the project's -std and -I flags" "$line" ;;
esac
"$OUT/bin/profilefs" --version | grep -q '^profilefs ' && ok "the -O0 binary runs" || fail "the -O0 binary runs"
n_cc=$(echo "$out" | grep -c -- '-std=gnu11.* -c -o ')
n_pc=$(wc -l <"$TMP/pc/calls")
[ "$n_cc" -gt 10 ] && [ "$n_pc" -eq 2 ] && ok "pkg-config ran twice (cflags, libs) for $n_cc compilations" \
  || fail "pkg-config ran twice (cflags, libs) for $n_cc compilations" "it ran $n_pc times: $(sort "$TMP/pc/calls" | uniq -c)"

# Other flags rebuild everything (no objects of two kinds linked together);
# the same flags rebuild nothing.
mk -q CFLAGS=-O0 "$OUT/bin/profilefs" && ok "nothing to rebuild with the same flags" \
  || fail "nothing to rebuild with the same flags"
n=$(mk -n CFLAGS=-O1 "$OUT/bin/profilefs" 2>/dev/null | grep -c -- '-std=gnu11.* -c -o ')
[ "$n" -eq "$n_cc" ] && ok "other CFLAGS rebuild every object ($n)" || fail "other CFLAGS rebuild every object" "$n of $n_cc"
mk -s CFLAGS=-O0 "$OUT/bin/profilefs" >/dev/null 2>&1	# back to the -O0 flags

# Header dependencies are the compiler's (-MMD): touching a public header
# rebuilds what includes it (fs.h: fs/ and main/), not every object.
touch "$SRC/fs/fs.h"
rebuilt="$(mk -n CFLAGS=-O0 "$OUT/bin/profilefs" 2>/dev/null | grep -o -- ' -c -o [^ ]*\.o' | sed 's|.*/build/||')"
n=$(echo "$rebuilt" | grep -c .)
others="$(echo "$rebuilt" | grep -v '^fs/\|^main/')"
if [ "$n" -gt 0 ] && [ "$n" -lt "$n_cc" ] && [ -z "$others" ] && echo "$rebuilt" | grep -q '^main/main.o'; then
  ok "touching fs/fs.h rebuilds $n of $n_cc objects, all in fs/ and main/"
else
  fail "touching fs/fs.h rebuilds only what includes it" "$n of $n_cc: $(echo $rebuilt)"
fi
mk -s CFLAGS=-O0 "$OUT/bin/profilefs" >/dev/null 2>&1
# Plain make builds the daemon without the tests (no cmocka needed).
out="$(mk -n CFLAGS=-O0 2>/dev/null)"
echo "$out" | grep -q -- '-lcmocka' && fail "plain make builds no test" "$(echo "$out" | grep -m1 -- -lcmocka)" \
  || ok "plain make builds no test"

# Header dependencies of the unit tests and fuzz harnesses are tracked:
# touching a header they include rebuilds them.
if mk -s -j2 CFLAGS=-O0 "$OUT/build/tests/test_labels" "$OUT/build/tests/fuzz_path" >/dev/null 2>&1; then
  touch "$SRC/tests/unit/util.h"
  mk -q CFLAGS=-O0 "$OUT/build/tests/test_labels" && fail "touching tests/unit/util.h rebuilds test_labels" \
    || ok "touching tests/unit/util.h rebuilds test_labels"
  mk -s CFLAGS=-O0 "$OUT/build/tests/test_labels" "$OUT/build/tests/fuzz_path" >/dev/null 2>&1
  touch "$SRC/fs/path.h"
  mk -q CFLAGS=-O0 "$OUT/build/tests/fuzz_path" && fail "touching fs/path.h rebuilds fuzz_path" \
    || ok "touching fs/path.h rebuilds fuzz_path"
else
  fail "build test_labels and fuzz_path"
fi

# vmlinux.h: the one checked in for the machine's architecture, else one
# generated from the running kernel's BTF.
arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
if [ -f "$SRC/bpf/vmlinux/$arch/vmlinux.h" ]; then
  cmp -s "$SRC/bpf/vmlinux/$arch/vmlinux.h" "$OUT/build/gen/bpf/vmlinux.h" \
    && ok "the build uses the checked-in bpf/vmlinux/$arch/vmlinux.h" \
    || fail "the build uses the checked-in bpf/vmlinux/$arch/vmlinux.h"
fi
if [ -r /sys/kernel/btf/vmlinux ]; then
  rm -rf "$SRC/bpf/vmlinux"
  out="$(mk O="$TMP/out2" "$TMP/out2/build/gen/bpf/vmlinux.h" 2>&1)" &&
    grep -q '^struct task_struct {' "$TMP/out2/build/gen/bpf/vmlinux.h" \
    && ok "without a checked-in vmlinux.h it is generated from the kernel's BTF" \
    || fail "without a checked-in vmlinux.h it is generated from the kernel's BTF" "$out"
else
  echo "ok - vmlinux.h generated from the kernel's BTF # SKIP no /sys/kernel/btf/vmlinux"
fi

pf_done
