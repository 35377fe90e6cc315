#!/usr/bin/env bash
# Builds the web UI into the build tree: fetches the npm packages pinned in
# client/web/package-lock.json (hls.js for the page; playwright-core for the end-to-end test)
# from the npm registry with `npm ci` into DEPS_DIR (never into the source tree), then copies the
# page's files and hls.js into OUT_DIR, which vigild reads at start and serves at /ui/.
# Idempotent: npm runs only when the lock file changed; files are copied only when newer.
# Run by the CMake target web_ui (part of `all`); by hand:
#   deploy/web-deps.sh client/web build/default/web build/default/web-deps
set -euo pipefail
src=$(cd "${1:?usage: web-deps.sh SRC_DIR OUT_DIR DEPS_DIR}" && pwd)
out=${2:?OUT_DIR}
deps=${3:?DEPS_DIR}
mkdir -p "$out" "$deps"

if ! command -v npm >/dev/null; then
  echo "web-deps: npm is missing (run deploy/install-deps.sh as root)" >&2
  exit 1
fi

stamp="$deps/.lock.sha256"
want=$(sha256sum "$src/package-lock.json" "$src/package.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -f "$deps/node_modules/hls.js/dist/hls.min.js" ]; then
  echo "web-deps: npm ci (hls.js, playwright-core) into $deps"
  cp "$src/package.json" "$src/package-lock.json" "$deps/"
  (cd "$deps" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  echo "$want" > "$stamp"
fi

# The page: its own files (not the npm manifests) plus the vendored player.
for f in "$src"/*.html "$src"/*.js "$src"/*.css; do
  [ -e "$f" ] || continue
  cp -u "$f" "$out/"
done
cp -u "$deps/node_modules/hls.js/dist/hls.min.js" "$out/hls.min.js"
cp -u "$deps/node_modules/hls.js/LICENSE" "$out/hls.js.LICENSE.txt"
