// The background broker (seed 003's interface, tier 1: cycle slack) on a simulated disk with the
// cycle scheduler and a virtual clock: every block once and in order, abort and promote, and the
// streams beside it never miss a deadline. Deterministic, no sleeps.
#include <catch2/catch_test_macros.hpp>

#include <map>

#include "storage/background_broker.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/simulated_disk.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {

constexpr double kRate = 200e6;  // bytes/s of the flat disk
constexpr std::uint64_t MiB = 1 << 20;

class SyntheticStream final : public CycleStream {
 public:
  SyntheticStream(std::uint64_t offset, std::size_t bytes) : offset_(offset), buf_(bytes) {}
  StreamIo prepare(std::uint64_t) override { return {.write = true, .pieces = {{offset_, buf_.span()}}}; }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_;
  AlignedBuffer buf_;
};

struct Rig {
  explicit Rig(SchedulerConfig cfg, std::uint64_t size_bytes = 64ull << 30, bool store_data = false)
      : disk(clock, {.size_bytes = size_bytes, .block_bytes = 4096, .max_in_flight = 8, .store_data = store_data},
             std::make_unique<FixedTiming>(100us, kRate / 1e9)),
        model(Nanos(2ms), kRate),
        sched(disk, clock, model, cfg, &clock),
        broker(sched, 1 * MiB, 4096) {}
  VirtualClock clock;
  SimulatedDisk disk;
  LinearServiceModel model;
  CycleScheduler sched;
  BackgroundBroker broker;
  std::vector<std::unique_ptr<SyntheticStream>> streams;

  // N streams of BYTES per cycle, scattered over the first SPAN bytes.
  void add_streams(int n, std::size_t bytes, std::uint64_t span) {
    for (int i = 0; i < n; ++i) {
      const auto id = streams.size() + 1;
      const std::uint64_t offset = (id * 7919 % 97) * (span / 128) / 4096 * 4096;
      streams.push_back(std::make_unique<SyntheticStream>(offset, bytes));
      sched.add_stream(id, *streams.back(), clock.now());
    }
  }
};

// The offsets a task over EXTENTS must deliver, block by block (1 MiB blocks).
std::vector<std::uint64_t> expected_blocks(const std::vector<BrokerExtent>& extents) {
  std::vector<std::uint64_t> out;
  for (const auto& e : extents) {
    for (std::uint64_t at = 0; at < e.bytes; at += MiB) out.push_back(e.offset + at);
  }
  return out;
}

struct Seen {
  std::vector<std::uint64_t> offsets;
  std::uint64_t bytes = 0;
  int done = 0;
  bool ok = false;
};

}  // namespace

TEST_CASE("every block of every task is delivered once and in order; the streams never miss", "[broker][storage]") {
  Rig rig({.chunk_bytes = 1 * MiB, .background_budget = 500ms});
  rig.add_streams(16, 10 * MiB, 32ull << 30);  // 168 MB of a 200 MB/s cycle: 84 % admitted
  const std::vector<std::vector<BrokerExtent>> tasks = {{{40ull << 30, 3 * MiB}, {41ull << 30, MiB + 512 * 1024}},
                                                        {{50ull << 30, 8 * MiB}},
                                                        {{2ull << 30, 64 * 1024},
                                                         {60ull << 30, 5 * MiB},
                                                         {61ull << 30, 4096}}};
  std::uint64_t rounds = 0;
  std::map<std::uint64_t, Seen> seen;  // by round × task
  // Each finished task is registered again: background work is always waiting for slack.
  std::function<void(std::size_t)> start = [&](std::size_t t) {
    const std::uint64_t key = rounds++ * 10 + t;
    auto id = rig.broker.register_read(
        tasks[t],
        [&seen, key](std::span<const std::byte> data, std::uint64_t offset) {
          seen[key].offsets.push_back(offset);
          seen[key].bytes += data.size();
        },
        [&, key, t](vigil::Result<void> r) {
          seen[key].done++;
          seen[key].ok = r.has_value();
          if (rounds < 300) start(t);
        });
    REQUIRE(id.has_value());
  };
  for (std::size_t t = 0; t < tasks.size(); ++t) start(t);
  std::uint32_t bg_chunks = 0;
  rig.sched.on_cycle = [&](const CycleReport& r) { bg_chunks += r.background_chunks; };
  for (int i = 0; i < 3000; ++i) rig.sched.run_cycle();

  CHECK(rig.sched.totals().misses == 0);
  CHECK(bg_chunks > 0);
  std::size_t finished = 0;
  for (const auto& [key, s] : seen) {
    const auto& extents = tasks[key % 10];
    if (s.done == 0) continue;  // counted below
    ++finished;
    CHECK(s.done == 1);
    CHECK(s.ok);
    CHECK(s.offsets == expected_blocks(extents));
    std::uint64_t want = 0;
    for (const auto& e : extents) want += e.bytes;
    CHECK(s.bytes == want);
  }
  CHECK(rounds == 300);
  CHECK(finished == rounds);  // slack enough for all of them in these cycles
  CHECK(rig.broker.running() == 0);
}

