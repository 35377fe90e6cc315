#pragma once
// The server side of recording sessions (docs/protocol.md, "Recording"): an OpenRecord is
// admitted on a disk by that disk's admission controller, gets its catalog rows (camera by
// name, a new stream), and its RecordingStream joins the disk's cycle scheduler; media packets
// go into the stream's double buffer (policed: rate_exceeded beyond the admitted rate); the
// disk's IO thread reports the durable sequence after each cycle's flush, which the session
// sends as DurableAck; closed segments reach the catalog through the batcher.
// Thread: open()/close() are awaited by network coroutines (catalog work runs on the catalog
// pool); packet() on the session's thread; stream callbacks on the IO thread, which only store
// a number and post a wake-up, or hand rows to the batcher (which must outlive the disks' IO
// threads; the service itself is not referenced from them). Errors: values for packets; open()
// answers Admit or Refuse. With Metrics, admission decisions and the admitted set are published
// per disk, and each camera's packets, refusals and gaps per camera (atomics; docs/metrics.md).
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <string>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "admission/admission.hpp"
#include "proto/vigil.pb.h"
#include "server/catalog/batcher.hpp"
#include "server/catalog_pool.hpp"
#include "server/disk_io.hpp"
#include "server/live_feed.hpp"
#include "server/vigild_metrics.hpp"
#include "storage/recording_stream.hpp"

namespace vigil::server {

class RecordingService {
 public:
  struct Disk {
    OpenVolume* volume = nullptr;
    DiskIoThread* io = nullptr;
    std::int64_t disk_id = 0;
    std::atomic<std::uint64_t> next_segment{1};
    std::mutex mu;
    std::vector<admission::StreamDemand> admitted;  // guarded by mu
    std::uint64_t next_demand = 1;                  // guarded by mu: ids of admitted demands
    // Space: set by retention while the volume is short of its reserve with nothing left that it
    // may reclaim (all evidence-locked or still being written): new recordings are refused.
    std::atomic<bool> no_room{false};
  };

  // One stream being recorded by one session.
  struct Recording {
    std::uint64_t stream_id = 0;
    Disk* disk = nullptr;
    admission::StreamDemand demand;
    std::shared_ptr<storage::RecordingStream> stream;
    std::int64_t time_num = 1, time_den = 1'000'000;  // codec time base
    std::int64_t wall_offset_us = 0;                  // wall clock = pts_us + offset
    bool have_offset = false;
    std::int64_t first_wall_us = 0;                   // the recorder's wall time of its first packet (0: arrival)
    std::int64_t last_end_us = 0;
    std::uint64_t last_sequence = 0;                  // last packet accepted
    std::uint64_t discontinuities = 0;                // timestamp jumps re-pinned to wall time
    std::atomic<std::uint64_t> durable{0};            // set by the IO thread
    std::function<void()> notify;                     // wakes the session (posted to its thread)
    std::shared_ptr<LiveFeed> feed;                   // live viewers of this camera
    CameraMetrics* camera = nullptr;                  // this camera's /metrics series
  };

  // METRICS (optional) must outlive the service.
  RecordingService(std::vector<std::unique_ptr<Disk>> disks, CatalogPool& catalog, catalog::Batcher& batcher,
                   Metrics* metrics = nullptr);

  using OpenResult = std::variant<proto::Admit, proto::Refuse>;
  boost::asio::awaitable<OpenResult> open(const proto::OpenRecord& request, const std::function<void()>& notify,
                                          std::shared_ptr<Recording>& out);
  // rate_exceeded (policed), invalid_argument (sequence out of order, frame larger than a cycle).
  Result<void> packet(Recording& r, const proto::MediaPacket& m, std::span<const std::byte> payload);
  // Ends the stream: waits (up to ten cycles) for the last packets to be acknowledged, then
  // takes it off the disk; its last segment and its end go to the catalog. CLEAN: the client
  // ended at a frame boundary (the stream is 'stopped' if all it sent became durable, else
  // 'interrupted').
  boost::asio::awaitable<void> close(const std::shared_ptr<Recording>& recording, bool clean);

  // Every admission decision (admit or refuse, inputs, predicted utilisation) goes to the
  // catalog's admission_decisions through the batcher: audited, never waited for.
  // KIND and the outcome are also counted in the disk's metrics. STREAM_ID / CAMERA, when
  // known, tie the row to the stream and camera it was about.
  void log_decision(const Disk& disk, const admission::Decision& decision, DiskMetrics::Kind kind,
                    std::optional<std::int64_t> stream_id = std::nullopt,
                    const std::optional<std::string>& camera = std::nullopt);
  // With DISK.mu held, after DISK.admitted changed: its admitted streams, rate and predicted busy
  // share go to the disk's metrics.
  static void publish_admitted(const Disk& disk) noexcept;
  // The disk's admitted recording rate, bytes/s. Takes disk.mu.
  static double ingest_bytes_per_s(Disk& disk);
  // Fills DISK's admitted demands with what the scheduler measured of each (rate, its spread,
  // device time per cycle) for the statistical policy. Caller holds disk.mu.
  static void refresh_measured(Disk& disk);
  // Ties admitted demand DEMAND_ID to its stream's id on the disk's scheduler. Takes disk.mu.
  static void bind_io_id(Disk& disk, std::uint64_t demand_id, std::uint64_t io_id);

  // Every disk of this node, in configuration order (the HTTP API's /disks reads their state:
  // Disk::admitted only under Disk::mu, the IO thread's counters through their atomics).
  std::span<const std::unique_ptr<Disk>> disks() const noexcept { return disks_; }

  // The disk that holds volume VOLUME_ID on this node, or null (playback reads there).
  Disk* disk_of_volume(std::int64_t volume_id) noexcept;
  // The live feed of camera NAME while it records, or null.
  std::shared_ptr<LiveFeed> live_feed(const std::string& name);

 private:
  std::vector<std::unique_ptr<Disk>> disks_;
  CatalogPool& catalog_;
  catalog::Batcher& batcher_;
  Metrics* metrics_;
  std::mutex live_mu_;
  std::map<std::string, std::weak_ptr<LiveFeed>> live_;  // guarded by live_mu_
};

}  // namespace vigil::server
