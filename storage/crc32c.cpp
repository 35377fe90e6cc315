#include "storage/crc32c.hpp"

#include <isa-l/crc.h>

#include <boost/crc.hpp>
#include <limits>

namespace vigil::storage {

std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t seed) noexcept {
  // ISA-L works on the raw register (no final inversion): invert on the way in and out so
  // results chain through SEED like every other CRC32C API.
  std::uint32_t crc = ~seed;
  const auto* p = reinterpret_cast<unsigned char*>(const_cast<std::byte*>(bytes.data()));
  std::size_t left = bytes.size();
  constexpr std::size_t kMaxChunk = std::numeric_limits<int>::max() / 2;  // its length is an int
  while (left > 0) {
    const std::size_t n = left < kMaxChunk ? left : kMaxChunk;
    crc = crc32_iscsi(const_cast<unsigned char*>(p), static_cast<int>(n), crc);
    p += n;
    left -= n;
  }
  return ~crc;
}

std::uint32_t crc32c_reference(std::span<const std::byte> bytes, std::uint32_t seed) noexcept {
  // Reflected Castagnoli polynomial. Boost takes the initial remainder unreflected, so
  // ~seed is bit-reversed to chain exactly like crc32c().
  std::uint32_t init = ~seed, rev = 0;
  for (int i = 0; i < 32; ++i) rev |= ((init >> i) & 1u) << (31 - i);
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc(rev);
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

}  // namespace vigil::storage
