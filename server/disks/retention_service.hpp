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
// Thread: its own; the IO thread only runs the reclaim task it is handed, and never waits for
// this one. Errors: a failed pass is logged, counted and retried at the next tick.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>

#include "server/disks/disk_set.hpp"

namespace vigil::server {

struct RetentionOptions {
  std::chrono::milliseconds interval{60'000};  // a full pass (ages) at least this often
  std::chrono::milliseconds tick{1'000};       // how often free space is looked at
  double reserve_seconds = 120;                // free space kept, in seconds of admitted recording
  std::size_t max_segments_per_pass = 256;
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

  std::string conninfo_;
  std::span<const std::unique_ptr<Disk>> disks_;
  RetentionOptions options_;
  std::set<const Disk*> capped_;  // warned that the reserve was capped (retention thread)
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: started after everything it uses
};

}  // namespace vigil::server
