// The export cache: least recently used out first within its byte budget, an export larger than
// the budget served but not kept; and the build budget: builds in progress hold their memory
// until their lease ends, one that would pass the budget is refused, a lone build always runs.
#include <catch2/catch_test_macros.hpp>

#include "server/media/export_cache.hpp"

using vigil::server::ExportCache;

namespace {
std::shared_ptr<const ExportCache::Bytes> bytes(std::size_t n) { return std::make_shared<const ExportCache::Bytes>(n); }
}  // namespace

TEST_CASE("export cache: LRU within the budget", "[export][cache]") {
  ExportCache cache(100);
  cache.put("a", bytes(40));
  cache.put("b", bytes(40));
  REQUIRE(cache.find("a"));   // a is now the most recent
  cache.put("c", bytes(40));  // 120 > 100: b (least recent) goes
  CHECK(cache.find("a"));
  CHECK_FALSE(cache.find("b"));
  CHECK(cache.find("c"));
  CHECK(cache.bytes() == 80);
  cache.put("huge", bytes(101));  // larger than the whole budget: not kept, nothing evicted
  CHECK_FALSE(cache.find("huge"));
  CHECK(cache.bytes() == 80);
  cache.put("a", bytes(10));  // replacing a key replaces its bytes
  CHECK(cache.find("a")->size() == 10);
  CHECK(cache.bytes() == 50);
}

TEST_CASE("export cache: the build budget bounds builds in progress", "[export][cache]") {
  ExportCache cache(100, 1000);
  auto big = cache.reserve_build(5000);  // alone: allowed, however large
  REQUIRE(big);
  CHECK_FALSE(cache.reserve_build(1));  // anything more passes the budget
  big.reset();
  auto a = cache.reserve_build(600);
  REQUIRE(a);
  auto b = cache.reserve_build(400);
  REQUIRE(b);
  CHECK_FALSE(cache.reserve_build(1));
  {
    auto moved = std::move(*a);  // a lease moves; the memory is released once
    a.reset();
    CHECK_FALSE(cache.reserve_build(1));
  }
  auto c = cache.reserve_build(600);
  CHECK(c);
}
