#!/usr/bin/env bash
# Quick start, the main job: install dependencies if missing, build, and run vigild on the
# embedded default (a private PostgreSQL under ./data/pg). Ctrl-C stops it cleanly.
# Usage: deploy/demo.sh [extra vigild flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/build.sh default
data=${VIGIL_DATA:-$PWD/data}
echo "demo: starting vigild with --data $data (Ctrl-C to stop)"
echo "demo: once it says 'vigild listening', try: curl http://127.0.0.1:8080/healthz   or   build/default/client/vigil status"
# One 1 GiB volume file under the data directory, created and formatted on first start,
# recovered and reconciled with the catalog on every start.
exec build/default/server/vigild --data "$data" --volume "$data/volume0" --volume-size $((1 << 30)) "$@"
