#pragma once
// The metrics vigild exports at GET /metrics (docs/metrics.md lists and explains each one):
// per disk (label `disk` = the volume's absolute path, as in vigild's logs), per camera (label
// `camera` = the camera's name), HTTP request latency (label `route` from a fixed set, never
// the raw path, and `status` = 2xx/3xx/4xx/5xx) and catalog pool latency.
// Thread: DiskMetrics::cycle()/miss() run on that disk's IO thread and only store atomics;
// CameraMetrics updates run on a session's network thread and only touch atomics; admitted()
// and decision() on network threads; Metrics::disk()/camera() take a mutex (start-up, opening a
// stream), never on an IO thread; render() on HTTP threads. Errors: none at run time.
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/rate.hpp"
#include "server/core/metrics.hpp"
#include "storage/cycle_scheduler.hpp"

namespace vigil::server {

class Metrics;

// The states of a disk in /healthz and vigil_disk_state (server/disks/disk_health.hpp decides):
// in service, full (short of its reserve with nothing retention may reclaim), failed (taken out of
// service after repeated write or flush failures), stalled (its IO thread's cycles stopped).
enum class DiskState { in_service, full, failed, stalled };
inline constexpr std::array<std::string_view, 4> kDiskStates = {"in_service", "full", "failed",
                                                                "stalled"};  // by DiskState

class DiskMetrics {
 public:
  DiskMetrics(Metrics& m, const std::string& disk);

  // Once, before the IO thread's first cycle: the control variables.
  void configured(const storage::SchedulerConfig& config, bool profiled, double admission_budget_ratio) noexcept;
  // IO thread, after each cycle: the cycle's report and the scheduler's running totals.
  void cycle(const storage::CycleReport& r, const storage::SchedulerTotals& totals,
             const storage::PreemptibilityMeter& meter, bool model_optimistic) noexcept;
  // IO thread, when the online check recalibrated the model: its scale and the recalibrations so far.
  void model_scale(double scale, std::uint64_t recalibrations) noexcept;
  // IO thread: whether it runs at real-time priority, whether the IO buffers are locked in memory
  // (docs/scheduler.md), and the last cycle's run-queue delay (time runnable without a CPU).
  void io_thread(bool realtime, bool buffers_locked) noexcept;
  void cpu_wait(double seconds) noexcept;
  void miss(storage::MissCause cause) noexcept;

  enum class Kind { recording, playback };
  // With the disk's admission mutex held, after its set of admitted streams changed.
  void admitted(std::size_t streams, Rate admitted_rate, double predicted_busy_ratio) noexcept;
  void decision(Kind kind, bool admitted) noexcept;
  // Playback share (admission/playback_share.hpp): its bound and what the admitted playbacks are
  // predicted to use, over T; a playback's share released (paused too long, or ended so that a
  // recording fits).
  enum class Release { paused, preempted };
  void playback_share(double ratio) noexcept;
  void playback_share_in_use(double ratio) noexcept;
  void playback_released(Release why) noexcept;
  // The retention thread: a pass reclaimed SEGMENTS segments of BYTES, or failed; the volume's free space.
  void reclaimed(std::uint64_t segments, std::uint64_t bytes) noexcept;
  void retention_failed() noexcept;
  // The scrub thread: a segment of BYTES verified (CORRUPT: newly found damaged); the epoch's
  // progress (0..1); an epoch finished.
  void scrubbed(std::uint64_t bytes, bool corrupt) noexcept;
  void scrub_progress(double done) noexcept;
  void scrub_epoch_done() noexcept;
  // A scrub read outlived its slot in the epoch and went on as interactive requests.
  void scrub_promoted() noexcept;
  // A damaged segment made whole again from its verified archive copy (docs/scrubber.md, "Repair").
  void scrub_repaired() noexcept;
  // The archive thread (docs/archive.md): a segment of BYTES copied and verified; a copy that
  // failed (read, verification or upload; retried); how long the oldest closed segment not yet
  // copied has waited (0: none waits).
  void archived(std::uint64_t bytes) noexcept;
  void archive_failed() noexcept;
  void archive_lag(double seconds) noexcept;
  void free_bytes(double bytes) noexcept;
  // IO thread: an interactive read's queue-to-completion time (arrival at the scheduler to done).
  void interactive_read(double seconds) noexcept;
  // Render side (a collect hook): the disk's state and how long ago its IO thread last ended a cycle.
  void state(DiskState state, double last_cycle_age_s) noexcept;
  // The latency map (docs/latency-map.md): at start, whether the disk has one and how many cells
  // were loaded from its file; from the IO thread after each cycle, its cells, whether the cycle
  // went in the map's order and whether a full map was cleared; a save (the saver's thread).
  void latency_map_enabled(bool enabled, std::size_t loaded_cells) noexcept;
  void latency_map_cycle(std::size_t cells, bool ordered, bool reset) noexcept;
  void latency_map_saved() noexcept;

