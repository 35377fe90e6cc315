#pragma once
// A measured disk profile (thesis chapter 3, Diskbench): the curves admission decides on and the
// numbers the scheduler is configured from. Versioned JSON (format 1), stored in the catalog's
// disk_profiles.profile and written by `vigil profile`.
//
// Curves are throughput (bytes/s) against IO size (bytes), sizes ascending:
//  - random_read / random_write: same-size IOs at random offsets, min/mean/max over repeated
//    runs — the admission curve P(S) of Fig. 3.5 (each IO pays an access, as a stream IO does).
//    Each run is one cycle's worth of IOs swept in ascending order, as the scheduler issues them;
//  - seq_read / seq_write: back-to-back sequential IOs of one size at queue depth 1 — the chunk
//    curve of Figs. 3.26/3.27, whose near-peak range is [a, b].
// Thread: plain values. Errors: from_json throws std::invalid_argument on a malformed document.
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/rate.hpp"

namespace vigil::admission {

inline constexpr int kProfileFormat = 1;

struct Curve {
  std::vector<double> sizes;           // bytes, ascending
  std::vector<double> min, mean, max;  // bytes/s at each size (min = mean = max for one run)
  bool empty() const noexcept { return sizes.empty(); }
};

enum class Which { min, mean, max };

// P(S): throughput at size S; between measured sizes the per-IO time S/P is interpolated linearly; below
// the first size, scaled as a pure access-bound curve (S / t(first)); above the last, flat.
double throughput_at(const Curve& c, Which which, double size) noexcept;

struct ChunkRange {
  double a = 0, b = 0;  // smallest and largest size within 5 % of the peak
  double peak = 0;      // bytes/s
};
// [a, b] of a sequential curve (mean): sizes whose throughput is within TOLERANCE of the peak.
ChunkRange near_peak_range(const Curve& seq, double tolerance = 0.05) noexcept;

struct DiskProfile {
  int format = kProfileFormat;
  std::string device;  // path or sim:PRESET
  std::uint64_t device_bytes = 0;
  std::uint32_t block_bytes = 4096;
  std::int64_t measured_at_us = 0;
  std::string tool_version;
  bool quick = false;
  Curve random_read, random_write, seq_read, seq_write;
  ChunkRange read_range, write_range;
  double command_overhead_s = 0;              // smallest observed command time (1 block, sequential)
  double access_mean_s = 0;                   // mean time of a 1-block random read (seek + rotation on an HDD)
  double access_max_s = 0;                    // worst observed 1-block random read
  double jitter_p50_s = 0, jitter_p99_s = 0;  // spread of repeated 1-block reads around their median
  // Standard deviation of one stream IO's time within a cycle sweep (rotational delay on an
  // HDD), pooled over the admission curves' runs: a cycle of N IOs varies by √N times this.
  // The statistical policy's margin is built on it. 0 in profiles written before it existed.
  double cycle_io_sd_s = 0;
  std::vector<double> sustained_write;  // bytes/s per second of a long sequential write (--full)

  // Derived parameters (`vigil profile show`).
  double chunk_bytes() const noexcept;  // a of the write range (recording is the main load), block-aligned
  Rate peak_rate() const noexcept;      // best sequential throughput
  Rate slowest_rate() const noexcept;   // worst large-IO throughput measured (min curve)
};

boost::json::value to_json(const DiskProfile& p);
DiskProfile profile_from_json(const boost::json::value& v);

}  // namespace vigil::admission
