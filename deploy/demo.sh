#!/usr/bin/env bash
# Quick start, the main job: install dependencies if missing, build, run vigild on the embedded
# default (a private PostgreSQL under ./data/pg), record a demo camera into it, play the recording
# back out of the volume into a playable clip, and keep vigild running. Ctrl-C stops it cleanly.
# Usage: deploy/demo.sh [extra vigild flags...]
#   VIGIL_DATA=DIR     data directory (default ./data)
#   VIGIL_DEMO=0       just run vigild (no demo recording)
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/build.sh default
data=${VIGIL_DATA:-$PWD/data}
vigil=build/default/client/vigil
mkdir -p "$data"
# Admission needs a measured model of the disk: profile it once (a few seconds, on a scratch
# file beside the volume that vigil profile creates and removes), then vigild stores it.
if [ ! -f "$data/disk-profile.json" ]; then
  echo "demo: profiling the disk under $data (once)"
  "$vigil" profile "$data/profile-scratch.dat" --quick --size $((256 << 20)) \
    -o "$data/disk-profile.json" > "$data/disk-profile.txt"
fi

# One 1 GiB volume file under the data directory, created and formatted on first start,
# recovered and reconciled with the catalog on every start.
echo "demo: starting vigild with --data $data (Ctrl-C to stop)"
build/default/server/vigild --data "$data" --volume "$data/volume0" --volume-size $((1 << 30)) \
  --profile "$data/disk-profile.json" "$@" &
vigild_pid=$!
trap 'kill -TERM "$vigild_pid" 2>/dev/null || true' INT TERM
# vigild writes its endpoints once it listens.
for _ in $(seq 1 120); do
  if [ -f "$data/run/endpoints.json" ] && grep -q "\"pid\":$vigild_pid" "$data/run/endpoints.json"; then break; fi
  if ! kill -0 "$vigild_pid" 2>/dev/null; then wait "$vigild_pid"; exit $?; fi
  sleep 0.5
done
wire=$(sed -n 's/.*"wire":"\([^"]*\)".*/\1/p' "$data/run/endpoints.json")
http=$(sed -n 's/.*"http":"\([^"]*\)".*/\1/p' "$data/run/endpoints.json")

if [ "${VIGIL_DEMO:-1}" != 0 ]; then
  # A demo camera: 10 s of an H.264 test pattern (no B-frames, a keyframe per second), recorded
  # at real time like a camera would send it, then played back out of the volume.
  clip="$data/demo-camera.mp4"
  if [ ! -f "$clip" ]; then
    ffmpeg -loglevel error -y -f lavfi -i testsrc=size=640x360:rate=25 -t 10 -c:v libx264 -g 25 -bf 0 \
      -pix_fmt yuv420p "$clip"
  fi
  echo "demo: recording 10 s of a demo camera as stream 'demo'"
  from=$(date +%s)
  "$vigil" --server "$wire" --token-file "$data/admin.token" record --stream demo "$clip"
  # The last segment reaches the catalog within the batcher's delay (1 s).
  out="$data/demo-playback.mp4"
  for _ in 1 2 3 4 5 6; do
    sleep 1
    if "$vigil" --server "$wire" --token-file "$data/admin.token" play --stream demo --from "@$((from - 5))" --to "@$((from + 60))" --rate 8 \
      -o "$out" 2> "$data/demo-play.log"; then
      break
    fi
  done
  cat "$data/demo-play.log" >&2
  echo "demo: played back out of the volume into $out; try: ffprobe $out   or   ffplay $out"
fi
echo "demo: vigild is running: wire $wire, http://$http (curl http://$http/healthz); Ctrl-C stops it"
echo "demo: web UI: open http://$http/ui/#token=\$(cat $data/admin.token)   (docs/web-ui.md)"
wait "$vigild_pid"
