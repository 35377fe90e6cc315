#pragma once
// One IO thread per disk (docs/scheduler.md): after recovery, each volume's Device belongs to
// a CycleScheduler running on its own thread, the only thread that touches that device from
// then on. With the disk's profile (docs/admission.md) the scheduler predicts IO times from the
// profiled curve and uses the profiled chunk size, and the disk's AdmissionController decides
// on new streams; the online model check compares every cycle's predicted and observed stream
// IO time and, when the profile has become optimistic, recalibrates the model from the tripping
// cycles and resumes admission under it (admission/model_scale.hpp; logged, in /metrics and
// /api/v1/disks); only a device far slower than its profile pauses admission. Without a profile a flat default model is used and a warning says so.
// On a rotating disk (or as --latency-map says) the IO thread learns a latency map from its own
// commands and orders each cycle's stream IOs by it (disk_latency_map.hpp); the map is saved next
// to the volume by a thread of its own and once more when this stops.
// Misses are logged per stream and cycle as they happen. With DiskMetrics, every cycle's report
// and the scheduler's totals are published to /metrics from the IO thread (atomics only).
// A volume whose device fails writes or flushes repeatedly (storage/guarded_device.hpp) is taken
// out of service here, at the end of the cycle that saw it: volume_failed() turns true for good
// (until vigild restarts), the reason is logged, ON_VOLUME_FAILED runs once (catalog state,
// metrics), its recording streams end at their next cycle (RecordingStreamOptions::volume_failing)
// and the DiskSet places nothing new on it.
// Start-up code throws; the IO thread itself does not.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "admission/admission.hpp"
#include "admission/calibration.hpp"
#include "admission/model_scale.hpp"
#include "server/core/vigild_metrics.hpp"
#include "server/disks/disk_latency_map.hpp"
#include "server/disks/io_thread_priority.hpp"
#include "server/disks/volume_startup.hpp"
#include "storage/background_broker.hpp"
#include "storage/cycle_scheduler.hpp"

namespace vigil::server {

struct DiskIoConfig {
  std::chrono::milliseconds cycle{1000};
  std::size_t chunk_bytes = 0;  // 0: the profile's chunk size, else 512 KiB
  std::size_t depth = 2;
  double r_rt = 0.9;
  admission::Policy policy = admission::Policy::conservative;
  int model_check_cycles = 5;  // K optimistic cycles in a row recalibrate the model; 0: no check
  double overbooking = 0.01;   // the mean-curve policies' accepted per-cycle overload probability
  // The playbacks' share of the real-time budget (admission/playback_share.hpp).
  double playback_share = 1.0;
  // The IO thread's scheduling (io_thread_priority.hpp): vigild asks for realtime by default.
  IoPriority io_priority = IoPriority::normal;
  // The latency map (disk_latency_map.hpp): off unless asked for; vigild's default is auto.
  LatencyMapSettings latency_map{};
};

class DiskIoThread {
 public:
  // Takes over VOLUME's device; recovery must be finished. METRICS (optional) must outlive this.
  using VolumeFailedFn = std::function<void(const std::string& reason)>;
  DiskIoThread(OpenVolume& volume, const DiskIoConfig& config, std::optional<admission::DiskProfile> profile,
               DiskMetrics* metrics = nullptr, VolumeFailedFn on_volume_failed = {});
  ~DiskIoThread();  // stops the thread after its current cycle
  DiskIoThread(const DiskIoThread&) = delete;
  DiskIoThread& operator=(const DiskIoThread&) = delete;

