#pragma once
// The hand-computed disk profile the admission tests share: random-read curve 100 kB → 10 MB/s
// (mean) / 8 MB/s (min); 1 MB and above → 25 / 20 MB/s (flat); sequential peak 30 MB/s; access
// 12 ms mean, 20 ms worst; IO_SD_S the per-IO rotational spread (0: none).
#include "admission/profile.hpp"

namespace vigil::test {

inline admission::DiskProfile hand_profile(double io_sd_s = 0) {
  constexpr double MB = 1e6;
  admission::DiskProfile p;
  p.device = "hand";
  p.random_read = {{100e3, 1e6}, {8 * MB, 20 * MB}, {10 * MB, 25 * MB}, {11 * MB, 27 * MB}};
  p.seq_read = {{64e3, 1e6}, {30 * MB, 30 * MB}, {30 * MB, 30 * MB}, {30 * MB, 30 * MB}};
  p.read_range = admission::near_peak_range(p.seq_read);
  p.access_max_s = 0.020;
  p.access_mean_s = 0.012;
  p.cycle_io_sd_s = io_sd_s;
  return p;
}

}  // namespace vigil::test
