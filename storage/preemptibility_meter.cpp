#include "storage/preemptibility_meter.hpp"

#include <algorithm>

namespace vigil::storage {

void PreemptibilityMeter::command(Nanos duration) noexcept {
  const double t = static_cast<double>(std::max<std::int64_t>(duration.count(), 0));
  sum_ns_ += t;
  sum_sq_ns_ += t * t;
  max_ns_ = std::max(max_ns_, t);
  ++commands_;
}

void PreemptibilityMeter::idle(Nanos gap) noexcept {
  idle_ns_ += static_cast<double>(std::max<std::int64_t>(gap.count(), 0));
}

Nanos PreemptibilityMeter::expected_waiting() const noexcept {
  const double total = sum_ns_ + idle_ns_;
  if (total <= 0) return Nanos(0);
  return Nanos(static_cast<std::int64_t>(0.5 * sum_sq_ns_ / total + 0.5));
}

}  // namespace vigil::storage
