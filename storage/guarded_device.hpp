#pragma once
// A volume's device as vigild uses it (docs/durability.md, "Faults at runtime"): any Device,
// with two rules for the errors it reports.
//  - A failed write is retried once, with the same bytes at the same offset, before its caller
//    hears of it: a transient error, or a torn write (part of the data landed), is repaired by
//    writing the whole of it again. A flush is never retried: after fsync reports an error, Linux
//    may have dropped the dirty pages, and a second fsync can succeed without the data.
//  - Failures in a row are counted (a write that failed after its retry, a flush); a success
//    resets the count. At FAIL_AFTER in a row the device is failing for good: failing() turns
//    true and stays true (the volume is then taken out of service, server/disks/disk_io.hpp).
// Reads are neither retried nor counted: a bad sector under old video is the reader's gap, not
// a reason to stop recording.
// Thread: the one thread of the wrapped device (device.hpp); failing() and
// consecutive_failures() from any thread. Errors: values, as the wrapped device's.
#include <atomic>
#include <memory>

#include "storage/device.hpp"

namespace vigil::storage {

class GuardedDevice final : public Device {
 public:
  static constexpr std::uint32_t kDefaultFailAfter = 3;
  explicit GuardedDevice(std::unique_ptr<Device> inner, std::uint32_t fail_after = kDefaultFailAfter);
  ~GuardedDevice() override;  // completes what is in flight while the counters still exist

  bool failing() const noexcept { return failing_.load(std::memory_order_acquire); }
  // The flag itself, for streams that check it every cycle.
  const std::atomic<bool>& failing_flag() const noexcept { return failing_; }
  std::uint32_t fail_after() const noexcept { return fail_after_; }
  std::uint32_t consecutive_failures() const noexcept { return in_a_row_.load(std::memory_order_relaxed); }
  std::uint64_t retried_writes() const noexcept { return retried_.load(std::memory_order_relaxed); }
  Device& inner() noexcept { return *inner_; }

  const DeviceInfo& info() const noexcept override { return inner_->info(); }
  Result<void> submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept override;
  Result<void> submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                            IoCallback done) noexcept override;
  Result<void> submit_flush(IoCallback done) noexcept override;
  std::size_t poll(std::size_t min_complete) noexcept override;
  std::size_t in_flight() const noexcept override { return inner_->in_flight(); }
  std::size_t max_in_flight() const noexcept override { return inner_->max_in_flight(); }
  void wake() noexcept override { inner_->wake(); }

 private:
  void outcome(bool ok) noexcept;

  std::unique_ptr<Device> inner_;
  std::uint32_t fail_after_;
  std::atomic<std::uint32_t> in_a_row_{0};
  std::atomic<std::uint64_t> retried_{0};
  std::atomic<bool> failing_{false};
  std::size_t delivered_ = 0;  // callers' callbacks run (a retried write's first failure is not one)
};

}  // namespace vigil::storage
