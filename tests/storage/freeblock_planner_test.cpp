// The freeblock planner (docs/freeblock.md): background reads inside a foreground request's
// rotational latency never delay it (exact, in virtual time), and it takes what fits.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <random>

#include "storage/freeblock_planner.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {
constexpr std::uint64_t kSector = 512;

// Runs N random foreground requests (2:1 read : durable write, 4-16 KB) twice in lockstep: on
// BASE alone and on FREE with the planner's background read before each. Every foreground
// completion must be identical; returns the background sectors read.
// SEARCH, when set, adds up the planner's search statistics (the most tracks examined in one plan
// in max_examined, the plans cut off by the bound in cut_off).
struct SearchTotals {
  std::uint32_t max_examined = 0;
  std::uint64_t examined = 0;
  int cut_off = 0;
};
std::uint64_t lockstep(FreeblockConfig cfg, int n, std::uint64_t seed, int* planned, SearchTotals* search = nullptr) {
  HddModel base(hdd_preset("atlas10k")), free(hdd_preset("atlas10k"));
  FreeblockWanted wanted(free);
  wanted.want_all();
  FreeblockPlanner planner(free, cfg);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> block(0, free.capacity_bytes() / 4096 - 16);
  Nanos now_base{0}, now_free{0};
  std::uint64_t got = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t offset = block(rng) * 4096;
    const std::size_t bytes = 4096 * (1 + rng() % 4);
    const bool write = i % 3 == 2;
    const TimedCommand b{write ? IoKind::write : IoKind::read, offset, bytes, write, {}};
    TimedCommand cb = b;
    cb.start = now_base;
    now_base += base.service_time(cb);
    FreeblockSearchStats stats;
    auto r = planner.plan(free.head_position(), now_free, offset, bytes, wanted, &stats);
    if (search != nullptr) {
      search->max_examined = std::max(search->max_examined, stats.tracks_examined);
      search->examined += stats.tracks_examined;
      search->cut_off += stats.cut_off ? 1 : 0;
    }
    if (r) {
      ++*planned;
      REQUIRE(r->foreground_end <= now_base);
      now_free += free.service_time({IoKind::read, r->offset, r->bytes, false, now_free});
      got += wanted.take(r->offset, r->bytes);
      REQUIRE(got > 0);
      cb.start = now_free;
      now_free += free.service_time(cb);
      REQUIRE(now_free == r->foreground_end);
    } else {
      cb.start = now_free;
      now_free += free.service_time(cb);
    }
    REQUIRE(now_free == now_base);  // the foreground never waits for the background
  }
  return got;
}
}  // namespace

TEST_CASE("the wanted set counts sectors per track and takes each once", "[freeblock]") {
  HddModel m(hdd_preset("atlas10k"));
  FreeblockWanted w(m);
  const HddTrack t = m.track({10, 1});
  w.want(t.first_sector * kSector + 100, 10 * kSector);  // not aligned: covers 11 sectors
  CHECK(w.remaining() == 11);
  CHECK(w.on_track({10, 1}) == 11);
  CHECK(w.on_track({10, 0}) == 0);
  CHECK(w.take(t.first_sector * kSector, 4 * kSector) == 4);
  CHECK(w.take(t.first_sector * kSector, 4 * kSector) == 0);
  CHECK(w.on_track({10, 1}) == 7);
  CHECK(w.count(t.first_sector, t.first_sector + t.sectors) == 7);
  // Across a track boundary: both tracks counted.
  w.want((t.first_sector + t.sectors - 2) * kSector, 4 * kSector);
  CHECK(w.on_track({10, 2}) == 2);
  CHECK(w.remaining() == 7 + 2 + 2 - 0);  // the last two of track 1 were not wanted yet
  FreeblockWanted all(m);
  all.want_all();
  CHECK(all.remaining() == m.capacity_bytes() / kSector);
}

TEST_CASE("background reads never delay a foreground request (exact virtual time)", "[freeblock]") {
  int planned = 0;
  const std::uint64_t got = lockstep({}, 1500, 11, &planned);
  CHECK(planned > 1000);  // most requests have a gap worth filling
  CHECK(got > 1000 * 8);
  // With almost no margin it still never delays (the plan is checked against the model), and
  // fills more.
  int planned_tight = 0;
  const std::uint64_t tight = lockstep({.margin = 10us}, 1500, 11, &planned_tight);
  CHECK(tight > got);
  // Source and destination tracks only: less.
  int planned_two = 0;
  const std::uint64_t two = lockstep({.third_tracks = false}, 1500, 11, &planned_two);
  CHECK(two < got);
}

