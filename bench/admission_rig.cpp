#include "bench/admission_rig.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

#include "storage/cycle_scheduler.hpp"
#include "storage/file_device.hpp"
#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace vigil::admission;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace vigil::bench {
namespace {

struct Env {
  explicit Env(const Target& t) {
    if (!t.real) {
      sim = std::make_unique<SimulatedHdd>(hdd_preset("wd400bb"));
      capacity = sim->capacity;
      clock = &sim->clock;
    } else {
      auto dev = FileDevice::open(t.file, {.max_in_flight = 8});
      if (!dev) throw std::runtime_error("cannot open " + t.file.string() + ": " + dev.error().message());
      capacity = t.bytes;
      device = std::move(*dev);
      clock = &steady;
    }
  }
  std::unique_ptr<SimulatedHdd> sim;
  SteadyClock steady;
  Clock* clock = nullptr;
  std::unique_ptr<Device> device;  // the real device
  std::uint64_t capacity = 0;
  Device& dev() { return sim ? static_cast<Device&>(*sim->disk) : *device; }
  VirtualClock* virtual_clock() { return sim ? &sim->clock : nullptr; }
};

}  // namespace

const char* kind_name(Kind k) { return k == Kind::C ? "C" : k == Kind::V ? "V" : "H"; }

std::vector<StreamDemand> demands(Kind k, double avg_Bps, std::size_t n, std::uint64_t seed) {
  std::vector<StreamDemand> out;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> rates_Bps;
  for (std::size_t i = 0; i < n; ++i) rates_Bps.push_back(k == Kind::H ? avg_Bps * std::pow(10.0, u(rng)) : avg_Bps);
  if (k == Kind::H) {
    // Rescale so the set's average is the row's average (as the thesis's H rows are).
    double sum = 0;
    for (double r : rates_Bps) sum += r;
    for (double& r : rates_Bps) r *= avg_Bps * static_cast<double>(n) / sum;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Rate average = Rate::from_Bps(rates_Bps[i]);
    out.push_back(
        {.id = i + 1, .write = false, .peak_rate = k == Kind::V ? average * 1.5 : average, .average_rate = average});
  }
  return out;
}

RunResult run_set(const Target& target, const std::vector<StreamDemand>& set, Kind k, int cycles,
                  const ServiceModel& model) {
  Env env(target);
  const Nanos T = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(target.cycle_s));
  CycleScheduler sched(env.dev(), *env.clock, model,
                       {.cycle = T, .r_rt = 1.0, .chunk_bytes = 64 << 20, .background_budget = 0s},
                       env.virtual_clock());
  std::vector<std::unique_ptr<DummyStream>> streams;
  const std::uint64_t cap = env.capacity;
  // On the simulated disk the regions are fixed (kSlots of them), so stream i is in the same
  // place whatever N is — a camera's files do not move when another camera is added, and a
  // decision measured on N streams is about the same N streams plus one. The real device's file
  // is too small for that: N regions there.
  const std::size_t slots = target.real ? std::max<std::size_t>(set.size(), 1) : kSlots;
  const std::uint64_t region = std::max<std::uint64_t>(64ull << 20, cap / slots / 4096 * 4096);
  for (std::size_t i = 0; i < set.size(); ++i) {
    // Streams spread over the disk like files of a filled volume: stream i gets region
    // perm(i), a permutation (2654435761 is prime), so admission order is not disk order and
    // no two streams share a region (which would let one read the other's data from the cache).
    // Each file also starts a random few tracks (< 1 MiB) into its region, as files do: at exact
    // multiples of the region every stream's IO would meet the same rotational angle, and the
    // whole set would be lucky or unlucky together, by N (the profile's sweeps wobble likewise).
    std::mt19937_64 place(4242 + i);
    const std::uint64_t wobble = std::uniform_int_distribution<std::uint64_t>(0, 255)(place) * 4096;
    const std::uint64_t span = region - wobble;
    const std::uint64_t offset = std::min<std::uint64_t>((i * 2654435761ull % slots) * region + wobble, cap - span);
    streams.push_back(std::make_unique<DummyStream>(offset / 4096 * 4096, span,
                                                    set[i].average_rate.bytes_over(target.cycle_s), k == Kind::V,
                                                    1000 + i));
    sched.add_stream(set[i].id, *streams.back(), env.clock->now());
  }
  RunResult r;
  for (int c = 0; c < cycles; ++c) {
    const auto rep = sched.run_cycle();
    r.predicted_s += std::chrono::duration<double>(rep.predicted_rt).count();
    r.rt_busy_s += std::chrono::duration<double>(rep.rt_busy).count();
  }
  r.misses = sched.totals().misses;
  r.stream_cycles = set.size() * static_cast<std::uint64_t>(cycles);
  for (const auto& d : set) {
    const auto it = sched.stream_stats().find(d.id);
    r.measured.push_back(it != sched.stream_stats().end() ? it->second : StreamIoStats{});
  }
  return r;
}

std::size_t admitted_count(const AdmissionController& adm, const std::vector<StreamDemand>& order) {
  std::vector<StreamDemand> set;
  for (const auto& s : order) {
    if (!adm.decide(set, s).admitted) break;
    set.push_back(s);
  }
  return set.size();
}

}  // namespace vigil::bench
