#pragma once
// Frees closed segments' extents on their disk's IO thread, which owns the volume's allocation
// (storage::reclaim_segment: a durable tombstone header per extent, written in one of the cycle
// scheduler's idle moments, post_task). Retention reclaims through it, and so does the scrubber's
// repair from an archive copy (the damaged local copy's space). The catalog steps around it are
// the caller's: the rows are marked 'deleting' before, and finish_deleting after.
// Thread: a background service's own (it waits, checking its stop token). Errors: a segment that
// cannot be freed ends the run, named in `error`; the ones before it are in `done`.
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

// Nullopt if STOP came first (the rows stay 'deleting': the next start's recovery finishes them).
std::optional<ReclaimOutcome> reclaim_on_io_thread(Disk& disk, const std::vector<std::uint64_t>& ids,
                                                   std::stop_token stop);

}  // namespace vigil::server
