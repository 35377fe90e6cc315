#include "server/wire_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <vector>

#include "common/log.hpp"
#include "proto/frame_codec.hpp"
#include "proto/vigil.pb.h"

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace vigil::server {
namespace {

// What a session answers to one frame. Requests this build does not serve yet get an
// UNSUPPORTED error and the session stays open, so a client can tell "not here" from "broken".
struct Reply {
  proto::Envelope msg;
  bool close = false;
};

Reply handle(const proto::Frame& frame, bool& said_hello, std::uint64_t session_id, const WireOptions& options) {
  const auto& msg = frame.msg;
  if (!said_hello) {
    if (!msg.has_hello()) {
      return {proto::make_error(errc::unauthenticated, "the first message must be hello"), true};
    }
    if (msg.hello().protocol_version() != proto::kProtocolVersion) {
      return {proto::make_error(errc::unsupported, "protocol version " +
                                                       std::to_string(msg.hello().protocol_version()) +
                                                       " not supported; this server speaks " +
                                                       std::to_string(proto::kProtocolVersion)),
              true};
    }
    said_hello = true;
    Reply r;
    auto* hr = r.msg.mutable_hello_reply();
    hr->set_server_version(VIGIL_VERSION);
    hr->set_protocol_version(proto::kProtocolVersion);
    hr->set_max_frame_bytes(options.max_payload_bytes);
    hr->set_session_id(session_id);
    return r;
  }
  switch (msg.body_case()) {
    case proto::Envelope::kPing: {
      Reply r;
      r.msg.mutable_pong()->set_nonce(msg.ping().nonce());
      return r;
    }
    case proto::Envelope::kHello:
      return {proto::make_error(errc::invalid_argument, "hello was already received on this connection"), false};
    case proto::Envelope::kOpenRecord:
    case proto::Envelope::kMediaPacket:
      return {proto::make_error(errc::unsupported, "this server does not accept recordings yet"), false};
    case proto::Envelope::kOpenPlayback:
    case proto::Envelope::kControl:
      return {proto::make_error(errc::unsupported, "this server does not serve playback yet"), false};
    case proto::Envelope::kQueryRequest:
      return {proto::make_error(errc::unsupported, "this server does not answer queries yet"), false};
    default:
      return {proto::make_error(errc::invalid_argument, "message is not a client request"), false};
  }
}

}  // namespace

WireServer::WireServer(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, WireOptions options)
    : options_(options),
      listener_(io, endpoint, "wire", [this](asio::ip::tcp::socket s) { return session(std::move(s)); }) {}

asio::awaitable<void> WireServer::session(asio::ip::tcp::socket socket) {
  const std::uint64_t id = next_session_id_++;
  boost::system::error_code ignored;
  const auto peer = socket.remote_endpoint(ignored);
  const std::string peer_text = peer.address().to_string() + ":" + std::to_string(peer.port());
  beast::tcp_stream stream(std::move(socket));
  proto::FrameDecoder decoder(proto::FrameLimits{.max_payload_bytes = options_.max_payload_bytes});
  std::vector<std::byte> buf(64 * 1024);
  std::string out;
  bool said_hello = false;
  log::debug("wire session opened", {{"session", id}, {"peer", peer_text}});

  auto send = [&](const proto::Envelope& msg) -> asio::awaitable<bool> {
    out.clear();
    proto::append_frame(out, msg);
    stream.expires_after(std::chrono::seconds(30));
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), asio::as_tuple(asio::use_awaitable));
    (void)n;
    co_return !ec;
  };

  for (bool open = true; open;) {
    if (!said_hello) stream.expires_after(options_.hello_timeout);
    else stream.expires_never();
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (ec == beast::error::timeout) {
        // tcp_stream has already closed the socket: nothing can be said to this peer.
        log::warn("wire peer sent no hello in time, closed", {{"session", id}, {"peer", peer_text}});
      } else if (auto fin = decoder.finish(); !fin) {
        // The peer may only have shut down its sending side: tell it why its data was dropped.
        log::warn("wire peer closed mid-frame", {{"session", id}, {"peer", peer_text}});
        co_await send(proto::make_error(errc::truncated_frame, fin.error().message()));
      }
      break;
    }
    decoder.feed(std::span<const std::byte>(buf.data(), n));
    for (;;) {
      auto next = decoder.next();
      if (!next) {
        auto code = static_cast<errc>(next.error().value());
        log::warn("wire protocol error, closing", {{"session", id}, {"peer", peer_text},
                                                   {"error", errc_name(code)}});
        co_await send(proto::make_error(code, next.error().message()));
        open = false;
        break;
      }
      if (!*next) break;
      auto reply = handle(**next, said_hello, id, options_);
      if (!co_await send(reply.msg) || reply.close) {
        open = false;
        break;
      }
    }
  }
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  log::debug("wire session closed", {{"session", id}});
}

}  // namespace vigil::server
