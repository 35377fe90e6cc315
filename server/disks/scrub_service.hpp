#pragma once
// The integrity scrubber (docs/scrubber.md): every closed segment with a known checksum is
// re-read and verified in rolling epochs, one per EPOCH (the target age of a check, per volume:
// --scrub-days). A thread of its own reads each volume's segments from the catalog (its own
// connection, never the IO thread), paces the epoch over them, and reads each segment through
// its disk's background broker (storage/background_broker.hpp: the cycles' slack, never a
// stream's deadline). The IO thread only copies the blocks; the CRCs are checked here
// (storage/segment_verify.hpp). A damaged segment — a record that fails its CRC, a hole in the
// sequence, or a segment checksum that does not match — becomes a 'corruption' gap over the
// media time lost, a log line naming segment, volume and device offset, and
// vigil_scrub_corrupt_segments_total. A read still waiting for slack when its slot in the epoch
// ends is promoted (interactive requests, within the interactive share): on a disk with no slack
// the check is late by at most a slot, never skipped (vigil_scrub_promoted_total).
// Repair (with repair_from_archive): a damaged segment that has a verified archive copy
// (segment_copies) is made whole again by serving it from that copy — marked 'deleting' and its
// 'corruption' gaps removed in one transaction, its damaged extents freed on the IO thread, then
// kept as 'archived' (catalog::finish_deleting), read by Range GETs like any archived segment — a
// log line and vigil_scrub_repaired_segments_total. Without a copy the gap stays.
// Thread: its own. Errors: a failed catalog step or read is logged and retried next epoch.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "server/disks/disk_set.hpp"

namespace vigil::catalog {
struct ScrubTarget;
}

namespace vigil::server {

struct ScrubOptions {
  std::chrono::milliseconds epoch{7 * 24 * 3600 * 1000LL};  // every segment verified at least this often
  // Damaged segments with a verified archive copy are served from it from then on (this vigild
  // reads archived segments: --archive-endpoint). Off: the gap stays, as without a copy.
  bool repair_from_archive = false;
};

class ScrubService {
 public:
  // DISKS must outlive this; the disks' IO threads must run until it is destroyed.
  ScrubService(std::string conninfo, std::span<const std::unique_ptr<Disk>> disks, ScrubOptions options);
  ~ScrubService();  // stops the thread; a read in progress is aborted
  ScrubService(const ScrubService&) = delete;
  ScrubService& operator=(const ScrubService&) = delete;

 private:
  void run(std::stop_token stop);
  // Reads and verifies T (aborted on STOP); from DUE on, what is left of the read is promoted.
  // True if it was.
  bool scrub(Disk& disk, const catalog::ScrubTarget& t, std::chrono::steady_clock::time_point due,
             std::stop_token stop);
  // T was found damaged: if it has a verified archive copy, it is served from the copy from now on
  // and its corruption gaps go. Errors are logged; what was committed is finished by recovery.
  void repair(Disk& disk, const catalog::ScrubTarget& t, std::stop_token stop);
  // Waits until WHEN or STOP; false on STOP.
  bool wait_until(std::chrono::steady_clock::time_point when, std::stop_token stop);

  std::string conninfo_;
  std::span<const std::unique_ptr<Disk>> disks_;
  ScrubOptions options_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: started after everything it uses
};

}  // namespace vigil::server
