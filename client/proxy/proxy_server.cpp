#include "client/proxy/proxy_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <fcntl.h>
#include <iostream>

#include "common/stream_close.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace vigil::client {
namespace {

// Viewer requests: small headers; bodies (passed-through POSTs) up to what vigild takes.
constexpr std::uint32_t kHeaderLimit = 8 * 1024;
constexpr std::uint64_t kBodyLimit = 1024 * 1024;  // as vigild's

ProxyReply text_reply(int status, std::string content_type, std::string body) {
  ProxyReply r;
  r.status = status;
  r.headers = {{"Content-Type", std::move(content_type)}, {"Cache-Control", "no-store"}};
  r.body = std::make_shared<const std::string>(std::move(body));
  return r;
}

struct Gauge {  // viewers connected, for the life of a session
  explicit Gauge(ProxyMetrics& m) : m_(m) { ++m_.viewers_connected, ++m_.viewers_total; }
  ~Gauge() { --m_.viewers_connected; }
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;
  ProxyMetrics& m_;
};

}  // namespace

ProxyServer::ProxyServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, ProxyCore& core,
                         std::chrono::seconds read_timeout, bool access_log, std::shared_ptr<asio::ssl::context> tls)
    : io_(io),
      acceptor_(io, endpoint),
      core_(core),
      read_timeout_(read_timeout),
      access_log_(access_log),
      tls_(std::move(tls)) {}

// Close-on-exec, like every descriptor vigild opens (docs/least-privilege.md): Asio's accept does
// not set it, and a child started later (an FFmpeg helper, say) must not inherit viewers'
// connections.
static void set_cloexec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void ProxyServer::start() {
  set_cloexec(acceptor_.native_handle());
  asio::co_spawn(io_, accept_loop(), asio::detached);
}

void ProxyServer::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

asio::awaitable<void> ProxyServer::accept_loop() {
  while (acceptor_.is_open()) {
    auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) break;
    if (ec) continue;  // e.g. out of descriptors for a moment: keep serving the others
    set_cloexec(socket.native_handle());
    asio::co_spawn(io_, session(std::move(socket)), asio::detached);
  }
}

ProxyReply ProxyServer::local_route(const ViewerRequest& req, bool& handled) {
  const std::string path = req.target.substr(0, req.target.find('?'));
  handled = true;
  if (path == "/healthz") {
    return text_reply(200, "application/json", R"({"status":"ok","role":"proxy","version":")" VIGIL_VERSION "\"}");
  }
  if (path == "/metrics") {
    auto& m = core_.metrics();
    m.cache_bytes = core_.cache().bytes();
    m.cache_entries = core_.cache().entries();
    return text_reply(200, "text/plain; version=0.0.4; charset=utf-8", prometheus_text(m));
  }
  handled = false;
  return {};
}

asio::awaitable<void> ProxyServer::session(asio::ip::tcp::socket socket) {
  Gauge gauge(core_.metrics());
  if (!tls_) {
    beast::tcp_stream stream(std::move(socket));
    co_await serve(stream);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *tls_);
  beast::get_lowest_layer(stream).expires_after(read_timeout_);
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return;  // plain HTTP to the HTTPS port, or a viewer that does not trust the certificate
  co_await serve(stream);
}

template <class Stream>
asio::awaitable<void> ProxyServer::serve(Stream& stream) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    beast::get_lowest_layer(stream).expires_after(read_timeout_);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    (void)n;
    ProxyReply reply;
    bool keep_alive = false;
    std::string method;
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
        ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated) {
      break;
    }
    if (ec) {
      reply = json_error(ec == http::error::header_limit ? 431
                         : ec == http::error::body_limit ? 413
                                                         : 400,
                         ec.message());
    } else {
      const auto& in = parser.get();
      keep_alive = in.keep_alive();
      ViewerRequest req{.method = std::string(in.method_string()),
                        .target = std::string(in.target()),
                        .authorization = std::string(in[http::field::authorization]),
                        .range = std::string(in[http::field::range]),
                        .if_none_match = std::string(in[http::field::if_none_match]),
                        .if_range = std::string(in[http::field::if_range]),
                        .content_type = std::string(in[http::field::content_type]),
                        .body = in.body()};
      method = req.method;
      bool handled = false;
      reply = local_route(req, handled);
      if (!handled) {
        try {
          reply = co_await core_.handle(req);
        } catch (const std::exception& e) {
          std::cerr << "vigil proxy: " << req.target.substr(0, 200) << ": " << e.what() << "\n";
          reply = json_error(500, "internal proxy error");
        }
      }
      if (access_log_) {
        // The path without its query string: it may carry ?access_token=.
        std::cerr << "vigil proxy: " << req.method << " "
                  << req.target.substr(0, std::min<std::size_t>(req.target.find('?'), 300))
                  << (req.range.empty() ? "" : " [" + req.range + "]") << " -> " << reply.status << " "
                  << reply.header("X-Vigil-Proxy") << " " << reply.view().size() << "\n";
      }
    }
    // The answer, written from the shared bytes where they lie (REPLY holds them until done).
    const std::string_view body = method == "HEAD" ? std::string_view() : reply.view();
    http::response<http::span_body<const char>> res{static_cast<http::status>(reply.status), 11};
    res.set(http::field::server, "vigil-proxy/" VIGIL_VERSION);
    std::string head_length;
    for (const auto& [k, v] : reply.headers) {
      if (beast::iequals(k, "Content-Length")) head_length = v;
      else res.set(k, v);
    }
    res.body() = boost::span<const char>(body.data(), body.size());
    res.keep_alive(keep_alive);
    if (method == "HEAD" && !head_length.empty()) {
      res.set(http::field::content_length, head_length);
    } else {
      res.prepare_payload();
    }
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30) + std::chrono::seconds(body.size() >> 20));
    auto [wec, written] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    (void)written;
    if (wec) break;
    core_.metrics().bytes_served += body.size();
    if (!keep_alive) break;
  }
  co_await close_stream(stream);
}

}  // namespace vigil::client
