#pragma once
// Times given by people (`vigil play --from/--to`, the HTTP API's from/to): "now"; an offset before now such as
// "-90s", "-5m", "-2h", "-1d"; "@SECONDS" since the Unix epoch (fractions allowed); or an ISO
// 8601 date-time "2026-11-23T21:00:00" (local time) with an optional "Z" (UTC).
// Errors: throws std::invalid_argument naming the accepted forms.
#include <cstdint>
#include <string>

namespace vigil {

// Unix microseconds; NOW_US is the current time.
std::int64_t parse_time_arg(const std::string& text, std::int64_t now_us);

}  // namespace vigil
