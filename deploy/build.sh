#!/usr/bin/env bash
# Installs what is missing, then configures and builds one CMake preset (default: "default").
# Usage: deploy/build.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
if [ "$(id -u)" -eq 0 ]; then
  bash deploy/install-deps.sh
else
  echo "build: not root, skipping deploy/install-deps.sh (run it as root if the build fails)" >&2
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
