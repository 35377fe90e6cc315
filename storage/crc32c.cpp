#include "storage/crc32c.hpp"

#include <nmmintrin.h>

#include <boost/crc.hpp>
#include <cstring>

namespace vigil::storage {

__attribute__((target("sse4.2"))) std::uint32_t crc32c_hardware(std::span<const std::byte> bytes,
                                                                 std::uint32_t seed) noexcept {
  std::uint64_t crc = ~seed;
  const std::byte* p = bytes.data();
  std::size_t n = bytes.size();
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned-safe load
    crc = _mm_crc32_u64(crc, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(crc);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, static_cast<std::uint8_t>(*p++));
  return ~c32;
}

std::uint32_t crc32c_portable(std::span<const std::byte> bytes, std::uint32_t seed) noexcept {
  // Reflected Castagnoli polynomial. Boost takes the initial remainder unreflected, so
  // ~seed is bit-reversed to chain exactly like the hardware path.
  std::uint32_t init = ~seed, rev = 0;
  for (int i = 0; i < 32; ++i) rev |= ((init >> i) & 1u) << (31 - i);
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc(rev);
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

bool crc32c_hardware_available() noexcept {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t seed) noexcept {
  return crc32c_hardware_available() ? crc32c_hardware(bytes, seed) : crc32c_portable(bytes, seed);
}

}  // namespace vigil::storage
