#include "server/net/http_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
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

namespace {

// Sends RES's head, then each chunk its producer makes, in chunked transfer encoding (Beast's
// buffer_body: a write per chunk, need_buffer between them); every write gets the session's
// write time-out anew, so a long export is bounded per chunk, not as a whole.
asio::awaitable<boost::system::error_code> write_streamed(beast::tcp_stream& stream, StreamedResponse& res) {
  const auto timeout = std::chrono::seconds(30);
  http::response<http::buffer_body> out{std::move(static_cast<http::response<http::empty_body>::header_type&>(res))};
  out.chunked(true);
  out.body().data = nullptr;
  out.body().more = true;
  http::response_serializer<http::buffer_body> sr{out};
  stream.expires_after(timeout);
  auto [ec, n] = co_await http::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
  (void)n;
  if (ec || !res.next) co_return ec;  // no producer: HEAD, the head alone
  for (;;) {
    std::optional<std::vector<std::byte>> chunk;
    try {
      chunk = co_await res.next();
    } catch (const std::exception& e) {
      // The head is out: the status cannot change any more. Ending the connection without the
      // last chunk tells the client the body is incomplete.
      log::error("streamed response failed", {{"error", e.what()}});
      co_return make_error_code(boost::system::errc::io_error);
    }
    if (chunk && chunk->empty()) continue;
    out.body().data = chunk ? chunk->data() : nullptr;
    out.body().size = chunk ? chunk->size() : 0;
    out.body().more = chunk.has_value();
    stream.expires_after(timeout);
    auto [wec, wn] = co_await http::async_write(stream, sr, asio::as_tuple(asio::use_awaitable));
    (void)wn;
    if (wec && wec != http::error::need_buffer) co_return wec;
    if (!chunk) co_return boost::system::error_code{};
  }
}

}  // namespace

void apply_limits(HttpRequestParser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
  parser.body_limit(limits.body_bytes);
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
    HttpRequestParser parser;
    apply_limits(parser, limits_);
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
    } else if (auto* st = std::get_if<StreamedResponse>(&reply)) {
      keep_alive = st->keep_alive();
      wec = co_await write_streamed(stream, *st);
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
