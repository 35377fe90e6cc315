#include "storage/volume_layout.hpp"

#include <algorithm>
#include <cstring>

#include "storage/crc32c.hpp"
#include "storage/endian.hpp"

namespace vigil::storage {

std::string uuid_text(const VolumeUuid& u) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    const auto b = static_cast<unsigned>(u[i]);
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}
namespace {

constexpr char kSuperMagic[8] = {'V', 'I', 'G', 'I', 'L', 'V', 'O', 'L'};
constexpr char kExtentMagic[8] = {'V', 'I', 'G', 'I', 'L', 'E', 'X', 'T'};
constexpr char kSegmentMagic[8] = {'V', 'I', 'G', 'I', 'L', 'S', 'E', 'G'};

// Superblock fields.
constexpr std::size_t kSbVersion = 8, kSbBlock = 12, kSbUuid = 16, kSbExtentBytes = 32, kSbExtentCount = 40,
                      kSbFirstExtent = 48, kSbCreated = 56, kSbCrc = 64;
// Extent header fields.
constexpr std::size_t kExState = 8, kExOrdinal = 12, kExUuid = 16, kExSegment = 32, kExStream = 40, kExGeneration = 48,
                      kExCrc = 56;
// Segment header fields.
constexpr std::size_t kSgSegment = 8, kSgStream = 16, kSgFirstSeq = 24, kSgStart = 32, kSgCodecBytes = 40,
                      kSgCodec = 44;

void put_magic(std::span<std::byte> out, const char (&magic)[8]) noexcept { std::memcpy(out.data(), magic, 8); }
bool has_magic(std::span<const std::byte> in, const char (&magic)[8]) noexcept {
  return in.size() >= 8 && std::memcmp(in.data(), magic, 8) == 0;
}
bool is_power_of_two(std::uint64_t v) noexcept { return v && !(v & (v - 1)); }

}  // namespace

Result<void> encode_superblock(std::span<std::byte> out, const Superblock& sb) noexcept {
  if (!is_power_of_two(sb.block_bytes) || sb.block_bytes < 512 || out.size() < sb.block_bytes || sb.extent_bytes == 0 ||
      sb.extent_bytes % sb.block_bytes || sb.first_extent_offset % sb.block_bytes ||
      sb.first_extent_offset < sb.block_bytes) {
    return errc::invalid_argument;
  }
  std::memset(out.data(), 0, sb.block_bytes);
  put_magic(out, kSuperMagic);
  le::put<std::uint32_t>(out, kSbVersion, sb.version);
  le::put<std::uint32_t>(out, kSbBlock, sb.block_bytes);
  std::memcpy(out.data() + kSbUuid, sb.volume_uuid.data(), 16);
  le::put<std::uint64_t>(out, kSbExtentBytes, sb.extent_bytes);
  le::put<std::uint64_t>(out, kSbExtentCount, sb.extent_count);
  le::put<std::uint64_t>(out, kSbFirstExtent, sb.first_extent_offset);
  le::put<std::int64_t>(out, kSbCreated, sb.created_us);
  le::put<std::uint32_t>(out, kSbCrc, crc32c(out.first(kSbCrc)));
  return {};
}

Result<Superblock> decode_superblock(std::span<const std::byte> block) noexcept {
  if (block.size() < kSbCrc + 4 || !has_magic(block, kSuperMagic)) return errc::corruption;
  if (crc32c(block.first(kSbCrc)) != le::get<std::uint32_t>(block, kSbCrc)) return errc::corruption;
  Superblock sb;
  sb.version = le::get<std::uint32_t>(block, kSbVersion);
  sb.block_bytes = le::get<std::uint32_t>(block, kSbBlock);
  std::memcpy(sb.volume_uuid.data(), block.data() + kSbUuid, 16);
  sb.extent_bytes = le::get<std::uint64_t>(block, kSbExtentBytes);
  sb.extent_count = le::get<std::uint64_t>(block, kSbExtentCount);
  sb.first_extent_offset = le::get<std::uint64_t>(block, kSbFirstExtent);
  sb.created_us = le::get<std::int64_t>(block, kSbCreated);
  if (sb.version != kFormatVersion) return errc::unsupported;
  if (!is_power_of_two(sb.block_bytes) || sb.block_bytes < 512 || sb.extent_bytes == 0 ||
      sb.extent_bytes % sb.block_bytes || sb.first_extent_offset % sb.block_bytes) {
    return errc::corruption;
  }
  return sb;
}

