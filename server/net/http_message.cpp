// The parts of HTTP that touch no socket: a request's parser limits, its loggable path and a JSON
// response. They live apart from the server (sessions, TLS, streamed writes) so that the parsers'
// library (vigil_http_parse) and the HTTP fuzz targets build without the server's coroutines.
#include <algorithm>
#include <boost/beast/http/field.hpp>
#include <string>
#include <string_view>

#include "server/net/http_server.hpp"

namespace vigil::server {

namespace http = boost::beast::http;

void apply_limits(HttpRequestParser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
  parser.body_limit(limits.body_bytes);
}

std::string loggable_target(const HttpRequest& req) {
  const std::string_view t(req.target().data(), req.target().size());
  return std::string(t.substr(0, std::min<std::size_t>(t.find('?'), 200)));
}

HttpResponse json_response(const HttpRequest& req, http::status status, std::string body) {
  HttpResponse res{status, req.version()};
  res.set(http::field::server, "vigild/" VIGIL_VERSION);
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace vigil::server
