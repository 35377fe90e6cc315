#include "admission/calibration.hpp"

#include <algorithm>

namespace vigil::admission {

ModelCalibration::ModelCalibration(std::size_t window, std::size_t min_cycles, double ignore_below_s)
    : predicted_(std::max<std::size_t>(window, 1)),
      observed_(std::max<std::size_t>(window, 1)),
      min_cycles_(std::clamp<std::size_t>(min_cycles, 1, std::max<std::size_t>(window, 1))),
      ignore_below_s_(ignore_below_s) {}

void ModelCalibration::observe(double predicted_s, double observed_s) noexcept {
  if (!(predicted_s > 0) || predicted_s < ignore_below_s_ || !(observed_s >= 0)) return;
  // Running sums over a ring: the oldest cycle leaves as the newest enters.
  sum_predicted_ += predicted_s - predicted_[next_];
  sum_observed_ += observed_s - observed_[next_];
  predicted_[next_] = predicted_s;
  observed_[next_] = observed_s;
  next_ = (next_ + 1) % predicted_.size();
  count_ = std::min(count_ + 1, predicted_.size());
  if (next_ == 0) {
    // Re-add from scratch once per lap so floating-point drift of the running sums stays bounded.
    sum_predicted_ = sum_observed_ = 0;
    for (std::size_t i = 0; i < count_; ++i) sum_predicted_ += predicted_[i], sum_observed_ += observed_[i];
  }
}

void ModelCalibration::reset() noexcept {
  std::fill(predicted_.begin(), predicted_.end(), 0.0);
  std::fill(observed_.begin(), observed_.end(), 0.0);
  next_ = count_ = 0;
  sum_predicted_ = sum_observed_ = 0;
}

double ModelCalibration::factor() const noexcept {
  if (count_ < min_cycles_ || sum_predicted_ <= 0) return 1.0;
  return sum_observed_ / sum_predicted_;
}

}  // namespace vigil::admission
