#!/usr/bin/env bash
# Start one clickhouse-server of the two-shard test cluster in the foreground's
# background: start.sh DIR HTTP_PORT TCP_PORT INTER_PORT TCP1 TCP2. Prints the
# server's pid once its HTTP interface answers; exits 1 if it does not (run-server.sh).
set -euo pipefail
dir=$1 http=$2 tcp=$3 inter=$4 tcp1=$5 tcp2=$6
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
cp "$here/users.xml" "$dir/users.xml"
sed -e "s|@DIR@|$dir|g" -e "s|@HTTP@|$http|g" -e "s|@TCP@|$tcp|g" -e "s|@INTER@|$inter|g" \
    -e "s|@TCP1@|$tcp1|g" -e "s|@TCP2@|$tcp2|g" "$here/config.xml.in" > "$dir/config.xml"
exec "$here/run-server.sh" "$dir" "$http"
