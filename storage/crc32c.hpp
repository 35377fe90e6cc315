#pragma once
// CRC32C (Castagnoli), the checksum of every record, header and GOP index blob.
// Computed by Intel ISA-L's crc32_iscsi (PCLMUL folding, with its own CPU dispatch);
// Boost.CRC is the independent reference the tests check it against.
// Thread: pure function, any thread.
#include <cstddef>
#include <cstdint>
#include <span>

namespace vigil::storage {

// Extends SEED (a previous result, 0 to start): crc32c(b, crc32c(a)) == crc32c(a ++ b).
std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t seed = 0) noexcept;

// Boost.CRC, table-driven and slow: the reference for tests.
std::uint32_t crc32c_reference(std::span<const std::byte> bytes, std::uint32_t seed) noexcept;

}  // namespace vigil::storage
