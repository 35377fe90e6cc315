// CRC32C: the standard check value, chaining, and hardware == portable on random data.
#include <catch2/catch_test_macros.hpp>
#include <random>
#include <string>
#include <vector>

#include "storage/crc32c.hpp"

using namespace vigil::storage;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }
}  // namespace

TEST_CASE("crc32c matches the standard check value", "[crc32c]") {
  CHECK(crc32c(bytes_of("123456789")) == 0xE3069283u);
  CHECK(crc32c_portable(bytes_of("123456789"), 0) == 0xE3069283u);
  if (crc32c_hardware_available()) CHECK(crc32c_hardware(bytes_of("123456789"), 0) == 0xE3069283u);
  CHECK(crc32c({}) == 0u);
}

TEST_CASE("crc32c chains: crc(a ++ b) == crc(b, crc(a))", "[crc32c]") {
  std::string a = "surveillance ", b = "video frames";
  CHECK(crc32c(bytes_of(a + b)) == crc32c(bytes_of(b), crc32c(bytes_of(a))));
  CHECK(crc32c_portable(bytes_of(a + b), 0) == crc32c_portable(bytes_of(b), crc32c_portable(bytes_of(a), 0)));
}

TEST_CASE("hardware and portable crc32c agree on random data of every small length", "[crc32c]") {
  if (!crc32c_hardware_available()) SKIP("no SSE4.2 on this CPU");
  std::mt19937 rng(7);
  for (std::size_t len = 0; len < 300; ++len) {
    std::vector<std::byte> data(len);
    for (auto& b : data) b = std::byte(rng());
    auto seed = static_cast<std::uint32_t>(rng());
    REQUIRE(crc32c_hardware(data, seed) == crc32c_portable(data, seed));
  }
}
