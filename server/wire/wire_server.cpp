#include "server/wire/wire_server.hpp"

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
#include "server/core/auth.hpp"
#include "proto/frame_codec.hpp"
#include "proto/vigil.pb.h"
#include "server/wire/playback_channel.hpp"
#include "server/recording/recording_service.hpp"

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
      listener_(io, endpoint, "wire", [this](asio::ip::tcp::socket s) { return session(std::move(s)); },
                options.sessions) {}

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

// A session is two coroutines on the session's thread: the reader takes the client's frames
// (straight into the decoder's buffer) and acts on them; the writer sends everything the
// session says — replies the reader queued, durability acknowledgements, playback frames when
// their time comes — in order, one write at a time. The writer sleeps on a timer that the
// reader, the disk's IO thread (acks, newly read GOPs) and the pacer (next frame due) wake.
// No per-read timer or cancellation: a burst of packets costs one wake-up and one read.
template <class Stream>
asio::awaitable<void> WireServer::serve(Stream& stream, std::uint64_t id, const std::string& peer_text) {
  // Replies queued beyond this (a client that sends but does not read) pause the reader.
  constexpr std::size_t kMaxQueuedBytes = 256 * 1024;
  constexpr std::size_t kReadBytes = 128 * 1024;  // a 100 ms burst of a 4-8 Mbit/s camera in one read
  boost::system::error_code ignored;
  auto& tcp = beast::get_lowest_layer(stream);
  proto::FrameDecoder decoder(proto::FrameLimits{.max_payload_bytes = options_.max_payload_bytes});
  bool said_hello = false;
  // What the hello's token allows (without an Authenticator: everything).
  Role role = Role::admin;
  log::debug("wire session opened", {{"session", id}, {"peer", peer_text}});

  struct Shared {
    explicit Shared(asio::any_io_executor ex) : wake(ex), drained(ex) {}
    asio::steady_timer wake;           // the writer waits on it; cancelled: something to send
    asio::steady_timer drained;        // the reader waits on it while too much is queued
    std::atomic<bool> pending{false};  // set by other threads before they post a wake-up
    std::string queued;                // frames the reader queued, in order
    bool reading_done = false;
    bool write_failed = false;
    bool playback_busy = false;  // the reader is opening, seeking or re-rating: send no frame
  };
  auto executor = co_await asio::this_coro::executor;
  auto sh = std::make_shared<Shared>(executor);
  std::weak_ptr<Shared> weak = sh;
  // Called from the IO thread (or the pacer's): store first, then wake; never wait.
  auto notify = [weak, executor] {
    if (auto s = weak.lock()) {
      s->pending = true;
      asio::post(executor, [weak] {
        if (auto s2 = weak.lock()) s2->wake.cancel();
      });
    }
  };
  // A named std::function: GCC 12 destroys non-trivial temporaries of a co_await expression
  // twice, so nothing converted on the fly is passed to an awaited call.
  const std::function<void()> notify_fn = notify;
  auto queue = [&](const proto::Envelope& msg) {
    proto::append_frame(sh->queued, msg);
    sh->wake.cancel();
  };

  std::shared_ptr<RecordingService::Recording> recording;
  std::optional<PlaybackChannel> playback;
  if (options_.playback) playback.emplace(*options_.playback, notify_fn);

  auto writer = [&]() -> asio::awaitable<void> {
    std::string writing;
    std::uint64_t acked_sent = 0;
    auto fail = [&] {
      sh->write_failed = true;
      sh->drained.cancel();
      tcp.socket().close(ignored);  // the reader's read ends too
    };
    for (;;) {
      if (recording) {
        // Durability acknowledgements: the newest durable sequence, once.
        const auto durable = recording->durable.load(std::memory_order_acquire);
        if (durable > acked_sent) {
          proto::Envelope ack;
          ack.mutable_durable_ack()->set_stream_id(recording->stream_id);
          ack.mutable_durable_ack()->set_last_sequence(durable);
          proto::append_frame(sh->queued, ack);
          acked_sent = durable;
        }
      }
      if (!sh->queued.empty()) {
        writing.swap(sh->queued);
        sh->queued.clear();
        tcp.expires_after(std::chrono::seconds(30));
        auto [ec, n] = co_await asio::async_write(stream, asio::buffer(writing), asio::as_tuple(asio::use_awaitable));
        (void)n;
        writing.clear();
        sh->drained.cancel();
        if (ec) {
          fail();
          co_return;
        }
        continue;
      }
      // Playback: the next frame when the pacer says it is due, straight from the read
      // buffers (header and payload in one gather write).
      auto next_due = asio::steady_timer::time_point::max();
      if (playback && playback->active() && !sh->playback_busy) {
        if (auto out = playback->next(PlaybackChannel::Clock::now(), next_due)) {
          std::array<asio::const_buffer, 2> bufs{asio::buffer(out->header),
                                                 asio::buffer(out->payload.data(), out->payload.size())};
          tcp.expires_after(std::chrono::seconds(30));
          auto [ec, n] = co_await asio::async_write(stream, bufs, asio::as_tuple(asio::use_awaitable));
          (void)n;
          if (ec) {
            fail();
            co_return;
          }
          continue;
        }
      }
      if (sh->reading_done) co_return;
      if (sh->pending.exchange(false)) continue;  // an ack or GOP arrived while we were busy
      sh->wake.expires_at(next_due);
      co_await sh->wake.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  };

  auto reader = [&]() -> asio::awaitable<void> {
    bool clean_end = false;
    for (bool open = true; open && !sh->write_failed;) {
      // A client that does not read what it is sent waits here, not in our memory.
      while (sh->queued.size() > kMaxQueuedBytes && !sh->write_failed) {
        sh->drained.expires_at(asio::steady_timer::time_point::max());
        co_await sh->drained.async_wait(asio::as_tuple(asio::use_awaitable));
      }
      if (sh->write_failed) break;
      if (!said_hello) tcp.expires_after(options_.hello_timeout);
      else tcp.expires_never();
      auto room = decoder.prepare(kReadBytes);
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(room.data(), room.size()),
                                                     asio::as_tuple(asio::use_awaitable));
      if (ec) {
        if (sh->write_failed) {
          // The writer failed and closed the socket; it has said why.
        } else if (ec == beast::error::timeout) {
          // tcp_stream has already closed the socket: nothing can be said to this peer.
          log::warn("wire peer sent no hello in time, closed", {{"session", id}, {"peer", peer_text}});
        } else if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated) {
          log::warn("wire connection failed", {{"session", id}, {"peer", peer_text}, {"error", ec.message()}});
        } else if (auto fin = decoder.finish(); !fin) {
          // The peer may only have shut down its sending side: tell it why its data was dropped.
          log::warn("wire peer closed mid-frame", {{"session", id}, {"peer", peer_text}});
          queue(proto::make_error(errc::truncated_frame, fin.error().message()));
        } else {
          clean_end = true;  // end of the client's data at a frame boundary
        }
        break;
      }
      decoder.commit(n);
      for (;;) {
        auto next = decoder.next();
        if (!next) {
          auto code = static_cast<errc>(next.error().value());
          log::warn("wire protocol error, closing", {{"session", id}, {"peer", peer_text},
                                                     {"error", errc_name(code)}});
          queue(proto::make_error(code, next.error().message()));
          open = false;
          break;
        }
        if (!*next) break;
        const auto& frame = **next;
        if (!said_hello && frame.msg.has_hello() && options_.auth &&
            frame.msg.hello().protocol_version() == proto::kProtocolVersion) {
          // The token is checked before hello is answered: without a valid one the session ends here.
          std::optional<Role> r;
          bool catalog_down = false;
          try {
            r = co_await options_.auth->role_of(frame.msg.hello().auth_token());
          } catch (const std::exception& e) {
            catalog_down = true;
            log::error("wire hello: token check failed", {{"session", id}, {"error", e.what()}});
          }
          if (!r) {
            log::warn("wire hello refused: no valid token", {{"session", id}, {"peer", peer_text}});
            queue(proto::make_error(catalog_down ? errc::unavailable : errc::unauthenticated,
                                    catalog_down ? "the token could not be checked (catalog unavailable); try again"
                                                 : "a valid token is required: vigil --token TOKEN, VIGIL_TOKEN, or "
                                                   "vigild's DATA/admin.token (vigil token create makes more)"));
            open = false;
            break;
          }
          role = *r;
        }
        if (said_hello && (frame.msg.has_open_record() || frame.msg.has_open_playback())) {
          const Access need = frame.msg.has_open_record() ? Access::record : Access::view;
          if (!allows(role, need)) {
            queue(proto::make_error(errc::permission_denied, std::string("this needs a token with the ") +
                                                                 access_name(need) + " (or admin) role"));
            continue;
          }
        }
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
          queue(reply);
          continue;
        }
        if (said_hello && playback && (frame.msg.has_open_playback() || frame.msg.has_control())) {
          std::optional<proto::Envelope> reply;
          sh->playback_busy = true;
          if (frame.msg.has_open_playback()) reply = co_await playback->open(frame.msg.open_playback());
          else reply = co_await playback->control(frame.msg.control());
          sh->playback_busy = false;
          if (reply) queue(*reply);
          sh->wake.cancel();  // the pacer's schedule changed
          continue;
        }
        if (said_hello && recording && frame.msg.has_end_record() &&
            frame.msg.end_record().stream_id() == recording->stream_id) {
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
            queue(err);
          }
          continue;
        }
        auto reply = handle(frame, said_hello, id, options_);
        queue(reply.msg);
        if (reply.close) {
          open = false;
          break;
        }
      }
    }
    if (playback) playback->close();
    if (recording) {
      // The client is gone or done: its last packets are written by the next cycle; wait for
      // them (the writer acknowledges what becomes durable — a half-closed client still reads),
      // and end.
      co_await options_.recording->close(recording, clean_end);
    }
    sh->reading_done = true;
    sh->wake.cancel();
  };

  // Named awaitables (see notify_fn): both run to their end; the writer sends what is queued.
  auto both = [&]() -> asio::awaitable<void> {
    using namespace asio::experimental::awaitable_operators;
    auto r = reader();
    auto w = writer();
    co_await (std::move(r) && std::move(w));
  };
  co_await both();
  tcp.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  log::debug("wire session closed", {{"session", id}});
}

}  // namespace vigil::server
