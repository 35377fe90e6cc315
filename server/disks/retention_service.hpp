#pragma once
// Retention inside vigild (docs/durability.md, "Deletion"): recording never stops because a
// volume is full. A thread of its own watches each volume's free space (the IO thread publishes
// it every cycle); when it falls below the reserve — RESERVE_SECONDS of the disk's admitted
// recording rate, never less than 1 % of the volume or two extents, never more than a quarter of
// it — and every INTERVAL in
// any case (cameras' retention_days), it chooses what to reclaim (storage::choose_reclaim: past
// their camera's age first, then the oldest closed segments no evidence lock covers), marks them
// 'deleting' in the catalog, has the disk's IO thread free their extents in a cycle's slack
// (storage::reclaim_segment: tombstone headers, durably), and then deletes their rows. A crash
// between the steps is finished by the next start's recovery. Until space is back, a recording
// that finds the volume full keeps its frames buffered and unacknowledged (the sender is told
// to wait by rate_exceeded), so nothing acknowledged is lost.
// During a catalog outage (docs/catalog.md, "When the catalog is down": REACHABLE says no, or the
// catalog fails) retention still keeps the reserve: it chooses from what it last read of each
// volume and what recording closed since (Disk::recently_closed; the evidence locks as last seen;
// ages wait for the catalog),
// queues "these segments are being reclaimed" on the BATCHER and waits until that row is durable
// (spooled), has the IO thread free the extents, and queues their removal; both rows reach the
// catalog in order once it answers (or at the next start, before recovery).
// Thread: its own; the IO thread only runs the reclaim task it is handed, and never waits for
// this one. Errors: a failed pass is logged, counted and retried at the next tick.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>

#include "catalog/batcher.hpp"
#include "server/disks/disk_set.hpp"
#include "storage/retention.hpp"

namespace vigil::server {

struct RetentionOptions {
  std::chrono::milliseconds interval{60'000};  // a full pass (ages) at least this often
  std::chrono::milliseconds tick{1'000};       // how often free space is looked at
  double reserve_seconds = 120;                // free space kept, in seconds of admitted recording
  std::size_t max_segments_per_pass = 256;
  std::int64_t day_us = 86'400'000'000LL;  // retention_days' day (tests shorten it)
  catalog::Batcher* batcher = nullptr;     // for reclaiming during an outage (none: retention waits)
  std::function<bool()> reachable{};       // is the catalog answering? (unset: yes)
};

class RetentionService {
 public:
  // DISKS must outlive this; the disks' IO threads must run until it is destroyed.
  RetentionService(std::string conninfo, std::span<const std::unique_ptr<Disk>> disks, RetentionOptions options);
  ~RetentionService();  // stops the thread; a pass in progress finishes its current step
  RetentionService(const RetentionService&) = delete;
  RetentionService& operator=(const RetentionService&) = delete;

 private:
  void run(std::stop_token stop);
  // One disk: reclaims what is due (FULL: ages too, not only space). True if it reclaimed any.
  bool pass(Disk& disk, bool full, std::stop_token stop);
  // Free extents to keep: the reserve, at least the floor, at most a quarter of the volume.
  std::uint64_t reserve_extents(Disk& disk);
  // A pass with what it last read of the catalog (the catalog is down): space only.
  bool pass_without_catalog(Disk& disk, std::stop_token stop);
  // What to reclaim from IN: choose_reclaim, topped up to NEED free extents with the oldest unlocked.
  std::vector<std::uint64_t> choose(const storage::RetentionPolicy& policy, const storage::RetentionInput& in,
                                    std::uint64_t need) const;
  // What the last pass that could read the catalog saw of a volume.
  struct Known {
    std::vector<storage::ClosedSegment> closed;
    std::vector<storage::EvidenceLock> locks;
  };
  std::map<const Disk*, Known> known_;  // retention thread
  std::set<const Disk*> warned_unknown_;
  std::set<std::uint64_t> reclaimed_;  // without the catalog: not offered again (retention thread)

  std::string conninfo_;
  std::span<const std::unique_ptr<Disk>> disks_;
  RetentionOptions options_;
  std::set<const Disk*> capped_;  // warned that the reserve was capped (retention thread)
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: started after everything it uses
};

}  // namespace vigil::server
