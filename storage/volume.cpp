#include "storage/volume.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace vigil::storage {
namespace {
// Extent headers read or written per batch of commands (one block each).
constexpr std::uint64_t kHeaderBatch = 256;
}  // namespace

Result<void> Volume::format(Device& dev, const FormatOptions& options) noexcept {
  const auto& info = dev.info();
  const std::uint32_t block = std::max<std::uint32_t>(info.logical_block_bytes, 4096);
  AlignedBuffer buf(block, block);
  if (!options.force) {
    if (auto r = read_sync(dev, 0, buf.span()); !r) return r;
    if (decode_superblock(buf.span()).has_value()) return errc::invalid_argument;  // already a Vigil volume
  }
  Superblock sb;
  sb.block_bytes = block;
  sb.volume_uuid = options.volume_uuid;
  sb.extent_bytes = options.extent_bytes;
  // Extents start at 1 MiB (or one block on tiny devices): aligned for every device we know.
  sb.first_extent_offset = info.size_bytes >= (16u << 20) ? (1u << 20) : block;
  if (options.extent_bytes == 0 || options.extent_bytes % block || info.size_bytes <= sb.first_extent_offset) {
    return errc::invalid_argument;
  }
  sb.extent_count = (info.size_bytes - sb.first_extent_offset) / options.extent_bytes;
  if (sb.extent_count == 0) return errc::invalid_argument;
  sb.created_us = options.created_us;
  // Clear every extent header first, so no header of an earlier volume survives a re-format.
  // Many at a time (write_many_sync): a large volume has tens of thousands of extents.
  AlignedBuffer zero(block, block);
  std::vector<IoCommand> writes;
  for (std::uint64_t e = 0; e < sb.extent_count; e += kHeaderBatch) {
    writes.clear();
    for (std::uint64_t x = e; x < std::min(sb.extent_count, e + kHeaderBatch); ++x) {
      writes.push_back({sb.extent_offset(x), zero.span()});
    }
    if (auto r = write_many_sync(dev, writes); !r) return r;
  }
  if (auto r = flush_sync(dev); !r) return r;
  if (auto r = encode_superblock(buf.span(), sb); !r) return r;
  return write_sync(dev, 0, buf.span(), true);
}

Result<std::unique_ptr<Volume>> Volume::open(Device& dev) noexcept {
  const std::uint32_t block = std::max<std::uint32_t>(dev.info().logical_block_bytes, 4096);
  AlignedBuffer buf(block, block);
  if (auto r = read_sync(dev, 0, buf.span()); !r) return r.error();
  auto sb = decode_superblock(buf.span());
  if (!sb) return sb.error();
  if (sb->extent_offset(sb->extent_count) > dev.info().size_bytes) return errc::corruption;
  auto vol = std::make_unique<Volume>(PrivateTag{}, dev, *sb);
  // Extent headers in batches of reads kept in flight together (read_many_sync), not one read
  // at a time: start-up time is then the device's throughput for scattered blocks, not
  // extent_count round trips.
  const std::size_t hb = sb->block_bytes;
  // No larger than the volume needs: a small volume (tests, the fuzz target) opens without 1 MiB of zeroing.
  AlignedBuffer headers(std::min<std::uint64_t>(kHeaderBatch, sb->extent_count) * hb, hb);
  std::vector<IoCommand> reads;
  for (std::uint64_t first = 0; first < sb->extent_count; first += kHeaderBatch) {
    const std::uint64_t n = std::min<std::uint64_t>(kHeaderBatch, sb->extent_count - first);
    reads.clear();
    for (std::uint64_t k = 0; k < n; ++k)
      reads.push_back({sb->extent_offset(first + k), headers.span().subspan(k * hb, hb)});
    if (auto r = read_many_sync(dev, reads); !r) return r.error();
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::uint64_t e = first + k;
      auto h = decode_extent_header(headers.span().subspan(k * hb, hb));
      vol->generation_ = std::max(vol->generation_, h ? h->generation : 0);
      // A header that does not decode (torn while being written) names no data: the extent is free.
      if (!h || h->state != ExtentState::in_use || h->volume_uuid != sb->volume_uuid) {
        vol->free_.insert(e);
        continue;
      }
      vol->segments_[h->segment_id].push_back({e, *h});
    }
  }
  for (auto& [id, uses] : vol->segments_) {
    std::sort(uses.begin(), uses.end(), [](const ExtentUse& a, const ExtentUse& b) {
      return a.header.ordinal != b.header.ordinal ? a.header.ordinal < b.header.ordinal
                                                  : a.header.generation > b.header.generation;
    });
    // Two extents claiming one ordinal (a crash between tombstone and reuse): newest wins.
    std::vector<ExtentUse> unique;
    for (auto& u : uses) {
      if (!unique.empty() && unique.back().header.ordinal == u.header.ordinal) {
        vol->free_.insert(u.extent);
        continue;
      }
      unique.push_back(u);
    }
    uses = std::move(unique);
  }
  return vol;
}

