#include "client/cli/source_gaps.hpp"

#include <algorithm>
#include <cmath>

namespace vigil::client {

std::optional<SourceHole> SourceGapDetector::packet(std::int64_t ts, std::int64_t duration) noexcept {
  // A packet's duration is a hint, never the proof: a file's muxer stretches the packet before a
  // hole over it (its duration is the step to the next dts).
  const auto learn = [&](std::int64_t interval) { interval_ = interval_ ? std::min(interval_, interval) : interval; };
  if (!latest_) {
    latest_ = ts;
    if (duration > 0) learn(duration);
    return std::nullopt;
  }
  const std::int64_t step = ts - *latest_;
  if (step <= 0) return std::nullopt;  // reordered (B-frames) or a clock going back: not a hole
  std::optional<SourceHole> hole;
  const double step_s = static_cast<double>(step) * time_base_s_;
  if (interval_ > 0) {
    const double beyond_s = static_cast<double>(step - interval_) * time_base_s_;
    const double bound_s = std::max(kHoleFrames * static_cast<double>(interval_) * time_base_s_, kMinHoleS);
    if (beyond_s > bound_s && step_s < kMaxHoleS) {
      hole = SourceHole{.from_ts = *latest_ + interval_,
                        .to_ts = ts,
                        .missing_frames = static_cast<std::uint64_t>(
                            std::llround(static_cast<double>(step) / static_cast<double>(interval_)) - 1)};
    }
  }
  // The interval is learnt from steps that are not holes (a hole would inflate it) nor clock jumps.
  if (!hole && step_s < kMaxHoleS) learn(step);
  if (duration > 0 && !hole) learn(duration);
  latest_ = ts;
  return hole;
}

}  // namespace vigil::client
