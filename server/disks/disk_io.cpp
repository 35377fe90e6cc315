#include "server/disks/disk_io.hpp"

#include <pthread.h>

#include <algorithm>

#include "common/log.hpp"
#include "storage/memory_lock.hpp"

namespace vigil::server {
namespace {
double ms(storage::Nanos t) { return std::chrono::duration<double, std::milli>(t).count(); }
// The stream IO time the device took: the time its completions took to be seen, less the time the
// IO thread waited for a CPU meanwhile (the VM's or a load generator's, not the device's).
double device_seconds(const storage::CycleReport& r) {
  return ms(std::max(r.rt_busy - r.cpu_wait, storage::Nanos(0))) / 1e3;
}
bool buffers_locked() {
  const auto s = storage::memory_lock::stats();
  return s.enabled && !s.failed;
}
}  // namespace

DiskIoThread::DiskIoThread(OpenVolume& volume, const DiskIoConfig& config,
                           std::optional<admission::DiskProfile> profile, DiskMetrics* metrics,
                           VolumeFailedFn on_volume_failed)
    : volume_(volume),
      path_(volume.path.string()),
      metrics_(metrics),
      // Excess below 1 % of the cycle is jitter, not a wrong model.
      scale_({.k = std::max(1, config.model_check_cycles),
              .tolerance = 0.10,
              .min_excess_s = 0.01 * std::chrono::duration<double>(config.cycle).count(),
              .ignore_below_s = 0.01 * std::chrono::duration<double>(config.cycle).count()}),
      checking_(config.model_check_cycles > 0),
      calibration_(120, 30, 0.01 * std::chrono::duration<double>(config.cycle).count()),
      cycle_length_(config.cycle),
      on_volume_failed_(std::move(on_volume_failed)) {
  free_extents_ = volume_.volume->free_extent_count();
  std::size_t chunk = config.chunk_bytes;
  if (profile) {
    auto profiled = std::make_unique<admission::ProfiledServiceModel>(*profile);
    profiled_model_ = profiled.get();
    model_ = std::move(profiled);
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
  storage::SchedulerConfig sched{.cycle = config.cycle,
                                 .r_rt = config.r_rt,
                                 .chunk_bytes = chunk,
                                 .depth = config.depth};
  latency_map_ = DiskLatencyMap::open(volume_, config.latency_map, *model_, chunk, metrics_);
  if (latency_map_) latency_map_->learner().order(sched);
  scheduler_ = std::make_unique<storage::CycleScheduler>(*volume_.device, clock_, *model_, sched);
  scheduler_->on_cycle = [this](const storage::CycleReport& r) { on_cycle(r); };
  if (latency_map_) {
    // Every completed command teaches the map: O(1), no allocation, on the IO thread.
    scheduler_->on_command = [learner = &latency_map_->learner()](const storage::CommandTrace& t) {
      learner->observe(t);
    };
  }
  broker_ = std::make_unique<storage::BackgroundBroker>(*scheduler_, chunk, volume_.volume->block_bytes());
  if (metrics_) {
    // Interactive reads (media routes' ClipReader): queue-to-completion latency, atomics only.
    scheduler_->on_request = [this](storage::IoClass cls, bool write, const storage::IoOutcome& o) {
      if (cls == storage::IoClass::interactive && !write) metrics_->interactive_read(ms(o.response()) / 1e3);
    };
  }
  if (metrics_) {
    const double cycle_s = std::chrono::duration<double>(config.cycle).count();
    metrics_->configured(scheduler_->config(), admission_ != nullptr,
                         admission_ ? admission_->budget_s() / cycle_s : 0);
    metrics_->playback_share(admission_ ? config.playback_share * admission_->budget_s() / cycle_s : 0);
  }
  thread_ = std::jthread([this, priority = config.io_priority](std::stop_token st) {
    // Named, so tools can find it (`vigil bench ingest` pins it: /proc/PID/task/*/comm).
    pthread_setname_np(pthread_self(), "vigil-io");
    // On the IO thread itself: its priority, and its own run-queue delay (the cpu_starved cause).
    const auto outcome = apply_io_priority(priority);
    {
      std::lock_guard lock(priority_mu_);
      io_priority_detail_ = outcome.detail;
    }
    io_realtime_.store(outcome.realtime, std::memory_order_release);
    if (priority == IoPriority::realtime && !outcome.realtime) {
      log::warn("disk IO thread at normal priority: real-time priority was refused",
                {{"volume", path_}, {"why", outcome.detail}});
    } else {
      log::info("disk IO thread priority", {{"volume", path_}, {"priority", outcome.detail}});
    }
    if (metrics_) metrics_->io_thread(outcome.realtime, buffers_locked());
    RunDelay delay;
    if (delay.available()) scheduler_->cpu_wait = [&delay] { return delay.read(); };
    scheduler_->run(st);
    scheduler_->cpu_wait = nullptr;
  });
  if (latency_map_) latency_map_->start_saving();
  log::info("disk IO thread started",
            {{"volume", path_}, {"cycle_ms", config.cycle.count()}, {"chunk_bytes", chunk}, {"depth", config.depth}});
}

std::optional<storage::StreamIoStats> DiskIoThread::measured(std::uint64_t io_id) const {
  std::lock_guard lock(measured_mu_);
  const auto it = measured_.find(io_id);
  if (it == measured_.end() || it->second.cycles < kMinMeasuredCycles) return std::nullopt;
  return it->second;
}

// The online model check (admission/model_scale.hpp): a trip recalibrates the model — the
// scheduler's predictions and admission's alike — and admission goes on under it.
void DiskIoThread::check_model(const storage::CycleReport& r) {
  const double predicted_s = ms(r.predicted_rt) / 1e3, observed_s = device_seconds(r);
  const auto event = scale_.observe(predicted_s, observed_s);
  if (event == admission::ModelScale::Event::none) return;
  const double scale = scale_.scale();
  admission_->set_model_scale(scale);
  if (profiled_model_) profiled_model_->set_scale(scale);
  admission_->set_model_optimistic(scale_.paused());
  // The mean-curve calibration measured the old model: it starts again on the new one.
  calibration_.reset();
  admission_->set_calibration(1.0);
  auto level = log::Level::info;
  const char* what = "";
  switch (event) {
    case admission::ModelScale::Event::rescaled:
      recalibrations_.fetch_add(1, std::memory_order_relaxed);
      level = log::Level::warn;
      what =
          "disk model optimistic: recalibrated from the tripping cycles (predictions scaled by their "
          "observed/predicted ratio); admission resumed under the recalibrated model, streams admitted before are "
          "kept";
      break;
    case admission::ModelScale::Event::relaxed:
      recalibrations_.fetch_add(1, std::memory_order_relaxed);
      what = "disk faster than the recalibrated model for a whole window: model scale lowered";
      break;
    case admission::ModelScale::Event::paused:
      level = log::Level::warn;
      what =
          "disk model optimistic beyond the largest recalibration: admission is paused. Run `vigil profile` on "
          "this disk again";
      break;
    case admission::ModelScale::Event::resumed:
      what = "disk model agrees with the device again; admission resumed";
      break;
    case admission::ModelScale::Event::none: break;
  }
  if (metrics_) metrics_->model_scale(scale, recalibrations_.load(std::memory_order_relaxed));
  log::write(level, what,
             {{"volume", path_},
              {"ratio", scale_.last_ratio()},
              {"model_scale", scale},
              {"predicted_ms", ms(r.predicted_rt)},
              {"observed_ms", ms(r.rt_busy)},
              {"cpu_wait_ms", ms(r.cpu_wait)}});
}

std::string DiskIoThread::io_priority_detail() const {
  std::lock_guard lock(priority_mu_);
  return io_priority_detail_;
}

std::string DiskIoThread::failure_reason() const { return volume_failed() ? failure_reason_ : std::string(); }

void DiskIoThread::on_cycle(const storage::CycleReport& r) {
  const auto n = cycles_.fetch_add(1, std::memory_order_relaxed) + 1;
  last_cycle_at_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (!volume_failed_.load(std::memory_order_relaxed) && volume_.device->failing()) {
    failure_reason_ = std::to_string(volume_.device->fail_after()) +
                      " writes or flushes failed in a row; taken out of service until vigild restarts";
    volume_failed_.store(true, std::memory_order_release);
    log::error("volume failed at runtime: no new streams go to it, its recordings continue on other volumes",
               {{"volume", path_}, {"reason", failure_reason_}});
    if (on_volume_failed_) on_volume_failed_(failure_reason_);
  }
  free_extents_.store(volume_.volume->free_extent_count(), std::memory_order_relaxed);
  if (latency_map_) {
    auto& learner = latency_map_->learner();
    const auto resets = learner.resets();
    learner.cycle_ended(r);
    if (metrics_) metrics_->latency_map_cycle(learner.cells(), r.stream_order_used, learner.resets() != resets);
  }
  if (io_realtime_.load(std::memory_order_relaxed) && rttime_exceeded()) {
    // RLIMIT_RTTIME's soft limit fired: a real-time thread ran too long without blocking.
    demote_to_normal();
    io_realtime_.store(false, std::memory_order_release);
    {
      std::lock_guard lock(priority_mu_);
      io_priority_detail_ = "normal priority: demoted after exceeding RLIMIT_RTTIME (SIGXCPU)";
    }
    log::error("disk IO thread demoted to normal priority: it ran past RLIMIT_RTTIME without blocking",
               {{"volume", path_}});
  }
  if (metrics_) {
    metrics_->cpu_wait(ms(r.cpu_wait) / 1e3);
    if (n % 60 == 1) metrics_->io_thread(io_realtime(), buffers_locked());
  }
  if (admission_) {
    calibration_.observe(ms(r.predicted_rt) / 1e3, device_seconds(r));
    admission_->set_calibration(calibration_.factor());
    // For the statistical policy: what each running stream costs, copied out for the
    // admission decisions on other threads (a few hundred small entries once a cycle).
    std::lock_guard lock(measured_mu_);
    measured_ = scheduler_->stream_stats();
  }
  if (checking_ && admission_) check_model(r);
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
  // The IO thread is gone: the live map is this thread's to save.
  if (latency_map_) latency_map_->finish();
}

}  // namespace vigil::server
