#pragma once
// For the storage fuzz targets: the input as a small program that writes into a span of segment
// bytes, so mutations produce records whose CRC is right (a fuzzer would almost never guess a
// CRC32C) beside raw garbage, seeks and block padding. Every op reads what it needs from the
// input and stops cleanly when the input runs out.
//   0 RAW n bytes          garbage (or a torn record) at the cursor
//   1 RECORD fields        a valid record at the cursor: stream, sequence, timestamps, flags and
//                          payload size from the input, CRC computed
//   2 SEEK u16             moves the cursor
//   3 ALIGN                moves the cursor to the next block boundary
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "storage/record.hpp"

namespace vigil::fuzz {

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
  std::span<const std::byte> bytes(std::size_t n) {
    n = std::min(n, size_ - std::min(pos_, size_));
    std::span<const std::byte> out(reinterpret_cast<const std::byte*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Runs the program in IN over OUT. STREAM_ID: the stream most records belong to; SEQUENCE and
// PTS: where they start (continued across calls).
inline void apply_record_ops(Input& in, std::span<std::byte> out, std::size_t block_bytes, std::uint64_t stream_id,
                             std::uint64_t& sequence, std::int64_t& pts, std::size_t max_ops = 256) {
  std::size_t cursor = 0;
  std::vector<std::byte> payload;
  for (std::size_t op = 0; op < max_ops && !in.empty(); ++op) {
    switch (in.u8() % 4) {
      case 0: {
        auto raw = in.bytes(in.u8());
        const std::size_t n = std::min(raw.size(), out.size() - std::min(cursor, out.size()));
        if (n) std::memcpy(out.data() + cursor, raw.data(), n);
        cursor += n;
        break;
      }
      case 1: {
        const std::uint8_t which = in.u8();
        storage::RecordHeader h;
        h.stream_id = (which & 0x80) ? which : stream_id;  // mostly ours; sometimes another's (stale)
        sequence += static_cast<std::int8_t>(in.u8());     // mostly +1 in seeds; any jump here
        h.sequence = sequence;
        const std::int16_t step = static_cast<std::int16_t>(in.u16());
        pts += std::int64_t{step} * 1000;
        h.pts = (which & 0x40) ? storage::kNoTimestamp : pts;
        h.dts = (which & 0x20) ? storage::kNoTimestamp : pts - static_cast<std::int8_t>(in.u8()) * 1000;
        h.duration = static_cast<std::int64_t>(in.u16()) * 100;
        h.flags = in.u8() & 3u;
        const std::size_t n = in.u16() % 4096u;
        h.payload_bytes = static_cast<std::uint32_t>(n);
        payload.assign(n, static_cast<std::byte>(in.u8()));
        if (cursor + storage::kRecordHeaderBytes + n <= out.size()) {
          storage::encode_record(out.subspan(cursor, storage::kRecordHeaderBytes + n), h, payload);
          cursor += storage::kRecordHeaderBytes + n;
        }
        break;
      }
      case 2: cursor = in.u16() % (out.size() + 1); break;
      default: cursor = (cursor + block_bytes - 1) / block_bytes * block_bytes; break;
    }
  }
}

}  // namespace vigil::fuzz