 private:
  metrics::Counter &cycles_, &stream_ios_, &preemptions_, &interactive_, &best_effort_, &background_chunks_, &commands_,
      &stream_bytes_, &other_bytes_;
  std::array<metrics::Counter*, 5> misses_{};  // by storage::MissCause
  metrics::Gauge &utilisation_, &slack_s_, &predicted_rt_s_, &observed_rt_s_, &expected_wait_s_, &longest_command_s_;
  metrics::Histogram &utilisation_hist_, &slack_hist_;
  metrics::Gauge &cycle_s_, &r_rt_, &chunk_bytes_, &depth_, &profiled_, &budget_ratio_;
  metrics::Gauge &admitted_streams_, &admitted_rate_, &predicted_busy_, &model_optimistic_;
  metrics::Gauge& model_scale_;
  metrics::Counter& model_recalibrations_;
  metrics::Gauge &io_realtime_, &io_cpu_wait_, &io_buffers_locked_;
  std::array<metrics::Counter*, 4> decisions_{};  // [kind][admitted]
  metrics::Gauge &playback_share_, &playback_in_use_;
  std::array<metrics::Counter*, 2> playback_released_{};  // by Release
  metrics::Counter &reclaimed_segments_, &reclaimed_bytes_, &retention_failures_;
  metrics::Counter &scrub_segments_, &scrub_corrupt_, &scrub_bytes_, &scrub_epochs_, &scrub_promoted_, &scrub_repaired_;
  metrics::Counter &archive_segments_, &archive_bytes_, &archive_failures_;
  metrics::Gauge& archive_lag_;
  metrics::Gauge& free_bytes_;
  metrics::Gauge& scrub_progress_;
  metrics::Histogram& interactive_read_;
  std::array<metrics::Gauge*, kDiskStates.size()> state_{};
  metrics::Gauge& last_cycle_age_;
  metrics::Gauge &latmap_enabled_, &latmap_cells_, &latmap_loaded_;
  metrics::Counter &latmap_saves_, &latmap_ordered_, &latmap_resets_;
};

class CameraMetrics {
 public:
  CameraMetrics(Metrics& m, const std::string& camera);

  // MAIN_VIDEO: the stream records the camera's main video (not its sub stream or audio): the
  // camera counts as recording while one does (main_video_streams()). Every track's stream is
  // counted in the camera's series (vigil_camera_recording_streams, rates, bytes).
  void stream_started(Rate admitted_rate, bool main_video = true) noexcept;
  void stream_ended(Rate admitted_rate, bool main_video = true) noexcept;
  // A running stream re-admitted at another rate (its source sends more than it declared).
  void readmitted(Rate from, Rate to) noexcept;
  void packet(std::size_t payload_bytes) noexcept;
  enum class Refusal { rate_exceeded, out_of_order, invalid };
  void refused(Refusal why) noexcept;
  // A gap recorded in the camera's recording, REASON one of kGapReasons (others count as "other"):
  // the camera's gap counter and vigild's gaps by reason.
  void gap(std::string_view reason) noexcept;
  // Frames refused and never stored (a gap with this reason: server/recording/refused_run.hpp),
  // or that the recorder reported it dropped (rate_exceeded) or its source never delivered
  // (source_loss; FRAMES 0 when unknown): proto MediaLoss.
  enum class Loss { rate_exceeded, deadline_missed, io_error, source_loss };
  void lost(Loss why, std::uint64_t frames, std::uint64_t payload_bytes) noexcept;
  void discontinuity() noexcept;
  // Streams of the camera recording now.
  int recording_streams() const noexcept { return static_cast<int>(recording_.value()); }
  // Main video streams of the camera recording now.
  int main_video_streams() const noexcept { return main_video_.load(std::memory_order_relaxed); }