Result<void> Volume::write_header(std::uint64_t extent, const ExtentHeader& h) noexcept {
  AlignedBuffer buf(sb_.block_bytes, sb_.block_bytes);
  encode_extent_header(buf.span(), h);
  return write_sync(dev_, sb_.extent_offset(extent), buf.span(), /*durable=*/true);
}

Result<std::uint64_t> Volume::allocate_extent(std::uint64_t segment_id, std::uint64_t stream_id,
                                              std::uint32_t ordinal) noexcept {
  Result<void> last = errc::not_found;
  for (int attempt = 0; attempt < kAllocateTries && !free_.empty(); ++attempt) {
    const std::uint64_t extent = *free_.begin();
    ExtentHeader h;
    h.state = ExtentState::in_use;
    h.ordinal = ordinal;
    h.volume_uuid = sb_.volume_uuid;
    h.segment_id = segment_id;
    h.stream_id = stream_id;
    h.generation = ++generation_;
    last = write_header(extent, h);
    if (!last) {
      // Taking the lowest free extent again would fail the same way for ever: skip this one.
      log::warn("extent header write failed; the extent is marked bad and the next one tried",
                {{"device", dev_.info().name}, {"extent", extent}, {"error", last.error().message()}});
      mark_bad(extent);
      continue;
    }
    free_.erase(free_.begin());
    auto& uses = segments_[segment_id];
    uses.push_back({extent, h});
    std::sort(uses.begin(), uses.end(),
              [](const ExtentUse& a, const ExtentUse& b) { return a.header.ordinal < b.header.ordinal; });
    return extent;
  }
  return last.error();
}

void Volume::mark_bad(std::uint64_t extent) noexcept {
  if (extent >= sb_.extent_count) return;
  bad_.insert(extent);
  free_.erase(extent);
}

Result<Volume::Tombstone> Volume::prepare_free(std::uint64_t extent) {
  if (freeing_.contains(extent)) return errc::busy;
  for (auto& [segment, uses] : segments_) {
    auto u = std::find_if(uses.begin(), uses.end(), [&](const ExtentUse& x) { return x.extent == extent; });
    if (u == uses.end()) continue;
    ExtentHeader h = u->header;
    h.state = ExtentState::tombstone;
    h.generation = ++generation_;
    Tombstone t{extent, sb_.extent_offset(extent), std::make_shared<AlignedBuffer>(sb_.block_bytes, sb_.block_bytes)};
    encode_extent_header(t.block->span(), h);
    freeing_.insert(extent);
    return t;
  }
  return errc::not_found;
}

void Volume::commit_free(std::uint64_t extent) noexcept {
  if (freeing_.erase(extent) == 0) return;
  for (auto it = segments_.begin(); it != segments_.end(); ++it) {
    auto& uses = it->second;
    auto u = std::find_if(uses.begin(), uses.end(), [&](const ExtentUse& x) { return x.extent == extent; });
    if (u == uses.end()) continue;
    uses.erase(u);
    if (uses.empty()) segments_.erase(it);
    if (!bad_.count(extent)) free_.insert(extent);
    return;
  }
}

void Volume::abandon_free(std::uint64_t extent) noexcept { freeing_.erase(extent); }

Result<void> Volume::free_extent(std::uint64_t extent) noexcept {
  if (freeing_.contains(extent)) return errc::busy;
  for (auto it = segments_.begin(); it != segments_.end(); ++it) {
    auto& uses = it->second;
    auto u = std::find_if(uses.begin(), uses.end(), [&](const ExtentUse& x) { return x.extent == extent; });
    if (u == uses.end()) continue;
    ExtentHeader h = u->header;
    h.state = ExtentState::tombstone;
    h.generation = ++generation_;
    if (auto r = write_header(extent, h); !r) return r;
    uses.erase(u);
    if (uses.empty()) segments_.erase(it);
    if (!bad_.count(extent)) free_.insert(extent);
    return {};
  }
  return errc::not_found;
}

}  // namespace vigil::storage
