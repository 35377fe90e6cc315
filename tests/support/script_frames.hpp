#pragma once
// The deterministic recording script shared by the crash tests and the crash recorder
// process: frame SEQ's size, content, timestamps and keyframe flag derive from SEQ alone, so
// a verifier can tell a real frame from a torn or stale one without a copy of what was sent.
#include <cstdint>
#include <span>
#include <vector>

#include "storage/record.hpp"

namespace vigil::test {

struct ScriptFrame {
  storage::RecordHeader header;
  std::vector<std::byte> payload;
};

// REQUIRES: seq >= 1. STREAM_ID is put into the header.
ScriptFrame script_frame(std::uint64_t seq, std::uint64_t stream_id);
// Whether a recovered frame is exactly script frame of its sequence.
bool matches_script(const storage::RecordHeader& header, std::span<const std::byte> payload);

}  // namespace vigil::test
