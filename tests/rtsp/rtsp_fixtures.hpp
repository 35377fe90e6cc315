#pragma once
// The RTSP tests' recorded inputs (tests/rtsp/data, written by make_fixtures.py): a file's
// bytes, and a .rtp file's packets (each stored after a 16-bit little-endian length).
// Errors: Catch2 assertions (a missing file fails the test).
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace vigil::test::rtsp_fixtures {

using Bytes = std::vector<std::uint8_t>;

inline Bytes read_file(const std::string& name) {
  std::ifstream f(std::string(VIGIL_RTSP_TEST_DATA) + "/" + name, std::ios::binary);
  REQUIRE(f.good());
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

inline std::vector<Bytes> packets(const Bytes& file) {
  std::vector<Bytes> out;
  for (std::size_t at = 0; at + 2 <= file.size();) {
    const std::size_t n = file[at] | (std::size_t{file[at + 1]} << 8);
    REQUIRE(at + 2 + n <= file.size());
    out.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(at + 2),
                     file.begin() + static_cast<std::ptrdiff_t>(at + 2 + n));
    at += 2 + n;
  }
  return out;
}

}  // namespace vigil::test::rtsp_fixtures