  // Render side: the measured rate, bytes accepted per second since the previous sample (taken
  // at most once a second, so concurrent scrapers do not shorten the window to nothing).
  void sample_rate(std::chrono::steady_clock::time_point now);

 private:
  metrics::Counter &streams_, &packets_, &bytes_, &gaps_, &discontinuities_;
  std::array<metrics::Counter*, 3> refused_{};
  std::array<metrics::Counter*, 4> lost_frames_{}, lost_bytes_{};
  Metrics& node_;  // vigild's gaps by reason
  metrics::Gauge &recording_, &admitted_rate_, &rate_;
  std::atomic<int> main_video_{0};
  std::mutex rate_mu_;  // sampling state; never taken on the packet path
  std::uint64_t last_bytes_ = 0;
  std::chrono::steady_clock::time_point last_{};
  bool sampled_ = false;
};

// The fixed set of `route` label values (http_metrics.cpp maps a path onto one).
inline constexpr std::array<std::string_view, 14> kHttpRoutes = {"healthz",
                                                                 "metrics",
                                                                 "cameras",
                                                                 "timeline",
                                                                 "camera_timeline",
                                                                 "camera_export",
                                                                 "camera_thumbnail",
                                                                 "camera_hls_playlist",
                                                                 "camera_hls_segment",
                                                                 "camera_live_playlist",
                                                                 "camera_live_segment",
                                                                 "events",
                                                                 "event",
                                                                 "other"};

// The reasons of gaps vigild records (the catalog's gaps.reason values a recording produces),
// the `reason` label of vigil_gaps_total.
inline constexpr std::array<std::string_view, 7> kGapReasons = {"source_lost",   "source_stalled",  "source_loss",
                                                                "rate_exceeded", "deadline_missed", "io_error",
                                                                "other"};

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The series of disk DISK (a volume path) / camera NAME, created at first use; stable.
  DiskMetrics& disk(const std::string& disk);
  CameraMetrics& camera(const std::string& name);
  // Volume PATH could not be brought up at start: vigild runs without it.
  void volume_unavailable(const std::string& path);

  // ROUTE must be one of kHttpRoutes (others count as "other"). Lock-free.
  void http_request(std::string_view route, unsigned status, double seconds) noexcept;
  metrics::Histogram& catalog_wait() noexcept { return catalog_wait_; }
  // A gap of REASON recorded in some camera's recording (kGapReasons; others count as "other"). Lock-free.
  void gap(std::string_view reason) noexcept;
  metrics::Histogram& catalog_job(bool ok) noexcept { return ok ? catalog_ok_ : catalog_failed_; }
  // The catalog probe's answer (server/core/catalog_health.hpp), set by a collect hook.
  void catalog_up(bool up) noexcept { catalog_up_.set(up ? 1 : 0); }
  // The batcher's rows not committed yet, and of those the rows in its spool (a collect hook).
  void catalog_rows(std::size_t waiting, std::size_t spooled) noexcept {
    catalog_rows_waiting_.set(static_cast<double>(waiting));
    catalog_rows_spooled_.set(static_cast<double>(spooled));
  }

  // Pulled cameras (server/recording/camera_status.hpp), never on an IO thread: camera NAME's
  // recorder is recording (1) or not (0); NAME is no longer pulled (its up series goes); its
  // recorder was started again after its session ended.
  void camera_up(const std::string& name, bool up);
  void camera_gone(const std::string& name);
  void camera_restarted(const std::string& name);
  // Streams of camera NAME recording now (0 for a camera that never recorded). Takes mu_.
  int recording_streams(const std::string& name);
  // Of those, the ones that record its main video (a camera whose sub stream or audio alone
  // records is not up). Takes mu_.
  int main_video_streams(const std::string& name);

