#!/usr/bin/env bash
# Install what profilefs needs from Debian's packages. Safe to run again: it
# installs only what is missing. Needs root (or sudo).
#
#   scripts/install-deps.sh          what building and running the daemon needs
#                                    (PKGS but TEST_PKGS): scripts/run.sh
#   scripts/install-deps.sh --test   that, plus what the tests need (TEST_PKGS,
#                                    Chromium and Node.js, the npm packages of
#                                    tests/browser, tests/otlp, tests/grafana):
#                                    scripts/test.sh
#
# Neither enables a service: when --test installs clickhouse-server, whose
# Debian package enables (and, under systemd, starts) clickhouse-server.service,
# that unit is disabled and stopped again; the tests start their own servers.
set -euo pipefail

test_deps=0
case "${1:-}" in
  --test) test_deps=1 ;;
  "") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

# Every package: what building and running the daemon needs (make, make
# install, man profilefs), and after it what only the tests need, which
# TEST_PKGS names again. A new build or run dependency goes here.
PKGS=(
  build-essential pkg-config git
  libfuse3-dev fuse3
  librocksdb-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  zlib1g-dev
  libmicrohttpd-dev libcurl4-openssl-dev libssl-dev
  libbpf-dev bpftool clang llvm libelf-dev libdw-dev liblzma-dev xz-utils sqlite3
  libcmocka-dev libjansson-dev libiberty-dev libsystemd-dev libre2-dev
  debuginfod
  golang-go
  curl libxml2-utils procps psmisc jq python3
  rsync openssh-client make
  openjdk-17-jdk-headless ruby
  systemd man-db groff-base strace
  clickhouse-server zookeeper
  podman runc busybox-static
  debootstrap php8.2-cli php8.2-fpm
)

# The packages of PKGS only the tests need: unit tests (cmocka), the real
# clients and servers the integration tests run (go tool pprof, a JVM, Ruby,
# ClickHouse, ZooKeeper, debuginfod, sqlite3) and the tools they use. Without
# --test they are left out. A new test-only package goes here (here alone
# is enough).
TEST_PKGS=(
  sqlite3 libcmocka-dev debuginfod golang-go
  libxml2-utils procps psmisc jq python3
  rsync openssh-client
  openjdk-17-jdk-headless ruby
  systemd groff-base strace
  clickhouse-server zookeeper
  podman runc busybox-static
  debootstrap php8.2-cli php8.2-fpm
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

want=()
for p in "${PKGS[@]}"; do
  if [ "$test_deps" = 1 ] || [[ " ${TEST_PKGS[*]} " != *" $p "* ]]; then
    want+=("$p")
  fi
done
if [ "$test_deps" = 1 ]; then
  for p in "${TEST_PKGS[@]}"; do
    [[ " ${PKGS[*]} " == *" $p "* ]] || want+=("$p")
  done
fi
installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=()
for p in "${want[@]}"; do
  installed "$p" || missing+=("$p")
done
had_clickhouse=0
installed clickhouse-server && had_clickhouse=1

# Only for the tests: Debian's Chromium and Node.js with npm for the browser
# test (tests/browser), unless some node and npm are already there (another
# packaging of Node.js may bundle npm and conflict with Debian's). Node.js is
# also the program the eBPF sampler's JavaScript test (ebpf_node.sh) profiles.
optional=()
if [ "$test_deps" = 1 ]; then
  if [ "${PROFILEFS_NO_BROWSER:-0}" != 1 ]; then
    [ -x /usr/bin/chromium ] || optional+=(chromium)
    command -v npm >/dev/null || optional+=(npm)
  fi
  command -v node >/dev/null || optional+=(nodejs)
fi

export DEBIAN_FRONTEND=noninteractive
if [ "${#missing[@]}" -gt 0 ] || [ "${#optional[@]}" -gt 0 ]; then
  $SUDO apt-get update -q
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all required Debian packages present"
fi
if [ "${#optional[@]}" -gt 0 ]; then
  echo "install-deps: installing ${optional[*]} (browser test)"
  $SUDO apt-get install -y -q --no-install-recommends "${optional[@]}" || \
    echo "install-deps: could not install ${optional[*]}; the browser test will be skipped" >&2
fi

# clickhouse-server's package enables its unit: the tests start servers of
# their own on free ports, so one just installed here is switched off again
# (a ClickHouse that was installed before is left as it was).
if [ "$had_clickhouse" = 0 ] && installed clickhouse-server && command -v systemctl >/dev/null; then
  echo "install-deps: disabling clickhouse-server.service (the tests start their own servers)"
  $SUDO systemctl disable --now clickhouse-server >/dev/null 2>&1 || \
    $SUDO systemctl disable clickhouse-server >/dev/null 2>&1 || true
fi

[ "$test_deps" = 1 ] || exit 0

# playwright-core drives Debian's Chromium in tests/browser (no browser download).
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${PROFILEFS_NO_BROWSER:-0}" != 1 ] && [ -f "$here/tests/browser/package.json" ] \
   && [ ! -d "$here/tests/browser/node_modules/playwright-core" ]; then
  echo "install-deps: npm install (tests/browser)"
  (cd "$here/tests/browser" && npm install --no-audit --no-fund --silent) || \
    echo "install-deps: npm install failed; the browser test will be skipped" >&2
fi

# @bufbuild/protobuf (with protoc-gen-es and buf, to generate its code from
# api/otlp.proto) builds the OTLP requests of tests/integration/otlp.sh.
if command -v npm >/dev/null && [ -f "$here/tests/otlp/package.json" ] \
   && [ ! -d "$here/tests/otlp/node_modules/@bufbuild/protobuf" ]; then
  echo "install-deps: npm ci (tests/otlp)"
  (cd "$here/tests/otlp" && npm ci --no-audit --no-fund --silent) || \
    echo "install-deps: npm ci failed; the OTLP test will fail" >&2
fi

# The Grafana API tests (tests/grafana): the Connect client, buf and
# protoc-gen-es that generate its code, Pyroscope's flame graph component,
# React and esbuild, exactly as package-lock.json pins them. Again when the
# lock file is newer than what node_modules holds.
g="$here/tests/grafana"
if [ -f "$g/package-lock.json" ] && command -v npm >/dev/null \
   && { [ ! -f "$g/node_modules/.package-lock.json" ] || [ "$g/package-lock.json" -nt "$g/node_modules/.package-lock.json" ]; }; then
  echo "install-deps: npm ci (tests/grafana)"
  (cd "$g" && npm ci --no-audit --no-fund --silent) || \
    echo "install-deps: npm ci failed; the Grafana API tests will be skipped" >&2
fi

# The runtime versions Debian 12 does not ship (OpenJDK 21/25, CPython 3.13/3.14, Ruby 3.3,
# PHP 8.4, Go 1.24, Node 22/24/26) run in debootstrapped roots, cached under
# /var/cache/profilefs/roots (scripts/runtime-roots.sh): made once per machine.
if [ "${PROFILEFS_NO_ROOTS:-0}" != 1 ]; then
  $SUDO bash "$here/scripts/runtime-roots.sh" || \
    echo "install-deps: a runtime root could not be made; the runtime-version tests will fail (see above)" >&2
fi
