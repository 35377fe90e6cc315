#!/usr/bin/env bash
# Quick start, the tests: install dependencies if missing, build, and run every test:
#   0. SeaweedFS, the archive tier's S3 peer (deploy/seaweedfs.sh: built from its Go module
#      once, minutes, then cached; beside the default build), so the "s3" tests run, not skip;
#   1. the default build (warnings as errors): unit + integration tests (real PostgreSQL,
#      real vigild processes, loopback sockets, SeaweedFS for the archive tier);
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build running the unit tests, the
#      sanitized daemon test (an ASan-built vigild stopped with SIGTERM mid-recording) and the
#      integration tests of hostile input, faults, recording, playback and media against that
#      ASan-built vigild;
#   3. a ThreadSanitizer build running the storage and server unit tests and the sanitized daemon
#      test (a TSan-built vigild with recorders on several network threads);
#   4. the fuzz lane (deploy/fuzz.sh, docs/fuzzing.md): every libFuzzer target for ~15 s from its
#      seeds and saved regressions, failing on any crash;
#   5. the format check (deploy/format-check.sh, .clang-format), last so a formatting slip
#      never hides a test result.
# Exit status is non-zero if anything fails. A failed test is not run again: a test that
# passes only on a second try is a bug to fix, not to hide.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ "$(id -u)" -eq 0 ]; then bash deploy/install-deps.sh; fi
echo "== SeaweedFS for the archive tier's tests (cached after the first build), beside the default build =="
# In the background: its module download waits on the network, not on the cores the C++ build uses.
# Not fatal: without the Go module proxy the s3-labelled tests skip, and say so in ctest's output.
weed_log=$(mktemp)
bash deploy/seaweedfs.sh > "$weed_log" 2>&1 &
weed_pid=$!
echo "== default build: all tests =="
cmake --preset default
cmake --build --preset default
if wait "$weed_pid"; then
  echo "test: SeaweedFS at $(tail -n 1 "$weed_log")"
else
  tail -n 20 "$weed_log" >&2
  echo "test: WARNING: SeaweedFS could not be built; the tests labelled s3 will be skipped" >&2
fi
rm -f "$weed_log"
ctest --preset default
echo "== ASan+UBSan build: unit tests, the sanitized daemon and integration tests against it =="
cmake --workflow --preset asan
echo "== ThreadSanitizer build: storage and server unit tests and the sanitized daemon =="
cmake --workflow --preset tsan
echo "== fuzz: every libFuzzer target for a bounded time =="
bash deploy/fuzz.sh
echo "== format check =="
bash deploy/format-check.sh
echo "test: all passed in $(( $(date +%s) - start )) s"
