// The profiler and admission on the simulated WD400BB-like disk, in virtual time: the measured
// curve matches the model's analytic S / (T_access + S/R); every policy's admitted set runs
// 1,000 cycles without a miss; a disk that slows down mid-run trips the online check and
// pauses admission; an over-rate recorder is policed.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "admission/admission.hpp"
#include "admission/model_check.hpp"
#include "admission/model_scale.hpp"
#include "admission/profiler.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/hdd_model.hpp"
#include "storage/stream_buffer.hpp"

using namespace vigil::admission;
using namespace vigil::storage;
using Catch::Approx;
using vigil::Rate;

namespace {

// Multiplies another model's times by a factor the test can change: a disk that gets slower.
class Slowdown final : public TimingModel {
 public:
  explicit Slowdown(std::unique_ptr<TimingModel> inner) : inner_(std::move(inner)) {}
  Nanos service_time(const TimedCommand& c) override {
    return Nanos(static_cast<std::int64_t>(static_cast<double>(inner_->service_time(c).count()) * factor));
  }
  double factor = 1.0;

 private:
  std::unique_ptr<TimingModel> inner_;
};

struct SimDisk {
  explicit SimDisk(const char* preset = "wd400bb") {
    auto m = std::make_unique<HddModel>(hdd_preset(preset));
    model = m.get();
    auto slow = std::make_unique<Slowdown>(std::move(m));
    slowdown = slow.get();
    disk = std::make_unique<SimulatedDisk>(clock,
                                           SimulatedDiskOptions{.size_bytes = model->capacity_bytes() / 4096 * 4096,
                                                                .block_bytes = 512,
                                                                .max_in_flight = 8,
                                                                .store_data = false},
                                           std::move(slow));
  }
  VirtualClock clock;
  HddModel* model = nullptr;
  Slowdown* slowdown = nullptr;
  std::unique_ptr<SimulatedDisk> disk;
};

const DiskProfile& wd_profile() {
  static const DiskProfile p = [] {
    SimDisk d;
    return profile_device(*d.disk, d.clock, {.quick = true});
  }();
  return p;
}

class DummyStream final : public CycleStream {
 public:
  DummyStream(std::uint64_t offset, std::size_t bytes) : offset_(offset), buf_(bytes) {}
  StreamIo prepare(std::uint64_t) override { return {.write = false, .pieces = {{offset_, buf_.span()}}}; }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_;
  AlignedBuffer buf_;
};

}  // namespace

TEST_CASE("the profiled admission curve matches the model's S / (T_access + S/R)", "[admission][profile][hdd]") {
  const auto& p = wd_profile();
  REQUIRE(p.random_read.sizes.size() >= 5);
  // The model's own numbers. The curve is measured as sweeps of n = T·P(S)/S evenly spaced IOs
  // (at most 64 in a quick profile), so each IO's access is the command overhead, a seek of
  // 1/n of the stroke, half a rotation, and its share of the sweep's return seek.
  SimDisk d;
  const auto& g = d.model->geometry();
  const auto C = d.model->cylinders();
  double R = 0;
  const int samples = 1000;
  for (int i = 0; i < samples; ++i) R += d.model->media_rate(d.model->capacity_bytes() / samples * i);
  R /= samples;
  const double overhead = static_cast<double>(g.command_overhead.count()) / 1e9;
  const double half_rot = static_cast<double>(g.rotation.count()) / 2e9;
  auto seek = [&](double cyl) {
    return static_cast<double>(d.model->seek_time(static_cast<std::uint32_t>(cyl)).count()) / 1e9;
  };
  for (std::size_t i = 0; i < p.random_read.sizes.size(); ++i) {
    const double S = p.random_read.sizes[i];
    double P = S / (overhead + seek(C / 3.0) + half_rot + S / R), n = 1;
    for (int k = 0; k < 20; ++k) {  // fixed point: n depends on P
      n = std::clamp(std::floor(P / S), 1.0, 64.0);
      const double access = overhead + seek(C / n) + half_rot + seek(C) / n;
      P = S / (access + S / R);
    }
    INFO("S = " << S << " (n = " << n << "): measured " << p.random_read.mean[i] / 1e6 << " MB/s, analytic "
                << P / 1e6);
    CHECK(p.random_read.mean[i] == Approx(P).epsilon(0.15));  // the stated tolerance: 15 %
  }
  // One IO's spread within a sweep is its rotational delay, uniform over a turn: T_rot/√12.
  const double rot_sd = static_cast<double>(g.rotation.count()) / 1e9 / std::sqrt(12.0);
  INFO("cycle_io_sd_s " << p.cycle_io_sd_s * 1e3 << " ms, T_rot/sqrt(12) " << rot_sd * 1e3 << " ms");
  CHECK(p.cycle_io_sd_s == Approx(rot_sd).epsilon(0.35));
  CHECK(p.read_range.a > 0);
  CHECK(p.read_range.b >= p.read_range.a);
  // The sequential curve runs where it started: between the inner (21) and outer (31) zone rates.
  CHECK(p.peak_rate().Bps() / 1e6 >= 21 * 0.95);
  CHECK(p.peak_rate().Bps() / 1e6 <= 31 * 1.05);
}

