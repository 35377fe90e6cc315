#include "server/playback/playback_pacer.hpp"

#include <cstdlib>

namespace vigil::server {

std::optional<PlaybackPacer::Clock::time_point> PlaybackPacer::due(std::int64_t pts_us, Clock::time_point now) {
  if (paused_) return std::nullopt;
  if (!anchored_) {
    anchored_ = true;
    wall0_ = now;
    media0_ = pts_us;
    return now;
  }
  // Distance in media time, whichever the direction (reverse playback has falling pts).
  const double media_us = static_cast<double>(std::llabs(pts_us - media0_));
  return wall0_ +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(media_us / rate_));
}

void PlaybackPacer::pause(Clock::time_point now) {
  if (paused_) return;
  paused_ = true;
  paused_at_ = now;
}

void PlaybackPacer::resume(Clock::time_point now) {
  if (!paused_) return;
  paused_ = false;
  wall0_ += now - paused_at_;  // media time did not move while paused
}

void PlaybackPacer::set_rate(double rate, Clock::time_point now) {
  if (rate <= 0) return;
  rate_ = rate;
  if (anchored_ && last_pts_) {
    // Continue from the last frame sent, at the new speed.
    media0_ = *last_pts_;
    wall0_ = paused_ ? paused_at_ : now;
  } else {
    anchored_ = false;
  }
}

}  // namespace vigil::server
