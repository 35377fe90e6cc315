#!/usr/bin/env bash
# Builds the Debian package `vigil` from the default preset's build (cmake/packaging.cmake,
# docs/packaging.md) and prints the .deb's path on its last line.
# Usage: deploy/package.sh [OUT_DIR]     (default: build/default/package)
#   VIGIL_JOBS=N   parallel build jobs (default: every core)
# Install it with:  apt-get install ./build/default/package/vigil_*_amd64.deb   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/default/package}")
cmake --preset default >/dev/null
cmake --build --preset default ${VIGIL_JOBS:+-- -j"$VIGIL_JOBS"}
mkdir -p "$out"
# cpack installs the runtime and system components into a staging tree, runs dpkg-shlibdeps on
# the binaries and writes OUT/vigil_VERSION_ARCH.deb.
(cd build/default && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log" >&2; exit 1; }
deb=$(sed -n 's/^CPack: - package: \(.*\.deb\) generated\.$/\1/p' "$out/cpack.log" | tail -1)
if [ -z "$deb" ] || [ ! -f "$deb" ]; then
  cat "$out/cpack.log" >&2
  echo "package: cpack wrote no .deb" >&2
  exit 1
fi
echo "$deb"
