#include "client/proxy/proxy_upstream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <stdexcept>

#include "common/tls_context.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace vigil::client {
namespace {

// Fields of an upstream answer that are about the connection, not the resource (RFC 9110
// §7.6.1), and the ones the proxy sets itself: not passed on. Everything else is (ETag,
// Cache-Control, WWW-Authenticate, Content-Security-Policy, ...).
bool hop_by_hop(std::string_view name) {
  for (std::string_view h : {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "TE", "Trailer",
                             "Upgrade", "Proxy-Authenticate", "Proxy-Authorization", "Content-Length", "Server"}) {
    if (beast::iequals(name, h)) return true;
  }
  return false;
}

UpstreamAnswer failure(int status, std::string reason) { return {json_error(status, reason), false}; }

}  // namespace

std::vector<UpstreamNode> parse_upstreams(const std::string& list) {
  std::vector<UpstreamNode> out;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const auto end = std::min(list.find(',', begin), list.size());
    std::string item = list.substr(begin, end - begin);
    bool tls = false;
    for (std::string_view scheme : {"https://", "tls://"}) {
      if (item.starts_with(scheme)) item = item.substr(scheme.size()), tls = true;
    }
    if (item.starts_with("http://")) item = item.substr(7);
    const auto colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size() ||
        item.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      throw std::invalid_argument("upstream '" + item + "' is not HOST:PORT");
    }
    std::string host = item.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    out.push_back({std::move(host), item.substr(colon + 1), tls, nullptr});
    begin = end + 1;
  }
  return out;
}

namespace {

// The request and its answer on STREAM (connected, and through its handshake when TLS).
template <class Stream>
asio::awaitable<UpstreamAnswer> exchange(Stream& stream, const UpstreamNode& node, const UpstreamRequest& req,
                                         std::size_t max_body) {
  http::request<http::string_body> out;
  out.method_string(req.method);
  out.target(req.target);
  out.version(11);
  out.set(http::field::host, node.name());
  out.set(http::field::user_agent, "vigil-proxy/" VIGIL_VERSION);
  for (const auto& [k, v] : req.headers) out.set(k, v);
  out.keep_alive(false);
  out.body() = req.body;
  if (!req.body.empty() || (req.method != "GET" && req.method != "HEAD")) out.prepare_payload();
  auto [wec, wn] = co_await http::async_write(stream, out, asio::as_tuple(asio::use_awaitable));
  (void)wn;
  if (wec == beast::error::timeout) co_return failure(504, "upstream " + node.name() + " did not answer in time");
  if (wec) co_return failure(502, "upstream " + node.name() + " closed the connection: " + wec.message());

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_body);
  if (req.method == "HEAD") parser.skip(true);
  auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
  (void)n;
  if (ec == beast::error::timeout) co_return failure(504, "upstream " + node.name() + " did not answer in time");
  if (ec == http::error::body_limit)
    co_return failure(502, "upstream " + node.name() + " answer is too large to proxy");
  if (ec) co_return failure(502, "upstream " + node.name() + " answer is broken: " + ec.message());
  beast::error_code ignored;
  beast::get_lowest_layer(stream).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);

  auto res = parser.release();
  UpstreamAnswer a;
  a.reached = true;
  a.reply.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    if (!hop_by_hop(field.name_string()))
      a.reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  // HEAD: the length the GET would have.
  if (req.method == "HEAD") {
    if (auto it = res.find(http::field::content_length); it != res.end()) {
      a.reply.headers.emplace_back("Content-Length", std::string(it->value()));
    }
  }
  a.reply.body = std::make_shared<const std::string>(std::move(res.body()));
  co_return a;
}

}  // namespace

asio::awaitable<UpstreamAnswer> fetch_upstream(const UpstreamNode& node, const UpstreamRequest& req,
                                               std::chrono::milliseconds timeout, std::size_t max_body) {
  auto ex = co_await asio::this_coro::executor;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  asio::ip::tcp::resolver resolver(ex);
  auto [rec, results] = co_await resolver.async_resolve(node.host, node.port, asio::as_tuple(asio::use_awaitable));
  if (rec) co_return failure(502, "upstream " + node.name() + " cannot be resolved: " + rec.message());
  beast::tcp_stream stream(ex);
  stream.expires_at(deadline);
  auto [cec, ep] = co_await stream.async_connect(results, asio::as_tuple(asio::use_awaitable));
  (void)ep;
  if (cec == beast::error::timeout) co_return failure(504, "upstream " + node.name() + " did not accept in time");
  if (cec) co_return failure(502, "upstream " + node.name() + " is unreachable: " + cec.message());
  if (!node.tls) co_return co_await exchange(stream, node, req, max_body);

  if (!node.tls_context) co_return failure(502, "upstream " + node.name() + ": no TLS context");
  beast::ssl_stream<beast::tcp_stream> tls(std::move(stream), *node.tls_context);
  beast::get_lowest_layer(tls).expires_at(deadline);  // the handshake is part of the exchange's time
  verify_server_name(tls.native_handle(), node.host);
  auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(asio::use_awaitable));
  if (hec == beast::error::timeout) co_return failure(504, "upstream " + node.name() + " did not answer in time");
  if (hec) {
    // Its certificate is not one --upstream-ca vouches for, or the node does not speak TLS.
    co_return failure(502, "upstream " + node.name() + ": TLS handshake failed: " + hec.message());
  }
  co_return co_await exchange(tls, node, req, max_body);
}

}  // namespace vigil::client
