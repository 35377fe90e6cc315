#pragma once
// Little-endian field access for on-disk structures (docs/format.md): every field is
// encoded and decoded byte by byte with memcpy, never by casting a packed struct, so the
// format is the same on every host and there is no alignment UB.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace vigil::storage::le {

static_assert(std::endian::native == std::endian::little, "Vigil's on-disk format assumes a little-endian host");

template <class T>
inline void put(std::span<std::byte> out, std::size_t offset, T value) noexcept {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}

template <class T>
inline T get(std::span<const std::byte> in, std::size_t offset) noexcept {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

}  // namespace vigil::storage::le
