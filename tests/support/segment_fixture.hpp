#pragma once
// Test fixture: a segment of script frames written durably to a volume, as a recorder would
// leave it (flushed; closed or left open as after a crash).
#include <cstdint>
#include <span>

#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"

namespace vigil::test {

// Writes script frames 1..FRAMES of STREAM as segment ID (batches of BUFFER_BYTES), flushes,
// and returns the segment's summary; the segment is closed when CLOSE.
storage::SegmentSummary write_script_segment(storage::Volume& volume, std::uint64_t id, std::uint64_t stream,
                                             std::uint64_t frames, std::size_t buffer_bytes = 16 * 1024,
                                             bool close = true);

// Script frames FIRST..FIRST+FRAMES-1 of STREAM as closed segment ID, its header carrying
// CODEC_PARAMETERS (a stream description, or anything a test wants a reader to cope with).
storage::SegmentSummary write_described_segment(storage::Volume& volume, std::uint64_t id, std::uint64_t stream,
                                                std::uint64_t first, std::uint64_t frames,
                                                std::span<const std::byte> codec_parameters);

}  // namespace vigil::test
