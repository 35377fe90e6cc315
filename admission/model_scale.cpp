#include "admission/model_scale.hpp"

#include <algorithm>

namespace vigil::admission {

ModelScale::ModelScale(ModelScaleConfig config)
    : config_(config),
      check_(std::max(1, config.k), config.tolerance, config.min_excess_s),
      since_(std::max<std::size_t>(config.relax_cycles, 1), std::max<std::size_t>(config.relax_cycles, 1),
             config.ignore_below_s) {}

ModelScale::Event ModelScale::observe(double predicted_s, double observed_s) noexcept {
  since_.observe(predicted_s, observed_s);
  if (check_.observe(predicted_s, observed_s)) {
    last_ratio_ = check_.trip_ratio();
    since_.reset();
    const double wanted = scale_ * last_ratio_;
    if (wanted <= config_.max_scale) {
      scale_ = std::max(1.0, wanted);
      ++recalibrations_;
      check_.reset();  // a new model: its check starts afresh
      paused_ = false;
      return Event::rescaled;
    }
    // Not noise: a device this much slower than its profile is another device. The check stays
    // tripped and re-arms after K good cycles under the largest scale.
    scale_ = config_.max_scale;
    paused_ = true;
    return Event::paused;
  }
  if (paused_) {
    if (check_.optimistic()) return Event::none;
    paused_ = false;
    since_.reset();
    return Event::resumed;
  }
  // Relax: a whole window of cycles (each in tolerance, or the check would have tripped) on
  // which the device did the work faster than the rescaled model by more than the tolerance.
  if (scale_ > 1 && since_.cycles() >= since_.window() && since_.factor() * (1 + config_.tolerance) < 1) {
    last_ratio_ = since_.factor();
    scale_ = scale_ * last_ratio_;
    if (scale_ < 1.01) scale_ = 1;  // back to the profile (not a rounding error above it)
    ++recalibrations_;
    since_.reset();
    check_.reset();
    return Event::relaxed;
  }
  return Event::none;
}

}  // namespace vigil::admission
