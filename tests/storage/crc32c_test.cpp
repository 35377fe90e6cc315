// CRC32C: the standard check value, chaining, and ISA-L == the Boost.CRC reference on random
// data of every small length and alignment.
#include <catch2/catch_test_macros.hpp>
#include <random>
#include <string>
#include <vector>

#include "storage/crc32c.hpp"

using namespace vigil::storage;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
}  // namespace

TEST_CASE("crc32c matches the standard check value", "[crc32c]") {
  CHECK(crc32c(bytes_of("123456789")) == 0xE3069283u);
  CHECK(crc32c_reference(bytes_of("123456789"), 0) == 0xE3069283u);
  CHECK(crc32c({}) == 0u);
}

TEST_CASE("crc32c chains: crc(a ++ b) == crc(b, crc(a))", "[crc32c]") {
  std::string a = "surveillance ", b = "video frames";
  CHECK(crc32c(bytes_of(a + b)) == crc32c(bytes_of(b), crc32c(bytes_of(a))));
  CHECK(crc32c_reference(bytes_of(a + b), 0) == crc32c_reference(bytes_of(b), crc32c_reference(bytes_of(a), 0)));
}

TEST_CASE("crc32c agrees with the reference on random data of every length and alignment", "[crc32c]") {
  std::mt19937 rng(7);
  std::vector<std::byte> data(5000);
  for (auto& b : data) b = std::byte(rng());
  for (std::size_t len = 0; len < 600; ++len) {
    const std::size_t start = rng() % 64;
    auto s = std::span<const std::byte>(data).subspan(start, len);
    auto seed = static_cast<std::uint32_t>(rng());
    REQUIRE(crc32c(s, seed) == crc32c_reference(s, seed));
  }
  CHECK(crc32c(data, 1) == crc32c_reference(data, 1));
}
