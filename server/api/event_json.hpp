#pragma once
// Events as JSON for the HTTP API (docs/openapi.yaml, /api/v1/events): parse and validate a POST
// body (one event object, or an array of at most kMaxEventBatch of them) into catalog::NewEvent
// before any SQL, and render a catalog::EventRow with its clip and the clip's media URLs.
// Time scheme of a posted event: either `start_us`/`end_us` (integers, Unix microseconds) or
// `start`/`end` (strings in the common/time_arg forms: "@1767225600.25", "2026-01-01T00:00:00Z",
// "-5m", "now"); not both for the same end. `end` defaults to the start (a point event).
// Thread: any. Errors: throws BadRequest naming the field (and the event's index in a batch).
#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/event_rows.hpp"

namespace vigil::server {

inline constexpr std::size_t kMaxEventBatch = 1000;
inline constexpr std::size_t kMaxAttributesBytes = 16 * 1024;  // serialised
inline constexpr std::size_t kMaxSourceBytes = 256;
inline constexpr std::int64_t kMaxEventTimeUs = 100'000'000'000LL * 1'000'000;  // as common/time_arg's @ form
inline constexpr std::int64_t kMaxEventLengthUs = 400LL * 86'400'000'000;

// BODY is the request body; NOW_US resolves relative times. Single: set when BODY was one
// object (not an array).
std::vector<catalog::NewEvent> parse_events_body(std::string_view body, std::int64_t now_us, bool& single);

// "@SECONDS[.FRACTION]" for T_US >= 0, exact to the microsecond, no trailing zeros (common/time_arg
// parses it back to T_US).
std::string at_seconds(std::int64_t t_us);

boost::json::object event_to_json(const catalog::EventRow& e);

}  // namespace vigil::server
