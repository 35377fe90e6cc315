// The simulated hard disk's timing model against the numbers it is calibrated from (thesis
// Tables 3.1–3.3 and §4.1.1, seed 001 Appendix A), and the properties the scheduler relies on:
// predictions equal charges, read-ahead makes chunked sequential reads as fast as one big read,
// JIT-seek leaves ~the offset of rotation, write-back causes external waiting, seeds repeat.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;
using Catch::Approx;

namespace {
double ms(Nanos t) { return static_cast<double>(t.count()) / 1e6; }
constexpr std::uint64_t kSector = 512;

// Sectors per track at OFFSET, from the public geometry (zones in cylinders, outer first).
std::uint32_t spt_at(const HddModel& m, std::uint64_t offset) {
  std::uint32_t cyl = m.cylinder_of(offset);
  for (const auto& z : m.geometry().zones) {
    if (cyl < z.cylinders) return z.sectors_per_track;
    cyl -= z.cylinders;
  }
  return m.geometry().zones.back().sectors_per_track;
}

// The sector's index within its track.
std::uint64_t sector_in_track(const HddModel& m, std::uint64_t offset) {
  return (offset - m.offset_of_cylinder(m.cylinder_of(offset))) / kSector % spt_at(m, offset);
}

Nanos distance_seek(const HddModel& m, std::uint64_t offset) {
  const auto from = static_cast<std::int64_t>(m.head_cylinder()), to = static_cast<std::int64_t>(m.cylinder_of(offset));
  return m.seek_time(static_cast<std::uint32_t>(std::abs(to - from)));
}
}  // namespace

TEST_CASE("presets match their sources: capacity, rotation, zone rates", "[hdd]") {
  HddModel st18(hdd_preset("st318437lw"));
  CHECK(static_cast<double>(st18.capacity_bytes()) == Approx(18.4e9).epsilon(0.05));
  CHECK(st18.geometry().rotation == Nanos(8'305'830));
  CHECK(st18.cylinders() == 29851);
  // §4.3.1: sequential 24.3–41.7 MB/s.
  CHECK(st18.media_rate(0) / 1e6 == Approx(41.7).epsilon(0.10));
  CHECK(st18.media_rate(st18.capacity_bytes() - kSector) / 1e6 == Approx(24.3).epsilon(0.10));

  HddModel st9(hdd_preset("st39102lw"));
  CHECK(static_cast<double>(st9.capacity_bytes()) == Approx(9.1e9).epsilon(0.05));
  CHECK(st9.geometry().rotation == Nanos(5'972'560));
  CHECK(st9.seek_time(st9.cylinders() - 1) < 2 * st9.geometry().rotation);  // "max seek < 2 × T_rot"

  HddModel wd(hdd_preset("wd400bb"));
  CHECK(static_cast<double>(wd.capacity_bytes()) == Approx(40e9).epsilon(0.05));
  CHECK(wd.media_rate(0) / 1e6 == Approx(31).epsilon(0.05));
  CHECK(wd.media_rate(wd.capacity_bytes() - kSector) / 1e6 == Approx(21).epsilon(0.05));

  // Zone 1 (18.85 MB/s measured, Table 3.2): sustained rate with Table 3.4's switch steps.
  CHECK(st9.media_rate(0) / 1e6 == Approx(18.85).epsilon(0.05));

  HddModel hp(hdd_preset("hp_c2247"));
  // Table A.2 in whole cylinders: 2,132,208 sectors, 3.8 % above the 2,054,864 usable ones
  // (the 914 reserved and spare tracks are not modelled; see the preset).
  CHECK(hp.capacity_bytes() / kSector == 2'132'208);
  CHECK(hp.cylinders() == 2051);
  CHECK(static_cast<double>(hp.capacity_bytes()) / kSector == Approx(2'054'864).epsilon(0.04));
  // Within-track rates 4.42 → 2.58 MB/s (seed 001 §2).
  const double hp_rot_s = static_cast<double>(hp.geometry().rotation.count()) / 1e9;
  CHECK(hp.geometry().zones.front().sectors_per_track * kSector / hp_rot_s / 1e6 == Approx(4.42).epsilon(0.01));
  CHECK(hp.geometry().zones.back().sectors_per_track * kSector / hp_rot_s / 1e6 == Approx(2.58).epsilon(0.01));
  CHECK(ms(hp.seek_time(300)) == Approx(3.81 + 0.33 * std::sqrt(300.0)).epsilon(0.01));
  CHECK(ms(hp.seek_time(1000)) == Approx(7.75 + 0.0059 * 1000).epsilon(0.01));

  CHECK_THROWS_AS(hdd_preset("floppy"), std::invalid_argument);
  CHECK(hdd_preset_names().size() == 6);
}

