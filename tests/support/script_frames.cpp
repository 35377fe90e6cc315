#include "tests/support/script_frames.hpp"

#include <algorithm>
#include <random>

namespace vigil::test {

ScriptFrame script_frame(std::uint64_t seq, std::uint64_t stream_id) {
  std::mt19937 rng(static_cast<std::uint32_t>(seq * 2654435761u));
  ScriptFrame f;
  f.header.stream_id = stream_id;
  f.header.sequence = seq;
  f.header.pts = static_cast<std::int64_t>(seq) * 3600;
  f.header.dts = f.header.pts;
  f.header.duration = 3600;
  f.header.flags = seq % 8 == 1 ? storage::kRecordKeyframe : 0;
  f.payload.resize(200 + rng() % 6000);
  for (auto& b : f.payload) b = std::byte(rng());
  return f;
}

bool matches_script(const storage::RecordHeader& header, std::span<const std::byte> payload) {
  if (header.sequence == 0) return false;
  auto want = script_frame(header.sequence, header.stream_id);
  return header.pts == want.header.pts && header.keyframe() == want.header.keyframe() &&
         std::equal(payload.begin(), payload.end(), want.payload.begin(), want.payload.end());
}

}  // namespace vigil::test
