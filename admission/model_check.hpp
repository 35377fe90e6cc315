#pragma once
// The online check of the disk model: each cycle, the real-time IO time the model predicted
// against the time the device actually took. If the model was optimistic (observed exceeds
// predicted by more than the tolerance) for K cycles in a row, it trips: admission stops
// admitting, and the operator is told to profile the disk again. It re-arms after K cycles in
// a row within tolerance. While a streak runs it sums the predicted and observed times of its
// cycles: on a trip, trip_ratio() is how optimistic the model was over exactly the tripping
// cycles (ModelScale recalibrates by it, model_scale.hpp).
// Thread: the IO thread feeds it (CycleScheduler::on_cycle). Errors: none.
#include <cstdint>

namespace vigil::admission {

class ModelCheck {
 public:
  // MIN_EXCESS_S: an excess below this absolute time is noise, not a wrong model (a cycle whose
  // stream IO is predicted at 0.5 ms is not "optimistic" when it takes 0.7 ms).
  explicit ModelCheck(int k = 5, double tolerance = 0.10, double min_excess_s = 0)
      : k_(k), tolerance_(tolerance), min_excess_s_(min_excess_s) {}
  // Returns true on the cycle the check trips (optimistic() becomes true).
  bool observe(double predicted_s, double observed_s) noexcept;
  bool optimistic() const noexcept { return optimistic_; }
  int streak() const noexcept { return bad_; }
  std::uint64_t trips() const noexcept { return trips_; }
  // Observed over predicted, summed over the current (or the tripping) streak of bad cycles; 1 without one.
  double trip_ratio() const noexcept { return streak_predicted_s_ > 0 ? streak_observed_s_ / streak_predicted_s_ : 1; }
  // Back to the start (not optimistic, no streak), after the model it checks was changed.
  void reset() noexcept;

 private:
  int k_;
  double tolerance_;
  double min_excess_s_;
  int bad_ = 0, good_ = 0;
  bool optimistic_ = false;
  std::uint64_t trips_ = 0;
  double streak_predicted_s_ = 0, streak_observed_s_ = 0;  // over the bad streak
};

}  // namespace vigil::admission
