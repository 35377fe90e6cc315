#pragma once
// Fixed structures of a volume (docs/format.md): the superblock in block 0, an extent header
// at the start of every extent, and a segment header after the extent header of a segment's
// first extent. Each is sealed by a CRC32C and decoded field by field.
// Thread: pure code, any thread. Errors: values (corruption for bad magic/CRC/sizes).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace vigil::storage {

using VolumeUuid = std::array<std::byte, 16>;
// Canonical text form (8-4-4-4-12 lowercase hex), as the catalog stores it.
std::string uuid_text(const VolumeUuid& u);

inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::size_t kMaxCodecParametersBytes = 64 * 1024;

struct Superblock {
  std::uint32_t version = kFormatVersion;
  std::uint32_t block_bytes = 4096;
  VolumeUuid volume_uuid{};
  std::uint64_t extent_bytes = 0;
  std::uint64_t extent_count = 0;
  std::uint64_t first_extent_offset = 0;  // byte offset of extent 0
  std::int64_t created_us = 0;

  std::uint64_t extent_offset(std::uint64_t extent) const noexcept {
    return first_extent_offset + extent * extent_bytes;
  }
};

// OUT: one block (block_bytes). invalid_argument if the geometry is inconsistent.
Result<void> encode_superblock(std::span<std::byte> out, const Superblock& sb) noexcept;
Result<Superblock> decode_superblock(std::span<const std::byte> block) noexcept;

enum class ExtentState : std::uint32_t { free = 0, in_use = 1, tombstone = 2 };

struct ExtentHeader {
  ExtentState state = ExtentState::in_use;
  std::uint32_t ordinal = 0;  // position of this extent within its segment
  VolumeUuid volume_uuid{};
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;
  std::uint64_t generation = 0;  // grows with every header write on the volume: newest wins
};

// OUT: one block. A block of zeros decodes as state free (never-used extent).
void encode_extent_header(std::span<std::byte> out, const ExtentHeader& h) noexcept;
Result<ExtentHeader> decode_extent_header(std::span<const std::byte> block) noexcept;

struct SegmentHeader {
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;
  std::uint64_t first_sequence = 0;
  std::int64_t start_us = 0;
  std::vector<std::byte> codec_parameters;  // opaque to storage (serialized by the server)
};

// Blocks the segment header needs for CODEC_BYTES of codec parameters.
std::size_t segment_header_blocks(std::size_t codec_bytes, std::size_t block_bytes) noexcept;
// OUT: segment_header_blocks(...) * block_bytes bytes.
Result<void> encode_segment_header(std::span<std::byte> out, const SegmentHeader& h, std::size_t block_bytes) noexcept;
Result<SegmentHeader> decode_segment_header(std::span<const std::byte> bytes) noexcept;

}  // namespace vigil::storage
