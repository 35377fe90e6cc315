#include "server/wire/wire_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "common/log.hpp"
#include "proto/frame_codec.hpp"
#include "proto/vigil.pb.h"
#include "server/core/auth.hpp"
#include "server/wire/hello_gate.hpp"
#include "server/wire/playback_channel.hpp"
#include "server/wire/query_channel.hpp"
#include "server/wire/recording_channel.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace vigil::server {
namespace {

// Replies queued beyond this (a client that sends but does not read) pause the reader.
constexpr std::size_t kMaxQueuedBytes = 256 * 1024;
constexpr std::size_t kReadBytes = 128 * 1024;  // a 100 ms burst of a 4-8 Mbit/s camera in one read
// Before hello: a hello is small, and thousands of connections that never say it must cost little
// memory each (the decoder's buffer grows by reads of this size, up to one pre-hello frame).
constexpr std::size_t kHelloReadBytes = 4 * 1024;

// The one place a wire request's token is checked against what it asks (the hello only proved
// the token valid): the Error to answer, or nullopt if GRANT allows it. Packets, controls and
// EndRecord follow an open that was checked.
std::optional<proto::Envelope> refused_by_grant(const Grant& grant, const proto::Envelope& msg) {
  auto denied = [](std::string why) { return proto::make_error(errc::permission_denied, why); };
  auto check = [&](Access need, const std::string& camera) -> std::optional<proto::Envelope> {
    if (!grant.may(need)) return denied(std::string("this needs a token with the ") + roles_for(need) + " role");
    if (!grant.sees(camera)) return denied("this token is not for camera '" + camera.substr(0, 64) + "'");
    return std::nullopt;
  };
  if (msg.has_open_record()) return check(Access::record, msg.open_record().stream_name());
  if (msg.has_open_playback()) return check(Access::view, msg.open_playback().stream_name());
  if (msg.has_query_request()) {
    if (!grant.may(Access::view)) return denied(std::string("this needs a token with the viewer or admin role"));
    const auto& names = msg.query_request().stream_names();
    if (grant.scoped() && names.empty()) return denied("this token is limited to some cameras: name them");
    for (const auto& n : names) {
      if (!grant.sees(n)) return denied("this token is not for camera '" + n.substr(0, 64) + "'");
    }
  }
  return std::nullopt;
}

// REQ as a token of GRANT may give it: a first packet dated before the earliest time AUTH lets
// it date (for a token other than admin, now - --max-backdate) is dated then. A recorder resending
// its unacknowledged window after a reconnect keeps its times up to that; a token cannot write
// into older history. Null AUTH (unit rigs): unchanged.
proto::OpenRecord within_backdate(const Authenticator* auth, const Grant& grant, const proto::OpenRecord& req,
                                  std::uint64_t session) {
  proto::OpenRecord out = req;
  if (!auth || req.first_wall_us() == 0) return out;
  const std::int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const auto earliest = auth->earliest_dated_us(grant, now_us);
  if (earliest && req.first_wall_us() < *earliest) {
    log::warn(
        "open-record backdated further than --max-backdate allows a non-admin token: its first packet is "
        "dated now - max_backdate",
        {{"session", session},
         {"camera", req.stream_name()},
         {"asked_first_wall_us", req.first_wall_us()},
         {"max_backdate_s", auth->max_backdate().count()}});
    out.set_first_wall_us(*earliest);
  }
  return out;
}

// What the reader and the writer share; other threads only set PENDING and post a wake-up.
struct Shared {
  explicit Shared(asio::any_io_executor ex) : wake(ex), drained(ex), stall(ex) {}
  asio::steady_timer wake;           // the writer waits on it; cancelled: something to send
  asio::steady_timer drained;        // the reader waits on it while too much is queued
  asio::steady_timer stall;          // the stall watchdog waits on it; cancelled when reading ends
  std::atomic<bool> pending{false};  // set by other threads before they post a wake-up
  std::string queued;                // frames the reader queued, in order
  bool reading_done = false;
  bool write_failed = false;
  bool recording_failed = false;  // the writer sent a failed recording's Error: reading ends
  bool playback_busy = false;     // the reader is opening, seeking or re-rating: send no frame
};

template <class Stream>
class WireSession {
 public:
  WireSession(Stream& stream, std::uint64_t id, std::string peer, const WireOptions& options,
              std::chrono::steady_clock::time_point hello_due, asio::any_io_executor executor)
      : stream_(stream),
        tcp_(beast::get_lowest_layer(stream)),
        id_(id),
        peer_(std::move(peer)),
        options_(options),
        hello_due_(hello_due),
        decoder_(proto::FrameLimits{.max_payload_bytes =
                                        std::min(proto::kMaxPreHelloPayloadBytes, options.max_payload_bytes)}),
        shared_(std::make_shared<Shared>(executor)) {
    // Called from the IO thread (or the pacer's): store first, then wake; never wait.
    notify_ = [weak = std::weak_ptr<Shared>(shared_), executor] {
      if (auto s = weak.lock()) {
        s->pending = true;
        asio::post(executor, [weak] {
          if (auto s2 = weak.lock()) s2->wake.cancel();
        });
      }
    };
    if (options_.recording) recording_.emplace(*options_.recording, notify_);
    if (options_.playback) playback_.emplace(*options_.playback, notify_);
    if (options_.catalog) query_.emplace(*options_.catalog, options_.disks);
  }

