// Fuzz target: request targets and their query strings (server/net/http_query, Boost.URL) and the
// checks every route makes of them: times, bounded numbers, camera lists, unknown parameters,
// page cursors and ids. Only ApiError (a 400) may escape; anything else would be a 500 for a
// client's input, or a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/net/api_error.hpp"
#include "server/net/http_json.hpp"
#include "server/net/http_query.hpp"

namespace {

template <class F>
void expect_400_at_most(F&& f) {
  try {
    f();
  } catch (const vigil::server::ApiError&) {}
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::int64_t kNowUs = 1'795'000'000'000'000;
  const std::string_view target(reinterpret_cast<const char*>(data), size);
  try {
    const vigil::server::QueryParams q(target);
    for (const auto& s : q.segments()) {
      expect_400_at_most([&] { (void)vigil::server::positive_id(s, "id"); });
    }
    for (const auto& kv : q.params()) {
      const std::string& k = kv.first;  // named: clang-14 lambdas cannot capture structured bindings
      const std::string& v = kv.second;
      expect_400_at_most([&] { (void)q.time(k, kNowUs); });
      expect_400_at_most([&] { (void)q.number(k, 0.0, 64.0); });
      expect_400_at_most([&] { (void)vigil::server::parse_cursor_pair(v); });
      (void)vigil::server::redact_url(v);
      (void)q.all(k);
    }
    expect_400_at_most([&] { (void)q.cameras(); });
    expect_400_at_most([&] { (void)q.time("from", kNowUs); });
    expect_400_at_most([&] { vigil::server::allow_params(q, {"from", "to", "camera", "cameras", "limit"}); });
  } catch (const vigil::server::ApiError&) {}
  return 0;
}
