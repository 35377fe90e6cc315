#pragma once
// The GOP index of a segment: one entry per keyframe (its pts, its record's logical offset in
// the segment, its sequence number). Kept in memory while a segment is open, stored as one
// compact blob per segment in the catalog when it closes (docs/format.md, "GOP index blob"),
// and rebuildable from the segment itself by scanning its records.
// Thread: a GopIndex belongs to one thread at a time. Errors: values.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/errors.hpp"

namespace vigil::storage {

inline constexpr std::uint8_t kGopIndexFormat = 1;

struct GopEntry {
  std::int64_t pts = 0;
  std::uint64_t offset = 0;  // logical byte offset of the keyframe's record in the segment
  std::uint64_t sequence = 0;

  bool operator==(const GopEntry&) const = default;
};

class GopIndex {
 public:
  // REQUIRES: offsets strictly increase (entries are added in write order).
  void add(const GopEntry& entry) { entries_.push_back(entry); }
  std::span<const GopEntry> entries() const noexcept { return entries_; }
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }

  // The last keyframe whose pts is <= PTS (where playback of PTS must start); nullopt if PTS
  // precedes the first keyframe. Keyframe pts grow with offset in a recording.
  std::optional<std::size_t> at_or_before(std::int64_t pts) const noexcept;

  // The compact blob: format byte, varint count, then per entry the zigzag varint deltas of
  // pts, offset and sequence from the previous entry; a CRC32C of everything before it.
  std::vector<std::byte> encode() const;
  static Result<GopIndex> decode(std::span<const std::byte> blob) noexcept;

  bool operator==(const GopIndex&) const = default;

 private:
  std::vector<GopEntry> entries_;
};

}  // namespace vigil::storage
