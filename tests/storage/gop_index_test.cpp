// The GOP index: lookup of the keyframe at or before a time, the compact blob's round trip,
// its size, and corruption detection.
#include <catch2/catch_test_macros.hpp>
#include <random>

#include "storage/gop_index.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {
GopIndex sample(std::size_t n) {
  GopIndex g;
  for (std::size_t i = 0; i < n; ++i) {
    g.add({.pts = static_cast<std::int64_t>(i) * 180000 - 90000, .offset = i * 250'000 + 4096, .sequence = 1 + i * 50});
  }
  return g;
}
}  // namespace

TEST_CASE("lookup finds the keyframe at or before a time", "[format][gop]") {
  auto g = sample(5);  // pts -90000, 90000, 270000, 450000, 630000
  CHECK_FALSE(g.at_or_before(-90001).has_value());
  CHECK(g.at_or_before(-90000) == 0u);
  CHECK(g.at_or_before(89999) == 0u);
  CHECK(g.at_or_before(90000) == 1u);
  CHECK(g.at_or_before(1'000'000) == 4u);
}

TEST_CASE("the GOP index blob round-trips and stays compact", "[format][gop]") {
  auto g = sample(600);  // ten minutes of 1-second GOPs
  auto blob = g.encode();
  auto back = GopIndex::decode(blob);
  REQUIRE(back.has_value());
  CHECK(*back == g);
  CHECK(blob.size() < 600 * 10);  // a few bytes per GOP, never a row per frame

  GopIndex empty;
  auto e = GopIndex::decode(empty.encode());
  REQUIRE(e.has_value());
  CHECK(e->empty());
}

TEST_CASE("a damaged GOP index blob is refused, never misread", "[format][gop]") {
  auto blob = sample(40).encode();
  for (std::size_t bit = 0; bit < blob.size() * 8; ++bit) {
    auto damaged = blob;
    damaged[bit / 8] ^= std::byte(1u << (bit % 8));
    REQUIRE(GopIndex::decode(damaged).has_error());
  }
  CHECK(GopIndex::decode(std::span(blob).first(blob.size() - 1)).has_error());
  std::mt19937 rng(9);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> junk(rng() % 64);
    for (auto& b : junk) b = std::byte(rng());
    REQUIRE(GopIndex::decode(junk).has_error());
  }
}
