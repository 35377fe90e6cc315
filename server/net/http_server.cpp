#include "server/net/http_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "common/log.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace vigil::server {

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

HttpServer::HttpServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, HttpHandler handler,
                       HttpLimits limits, NetworkThreads* sessions)
    : handler_(std::move(handler)),
      limits_(limits),
      listener_(
          io, endpoint, "http", [this](asio::ip::tcp::socket s) { return session(std::move(s)); }, sessions) {}

asio::awaitable<void> HttpServer::session(asio::ip::tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits_.header_bytes));
    parser.body_limit(limits_.body_bytes);
    stream.expires_after(limits_.read_timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    (void)n;
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
        ec == asio::error::eof || ec == asio::error::connection_reset) {
      break;
    }
    if (ec) {
      // Oversized headers/body or malformed syntax: answer once, then close.
      http::status status = (ec == http::error::header_limit) ? http::status::request_header_fields_too_large
                            : (ec == http::error::body_limit) ? http::status::payload_too_large
                                                              : http::status::bad_request;
      HttpRequest blank;
      blank.version(11);
      blank.keep_alive(false);
      auto res = json_response(blank, status, R"({"error":")" + std::string(ec.message()) + R"("})");
      stream.expires_after(std::chrono::seconds(5));
      co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
      break;
    }
    const HttpRequest& req = parser.get();
    HttpReply reply;
    try {
      reply = co_await handler_(req);
    } catch (const std::exception& e) {
      log::error("http handler failed", {{"target", loggable_target(req)}, {"error", e.what()}});
      reply = json_response(req, http::status::internal_server_error, R"({"error":"internal error"})");
    }
    // Media bodies are large: the write time-out scales with them (at least 1 MB/s).
    std::size_t body_bytes = 0;
    if (auto* m = std::get_if<MediaResponse>(&reply)) body_bytes = m->body().length;
    stream.expires_after(limits_.read_timeout + std::chrono::seconds(body_bytes >> 20));
    boost::system::error_code wec;
    bool keep_alive = false;
    if (auto* r = std::get_if<HttpResponse>(&reply)) {
      auto [ec2, wn] = co_await http::async_write(stream, *r, asio::as_tuple(asio::use_awaitable));
      (void)wn;
      wec = ec2;
      keep_alive = r->keep_alive();
    } else {
      auto& m = std::get<MediaResponse>(reply);
      auto [ec2, wn] = co_await http::async_write(stream, m, asio::as_tuple(asio::use_awaitable));
      (void)wn;
      wec = ec2;
      keep_alive = m.keep_alive();
    }
    if (wec || !keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
}

}  // namespace vigil::server
