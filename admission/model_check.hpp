#pragma once
// The online check of the disk model: each cycle, the real-time IO time the model predicted
// against the time the device actually took. If the model was optimistic (observed exceeds
// predicted by more than the tolerance) for K cycles in a row, it trips: admission stops
// admitting, and the operator is told to profile the disk again. It re-arms after K cycles in
// a row within tolerance.
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

 private:
  int k_;
  double tolerance_;
  double min_excess_s_;
  int bad_ = 0, good_ = 0;
  bool optimistic_ = false;
  std::uint64_t trips_ = 0;
};

}  // namespace vigil::admission
