#pragma once
// How long one IO is predicted to take on a disk: what the cycle scheduler plans a cycle with and
// what admission decides from (ARCHITECTURE.md: admission sees only the Device and this).
// Thread: const, any. Errors: none.
#include <cstdint>

#include "storage/clock.hpp"

namespace vigil::storage {

// Predicted device time of one IO issued as chunks: one access, then transfer. Admission supplies
// the profiled model (admission::ProfiledServiceModel); LinearServiceModel is the analytic
// T_access + S/R.
class ServiceModel {
 public:
  virtual ~ServiceModel() = default;
  virtual Nanos predict(bool write, std::uint64_t offset, std::uint64_t bytes) const noexcept = 0;
};

class LinearServiceModel final : public ServiceModel {
 public:
  LinearServiceModel(Nanos access, double bytes_per_s) : access_(access), bytes_per_s_(bytes_per_s) {}
  Nanos predict(bool, std::uint64_t, std::uint64_t bytes) const noexcept override {
    return access_ + Nanos(static_cast<std::int64_t>(static_cast<double>(bytes) / bytes_per_s_ * 1e9));
  }

 private:
  Nanos access_;
  double bytes_per_s_;
};

}  // namespace vigil::storage
