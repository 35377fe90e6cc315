#pragma once
// Frees closed segments' extents through their disk's background broker (docs/scheduler.md, "The
// background broker"): on the IO thread, which owns the volume's allocation, each segment's
// tombstone extent headers are prepared (Volume::prepare_free, no IO), then written by one broker
// write task — durable, in the cycles' slack within the background budget, never a stream's
// deadline — and once all of them are durable the extents are free (Volume::commit_free).
// Segments go one after another. A run not done within kPromoteAfter is promoted (its writes
// become interactive requests): a disk with no slack still reclaims. Retention reclaims through
// it, and so does the scrubber's repair from an archive copy (the damaged local copy's space).
// The catalog steps around it are the caller's: the rows are marked 'deleting' before, and
// finish_deleting after.
// Thread: a background service's own (it waits, checking its stop token). Errors: a segment that
// cannot be freed ends the run, named in `error`; the ones before it are in `done`.
#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace vigil::server {

struct Disk;

struct ReclaimOutcome {
  std::vector<std::uint64_t> done;  // freed (or not on the volume any more)
  std::uint64_t bytes = 0;          // their extents' bytes
  std::string error;                // the first failure, if any
};

inline constexpr std::chrono::seconds kPromoteAfter{2};

// Nullopt if STOP came first (the rows stay 'deleting': the next start's recovery finishes them).
std::optional<ReclaimOutcome> reclaim_on_io_thread(Disk& disk, const std::vector<std::uint64_t>& ids,
                                                   std::stop_token stop);

}  // namespace vigil::server
