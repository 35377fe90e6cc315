#pragma once
// One session's playback (docs/protocol.md, "Playback"): opens it through the PlaybackService,
// takes the GOPs the IO thread has read, and says which MediaPacket is due when (PlaybackPacer),
// so the session coroutine only sends and sleeps. VCR control: pause/resume move the pacer;
// seek and rate change reopen the playback at the new position or speed (re-admitted; a rate
// the disk cannot take is refused and the old speed kept). Paused longer than the service's
// pause_release(), the playback gives its disk share back; resume re-admits it from the next
// frame (PlaybackStarted) or, refused, answers an Error and stays paused. A recording that needs
// the playback's disk time ends it: a PlaybackEnd (failed) with the reason. Frames are sent from
// the read buffers themselves (a header, then the payload span, kept alive by the GOP it belongs to).
// Thread: the session's thread. Errors: protocol answers (Refuse, Error), never throws.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "proto/vigil.pb.h"
#include "server/playback/playback_pacer.hpp"
#include "server/playback/playback_service.hpp"

namespace vigil::server {

class PlaybackChannel {
 public:
  using Clock = PlaybackPacer::Clock;

  PlaybackChannel(PlaybackService& service, std::function<void()> notify)
      : service_(service), notify_(std::move(notify)) {}
  ~PlaybackChannel() { close(); }
  PlaybackChannel(const PlaybackChannel&) = delete;
  PlaybackChannel& operator=(const PlaybackChannel&) = delete;

  bool active() const noexcept { return playback_ != nullptr; }
  // PlaybackStarted, Refuse, or Error (one playback per session at a time).
  boost::asio::awaitable<proto::Envelope> open(const proto::OpenPlayback& request);
  // An Error, or a PlaybackStarted after a seek or rate change; nothing for pause/resume.
  boost::asio::awaitable<std::optional<proto::Envelope>> control(const proto::Control& c);

  struct Out {
    std::string header;                                  // the frame's prefix and Envelope
    std::span<const std::byte> payload{};                // sent right after it
    std::shared_ptr<const storage::PlaybackGop> keep{};  // owns PAYLOAD until it is written
    std::shared_ptr<const LiveFrame> keep_live{};        // (live view)
    bool last = false;                                   // PlaybackEnd: the playback is over
  };
  // What to send at NOW, or nullopt with WAKE set to when something is next due (max while
  // waiting for the disk or paused; the stream's notify wakes the session earlier).
  std::optional<Out> next(Clock::time_point now, Clock::time_point& wake);
  void close();

 private:
  std::optional<Out> next_live(Clock::time_point now);
  // The PlaybackEnd of a live view or live tail, with REASON; closes the playback.
  Out live_end(const std::string& reason);
  // The PlaybackEnd (failed) of a playback a recording ended, with REASON; closes it.
  Out ended_for_recording(const std::string& reason);
  // Resume of a playback suspended while paused: re-admitted from the next frame, or an Error.
  boost::asio::awaitable<proto::Envelope> readmit(Clock::time_point now);
  // At the end of the recorded part: continue (go), wait for the next durable cycle (wait, WAKE
  // set), or end the playback (end). See PlaybackService::extend.
  enum class Tail { go, wait, end };
  Tail tail(Clock::time_point now, Clock::time_point& wake);

  PlaybackService& service_;
  std::function<void()> notify_;
  std::shared_ptr<PlaybackService::Playback> playback_;
  PlaybackPacer pacer_;
  Clock::time_point paused_at_{};  // when the pacer was last paused (the share's release counts from it)
  std::shared_ptr<storage::PlaybackGop> gop_;
  std::size_t frame_ = 0;
  std::uint64_t sequence_ = 0;
  std::optional<std::int64_t> last_pts_;
  std::optional<std::int64_t> skip_through_;  // after a rate change: frames the viewer already has
  // The last recorded frame sent (its stream and sequence): where a live tail continues.
  std::uint64_t last_stream_ = 0, last_sequence_ = 0;
  std::int64_t last_end_us_ = 0;  // the latest end (pts + duration) of a recorded frame sent
  // Live tail: frames the feed skipped since the last one sent (a pause, the tap's overflow).
  bool tail_skipped_ = false;
  std::uint64_t tail_dropped_seen_ = 0;
  bool skip_sent_ = false;  // after extend(): frames up to last_sequence_ were sent already
  proto::PlaybackEnd end_;
};

}  // namespace vigil::server
