#pragma once
// A volume: one disk (or file) formatted with a superblock and fixed-size extents
// (docs/format.md). The Volume owns the extent allocation map, rebuilt at open() from the
// extent headers on the disk itself, which are the truth (docs/durability.md).
//
// Thread: the disk's IO thread only (it issues IO on the Device). Ownership: the Device is
// borrowed and must outlive the Volume. Errors: values.
// Extent header writes are synchronous (read_sync/write_sync), outside the cycle's stream IO:
// they are rare (one per extent filled or freed) and must be durable before the extent is used.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "storage/device.hpp"
#include "storage/volume_layout.hpp"

namespace vigil::storage {

struct FormatOptions {
  std::uint64_t extent_bytes = 64ull << 20;
  VolumeUuid volume_uuid{};
  std::int64_t created_us = 0;
  bool force = false;  // overwrite an existing Vigil volume
};

// An in-use extent as found on the volume.
struct ExtentUse {
  std::uint64_t extent = 0;  // extent number on the volume
  ExtentHeader header;
};

class Volume {
 public:
  // Writes a fresh superblock (durably) on DEV. Refuses a device that already holds a Vigil
  // volume (errc::invalid_argument) unless options.force. Zeroes nothing else: extents are
  // recognised by their headers, and format also clears the header block of every extent.
  static Result<void> format(Device& dev, const FormatOptions& options) noexcept;
  // Reads the superblock and every extent header.
  static Result<std::unique_ptr<Volume>> open(Device& dev) noexcept;

  Device& device() noexcept { return dev_; }
  const Superblock& superblock() const noexcept { return sb_; }
  std::uint32_t block_bytes() const noexcept { return sb_.block_bytes; }
  std::uint64_t extent_bytes() const noexcept { return sb_.extent_bytes; }
  std::uint64_t extent_count() const noexcept { return sb_.extent_count; }
  std::uint64_t free_extent_count() const noexcept { return free_.size(); }
  std::uint64_t extent_offset(std::uint64_t extent) const noexcept { return sb_.extent_offset(extent); }

  // Takes a free extent for SEGMENT_ID (position ORDINAL in it) and writes its header with a
  // durable write before returning: no record is ever written into an extent whose header
  // could be lost. errc::not_found when the volume is full. An extent whose header cannot be
  // written is marked bad and the next free one is tried (at most kAllocateTries in all), so one
  // bad spot does not stop every allocation; the last error is returned after that.
  static constexpr int kAllocateTries = 3;
  Result<std::uint64_t> allocate_extent(std::uint64_t segment_id, std::uint64_t stream_id,
                                        std::uint32_t ordinal) noexcept;
  // Crash-safe release: a tombstone header is written durably, then the extent is free (unless
  // it is bad: then it stays out of use).
  Result<void> free_extent(std::uint64_t extent) noexcept;
  // The same in two steps, for a release whose write goes through the disk's scheduler (the
  // background broker) instead of a synchronous write: prepare_free returns the tombstone block
  // to write at its offset (the extent stays in use meanwhile; errc::not_found when it is not in
  // use, errc::busy when already being freed); once that write is durable, commit_free makes the
  // extent free; after a failed write, abandon_free leaves it in use (the next start's recovery
  // frees it, as for a crash in between).
  struct Tombstone {
    std::uint64_t extent = 0, offset = 0;
    std::shared_ptr<AlignedBuffer> block;
  };
  Result<Tombstone> prepare_free(std::uint64_t extent);
  void commit_free(std::uint64_t extent) noexcept;
  void abandon_free(std::uint64_t extent) noexcept;
  // EXTENT failed a write: it is never allocated again while this Volume lives (a free one
  // leaves the free set now, one in use when its segment is freed). Not recorded on the
  // volume: the next start tries it again, when the disk may have remapped the bad sector.
  void mark_bad(std::uint64_t extent) noexcept;
  std::uint64_t bad_extent_count() const noexcept { return bad_.size(); }
  // Marked bad (an in-use one stays in use until its segment is freed, then never returns).
  bool is_bad(std::uint64_t extent) const noexcept { return bad_.count(extent) > 0; }

  // In-use extents by segment id, each list sorted by ordinal (as found at open, plus
  // allocations and frees since).
  const std::map<std::uint64_t, std::vector<ExtentUse>>& segments() const noexcept { return segments_; }

 private:
  struct PrivateTag {};  // only open() constructs a Volume

 public:
  Volume(PrivateTag, Device& dev, Superblock sb) : dev_(dev), sb_(sb) {}

 private:
  Result<void> write_header(std::uint64_t extent, const ExtentHeader& h) noexcept;

  Device& dev_;
  Superblock sb_;
  std::set<std::uint64_t> free_;     // ordered: allocation takes the lowest, keeping layout sequential
  std::set<std::uint64_t> bad_;      // failed a write: never allocated again (mark_bad)
  std::set<std::uint64_t> freeing_;  // prepare_free'd, tombstone not yet durable
  std::map<std::uint64_t, std::vector<ExtentUse>> segments_;
  std::uint64_t generation_ = 0;
};

}  // namespace vigil::storage
