#pragma once
// What one stream really costs its disk per cycle, measured by the cycle scheduler: the bytes
// of its cycle IO and the device time that IO took (seek, rotation, transfer, re-seeks after a
// preemption), as exponentially weighted mean and variance over about the last kWindow cycles.
// The statistical admission policy charges running streams by these rather than by the profile:
// they include the stream's zone, its place in the sweep and its real VBR spread.
// Thread: updated on the IO thread; copied out by value. Errors: none.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace vigil::storage {

struct StreamIoStats {
  static constexpr double kWindow = 60;  // cycles
  std::uint64_t cycles = 0;              // cycle IOs measured
  double bytes_mean = 0, bytes_var = 0;
  double time_mean_s = 0, time_var_s2 = 0;

  void add(double bytes, double seconds) noexcept {
    ++cycles;
    // A plain average until the window is full, then exponential: early cycles do not linger.
    const double a = 1.0 / std::min(static_cast<double>(cycles), kWindow);
    update(bytes_mean, bytes_var, bytes, a);
    update(time_mean_s, time_var_s2, seconds, a);
  }
  double bytes_sd() const noexcept { return std::sqrt(bytes_var); }
  double time_sd_s() const noexcept { return std::sqrt(time_var_s2); }

 private:
  // West's weighted incremental mean and variance.
  static void update(double& mean, double& var, double x, double a) noexcept {
    const double d = x - mean;
    mean += a * d;
    var = (1 - a) * (var + a * d * d);
  }
};

}  // namespace vigil::storage