  asio::awaitable<void> run() {
    log::debug("wire session opened", {{"session", id_}, {"peer", peer_}});
    // Named awaitables: GCC 12 destroys non-trivial temporaries of a co_await expression twice.
    auto both = [this]() -> asio::awaitable<void> {
      using namespace asio::experimental::awaitable_operators;
      auto r = reader();
      auto w = writer();
      auto s = stall_watchdog();
      co_await (std::move(r) && std::move(w) && std::move(s));
    };
    co_await both();
    boost::system::error_code ignored;
    tcp_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    log::debug("wire session closed", {{"session", id_}});
  }

 private:
  void queue(const proto::Envelope& msg) {
    proto::append_frame(shared_->queued, msg);
    shared_->wake.cancel();
  }

  asio::awaitable<void> writer();
  asio::awaitable<void> reader();
  // Ends a recording whose recorder sends nothing for the stall timeout: a stopped or hung
  // process, a frozen camera, a network that drops packets silently. The connection may stay
  // open for ever in those cases; the disk share must not.
  asio::awaitable<void> stall_watchdog();
  // Arms the connection's deadline for the next read: the absolute hello deadline, then the idle
  // deadline while the session neither records nor plays back (those have their own watchdogs).
  void arm_read_deadline();
  // Logs why the read ended; sets CLEAN_END for an end at a frame boundary.
  void read_ended(const boost::system::error_code& ec, bool& clean_end);
  // Acts on one frame; false when the session must end after what is queued.
  asio::awaitable<bool> dispatch(const proto::Frame& frame, bool& clean_end);
  // Hello with a token: the role it grants, or false (the refusal queued) if none.
  asio::awaitable<bool> authenticate(const proto::Hello& hello);

