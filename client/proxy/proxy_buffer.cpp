#include "client/proxy/proxy_buffer.hpp"

#include <algorithm>

namespace vigil::client {

bool PlaybackBuffer::append(Packet p) {
  if (packets_.empty() && !p.keyframe) return false;  // vigild starts at a keyframe; the front stays one
  bytes_ += p.payload.size();
  const bool key = p.keyframe;
  if (key) head_pts_ = p.pts;
  packets_.push_back(std::move(p));
  return key;
}

bool PlaybackBuffer::covers(std::int64_t t0, std::int64_t t1) const {
  if (t0 < start_us_ || t1 > end_us_) return false;
  if (dropped_any_ && t0 < front_pts()) return false;
  // Ended before T0: what was closed on the disk when it opened is all it had. A recording still
  // being written has more by now, so a new playback is the one to ask.
  if (ended_ && t0 > head_pts_) return false;
  return t0 <= head_pts_ + limits_.read_ahead_us;
}

bool PlaybackBuffer::passed(std::int64_t t0, std::int64_t t1) const {
  return t0 >= start_us_ && t1 <= end_us_ && dropped_any_ && t0 < front_pts();
}

void PlaybackBuffer::enter(std::int64_t t0, std::int64_t t1) {
  lead_us_ = std::max(lead_us_, t1);
  waiting_t0_.insert(t0);
  waiting_t1_.insert(t1);
}

void PlaybackBuffer::leave(std::int64_t t0, std::int64_t t1) {
  if (auto it = waiting_t0_.find(t0); it != waiting_t0_.end()) waiting_t0_.erase(it);
  if (auto it = waiting_t1_.find(t1); it != waiting_t1_.end()) waiting_t1_.erase(it);
}

void PlaybackBuffer::trim() {
  const std::int64_t waiting = waiting_t0_.empty() ? lead_us_ : *waiting_t0_.begin();
  const std::int64_t keep_from = std::min(lead_us_ - limits_.keep_behind_us, waiting);
  const std::int64_t hard_from = std::min(lead_us_, waiting);
  for (;;) {
    // The second GOP's start: the first GOP ends there.
    std::size_t next = 1;
    while (next < packets_.size() && !packets_[next].keyframe) ++next;
    if (next >= packets_.size()) return;
    const std::int64_t first_gop_end = packets_[next].pts;
    if (first_gop_end > keep_from && !(bytes_ > limits_.max_bytes && first_gop_end <= hard_from)) return;
    for (std::size_t i = 0; i < next; ++i) {
      bytes_ -= packets_.front().payload.size();
      packets_.pop_front();
    }
    dropped_any_ = true;
  }
}

bool PlaybackBuffer::should_pause() const {
  const bool someone_needs_more = !waiting_t1_.empty() && *waiting_t1_.rbegin() > head_pts_;
  return !someone_needs_more && (head_pts_ > lead_us_ + limits_.read_ahead_us || bytes_ > limits_.max_bytes);
}

std::vector<const PlaybackBuffer::Packet*> PlaybackBuffer::pick(std::int64_t t0, std::int64_t t1) const {
  std::vector<const Packet*> out;
  bool in = false;
  for (const auto& p : packets_) {
    if (p.keyframe) in = p.pts >= t0 && p.pts < t1;
    if (in) out.push_back(&p);
  }
  return out;
}

}  // namespace vigil::client
