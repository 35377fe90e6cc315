// Fuzz target: POST /api/v1/events bodies (server/api/event_json): one event or a batch, times
// in every common/time_arg form or as integers. Checked: only BadRequest escapes; an accepted
// event satisfies what the catalog relies on (times in range, end >= start, the length bound,
// the attributes a JSON object of at most 16 KiB), and renders back (event_to_json) as it would
// after being stored, with the padded clip the catalog computes.
#include <boost/json/serialize.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/api/event_json.hpp"
#include "server/net/api_error.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::int64_t kNowUs = 1'795'000'000'000'000;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  using namespace vigil::server;
  try {
    bool single = false;
    const auto events = parse_events_body(body, kNowUs, single);
    check(!events.empty() && events.size() <= kMaxEventBatch);
    check(!single || events.size() == 1);
    for (const auto& e : events) {
      check(e.end_us >= e.start_us && e.end_us - e.start_us <= kMaxEventLengthUs);
      check(e.attributes_json.size() <= kMaxAttributesBytes);
      if (e.confidence) check(*e.confidence >= 0 && *e.confidence <= 1);
      vigil::catalog::EventRow row{.id = 1,
                                   .camera = e.camera,
                                   .start_us = e.start_us,
                                   .end_us = e.end_us,
                                   .type = e.type,
                                   .object_class = e.object_class,
                                   .confidence = e.confidence,
                                   .location = e.location,
                                   .attributes_json = e.attributes_json,
                                   .source = e.source,
                                   .created_at_us = kNowUs,
                                   .clip = {.from_us = std::max<std::int64_t>(0, e.start_us - 5'000'000),
                                            .to_us = e.end_us + 5'000'000,
                                            .recorded = true}};
      (void)boost::json::serialize(event_to_json(row));
    }
  } catch (const BadRequest&) {}
  return 0;
}
