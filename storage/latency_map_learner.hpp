#pragma once
// LatencyMapLearner: a disk's cycle scheduler teaches a LatencyMap from its own completed
// commands and orders its cycles' stream IOs by it (FSATF-MAP, docs/latency-map.md "In vigild").
//
// Learning (observe, after every command): a command that does not continue where the previous
// one ended is a positioning plus its transfer, from that end; its service time is from when the
// device could start it (the later of its issue and the previous completion, so a command queued
// behind another does not count the other's time) to its completion. O(1), no allocation
// (LatencyMap's fixed table). A full map is cleared at the cycle's end and relearned: the hot set
// moved (recording streams advance through their extents), and a cell not learned only falls
// back to the LBN order, never past a deadline.
//
// Ordering: SchedulerConfig::stream_order is the map with OPTIMISTIC for unlearned cells (so the
// order explores them), stream_order_bound the map with WORST for them (an upper bound, e.g. the
// admission model's access + one chunk): the scheduler keeps the map's order only when its
// bound fits the real-time share, else C-LOOK (cycle_scheduler.hpp).
//
// Saving off the IO thread: snapshot() (any other thread) asks for a copy; the IO thread makes it
// at its next cycle's end into a table allocated here up front (a copy, no allocation) and hands
// it over; the asking thread serializes it. Thread: observe/cycle_ended/map on the IO thread (or
// once it stopped); the counters and snapshot() on any thread. Errors: none (values).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "storage/cycle_scheduler.hpp"
#include "storage/latency_map.hpp"
#include "storage/request_order.hpp"
#include "storage/service_model.hpp"

namespace vigil::storage {

// The service model's time for a read of at most CHUNK_BYTES at TO (admission's worst case for a
// command: its access cost + the transfer): the upper bound for a cell not learned yet.
class ServiceModelPredictor final : public ServiceTimePredictor {
 public:
  ServiceModelPredictor(const ServiceModel& model, std::size_t chunk_bytes) noexcept
      : model_(model), chunk_bytes_(chunk_bytes) {}
  Nanos predict(std::uint64_t from_offset, const PendingIo& to) const noexcept override;

 private:
  const ServiceModel& model_;
  std::size_t chunk_bytes_;
};

class LatencyMapLearner {
 public:
  LatencyMapLearner(LatencyMap map, std::unique_ptr<ServiceTimePredictor> optimistic,
                    std::unique_ptr<ServiceTimePredictor> worst);
  LatencyMapLearner(const LatencyMapLearner&) = delete;
  LatencyMapLearner& operator=(const LatencyMapLearner&) = delete;

  // Points CONFIG's stream order and bound at this learner (which must outlive the scheduler).
  void order(SchedulerConfig& config) const noexcept;

  // --- IO thread (CycleScheduler::on_command / on_cycle) ---
  void observe(const CommandTrace& t) noexcept;
  void cycle_ended(const CycleReport& r) noexcept;
  // The live map: on the IO thread, or once it has stopped (the final save).
  const LatencyMap& map() const noexcept { return map_; }

  // --- any thread ---
  std::size_t cells() const noexcept { return cells_.load(std::memory_order_relaxed); }
  double change_rate() const noexcept { return change_rate_.load(std::memory_order_relaxed); }
  std::uint64_t ordered_cycles() const noexcept { return ordered_cycles_.load(std::memory_order_relaxed); }
  std::uint64_t resets() const noexcept { return resets_.load(std::memory_order_relaxed); }
  // Not on the IO thread: the map as copied at the IO thread's next cycle end, as the file's bytes;
  // nullopt if no cycle ended within TIMEOUT, STOP was requested, or another snapshot is under way.
  std::optional<std::vector<std::byte>> snapshot(std::chrono::milliseconds timeout, std::stop_token stop = {});

 private:
  enum Handover : int { idle, requested, copying, ready };

  LatencyMap map_;
  LatencyMap copy_;  // the snapshot's table, same capacity: assign() does not allocate
  std::unique_ptr<ServiceTimePredictor> optimistic_, worst_;
  MapPredictor explore_, bound_;

  std::uint64_t last_end_ = 0;  // where the last command left the head
  bool positioned_ = false;     // last_end_ is known
  Nanos last_completed_{0};

  std::atomic<std::size_t> cells_{0};
  std::atomic<double> change_rate_{1.0};
  std::atomic<std::uint64_t> ordered_cycles_{0}, resets_{0};

  std::mutex handover_mu_;
  std::condition_variable_any handover_cv_;
  std::atomic<int> handover_{idle};
};

}  // namespace vigil::storage
