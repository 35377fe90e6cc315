#include "server/api/http_metrics.hpp"

#include <chrono>
#include <optional>
#include <utility>
#include <variant>

namespace http = boost::beast::http;

namespace vigil::server {
namespace {

// TEXT without the series whose camera label names a camera GRANT does not see. Camera names
// hold no quote or backslash (catalog::is_valid_camera_name), so the label value ends at '"'.
std::string only_seen_cameras(const std::string& text, const Grant& grant) {
  constexpr std::string_view label = "camera=\"";
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + start, end - start);
    bool keep = true;
    if (!line.starts_with('#')) {
      if (const auto at = line.find(label); at != std::string_view::npos) {
        const auto from = at + label.size();
        keep = grant.sees(line.substr(from, line.find('"', from) - from));
      }
    }
    if (keep) out.append(line);
    start = end;
  }
  return out;
}

}  // namespace

HttpResponse metrics_response(const Metrics& metrics, const HttpRequest& req, const Grant* grant) {
  HttpResponse res{http::status::ok, req.version()};
  res.set(http::field::server, "vigild/" VIGIL_VERSION);
  res.set(http::field::content_type, metrics::kContentType);
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = grant && grant->scoped() ? only_seen_cameras(metrics.render(), *grant) : metrics.render();
  res.prepare_payload();
  if (req.method() == http::verb::head) res.body().clear();  // Content-Length stays the GET's
  return res;
}

std::string_view http_route_name(std::string_view path) noexcept {
  if (const auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path == "/healthz") return "healthz";
  if (path == "/metrics") return "metrics";
  if (path == "/api/v1/cameras") return "cameras";
  if (path == "/api/v1/timeline") return "timeline";
  if (path == "/api/v1/events") return "events";
  if (path.starts_with("/api/v1/events/") && path.size() > 15 && path.find('/', 15) == std::string_view::npos) {
    return "event";
  }
  constexpr std::string_view cams = "/api/v1/cameras/";
  if (path.starts_with(cams)) {
    const auto rest = path.substr(cams.size());
    const auto slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0) {
      const auto tail = rest.substr(slash + 1);
      if (tail == "timeline") return "camera_timeline";
      if (tail == "export.mp4") return "camera_export";
      if (tail == "thumbnail.jpg") return "camera_thumbnail";
      if (tail == "hls.m3u8") return "camera_hls_playlist";
      if (tail.starts_with("hls/") && tail.size() > 4 && tail.find('/', 4) == std::string_view::npos) {
        return "camera_hls_segment";
      }
      if (tail == "live.m3u8") return "camera_live_playlist";
      if (tail.starts_with("live/") && tail.size() > 5 && tail.find('/', 5) == std::string_view::npos) {
        return "camera_live_segment";
      }
    }
  }
  return "other";
}

HttpHandler with_request_metrics(HttpHandler handler, Metrics& metrics) {
  return [handler = std::move(handler), &metrics](const HttpRequest& req) -> boost::asio::awaitable<HttpReply> {
    const auto start = std::chrono::steady_clock::now();
    const auto route = http_route_name(std::string_view(req.target().data(), req.target().size()));
    // A throwing handler is answered 500 by the session; count it as such before rethrowing.
    std::optional<HttpReply> res;
    try {
      res = co_await handler(req);
    } catch (...) {
      metrics.http_request(route, 500, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      throw;
    }
    const unsigned status = std::visit([](const auto& r) { return r.result_int(); }, *res);
    metrics.http_request(route, status,
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    co_return std::move(*res);
  };
}

}  // namespace vigil::server