  storage::CycleScheduler& scheduler() noexcept { return *scheduler_; }
  // The disk's background broker (storage/background_broker.hpp): reads in the cycles' slack
  // (the scrubber's); blocks of the scheduler's chunk size.
  storage::BackgroundBroker& broker() noexcept { return *broker_; }
  // Null without a profile: admission cannot be decided for this disk.
  const admission::AdmissionController* admission() const noexcept { return admission_.get(); }
  std::uint64_t cycles() const noexcept { return cycles_.load(std::memory_order_relaxed); }
  std::uint64_t misses() const noexcept { return misses_.load(std::memory_order_relaxed); }
  bool model_optimistic() const noexcept { return admission_ && admission_->model_optimistic(); }
  // Observed / predicted stream IO time over recent cycles (1 until measured; admission/calibration.hpp).
  double model_calibration() const noexcept { return admission_ ? admission_->calibration() : 1.0; }
  // The recalibrated model's scale (1: as profiled) and how often the online check recalibrated it.
  double model_scale() const noexcept { return admission_ ? admission_->model_scale() : 1.0; }
  std::uint64_t model_recalibrations() const noexcept { return recalibrations_.load(std::memory_order_relaxed); }
  DiskMetrics* metrics() const noexcept { return metrics_; }
  // What stream IO_ID was measured to cost per cycle (storage/stream_io_stats.hpp), once it ran
  // kMinMeasuredCycles cycles; any thread (a copy the IO thread refreshes every cycle).
  static constexpr std::uint64_t kMinMeasuredCycles = 10;
  std::optional<storage::StreamIoStats> measured(std::uint64_t io_id) const;
  // The volume was taken out of service at runtime (any thread); why, once it was.
  bool volume_failed() const noexcept { return volume_failed_.load(std::memory_order_acquire); }
  std::string failure_reason() const;
  // What the volume's streams watch (RecordingStreamOptions::volume_failing).
  const std::atomic<bool>* volume_failing_flag() const noexcept { return &volume_failed_; }
  // Whether the IO thread runs at real-time priority, and how or why not (any thread, once started).
  bool io_realtime() const noexcept { return io_realtime_.load(std::memory_order_acquire); }
  std::string io_priority_detail() const;
  // When the IO thread last ended a cycle (its start-up before the first): a thread whose cycles
  // stop advancing is stalled (disk_health.hpp). Any thread.
  std::chrono::steady_clock::time_point last_cycle_at() const noexcept {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(last_cycle_at_.load(std::memory_order_relaxed)));
  }
  std::chrono::milliseconds cycle_length() const noexcept { return cycle_length_; }
  // The disk's latency map, or null where it has none (disk_latency_map.hpp).
  const DiskLatencyMap* latency_map() const noexcept { return latency_map_.get(); }
  // Free extents of the volume as of the last cycle (any thread).
  std::uint64_t free_extents() const noexcept { return free_extents_.load(std::memory_order_relaxed); }

 private:
  void on_cycle(const storage::CycleReport& r);
  void check_model(const storage::CycleReport& r);

  OpenVolume& volume_;
  std::string path_;
  DiskMetrics* metrics_;
  storage::SteadyClock clock_;
  std::unique_ptr<storage::ServiceModel> model_;
  std::unique_ptr<admission::AdmissionController> admission_;
  admission::ProfiledServiceModel* profiled_model_ = nullptr;  // model_ when profiled (rescaled with admission)
  admission::ModelScale scale_;  // the online model check that recalibrates; set in the constructor
  bool checking_ = true;
  std::atomic<std::uint64_t> recalibrations_{0};
  admission::ModelCalibration calibration_;      // window and noise floor set in the constructor
  std::unique_ptr<DiskLatencyMap> latency_map_;  // before scheduler_: the scheduler orders by it
  std::unique_ptr<storage::CycleScheduler> scheduler_;
  std::unique_ptr<storage::BackgroundBroker> broker_;  // after scheduler_: destroyed before it
  mutable std::mutex measured_mu_;
  std::map<std::uint64_t, storage::StreamIoStats> measured_;  // guarded by measured_mu_
  std::atomic<std::uint64_t> cycles_{0}, misses_{0}, free_extents_{0};
  std::atomic<std::chrono::steady_clock::rep> last_cycle_at_{
      std::chrono::steady_clock::now().time_since_epoch().count()};
  std::chrono::milliseconds cycle_length_{1000};
  VolumeFailedFn on_volume_failed_;
  std::string failure_reason_;  // written once, before volume_failed_ is set (release)
  std::atomic<bool> volume_failed_{false};
  std::atomic<bool> io_realtime_{false};
  mutable std::mutex priority_mu_;
  std::string io_priority_detail_;  // guarded by priority_mu_
  std::jthread thread_;
};

}  // namespace vigil::server