TEST_CASE("every policy's admitted set runs 1,000 cycles without a miss", "[admission][hdd]") {
  const auto& p = wd_profile();
  for (Policy policy :
       {Policy::analytic, Policy::conservative, Policy::aggressive, Policy::aggressive_average, Policy::statistical}) {
    AdmissionController adm(p, {.policy = policy, .cycle_s = 1, .r_rt = 0.9});
    std::vector<StreamDemand> set;
    while (set.size() < 200) {
      StreamDemand s{set.size() + 1, false, Rate::from_Bps(1e6), {}, {}};
      if (!adm.decide(set, s).admitted) break;
      set.push_back(s);
    }
    INFO(policy_name(policy) << " admitted " << set.size());
    REQUIRE(set.size() >= 5);
    SimDisk d;
    ProfiledServiceModel model(p);
    CycleScheduler sched(*d.disk, d.clock, model,
                         {.cycle = std::chrono::seconds(1),
                          .r_rt = 0.9,
                          .chunk_bytes = static_cast<std::size_t>(p.chunk_bytes())},
                         &d.clock);
    std::vector<std::unique_ptr<DummyStream>> streams;
    std::mt19937_64 rng(4);
    std::uniform_int_distribution<std::uint64_t> pos(0, d.model->capacity_bytes() / 4096 - 1000);
    for (const auto& s : set) {
      streams.push_back(std::make_unique<DummyStream>(pos(rng) * 4096, stream_io_bytes(s.peak_rate, 1.0, 4096)));
      sched.add_stream(s.id, *streams.back(), d.clock.now());
    }
    for (int i = 0; i < 1000; ++i) sched.run_cycle();
    CHECK(sched.totals().misses == 0);
  }
}

