#include "storage/latency_map_learner.hpp"

#include <algorithm>

namespace vigil::storage {

Nanos ServiceModelPredictor::predict(std::uint64_t, const PendingIo& to) const noexcept {
  return model_.predict(false, to.offset, std::min<std::size_t>(to.bytes, chunk_bytes_));
}

LatencyMapLearner::LatencyMapLearner(LatencyMap map, std::unique_ptr<ServiceTimePredictor> optimistic,
                                     std::unique_ptr<ServiceTimePredictor> worst)
    : map_(std::move(map)),
      copy_(map_.device_bytes(), map_.region_bytes(), map_.max_cells()),
      optimistic_(std::move(optimistic)),
      worst_(std::move(worst)),
      explore_(map_, *optimistic_),
      bound_(map_, *worst_) {
  cells_ = map_.learned_cells();
  change_rate_ = map_.change_rate();
}

void LatencyMapLearner::order(SchedulerConfig& config) const noexcept {
  config.stream_order = &explore_;
  config.stream_order_bound = &bound_;
}

void LatencyMapLearner::observe(const CommandTrace& t) noexcept {
  const Nanos started = std::max(t.issued, last_completed_);
  last_completed_ = t.completed;
  if (t.seek) {  // the simulated disk's sub-seek: the head is there, nothing transferred
    last_end_ = t.offset;
    positioned_ = true;
    return;
  }
  if (t.bytes == 0) return;  // a flush moves no head
  if (positioned_ && t.offset != last_end_) map_.update(last_end_, t.offset, t.completed - started);
  last_end_ = t.offset + t.bytes;
  positioned_ = true;
}

void LatencyMapLearner::cycle_ended(const CycleReport& r) noexcept {
  if (r.stream_order_used) ordered_cycles_.fetch_add(1, std::memory_order_relaxed);
  int expected = requested;
  if (handover_.compare_exchange_strong(expected, copying, std::memory_order_acq_rel)) {
    copy_.assign(map_);
    {
      std::lock_guard lock(handover_mu_);
      handover_.store(ready, std::memory_order_release);
    }
    handover_cv_.notify_one();
  }
  if (map_.full()) {
    map_.clear();
    resets_.fetch_add(1, std::memory_order_relaxed);
  }
  cells_.store(map_.learned_cells(), std::memory_order_relaxed);
  change_rate_.store(map_.change_rate(), std::memory_order_relaxed);
}

std::optional<std::vector<std::byte>> LatencyMapLearner::snapshot(std::chrono::milliseconds timeout,
                                                                  std::stop_token stop) {
  int expected = idle;
  if (!handover_.compare_exchange_strong(expected, requested, std::memory_order_acq_rel)) return std::nullopt;
  const auto is_ready = [&] { return handover_.load(std::memory_order_acquire) == ready; };
  std::unique_lock lock(handover_mu_);
  if (!handover_cv_.wait_for(lock, stop, timeout, is_ready)) {
    // Withdrawn, unless the IO thread has begun the copy: then it is a copy away, so wait for it.
    expected = requested;
    if (handover_.compare_exchange_strong(expected, idle, std::memory_order_acq_rel)) return std::nullopt;
    handover_cv_.wait(lock, is_ready);
  }
  lock.unlock();
  std::optional<std::vector<std::byte>> bytes = copy_.serialize();
  handover_.store(idle, std::memory_order_release);
  return bytes;
}

}  // namespace vigil::storage
