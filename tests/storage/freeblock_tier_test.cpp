// Tiers 2 and 3 of the background broker in the cycle scheduler (docs/freeblock.md, "Tiers 2 and
// 3 in the cycle scheduler"): on the simulated Atlas 10K, playback streams read scattered chunks
// every cycle and an any-order background task wants a region of the disk. Part of the region is
// read just ahead of the streams' reads (tier 2, charged to the background budget) and inside the
// rotational latency before them (tier 3, for free): no byte reaches the task twice, no
// foreground command completes later than its plan said, no stream misses a deadline, and the
// task gets more per cycle than tier 1 (the cycles' slack) alone gives it; a small task gets every
// byte exactly once. Deterministic, virtual time.
#include <catch2/catch_test_macros.hpp>

#include <map>
#include <memory>
#include <vector>

#include "storage/background_broker.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/freeblock_tier.hpp"
#include "storage/hdd_model.hpp"
#include "storage/simulated_disk.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kBlock = 4096;
constexpr std::uint64_t MiB = 1 << 20;

// A playback stream: each cycle one read of BYTES somewhere else in its region (a viewer scrubbing).
class ScrubbingViewer final : public CycleStream {
 public:
  ScrubbingViewer(std::uint64_t offset, std::uint64_t region, std::size_t bytes, std::uint64_t seed)
      : offset_(offset), region_(region), buf_(bytes), state_(seed) {}
  StreamIo prepare(std::uint64_t) override {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t at = offset_ + (state_ >> 20) % (region_ - buf_.size()) / kBlock * kBlock;
    return {.write = false, .pieces = {{at, buf_.span()}}};
  }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_, region_;
  AlignedBuffer buf_;
  std::uint64_t state_;
};

enum class Tiers { one, one_two, one_three, all };

struct Run {
  std::uint64_t misses = 0, free_reads = 0, free_late = 0, tier1_bytes = 0, cycles = 0;
  std::uint64_t free_bytes = 0;  // what tiers 2 and 3 handed to the task
  std::uint64_t prepend_reads = 0, prepend_bytes = 0;
  std::uint64_t delivered = 0, overlaps = 0;
  bool done = false;
};

// VIEWERS streams of 256 KiB a cycle over the disk's first 2 GiB; the task wants WANTED bytes from
// AT, with TIERS. Runs until the task is done or for CYCLES.
Run run(Tiers tiers, int viewers, std::uint64_t at, std::uint64_t wanted, std::uint64_t cycles) {
  const bool tier = tiers != Tiers::one;
  SimulatedHdd hdd(hdd_preset("atlas10k"), kBlock);
  const LinearServiceModel service(Nanos(25ms), 20e6);  // conservative: no slack test fails on the model
  FreeblockTier free_tier(*hdd.model, kBlock,
                          {.rotational = tiers == Tiers::one_three || tiers == Tiers::all,
                           .prepend_max_bytes = tiers == Tiers::one_two || tiers == Tiers::all ? std::size_t{128 * 1024}
                                                                                               : std::size_t{0}});
  Mechanics mech{.model = hdd.model, .disk = hdd.disk.get()};
  if (tier) mech.freeblock = &free_tier;
  CycleScheduler sched(
      *hdd.disk, hdd.clock, service,
      {.cycle = 1s, .r_rt = 0.9, .chunk_bytes = 128 * 1024, .depth = 1, .background_budget = Nanos(20ms)}, &hdd.clock,
      mech);
  std::vector<std::unique_ptr<ScrubbingViewer>> streams;
  for (int i = 0; i < viewers; ++i) {
    streams.push_back(std::make_unique<ScrubbingViewer>(0, 2048 * MiB, 256 * 1024, 17 + static_cast<std::uint64_t>(i)));
    sched.add_stream(static_cast<std::uint64_t>(i) + 1, *streams.back(), hdd.clock.now());
  }
  BackgroundBroker broker(sched, 64 * 1024, kBlock, tier ? &free_tier : nullptr);
  Run out;
  std::map<std::uint64_t, std::uint64_t> got;  // start → end of every piece delivered
  const BrokerExtent extent{at, wanted};
  auto id = broker.register_read(
      {extent},
      [&](std::span<const std::byte> data, std::uint64_t offset) {
        auto next = got.lower_bound(offset);
        if (next != got.end() && next->first < offset + data.size()) ++out.overlaps;
        if (next != got.begin() && std::prev(next)->second > offset) ++out.overlaps;
        got[offset] = offset + data.size();
        out.delivered += data.size();
      },
      [&](vigil::Result<void> r) { out.done = static_cast<bool>(r); }, false, BrokerOrder::any_order);
  REQUIRE(id);
  while (!out.done && sched.totals().cycles < cycles) sched.run_cycle();
  out.misses = sched.totals().misses;
  out.free_reads = sched.totals().free_reads;
  out.free_late = sched.totals().free_late;
  out.prepend_reads = sched.totals().prepend_reads;
  out.prepend_bytes = sched.totals().prepend_bytes;
  out.tier1_bytes = broker.bytes_read();
  out.free_bytes = broker.free_bytes();
  out.cycles = sched.totals().cycles;
  // Done: every byte of the extent, in pieces that neither overlap nor leave a hole.
  std::uint64_t end = extent.offset;
  for (const auto& [from, to] : got) {
    if (from != end) break;
    end = to;
  }
  if (end != extent.offset + extent.bytes) out.done = false;
  return out;
}

}  // namespace

