#pragma once
// What `vigil bench admission` runs a row of thesis Table 3.5 on: the row's streams in admission
// order (C constant, V variable, H heterogeneous), and a set of them run for some cycles on the
// simulated WD400BB-like disk in virtual time, or on a real file (O_DIRECT) in real time, with
// what the scheduler measured of each stream. Errors: exceptions (a device that cannot be opened).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <cmath>
#include <random>
#include <vector>

#include "admission/admission.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/service_model.hpp"
#include "storage/stream_io_stats.hpp"

namespace vigil::bench {

enum class Kind { C, V, H };
const char* kind_name(Kind k);

// The streams of a row, in admission order: the set for N is always the first N.
std::vector<admission::StreamDemand> demands(Kind k, double avg_Bps, std::size_t n, std::uint64_t seed);

struct RunResult {
  std::uint64_t misses = 0, stream_cycles = 0;
  std::vector<storage::StreamIoStats> measured;  // per stream, as the scheduler measured it
  double predicted_s = 0, rt_busy_s = 0;         // Σ over cycles: the model's and the device's stream IO time
};

// Where runs happen: the simulated WD400BB in virtual time, or a real file (O_DIRECT) in real time.
struct Target {
  bool real = false;
  std::filesystem::path file;
  std::uint64_t bytes = 0;
  double cycle_s = 1.0;
};

// One dummy stream: each cycle reads its next IO from its own region of the disk.
class DummyStream final : public storage::CycleStream {
 public:
  // RATE: average bytes per cycle.
  DummyStream(std::uint64_t offset, std::uint64_t region, double rate, bool vbr, std::uint64_t seed)
      : offset_(offset),
        region_(region),
        rate_(rate),
        vbr_(vbr),
        rng_(seed),
        buf_(static_cast<std::size_t>(std::ceil(rate * (vbr ? 1.5 : 1.0) / 4096) + 1) * 4096) {}
  storage::StreamIo prepare(std::uint64_t) override {
    // VBR: uniform in [0.5, 1.5] × the average each cycle (peak 1.5×).
    const double f = vbr_ ? std::uniform_real_distribution<double>(0.5, 1.5)(rng_) : 1.0;
    const auto bytes = std::max<std::size_t>(4096, static_cast<std::size_t>(rate_ * f / 4096) * 4096);
    if (pos_ + bytes > region_) pos_ = 0;
    const std::uint64_t at = offset_ + pos_;
    pos_ += bytes;
    return {.write = false, .pieces = {{at, buf_.span().first(bytes)}}};
  }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_, region_, pos_ = 0;
  double rate_;
  bool vbr_;
  std::mt19937_64 rng_;
  storage::AlignedBuffer buf_;
};

inline constexpr std::size_t kSlots = 400;  // streams in a row's admission order (demands(..., 400, ...))

// Runs SET (rates from its demands; VBR per KIND) for CYCLES cycles on a fresh TARGET.
RunResult run_set(const Target& target, const std::vector<admission::StreamDemand>& set, Kind k, int cycles,
                  const storage::ServiceModel& model);

// How many of ORDER's first streams ADM admits, one by one, until it refuses.
std::size_t admitted_count(const admission::AdmissionController& adm,
                           const std::vector<admission::StreamDemand>& order);

}  // namespace vigil::bench
