#!/usr/bin/env bash
# The format check: every tracked *.cpp/*.hpp (or the FILES given) must already be formatted as
# .clang-format says. Prints clang-format's complaints and exits non-zero if any file would change;
# changes nothing. Fix with: clang-format -i FILE...
# Usage: deploy/format-check.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
  echo "format-check: $clang_format not found (deploy/install-deps.sh installs it)" >&2
  exit 2
fi
if [ "$#" -gt 0 ]; then
  files=("$@")
else
  # Tracked and new files alike; build trees and vendored npm packages are not ours to format.
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' |
                       grep -v -e '^build/' -e '/build/' -e 'node_modules/')
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$clang_format" --style=file --dry-run -Werror "$f" 2>/dev/null; then bad+=("$f"); fi
done
if [ "${#bad[@]}" -gt 0 ]; then
  "$clang_format" --style=file --dry-run -Werror "${bad[0]}" 2>&1 | head -20 >&2 || true
  printf 'format-check: %s\n' "${bad[@]}" >&2
  echo "format-check: ${#bad[@]} of ${#files[@]} files are not formatted (clang-format -i them)" >&2
  exit 1
fi
echo "format-check: ${#files[@]} files formatted"
