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
mkdir -p "$data"
# Admission needs a measured model of the disk: profile it once (a few seconds, on a scratch
# file beside the volume that vigil profile creates and removes), then vigild stores it.
if [ ! -f "$data/disk-profile.json" ]; then
  echo "demo: profiling the disk under $data (once)"
  build/default/client/vigil profile "$data/profile-scratch.dat" --quick --size $((256 << 20)) \
    -o "$data/disk-profile.json" > "$data/disk-profile.txt"
fi
# One 1 GiB volume file under the data directory, created and formatted on first start,
# recovered and reconciled with the catalog on every start.
exec build/default/server/vigild --data "$data" --volume "$data/volume0" --volume-size $((1 << 30)) \
  --profile "$data/disk-profile.json" "$@"
