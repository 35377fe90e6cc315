#include "tests/support/segment_fixture.hpp"

#include <catch2/catch_test_macros.hpp>

#include "tests/support/script_frames.hpp"

namespace vigil::test {

namespace {

storage::SegmentSummary write_segment(storage::Volume& volume, std::uint64_t id, std::uint64_t stream,
                                      std::uint64_t first, std::uint64_t frames,
                                      std::span<const std::byte> codec_parameters, std::size_t buffer_bytes,
                                      bool close) {
  storage::SegmentWriter w(volume, stream, {.buffer_bytes = buffer_bytes});
  REQUIRE(w.open_segment(id, codec_parameters, first, 0).has_value());
  for (std::uint64_t seq = first; seq < first + frames; ++seq) {
    auto f = script_frame(seq, stream);
    if (!w.append(f.header, f.payload)) {
      REQUIRE(w.write_cycle().has_value());
      REQUIRE(w.append(f.header, f.payload).has_value());
    }
  }
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(storage::flush_sync(volume.device()).has_value());
  w.mark_durable();
  return close ? w.close_segment() : w.current();
}

}  // namespace

storage::SegmentSummary write_script_segment(storage::Volume& volume, std::uint64_t id, std::uint64_t stream,
                                             std::uint64_t frames, std::size_t buffer_bytes, bool close) {
  return write_segment(volume, id, stream, 1, frames, {}, buffer_bytes, close);
}

storage::SegmentSummary write_described_segment(storage::Volume& volume, std::uint64_t id, std::uint64_t stream,
                                                std::uint64_t first, std::uint64_t frames,
                                                std::span<const std::byte> codec_parameters) {
  return write_segment(volume, id, stream, first, frames, codec_parameters, 16 * 1024, true);
}

}  // namespace vigil::test
