#include "storage/record.hpp"

#include <algorithm>
#include <cstring>

#include "storage/crc32c.hpp"
#include "storage/endian.hpp"

namespace vigil::storage {
namespace {

// Field offsets inside a RecordHeader (docs/format.md).
constexpr std::size_t kMagicAt = 0, kCrcAt = 4, kStreamAt = 8, kSequenceAt = 16, kPtsAt = 24, kDtsAt = 32,
                      kDurationAt = 40, kFlagsAt = 48, kPayloadBytesAt = 52;
static_assert(kPayloadBytesAt + 4 == kRecordHeaderBytes);

void put_header_fields(std::span<std::byte> out, const RecordHeader& h) noexcept {
  le::put<std::uint32_t>(out, kMagicAt, kRecordMagic);
  le::put<std::uint64_t>(out, kStreamAt, h.stream_id);
  le::put<std::uint64_t>(out, kSequenceAt, h.sequence);
  le::put<std::int64_t>(out, kPtsAt, h.pts);
  le::put<std::int64_t>(out, kDtsAt, h.dts);
  le::put<std::int64_t>(out, kDurationAt, h.duration);
  le::put<std::uint32_t>(out, kFlagsAt, h.flags);
  le::put<std::uint32_t>(out, kPayloadBytesAt, h.payload_bytes);
}

// CRC over header bytes [8, 56) then the payload that follows it in OUT.
void seal(std::span<std::byte> record) noexcept {
  std::uint32_t crc = crc32c(record.subspan(kStreamAt, kRecordHeaderBytes - kStreamAt));
  crc = crc32c(record.subspan(kRecordHeaderBytes), crc);
  le::put<std::uint32_t>(record, kCrcAt, crc);
}

bool all_zero(std::span<const std::byte> bytes) noexcept {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

}  // namespace

void encode_record(std::span<std::byte> out, const RecordHeader& header, std::span<const std::byte> payload) noexcept {
  RecordHeader h = header;
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  put_header_fields(out, h);
  if (!payload.empty()) std::memcpy(out.data() + kRecordHeaderBytes, payload.data(), payload.size());
  seal(out.first(kRecordHeaderBytes + payload.size()));
}

RecordBatch::RecordBatch(std::span<std::byte> dest, std::size_t block_bytes) noexcept
    : dest_(dest), block_bytes_(block_bytes) {}

bool RecordBatch::fits(std::size_t payload_bytes) const noexcept {
  return payload_bytes <= dest_.size() && used_ + kRecordHeaderBytes + payload_bytes <= dest_.size();
}

Result<void> RecordBatch::append(const RecordHeader& header, std::span<const std::byte> payload) noexcept {
  if (!fits(payload.size()) || payload.size() > std::numeric_limits<std::uint32_t>::max()) {
    return errc::invalid_argument;
  }
  encode_record(dest_.subspan(used_, kRecordHeaderBytes + payload.size()), header, payload);
  used_ += kRecordHeaderBytes + payload.size();
  ++frames_;
  return {};
}

std::size_t RecordBatch::finish() noexcept {
  const std::size_t rem = (block_bytes_ - used_ % block_bytes_) % block_bytes_;
  if (rem == 0) return used_;
  auto tail = dest_.subspan(used_, rem);
  std::memset(tail.data(), 0, tail.size());
  if (rem >= kRecordHeaderBytes) {
    // A padding record keeps the scan going to the next batch in the same extent.
    RecordHeader pad;
    pad.flags = kRecordPadding;
    pad.payload_bytes = static_cast<std::uint32_t>(rem - kRecordHeaderBytes);
    put_header_fields(tail, pad);
    seal(tail);
  }
  // Shorter tails stay zero: the scanner skips zeros up to the block boundary.
  used_ += rem;
  return used_;
}

void RecordBatch::reset() noexcept {
  used_ = 0;
  frames_ = 0;
}

const char* scan_stop_name(ScanStop s) noexcept {
  switch (s) {
    case ScanStop::none: return "none";
    case ScanStop::end_of_data: return "end_of_data";
    case ScanStop::bad_magic: return "bad_magic";
    case ScanStop::bad_crc: return "bad_crc";
    case ScanStop::truncated: return "truncated";
    case ScanStop::sequence_break: return "sequence_break";
    case ScanStop::wrong_stream: return "wrong_stream";
  }
  return "unknown";
}

RecordScanner::RecordScanner(std::span<const std::byte> data, std::size_t block_bytes,
                             std::optional<std::uint64_t> stream_id, std::optional<std::uint64_t> next_sequence,
                             std::size_t start) noexcept
    : data_(data),
      block_bytes_(block_bytes),
      stream_id_(stream_id),
      next_sequence_(next_sequence),
      pos_(std::min(start, data.size())),
      valid_end_(pos_) {}

std::optional<ScannedRecord> RecordScanner::next() noexcept {
  while (stop_ == ScanStop::none) {
    const std::size_t left = data_.size() - pos_;
    if (left == 0) {
      stop_ = ScanStop::end_of_data;
      break;
    }
    const std::size_t to_boundary = block_bytes_ - pos_ % block_bytes_;
    // A batch's zero tail can be 1-3 bytes: then the next 4 bytes straddle the block boundary
    // and include the next batch's magic. Such a tail is all zeros up to the boundary, whereas
    // a record of the same batch starting there has its (non-zero) magic in those bytes.
    if (to_boundary < 4 && left > to_boundary && all_zero(data_.subspan(pos_, to_boundary))) {
      pos_ += to_boundary;
      valid_end_ = pos_;
      continue;
    }
    if (left < 4 || le::get<std::uint32_t>(data_, pos_) == 0) {
      // Zeros: the end of what was written (at a block start), or a batch's short zero tail.
      const auto rest_of_block = data_.subspan(pos_, std::min(left, to_boundary));
      if (pos_ % block_bytes_ == 0 || !all_zero(rest_of_block)) {
        stop_ = all_zero(rest_of_block) ? ScanStop::end_of_data : ScanStop::bad_magic;
        break;
      }
      pos_ += rest_of_block.size();
      valid_end_ = pos_;
      continue;
    }
    if (le::get<std::uint32_t>(data_, pos_) != kRecordMagic) {
      stop_ = ScanStop::bad_magic;
      break;
    }
    if (left < kRecordHeaderBytes) {
      stop_ = ScanStop::truncated;
      break;
    }
    const auto hdr = data_.subspan(pos_, kRecordHeaderBytes);
    RecordHeader h;
    h.stream_id = le::get<std::uint64_t>(hdr, kStreamAt);
    h.sequence = le::get<std::uint64_t>(hdr, kSequenceAt);
    h.pts = le::get<std::int64_t>(hdr, kPtsAt);
    h.dts = le::get<std::int64_t>(hdr, kDtsAt);
    h.duration = le::get<std::int64_t>(hdr, kDurationAt);
    h.flags = le::get<std::uint32_t>(hdr, kFlagsAt);
    h.payload_bytes = le::get<std::uint32_t>(hdr, kPayloadBytesAt);
    if (h.payload_bytes > left - kRecordHeaderBytes) {
      stop_ = ScanStop::truncated;
      break;
    }
    const auto payload = data_.subspan(pos_ + kRecordHeaderBytes, h.payload_bytes);
    std::uint32_t crc = crc32c(hdr.subspan(kStreamAt));
    crc = crc32c(payload, crc);
    if (crc != le::get<std::uint32_t>(hdr, kCrcAt)) {
      stop_ = ScanStop::bad_crc;
      break;
    }
    if (h.padding()) {
      pos_ += kRecordHeaderBytes + h.payload_bytes;
      valid_end_ = pos_;
      continue;
    }
    if (stream_id_ && h.stream_id != *stream_id_) {
      stop_ = ScanStop::wrong_stream;
      break;
    }
    // The largest sequence has no successor: taking it would wrap the next expected one to 0,
    // and recovery would then adopt stale records of any lower sequence. Sequences start at 1
    // and grow by one per frame, so only damage can hold it (found by tests/fuzz).
    if ((next_sequence_ && h.sequence != *next_sequence_) || h.sequence == std::numeric_limits<std::uint64_t>::max()) {
      stop_ = ScanStop::sequence_break;
      break;
    }
    next_sequence_ = h.sequence + 1;
    ScannedRecord rec{h, payload, pos_};
    pos_ += kRecordHeaderBytes + h.payload_bytes;
    valid_end_ = pos_;
    return rec;
  }
  return std::nullopt;
}

}  // namespace vigil::storage
