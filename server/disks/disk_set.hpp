#pragma once
// Every disk of this node and its admitted streams: the one place a stream is admitted on a disk
// and released from it (docs/admission.md). Recording, playback, the HTTP API's /disks and
// retention all read per-disk state here; none of them owns it.
// The admit transaction, in order: lock the disk, refresh the admitted streams' measured rates
// from the IO thread, decide, log the decision (refusals now, admissions once the caller knows
// the stream), add the demand, publish the admitted set to /metrics. Release is its inverse.
// Thread: any (each disk's state under its own mutex; the IO thread's figures through atomics).
// Errors: refusals are values (Refusal, with a typed cause); nothing here throws.
#include <atomic>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "admission/admission.hpp"
#include "storage/retention.hpp"
#include "catalog/batcher.hpp"
#include "common/rate.hpp"
#include "proto/vigil.pb.h"
#include "server/core/vigild_metrics.hpp"
#include "server/disks/disk_io.hpp"
#include "server/disks/recent_segments.hpp"
#include "server/disks/volume_startup.hpp"

namespace vigil::server {

struct Disk {
  OpenVolume* volume = nullptr;
  DiskIoThread* io = nullptr;
  std::int64_t disk_id = 0;
  std::atomic<std::uint64_t> next_segment{1};
  std::mutex mu;
  std::vector<admission::StreamDemand> admitted;  // guarded by mu
  std::uint64_t next_demand = 1;                  // guarded by mu: ids of admitted demands
  // Admitted playbacks a recording may end (admission/playback_share.hpp): demand id → what to
  // tell its session, called with the reason once the demand is gone (not under mu).
  std::map<std::uint64_t, std::function<void(const std::string& reason)>> on_ended;  // guarded by mu
  // Space: set by retention while the volume is short of its reserve with nothing left that it
  // may reclaim (all evidence-locked or still being written): new recordings are refused.
  std::atomic<bool> no_room{false};
  // Segments closed on this disk lately, as recording handed them to the catalog: what retention
  // can reclaim during a catalog outage besides what it last read (retention_service.hpp).
  void segment_closed(const storage::ClosedSegment& s);
  std::vector<storage::ClosedSegment> recently_closed() const;
  static constexpr std::size_t kRecentlyClosed = 4096;

  double cycle_s() const;

 private:
  mutable std::mutex closed_mu_;
  std::deque<storage::ClosedSegment> closed_;  // guarded by closed_mu_, newest last
};

// Why a stream was not admitted; each cause has one refusal code on the wire (to_refuse).
enum class RefusalCause {
  no_disk,        // no volume is configured
  not_profiled,   // the disk has no profile: nothing can be admitted on it
  model_paused,   // the online model check paused admission until the disk is profiled again
  cycle_full,     // the cycle would not fit the stream; a smaller rate might
  no_room,        // recording: the volume is short of its reserve with nothing reclaimable
  volume_failed,  // the volume was taken out of service at runtime (disk_io.hpp)
};

struct Refusal {
  RefusalCause cause = RefusalCause::no_disk;
  std::string reason;   // for people
  Rate largest_rate{};  // the largest rate that fits now (zero: none, or not a rate question)
};

// The wire protocol's Refuse for REFUSAL (its code chosen from the cause by one table).
proto::Refuse to_refuse(const Refusal& refusal);
// A Refuse that is not about a disk (bad request, unknown stream).
proto::Refuse refuse(proto::RefuseReason code, std::string reason);

struct Admitted {
  Disk* disk = nullptr;
  admission::StreamDemand demand;  // with its id on that disk
  admission::Decision decision;
};

class ArchiveReads;

class DiskSet {
 public:
  // BATCHER takes the admission_decisions rows; it must outlive the set.
  DiskSet(std::vector<std::unique_ptr<Disk>> disks, catalog::Batcher& batcher);

