#pragma once
// The server side of recording sessions (docs/protocol.md, "Recording"): an OpenRecord is
// admitted on a disk by that disk's admission controller, gets its catalog rows (camera by
// name, a new stream; while the catalog cannot be asked, a stream id reserved ahead and the rows
// queued on the batcher: docs/catalog.md, "When the catalog is down"), and its RecordingStream
// joins the disk's cycle scheduler; media packets
// go into the stream's double buffer (policed: rate_exceeded beyond the admitted rate; a refused
// packet its sender never gets stored is a gap: refused_run.hpp); the
// disk's IO thread reports the durable sequence after each cycle's flush, which the session
// sends as DurableAck; closed segments reach the catalog through the batcher.
// Thread: open()/close() are awaited by network coroutines (catalog work runs on the catalog
// pool); packet() on the session's thread; stream callbacks on the IO thread, which only store
// a number and post a wake-up, or hand rows to the batcher (which must outlive the disks' IO
// threads; the service itself is not referenced from them). Errors: values for packets; open()
// answers Admit or Refuse. With Metrics, admission decisions and the admitted set are published
// per disk, and each camera's packets, refusals and gaps per camera (atomics; docs/metrics.md).
#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <deque>
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
#include "catalog/batcher.hpp"
#include "server/core/catalog_pool.hpp"
#include "server/disks/disk_set.hpp"
#include "server/recording/offered_rate.hpp"
#include "server/recording/refused_run.hpp"
#include "server/core/live_feed.hpp"
#include "server/core/vigild_metrics.hpp"
#include "storage/recording_stream.hpp"

namespace vigil::server {

class RecordingService {
 public:
  // One stream being recorded by one session.
  struct Recording {
    std::uint64_t stream_id = 0;
    Disk* disk = nullptr;
    admission::StreamDemand demand;
    std::shared_ptr<storage::RecordingStream> stream;
    std::int64_t time_num = 1, time_den = 1'000'000;  // codec time base
    std::int64_t wall_offset_us = 0;                  // wall clock = pts_us + offset
    bool have_offset = false;
    std::int64_t first_wall_us = 0;  // the recorder's wall time of its first packet (0: arrival)
    std::int64_t last_end_us = 0;
    std::uint64_t last_sequence = 0;                       // last packet accepted
    std::uint64_t discontinuities = 0;                     // timestamp jumps re-pinned to wall time
    std::atomic<std::uint64_t> durable{0};                 // set by the IO thread
    std::atomic<bool> failed{false};                       // the disk failed: durable is final (set by the IO thread)
    std::function<void()> notify;                          // wakes the session (posted to its thread)
    std::shared_ptr<LiveFeed> feed;                        // live viewers of this camera
    CameraMetrics* camera = nullptr;                       // this camera's /metrics series
    std::string name;                                      // the camera's
    bool main_video = true;                                // it records the camera's main video track
    OfferedRate offered;                                   // what its source really sends (re-admission)
    std::chrono::steady_clock::time_point next_readmit{};  // no re-admission attempt before this
    std::uint64_t readmissions = 0;
    RefusedRuns refused;                                  // refused packets not stored (yet): gaps when given up
    std::array<bool, kLossReasons.size()> lost_logged{};  // a lost run of this reason was logged
    // Packets taken and not acknowledged yet, (sequence, payload bytes): what a recording that
    // ends before they are written loses (report_unwritten).
    std::deque<std::pair<std::uint64_t, std::size_t>> not_durable;
  };

  // DISKS, FEEDS and METRICS (optional) must outlive the service.
  // MAX_SEGMENT: a segment closes once its frames span this much time (as well as at its size).
  // NODE: this vigild's node name (docs/nodes.md): a stream of a camera another node owns is
  // refused (STREAM_BUSY) when the catalog can be asked; empty: no such check.
  RecordingService(DiskSet& disks, LiveFeeds& feeds, CatalogPool& catalog, catalog::Batcher& batcher,
                   Metrics* metrics = nullptr, std::chrono::seconds max_segment = std::chrono::minutes(10),
                   std::string node = {});

  using OpenResult = std::variant<proto::Admit, proto::Refuse>;
  boost::asio::awaitable<OpenResult> open(const proto::OpenRecord& request, const std::function<void()>& notify,
                                          std::shared_ptr<Recording>& out);
  // rate_exceeded (policed), frame_exceeds_buffer (never fits this stream's buffer),
  // invalid_argument (sequence out of order), io_error (the stream's disk failed: nothing more is
  // taken; Recording::durable is final).
  Result<void> packet(Recording& r, const proto::MediaPacket& m, std::span<const std::byte> payload);
  // Media the recorder will never send (proto MediaLoss: dropped above the admitted rate, or never
  // delivered by its source): a gap of that reason at its media time, counted; rate_exceeded drops
  // count as offered (re-admission). invalid_argument: no such reason, an empty or over-long span.
  Result<void> media_loss(Recording& r, const proto::MediaLoss& m);
  // How a recording ended, for its stream's state and the gap that follows it.
  enum class Ending {
    clean,  // the client ended at a frame boundary: 'stopped' if all it sent became durable
    lost,   // the connection failed or vigild is stopping: 'interrupted'
    // (Whatever the ending, a stream whose disk failed is 'interrupted', with an io_error gap from
    // its last durable frame.)
    stalled,  // nothing arrived for the stall timeout: 'stalled', and a source_stalled gap from the last frame
  };
  // Ends the stream: waits (up to ten cycles) for the last packets to be acknowledged, then
  // takes it off the disk and releases its share; its last segment and its end go to the catalog.
  boost::asio::awaitable<void> close(const std::shared_ptr<Recording>& recording, Ending ending);

  // Stream ids reserved in the catalog (catalog::reserve_stream_ids) for recordings opened while
  // it cannot be asked. vigild gives kSpareStreamIds at start; open() tops them up while the
  // catalog answers.
  void add_spare_stream_ids(const std::vector<std::int64_t>& ids);
  static constexpr int kSpareStreamIds = 1024;

 private:
  // Re-admission at the measured rate: a source policed through a whole window while sending
  // more than its admitted rate is re-admitted at what it sends (with headroom) when the disk
  // fits it; its buffer grows. Refused: it stays policed, and is tried again later.
  void maybe_readmit(Recording& r, const OfferedRate::Window& window);
  // RUNS of R's refused packets were never stored: a gap each (through the batcher, spooled in
  // an outage), the camera's lost-frame counters, a warning.
  void report_lost(Recording& r, const std::vector<LostRun>& runs);
  // R ends with packets taken into its buffer but never written (close waited ten cycles: its
  // segment could not start or grow, or its IO thread was that late): counted, logged, and the
  // gap reason and detail for its stream's end (a gap from its last durable frame). Nullopt when
  // everything taken was written.
  std::optional<std::pair<std::string, std::string>> report_unwritten(Recording& r);
  std::optional<std::int64_t> take_spare_stream_id();
  std::size_t spare_stream_ids() const;

  DiskSet& disks_;
  LiveFeeds& feeds_;
  CatalogPool& catalog_;
  catalog::Batcher& batcher_;
  Metrics* metrics_;
  std::chrono::seconds max_segment_;
  std::string node_;  // this node (docs/nodes.md); empty: streams are not checked against camera owners
  mutable std::mutex spare_mu_;
  std::deque<std::int64_t> spare_ids_;  // guarded by spare_mu_
};

}  // namespace vigil::server