TEST_CASE("tiers 2 and 3 read wanted blocks beside the streams' reads, tier 3 for free", "[broker][freeblock]") {
  // A scrubber over everything the viewers read: 60 cycles of it, with each set of tiers.
  const Run one = run(Tiers::one, 20, 0, 2048 * MiB, 60);
  const Run two = run(Tiers::one_two, 20, 0, 2048 * MiB, 60);
  const Run three = run(Tiers::one_three, 20, 0, 2048 * MiB, 60);
  const Run all = run(Tiers::all, 20, 0, 2048 * MiB, 60);
  for (const Run* r : {&one, &two, &three, &all}) {
    INFO("delivered " << r->delivered << ": " << r->free_reads << " free reads, " << r->prepend_reads << " prepended ("
                      << r->prepend_bytes << " bytes), tiers 2 and 3 " << r->free_bytes << " bytes, tier 1 "
                      << r->tier1_bytes);
    CHECK(r->cycles == 60);
    CHECK(r->overlaps == 0);
    CHECK(r->misses == 0);
    CHECK(r->free_late == 0);  // tier 3's plan is exact on the model: no foreground command is later
    // Tier 1 reads whole blocks and hands over only what the other tiers have not delivered.
    CHECK(r->free_bytes >= r->prepend_bytes);
    CHECK(r->delivered >= r->free_bytes);
    CHECK(r->delivered <= r->free_bytes + r->tier1_bytes);
  }
  CHECK(one.free_reads + one.prepend_reads == 0);
  CHECK(two.free_reads == 0);
  CHECK(two.prepend_reads > 60);  // more than one a cycle
  CHECK(three.prepend_reads == 0);
  CHECK(three.free_reads > 60);
  CHECK(all.free_reads > 60);
  CHECK(two.delivered > one.delivered);
  CHECK(three.delivered > one.delivered);
  CHECK(all.delivered > three.delivered);

  // A small task, near the viewers' reads: every byte exactly once, and done.
  const Run small = run(Tiers::all, 20, 512 * MiB, 4 * MiB, 400);
  CHECK(small.done);
  CHECK(small.delivered == 4 * MiB);
  CHECK(small.overlaps == 0);
  CHECK(small.misses == 0);
}

TEST_CASE("an aborted any-order task is no longer wanted by tier 3; in-order tasks never get free pieces",
          "[broker][freeblock]") {
  SimulatedHdd hdd(hdd_preset("atlas10k"), kBlock);
  const LinearServiceModel service(Nanos(25ms), 20e6);
  FreeblockTier free_tier(*hdd.model, kBlock, {.rotational = true, .prepend_max_bytes = 0});
  CycleScheduler sched(*hdd.disk, hdd.clock, service,
                       {.cycle = 1s, .r_rt = 0.9, .chunk_bytes = 128 * 1024, .depth = 1, .background_budget = Nanos(0)},
                       &hdd.clock, {.model = hdd.model, .disk = hdd.disk.get(), .freeblock = &free_tier});
  std::vector<std::unique_ptr<ScrubbingViewer>> streams;
  for (int i = 0; i < 10; ++i) {
    streams.push_back(std::make_unique<ScrubbingViewer>(0, 2048 * MiB, 256 * 1024, 5 + static_cast<std::uint64_t>(i)));
    sched.add_stream(static_cast<std::uint64_t>(i) + 1, *streams.back(), hdd.clock.now());
  }
  BackgroundBroker broker(sched, 64 * 1024, kBlock, &free_tier);
  std::uint64_t in_order_pieces = 0;
  // Budget 0: tier 1 never runs, so only tier 3 could serve either task.
  auto ordered = broker.register_read(
      {{2048 * MiB, 8 * MiB}}, [&](std::span<const std::byte>, std::uint64_t) { ++in_order_pieces; },
      [](vigil::Result<void>) {});
  REQUIRE(ordered);
  auto any = broker.register_read(
      {{0, 2048 * MiB}}, [](std::span<const std::byte>, std::uint64_t) {}, [](vigil::Result<void>) {}, false,
      BrokerOrder::any_order);
  REQUIRE(any);
  CHECK(free_tier.wanted_sectors() == 2048 * MiB / hdd.model->geometry().sector_bytes);
  for (int c = 0; c < 5; ++c) sched.run_cycle();
  CHECK(in_order_pieces == 0);  // in-order tasks are tier 1's alone
  CHECK(broker.free_bytes() > 0);
  CHECK(broker.abort(*any));
  CHECK(free_tier.wanted_sectors() == 0);
  const auto reads = sched.totals().free_reads;
  for (int c = 0; c < 3; ++c) sched.run_cycle();
  CHECK(sched.totals().free_reads == reads);  // nothing wanted: nothing planned
  CHECK(sched.totals().misses == 0);
}
