#!/usr/bin/env bash
# A multi-node example on one machine (docs/nodes.md, docs/archive.md): one vigild as the front
# door holding the catalog (its embedded PostgreSQL; --no-camera-pull: it records nothing itself)
# and N recording nodes sharing that catalog, each with its own volume, node name and ports, and
# — when SeaweedFS is built (deploy/seaweedfs.sh) — an S3 archive tier every node copies its
# closed segments to. Cameras added through the front door (`vigil camera add`, the web UI) are
# placed on the node with the most admission headroom; kill a node and its cameras record on
# another within seconds, with a 'failover' gap in their timelines.
# On real machines: one vigild per machine with --db pointing at a shared PostgreSQL (made highly
# available by PostgreSQL's own replication, e.g. Patroni) and --node set to the machine's name.
# Usage: deploy/multi-node.sh [N]   (default 2 recording nodes; Ctrl-C stops everything)
#   VIGIL_DATA=DIR   where the nodes keep their data (default ./data-nodes)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-2}
bash deploy/build.sh default
data=${VIGIL_DATA:-$PWD/data-nodes}
vigil=build/default/client/vigil
vigild=build/default/server/vigild
mkdir -p "$data"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; }
trap cleanup INT TERM EXIT

# Waits until the vigild with data directory $1 and pid $2 listens.
wait_ready() {
  for _ in $(seq 1 120); do
    if [ -f "$1/run/endpoints.json" ] && grep -q "\"pid\":$2" "$1/run/endpoints.json"; then return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then echo "multi-node: vigild under $1 exited; see $1.log" >&2; exit 1; fi
    sleep 0.5
  done
  echo "multi-node: vigild under $1 did not start; see $1.log" >&2
  exit 1
}

if [ ! -f "$data/disk-profile.json" ]; then
  echo "multi-node: profiling the disk under $data (once)"
  "$vigil" profile "$data/profile-scratch.dat" --quick --size $((256 << 20)) -o "$data/disk-profile.json" \
    > "$data/disk-profile.txt"
fi

# The archive tier, when SeaweedFS is built: one `weed server` with S3 on 127.0.0.1:8333.
archive=()
if weed=$(bash deploy/seaweedfs.sh --path 2>/dev/null); then
  mkdir -p "$data/s3/data"
  [ -f "$data/s3/credentials" ] || printf 'vigilexample\n%s\n' "$(head -c 24 /dev/urandom | base64 | tr -d '/+=')" \
    > "$data/s3/credentials"
  chmod 600 "$data/s3/credentials"
  key=$(sed -n 1p "$data/s3/credentials")
  secret=$(sed -n 2p "$data/s3/credentials")
  printf '{"identities":[{"name":"vigil","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}\n' \
    "$key" "$secret" > "$data/s3/s3.json"
  # Its master, volume and filer ports moved off their defaults (the volume server's 8080 is vigild's).
  "$weed" server -dir="$data/s3/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=19333 -volume.port=18080 \
    -filer.port=18888 -s3 -s3.port=8333 -s3.config="$data/s3/s3.json" -volume.max=0 > "$data/s3.log" 2>&1 &
  pids+=($!)
  archive=(--archive-endpoint 127.0.0.1:8333 --archive-credentials "$data/s3/credentials")
  echo "multi-node: archive tier on SeaweedFS at 127.0.0.1:8333 (log $data/s3.log)"
else
  echo "multi-node: SeaweedFS is not built (bash deploy/seaweedfs.sh): no archive tier"
fi

# The front door: the catalog's PostgreSQL, the HTTP API and web UI on :8080, the wire port :7070.
"$vigild" --data "$data/front" --no-camera-pull > "$data/front.log" 2>&1 &
pids+=($!)
wait_ready "$data/front" "${pids[-1]}"
catalog="host=$data/front/pg/run port=5432 user=vigil dbname=vigil"
echo "multi-node: front door http://127.0.0.1:8080 (token: $data/front/admin.token)"

for i in $(seq 1 "$nodes"); do
  # --advertise: the host the front door (and the other nodes) reach this node by; the front door
  # proxies the media this node holds to it (docs/nodes.md, "One front door").
  "$vigild" --data "$data/node$i" --db "$catalog" --node "node$i" --advertise 127.0.0.1 \
    --listen "127.0.0.1:$((7070 + i))" --http-port $((8080 + i)) --volume "$data/node$i/volume0" --volume-size $((1 << 30)) \
    --profile "$data/disk-profile.json" "${archive[@]}" > "$data/node$i.log" 2>&1 &
  pids+=($!)
  wait_ready "$data/node$i" "${pids[-1]}"
  echo "multi-node: node$i recording (wire 127.0.0.1:$((7070 + i)), http :$((8080 + i)), log $data/node$i.log)"
done
echo "multi-node: add cameras with: $vigil camera add NAME rtsp://... --data $data/front"
echo "multi-node: every camera's recordings play through the front door (it proxies to the node holding them)"
echo "multi-node: who records what: psql \"$catalog\" -c 'SELECT name, owner_node FROM cameras'"
echo "multi-node: Ctrl-C stops every node"
wait "${pids[@]}"