  Stream& stream_;
  beast::tcp_stream& tcp_;
  std::uint64_t id_;
  std::string peer_;
  const WireOptions& options_;
  std::chrono::steady_clock::time_point hello_due_;
  proto::FrameDecoder decoder_;
  std::shared_ptr<Shared> shared_;
  std::function<void()> notify_;
  bool said_hello_ = false;
  std::chrono::steady_clock::time_point last_read_ = std::chrono::steady_clock::now();
  bool awaiting_read_ = false;  // the reader waits for the peer (not for the writer or a service)
  bool stalled_ = false;        // the watchdog closed the connection
  Grant grant_;                 // what the hello's token allows (without an Authenticator: everything)
  std::optional<RecordingChannel> recording_;
  std::optional<PlaybackChannel> playback_;
  std::optional<QueryChannel> query_;
};

template <class Stream>
asio::awaitable<void> WireSession<Stream>::writer() {
  auto& sh = *shared_;
  std::string writing;
  boost::system::error_code ignored;
  bool ending_failed = false;  // the recording's disk failed and its Error is queued
  auto fail = [&] {
    sh.write_failed = true;
    sh.drained.cancel();
    tcp_.socket().close(ignored);  // the reader's read ends too
  };
  for (;;) {
    if (recording_) {
      if (auto ack = recording_->next_ack()) proto::append_frame(sh.queued, *ack);
      if (auto failure = recording_->failure()) {
        proto::append_frame(sh.queued, *failure);
        ending_failed = true;
      }
    }
    if (!sh.queued.empty()) {
      writing.swap(sh.queued);
      sh.queued.clear();
      tcp_.expires_after(std::chrono::seconds(30));
      auto [ec, n] = co_await asio::async_write(stream_, asio::buffer(writing), asio::as_tuple(asio::use_awaitable));
      (void)n;
      writing.clear();
      sh.drained.cancel();
      if (ec) {
        fail();
        co_return;
      }
      if (ending_failed && !sh.recording_failed) {
        // The Error is out: end the reader's wait for more packets; the recording then closes.
        sh.recording_failed = true;
        tcp_.socket().cancel(ignored);
      }
      continue;
    }
    // Playback: the next frame when the pacer says it is due, straight from the read buffers
    // (header and payload in one gather write).
    auto next_due = asio::steady_timer::time_point::max();
    if (playback_ && playback_->active() && !sh.playback_busy) {
      if (auto out = playback_->next(PlaybackChannel::Clock::now(), next_due)) {
        std::array<asio::const_buffer, 2> bufs{asio::buffer(out->header),
                                               asio::buffer(out->payload.data(), out->payload.size())};
        tcp_.expires_after(std::chrono::seconds(30));
        auto [ec, n] = co_await asio::async_write(stream_, bufs, asio::as_tuple(asio::use_awaitable));
        (void)n;
        if (ec) {
          fail();
          co_return;
        }
        continue;
      }
    }
    if (sh.reading_done) co_return;
    if (sh.pending.exchange(false)) continue;  // an ack or GOP arrived while we were busy
    sh.wake.expires_at(next_due);
    co_await sh.wake.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

template <class Stream>
asio::awaitable<void> WireSession<Stream>::reader() {
  auto& sh = *shared_;
  bool clean_end = false;
  for (bool open = true; open && !sh.write_failed && !sh.recording_failed;) {
    // A client that does not read what it is sent waits here, not in our memory.
    while (sh.queued.size() > kMaxQueuedBytes && !sh.write_failed) {
      sh.drained.expires_at(asio::steady_timer::time_point::max());
      co_await sh.drained.async_wait(asio::as_tuple(asio::use_awaitable));
      last_read_ = std::chrono::steady_clock::now();  // we were not reading: the source is not to blame
    }
    if (sh.write_failed || sh.recording_failed) break;
    arm_read_deadline();
    auto room = decoder_.prepare(said_hello_ ? kReadBytes : kHelloReadBytes);
    awaiting_read_ = true;
    auto [ec, n] =
        co_await stream_.async_read_some(asio::buffer(room.data(), room.size()), asio::as_tuple(asio::use_awaitable));
    awaiting_read_ = false;
    if (ec) {
      read_ended(ec, clean_end);
      break;
    }
    last_read_ = std::chrono::steady_clock::now();
    decoder_.commit(n);
    for (;;) {
      auto next = decoder_.next();
      if (!next) {
        auto code = static_cast<errc>(next.error().value());
        log::warn("wire protocol error, closing", {{"session", id_}, {"peer", peer_}, {"error", errc_name(code)}});
        queue(proto::make_error(code, next.error().message()));
        open = false;
        break;
      }
      if (!*next) break;
      if (!co_await dispatch(**next, clean_end)) {
        open = false;
        break;
      }
    }
  }
  if (playback_) playback_->close();
  // The client is gone or done: its last packets are written by the next cycle; wait for them
  // (the writer acknowledges what becomes durable — a half-closed client still reads), and end.
  if (recording_) {
    using Ending = RecordingService::Ending;
    co_await recording_->close(stalled_ ? Ending::stalled : clean_end ? Ending::clean : Ending::lost);
  }
  sh.reading_done = true;
  sh.wake.cancel();
  sh.stall.cancel();
}

template <class Stream>
asio::awaitable<void> WireSession<Stream>::stall_watchdog() {
  const auto timeout = options_.stall_timeout;
  if (timeout.count() <= 0 || !recording_) co_return;
  auto& sh = *shared_;
  while (!sh.reading_done) {
    const auto now = std::chrono::steady_clock::now();
    const auto due = last_read_ + timeout;
    if (recording_->active() && awaiting_read_ && now >= due) {
      stalled_ = true;
      log::warn("recording source stalled: nothing received, the recording ends and its disk share is released",
                {{"session", id_}, {"peer", peer_}, {"timeout_ms", timeout.count()}});
      boost::system::error_code ignored;
      tcp_.socket().close(ignored);  // the reader's read ends; it ends the recording as stalled
      co_return;
    }
    sh.stall.expires_at(recording_->active() ? due : now + timeout);
    co_await sh.stall.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

template <class Stream>
void WireSession<Stream>::arm_read_deadline() {
  const bool busy = (recording_ && recording_->active()) || (playback_ && playback_->active());
  if (!said_hello_) tcp_.expires_at(hello_due_);
  else if (busy || options_.idle_timeout.count() <= 0) tcp_.expires_never();
  else tcp_.expires_at(last_read_ + options_.idle_timeout);
}

template <class Stream>
void WireSession<Stream>::read_ended(const boost::system::error_code& ec, bool& clean_end) {
  if (stalled_) {
    // The watchdog closed the connection and has said why.
  } else if (shared_->write_failed) {
    // The writer failed and closed the socket; it has said why.
  } else if (shared_->recording_failed) {
    // The writer ended the session after the recording's disk failed; the peer was told.
  } else if (ec == beast::error::timeout) {
    // tcp_stream has already closed the socket: nothing can be said to this peer.
    if (!said_hello_) {
      log::warn("wire peer sent no hello in time, closed",
                {{"session", id_}, {"peer", peer_}, {"hello_timeout_s", options_.hello_timeout.count()}});
    } else {
      log::info("idle wire session closed: nothing sent, nothing recorded or played back",
                {{"session", id_}, {"peer", peer_}, {"idle_timeout_s", options_.idle_timeout.count()}});
    }
  } else if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated) {
    log::warn("wire connection failed", {{"session", id_}, {"peer", peer_}, {"error", ec.message()}});
  } else if (auto fin = decoder_.finish(); !fin) {
    // The peer may only have shut down its sending side: tell it why its data was dropped.
    log::warn("wire peer closed mid-frame", {{"session", id_}, {"peer", peer_}});
    queue(proto::make_error(errc::truncated_frame, fin.error().message()));
  } else {
    clean_end = true;  // end of the client's data at a frame boundary
  }
}

template <class Stream>
asio::awaitable<bool> WireSession<Stream>::authenticate(const proto::Hello& hello) {
  // The token is checked before hello is answered: without a valid one the session ends here.
  std::optional<Grant> r;
  bool catalog_down = false;
  try {
    r = co_await options_.auth->grant_of(hello.auth_token());
  } catch (const std::exception& e) {
    catalog_down = true;
    log::error("wire hello: token check failed", {{"session", id_}, {"error", e.what()}});
  }
  if (!r) {
    log::warn("wire hello refused: no valid token", {{"session", id_}, {"peer", peer_}});
    queue(proto::make_error(catalog_down ? errc::unavailable : errc::unauthenticated,
                            catalog_down ? "the token could not be checked (catalog unavailable); try again"
                                         : "a valid token is required: vigil --token TOKEN, VIGIL_TOKEN, or "
                                           "vigild's DATA/admin.token (vigil token create makes more)"));
    co_return false;
  }
  grant_ = std::move(*r);
  co_return true;
}

template <class Stream>
asio::awaitable<bool> WireSession<Stream>::dispatch(const proto::Frame& frame, bool& clean_end) {
  const auto& msg = frame.msg;
  if (!said_hello_) {
    if (options_.auth && hello_needs_token(msg) && !co_await authenticate(msg.hello())) co_return false;
    auto reply = first_message_reply(msg, id_, options_.max_payload_bytes);
    said_hello_ = !reply.close;
    if (said_hello_) decoder_.set_limits(proto::FrameLimits{.max_payload_bytes = options_.max_payload_bytes});
    queue(reply.msg);
    co_return !reply.close;
  }
  if (auto denied = refused_by_grant(grant_, msg)) {
    queue(*denied);
    co_return true;
  }
  if (recording_ && msg.has_open_record()) {
    queue(co_await recording_->open(within_backdate(options_.auth, grant_, msg.open_record(), id_)));
    co_return true;
  }
  if (recording_ && msg.has_media_packet()) {
    if (auto refused = recording_->packet(msg.media_packet(), frame.payload)) queue(*refused);
    co_return !recording_->failed();  // a failed recording's Error ends the session
  }
  if (recording_ && msg.has_media_loss()) {
    if (auto refused = recording_->media_loss(msg.media_loss())) queue(*refused);
    co_return true;
  }
  if (recording_ && msg.has_end_record() && recording_->ends(msg.end_record())) {
    clean_end = true;  // the client's explicit end (what a TCP half-close says)
    co_return false;
  }
  if (playback_ && (msg.has_open_playback() || msg.has_control())) {
    std::optional<proto::Envelope> reply;
    shared_->playback_busy = true;
    if (msg.has_open_playback()) reply = co_await playback_->open(msg.open_playback());
    else reply = co_await playback_->control(msg.control());
    shared_->playback_busy = false;
    if (reply) queue(*reply);
    shared_->wake.cancel();  // the pacer's schedule changed
    co_return true;
  }
  if (query_ && msg.has_query_request()) {
    queue(co_await query_->answer(msg.query_request(), grant_));
    co_return true;
  }
  auto reply = other_request(msg);
  queue(reply.msg);
  co_return !reply.close;
}

}  // namespace

template <class Stream>
asio::awaitable<void> run_wire_session(Stream& stream, std::uint64_t id, const std::string& peer,
                                       const WireOptions& options, std::chrono::steady_clock::time_point hello_due) {
  WireSession<Stream> session(stream, id, peer, options, hello_due, co_await asio::this_coro::executor);
  co_await session.run();
}

template asio::awaitable<void> run_wire_session(beast::tcp_stream&, std::uint64_t, const std::string&,
                                                const WireOptions&, std::chrono::steady_clock::time_point);
template asio::awaitable<void> run_wire_session(asio::ssl::stream<beast::tcp_stream>&, std::uint64_t,
                                                const std::string&, const WireOptions&,
                                                std::chrono::steady_clock::time_point);

}  // namespace vigil::server
