#include "admission/model_check.hpp"

namespace vigil::admission {

bool ModelCheck::observe(double predicted_s, double observed_s) noexcept {
  if (predicted_s <= 0) return false;  // an idle cycle says nothing about the model
  if (observed_s > predicted_s * (1 + tolerance_) && observed_s - predicted_s > min_excess_s_) {
    good_ = 0;
    if (bad_ == 0) streak_predicted_s_ = streak_observed_s_ = 0;
    streak_predicted_s_ += predicted_s;
    streak_observed_s_ += observed_s;
    if (++bad_ >= k_ && !optimistic_) {
      optimistic_ = true;
      ++trips_;
      return true;
    }
  } else {
    bad_ = 0;
    if (optimistic_ && ++good_ >= k_) {
      optimistic_ = false;
      good_ = 0;
    }
  }
  return false;
}

void ModelCheck::reset() noexcept {
  bad_ = good_ = 0;
  optimistic_ = false;
  streak_predicted_s_ = streak_observed_s_ = 0;
}

}  // namespace vigil::admission
