// Fuzz target: the JSON bodies of the admin routes (server/net/http_json): json_object_body with
// each route's accepted fields (cameras, locks, tokens), then the typed readers as those routes
// call them. Only ApiError (400/415) may escape; anything else would be a 500 for a client's
// body, or a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/net/api_error.hpp"
#include "server/net/http_json.hpp"

namespace {

template <class F>
void expect_400_at_most(F&& f) {
  try {
    f();
  } catch (const vigil::server::ApiError&) {}
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using namespace vigil::server;
  HttpRequest req;
  req.method(boost::beast::http::verb::post);
  // The first byte picks the Content-Type (mostly JSON, so the parser is what gets fuzzed).
  static const char* const kTypes[] = {"application/json", "Application/JSON; charset=utf-8", "text/plain", ""};
  req.set(boost::beast::http::field::content_type, kTypes[data[0] % 8 < 6 ? data[0] % 2 : 2 + data[0] % 2]);
  req.body().assign(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch ((data[0] >> 3) % 3) {
      case 0: {  // POST/PATCH /api/v1/cameras
        const auto o = json_object_body(req, {"name", "url", "substream_url", "enabled", "retention_days"});
        expect_400_at_most([&] { (void)string_field(o, "name", 64); });
        expect_400_at_most([&] {
          if (auto url = string_field(o, "url", 2048)) (void)redact_url(*url);
        });
        expect_400_at_most([&] { (void)is_null_field(o, "substream_url"); });
        expect_400_at_most([&] { (void)bool_field(o, "enabled"); });
        expect_400_at_most([&] { (void)int_field(o, "retention_days", 1, 36500); });
        break;
      }
      case 1: {  // POST /api/v1/locks
        const auto o = json_object_body(req, {"camera", "from", "to", "from_us", "to_us", "reason", "locked_by"});
        expect_400_at_most([&] { (void)string_field(o, "camera", 64); });
        expect_400_at_most([&] { (void)string_field(o, "from", 64); });
        expect_400_at_most([&] { (void)int_field(o, "from_us", 0, INT64_MAX); });
        expect_400_at_most([&] { (void)int_field(o, "to_us", INT64_MIN, INT64_MAX); });
        expect_400_at_most([&] { (void)string_field(o, "reason", 1024); });
        break;
      }
      default: {  // POST /api/v1/tokens
        const auto o = json_object_body(req, {"role", "label", "expires_in_s"});
        expect_400_at_most([&] { (void)string_field(o, "role", 16); });
        expect_400_at_most([&] { (void)string_field(o, "label", 256); });
        expect_400_at_most([&] { (void)int_field(o, "expires_in_s", 1, 10LL * 365 * 86400); });
        break;
      }
    }
  } catch (const ApiError&) {}
  return 0;
}
