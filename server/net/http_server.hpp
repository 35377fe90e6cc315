#pragma once
// HTTP front end of vigild (Boost.Beast over Asio coroutines), plain or HTTPS (Beast's
// ssl_stream; the same session code for both, templated over the stream).
// Thread: runs on the network io_context; handlers must not block (catalog work goes through
// CatalogPool::run). Bad requests get a 4xx and the connection is closed; nothing thrown
// escapes a session.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <variant>

#include "server/net/http_body.hpp"
#include "server/net/listener.hpp"

namespace vigil::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Video bytes (exports, HLS segments, thumbnails), sent from a shared buffer without a copy.
using MediaResponse = boost::beast::http::response<SharedBytesBody>;
// A body made while it is sent (a streamed export): the head as it is, then NEXT's chunks in
// chunked transfer encoding until NEXT returns nothing. NEXT is awaited between writes, so the
// session holds one chunk at a time; the head is final once the first chunk is asked for. An
// error NEXT throws after the head is sent can only end the connection (the client sees a
// body without its last chunk).
using StreamedHead = boost::beast::http::response<boost::beast::http::empty_body>;
struct StreamedResponse : StreamedHead {
  using StreamedHead::message;
  std::function<boost::asio::awaitable<std::optional<std::vector<std::byte>>>()> next;
};
using HttpReply = std::variant<HttpResponse, MediaResponse, StreamedResponse>;
using HttpHandler = std::function<boost::asio::awaitable<HttpReply>(const HttpRequest&)>;

struct HttpLimits {
  std::size_t header_bytes = 8 * 1024;
  std::size_t body_bytes = 1024 * 1024;
  std::chrono::seconds read_timeout{15};  // whole request; slow clients are cut off
  ConnectionLimits connections;           // over them: 503 and closed
};

// The parser of one request as every session configures it (LIMITS' header and body sizes);
// the HTTP fuzz target (tests/fuzz/http_request_fuzz.cpp) parses with the same one.
using HttpRequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;
void apply_limits(HttpRequestParser& parser, const HttpLimits& limits);

// REQ's path for a log line: without its query string (it may carry ?access_token=), at most
// 200 characters.
std::string loggable_target(const HttpRequest& req);

// A JSON response with the usual headers.
HttpResponse json_response(const HttpRequest& req, boost::beast::http::status status, std::string body);

class HttpServer {
 public:
  // TLS: null serves plain HTTP; else every connection is HTTPS (the handshake must finish
  // within LIMITS.read_timeout, like a request).
  HttpServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, HttpHandler handler,
             HttpLimits limits = {}, NetworkThreads* sessions = nullptr,
             std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
  bool tls() const { return tls_ != nullptr; }
  void start() { listener_.start(); }
  void stop() { listener_.stop(); }  // open sessions end at their next read

 private:
  // Accepts one connection (and its TLS handshake), then serves it.
  boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket socket);
  // Requests and answers on one connection until it ends. STREAM: beast::tcp_stream or a
  // beast::ssl_stream over one.
  template <class Stream>
  boost::asio::awaitable<void> serve(Stream& stream);

  HttpHandler handler_;
  HttpLimits limits_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  Listener listener_;
};

}  // namespace vigil::server
