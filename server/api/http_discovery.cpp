#include "server/api/http_discovery.hpp"

#include <boost/json.hpp>
#include <charconv>

#include "onvif/discovery.hpp"
#include "server/media/media_pool.hpp"
#include "server/net/api_error.hpp"
#include "server/net/http_json.hpp"

namespace vigil::server {
namespace http = boost::beast::http;

boost::asio::awaitable<HttpResponse> discovery_route(const RouteContext& ctx, const HttpRequest& req,
                                                     const QueryParams& q) {
  if (q.segments().size() != 3) co_return json_error(req, http::status::not_found, "no such resource");
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    co_return method_not_allowed(req, "GET, HEAD");
  }
  onvif::DiscoveryOptions options;
  if (const auto t = q.get("timeout")) {
    int seconds = 0;
    const auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), seconds);
    if (ec != std::errc{} || p != t->data() + t->size() || seconds < 1 || seconds > 10) {
      throw BadRequest("timeout: whole seconds from 1 to 10");
    }
    options.timeout = std::chrono::seconds(seconds);
  }
  if (const auto probe = q.get("probe")) options.probe_address = *probe;
  // Blocking for up to timeout + 5 s: on the media pool, as muxing is.
  auto devices = co_await run_media(ctx.media, [&] {
    try {
      return onvif::discover(options);
    } catch (const onvif::OnvifError& e) {
      throw BadRequest(e.what());
    }
  });
  co_return json_response(req, http::status::ok, boost::json::serialize(onvif::devices_json(devices)));
}

}  // namespace vigil::server
