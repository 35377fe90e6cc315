// Semi-preemptible IO on the simulated ST318437LW through the cycle scheduler: JIT-seek turns
// rotational delay into preemptible idle time, seek splitting issues sub-seeks (only where the
// rotation hides their cost), chunking bounds an interactive read's wait, and the same seed
// gives the same command trace.
#include <catch2/catch_test_macros.hpp>

#include <random>

#include "storage/cycle_scheduler.hpp"
#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kSector = 512;

struct HddRig {
  HddRig(bool jit, std::uint32_t max_subseek, std::uint64_t seed = 1, Nanos jitter = 0ns)
      : hdd([&] {
          auto g = hdd_preset("st318437lw");
          g.seed = seed;
          g.jitter = jitter;
          return g;
        }()) {
    model = hdd.model;
    capacity = hdd.capacity;
    disk = hdd.disk.get();
    service = std::make_unique<LinearServiceModel>(12ms, 30e6);
    sched = std::make_unique<CycleScheduler>(
        *disk, clock, *service, SchedulerConfig{.cycle = 1s, .chunk_bytes = 50 * kSector, .background_budget = 1s},
        &clock, Mechanics{model, disk, jit, 1ms, max_subseek});
    sched->on_command = [this](const CommandTrace& t) { trace.push_back(t); };
  }
  // N random background reads of BYTES, one after another.
  void random_reads(int n, std::size_t bytes, std::uint64_t seed = 5) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::uint64_t> pos(0, (capacity - bytes) / kSector);
    buf = AlignedBuffer(bytes);
    int done = 0;
    for (int i = 0; i < n; ++i) {
      sched->submit({.cls = IoClass::background,
                     .offset = pos(rng) * kSector,
                     .buf = buf.span(),
                     .done = [&done](const IoOutcome&) { ++done; }},
                    clock.now());
    }
    while (done < n) sched->run_cycle();
  }
  SimulatedHdd hdd;
  VirtualClock& clock = hdd.clock;
  HddModel* model = nullptr;
  std::uint64_t capacity = 0;
  SimulatedDisk* disk = nullptr;
  std::unique_ptr<LinearServiceModel> service;
  std::unique_ptr<CycleScheduler> sched;
  std::vector<CommandTrace> trace;
  AlignedBuffer buf;
};

}  // namespace

TEST_CASE("JIT-seek turns rotational delay into preemptible idle time and cuts the expected wait", "[spio][hdd]") {
  HddRig plain(false, 0), jit(false, 0);
  HddRig with_jit(true, 0);
  plain.random_reads(300, 50 * kSector);
  with_jit.random_reads(300, 50 * kSector);
  // The same work: JIT only moves the waiting from inside commands to idle time before them.
  const auto& a = plain.sched->meter();
  const auto& b = with_jit.sched->meter();
  CHECK(b.idle_time() > a.idle_time() + 300 * 2ms);  // on average T_rot/2 − 1 ms per IO moves out
  CHECK(b.expected_waiting() < a.expected_waiting() * 3 / 4);
  const double elapsed_a = static_cast<double>(plain.clock.now().count());
  const double elapsed_b = static_cast<double>(with_jit.clock.now().count());
  CHECK(elapsed_b < elapsed_a * 1.02);  // and costs no throughput
}

TEST_CASE("seek splitting issues sub-seeks only for long seeks the rotation hides", "[spio][hdd]") {
  HddRig split(true, 14'000), none(true, 0);
  split.random_reads(300, 100 * kSector);
  none.random_reads(300, 100 * kSector);
  int seeks = 0;
  for (const auto& t : split.trace) seeks += t.seek ? 1 : 0;
  CHECK(seeks > 10);
  for (const auto& t : none.trace) CHECK_FALSE(t.seek);
  CHECK(split.sched->meter().longest_command() < none.sched->meter().longest_command());
  const double ta = static_cast<double>(split.clock.now().count()), tb = static_cast<double>(none.clock.now().count());
  CHECK(ta < tb * 1.02);  // the split's extra seek time hides in rotational delay
}

TEST_CASE("an interactive read during 4 MB background reads waits for one command at most", "[spio][hdd]") {
  HddRig rig(true, 15'000);
  AlignedBuffer big(4'000'000 / kSector * kSector), small(kSector);
  std::vector<IoOutcome> got;
  int bg_done = 0;
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<std::uint64_t> pos(0, (rig.capacity - big.size()) / kSector);
  for (int i = 0; i < 40; ++i) {
    rig.sched->submit({.cls = IoClass::background,
                       .offset = pos(rng) * kSector,
                       .buf = big.span(),
                       .done = [&](const IoOutcome&) { ++bg_done; }},
                      rig.clock.now());
    rig.sched->submit({.cls = IoClass::interactive,
                       .offset = pos(rng) * kSector,
                       .buf = small.span(),
                       .done = [&](const IoOutcome& o) { got.push_back(o); }},
                      rig.clock.now() + Nanos(static_cast<std::int64_t>(i) * 137'000'000 + 50'000'000));
  }
  while (got.size() < 40) rig.sched->run_cycle();
  // The longest non-preemptible command: overhead + a (possibly unsplit) seek + what JIT-seek
  // leaves of the rotation + one chunk — never a whole 4 MB IO (~100 ms).
  const Nanos longest = rig.sched->meter().longest_command();
  CHECK(longest <=
        rig.model->geometry().command_overhead + rig.model->seek_time(rig.model->cylinders() - 1) + 1ms + 2ms);
  Nanos worst{0};
  for (const auto& o : got) {
    REQUIRE(o.result.has_value());
    CHECK(o.waiting() <= longest);
    worst = std::max(worst, o.waiting());
  }
  CHECK(worst < 25ms);
  CHECK(bg_done > 0);
}

TEST_CASE("the same seed gives the same command trace; another seed a different one", "[spio][hdd][determinism]") {
  auto run = [](std::uint64_t seed) {
    HddRig rig(true, 14'000, seed, 40us);
    rig.random_reads(100, 200 * kSector);
    std::vector<std::tuple<std::uint64_t, std::size_t, bool, Nanos::rep, Nanos::rep>> out;
    for (const auto& t : rig.trace) out.emplace_back(t.offset, t.bytes, t.seek, t.issued.count(), t.completed.count());
    return out;
  };
  const auto a = run(7), b = run(7), c = run(8);
  CHECK(a.size() > 300);
  CHECK(a == b);
  CHECK(a != c);
}
