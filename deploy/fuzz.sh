#!/usr/bin/env bash
# The fuzz lane (docs/fuzzing.md): builds the fuzz preset (clang-14, libFuzzer, ASan + UBSan) and
# runs every target of tests/fuzz from its seed corpus (tests/fuzz/corpus/TARGET) and its saved
# regressions (tests/fuzz/regressions/TARGET), one target at a time on one core.
#   deploy/fuzz.sh                 CI size: each target for FUZZ_SECONDS (default 15) seconds
#   deploy/fuzz.sh --long N        each target until N executions (the closing note's >= 1e7)
#   deploy/fuzz.sh [...] TARGET..  only these targets
# Prints executions, exec/s and crashes per target; exits non-zero if any target crashed, timed
# out or ran out of memory (libFuzzer stops at the first such input and saves it under
# build/fuzz/artifacts/TARGET/: replay it with build/fuzz/tests/fuzz/TARGET_fuzz FILE).
# New coverage found goes to build/fuzz/corpus/TARGET (not committed; copy small, interesting
# inputs into tests/fuzz/corpus by hand).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=""
if [ "${1:-}" = "--long" ]; then
  runs=${2:?"--long needs a number of executions"}
  shift 2
fi
seconds=${FUZZ_SECONDS:-15}

# Target and -max_len: a little above the largest useful input (a few frames, a request with
# its body, a GOP); larger inputs only slow the search down.
declare -A max_len=(
  [frame_decoder]=4096 [wire_hello]=4096
  [http_request]=4096 [http_range]=256 [http_query]=1024 [time_arg]=128 [json_body]=4096 [event_json]=8192
  [record_scan]=4096 [stream_description]=2048 [segment_recovery]=2048
  [media_writer]=8192 [thumbnail]=8192 [rtsp_media]=4096 [onvif_xml]=8192 [s3_xml]=8192
)
all=(frame_decoder wire_hello http_request http_range http_query time_arg json_body event_json
  record_scan stream_description segment_recovery media_writer thumbnail rtsp_media onvif_xml s3_xml)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz: unknown target '$t' (known: ${all[*]})" >&2; exit 2; }
done

echo "== fuzz build (preset fuzz) =="
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in "${targets[@]}"; do
  work=build/fuzz/corpus/$t
  artifacts=build/fuzz/artifacts/$t/
  mkdir -p "$work" "$artifacts" "tests/fuzz/regressions/$t"
  log=build/fuzz/$t.log
  if [ -n "$runs" ]; then limit=(-runs="$runs"); else limit=(-max_total_time="$seconds"); fi
  echo "== fuzz $t (${limit[*]}, -max_len=${max_len[$t]}) =="
  start=$(date +%s)
  rc=0
  # -timeout: one input taking seconds is a finding (a hang on hostile input); -rss_limit_mb:
  # so is one that makes the process grow past 2 GiB. FUZZ_TIMEOUT raises the timeout for a long
  # run at low priority beside builds, where a starved process is not a hang.
  "build/fuzz/tests/fuzz/${t}_fuzz" "${limit[@]}" -max_len="${max_len[$t]}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts" \
    "$work" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" >"$log" 2>&1 || rc=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  execs=${execs:-0}
  crashes=0
  if [ $rc -ne 0 ]; then
    crashes=1
    failed+=("$t")
    grep -E "ERROR: (libFuzzer|AddressSanitizer)|runtime error|SUMMARY|Test unit written" "$log" | head -n 8 >&2 || true
    echo "fuzz: $t failed (exit $rc); full log: $log" >&2
  fi
  rate=$(( execs / (elapsed > 0 ? elapsed : 1) ))
  summary+=("$(printf '%-20s %12s executions %8s exec/s %3s crashes %5s s' "$t" "$execs" "$rate" "$crashes" "$elapsed")")
done

echo "== fuzz summary =="
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets ran without a crash"
