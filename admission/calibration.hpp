#pragma once
// The online calibration of the disk model: over the last W cycles that did stream IO, the
// device time the stream IO took divided by the time the profile's mean curve predicted for it.
// A profile measured on a quiet disk is a little off for the running set (its layout, the
// drive's caches, another firmware): the ratio corrects the mean curve, so the aggressive
// policies admit what this disk really does with these streams. Until MIN_CYCLES cycles have
// been seen it says 1 (trust the profile). Optimism beyond the tolerance is the model check's
// business (model_check.hpp), which stops admission altogether.
// Thread: the IO thread feeds it (CycleScheduler::on_cycle); factor() is read there too and
// handed to the AdmissionController (atomic). Errors: none.
#include <cstddef>
#include <vector>

namespace vigil::admission {

class ModelCalibration {
 public:
  // WINDOW cycles are kept; IGNORE_BELOW_S: a cycle predicted below this is too small to measure
  // the model by (timer and host noise dominate it).
  explicit ModelCalibration(std::size_t window = 120, std::size_t min_cycles = 30, double ignore_below_s = 0);
  void observe(double predicted_s, double observed_s) noexcept;
  double factor() const noexcept;  // observed / predicted over the window; 1 until enough cycles
  std::size_t cycles() const noexcept { return count_; }
  std::size_t window() const noexcept { return predicted_.size(); }
  // Forget every cycle seen (the model it measures was rescaled: model_scale.hpp).
  void reset() noexcept;

 private:
  std::vector<double> predicted_, observed_;  // ring buffers of the window
  std::size_t next_ = 0, count_ = 0, min_cycles_;
  double ignore_below_s_;
  double sum_predicted_ = 0, sum_observed_ = 0;
};

}  // namespace vigil::admission
