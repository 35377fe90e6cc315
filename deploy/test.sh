#!/usr/bin/env bash
# Quick start, the tests: install dependencies if missing, build, and run every test:
#   1. the default build (warnings as errors): unit + integration tests (real PostgreSQL,
#      real vigild processes, loopback sockets);
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build running the unit tests.
# Exit status is non-zero if anything fails. In the default build a failed test is run once
# more (CMakePresets.json: repeat until-pass, 2): a rare timing flake of the playback-session
# test under a loaded 2-core CI machine (seen once, 2026-11-23; under investigation) must not
# hide the rest. A test that fails twice fails the run; ctest's log names every retry.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ "$(id -u)" -eq 0 ]; then bash deploy/install-deps.sh; fi
echo "== default build: all tests =="
cmake --workflow --preset default
echo "== ASan+UBSan build: unit tests =="
cmake --workflow --preset asan
echo "test: all passed in $(( $(date +%s) - start )) s"
