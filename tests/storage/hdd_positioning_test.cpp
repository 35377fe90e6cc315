// The simulated hard disk's positioning prediction (docs/freeblock.md, "Predicting the gap"):
// HddModel::predict splits a media access into overhead, seek or head switch, rotational latency
// and transfer, and its total is exactly what service_time charges, in virtual time.
#include <catch2/catch_test_macros.hpp>

#include <random>

#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

TEST_CASE("predict's components add up to the charged service time, read or durable write", "[hdd][freeblock]") {
  HddModel m(hdd_preset("atlas10k"));
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::uint64_t> block(0, m.capacity_bytes() / 4096 - 16);
  Nanos now{0};
  int seeks = 0, rotations = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t offset = block(rng) * 4096;
    const std::size_t bytes = 4096 * (1 + rng() % 4);
    const bool write = i % 3 == 2;
    const Positioning p = m.predict(m.head_position(), offset, bytes, now);
    CHECK(p.overhead == m.geometry().command_overhead);
    CHECK(p.rotation < m.geometry().rotation);
    CHECK((p.seek == 0ns || p.head_switch == 0ns));  // one or the other
    seeks += p.seek > 0ns ? 1 : 0;
    rotations += p.rotation > 0ns ? 1 : 0;
    const Nanos t = m.service_time({write ? IoKind::write : IoKind::read, offset, bytes, write, now});
    REQUIRE(t == p.total());
    now += t;
    CHECK(m.head_position() == m.position_of(offset + bytes - 1));
  }
  CHECK(seeks > 1990);
  CHECK(rotations > 1990);
}

TEST_CASE("another track of the arm's cylinder costs a head switch, the same track nothing", "[hdd][freeblock]") {
  HddModel m(hdd_preset("atlas10k"));
  const HddTrack t0 = m.track({5000, 0});
  const HddTrack t3 = m.track({5000, 3});
  CHECK(t3.sectors == t0.sectors);
  CHECK(t3.first_sector == t0.first_sector + 3 * t0.sectors);
  CHECK(m.position_of(t3.first_sector * 512) == HeadPosition{5000, 3});
  Nanos now{0};
  now += m.service_time({IoKind::read, t0.first_sector * 512, 4096, false, now});
  REQUIRE(m.head_position() == HeadPosition{5000, 0});
  // Same cylinder, head 3: a head switch, no seek.
  const std::uint64_t there = (t3.first_sector + 100) * 512;
  const Positioning p = m.predict(m.head_position(), there, 4096, now);
  CHECK(p.seek == 0ns);
  CHECK(p.head_switch == 800us);
  CHECK(m.service_time({IoKind::read, there, 4096, false, now}) == p.total());
  now += p.total();
  // Same track, further on: neither.
  const std::uint64_t on = (t3.first_sector + 150) * 512;
  const Positioning q = m.predict(m.head_position(), on, 4096, now);
  CHECK(q.seek == 0ns);
  CHECK(q.head_switch == 0ns);
  CHECK(m.service_time({IoKind::read, on, 4096, false, now}) == q.total());
}

TEST_CASE("next_sector and sector_arrival follow the platter", "[hdd][freeblock]") {
  HddModel m(hdd_preset("atlas10k"));
  const HddTrack t = m.track({1234, 2});
  const Nanos sector_ns = m.geometry().rotation / t.sectors;
  for (Nanos at : {0ns, 1'234'567ns, 77'777'777ns, 5'000'001ns}) {
    const std::uint32_t s = m.next_sector(t, at);
    const Nanos arrival = m.sector_arrival(t, s, at);
    CHECK(arrival >= at);
    CHECK(arrival - at <= sector_ns + 1ns);  // the very next sector to begin
    // The one after begins one sector later.
    CHECK(m.sector_arrival(t, (s + 1) % t.sectors, at) - arrival <= sector_ns + 2ns);
    // Reading sector S from this track starts exactly then.
    const Positioning p = m.predict({1234, 2}, (t.first_sector + s) * 512, 512, at - m.geometry().command_overhead);
    CHECK(p.rotation == arrival - at);
  }
}
