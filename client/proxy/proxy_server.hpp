#pragma once
// The proxy's viewer side: accepts HTTP/1.1 connections (Boost.Beast), one session coroutine per
// connection (HTTPS when given a TLS context: Beast's ssl_stream, the same session code), each writing its answers from shared immutable buffers, so a slow viewer only ever
// holds up itself: its write is cut off by a time-out (30 s plus 1 s per MB of body). /healthz
// and /metrics are answered here (open, like vigild's); everything else goes to ProxyCore.
// Thread: one io_context thread for everything. Errors: a bad request gets its 4xx and the
// connection closes; nothing thrown escapes a session.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>

#include "client/proxy/proxy_core.hpp"

namespace vigil::client {

class ProxyServer {
 public:
  // Binds ENDPOINT now (throws if it cannot). TLS: null serves plain HTTP; else HTTPS only (the
  // handshake must finish within READ_TIMEOUT).
  ProxyServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, ProxyCore& core,
              std::chrono::seconds read_timeout = std::chrono::seconds(15), bool access_log = false,
              std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  void start();
  void stop();  // closes the acceptor; sessions end with the io_context

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket socket);
  // A viewer's requests and answers until the connection ends. STREAM: beast::tcp_stream or a
  // beast::ssl_stream over one.
  template <class Stream>
  boost::asio::awaitable<void> serve(Stream& stream);
  ProxyReply local_route(const ViewerRequest& req, bool& handled);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  ProxyCore& core_;
  std::chrono::seconds read_timeout_;
  bool access_log_;  // one line per request on stderr
  std::shared_ptr<boost::asio::ssl::context> tls_;
};

}  // namespace vigil::client
