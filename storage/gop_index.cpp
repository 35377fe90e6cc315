#include "storage/gop_index.hpp"

#include <algorithm>

#include "storage/crc32c.hpp"
#include "storage/endian.hpp"

namespace vigil::storage {
namespace {

void put_varint(std::vector<std::byte>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(std::byte(static_cast<std::uint8_t>(v) | 0x80));
    v >>= 7;
  }
  out.push_back(std::byte(static_cast<std::uint8_t>(v)));
}

bool get_varint(std::span<const std::byte> in, std::size_t& pos, std::uint64_t& v) noexcept {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    auto b = static_cast<std::uint8_t>(in[pos++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

}  // namespace

std::optional<std::size_t> GopIndex::at_or_before(std::int64_t pts) const noexcept {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), pts,
                             [](std::int64_t p, const GopEntry& e) { return p < e.pts; });
  if (it == entries_.begin()) return std::nullopt;
  return static_cast<std::size_t>(it - entries_.begin() - 1);
}

std::vector<std::byte> GopIndex::encode() const {
  std::vector<std::byte> out;
  out.reserve(8 + entries_.size() * 6);
  out.push_back(std::byte{kGopIndexFormat});
  put_varint(out, entries_.size());
  GopEntry prev;
  for (const auto& e : entries_) {
    // Wrapping subtraction: deltas of arbitrary values still round-trip exactly.
    put_varint(out, zigzag(static_cast<std::int64_t>(static_cast<std::uint64_t>(e.pts) -
                                                     static_cast<std::uint64_t>(prev.pts))));
    put_varint(out, e.offset - prev.offset);
    put_varint(out, e.sequence - prev.sequence);
    prev = e;
  }
  const auto crc = crc32c(out);
  out.resize(out.size() + 4);
  le::put<std::uint32_t>(out, out.size() - 4, crc);
  return out;
}

Result<GopIndex> GopIndex::decode(std::span<const std::byte> blob) noexcept {
  if (blob.size() < 6) return errc::corruption;
  const auto body = blob.first(blob.size() - 4);
  if (crc32c(body) != le::get<std::uint32_t>(blob, blob.size() - 4)) return errc::corruption;
  if (static_cast<std::uint8_t>(body[0]) != kGopIndexFormat) return errc::unsupported;
  std::size_t pos = 1;
  std::uint64_t count = 0;
  // Each entry takes at least 3 bytes: a count beyond that is corrupt, not an allocation.
  if (!get_varint(body, pos, count) || count > body.size() / 3) return errc::corruption;
  GopIndex index;
  index.entries_.reserve(count);
  GopEntry prev;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t dpts = 0, doff = 0, dseq = 0;
    if (!get_varint(body, pos, dpts) || !get_varint(body, pos, doff) || !get_varint(body, pos, dseq)) {
      return errc::corruption;
    }
    GopEntry e;
    e.pts =
        static_cast<std::int64_t>(static_cast<std::uint64_t>(prev.pts) + static_cast<std::uint64_t>(unzigzag(dpts)));
    e.offset = prev.offset + doff;
    e.sequence = prev.sequence + dseq;
    index.entries_.push_back(e);
    prev = e;
  }
  if (pos != body.size()) return errc::corruption;
  return index;
}

}  // namespace vigil::storage
