#include "server/disks/disk_io.hpp"

#include "common/log.hpp"

namespace vigil::server {
namespace {
double ms(storage::Nanos t) { return std::chrono::duration<double, std::milli>(t).count(); }
}  // namespace

DiskIoThread::DiskIoThread(OpenVolume& volume, const DiskIoConfig& config,
                           std::optional<admission::DiskProfile> profile, DiskMetrics* metrics,
                           VolumeFailedFn on_volume_failed)
    : volume_(volume),
      path_(volume.path.string()),
      metrics_(metrics),
      // Excess below 1 % of the cycle is jitter, not a wrong model.
      check_(std::max(1, config.model_check_cycles), 0.10, 0.01 * std::chrono::duration<double>(config.cycle).count()),
      checking_(config.model_check_cycles > 0),
      calibration_(120, 30, 0.01 * std::chrono::duration<double>(config.cycle).count()),
      on_volume_failed_(std::move(on_volume_failed)) {
  free_extents_ = volume_.volume->free_extent_count();
  std::size_t chunk = config.chunk_bytes;
  if (profile) {
    model_ = std::make_unique<admission::ProfiledServiceModel>(*profile);
    admission_ = std::make_unique<admission::AdmissionController>(
        *profile, admission::AdmissionConfig{.policy = config.policy,
                                             .cycle_s = std::chrono::duration<double>(config.cycle).count(),
                                             .r_rt = config.r_rt,
                                             .overbooking = config.overbooking,
                                             .playback_share = config.playback_share});
    if (chunk == 0) chunk = static_cast<std::size_t>(profile->chunk_bytes());
    log::info("disk profile in use", {{"volume", path_},
                                      {"profiled", profile->device},
                                      {"peak_mb_s", profile->peak_rate().Bps() / 1e6},
                                      {"chunk_bytes", chunk},
                                      {"policy", admission::policy_name(config.policy)}});
  } else {
    // Until the disk is profiled, the slack test uses a flat model: 1 ms per access and
    // 100 MB/s, pessimistic for SSDs and about right for one spinning disk.
    model_ = std::make_unique<storage::LinearServiceModel>(std::chrono::milliseconds(1), 100e6);
    log::warn(
        "no disk profile: the scheduler uses a flat default model and streams cannot be admitted; "
        "run `vigil profile` on the disk and start vigild with --profile FILE",
        {{"volume", path_}});
  }
  if (chunk == 0) chunk = 512 * 1024;
  chunk = std::max<std::size_t>(4096, chunk / 4096 * 4096);
  scheduler_ = std::make_unique<storage::CycleScheduler>(*volume_.device, clock_, *model_,
                                                         storage::SchedulerConfig{.cycle = config.cycle,
                                                                                  .r_rt = config.r_rt,
                                                                                  .chunk_bytes = chunk,
                                                                                  .depth = config.depth});
  scheduler_->on_cycle = [this](const storage::CycleReport& r) { on_cycle(r); };
  if (metrics_) {
    const double cycle_s = std::chrono::duration<double>(config.cycle).count();
    metrics_->configured(scheduler_->config(), admission_ != nullptr,
                         admission_ ? admission_->budget_s() / cycle_s : 0);
    metrics_->playback_share(admission_ ? config.playback_share * admission_->budget_s() / cycle_s : 0);
  }
  thread_ = std::jthread([this](std::stop_token st) { scheduler_->run(st); });
  log::info("disk IO thread started",
            {{"volume", path_}, {"cycle_ms", config.cycle.count()}, {"chunk_bytes", chunk}, {"depth", config.depth}});
}

std::optional<storage::StreamIoStats> DiskIoThread::measured(std::uint64_t io_id) const {
  std::lock_guard lock(measured_mu_);
  const auto it = measured_.find(io_id);
  if (it == measured_.end() || it->second.cycles < kMinMeasuredCycles) return std::nullopt;
  return it->second;
}

std::string DiskIoThread::failure_reason() const { return volume_failed() ? failure_reason_ : std::string(); }

void DiskIoThread::on_cycle(const storage::CycleReport& r) {
  const auto n = cycles_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!volume_failed_.load(std::memory_order_relaxed) && volume_.device->failing()) {
    failure_reason_ = std::to_string(volume_.device->fail_after()) +
                      " writes or flushes failed in a row; taken out of service until vigild restarts";
    volume_failed_.store(true, std::memory_order_release);
    log::error("volume failed at runtime: no new streams go to it, its recordings continue on other volumes",
               {{"volume", path_}, {"reason", failure_reason_}});
    if (on_volume_failed_) on_volume_failed_(failure_reason_);
  }
  free_extents_.store(volume_.volume->free_extent_count(), std::memory_order_relaxed);
  if (admission_) {
    calibration_.observe(ms(r.predicted_rt) / 1e3, ms(r.rt_busy) / 1e3);
    admission_->set_calibration(calibration_.factor());
    // For the statistical policy: what each running stream costs, copied out for the
    // admission decisions on other threads (a few hundred small entries once a cycle).
    std::lock_guard lock(measured_mu_);
    measured_ = scheduler_->stream_stats();
  }
  if (!checking_) {
    // no online model check (--model-check-cycles 0)
  } else if (admission_ && check_.observe(ms(r.predicted_rt) / 1e3, ms(r.rt_busy) / 1e3)) {
    admission_->set_model_optimistic(true);
    log::warn(
        "disk model optimistic: stream IO took longer than the profile predicts; admission is paused. "
        "Run `vigil profile` on this disk again",
        {{"volume", path_}, {"predicted_ms", ms(r.predicted_rt)}, {"observed_ms", ms(r.rt_busy)}});
  } else if (admission_ && admission_->model_optimistic() && !check_.optimistic()) {
    admission_->set_model_optimistic(false);
    log::info("disk model agrees with the device again; admission resumed", {{"volume", path_}});
  }
  if (metrics_) metrics_->cycle(r, scheduler_->totals(), scheduler_->meter(), model_optimistic());
  if (n % 60 == 0) {
    // A heartbeat every 60 cycles; /metrics has the same numbers every cycle.
    const auto& t = scheduler_->totals();
    log::info("disk cycles", {{"volume", path_},
                              {"cycles", t.cycles},
                              {"utilisation", r.utilisation},
                              {"slack_ms", ms(r.slack)},
                              {"misses", t.misses},
                              {"preemptions", t.preemptions},
                              {"interactive", t.interactive},
                              {"expected_wait_us", ms(scheduler_->meter().expected_waiting()) * 1000},
                              {"model_optimistic", model_optimistic() ? "yes" : "no"}});
  }
  if (r.misses == 0) return;
  misses_.fetch_add(r.misses, std::memory_order_relaxed);
  const auto& all = scheduler_->misses();
  for (auto it = all.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(r.misses, all.size())); it != all.end();
       ++it) {
    if (metrics_) metrics_->miss(it->cause);
    log::warn("deadline missed", {{"volume", path_},
                                  {"cycle", it->cycle},
                                  {"stream", it->stream},
                                  {"cause", storage::miss_cause_name(it->cause)},
                                  {"utilisation", r.utilisation}});
  }
}

DiskIoThread::~DiskIoThread() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vigil::server
