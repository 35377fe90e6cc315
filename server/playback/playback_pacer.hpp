#pragma once
// When each frame of a playback is due (docs/protocol.md, "Playback"): media time runs at RATE
// times real time, in either direction, from an anchor (the first frame sent, or where a
// resume, seek or rate change happened). Pausing freezes media time. Pure arithmetic on the
// times it is given, so the session's pacing is tested without sleeping.
// Thread: one session. Errors: none.
#include <chrono>
#include <cstdint>
#include <optional>

namespace vigil::server {

class PlaybackPacer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PlaybackPacer(double rate = 1.0) : rate_(rate > 0 ? rate : 1.0) {}

  // When the frame at media time PTS_US is due; the first frame after construction, a seek or
  // a rate change is due NOW and anchors the timeline. nullopt while paused.
  std::optional<Clock::time_point> due(std::int64_t pts_us, Clock::time_point now);
  // PTS_US was sent (the position a rate change or pause continues from).
  void sent(std::int64_t pts_us) { last_pts_ = pts_us; }

  void pause(Clock::time_point now);
  void resume(Clock::time_point now);
  bool paused() const noexcept { return paused_; }
  // New speed from the current position on.
  void set_rate(double rate, Clock::time_point now);
  // The next frame re-anchors (after a seek).
  void reanchor() noexcept { anchored_ = false; }
  double rate() const noexcept { return rate_; }

 private:
  double rate_;
  bool anchored_ = false, paused_ = false;
  Clock::time_point wall0_{}, paused_at_{};
  std::int64_t media0_ = 0;
  std::optional<std::int64_t> last_pts_;
};

}  // namespace vigil::server
