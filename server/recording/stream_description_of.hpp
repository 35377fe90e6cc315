#pragma once
// The stream description (storage/stream_description.hpp) that every segment of a recording
// carries in its header, from what the recorder declared when it opened the stream: the volume
// can then explain itself without the catalog (`vigil catalog rebuild`, docs/durability.md).
// Thread: any. Errors: none (pure).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "proto/vigil.pb.h"

namespace vigil::server {

// The encoded description of the stream REQUEST opens, admitted at ADMITTED_BPS, started at
// STARTED_AT_US (wall clock, as its catalog row says).
std::vector<std::byte> stream_description_of(const proto::OpenRecord& request, std::uint64_t admitted_bps,
                                             std::int64_t started_at_us);

}  // namespace vigil::server
