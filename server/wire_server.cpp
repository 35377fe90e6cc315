#include "server/wire_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <array>
#include <vector>

#include "common/log.hpp"
#include "proto/frame_codec.hpp"
#include "proto/vigil.pb.h"
#include "server/playback_channel.hpp"
#include "server/recording_service.hpp"

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
      // Served by the session itself when a recording service is configured.
      return {proto::make_error(errc::unsupported, "this server has no volume to record on"), false};
    case proto::Envelope::kOpenPlayback:
    case proto::Envelope::kControl:
      // Served by the session itself when a playback service is configured.
      return {proto::make_error(errc::unsupported, "this server has no volume to play from"), false};
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
  if (!options_.tls) {
    beast::tcp_stream stream(std::move(socket));
    co_await serve(stream, id, peer_text);
    co_return;
  }
  // TLS: the handshake must finish within the hello timeout, like the hello itself.
  asio::ssl::stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *options_.tls);
  beast::get_lowest_layer(stream).expires_after(options_.hello_timeout);
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
  if (ec) {
    log::warn("wire TLS handshake failed, closed", {{"session", id}, {"peer", peer_text}, {"error", ec.message()}});
    co_return;
  }
  co_await serve(stream, id, peer_text);
}

template <class Stream>
asio::awaitable<void> WireServer::serve(Stream& stream, std::uint64_t id, const std::string& peer_text) {
  boost::system::error_code ignored;
  auto& tcp = beast::get_lowest_layer(stream);
  proto::FrameDecoder decoder(proto::FrameLimits{.max_payload_bytes = options_.max_payload_bytes});
  std::vector<std::byte> buf(64 * 1024);
  std::string out;
  bool said_hello = false;
  log::debug("wire session opened", {{"session", id}, {"peer", peer_text}});

  auto send = [&](const proto::Envelope& msg) -> asio::awaitable<bool> {
    out.clear();
    proto::append_frame(out, msg);
    tcp.expires_after(std::chrono::seconds(30));
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), asio::as_tuple(asio::use_awaitable));
    (void)n;
    co_return !ec;
  };

  // Acknowledgements come from the disk's IO thread at any time: it stores the durable
  // sequence and posts a wake-up that cancels this timer, so a session waiting for the
  // client's next bytes still sends them at once. Sessions run on their own strand.
  struct Wake {
    explicit Wake(asio::any_io_executor ex) : timer(ex) {}
    asio::steady_timer timer;
    std::atomic<bool> pending{false};
  };
  auto executor = co_await asio::this_coro::executor;
  auto wake = std::make_shared<Wake>(executor);
  std::weak_ptr<Wake> weak_wake = wake;
  auto notify = [weak_wake, executor] {
    if (auto w = weak_wake.lock()) {
      w->pending = true;
      asio::post(executor, [weak_wake] {
        if (auto w2 = weak_wake.lock()) w2->timer.cancel();
      });
    }
  };
  // A named std::function: GCC 12 destroys non-trivial temporaries of a co_await expression
  // twice, so nothing converted on the fly is passed to an awaited call.
  const std::function<void()> notify_fn = notify;
  std::shared_ptr<RecordingService::Recording> recording;
  std::uint64_t acked_sent = 0;
  auto send_acks = [&]() -> asio::awaitable<bool> {
    if (!recording) co_return true;
    const auto durable = recording->durable.load(std::memory_order_acquire);
    if (durable <= acked_sent) co_return true;
    proto::Envelope ack;
    ack.mutable_durable_ack()->set_stream_id(recording->stream_id);
    ack.mutable_durable_ack()->set_last_sequence(durable);
    acked_sent = durable;
    co_return co_await send(ack);
  };

  // Playback: frames go out when the pacer says they are due, straight from the read buffers
  // (header and payload in one gather write). The same wake-up brings newly read GOPs.
  std::optional<PlaybackChannel> playback;
  if (options_.playback) playback.emplace(*options_.playback, notify_fn);
  auto next_due = asio::steady_timer::time_point::max();
  auto pump_playback = [&]() -> asio::awaitable<bool> {
    next_due = asio::steady_timer::time_point::max();
    while (playback && playback->active()) {
      auto out = playback->next(PlaybackChannel::Clock::now(), next_due);
      if (!out) break;
      std::array<asio::const_buffer, 2> bufs{asio::buffer(out->header),
                                             asio::buffer(out->payload.data(), out->payload.size())};
      tcp.expires_after(std::chrono::seconds(30));
      auto [ec, n] = co_await asio::async_write(stream, bufs, asio::as_tuple(asio::use_awaitable));
      (void)n;
      if (ec) co_return false;
    }
    co_return true;
  };

  using namespace asio::experimental::awaitable_operators;
  bool clean_end = false;
  for (bool open = true; open;) {
    if (!co_await send_acks()) break;
    if (!co_await pump_playback()) break;
    if (wake->pending.exchange(false)) continue;  // an ack or GOP arrived while we were busy
    if (!said_hello) tcp.expires_after(options_.hello_timeout);
    else tcp.expires_never();
    wake->timer.expires_at(next_due);
    auto result = co_await (stream.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable)) ||
                            wake->timer.async_wait(asio::as_tuple(asio::use_awaitable)));
    if (result.index() == 1) continue;  // woken: acknowledgements to send
    auto [ec, n] = std::get<0>(result);
    if (ec) {
      if (ec == beast::error::timeout) {
        // tcp_stream has already closed the socket: nothing can be said to this peer.
        log::warn("wire peer sent no hello in time, closed", {{"session", id}, {"peer", peer_text}});
      } else if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated) {
        log::warn("wire connection failed", {{"session", id}, {"peer", peer_text}, {"error", ec.message()}});
      } else if (auto fin = decoder.finish(); !fin) {
        // The peer may only have shut down its sending side: tell it why its data was dropped.
        log::warn("wire peer closed mid-frame", {{"session", id}, {"peer", peer_text}});
        const auto err = proto::make_error(errc::truncated_frame, fin.error().message());
        co_await send(err);
      } else {
        clean_end = true;  // end of the client's data at a frame boundary
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
        const auto err = proto::make_error(code, next.error().message());
        co_await send(err);
        open = false;
        break;
      }
      if (!*next) break;
      const auto& frame = **next;
      if (said_hello && options_.recording && frame.msg.has_open_record()) {
        proto::Envelope reply;
        if (recording) {
          reply = proto::make_error(errc::invalid_argument, "this session already records a stream");
        } else {
          std::shared_ptr<RecordingService::Recording> opened;
          auto r = co_await options_.recording->open(frame.msg.open_record(), notify_fn, opened);
          if (auto* a = std::get_if<proto::Admit>(&r)) *reply.mutable_admit() = *a;
          else *reply.mutable_refuse() = std::get<proto::Refuse>(r);
          recording = std::move(opened);
        }
        if (!co_await send(reply)) {
          open = false;
          break;
        }
        continue;
      }
      if (said_hello && playback && (frame.msg.has_open_playback() || frame.msg.has_control())) {
        std::optional<proto::Envelope> reply;
        if (frame.msg.has_open_playback()) reply = co_await playback->open(frame.msg.open_playback());
        else reply = co_await playback->control(frame.msg.control());
        if (reply && !co_await send(*reply)) {
          open = false;
          break;
        }
        continue;
      }
      if (said_hello && recording && frame.msg.has_end_record() && frame.msg.end_record().stream_id() == recording->stream_id) {
        clean_end = true;  // the client's explicit end (what a TCP half-close says)
        open = false;
        break;
      }
      if (said_hello && options_.recording && frame.msg.has_media_packet()) {
        const auto& m = frame.msg.media_packet();
        Result<void> r = errc::invalid_argument;
        if (recording && m.stream_id() == recording->stream_id) r = options_.recording->packet(*recording, m, frame.payload);
        if (!r) {
          // Policing and bad packets are told to the sender, packet by packet; nothing silent.
          const auto code = static_cast<errc>(r.error().value());
          auto err = proto::make_error(code, code == errc::rate_exceeded
                                                 ? "packet refused: more than the admitted rate in this cycle"
                                                 : "packet refused: no such stream, or sequence out of order");
          err.mutable_error()->set_related_sequence(m.sequence());
          if (!co_await send(err)) {
            open = false;
            break;
          }
        }
        continue;
      }
      auto reply = handle(frame, said_hello, id, options_);
      if (!co_await send(reply.msg) || reply.close) {
        open = false;
        break;
      }
    }
  }
  if (playback) playback->close();
  if (recording) {
    // The client is gone or done: its last packets are written by the next cycle; wait for
    // them, acknowledge what became durable (a half-closed client still reads), and end.
    co_await options_.recording->close(recording, clean_end);
    co_await send_acks();
  }
  tcp.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  log::debug("wire session closed", {{"session", id}});
}

}  // namespace vigil::server
