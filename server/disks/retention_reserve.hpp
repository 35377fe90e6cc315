#pragma once
// How much of a volume retention keeps free: RESERVE_SECONDS of the recording rate
// INGEST, never less than 1 % of the volume or two extents — a camera that connects
// to an idle, full volume needs somewhere to start — and never more than a quarter of it (a
// reserve larger than a small volume would reclaim everything unlocked).
// Thread: any. Errors: none.
#include <algorithm>
#include <cstdint>

#include "storage/retention.hpp"

namespace vigil::server {

struct ReserveExtents {
  std::uint64_t wanted = 0;  // the reserve in extents, before the bounds
  std::uint64_t kept = 0;    // within [floor, a quarter of the volume]
};

inline ReserveExtents retention_reserve(std::uint64_t extent_count, std::uint64_t extent_bytes, double reserve_seconds,
                                        Rate ingest) noexcept {
  ReserveExtents r;
  storage::RetentionPolicy policy;
  policy.reserve_seconds = std::max(0.0, reserve_seconds);
  storage::RetentionInput in;
  in.extent_bytes = extent_bytes;
  in.admitted_ingest = std::max(Rate{}, ingest);
  r.wanted = storage::reserve_extents(policy, in);
  const std::uint64_t floor = std::max<std::uint64_t>(2, extent_count / 100);
  const std::uint64_t cap = std::max(floor, extent_count / 4);
  r.kept = std::clamp(r.wanted, floor, cap);
  return r;
}

}  // namespace vigil::server
