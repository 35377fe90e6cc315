#pragma once
// The requests `vigil bench export` makes of a recording vigild: rounds of an export, a thumbnail
// and an HLS seek at random (seeded) times of the recorded cameras, and a phase of them timed
// (time to first byte and total), with the first failure kept. Errors: a failed request is
// counted, not thrown.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_http.hpp"
#include "common/progress.hpp"

namespace vigil::bench {

// One recorded camera's closed video.
struct Recorded {
  std::string camera;
  std::int64_t from_us = 0, to_us = 0;
};

struct Samples {
  std::vector<double> ttfb, total;
  double pct(const std::vector<double>& v, double p) const {
    if (v.empty()) return 0;
    auto s = v;
    std::sort(s.begin(), s.end());
    return s[std::min(s.size() - 1, static_cast<std::size_t>(p * static_cast<double>(s.size())))];
  }
  double p50() const { return pct(ttfb, 0.5); }
  double p95() const { return pct(ttfb, 0.95); }
  double max() const { return ttfb.empty() ? 0 : *std::max_element(ttfb.begin(), ttfb.end()); }
};

struct PhaseResult {
  Samples exports, thumbnails, seeks;
  std::size_t failed = 0;
  std::string first_failure;
  double bytes = 0;
};

// One round of requests: an export, a thumbnail and an HLS seek, each on a random camera at a
// random time, with the pause before each.
struct Round {
  const Recorded* export_cam = nullptr;
  std::int64_t export_from_us = 0, export_len_us = 0;
  const Recorded* thumb_cam = nullptr;
  std::int64_t thumb_us = 0;
  const Recorded* seek_cam = nullptr;
  std::int64_t seek_us = 0;
  std::chrono::microseconds pauses[3];
};

// Picks the rounds (seeded). Times fall in the first second of a 3 s slot of a camera's video,
// each slot at most once per kind: the three phases replay the rounds 0, 1 and 2 s (GOPs) later,
// so they ask for the same shapes and none is answered from vigild's export cache.
class Picker {
 public:
  Picker(std::vector<Recorded> recorded, std::uint32_t seed) : recorded_(std::move(recorded)), rng_(seed) {}

  std::vector<Round> rounds(int n, double gap_ms) {
    std::vector<Round> out(static_cast<std::size_t>(n));
    for (auto& r : out) {
      r.export_cam = &camera();
      r.export_len_us = std::min(std::uniform_int_distribution<std::int64_t>(10'000'000, 30'000'000)(rng_),
                                 r.export_cam->to_us - r.export_cam->from_us - 3'000'000);
      r.export_from_us = time(*r.export_cam, r.export_len_us, 0);
      r.thumb_cam = &camera();
      r.thumb_us = time(*r.thumb_cam, 0, 1);
      r.seek_cam = &camera();
      r.seek_us = time(*r.seek_cam, 0, 2);
      for (auto& p : r.pauses) p = pause(gap_ms);
    }
    return out;
  }

 private:
  const Recorded& camera() {
    return recorded_[std::uniform_int_distribution<std::size_t>(0, recorded_.size() - 1)(rng_)];
  }
  // A time in the first second of a 3 s slot of CAM's video that ends, plus 2 s, at least TAIL_US
  // before the video does; a slot unused by KIND if there is one left.
  std::int64_t time(const Recorded& cam, std::int64_t tail_us, int kind) {
    const std::int64_t slots = std::max<std::int64_t>(1, (cam.to_us - cam.from_us - tail_us - 3'000'000) / 3'000'000);
    std::int64_t k = 0;
    for (int tries = 0; tries < 50; ++tries) {
      k = std::uniform_int_distribution<std::int64_t>(0, slots - 1)(rng_);
      if (used_.insert({kind, cam.camera, k}).second) break;
    }
    return cam.from_us + 3'000'000 * k + std::uniform_int_distribution<std::int64_t>(0, 999'999)(rng_);
  }
  // A think time of mean MEAN_MS (at most 4x): requests arrive at random points of the cycle.
  std::chrono::microseconds pause(double mean_ms) {
    if (mean_ms <= 0) return {};
    const double ms = std::min(4 * mean_ms, std::exponential_distribution<double>(1 / mean_ms)(rng_));
    return std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000));
  }

  std::vector<Recorded> recorded_;
  std::mt19937 rng_;
  std::set<std::tuple<int, std::string, std::int64_t>> used_;
};

// "@SECONDS.MICROS", the API's absolute time (percent-encoded for a query).
std::string at(std::int64_t us);

// ROUNDS, every time SHIFT_US later, on one connection; PROGRESS moves from P0 to P1.
PhaseResult measure(BenchHttp& http, const std::vector<Round>& rounds, std::int64_t shift_us, Progress& progress,
                    double p0, double p1);

// Both unloaded phases as one baseline.
PhaseResult pooled(const PhaseResult& a, const PhaseResult& b);

}  // namespace vigil::bench
