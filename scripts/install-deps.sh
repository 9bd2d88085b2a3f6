#!/usr/bin/env bash
# Install what profilefs needs to build, run and test, from Debian's packages
# (and from npm: playwright-core for the browser test, the clients of the
# Grafana API tests in tests/grafana). Safe to run again: it installs only
# what is missing. Needs root (or sudo).
set -euo pipefail

PKGS=(
  build-essential pkg-config git
  libfuse3-dev fuse3
  librocksdb-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  zlib1g-dev
  libmicrohttpd-dev libcurl4-openssl-dev libssl-dev
  libbpf-dev bpftool clang llvm libelf-dev libdw-dev liblzma-dev xz-utils sqlite3
  libcmocka-dev libjansson-dev libiberty-dev libre2-dev
  debuginfod
  golang-go
  curl libxml2-utils procps psmisc jq python3
  rsync openssh-client make
  openjdk-17-jdk-headless ruby
  systemd man-db groff-base strace
  clickhouse-server zookeeper
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Only for the browser test (tests/browser): Debian's Chromium, and Node.js
# with npm unless some node and npm are already there (another packaging of
# Node.js may bundle npm and conflict with Debian's). Node.js is also the
# program the eBPF sampler's JavaScript test (ebpf_node.sh) profiles.
optional=()
if [ "${PROFILEFS_NO_BROWSER:-0}" != 1 ]; then
  [ -x /usr/bin/chromium ] || optional+=(chromium)
  command -v npm >/dev/null || optional+=(npm)
fi
command -v node >/dev/null || optional+=(nodejs)

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
