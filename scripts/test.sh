#!/usr/bin/env bash
# Set up and run the whole test suite: install what is missing, build (with
# sanitizers when SANITIZE is set, as CI does), run unit and integration tests.
# Needs root for the eBPF tests and /dev/fuse for the mounted ones.
#
# SANITIZE may name several builds separated by spaces, e.g.
# SANITIZE="address,undefined thread" (CI): the first is built in the usual
# tree (build/, bin/), each other one out of tree in build-<name>/ (make O=),
# and the whole suite runs against each build in turn. The output ends with
# one line "N passed, N failed" over all of them; the exit status is non-zero
# if any build or test failed. tests/integration/layers.sh checks the
# Makefile on a copy of the tree, whatever the build: it runs with the first
# build only. Under ThreadSanitizer the daemon is several times slower, and
# the tests that give a remote end a deadline scale it (PROFILEFS_SLOW).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test

read -r -a builds <<<"${SANITIZE:-}"
[ "${#builds[@]}" -gt 0 ] || builds=("")
common=()
if [ -n "${WERROR:-}" ]; then common+=("WERROR=1"); fi

tally="$(mktemp)"
failures="$(mktemp)"
trap 'rm -f "$tally" "$failures"' EXIT
pass=0
fail=0
first=1
skip=""
for san in "${builds[@]}"; do
  flags=("${common[@]}")
  out=.
  if [ -n "$san" ]; then flags+=("SANITIZE=$san"); fi
  if [ "$first" -eq 0 ]; then out="build-${san//,/-}"; fi
  first=0
  echo "== build${san:+ SANITIZE=$san}${out:+ O=$out}"
  if ! make -j"$(nproc)" O="$out" "${flags[@]}" all tests; then
    echo "not ok - build${san:+ SANITIZE=$san}"
    echo "build${san:+ SANITIZE=$san} failed" >>"$failures"
    fail=$((fail + 1))
    continue
  fi
  slow=1
  case "$san" in *thread*) slow=4 ;; esac
  : >"$tally"
  PROFILEFS_BIN="$PWD/$out/bin/profilefs" PROFILEFS_BUILD="$PWD/$out/build" \
    PROFILEFS_RUN="${san:-plain}" PROFILEFS_TALLY="$tally" PROFILEFS_FAILURES="$failures" PROFILEFS_SLOW="$slow" \
    PROFILEFS_SKIP="$skip" bash tests/run.sh || true
  # After the first build: layers checks the Makefile (once is enough), and
  # the suites whose work is in other processes (node clients, a browser,
  # make install, debuginfod, the JVM, ZooKeeper and four ClickHouse
  # servers) or that measure RSS run once: a
  # second pass under another sanitizer would find nothing new in the daemon
  # and costs minutes (CI keeps under 45).
  # make_concurrent and options_doc check the Makefile and the docs;
  # cluster_hedge starts four ClickHouse servers; hardening_peer, _regex and
  # _json measure RSS and CPU under a budget (their daemon's code paths run in
  # the other suites too). ebpf_node measures the share of a node process's
  # samples walked to fib: under ThreadSanitizer on a busy machine the daemon
  # can load node's unwind tables late, and the first seconds' stacks (and
  # V8's compiler threads) drop the share below its bound; what it checks runs
  # in the first build. ebpf_ident (cgroups, a podman container, node and
  # python3 at once) checks names, not threads: the first build covers it.
  # cluster_shipped checks the shipper's single thread against a ClickHouse
  # server: its threads are the other cluster suites'.
  # walk_memory measures RSS and waits out the caches'
  # idle time (about 60 s).
  # spans compares a Go program's span shares with its
  # profile's (a measure under load) and builds the Connect client as grafana.
  # The runtime-version matrix (rt_*: OpenJDK 17/21/25, CPython 3.11/3.13/3.14,
  # Ruby 3.1/3.3, Node 18-26, PHP 8.2/8.4, Go 1.24 labels, libc in roots without
  # debug packages) runs real runtimes for minutes and measures shares under load;
  # ebpf_malloc and ebpf_memory measure shares of uprobe and page-fault samples,
  # ebpf_golabels and ebpf_ruby shares of a program's samples, ebpf_offcpu_total
  # each thread's off-CPU total against its own clocks (ebpf_offcpu_host too,
  # next to a hostile user's 300 switching threads), hardening_ebpf
  # the daemon's memory and CPU against hostile processes: the first build
  # covers what they check.
  skip="layers|install|otlp|grafana|ebpf_java|ebpf_hotspot|ebpf_debuginfod|hardening_memory|cluster_replicas"
  skip="$skip|make_concurrent|options_doc|cluster_hedge|cluster_single|recipes|hardening_peer|hardening_regex|hardening_json|hardening_symtab"
  skip="$skip|hardening_kaddr|ebpf_node|ebpf_ident|cluster_shipped|walk_memory|spans|cluster_spans|ebpf_malloc|ebpf_memory|rt_"
  skip="$skip|ebpf_golabels|ebpf_ruby|hardening_ebpf|hardening_malloc|ebpf_offcpu_total|ebpf_offcpu_host"
  if read -r p f <"$tally"; then
    pass=$((pass + p)); fail=$((fail + f))
  else
    echo "not ok - tests/run.sh${san:+ (SANITIZE=$san)} ended without counts"
    fail=$((fail + 1))
  fi
done

# Every failure of both runs once more, just above the summary.
if [ -s "$failures" ]; then
  echo "# failures:"
  sed 's/^/#   /' "$failures"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
