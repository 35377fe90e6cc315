#include "server/core/vigild_metrics.hpp"

#include <algorithm>

namespace vigil::server {
namespace {

using metrics::Counter;
using metrics::Family;
using metrics::Gauge;
using metrics::Histogram;

double seconds(storage::Nanos t) { return std::chrono::duration<double>(t).count(); }

const std::vector<double> kUtilisationBounds = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.25};
// Slack is negative when a cycle overran.
const std::vector<double> kSlackBounds = {-1, -0.1, -0.01, 0, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
// An interactive read waits at most about a cycle (T, 0.2 s to 1 s) behind stream IO, and takes
// a chunk's transfer once started: from 0.5 ms (a cache hit) to several cycles (overload).
const std::vector<double> kInteractiveBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kLatencyBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

constexpr std::array<storage::MissCause, 5> kCauses = {storage::MissCause::overload, storage::MissCause::interactive,
                                                       storage::MissCause::slow_io, storage::MissCause::device_error,
                                                       storage::MissCause::cpu_starved};
constexpr std::array<const char*, 3> kRefusals = {"rate_exceeded", "out_of_order", "invalid"};
constexpr std::array<const char*, 4> kLosses = {"rate_exceeded", "deadline_missed", "io_error",
                                                "source_loss"};  // CameraMetrics::Loss
constexpr std::array<const char*, 4> kStatusClasses = {"2xx", "3xx", "4xx", "5xx"};

}  // namespace

Metrics::Metrics()
    : d_cycles_(registry_.counter("vigil_disk_cycles_total", "Cycles the disk's IO thread has run.", {"disk"})),
      d_stream_ios_(registry_.counter("vigil_disk_stream_ios_total",
                                      "Stream IOs (one per admitted stream per cycle) completed.", {"disk"})),
      d_preemptions_(registry_.counter(
          "vigil_disk_preemptions_total",
          "Times an interactive request was served at a preemption point between the chunks of a stream IO.",
          {"disk"})),
      d_interactive_(
          registry_.counter("vigil_disk_interactive_requests_total", "Interactive requests served.", {"disk"})),
      d_best_effort_(
          registry_.counter("vigil_disk_best_effort_requests_total", "Best-effort requests served.", {"disk"})),
      d_background_(registry_.counter("vigil_disk_background_chunks_total",
                                      "Chunks of background work (retention, scrubbing) issued in slack.", {"disk"})),
      d_commands_(
          registry_.counter("vigil_disk_commands_total", "Device commands (chunks, flushes) completed.", {"disk"})),
      d_stream_bytes_(registry_.counter("vigil_disk_stream_io_bytes_total",
                                        "Bytes moved by stream IOs (recording writes and playback reads).", {"disk"})),
      d_other_bytes_(registry_.counter("vigil_disk_other_io_bytes_total",
                                       "Bytes moved by interactive, best-effort and background IO.", {"disk"})),
      d_misses_(registry_.counter(
          "vigil_disk_deadline_misses_total",
          "Stream IOs unfinished when their cycle ended, by cause (overload, interactive, slow_io, device_error).",
          {"disk", "cause"})),
      d_decisions_(registry_.counter(
          "vigil_disk_admission_decisions_total",
          "Admission decisions on the disk by kind (recording, playback) and decision (admitted, refused).",
          {"disk", "kind", "decision"})),
      d_playback_released_(registry_.counter(
          "vigil_disk_playback_released_total",
          "Playback shares released before the playback ended, by reason: paused (longer than "
          "--playback-pause-release) or preempted (ended so that a recording fits: recording comes first).",
          {"disk", "reason"})),
      d_reclaimed_segments_(registry_.counter(
          "vigil_disk_retention_reclaimed_segments_total",
          "Closed segments retention reclaimed (oldest unlocked first, or past their camera's retention_days).",
          {"disk"})),
      d_reclaimed_bytes_(registry_.counter("vigil_disk_retention_reclaimed_bytes_total",
                                           "Volume space retention freed (whole extents).", {"disk"})),
      d_retention_failures_(
          registry_.counter("vigil_disk_retention_failures_total",
                            "Retention passes that failed (catalog or device error; retried next pass).", {"disk"})),
      d_model_recalibrations_(registry_.counter(
          "vigil_disk_model_recalibrations_total",
          "Times the online model check recalibrated the disk model (raised when it tripped, lowered when the device "
          "was faster for a whole window).",
          {"disk"})),
      d_scrub_segments_(registry_.counter("vigil_scrub_segments_total",
                                          "Closed segments the integrity scrubber re-read and verified.", {"disk"})),
      d_scrub_corrupt_(registry_.counter(
          "vigil_scrub_corrupt_segments_total",
          "Closed segments the scrubber found damaged (a record failed its CRC, or the segment checksum did not "
          "match); each became a 'corruption' gap. Counted once per segment.",
          {"disk"})),
      d_scrub_bytes_(
          registry_.counter("vigil_scrub_bytes_total", "Bytes the scrubber read back (in slack).", {"disk"})),
      d_scrub_epochs_(registry_.counter("vigil_scrub_epochs_total",
                                        "Scrub epochs finished: every closed segment with a known checksum verified.",
                                        {"disk"})),
      d_scrub_promoted_(
          registry_.counter("vigil_scrub_promoted_total",
                            "Scrub reads that outlived their slot in the epoch and were promoted from the "
                            "cycles' slack to interactive requests (too little slack for the target age).",
                            {"disk"})),
      d_scrub_repaired_(registry_.counter(
          "vigil_scrub_repaired_segments_total",
          "Damaged segments the scrubber made whole again from their verified archive copy: the local copy's "
          "extents freed, the segment read from the archive, its 'corruption' gaps removed.",
          {"disk"})),
      d_archive_segments_(registry_.counter("vigil_archive_segments_total",
                                            "Closed segments copied to the archive tier and verified.", {"disk"})),
      d_archive_bytes_(registry_.counter("vigil_archive_bytes_total",
                                         "Bytes copied to the archive tier (read in the disk's slack).", {"disk"})),
      d_archive_failures_(registry_.counter(
          "vigil_archive_failures_total",
          "Segment copies to the archive tier that failed (read, verification or upload) and will be retried.",
          {"disk"})),
      d_utilisation_(registry_.gauge("vigil_disk_last_cycle_utilisation_ratio",
                                     "Device busy time of the last cycle over the cycle length T.", {"disk"})),
      d_slack_(registry_.gauge(
          "vigil_disk_last_cycle_slack_seconds",
          "T minus the time the last cycle's stream IOs took to finish; negative when the cycle overran.", {"disk"})),
      d_predicted_rt_(registry_.gauge(
          "vigil_disk_last_cycle_stream_io_predicted_seconds",
          "Stream IO time the disk model predicted for the last cycle (the online model check's input).", {"disk"})),
      d_observed_rt_(registry_.gauge(
          "vigil_disk_last_cycle_stream_io_observed_seconds",
          "Device time the last cycle's stream IOs took (compared with the prediction by the online model check).",
          {"disk"})),
      d_expected_wait_(registry_.gauge(
          "vigil_disk_expected_interactive_wait_seconds",
          "Expected waiting time of an interactive request arriving at a random moment, Eq. 4.2: 1/2 sum T_i^2 / (sum T_i + T_idle), since start.",
          {"disk"})),
      d_longest_command_(registry_.gauge("vigil_disk_longest_command_seconds",
                                         "Longest non-preemptible device command since start.", {"disk"})),
      d_cycle_s_(registry_.gauge("vigil_disk_cycle_length_seconds", "Cycle length T (--cycle-ms).", {"disk"})),
      d_r_rt_(registry_.gauge("vigil_disk_realtime_share_ratio",
                              "r_RT: the share of each cycle reserved for stream IO.", {"disk"})),
      d_chunk_bytes_(registry_.gauge("vigil_disk_chunk_bytes",
                                     "Chunk size of Semi-preemptible IO (from the profile or --chunk-bytes).",
                                     {"disk"})),
      d_depth_(registry_.gauge("vigil_disk_io_depth", "Chunks in flight at most (--io-depth).", {"disk"})),
      d_profiled_(registry_.gauge("vigil_disk_profiled",
                                  "1 if the disk has a profile (streams can be admitted), else 0.", {"disk"})),
      d_budget_(registry_.gauge(
          "vigil_disk_admission_budget_ratio",
          "Share of the cycle the admission controller may fill with predicted stream IO (budget over T).", {"disk"})),
      d_admitted_streams_(registry_.gauge("vigil_disk_admitted_streams",
                                          "Streams admitted on the disk now (recording and playback).", {"disk"})),
      d_admitted_rate_(registry_.gauge("vigil_disk_admitted_rate_bytes_per_second",
                                       "Sum of the admitted rates BR of the disk's streams.", {"disk"})),
      d_predicted_busy_(
          registry_.gauge("vigil_disk_admission_predicted_busy_ratio",
                          "Stream IO time per cycle the admission policy predicts for the admitted streams, over T.",
                          {"disk"})),
      d_model_optimistic_(
          registry_.gauge("vigil_disk_model_optimistic",
                          "1 while the online model check finds the profile optimistic (admission paused), else 0.",
                          {"disk"})),
      d_model_scale_(registry_.gauge("vigil_disk_model_scale_ratio",
                                     "The recalibrated disk model's predictions over the profile's (1: as profiled).",
                                     {"disk"})),
      d_free_bytes_(
          registry_.gauge("vigil_disk_free_bytes", "Free space of the disk's volume (whole free extents).", {"disk"})),
      d_archive_lag_(registry_.gauge(
          "vigil_archive_lag_seconds",
          "How long the oldest closed segment without an archive copy has waited since it closed (0: none waits).",
          {"disk"})),
      d_scrub_progress_(registry_.gauge("vigil_scrub_epoch_progress_ratio",
                                        "Share of the current scrub epoch's segments verified so far.", {"disk"})),
      d_playback_share_(registry_.gauge(
          "vigil_disk_playback_share_ratio",
          "The playbacks' share of the cycle: --playback-share x r_RT (what admitted playbacks may be predicted to use, "
          "over T).",
          {"disk"})),
      d_playback_in_use_(
          registry_.gauge("vigil_disk_playback_share_in_use_ratio",
                          "Stream IO time per cycle the admission policy predicts for the admitted playbacks, over T.",
                          {"disk"})),
      d_io_realtime_(
          registry_.gauge("vigil_disk_io_thread_realtime",
                          "1 if the disk's IO thread runs at real-time priority (SCHED_FIFO), 0 if at normal "
                          "priority (--io-priority normal, no privilege, or demoted by RLIMIT_RTTIME).",
                          {"disk"})),
      d_io_cpu_wait_(registry_.gauge(
          "vigil_disk_io_thread_cpu_wait_seconds",
          "Time the disk's IO thread was runnable but waiting for a CPU in the last cycle (run-queue delay).",
          {"disk"})),
      d_io_buffers_locked_(
          registry_.gauge("vigil_disk_io_buffers_locked",
                          "1 while IO buffers are locked in memory (mlock), 0 when off or RLIMIT_MEMLOCK ran out.",
                          {"disk"})),
      v_unavailable_(
          registry_.gauge("vigil_volume_unavailable",
                          "1 for a configured volume vigild could not bring up at start (it runs without it).",
                          {"volume"})),
      d_utilisation_hist_(registry_.histogram("vigil_disk_cycle_utilisation_ratio",
                                              "Device busy time per cycle over T.", kUtilisationBounds, {"disk"})),
      d_slack_hist_(registry_.histogram("vigil_disk_cycle_slack_seconds",
                                        "Slack per cycle: T minus the end of its last stream IO.", kSlackBounds,
                                        {"disk"})),
      c_streams_(registry_.counter("vigil_camera_streams_total", "Recording streams the camera has opened (admitted).",
                                   {"camera"})),
      c_packets_(registry_.counter("vigil_camera_packets_accepted_total",
                                   "Media packets accepted into the camera's stream buffer.", {"camera"})),
      c_bytes_(registry_.counter("vigil_camera_bytes_accepted_total", "Payload bytes of the accepted media packets.",
                                 {"camera"})),
      c_refused_(registry_.counter(
          "vigil_camera_packets_refused_total",
          "Media packets refused, by reason: rate_exceeded (policing: beyond the admitted rate this cycle), out_of_order, invalid.",
          {"camera", "reason"})),
      c_gaps_(registry_.counter("vigil_camera_gaps_total",
                                "Gaps recorded in the camera's recording: reconnects, stalls, failed disks, refused "
                                "frames never stored.",
                                {"camera"})),
      c_discontinuities_(registry_.counter("vigil_camera_timestamp_discontinuities_total",
                                           "Timestamp jumps in the camera's packets re-pinned to wall-clock time.",
                                           {"camera"})),
      c_lost_frames_(registry_.counter("vigil_camera_lost_frames_total",
                                       "Media packets refused and never stored (each in a gap with this reason): "
                                       "rate_exceeded, deadline_missed, io_error; and those the recorder dropped "
                                       "(rate_exceeded) or its source never delivered (source_loss).",
                                       {"camera", "reason"})),
      c_lost_bytes_(registry_.counter("vigil_camera_lost_bytes_total",
                                      "Payload bytes of the media packets refused and never stored, by reason.",
                                      {"camera", "reason"})),
      c_recording_(
          registry_.gauge("vigil_camera_recording_streams", "Streams of the camera recording now.", {"camera"})),
      c_admitted_rate_(registry_.gauge("vigil_camera_admitted_rate_bytes_per_second",
                                       "Admitted rate of the camera's recording streams now.", {"camera"})),
      c_rate_(registry_.gauge(
          "vigil_camera_recording_rate_bytes_per_second",
          "Measured rate: payload bytes accepted per second, over the time since the previous sample (at least 1 s).",
          {"camera"})),
      c_up_(registry_.gauge("vigil_camera_up",
                            "Pulled cameras: 1 while the camera's recorder has a recording stream open in vigild, 0 "
                            "while it starts or reconnects (its camera unreachable, refused, ...).",
                            {"camera"})),
      c_restarts_(registry_.counter("vigil_camera_restarts_total",
                                    "Pulled cameras: times the camera manager started the camera's recorder again "
                                    "after its session ended (camera lost, refused, ingest worker died).",
                                    {"camera"})),
      d_interactive_read_(registry_.histogram(
          "vigil_interactive_read_seconds",
          "Interactive reads (exports, HLS segments, thumbnails) on the disk's cycle scheduler: time from the "
          "request's arrival at the scheduler to its completion.",
          kInteractiveBounds, {"disk"})),
      d_state_(registry_.gauge("vigil_disk_state",
                               "1 for the disk's state now, 0 for the others: in_service, full (short of its reserve "
                               "with nothing to reclaim), failed (taken out of service), stalled (IO thread's cycles "
                               "stopped).",
                               {"disk", "state"})),
      d_last_cycle_age_(registry_.gauge("vigil_disk_last_cycle_age_seconds",
                                        "Time since the disk's IO thread last ended a cycle (about T while it runs).",
                                        {"disk"})),
      d_latmap_enabled_(registry_.gauge("vigil_latency_map_enabled",
                                        "1 if the disk's IO thread learns a latency map and orders its cycles' stream "
                                        "IOs by it (--latency-map; auto: rotating devices only).",
                                        {"disk"})),
      d_latmap_cells_(registry_.gauge("vigil_latency_map_cells",
                                      "Cells (extent → extent) of the disk's latency map learned so far.", {"disk"})),
      d_latmap_loaded_(registry_.gauge("vigil_latency_map_loaded_cells",
                                       "Cells loaded at start from the map file next to the volume (0: none, or the "
                                       "file was refused and the map is relearned).",
                                       {"disk"})),
      d_latmap_saves_(registry_.counter("vigil_latency_map_saves_total",
                                        "Times the disk's latency map was written next to its volume.", {"disk"})),
      d_latmap_ordered_(registry_.counter("vigil_latency_map_ordered_cycles_total",
                                          "Cycles whose stream IOs went in the latency map's order (FSATF-MAP) "
                                          "rather than the C-LOOK sweep.",
                                          {"disk"})),
      d_latmap_resets_(registry_.counter("vigil_latency_map_resets_total",
                                         "Times a full latency map was cleared to be relearned.", {"disk"})),
      catalog_up_(registry_
                      .gauge("vigil_catalog_up",
                             "1 while the catalog probe reaches PostgreSQL, 0 while it does not (as /healthz).")
                      .with({})),
      catalog_rows_waiting_(registry_
                                .gauge("vigil_catalog_rows_waiting",
                                       "Catalog rows (segments, gaps, stream ends) handed to the batcher and not "
                                       "committed yet: its queue.")
                                .with({})),
      catalog_rows_spooled_(registry_
                                .gauge("vigil_catalog_rows_spooled",
                                       "Of the rows waiting, those kept in the spool file (DATA/catalog.spool) "
                                       "until the catalog commits them.")
                                .with({})),
      gaps_by_reason_(registry_.counter("vigil_gaps_total",
                                        "Gaps recorded in the cameras' recordings, by reason: source_lost (the "
                                        "recorder reconnected), source_stalled, source_loss (the source never "
                                        "delivered the media), rate_exceeded, deadline_missed, io_error, other.",
                                        {"reason"})),
      http_(registry_.histogram("vigil_http_request_duration_seconds",
                                "HTTP request handling time, by route (a fixed set of names) and status class.",
                                kLatencyBounds, {"route", "status"})),
      catalog_wait_family_(registry_.histogram("vigil_catalog_job_wait_seconds",
                                               "Time a catalog job waited for a catalog pool thread.", kLatencyBounds)),
      catalog_job_family_(registry_.histogram(
          "vigil_catalog_job_duration_seconds",
          "Time a catalog job ran on its pool thread (connection and statements), by outcome (ok, error).",
          kLatencyBounds, {"outcome"})),
      catalog_wait_(catalog_wait_family_.with({})),
      catalog_ok_(catalog_job_family_.with({"ok"})),
      catalog_failed_(catalog_job_family_.with({"error"})) {
  for (std::size_t g = 0; g < kGapReasons.size(); ++g) {
    gaps_by_reason_series_[g] = &gaps_by_reason_.with({std::string(kGapReasons[g])});
  }
  for (std::size_t r = 0; r < kHttpRoutes.size(); ++r) {
    for (std::size_t s = 0; s < kStatusClasses.size(); ++s) {
      http_series_[r][s] = &http_.with({std::string(kHttpRoutes[r]), kStatusClasses[s]});
    }
  }
  registry_.on_collect([this] {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    for (auto& [name, c] : cameras_) c->sample_rate(now);
  });
}

DiskMetrics& Metrics::disk(const std::string& disk) {
  std::lock_guard lock(mu_);
  auto& slot = disks_[disk];
  if (!slot) slot = std::make_unique<DiskMetrics>(*this, disk);
  return *slot;
}

CameraMetrics& Metrics::camera(const std::string& name) {
  std::lock_guard lock(mu_);
  auto& slot = cameras_[name];
  if (!slot) slot = std::make_unique<CameraMetrics>(*this, name);
  return *slot;
}

void Metrics::gap(std::string_view reason) noexcept {
  std::size_t g = std::find(kGapReasons.begin(), kGapReasons.end(), reason) - kGapReasons.begin();
  if (g == kGapReasons.size()) g = kGapReasons.size() - 1;  // "other"
  gaps_by_reason_series_[g]->inc();
}

void Metrics::http_request(std::string_view route, unsigned status, double seconds) noexcept {
  std::size_t r = std::find(kHttpRoutes.begin(), kHttpRoutes.end(), route) - kHttpRoutes.begin();
  if (r == kHttpRoutes.size()) r = kHttpRoutes.size() - 1;  // "other"
  const std::size_t s = std::clamp<unsigned>(status / 100, 2, 5) - 2;
  http_series_[r][s]->observe(seconds);
}

DiskMetrics::DiskMetrics(Metrics& m, const std::string& disk)
    : cycles_(m.d_cycles_.with({disk})),
      stream_ios_(m.d_stream_ios_.with({disk})),
      preemptions_(m.d_preemptions_.with({disk})),
      interactive_(m.d_interactive_.with({disk})),
      best_effort_(m.d_best_effort_.with({disk})),
      background_chunks_(m.d_background_.with({disk})),
      commands_(m.d_commands_.with({disk})),
      stream_bytes_(m.d_stream_bytes_.with({disk})),
      other_bytes_(m.d_other_bytes_.with({disk})),
      utilisation_(m.d_utilisation_.with({disk})),
      slack_s_(m.d_slack_.with({disk})),
      predicted_rt_s_(m.d_predicted_rt_.with({disk})),
      observed_rt_s_(m.d_observed_rt_.with({disk})),
      expected_wait_s_(m.d_expected_wait_.with({disk})),
      longest_command_s_(m.d_longest_command_.with({disk})),
      utilisation_hist_(m.d_utilisation_hist_.with({disk})),
      slack_hist_(m.d_slack_hist_.with({disk})),
      cycle_s_(m.d_cycle_s_.with({disk})),
      r_rt_(m.d_r_rt_.with({disk})),
      chunk_bytes_(m.d_chunk_bytes_.with({disk})),
      depth_(m.d_depth_.with({disk})),
      profiled_(m.d_profiled_.with({disk})),
      budget_ratio_(m.d_budget_.with({disk})),
      admitted_streams_(m.d_admitted_streams_.with({disk})),
      admitted_rate_(m.d_admitted_rate_.with({disk})),
      predicted_busy_(m.d_predicted_busy_.with({disk})),
      model_optimistic_(m.d_model_optimistic_.with({disk})),
      model_scale_(m.d_model_scale_.with({disk})),
      model_recalibrations_(m.d_model_recalibrations_.with({disk})),
      io_realtime_(m.d_io_realtime_.with({disk})),
      io_cpu_wait_(m.d_io_cpu_wait_.with({disk})),
      io_buffers_locked_(m.d_io_buffers_locked_.with({disk})),
      playback_share_(m.d_playback_share_.with({disk})),
      playback_in_use_(m.d_playback_in_use_.with({disk})),
      reclaimed_segments_(m.d_reclaimed_segments_.with({disk})),
      reclaimed_bytes_(m.d_reclaimed_bytes_.with({disk})),
      retention_failures_(m.d_retention_failures_.with({disk})),
      scrub_segments_(m.d_scrub_segments_.with({disk})),
      scrub_corrupt_(m.d_scrub_corrupt_.with({disk})),
      scrub_bytes_(m.d_scrub_bytes_.with({disk})),
      scrub_epochs_(m.d_scrub_epochs_.with({disk})),
      scrub_promoted_(m.d_scrub_promoted_.with({disk})),
      scrub_repaired_(m.d_scrub_repaired_.with({disk})),
      archive_segments_(m.d_archive_segments_.with({disk})),
      archive_bytes_(m.d_archive_bytes_.with({disk})),
      archive_failures_(m.d_archive_failures_.with({disk})),
      archive_lag_(m.d_archive_lag_.with({disk})),
      free_bytes_(m.d_free_bytes_.with({disk})),
      scrub_progress_(m.d_scrub_progress_.with({disk})),
      interactive_read_(m.d_interactive_read_.with({disk})),
      last_cycle_age_(m.d_last_cycle_age_.with({disk})),
      latmap_enabled_(m.d_latmap_enabled_.with({disk})),
      latmap_cells_(m.d_latmap_cells_.with({disk})),
      latmap_loaded_(m.d_latmap_loaded_.with({disk})),
      latmap_saves_(m.d_latmap_saves_.with({disk})),
      latmap_ordered_(m.d_latmap_ordered_.with({disk})),
      latmap_resets_(m.d_latmap_resets_.with({disk})) {
  for (std::size_t i = 0; i < kDiskStates.size(); ++i)
    state_[i] = &m.d_state_.with({disk, std::string(kDiskStates[i])});
  for (std::size_t i = 0; i < kCauses.size(); ++i) {
    misses_[i] = &m.d_misses_.with({disk, storage::miss_cause_name(kCauses[i])});
  }
  const char* kinds[] = {"recording", "playback"};
  const char* outcomes[] = {"refused", "admitted"};
  for (std::size_t k = 0; k < 2; ++k) {
    for (std::size_t a = 0; a < 2; ++a) decisions_[k * 2 + a] = &m.d_decisions_.with({disk, kinds[k], outcomes[a]});
  }
  playback_released_[0] = &m.d_playback_released_.with({disk, "paused"});
  playback_released_[1] = &m.d_playback_released_.with({disk, "preempted"});
}

void DiskMetrics::configured(const storage::SchedulerConfig& config, bool profiled,
                             double admission_budget_ratio) noexcept {
  cycle_s_.set(seconds(config.cycle));
  r_rt_.set(config.r_rt);
  chunk_bytes_.set(static_cast<double>(config.chunk_bytes));
  depth_.set(static_cast<double>(config.depth));
  profiled_.set(profiled ? 1 : 0);
  budget_ratio_.set(admission_budget_ratio);
  model_scale_.set(1);
}

void DiskMetrics::cycle(const storage::CycleReport& r, const storage::SchedulerTotals& t,
                        const storage::PreemptibilityMeter& meter, bool model_optimistic) noexcept {
  utilisation_.set(r.utilisation);
  utilisation_hist_.observe(r.utilisation);
  slack_s_.set(seconds(r.slack));
  slack_hist_.observe(seconds(r.slack));
  predicted_rt_s_.set(seconds(r.predicted_rt));
  observed_rt_s_.set(seconds(r.rt_busy));
  expected_wait_s_.set(seconds(meter.expected_waiting()));
  longest_command_s_.set(seconds(meter.longest_command()));
  model_optimistic_.set(model_optimistic ? 1 : 0);
  stream_ios_.store(t.stream_ios);
  preemptions_.store(t.preemptions);
  interactive_.store(t.interactive);
  best_effort_.store(t.best_effort);
  background_chunks_.store(t.background_chunks);
  commands_.store(t.commands);
  stream_bytes_.store(t.stream_bytes);
  other_bytes_.store(t.other_bytes);
  cycles_.store(t.cycles);  // relaxed, like the rest: a scrape may mix figures of adjacent cycles
}

void DiskMetrics::model_scale(double scale, std::uint64_t recalibrations) noexcept {
  model_scale_.set(scale);
  model_recalibrations_.store(recalibrations);
}

void DiskMetrics::io_thread(bool realtime, bool buffers_locked) noexcept {
  io_realtime_.set(realtime ? 1 : 0);
  io_buffers_locked_.set(buffers_locked ? 1 : 0);
}

void DiskMetrics::cpu_wait(double seconds) noexcept { io_cpu_wait_.set(seconds); }

void DiskMetrics::scrubbed(std::uint64_t bytes, bool corrupt) noexcept {
  scrub_segments_.inc();
  scrub_bytes_.inc(bytes);
  if (corrupt) scrub_corrupt_.inc();
}

void DiskMetrics::scrub_progress(double done) noexcept { scrub_progress_.set(done); }
void DiskMetrics::scrub_promoted() noexcept { scrub_promoted_.inc(); }
void DiskMetrics::scrub_repaired() noexcept { scrub_repaired_.inc(); }

void DiskMetrics::scrub_epoch_done() noexcept { scrub_epochs_.inc(); }

void DiskMetrics::archived(std::uint64_t bytes) noexcept {
  archive_segments_.inc();
  archive_bytes_.inc(bytes);
}

void DiskMetrics::archive_failed() noexcept { archive_failures_.inc(); }

void DiskMetrics::archive_lag(double seconds) noexcept { archive_lag_.set(seconds); }

void DiskMetrics::reclaimed(std::uint64_t segments, std::uint64_t bytes) noexcept {
  reclaimed_segments_.inc(segments);
  reclaimed_bytes_.inc(bytes);
}

void DiskMetrics::retention_failed() noexcept { retention_failures_.inc(); }

void DiskMetrics::free_bytes(double bytes) noexcept { free_bytes_.set(bytes); }

void DiskMetrics::interactive_read(double seconds) noexcept { interactive_read_.observe(seconds); }

void DiskMetrics::latency_map_enabled(bool enabled, std::size_t loaded_cells) noexcept {
  latmap_enabled_.set(enabled ? 1 : 0);
  latmap_loaded_.set(static_cast<double>(loaded_cells));
  latmap_cells_.set(static_cast<double>(loaded_cells));
}

void DiskMetrics::latency_map_cycle(std::size_t cells, bool ordered, bool reset) noexcept {
  latmap_cells_.set(static_cast<double>(cells));
  if (ordered) latmap_ordered_.inc();
  if (reset) latmap_resets_.inc();
}

void DiskMetrics::latency_map_saved() noexcept { latmap_saves_.inc(); }

void DiskMetrics::state(DiskState state, double last_cycle_age_s) noexcept {
  for (std::size_t i = 0; i < state_.size(); ++i) state_[i]->set(i == static_cast<std::size_t>(state) ? 1 : 0);
  last_cycle_age_.set(last_cycle_age_s);
}

void Metrics::camera_up(const std::string& name, bool up) { c_up_.with({name}).set(up ? 1 : 0); }

void Metrics::camera_gone(const std::string& name) { c_up_.remove({name}); }

void Metrics::camera_restarted(const std::string& name) { c_restarts_.with({name}).inc(); }

int Metrics::recording_streams(const std::string& name) {
  std::lock_guard lock(mu_);
  const auto it = cameras_.find(name);
  return it == cameras_.end() ? 0 : static_cast<int>(it->second->recording_streams());
}

int Metrics::main_video_streams(const std::string& name) {
  std::lock_guard lock(mu_);
  const auto it = cameras_.find(name);
  return it == cameras_.end() ? 0 : it->second->main_video_streams();
}

void Metrics::volume_unavailable(const std::string& path) { v_unavailable_.with({path}).set(1); }

void DiskMetrics::miss(storage::MissCause cause) noexcept {
  const auto i = static_cast<std::size_t>(cause);
  if (i < misses_.size()) misses_[i]->inc();
}

void DiskMetrics::admitted(std::size_t streams, Rate admitted_rate, double predicted_busy_ratio) noexcept {
  admitted_streams_.set(static_cast<double>(streams));
  admitted_rate_.set(admitted_rate.Bps());  // the gauge is in bytes per second
  predicted_busy_.set(predicted_busy_ratio);
}

void DiskMetrics::decision(Kind kind, bool admitted) noexcept {
  decisions_[(kind == Kind::playback ? 2 : 0) + (admitted ? 1 : 0)]->inc();
}

void DiskMetrics::playback_share(double ratio) noexcept { playback_share_.set(ratio); }

void DiskMetrics::playback_share_in_use(double ratio) noexcept { playback_in_use_.set(ratio); }

void DiskMetrics::playback_released(Release why) noexcept { playback_released_[why == Release::paused ? 0 : 1]->inc(); }

CameraMetrics::CameraMetrics(Metrics& m, const std::string& camera)
    : streams_(m.c_streams_.with({camera})),
      packets_(m.c_packets_.with({camera})),
      bytes_(m.c_bytes_.with({camera})),
      gaps_(m.c_gaps_.with({camera})),
      discontinuities_(m.c_discontinuities_.with({camera})),
      node_(m),
      recording_(m.c_recording_.with({camera})),
      admitted_rate_(m.c_admitted_rate_.with({camera})),
      rate_(m.c_rate_.with({camera})) {
  for (std::size_t i = 0; i < kRefusals.size(); ++i) refused_[i] = &m.c_refused_.with({camera, kRefusals[i]});
  for (std::size_t i = 0; i < kLosses.size(); ++i) {
    lost_frames_[i] = &m.c_lost_frames_.with({camera, kLosses[i]});
    lost_bytes_[i] = &m.c_lost_bytes_.with({camera, kLosses[i]});
  }
}

void CameraMetrics::stream_started(Rate admitted_rate, bool main_video) noexcept {
  streams_.inc();
  recording_.add(1);
  if (main_video) main_video_.fetch_add(1, std::memory_order_relaxed);
  admitted_rate_.add(admitted_rate.Bps());
  std::lock_guard lock(rate_mu_);  // network thread, once per stream; never on the packet path
  if (!sampled_) {
    sampled_ = true;
    last_ = std::chrono::steady_clock::now();
    last_bytes_ = bytes_.value();
  }
}

void CameraMetrics::stream_ended(Rate admitted_rate, bool main_video) noexcept {
  recording_.add(-1);
  if (main_video) main_video_.fetch_sub(1, std::memory_order_relaxed);
  admitted_rate_.add(-admitted_rate.Bps());
}

void CameraMetrics::readmitted(Rate from, Rate to) noexcept { admitted_rate_.add(to.Bps() - from.Bps()); }

void CameraMetrics::packet(std::size_t payload_bytes) noexcept {
  packets_.inc();
  bytes_.inc(payload_bytes);
}

void CameraMetrics::refused(Refusal why) noexcept { refused_[static_cast<std::size_t>(why)]->inc(); }
void CameraMetrics::gap(std::string_view reason) noexcept {
  gaps_.inc();
  node_.gap(reason);
}
void CameraMetrics::lost(Loss why, std::uint64_t frames, std::uint64_t payload_bytes) noexcept {
  lost_frames_[static_cast<std::size_t>(why)]->inc(frames);
  lost_bytes_[static_cast<std::size_t>(why)]->inc(payload_bytes);
}
void CameraMetrics::discontinuity() noexcept { discontinuities_.inc(); }

void CameraMetrics::sample_rate(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(rate_mu_);
  const auto bytes = bytes_.value();
  if (!sampled_) {
    sampled_ = true;
    last_ = now;
    last_bytes_ = bytes;
    return;
  }
  const double dt = std::chrono::duration<double>(now - last_).count();
  if (dt < 1.0) return;
  rate_.set(static_cast<double>(bytes - last_bytes_) / dt);
  last_ = now;
  last_bytes_ = bytes;
}

}  // namespace vigil::server
