#include "server/net/http_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "common/log.hpp"
#include "common/stream_close.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace vigil::server {

namespace {

// Sends RES's head, then each chunk its producer makes, in chunked transfer encoding (Beast's
// buffer_body: a write per chunk, need_buffer between them); every write gets the session's
// write time-out anew, so a long export is bounded per chunk, not as a whole.
template <class Stream>
asio::awaitable<boost::system::error_code> write_streamed(Stream& stream, StreamedResponse& res) {
  const auto timeout = std::chrono::seconds(30);
  http::response<http::buffer_body> out{std::move(static_cast<http::response<http::empty_body>::header_type&>(res))};
  out.chunked(true);
  out.body().data = nullptr;
  out.body().more = true;
  http::response_serializer<http::buffer_body> sr{out};
  beast::get_lowest_layer(stream).expires_after(timeout);
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
    beast::get_lowest_layer(stream).expires_after(timeout);
    auto [wec, wn] = co_await http::async_write(stream, sr, asio::as_tuple(asio::use_awaitable));
    (void)wn;
    if (wec && wec != http::error::need_buffer) co_return wec;
    if (!chunk) co_return boost::system::error_code{};
  }
}

// What a connection over the connection limits is told (the listener sends it, then closes).
std::string refusal_503(const std::string& why) {
  const std::string body = R"({"error":"too many connections: )" + why + R"("})";
  return "HTTP/1.1 503 Service Unavailable\r\nServer: vigild/" VIGIL_VERSION
         "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nRetry-After: 1\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A read that ended because the peer went away or was too slow: no answer is due.
bool connection_ended(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
         ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::ssl::error::stream_truncated;  // an HTTPS peer that closed without close_notify
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, HttpHandler handler,
                       HttpLimits limits, NetworkThreads* sessions, std::shared_ptr<asio::ssl::context> tls)
    : handler_(std::move(handler)),
      limits_(limits),
      tls_(std::move(tls)),
      listener_(
          io, endpoint, "http", [this](asio::ip::tcp::socket s) { return session(std::move(s)); }, sessions,
          limits.connections, refusal_503) {}

asio::awaitable<void> HttpServer::session(asio::ip::tcp::socket socket) {
  if (!tls_) {
    beast::tcp_stream stream(std::move(socket));
    co_await serve(stream);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *tls_);
  // The handshake counts as part of the first request: a peer that stalls in it is cut off alike.
  beast::get_lowest_layer(stream).expires_after(limits_.read_timeout);
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
  if (ec) {
    // E.g. plain HTTP sent to the HTTPS port, or a client that does not trust the certificate.
    boost::system::error_code ignored;
    const auto peer = beast::get_lowest_layer(stream).socket().remote_endpoint(ignored);
    log::debug("https handshake failed, closed",
               {{"peer", peer.address().to_string() + ":" + std::to_string(peer.port())}, {"error", ec.message()}});
    co_return;
  }
  co_await serve(stream);
}

template <class Stream>
asio::awaitable<void> HttpServer::serve(Stream& stream) {
  beast::flat_buffer buffer;
  for (;;) {
    HttpRequestParser parser;
    apply_limits(parser, limits_);
    beast::get_lowest_layer(stream).expires_after(limits_.read_timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    (void)n;
    if (connection_ended(ec)) break;
    if (ec) {
      // Oversized headers/body or malformed syntax: answer once, then close.
      http::status status = (ec == http::error::header_limit) ? http::status::request_header_fields_too_large
                            : (ec == http::error::body_limit) ? http::status::payload_too_large
                                                              : http::status::bad_request;
      HttpRequest blank;
      blank.version(11);
      blank.keep_alive(false);
      auto res = json_response(blank, status, R"({"error":")" + std::string(ec.message()) + R"("})");
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
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
    beast::get_lowest_layer(stream).expires_after(limits_.read_timeout + std::chrono::seconds(body_bytes >> 20));
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
  co_await close_stream(stream);
}

}  // namespace vigil::server
