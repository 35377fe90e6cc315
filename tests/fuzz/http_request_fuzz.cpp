// Fuzz target: HTTP requests as vigild reads them (server/net/http_server): Boost.Beast's request
// parser with the session's limits (apply_limits), fed in pieces as a socket delivers them, one
// request after another on a keep-alive connection; then what every request goes through before
// its route: the log line of its target, the query string, the Range and Content-Type fields.
// Only ApiError (a 4xx) may escape the route-side checks.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/net/api_error.hpp"
#include "server/net/http_json.hpp"
#include "server/net/http_query.hpp"
#include "server/net/http_range.hpp"
#include "server/net/http_server.hpp"

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 128u;
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  // Small limits (1 KiB of header, 4 KiB of body) so the fuzzer reaches them with small inputs.
  const vigil::server::HttpLimits limits{.header_bytes = 1024, .body_bytes = 4096};

  std::string buf;      // what the socket delivered and the parser has not consumed
  std::size_t fed = 0;  // of IN
  for (int requests = 0; requests < 8; ++requests) {
    vigil::server::HttpRequestParser parser;
    vigil::server::apply_limits(parser, limits);
    boost::system::error_code ec;
    while (!parser.is_done()) {
      const std::size_t used = parser.put(boost::asio::buffer(buf), ec);
      buf.erase(0, used);
      if (ec == http::error::need_more || (!ec && used == 0)) {
        if (fed == in.size()) {
          parser.put_eof(ec);
          if (!ec && !parser.is_done()) ec = http::error::partial_message;
          break;
        }
        const std::size_t n = std::min(piece, in.size() - fed);
        buf.append(in.substr(fed, n));
        fed += n;
        ec = {};
        continue;
      }
      if (ec) break;
    }
    if (ec || !parser.is_done()) return 0;  // the session answers 4xx (or nothing) and closes
    const vigil::server::HttpRequest& req = parser.get();
    (void)vigil::server::loggable_target(req);
    (void)vigil::server::parse_byte_range(req[http::field::range], 1u << 20);
    (void)vigil::server::is_json_content_type(req[http::field::content_type]);
    try {
      const vigil::server::QueryParams q(req.target());
      (void)q.get("access_token");
      (void)q.cameras();
    } catch (const vigil::server::ApiError&) {}
    if (!req.keep_alive()) return 0;
  }
  return 0;
}
