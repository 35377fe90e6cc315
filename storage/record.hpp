#pragma once
// Records: how frames are stored inside a segment (docs/format.md, "Records").
//
//   record = RecordHeader (56 bytes) | payload (payload_bytes)
//
// CRC32C covers the header from byte 8 on and the payload. A cycle's frames of one stream
// are built by a RecordBatch straight into the stream's aligned buffer half and padded to a
// block multiple, so each batch is one aligned write that starts on a block boundary.
// Thread: pure code, any thread. Errors: values; decoding is noexcept and never reads
// outside the span it is given.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include "common/errors.hpp"

namespace vigil::storage {

inline constexpr std::uint32_t kRecordMagic = 0x43524756;  // "VGRC" little-endian
inline constexpr std::size_t kRecordHeaderBytes = 56;
inline constexpr std::int64_t kNoTimestamp = std::numeric_limits<std::int64_t>::min();

// RecordHeader::flags bits.
inline constexpr std::uint32_t kRecordKeyframe = 1u << 0;
inline constexpr std::uint32_t kRecordPadding = 1u << 1;  // fills a batch to its block boundary; no frame

struct RecordHeader {
  std::uint64_t stream_id = 0;
  std::uint64_t sequence = 0;
  std::int64_t pts = kNoTimestamp;
  std::int64_t dts = kNoTimestamp;
  std::int64_t duration = 0;
  std::uint32_t flags = 0;
  std::uint32_t payload_bytes = 0;

  bool keyframe() const noexcept { return flags & kRecordKeyframe; }
  bool padding() const noexcept { return flags & kRecordPadding; }
};

// Appends records into a caller-owned destination (normally the filling half of a stream's
// double buffer): the payload is copied once, from the network buffer to its place on disk.
class RecordBatch {
 public:
  // REQUIRES: dest.size() is a multiple of block_bytes.
  RecordBatch(std::span<std::byte> dest, std::size_t block_bytes) noexcept;

  // Room for a frame of PAYLOAD_BYTES, keeping room to pad the batch afterwards?
  bool fits(std::size_t payload_bytes) const noexcept;
  // Appends one frame; invalid_argument if it does not fit (nothing is written then).
  Result<void> append(const RecordHeader& header, std::span<const std::byte> payload) noexcept;
  // Pads to the next block boundary and returns the bytes to write (a block multiple, 0 if empty).
  std::size_t finish() noexcept;

  // The first BYTES of the buffer hold FRAMES whole records, not padded: a batch cut short
  // before a record, or one given records moved in from another batch (SegmentWriter's cut of a
  // batch at a keyframe). REQUIRES: BYTES fits in the buffer.
  void set_contents(std::size_t bytes, std::size_t frames) noexcept {
    used_ = bytes;
    frames_ = frames;
  }
  std::size_t used_bytes() const noexcept { return used_; }
  std::size_t frame_count() const noexcept { return frames_; }
  void reset() noexcept;

 private:
  std::span<std::byte> dest_;
  std::size_t block_bytes_;
  std::size_t used_ = 0;
  std::size_t frames_ = 0;
};

// Encodes one record (header + payload) into OUT, which must hold exactly
// kRecordHeaderBytes + payload.size() bytes.
void encode_record(std::span<std::byte> out, const RecordHeader& header, std::span<const std::byte> payload) noexcept;

enum class ScanStop {
  none,            // still scanning
  end_of_data,     // reached the end of the span, or an all-zero block start: nothing more was written
  bad_magic,       // bytes that are not a record: a torn write or stale data
  bad_crc,         // a record whose checksum does not match: a torn or corrupted record
  truncated,       // a record whose payload runs past the span
  sequence_break,  // not the sequence number expected next (stale record of an earlier use)
  wrong_stream,    // a valid record of another stream (stale data)
};
const char* scan_stop_name(ScanStop s) noexcept;

struct ScannedRecord {
  RecordHeader header;
  std::span<const std::byte> payload;
  std::size_t offset = 0;  // of the record header, within the scanned span
};

// Walks the records of one extent's data area. Padding records and zero tails inside a
// block are skipped; scanning stops at the first record that is not valid, and valid_end()
// says where the valid data ends (recovery truncates there).
class RecordScanner {
 public:
  // START: where scanning begins (a record start); block boundaries are counted from data[0].
  RecordScanner(std::span<const std::byte> data, std::size_t block_bytes, std::optional<std::uint64_t> stream_id = {},
                std::optional<std::uint64_t> next_sequence = {}, std::size_t start = 0) noexcept;

  // The next valid frame record, or nullopt once stopped (see stop()).
  std::optional<ScannedRecord> next() noexcept;
  ScanStop stop() const noexcept { return stop_; }
  std::size_t stop_offset() const noexcept { return pos_; }  // where the scan stopped
  std::size_t valid_end() const noexcept { return valid_end_; }
  std::optional<std::uint64_t> next_sequence() const noexcept { return next_sequence_; }

 private:
  std::span<const std::byte> data_;
  std::size_t block_bytes_;
  std::optional<std::uint64_t> stream_id_;
  std::optional<std::uint64_t> next_sequence_;
  std::size_t pos_ = 0;
  std::size_t valid_end_ = 0;
  ScanStop stop_ = ScanStop::none;
};

}  // namespace vigil::storage
