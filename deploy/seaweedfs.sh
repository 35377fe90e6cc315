#!/usr/bin/env bash
# Builds the SeaweedFS `weed` binary (Apache-2.0), the S3 test peer of the archive tier (issue [L]), from its Go
# module at a pinned version, and prints the binary's path. The binary is cached outside any build directory, so a
# second run only prints the path.
#
# Why a wrapper module: SeaweedFS's go.mod carries a `replace` (go-bip39 was deleted from GitHub), and Go ignores
# `replace` directives of dependencies, so `go install module@version` refuses it. A throwaway module that requires
# SeaweedFS and repeats the replace builds it the way SeaweedFS's own tree does.
#
# deploy/test.sh runs it first (about 8 CPU-minutes of Go build the first time; cached afterwards). Tests labelled
# `s3` look for the binary in the cache (or $VIGIL_SEAWEEDFS) and skip, saying so, when it is absent.
set -euo pipefail

# SeaweedFS tags (e.g. 3.80) are not semver, so the module proxy only knows pseudo-versions: pin one.
SEAWEEDFS_VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
CACHE_DIR="${VIGIL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vigil}/seaweedfs/${SEAWEEDFS_VERSION}"
BIN="${CACHE_DIR}/weed"

# --path: only print the cached binary's path (exit 1 when it is not built): how tests find it.
if [[ "${1:-}" == "--path" ]]; then
  [[ -x "$BIN" ]] && echo "$BIN" && exit 0
  exit 1
fi

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$CACHE_DIR"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
cat > go.mod <<MOD
module vigil.local/seaweedfs-wrapper

go 1.26

require github.com/seaweedfs/seaweedfs ${SEAWEEDFS_VERSION}

// Repeated from SeaweedFS's own go.mod (dependencies' replace directives are ignored).
replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0
MOD
export GOFLAGS=-mod=mod
"$GO" get "github.com/seaweedfs/seaweedfs/weed@${SEAWEEDFS_VERSION}" >&2
"$GO" build -trimpath -ldflags "-s -w" -o "$BIN.tmp" github.com/seaweedfs/seaweedfs/weed >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
