#pragma once
// The clock seam: everything in storage/ that needs time asks a Clock, so the whole engine
// can run on a VirtualClock (deterministic tests, the simulated disk) or the real steady clock.
// Thread: SteadyClock is thread-safe; a VirtualClock belongs to the thread that advances it.
#include <chrono>
#include <cstdint>

namespace vigil::storage {

using Nanos = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time since an arbitrary epoch.
  virtual Nanos now() const noexcept = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos now() const noexcept override {
    return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
  }
};

// Time that moves only when told to (tests, SimulatedDisk).
class VirtualClock final : public Clock {
 public:
  Nanos now() const noexcept override { return now_; }
  void advance(Nanos by) noexcept { now_ += by; }
  // REQUIRES: t >= now() (virtual time never goes backwards).
  void advance_to(Nanos t) noexcept {
    if (t > now_) now_ = t;
  }

 private:
  Nanos now_{0};
};

}  // namespace vigil::storage
