#pragma once
// CRC32C (Castagnoli), the checksum of every record, header and GOP index blob.
// SSE4.2's crc32 instruction when the CPU has it (chosen once at start), Boost.CRC otherwise.
// Thread: pure function, any thread.
#include <cstddef>
#include <cstdint>
#include <span>

namespace vigil::storage {

// Extends SEED (a previous result, 0 to start): crc32c(b, crc32c(a)) == crc32c(a ++ b).
std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t seed = 0) noexcept;

// The two implementations, exposed so tests can check them against each other.
std::uint32_t crc32c_hardware(std::span<const std::byte> bytes, std::uint32_t seed) noexcept;
std::uint32_t crc32c_portable(std::span<const std::byte> bytes, std::uint32_t seed) noexcept;
bool crc32c_hardware_available() noexcept;

}  // namespace vigil::storage
