#pragma once
// The model check that recovers (docs/admission.md, "When the check trips"). The profile's
// predictions are multiplied by a scale — 1 as profiled. When the online check (model_check.hpp)
// trips, the model is recalibrated from what the device is doing now: the scale is multiplied by
// observed / predicted over exactly the K tripping cycles, and admission resumes at once under
// the rescaled model. Only a device more than MAX_SCALE times slower than its profile keeps
// admission paused (a disk that slow is broken or not the profiled one: `vigil profile` again);
// it resumes when K cycles in a row agree with the model again. A scale above 1 comes back
// down when a full window of cycles shows the device faster than the rescaled model (a burst of
// VM scheduling noise at start-up must not cost capacity for the rest of the run), never below 1.
// Streams admitted before a rescale are kept: new ones are refused until the rescaled model has
// room for them.
// The predictions fed to observe() are those of the current scale (the scheduler's model is
// rescaled with it). Thread: the IO thread (DiskIoThread::on_cycle); pure, no clock. Errors: none.
#include <cstddef>
#include <cstdint>

#include "admission/calibration.hpp"
#include "admission/model_check.hpp"

namespace vigil::admission {

struct ModelScaleConfig {
  int k = 5;                       // the model check's K
  double tolerance = 0.10;         // observed above predicted × (1 + tolerance) is optimistic
  double min_excess_s = 0;         // an excess below this is jitter
  double max_scale = 8;            // beyond: paused until re-profiled (or K good cycles)
  std::size_t relax_cycles = 120;  // cycles in a row that must show the device faster before the scale falls
  double ignore_below_s = 0;       // cycles predicted below this say nothing about the scale
};

class ModelScale {
 public:
  explicit ModelScale(ModelScaleConfig config = {});

  enum class Event {
    none,
    rescaled,  // the check tripped; the scale rose by the tripping cycles' ratio; admission goes on
    paused,    // the check tripped beyond max_scale: admission paused
    resumed,   // paused, then K cycles in a row within tolerance: admission resumes
    relaxed,   // the device was faster than the rescaled model for relax_cycles: the scale fell
  };
  Event observe(double predicted_s, double observed_s) noexcept;

  double scale() const noexcept { return scale_; }
  bool paused() const noexcept { return paused_; }
  std::uint64_t recalibrations() const noexcept { return recalibrations_; }  // rescaled + relaxed events
  double last_ratio() const noexcept { return last_ratio_; }                 // of the last trip or relaxation

 private:
  ModelScaleConfig config_;
  ModelCheck check_;
  ModelCalibration since_;  // observed / predicted since the last change of scale
  double scale_ = 1, last_ratio_ = 1;
  bool paused_ = false;
  std::uint64_t recalibrations_ = 0;
};

}  // namespace vigil::admission