  // HOOK runs before every render (metrics::Registry::on_collect): for gauges computed from
  // state that its owner does not publish itself. Whatever HOOK uses must outlive the renders.
  void on_collect(std::function<void()> hook) { registry_.on_collect(std::move(hook)); }

  std::string render() const { return registry_.render(); }

 private:
  friend class DiskMetrics;
  friend class CameraMetrics;

  metrics::Registry registry_;
  // Disk families.
  metrics::Family<metrics::Counter>&d_cycles_, &d_stream_ios_, &d_preemptions_, &d_interactive_, &d_best_effort_,
      &d_background_, &d_commands_, &d_stream_bytes_, &d_other_bytes_, &d_misses_, &d_decisions_, &d_playback_released_,
      &d_reclaimed_segments_, &d_reclaimed_bytes_, &d_retention_failures_, &d_model_recalibrations_, &d_scrub_segments_,
      &d_scrub_corrupt_, &d_scrub_bytes_, &d_scrub_epochs_, &d_scrub_promoted_, &d_scrub_repaired_,
      &d_archive_segments_, &d_archive_bytes_, &d_archive_failures_;
  metrics::Family<metrics::Gauge>&d_utilisation_, &d_slack_, &d_predicted_rt_, &d_observed_rt_, &d_expected_wait_,
      &d_longest_command_, &d_cycle_s_, &d_r_rt_, &d_chunk_bytes_, &d_depth_, &d_profiled_, &d_budget_,
      &d_admitted_streams_, &d_admitted_rate_, &d_predicted_busy_, &d_model_optimistic_, &d_model_scale_,
      &d_free_bytes_, &d_archive_lag_, &d_scrub_progress_, &d_playback_share_, &d_playback_in_use_, &d_io_realtime_,
      &d_io_cpu_wait_, &d_io_buffers_locked_, &v_unavailable_;
  metrics::Family<metrics::Histogram>&d_utilisation_hist_, &d_slack_hist_;
  // Camera families.
  metrics::Family<metrics::Counter>&c_streams_, &c_packets_, &c_bytes_, &c_refused_, &c_gaps_, &c_discontinuities_,
      &c_lost_frames_, &c_lost_bytes_;
  metrics::Family<metrics::Gauge>&c_recording_, &c_admitted_rate_, &c_rate_, &c_up_;
  metrics::Family<metrics::Counter>& c_restarts_;
  metrics::Family<metrics::Histogram>& d_interactive_read_;
  metrics::Family<metrics::Gauge>&d_state_, &d_last_cycle_age_;
  metrics::Family<metrics::Gauge>&d_latmap_enabled_, &d_latmap_cells_, &d_latmap_loaded_;
  metrics::Family<metrics::Counter>&d_latmap_saves_, &d_latmap_ordered_, &d_latmap_resets_;
  metrics::Gauge &catalog_up_, &catalog_rows_waiting_, &catalog_rows_spooled_;
  metrics::Family<metrics::Counter>& gaps_by_reason_;
  std::array<metrics::Counter*, kGapReasons.size()> gaps_by_reason_series_{};
  // HTTP and catalog.
  metrics::Family<metrics::Histogram>& http_;
  std::array<std::array<metrics::Histogram*, 4>, kHttpRoutes.size()> http_series_{};  // [route][2xx..5xx]
  metrics::Family<metrics::Histogram>& catalog_wait_family_;
  metrics::Family<metrics::Histogram>& catalog_job_family_;
  metrics::Histogram &catalog_wait_, &catalog_ok_, &catalog_failed_;

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<DiskMetrics>> disks_;      // guarded by mu_
  std::map<std::string, std::unique_ptr<CameraMetrics>> cameras_;  // guarded by mu_; read by the collect hook
};

}  // namespace vigil::server
