#include "server/wire/wire_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "common/log.hpp"
#include "proto/frame_codec.hpp"
#include "server/wire/wire_session.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace vigil::server {

WireServer::WireServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, WireOptions options)
    : options_(options),
      listener_(
          io, endpoint, "wire", [this](asio::ip::tcp::socket s) { return session(std::move(s)); }, options.sessions,
          options.connections,
          [tls = options.tls != nullptr](const std::string& why) {
            // Before its handshake a TLS peer could not read a frame: it is only closed.
            return tls ? std::string()
                       : proto::encode_frame(proto::make_error(errc::unavailable, "too many connections: " + why));
          }) {}

namespace {

// A peer that vanished (power cut, cable pulled) is noticed within about a minute even when
// nothing is being sent, instead of Linux's two hours.
void keep_alive(asio::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.set_option(asio::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  const int idle_s = 30, interval_s = 10, probes = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

}  // namespace

asio::awaitable<void> WireServer::session(asio::ip::tcp::socket socket) {
  const std::uint64_t id = next_session_id_++;
  const auto hello_due = std::chrono::steady_clock::now() + options_.hello_timeout;
  keep_alive(socket);
  boost::system::error_code ignored;
  const auto peer = socket.remote_endpoint(ignored);
  const std::string peer_text = peer.address().to_string() + ":" + std::to_string(peer.port());
  if (!options_.tls) {
    beast::tcp_stream stream(std::move(socket));
    co_await run_wire_session(stream, id, peer_text, options_, hello_due);
    co_return;
  }
  // TLS: the handshake counts against the same hello deadline as the hello itself.
  asio::ssl::stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *options_.tls);
  beast::get_lowest_layer(stream).expires_at(hello_due);
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
  if (ec) {
    log::warn("wire TLS handshake failed, closed", {{"session", id}, {"peer", peer_text}, {"error", ec.message()}});
    co_return;
  }
  co_await run_wire_session(stream, id, peer_text, options_, hello_due);
}

}  // namespace vigil::server