TEST_CASE("the search cut-off bounds the tracks examined and keeps every plan exact", "[freeblock]") {
  int planned = 0;
  SearchTotals unbounded;
  const std::uint64_t got = lockstep({}, 1500, 11, &planned, &unbounded);
  CHECK(unbounded.cut_off == 0);
  // A bound above anything the search needs changes nothing.
  int planned_high = 0;
  SearchTotals high;
  CHECK(lockstep({.max_tracks_examined = unbounded.max_examined}, 1500, 11, &planned_high, &high) == got);
  CHECK(high.cut_off == 0);
  CHECK(high.examined == unbounded.examined);
  // One track per plan: never more examined, some searches cut short, less read; lockstep's
  // REQUIREs hold (the foreground still completes at exactly the same virtual time).
  int planned_one = 0;
  SearchTotals one;
  const std::uint64_t got_one = lockstep({.max_tracks_examined = 1}, 1500, 11, &planned_one, &one);
  CHECK(one.max_examined == 1);
  CHECK(one.cut_off > 0);
  CHECK(one.examined < unbounded.examined);
  CHECK(got_one < got);
  CHECK(got_one > 0);
}

TEST_CASE("the planner takes the wanted sectors that pass before the foreground sector", "[freeblock]") {
  HddModel m(hdd_preset("atlas10k"));
  const HddTrack t = m.track({4000, 2});
  const Nanos sector_ns = m.geometry().rotation / t.sectors;
  // The heads on track T, just done with sector 0..7 at NOW.
  Nanos now{0};
  now += m.service_time({IoKind::read, t.first_sector * kSector, 8 * kSector, false, now});
  const std::uint32_t here = m.next_sector(t, now);
  // B: 4 KB on the same track, 200 sectors on (about 60 % of a rotation away).
  const std::uint32_t b_sector = (here + 200) % t.sectors;
  const std::uint64_t b = (t.first_sector + b_sector) * kSector;
  const Positioning alone = m.predict(m.head_position(), b, 4096, now);
  REQUIRE(alone.rotation > 190 * sector_ns);
  FreeblockPlanner planner(m);
  SECTION("wanted sectors that pass in time are read, exactly those") {
    FreeblockWanted w(m);
    const std::uint32_t first = (here + 40) % t.sectors;
    std::uint32_t want_n = 30;
    if (first + want_n > t.sectors) want_n = t.sectors - first;  // keep one run
    w.want((t.first_sector + first) * kSector, want_n * kSector);
    auto r = planner.plan(m.head_position(), now, b, 4096, w);
    REQUIRE(r);
    CHECK(r->offset == (t.first_sector + first) * kSector);
    CHECK(r->bytes == want_n * kSector);
    CHECK(r->wanted_sectors == want_n);
    CHECK(r->track == HeadPosition{4000, 2});
    CHECK(r->extra_seek == 0ns);
    CHECK(r->opportunity == alone.rotation);
    Nanos t1 = now + m.service_time({IoKind::read, r->offset, r->bytes, false, now});
    t1 += m.service_time({IoKind::read, b, 4096, false, t1});
    CHECK(t1 == now + alone.total());
  }
  SECTION("sectors inside the margin before B, or after it, are not") {
    FreeblockWanted w(m);
    // The 0.3 ms margin + the 0.1 ms overhead of B's command: ~23 sectors before B are off limits.
    w.want((t.first_sector + (b_sector + t.sectors - 10) % t.sectors) * kSector, 5 * kSector);
    w.want((t.first_sector + (b_sector + 20) % t.sectors) * kSector, 5 * kSector);
    CHECK_FALSE(planner.plan(m.head_position(), now, b, 4096, w));
  }
  SECTION("a third track is used when it alone has what is wanted, and B is still on time") {
    FreeblockWanted w(m);
    const HddTrack near = m.track({4001, 0});
    w.want(near.first_sector * kSector, std::uint64_t{near.sectors} * kSector);
    FreeblockSearchStats stats;
    auto r = planner.plan(m.head_position(), now, b, 4096, w, &stats);
    REQUIRE(r);
    CHECK(r->track == HeadPosition{4001, 0});
    CHECK(r->extra_seek > 0ns);
    CHECK(r->wanted_sectors > 20);
    CHECK(stats.tracks_examined >= 1);
    Nanos t1 = now + m.service_time({IoKind::read, r->offset, r->bytes, false, now});
    t1 += m.service_time({IoKind::read, b, 4096, false, t1});
    CHECK(t1 <= now + alone.total());
    CHECK(t1 == r->foreground_end);
  }
  SECTION("nothing wanted, nothing planned") {
    FreeblockWanted w(m);
    CHECK_FALSE(planner.plan(m.head_position(), now, b, 4096, w));
  }
}