  // Admits DEMAND on ONLY, or without it on the disk that admits it with the largest share of
  // its real-time budget left afterwards. A refusal is logged here; an admission is logged by the caller with
  // log_admitted once the stream has an id (or could not get one). Recording comes first
  // (admission/playback_share.hpp): a recording is decided against the recordings alone, and
  // admitting it may end the disk's newest playbacks (their ON_ENDED is called, after the disk's
  // lock is released; disks where none must end are preferred). ON_ENDED (playbacks): what to
  // call if a recording later ends this one, registered with the admission.
  using EndedFn = std::function<void(const std::string& reason)>;
  std::variant<Admitted, Refusal> admit(admission::StreamDemand demand, DiskMetrics::Kind kind,
                                        const std::optional<std::string>& camera, Disk* only = nullptr,
                                        EndedFn on_ended = {});
  void log_admitted(const Admitted& a, DiskMetrics::Kind kind, std::optional<std::int64_t> stream_id,
                    const std::optional<std::string>& camera);
  // Re-admits admitted demand DEMAND_ID on DISK at WANTED's rates (a recording whose source sends
  // more than it declared), decided as a new stream would be against the others there; the
  // decision is logged. Admitted: the demand is replaced (same id). Refused: the old one stands.
  std::variant<admission::Decision, Refusal> readmit(Disk& disk, std::uint64_t demand_id,
                                                     admission::StreamDemand wanted, DiskMetrics::Kind kind,
                                                     std::optional<std::int64_t> stream_id,
                                                     const std::optional<std::string>& camera);
  // Takes admitted demand DEMAND_ID off DISK and publishes the new set (a playback's ON_ENDED is
  // forgotten). A no-op for a demand a recording already ended.
  void release(Disk& disk, std::uint64_t demand_id);
  // Ties admitted demand DEMAND_ID to its stream's id on the disk's scheduler (measured rates).
  static void bind_io_id(Disk& disk, std::uint64_t demand_id, std::uint64_t io_id);

  // The node's admission headroom (docs/nodes.md): the largest recording rate each disk in
  // service would still admit now, summed over the disks, bits per second. Takes each disk.mu in
  // turn; for the camera manager's thread (placement of cameras over nodes), never an IO thread.
  std::int64_t headroom_bps();
  // The disk's admitted recording rate. Takes disk.mu.
  static Rate ingest_rate(Disk& disk);
  // Fills DISK's admitted demands with what the scheduler measured of each (rate, its spread,
  // device time per cycle) for the statistical policy. Caller holds disk.mu.
  static void refresh_measured(Disk& disk);
  // With DISK.mu held: its admitted streams, rate and predicted busy share go to its metrics.
  static void publish_admitted(const Disk& disk) noexcept;

  // Every disk, in configuration order (Disk::admitted only under Disk::mu).
  std::span<const std::unique_ptr<Disk>> disks() const noexcept { return disks_; }
  // The disk that holds volume VOLUME_ID on this node, or null.
  Disk* disk_of_volume(std::int64_t volume_id) noexcept;
  // What the recordings on these disks wrote lately, before the catalog has it (recent_segments.hpp).
  RecentSegments& recent() noexcept { return recent_; }
  // Where archived segments are read (archive_reads.hpp); null without an archive tier. Set once
  // at start-up, before any reader runs; READS must outlive every reader. NODE: this node's name
  // among the nodes sharing the catalog, with which its readers also read a down node's copied
  // segments from the archive (catalog/copy_stand_in.hpp); empty: archived segments only.
  ArchiveReads* archive_reads() const noexcept { return archive_reads_; }
  void set_archive_reads(ArchiveReads* reads, std::string node = {}) {
    archive_reads_ = reads;
    archive_node_ = reads ? std::move(node) : std::string();
  }
  // The reader node for catalog::plan_playback: this node when it reads the archive, else empty.
  const std::string& archive_reader_node() const noexcept { return archive_node_; }

 private:
  // With DISK.mu held: takes the playbacks ENDED off DISK, counts them, and returns what to tell
  // their sessions (to be called once DISK.mu is released).
  static std::vector<std::function<void()>> end_playbacks(Disk& disk, const std::vector<std::uint64_t>& ended);
  void log_decision(const Disk& disk, const admission::Decision& decision, DiskMetrics::Kind kind,
                    std::optional<std::int64_t> stream_id, const std::optional<std::string>& camera);

  std::vector<std::unique_ptr<Disk>> disks_;
  catalog::Batcher& batcher_;
  RecentSegments recent_{batcher_};
  ArchiveReads* archive_reads_ = nullptr;
  std::string archive_node_;
};

}  // namespace vigil::server
