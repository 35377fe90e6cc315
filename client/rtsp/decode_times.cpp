#include "client/rtsp/decode_times.hpp"

#include <algorithm>
#include <limits>

namespace vigil::client::rtsp {

DecodeTimes::DecodeTimes(int depth) : depth_(std::clamp(depth, 0, kMaxDepth)) {}

void DecodeTimes::release_held(std::vector<TimedFrame>& ready) {
  if (held_.empty()) return;
  // One frame interval: the smallest positive gap between the presentation times seen so far
  // (largest_ holds all of them until frame D is in: at most D + 1).
  std::int64_t step = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 1; i < largest_.size(); ++i) {
    if (largest_[i] > largest_[i - 1]) step = std::min(step, largest_[i] - largest_[i - 1]);
  }
  if (step == std::numeric_limits<std::int64_t>::max()) step = 1;
  // The held frames end one step before the first decode time handed out after them, or, when
  // the stream ends here, at the smallest of their presentation times.
  const std::int64_t next = largest_.front();
  const auto n = static_cast<std::int64_t>(held_.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t dts = next - (n - i) * step + (started_ ? 0 : step);
    ready.push_back({.pts = held_[static_cast<std::size_t>(i)], .dts = dts});
    last_dts_ = dts;
  }
  held_.clear();
}

DecodeTimes::Outcome DecodeTimes::push(std::int64_t pts, std::vector<TimedFrame>& ready) {
  if (refused_) return Outcome::too_early;
  // How many of the recent frames this one is shown before: the depth it needs.
  const int early =
      static_cast<int>(std::count_if(recent_.begin(), recent_.end(), [&](std::int64_t p) { return p > pts; }));
  const auto sorted_at = std::lower_bound(largest_.begin(), largest_.end(), pts);
  std::vector<std::int64_t> next(largest_);
  next.insert(next.begin() + (sorted_at - largest_.begin()), pts);
  if (next.size() > static_cast<std::size_t>(depth_) + 1) next.erase(next.begin());
  const bool full = next.size() == static_cast<std::size_t>(depth_) + 1;
  // Depth 0 keeps a camera's repeated timestamp as it always was (equal decode times); with a
  // depth, decode times must rise strictly.
  if (full && (next.front() > pts || (depth_ > 0 && started_ && next.front() <= last_dts_))) {
    refused_ = true;
    needed_ = std::max(early, depth_ + 1);
    return Outcome::too_early;
  }
  largest_ = std::move(next);
  recent_.push_back(pts);
  if (recent_.size() > static_cast<std::size_t>(kMaxDepth)) recent_.pop_front();
  if (!full) {
    held_.push_back(pts);
    return Outcome::ok;
  }
  if (!started_) {
    started_ = true;
    release_held(ready);
  }
  last_dts_ = largest_.front();
  ready.push_back({.pts = pts, .dts = last_dts_});
  return Outcome::ok;
}

void DecodeTimes::flush(std::vector<TimedFrame>& ready) {
  if (!started_) release_held(ready);
}

}  // namespace vigil::client::rtsp
