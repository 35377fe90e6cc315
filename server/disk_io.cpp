#include "server/disk_io.hpp"

#include "common/log.hpp"

namespace vigil::server {

DiskIoThread::DiskIoThread(OpenVolume& volume, const DiskIoConfig& config) : volume_(volume) {
  // Until the disk profile ([D]) is measured, the slack test uses a flat model: 1 ms per
  // access and 100 MB/s, pessimistic for SSDs and about right for one spinning disk.
  model_ = std::make_unique<storage::LinearServiceModel>(std::chrono::milliseconds(1), 100e6);
  scheduler_ = std::make_unique<storage::CycleScheduler>(
      *volume_.device, clock_, *model_,
      storage::SchedulerConfig{.cycle = config.cycle, .r_rt = config.r_rt, .chunk_bytes = config.chunk_bytes,
                               .depth = config.depth});
  const std::string path = volume_.path.string();
  scheduler_->on_cycle = [this, path](const storage::CycleReport& r) {
    const auto n = cycles_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n % 60 == 0) {
      // A heartbeat per minute of cycles until /metrics ([F]) exports the same numbers.
      const auto& t = scheduler_->totals();
      log::info("disk cycles", {{"volume", path},
                                {"cycles", t.cycles},
                                {"utilisation", r.utilisation},
                                {"slack_ms", std::chrono::duration<double, std::milli>(r.slack).count()},
                                {"misses", t.misses},
                                {"preemptions", t.preemptions},
                                {"interactive", t.interactive},
                                {"expected_wait_us", std::chrono::duration<double, std::micro>(
                                                         scheduler_->meter().expected_waiting()).count()}});
    }
    if (r.misses == 0) return;
    misses_.fetch_add(r.misses, std::memory_order_relaxed);
    const auto& all = scheduler_->misses();
    for (auto it = all.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(r.misses, all.size())); it != all.end(); ++it) {
      log::warn("deadline missed", {{"volume", path},
                                    {"cycle", it->cycle},
                                    {"stream", it->stream},
                                    {"cause", storage::miss_cause_name(it->cause)},
                                    {"utilisation", r.utilisation}});
    }
  };
  thread_ = std::jthread([this](std::stop_token st) { scheduler_->run(st); });
  log::info("disk IO thread started", {{"volume", path},
                                       {"cycle_ms", config.cycle.count()},
                                       {"chunk_bytes", config.chunk_bytes},
                                       {"depth", config.depth}});
}

DiskIoThread::~DiskIoThread() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vigil::server
