#include "client/cli/live_reader.hpp"

#include <algorithm>

namespace vigil::client {

LiveReader::LiveReader(PacketSource& input, std::size_t cap_bytes, bool live, bool pace)
    : input_(input), cap_bytes_(cap_bytes), live_(live), pace_(pace), holes_(input.time_base_s()) {
  thread_ = std::thread([this] { read_all(); });
}

LiveReader::~LiveReader() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  input_.interrupt();  // a live camera's read returns now, not at its next packet
  thread_.join();
}

void LiveReader::read_all() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    auto p = input_.next();
    if (!p) break;
    std::unique_lock lock(mu_);
    // A packet without a timestamp is neither a hole nor the end of one.
    const auto ts = p->dts != AV_NOPTS_VALUE ? std::optional(p->dts) : timestamp_of(*p);
    if (ts) {
      // The detector sees every packet (it learns the frame interval), but where the input says
      // what it dropped, that exact hole is reported — however short — and not the detector's guess.
      const auto hole = holes_.packet(*ts, p->duration);
      const auto lost_frames = frames_lost_before(*p);
      if (lost_frames > 0 && delivered_any_ && *ts > last_end_ts_) {
        losses_.push_back(Loss{.reason = Loss::Reason::source_loss,
                               .from_ts = last_end_ts_,
                               .to_ts = *ts,
                               .packets = std::max(lost_frames, hole ? hole->missing_frames : 0)});
      } else if (hole) {
        losses_.push_back(Loss{.reason = Loss::Reason::source_loss,
                               .from_ts = hole->from_ts,
                               .to_ts = hole->to_ts,
                               .packets = hole->missing_frames});
      }
      delivered_any_ = true;
      last_end_ts_ = std::max(last_end_ts_, *ts + std::max<std::int64_t>(p->duration, 1));
      if (pace_) {
        // A camera delivers each frame at its time, whatever the recorder does.
        if (!pace_start_) pace_start_.emplace(std::chrono::steady_clock::now(), *ts);
        const auto due = pace_start_->first +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(
                             static_cast<double>(*ts - pace_start_->second) * input_.time_base_s()));
        if (changed_.wait_until(lock, due, [&] { return stopping_; })) break;
      }
    }
    keep_or_drop(std::move(p), lock);
  }
  std::lock_guard lock(mu_);
  if (dropping_) end_drop_run(last_end_ts_);
  ended_ = true;
  changed_.notify_all();
}

void LiveReader::keep_or_drop(PacketPtr p, std::unique_lock<std::mutex>& lock) {
  const auto bytes = static_cast<std::size_t>(p->size);
  if (!live_) {
    // A file waits for room: reading it is never ahead of the wire by more than the queue.
    const auto room = [&] { return stopping_ || queue_.empty() || queued_bytes_ + bytes <= cap_bytes_; };
    if (!room()) {
      full_ = true;  // what is queued is all the recorder gets until it takes some
      changed_.notify_all();
      changed_.wait(lock, room);
      full_ = false;
    }
    if (stopping_) return;
  } else {
    const bool keyframe = (p->flags & AV_PKT_FLAG_KEY) != 0;
    const auto pts = timestamp_of(*p);
    if (dropping_ && keyframe && queued_bytes_ + bytes <= cap_bytes_ / 2 && pts) {
      end_drop_run(*pts);  // resumes at a keyframe, with room to spare: no flapping at the cap
    }
    if (!dropping_ && !queue_.empty() && queued_bytes_ + bytes > cap_bytes_) {
      dropping_ = true;
      run_ = Loss{.reason = Loss::Reason::rate_exceeded, .from_ts = pts.value_or(last_end_ts_)};
    }
    if (dropping_) {
      ++run_.packets;
      run_.payload_bytes += bytes;
      ++dropped_packets_;
      return;
    }
  }
  queued_bytes_ += bytes;
  queue_.push_back(std::move(p));
  if (!gather_ts_ || gathered()) changed_.notify_all();  // a recorder gathering a burst sleeps on
}

bool LiveReader::gathered() const {
  if (ended_ || full_ || queued_bytes_ >= cap_bytes_ / 2 || !gather_ts_) return !queue_.empty() || ended_;
  if (queue_.empty()) return false;
  const auto first = timestamp_of(*queue_.front()), last = timestamp_of(*queue_.back());
  return !first || !last || *last - *first >= *gather_ts_;
}

void LiveReader::end_drop_run(std::int64_t resumed_at_ts) {
  dropping_ = false;
  run_.to_ts = std::max(resumed_at_ts, run_.from_ts + 1);
  losses_.push_back(run_);
}

PacketPtr LiveReader::next(double gather_s) {
  std::unique_lock lock(mu_);
  if (queue_.empty() && !ended_) {
    gather_ts_ = static_cast<std::int64_t>(gather_s / input_.time_base_s());
    changed_.wait(lock, [&] { return gathered(); });
    gather_ts_.reset();
  }
  if (queue_.empty()) return nullptr;
  auto p = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= static_cast<std::size_t>(p->size);
  if (!live_) changed_.notify_all();  // a file's reader waits for room
  return p;
}

std::vector<Loss> LiveReader::take_losses() {
  std::lock_guard lock(mu_);
  return std::exchange(losses_, {});
}

std::uint64_t LiveReader::dropped_packets() const {
  std::lock_guard lock(mu_);
  return dropped_packets_;
}

}  // namespace vigil::client
