#!/usr/bin/env bash
# Set up and run profilefs: install what is missing, build, mount the tree at
# ./prof with the data in ./profilefs-data (override: MOUNTPOINT=... DATA=...),
# plus the HTTP API on 127.0.0.1:10100 if HTTP=1. Ctrl-C unmounts and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -j"$(nproc)"
MOUNTPOINT="${MOUNTPOINT:-./prof}"
DATA="${DATA:-./profilefs-data}"
args=(serve --data "$DATA")
if [ "${HTTP:-0}" = 1 ]; then args+=(--http 127.0.0.1:10100); fi
echo "profilefs: mounting on $MOUNTPOINT (data in $DATA); try: ls $MOUNTPOINT; cat $MOUNTPOINT/README.txt"
exec bin/profilefs "${args[@]}" "$MOUNTPOINT"
