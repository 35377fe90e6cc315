#pragma once
// One IO thread per disk (docs/scheduler.md): after recovery, each volume's Device belongs to
// a CycleScheduler running on its own thread, the only thread that touches that device from
// then on. Sessions ([E]) add streams and submit interactive IO to it; misses are logged per
// stream and cycle (warn) as they happen, and the totals are readable from any thread for
// /metrics ([F]). Start-up code throws; the IO thread itself does not.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "server/volume_startup.hpp"
#include "storage/cycle_scheduler.hpp"

namespace vigil::server {

struct DiskIoConfig {
  std::chrono::milliseconds cycle{1000};
  std::size_t chunk_bytes = 512 * 1024;
  std::size_t depth = 2;
  double r_rt = 0.9;
};

class DiskIoThread {
 public:
  // Takes over VOLUME's device; recovery must be finished.
  DiskIoThread(OpenVolume& volume, const DiskIoConfig& config);
  ~DiskIoThread();  // stops the thread after its current cycle
  DiskIoThread(const DiskIoThread&) = delete;
  DiskIoThread& operator=(const DiskIoThread&) = delete;

  storage::CycleScheduler& scheduler() noexcept { return *scheduler_; }
  std::uint64_t cycles() const noexcept { return cycles_.load(std::memory_order_relaxed); }
  std::uint64_t misses() const noexcept { return misses_.load(std::memory_order_relaxed); }

 private:
  OpenVolume& volume_;
  storage::SteadyClock clock_;
  std::unique_ptr<storage::ServiceModel> model_;
  std::unique_ptr<storage::CycleScheduler> scheduler_;
  std::atomic<std::uint64_t> cycles_{0}, misses_{0};
  std::jthread thread_;
};

}  // namespace vigil::server
