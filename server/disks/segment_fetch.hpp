#pragma once
// Reads a closed segment's extents through its disk's background broker (the cycles' slack, never
// an admitted stream's deadline): what the scrubber verifies and the archive copies. The IO
// thread only appends each block to its extent's buffer; the caller's thread waits, checking its
// stop token, and aborts the broker task when stopped.
// Thread: a background service's own thread (blocks until the read ends). Errors: the read's
// error as a Result; std::nullopt when stopped.
#include <chrono>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <vector>

#include "common/errors.hpp"
#include "storage/background_broker.hpp"
#include "storage/segment_verify.hpp"

namespace vigil::catalog {
struct ScrubTarget;
}

namespace vigil::server {

struct Disk;

using ExtentBytes = std::vector<std::vector<std::byte>>;  // one buffer per extent, in order

// When a read is due: from PROMOTE_AT on, what is left of it is read as interactive requests
// (storage::BackgroundBroker::promote) instead of waiting for slack that a fully loaded disk may
// not have; registered promoted when it is already overdue. None: slack only.
struct ReadDeadline {
  std::optional<std::chrono::steady_clock::time_point> promote_at;
  bool promoted = false;  // out: the read was promoted
};

// EXTENTS: device offsets and block-multiple lengths, in the segment's logical order.
std::optional<Result<ExtentBytes>> read_in_background(Disk& disk, const std::vector<storage::BrokerExtent>& extents,
                                                      std::stop_token stop, ReadDeadline* deadline = nullptr);

// A closed segment read whole through the broker and checked (storage::SegmentVerifier): its
// extents' bytes (each read to the block after its data) and what the check found.
struct VerifiedRead {
  ExtentBytes extents;
  storage::SegmentCheck check;
  std::uint64_t bytes = 0;  // read from the device
  // Whether every record checked and the records' checksum is the catalog's.
  bool intact(std::uint32_t catalog_checksum_crc32c) const {
    return check.damage.empty() && check.checksum_crc32c == catalog_checksum_crc32c;
  }
};
std::optional<Result<VerifiedRead>> read_and_verify(Disk& disk, const catalog::ScrubTarget& t, std::stop_token stop,
                                                    ReadDeadline* deadline = nullptr);

}  // namespace vigil::server