TEST_CASE("blocks carry the bytes on the device at their offset", "[broker][storage]") {
  Rig rig({.chunk_bytes = 256 * 1024, .background_budget = 500ms}, 64 * MiB, /*store_data=*/true);
  AlignedBuffer pattern(6 * MiB);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern.span()[i] = static_cast<std::byte>(i * 131 % 251);
  REQUIRE(write_sync(rig.disk, 16 * MiB, pattern.span(), true).has_value());
  rig.add_streams(4, 2 * MiB, 16 * MiB);
  std::vector<std::byte> got;
  bool done = false;
  REQUIRE(
      rig.broker
          .register_read(
              {{16 * MiB, 2 * MiB + 8192}, {19 * MiB, 3 * MiB}},
              [&](std::span<const std::byte> data, std::uint64_t) { got.insert(got.end(), data.begin(), data.end()); },
              [&](vigil::Result<void> r) { done = r.has_value(); })
          .has_value());
  for (int i = 0; i < 20 && !done; ++i) rig.sched.run_cycle();
  REQUIRE(done);
  const auto bytes = pattern.span();
  std::vector<std::byte> want;
  for (std::size_t i = 0; i < 2 * MiB + 8192; ++i) want.push_back(bytes[i]);
  for (std::size_t i = 3 * MiB; i < 6 * MiB; ++i) want.push_back(bytes[i]);
  CHECK(got == want);
  CHECK(rig.broker.bytes_read() == want.size());
}

TEST_CASE("after abort returns no callback of the task runs; the others lose nothing", "[broker][storage]") {
  Rig rig({.chunk_bytes = 1 * MiB, .background_budget = 20ms});  // about 3 blocks a cycle
  rig.add_streams(8, 10 * MiB, 32ull << 30);
  Seen a, b, c;
  auto on = [](Seen& s) {
    return std::pair{[&s](std::span<const std::byte>, std::uint64_t offset) { s.offsets.push_back(offset); },
                     [&s](vigil::Result<void> r) {
                       s.done++;
                       s.ok = r.has_value();
                     }};
  };
  auto [ab, ad] = on(a);
  auto [bb, bd] = on(b);
  const std::vector<BrokerExtent> big = {{40ull << 30, 64 * MiB}};
  auto ia = rig.broker.register_read(big, ab, ad);
  auto ib = rig.broker.register_read(big, bb, bd);
  // C aborts itself from inside its third block's callback.
  std::optional<BackgroundBroker::TaskId> ic;
  ic = *rig.broker.register_read(
      big,
      [&](std::span<const std::byte>, std::uint64_t offset) {
        c.offsets.push_back(offset);
        if (c.offsets.size() == 3) CHECK(rig.broker.abort(*ic));
      },
      [&](vigil::Result<void>) { c.done++; });
  REQUIRE(ia.has_value());
  REQUIRE(ib.has_value());
  while (a.offsets.empty()) rig.sched.run_cycle();
  REQUIRE(rig.broker.abort(*ia));
  CHECK_FALSE(rig.broker.abort(*ia));
  const auto a_blocks = a.offsets.size();
  for (int i = 0; i < 200 && b.done == 0; ++i) rig.sched.run_cycle();
  for (int i = 0; i < 5; ++i) rig.sched.run_cycle();
  CHECK(a.offsets.size() == a_blocks);
  CHECK(a.done == 0);
  CHECK(c.offsets.size() == 3);
  CHECK(c.done == 0);
  CHECK(b.done == 1);
  CHECK(b.ok);
  CHECK(b.offsets == expected_blocks(big));
  CHECK(rig.broker.running() == 0);
  CHECK(rig.sched.totals().misses == 0);
}

TEST_CASE("a promoted task is served where slack would never serve it, and no stream misses", "[broker][storage]") {
  // No background budget at all: an unpromoted task never gets a block.
  Rig rig({.chunk_bytes = 1 * MiB, .background_budget = 0ms});
  rig.add_streams(16, 10 * MiB, 32ull << 30);
  Seen s;
  const std::vector<BrokerExtent> extents = {{40ull << 30, 6 * MiB}};
  auto id = rig.broker.register_read(
      extents, [&](std::span<const std::byte>, std::uint64_t offset) { s.offsets.push_back(offset); },
      [&](vigil::Result<void> r) {
        s.done++;
        s.ok = r.has_value();
      });
  REQUIRE(id.has_value());
  for (int i = 0; i < 20; ++i) rig.sched.run_cycle();
  CHECK(s.offsets.empty());
  REQUIRE(rig.broker.promote(*id));
  for (int i = 0; i < 20 && s.done == 0; ++i) rig.sched.run_cycle();
  CHECK(s.done == 1);
  CHECK(s.ok);
  CHECK(s.offsets == expected_blocks(extents));  // the superseded background request delivers nothing
  for (int i = 0; i < 10; ++i) rig.sched.run_cycle();
  CHECK(s.offsets.size() == 6);
  CHECK(rig.sched.totals().misses == 0);
  CHECK_FALSE(rig.broker.promote(*id));  // done: nothing to promote
}

TEST_CASE("a task registered promoted is read as interactive requests from its first block", "[broker][storage]") {
  // No background budget: only interactive requests are ever served, so every block read proves it.
  Rig rig({.chunk_bytes = 1 * MiB, .background_budget = 0ms});
  rig.add_streams(16, 10 * MiB, 32ull << 30);
  Seen s;
  const std::vector<BrokerExtent> extents = {{40ull << 30, 3 * MiB}, {41ull << 30, 2 * MiB}};
  auto id = rig.broker.register_read(
      extents, [&](std::span<const std::byte>, std::uint64_t offset) { s.offsets.push_back(offset); },
      [&](vigil::Result<void> r) {
        s.done++;
        s.ok = r.has_value();
      },
      /*promoted=*/true);
  REQUIRE(id.has_value());
  for (int i = 0; i < 20 && s.done == 0; ++i) rig.sched.run_cycle();
  CHECK(s.done == 1);
  CHECK(s.ok);
  CHECK(s.offsets == expected_blocks(extents));
  CHECK(rig.sched.totals().misses == 0);
}