void encode_extent_header(std::span<std::byte> out, const ExtentHeader& h) noexcept {
  std::memset(out.data(), 0, out.size());
  put_magic(out, kExtentMagic);
  le::put<std::uint32_t>(out, kExState, static_cast<std::uint32_t>(h.state));
  le::put<std::uint32_t>(out, kExOrdinal, h.ordinal);
  std::memcpy(out.data() + kExUuid, h.volume_uuid.data(), 16);
  le::put<std::uint64_t>(out, kExSegment, h.segment_id);
  le::put<std::uint64_t>(out, kExStream, h.stream_id);
  le::put<std::uint64_t>(out, kExGeneration, h.generation);
  le::put<std::uint32_t>(out, kExCrc, crc32c(out.first(kExCrc)));
}

Result<ExtentHeader> decode_extent_header(std::span<const std::byte> block) noexcept {
  if (block.size() < kExCrc + 4) return errc::corruption;
  if (std::all_of(block.begin(), block.begin() + kExCrc + 4, [](std::byte b) { return b == std::byte{0}; })) {
    return ExtentHeader{.state = ExtentState::free};
  }
  if (!has_magic(block, kExtentMagic)) return errc::corruption;
  if (crc32c(block.first(kExCrc)) != le::get<std::uint32_t>(block, kExCrc)) return errc::corruption;
  ExtentHeader h;
  const auto state = le::get<std::uint32_t>(block, kExState);
  if (state > static_cast<std::uint32_t>(ExtentState::tombstone)) return errc::corruption;
  h.state = static_cast<ExtentState>(state);
  h.ordinal = le::get<std::uint32_t>(block, kExOrdinal);
  std::memcpy(h.volume_uuid.data(), block.data() + kExUuid, 16);
  h.segment_id = le::get<std::uint64_t>(block, kExSegment);
  h.stream_id = le::get<std::uint64_t>(block, kExStream);
  h.generation = le::get<std::uint64_t>(block, kExGeneration);
  return h;
}

std::size_t segment_header_blocks(std::size_t codec_bytes, std::size_t block_bytes) noexcept {
  return (kSgCodec + codec_bytes + 4 + block_bytes - 1) / block_bytes;
}

Result<void> encode_segment_header(std::span<std::byte> out, const SegmentHeader& h, std::size_t block_bytes) noexcept {
  const std::size_t n = h.codec_parameters.size();
  if (n > kMaxCodecParametersBytes || out.size() < segment_header_blocks(n, block_bytes) * block_bytes) {
    return errc::invalid_argument;
  }
  std::memset(out.data(), 0, segment_header_blocks(n, block_bytes) * block_bytes);
  put_magic(out, kSegmentMagic);
  le::put<std::uint64_t>(out, kSgSegment, h.segment_id);
  le::put<std::uint64_t>(out, kSgStream, h.stream_id);
  le::put<std::uint64_t>(out, kSgFirstSeq, h.first_sequence);
  le::put<std::int64_t>(out, kSgStart, h.start_us);
  le::put<std::uint32_t>(out, kSgCodecBytes, static_cast<std::uint32_t>(n));
  if (n) std::memcpy(out.data() + kSgCodec, h.codec_parameters.data(), n);
  le::put<std::uint32_t>(out, kSgCodec + n, crc32c(out.first(kSgCodec + n)));
  return {};
}

Result<SegmentHeader> decode_segment_header(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < kSgCodec + 4 || !has_magic(bytes, kSegmentMagic)) return errc::corruption;
  const std::size_t n = le::get<std::uint32_t>(bytes, kSgCodecBytes);
  if (n > kMaxCodecParametersBytes || kSgCodec + n + 4 > bytes.size()) return errc::corruption;
  if (crc32c(bytes.first(kSgCodec + n)) != le::get<std::uint32_t>(bytes, kSgCodec + n)) return errc::corruption;
  SegmentHeader h;
  h.segment_id = le::get<std::uint64_t>(bytes, kSgSegment);
  h.stream_id = le::get<std::uint64_t>(bytes, kSgStream);
  h.first_sequence = le::get<std::uint64_t>(bytes, kSgFirstSeq);
  h.start_us = le::get<std::int64_t>(bytes, kSgStart);
  h.codec_parameters.assign(bytes.begin() + kSgCodec, bytes.begin() + kSgCodec + n);
  return h;
}

}  // namespace vigil::storage
