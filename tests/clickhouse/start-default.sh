#!/usr/bin/env bash
# Start one clickhouse-server with the distribution's DEFAULT config
# (/etc/clickhouse-server/config.xml and users.xml, as Debian's
# clickhouse-server package installs them: no cluster 'profilefs' in its
# remote_servers), only its ports and directories moved so that it runs beside
# others: start-default.sh DIR HTTP_PORT TCP_PORT INTER_PORT. Prints the
# server's pid once its HTTP interface answers; exits 1 if it does not
# (run-server.sh). CH_DEFAULT_CONFIG=DIR takes the two files from DIR instead.
set -euo pipefail
dir=$1 http=$2 tcp=$3 inter=$4
src=${CH_DEFAULT_CONFIG:-/etc/clickhouse-server}
here="$(cd "$(dirname "$0")" && pwd)"
[ -r "$src/config.xml" ] && [ -r "$src/users.xml" ] ||
  { echo "no default config in $src (the clickhouse-server package installs it)" >&2; exit 1; }
mkdir -p "$dir/data" "$dir/log"
cp "$src/users.xml" "$dir/users.xml"
# Ports and paths only; every other line as the package ships it.
sed -e "s|<http_port>8123</http_port>|<http_port>$http</http_port>|" \
    -e "s|<tcp_port>9000</tcp_port>|<tcp_port>$tcp</tcp_port>|" \
    -e "s|<interserver_http_port>9009</interserver_http_port>|<interserver_http_port>$inter</interserver_http_port>|" \
    -e "s|/var/lib/clickhouse/|$dir/data/|g" \
    -e "s|/var/log/clickhouse-server/|$dir/log/|g" \
    "$src/config.xml" >"$dir/config.xml"
# What was changed, for the test's output.
diff "$src/config.xml" "$dir/config.xml" | grep -c '^>' >"$dir/changed-lines" || true
# run-server.sh reads DIR/error.log on failure: point it at the server's own.
ln -sf "$dir/log/clickhouse-server.err.log" "$dir/error.log"
exec "$here/run-server.sh" "$dir" "$http"