TEST_CASE("a disk that slows down mid-run trips the online check and pauses admission", "[admission][hdd]") {
  const auto& p = wd_profile();
  AdmissionController adm(p, {.policy = Policy::aggressive, .r_rt = 0.9});
  SimDisk d;
  ProfiledServiceModel model(p);
  CycleScheduler sched(*d.disk, d.clock, model, {.cycle = std::chrono::seconds(1), .chunk_bytes = 256 * 1024},
                       &d.clock);
  ModelCheck check(5, 0.10);
  int tripped_at = -1, cycle = 0;
  sched.on_cycle = [&](const CycleReport& r) {
    ++cycle;
    if (check.observe(static_cast<double>(r.predicted_rt.count()) / 1e9,
                      static_cast<double>(r.rt_busy.count()) / 1e9)) {
      tripped_at = cycle;
      adm.set_model_optimistic(true);
    }
  };
  std::vector<std::unique_ptr<DummyStream>> streams;
  for (int i = 0; i < 8; ++i) {
    streams.push_back(
        std::make_unique<DummyStream>(static_cast<std::uint64_t>(i) * 4'000'000'000ull, 1'000'000 / 4096 * 4096));
    sched.add_stream(static_cast<std::uint64_t>(i + 1), *streams.back(), d.clock.now());
  }
  for (int i = 0; i < 50; ++i) sched.run_cycle();
  CHECK(tripped_at == -1);  // the profile is true: no alarm
  CHECK(adm.decide({}, {1, false, Rate::from_Bps(1e6), {}, {}}).admitted);
  // The curve was measured at random offsets; a C-LOOK sweep of 8 streams seeks less, so the
  // model is conservative by some margin here. A disk three times slower beats any margin.
  d.slowdown->factor = 3.0;
  for (int i = 0; i < 20; ++i) sched.run_cycle();
  CHECK(tripped_at >= 51);
  CHECK(tripped_at <= 51 + 6);
  CHECK_FALSE(adm.decide({}, {1, false, Rate::from_Bps(1e6), {}, {}}).admitted);
}

TEST_CASE("a disk that slows down mid-run is recalibrated: admission goes on, and comes back when it recovers",
          "[admission][hdd]") {
  const auto& p = wd_profile();
  AdmissionController adm(p, {.policy = Policy::aggressive, .r_rt = 0.9});
  SimDisk d;
  ProfiledServiceModel model(p);
  CycleScheduler sched(*d.disk, d.clock, model, {.cycle = std::chrono::seconds(1), .chunk_bytes = 256 * 1024},
                       &d.clock);
  // As DiskIoThread::check_model wires it: the scheduler's model and admission rescaled together.
  ModelScale scale({.k = 5, .tolerance = 0.10, .max_scale = 8, .relax_cycles = 30});
  std::vector<ModelScale::Event> events;
  sched.on_cycle = [&](const CycleReport& r) {
    const auto e =
        scale.observe(static_cast<double>(r.predicted_rt.count()) / 1e9, static_cast<double>(r.rt_busy.count()) / 1e9);
    if (e == ModelScale::Event::none) return;
    events.push_back(e);
    model.set_scale(scale.scale());
    adm.set_model_scale(scale.scale());
    adm.set_model_optimistic(scale.paused());
  };
  std::vector<std::unique_ptr<DummyStream>> streams;
  for (int i = 0; i < 8; ++i) {
    streams.push_back(
        std::make_unique<DummyStream>(static_cast<std::uint64_t>(i) * 4'000'000'000ull, 1'000'000 / 4096 * 4096));
    sched.add_stream(static_cast<std::uint64_t>(i + 1), *streams.back(), d.clock.now());
  }
  const StreamDemand one{1, false, Rate::from_Bps(1e6), {}, {}};
  const std::size_t capacity = adm.max_streams(one);
  for (int i = 0; i < 40; ++i) sched.run_cycle();
  CHECK(events.empty());  // the profile is true: nothing to recalibrate
  // Three times slower: the check trips and recalibrates; admission is not paused, its capacity shrinks.
  d.slowdown->factor = 3.0;
  for (int i = 0; i < 20; ++i) sched.run_cycle();
  REQUIRE_FALSE(events.empty());
  CHECK(events.front() == ModelScale::Event::rescaled);
  CHECK_FALSE(adm.model_optimistic());
  CHECK(scale.scale() > 1.5);
  CHECK(scale.scale() < 8.0);
  CHECK(adm.decide({}, one).admitted);
  CHECK(adm.max_streams(one) < capacity * 3 / 4);
  // The rescaled model agrees with the device: no further trips while it stays this slow.
  const auto after_trip = events.size();
  for (int i = 0; i < 20; ++i) sched.run_cycle();
  CHECK(events.size() == after_trip);
  // The device recovers: within a window the scale falls back and the capacity returns.
  d.slowdown->factor = 1.0;
  for (int i = 0; i < 100; ++i) sched.run_cycle();
  CHECK(events.back() == ModelScale::Event::relaxed);
  CHECK(scale.scale() < 1.2);
  CHECK(adm.max_streams(one) > capacity * 3 / 4);
}

TEST_CASE("a VBR recorder above its declared peak is policed, not silently dropped", "[admission]") {
  const Rate peak = Rate::from_Bps(1e6);  // declared and admitted: 1 MB/s
  const std::size_t S = stream_io_bytes(peak, 1.0, 4096);
  RecordingBuffer buf({.offset = 0, .bytes = 16 * S}, S);
  std::vector<std::byte> frame(50'000, std::byte{1});
  std::size_t accepted = 0, refused = 0;
  for (int i = 0; i < 30; ++i) {  // 1.5 MB in one cycle
    if (buf.append(frame)) ++accepted;
    else ++refused;
  }
  CHECK(accepted == S / frame.size());
  CHECK(refused == 30 - accepted);
  CHECK(buf.refused_bytes() == refused * frame.size());
}

namespace {

// VBR: each cycle's IO uniform in [0.5, 1.5] × the average, from its own place on the disk.
class VbrStream final : public CycleStream {
 public:
  VbrStream(std::uint64_t offset, double average, std::uint64_t seed)
      : offset_(offset),
        average_(average),
        rng_(seed),
        buf_(static_cast<std::size_t>(average * 1.5 / 4096 + 1) * 4096) {}
  StreamIo prepare(std::uint64_t) override {
    const double f = std::uniform_real_distribution<double>(0.5, 1.5)(rng_);
    const auto bytes = static_cast<std::size_t>(average_ * f / 4096) * 4096;
    const std::uint64_t at = offset_ + pos_;
    pos_ = (pos_ + bytes) % (256ull << 20);  // along its file, within 256 MB
    return {.write = false, .pieces = {{at, buf_.span().first(bytes)}}};
  }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_, pos_ = 0;
  double average_;
  std::mt19937_64 rng_;
  AlignedBuffer buf_;
};

struct VbrRun {
  std::uint64_t misses = 0;
  std::map<std::uint64_t, StreamIoStats> stats;
};

// SET for CYCLES cycles on a fresh simulated disk; stream i always at the same place.
VbrRun run_vbr(const DiskProfile& p, const std::vector<StreamDemand>& set, int cycles) {
  SimDisk d;
  ProfiledServiceModel model(p);
  CycleScheduler sched(*d.disk, d.clock, model,
                       {.cycle = std::chrono::seconds(1), .r_rt = 1.0, .chunk_bytes = 64 << 20}, &d.clock);
  std::vector<std::unique_ptr<VbrStream>> streams;
  const std::uint64_t region = d.model->capacity_bytes() / 64 / 4096 * 4096;
  for (const auto& s : set) {
    streams.push_back(std::make_unique<VbrStream>((s.id * 37 % 64) * region, s.average_rate.bytes_over(1.0), s.id));
    sched.add_stream(s.id, *streams.back(), d.clock.now());
  }
  for (int i = 0; i < cycles; ++i) sched.run_cycle();
  return {sched.totals().misses, sched.stream_stats()};
}

}  // namespace

TEST_CASE("statistical, measuring the running VBR streams as the set grows, admits more than Adm1 and never misses",
          "[admission][hdd]") {
  const auto& p = wd_profile();
  // Declared: average 1 MB/s, peak 1.5 MB/s (what the streams really do).
  std::vector<StreamDemand> order;
  for (std::uint64_t i = 1; i <= 40; ++i) {
    order.push_back({i, false, Rate::from_Bps(1.5e6), Rate::from_Bps(1e6), {}, {}});
  }
  auto count = [&](const AdmissionController& adm) {
    std::vector<StreamDemand> set;
    for (const auto& s : order) {
      if (!adm.decide(set, s).admitted) break;
      set.push_back(s);
    }
    return set.size();
  };
  const std::size_t adm1 = count(AdmissionController(p, {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 1}));
  // Grow as vigild does: each decision after the running set was measured for 60 cycles.
  AdmissionController stat(p, {.policy = Policy::statistical, .cycle_s = 1, .r_rt = 1, .overbooking = 1e-4});
  std::size_t k = adm1;
  for (; k < order.size(); ++k) {
    std::vector<StreamDemand> running(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    const auto run = run_vbr(p, running, 60);
    REQUIRE(run.misses == 0);  // every set it grew through ran clean
    for (auto& s : running) {
      const auto& m = run.stats.at(s.id);
      s.measured_mean = Rate::from_bytes_over(m.bytes_mean, 1.0);  // cycles of 1 s
      s.measured_stddev = Rate::from_bytes_over(m.bytes_sd(), 1.0);
      s.measured_io_s = m.time_mean_s;
    }
    if (!stat.decide(running, order[k]).admitted) break;
  }
  INFO("Adm1 admits " << adm1 << ", statistical " << k);
  CHECK(k > adm1);
  const auto final_run = run_vbr(p, {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k)}, 1000);
  CHECK(final_run.misses == 0);
}