TEST_CASE("the ST318437LW seek curve hits the thesis example points", "[hdd]") {
  HddModel m(hdd_preset("st318437lw"));
  CHECK(m.seek_time(0) == Nanos(0));
  CHECK(ms(m.seek_time(1)) == Approx(0.98).epsilon(0.05));    // γ(1), Table 3.3
  CHECK(ms(m.seek_time(10'000)) == Approx(9).epsilon(0.10));  // §4.1.1
  CHECK(ms(m.seek_time(20'000)) == Approx(14).epsilon(0.10));
  CHECK(ms(m.seek_time(m.cylinders() - 1)) <= 20.0);
  // Monotone around the knee.
  CHECK(m.seek_time(1999) <= m.seek_time(2000));
  CHECK(m.seek_time(2000) <= m.seek_time(2001));
}

TEST_CASE("a random read costs exactly what the model predicts for it", "[hdd]") {
  HddModel m(hdd_preset("st318437lw"));
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::uint64_t> pos(0, m.capacity_bytes() / kSector - 1000);
  Nanos now{0};
  for (int i = 0; i < 500; ++i) {
    const std::uint64_t off = pos(rng) * kSector;
    const std::size_t bytes = 4096;
    const Nanos predicted = m.predicted_access(off, now);
    const Nanos rot = m.predicted_rotational_delay(off, now);
    CHECK(rot < m.geometry().rotation);
    CHECK(predicted == m.geometry().command_overhead + distance_seek(m, off) + rot);
    const std::uint32_t spt = spt_at(m, off);
    const bool one_track = sector_in_track(m, off) + bytes / kSector <= spt;
    const Nanos charged = m.service_time({IoKind::read, off, bytes, false, now});
    // Access exactly as predicted, plus the media transfer: 8 of SPT sectors of a rotation
    // (and a head or cylinder switch if the read crosses a track boundary).
    const auto rot_ns = static_cast<double>(m.geometry().rotation.count());
    const Nanos transfer(static_cast<std::int64_t>(rot_ns * static_cast<double>(bytes / kSector) / spt));
    if (one_track) {
      CHECK(charged == predicted + transfer);
    } else {
      CHECK(charged > predicted + transfer);
      CHECK(charged < predicted + transfer + m.geometry().cylinder_switch + 1us);
    }
    now += charged + Nanos(static_cast<std::int64_t>(rng() % 3'000'000));
    if (i % 10 == 0) now += m.service_time({IoKind::seek, pos(rng) * kSector, 0, false, now});  // move the arm
  }
}

TEST_CASE("read-ahead: a sequential read in chunks is as fast as one big read; random chunks are not", "[hdd]") {
  const std::size_t total = 2'000'000 / kSector * kSector, chunk = 50 * kSector;
  HddModel big(hdd_preset("st318437lw")), chunked(hdd_preset("st318437lw")), scattered(hdd_preset("st318437lw"));
  const std::uint64_t at = 100'000 * kSector;
  const Nanos one = big.service_time({IoKind::read, at, total, false, Nanos(0)});
  Nanos t{0};
  for (std::uint64_t off = 0; off < total; off += chunk) {
    t += chunked.service_time({IoKind::read, at + off, chunk, false, t});
  }
  INFO("one read " << ms(one) << " ms, chunked " << ms(t) << " ms");
  CHECK(ms(t) == Approx(ms(one)).epsilon(0.05));
  Nanos r{0};
  for (std::uint64_t i = 0; i < total / chunk; ++i) {
    const std::uint64_t off = (i * 7919 % 20000) * 1'000'000 * kSector % (scattered.capacity_bytes() / 2);
    r += scattered.service_time({IoKind::read, off, chunk, false, r});
  }
  CHECK(r > 5 * t);
}

TEST_CASE("JIT-seek: starting late by the predicted delay minus 1 ms leaves ~1 ms of rotation", "[hdd]") {
  HddModel m(hdd_preset("st318437lw"));
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<std::uint64_t> pos(0, m.capacity_bytes() / kSector - 100);
  Nanos now{0};
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t off = pos(rng) * kSector;
    const Nanos delay = m.predicted_rotational_delay(off, now);
    if (delay > 1ms) {
      const Nanos late = now + delay - 1ms;
      CHECK(ms(m.predicted_rotational_delay(off, late)) == Approx(1.0).margin(0.01));
      now = late;
    }
    now += m.service_time({IoKind::read, off, kSector, false, now});
  }
}

TEST_CASE("write-back: a buffered write returns early and the next read waits for it; FUA waits itself", "[hdd]") {
  HddModel m(hdd_preset("st318437lw"));
  const std::uint64_t far = 25'000ull * 2 * 500 * kSector;  // another part of the disk
  const Nanos w = m.service_time({IoKind::write, 0, 32 * 1024, false, Nanos(0)});
  CHECK(w < 1ms);  // into the buffer
  const Nanos r = m.service_time({IoKind::read, far, kSector, false, w});
  HddModel idle(hdd_preset("st318437lw"));
  const Nanos r_alone = idle.service_time({IoKind::read, far, kSector, false, w});
  CHECK(r > r_alone);  // external waiting: the write-back went first

  HddModel fua(hdd_preset("st318437lw"));
  const Nanos d = fua.service_time({IoKind::write, 0, 32 * 1024, true, Nanos(0)});
  CHECK(d > w);
  const Nanos r2 = fua.service_time({IoKind::read, far, kSector, false, d});
  HddModel idle2(hdd_preset("st318437lw"));
  idle2.service_time({IoKind::seek, 0, 0, false, Nanos(0)});                // arm where the FUA write left it
  CHECK(r2 == idle2.service_time({IoKind::read, far, kSector, false, d}));  // nothing left to wait for
}

TEST_CASE("flush waits for the write-back; an idle flush costs the overhead", "[hdd]") {
  HddModel m(hdd_preset("st318437lw"));
  const Nanos overhead = m.geometry().command_overhead;
  CHECK(m.service_time({IoKind::flush, 0, 0, false, Nanos(0)}) == overhead);
  const std::uint64_t far = 20'000ull * 2 * 600 * kSector;
  const Nanos w = m.service_time({IoKind::write, far, 64 * 1024, false, 1s});
  const Nanos f = m.service_time({IoKind::flush, 0, 0, false, 1s + w});
  CHECK(f > overhead + 5ms);  // the seek to cylinder ~20,000 and the media write came first
  CHECK(m.head_cylinder() == m.cylinder_of(far + 64 * 1024 - 1));
  CHECK(m.service_time({IoKind::flush, 0, 0, false, 1s + w + f}) == overhead);  // nothing left
}

TEST_CASE("a sequential write during the write-back joins it: no new seek or rotation", "[hdd]") {
  const std::uint64_t at = 5'000ull * 2 * 700 * kSector;
  const std::size_t half = 50 * 1024;
  HddModel two(hdd_preset("st318437lw")), one(hdd_preset("st318437lw"));
  const Nanos w1 = two.service_time({IoKind::write, at, half, false, Nanos(0)});
  const Nanos w2 = two.service_time({IoKind::write, at + half, half, false, w1});
  CHECK(w2 < 1ms);  // buffered too: 2 × 50 KB fit the 204-sector (104 KB) buffer
  const Nanos f2 = two.service_time({IoKind::flush, 0, 0, false, w1 + w2});
  const Nanos w = one.service_time({IoKind::write, at, 2 * half, false, Nanos(0)});
  const Nanos f = one.service_time({IoKind::flush, 0, 0, false, w});
  INFO("two writes + flush " << ms(w1 + w2 + f2) << " ms, one write + flush " << ms(w + f) << " ms");
  // Same media work; only the second command's overhead differs (a lost rotation would be 8 ms).
  CHECK(w1 + w2 + f2 - (w + f) < 300us);
  CHECK(w + f - (w1 + w2 + f2) < 300us);
}

TEST_CASE("a write larger than the buffer completes when a buffer's worth is left", "[hdd]") {
  HddModel m(hdd_preset("st318437lw")), fua(hdd_preset("st318437lw"));
  const std::size_t big = 1024 * 1024;  // ~10 buffers
  const Nanos w = m.service_time({IoKind::write, 0, big, false, Nanos(0)});
  const Nanos f = m.service_time({IoKind::flush, 0, 0, false, w});
  const Nanos d = fua.service_time({IoKind::write, 0, big, true, Nanos(0)});
  CHECK(w < d);
  CHECK(w + f > d);  // the rest reached the media after completion
  // 204 sectors at ~42 MB/s ≈ 2.5 ms were left.
  CHECK(ms(d - w) == Approx(204.0 * kSector / m.media_rate(0) * 1e3).epsilon(0.05));
}

TEST_CASE("a SEEK costs overhead plus the seek curve and moves the arm", "[hdd]") {
  HddModel m(hdd_preset("st318437lw"));
  const std::uint64_t target = m.offset_of_cylinder(12'345);
  CHECK(m.cylinder_of(target) == 12'345);
  CHECK(m.cylinder_of(target - 1) == 12'344);
  const Nanos s = m.service_time({IoKind::seek, target + 77 * kSector, 0, false, 3ms});
  CHECK(s == m.geometry().command_overhead + m.seek_time(12'345));
  CHECK(m.head_cylinder() == 12'345);
  // Now the access to that cylinder needs no seek, only rotation.
  CHECK(m.predicted_access(target, 3ms + s) ==
        m.geometry().command_overhead + m.predicted_rotational_delay(target, 3ms + s));
}

TEST_CASE("jitter is seeded: the same seed repeats the same times, another seed does not", "[hdd]") {
  auto run = [](std::uint64_t seed) {
    auto g = hdd_preset("wd400bb");
    g.jitter = 40us;
    g.seed = seed;
    HddModel m(g);
    std::vector<Nanos::rep> out;
    Nanos t{0};
    for (int i = 0; i < 100; ++i) {
      const Nanos d = m.service_time({IoKind::read, static_cast<std::uint64_t>(i) * 77'777 * kSector, 4096, false, t});
      out.push_back(d.count());
      t += d;
    }
    return out;
  };
  CHECK(run(1) == run(1));
  CHECK(run(1) != run(2));
}

TEST_CASE("a timing-only SimulatedDisk runs on the model in virtual time", "[hdd]") {
  VirtualClock clock;
  auto model = std::make_unique<HddModel>(hdd_preset("st318437lw"));
  HddModel* m = model.get();
  const auto cap = m->capacity_bytes() / 4096 * 4096;
  const std::uint64_t mid = cap / 2 / 4096 * 4096;
  SimulatedDisk disk(clock, {.size_bytes = cap, .block_bytes = 4096, .max_in_flight = 8, .store_data = false},
                     std::move(model));
  HddModel twin(hdd_preset("st318437lw"));  // the same model, driven directly
  AlignedBuffer buf(64 * 1024);
  const Nanos predicted = m->predicted_access(mid, Nanos(0));
  REQUIRE(read_sync(disk, mid, buf.span()).has_value());
  const Nanos read_time = twin.service_time({IoKind::read, mid, 64 * 1024, false, Nanos(0)});
  CHECK(clock.now() == read_time);
  CHECK(clock.now() > predicted);
  CHECK(clock.now() < predicted + 3ms);  // plus 64 KiB of transfer at ~30 MB/s
  REQUIRE(disk.submit_seek(0, [](vigil::Result<std::size_t>) {}).has_value());
  disk.poll(1);
  CHECK(clock.now() == read_time + twin.service_time({IoKind::seek, 0, 0, false, read_time}));
  CHECK(m->head_cylinder() == 0);
  CHECK(disk.counters().seeks == 1);
  CHECK(disk.counters().reads == 1);
}
