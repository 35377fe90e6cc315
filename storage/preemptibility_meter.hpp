#pragma once
// PreemptibilityMeter: Semi-preemptible IO's yardstick (thesis §4.1, Eq. 4.2). It is fed the
// duration T_i of every non-preemptible device command and every idle gap (idle time is
// fully preemptible) and computes, online, the expected time a higher-priority request that
// arrives at a uniformly random moment waits for the disk:
//     E(T_waiting) = ½ · Σ T_i² / (Σ T_i + T_idle)
// Non-preemptible IO is the special case of one command per IO (Eq. 4.1: ½ · T_IO).
// Thread: the owning IO thread; read the snapshot from anywhere via the scheduler's metrics.
// Errors: none.
#include <cstdint>

#include "storage/clock.hpp"

namespace vigil::storage {

class PreemptibilityMeter {
 public:
  void command(Nanos duration) noexcept;
  void idle(Nanos gap) noexcept;

  // Eq. 4.2 over everything recorded since construction or reset().
  Nanos expected_waiting() const noexcept;
  Nanos longest_command() const noexcept { return Nanos(static_cast<std::int64_t>(max_ns_)); }
  std::uint64_t commands() const noexcept { return commands_; }
  Nanos busy() const noexcept { return Nanos(static_cast<std::int64_t>(sum_ns_)); }
  Nanos idle_time() const noexcept { return Nanos(static_cast<std::int64_t>(idle_ns_)); }
  void reset() noexcept { *this = PreemptibilityMeter{}; }

 private:
  // Sums in double nanoseconds: Σ T_i² of a day of 10 ms commands is ~1e18 ns², beyond what
  // int64 holds; double's 53 bits keep far more precision than the answer needs.
  double sum_ns_ = 0, sum_sq_ns_ = 0, idle_ns_ = 0, max_ns_ = 0;
  std::uint64_t commands_ = 0;
};

}  // namespace vigil::storage
