#pragma once
// A Device that fails on purpose, for tests (docs/durability.md, "Faults at runtime"): it wraps
// any Device and follows a fault plan — EIO on the Nth write, flush or read (or on every one
// from the Nth: a device that fails for good; or on every write to the Nth write's blocks: a bad
// spot), a torn write (only a prefix of the Nth write
// lands, then EIO), a full device (every write from the Nth fails with ENOSPC, nothing lands), a
// slow device (the Nth write, or every one from it, takes kSlowWriteDelay longer: the device
// holds the command that long before it starts; it lands).
// vigild runs a volume on one with the test-only flag --fault-plan (docs/durability.md).
//
// Counting: operations are counted per kind (writes, flushes, reads) from arm() on, so a plan
// speaks of the volume in service, not of its formatting or recovery. Before arm() everything
// passes through uncounted.
// Thread: the one thread of the wrapped device (device.hpp); injected() from any thread.
// Errors: values; an injected failure is delivered through the command's callback, from poll(),
// like a real one.
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/device.hpp"

namespace vigil::storage {

struct FaultRule {
  enum class Kind { write_error, flush_error, read_error, torn_write, full, slow_write };
  Kind kind = Kind::write_error;
  std::uint64_t nth = 1;  // 1-based, among the operations of its kind (writes for torn and full)
  bool for_good = false;  // every operation from the Nth on (always for full)
  // A bad spot (writes only): every later write that touches the Nth write's blocks fails too,
  // so a retry of the same bytes cannot succeed.
  bool bad_spot = false;
};

struct FaultPlan {
  std::vector<FaultRule> rules;
};

// What a slow write (KIND slow) costs on top of the device's own time: several times what a
// profile predicts for a stream IO, so that the online model check trips within its window.
inline constexpr std::chrono::milliseconds kSlowWriteDelay{40};

// "write@3,flush@2+,torn@5!,full@40,read@7,slow@10+": KIND@N, '+' for every one from the Nth on, '!'
// (write and torn) for a bad spot. invalid_argument for anything else.
Result<FaultPlan> parse_fault_plan(std::string_view text) noexcept;
std::string fault_plan_text(const FaultPlan& plan);

class FaultyDevice final : public Device {
 public:
  FaultyDevice(std::unique_ptr<Device> inner, FaultPlan plan);
  ~FaultyDevice() override;  // delivers injected completions still pending

  // Starts counting operations against the plan (see the file comment).
  void arm() noexcept { armed_ = true; }
  // Faults injected so far.
  std::uint64_t injected() const noexcept { return injected_.load(std::memory_order_relaxed); }

  const DeviceInfo& info() const noexcept override { return inner_->info(); }
  Result<void> submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept override;
  Result<void> submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                            IoCallback done) noexcept override;
  Result<void> submit_flush(IoCallback done) noexcept override;
  std::size_t poll(std::size_t min_complete) noexcept override;
  std::size_t in_flight() const noexcept override { return inner_->in_flight() + pending_.size(); }
  std::size_t max_in_flight() const noexcept override { return inner_->max_in_flight(); }
  void wake() noexcept override { inner_->wake(); }

 private:
  // The rule that fails operation N of its kind, or null.
  const FaultRule* match(bool write, bool flush, std::uint64_t n) const noexcept;
  void fail_later(IoCallback done, Result<std::size_t> result, const char* what, std::uint64_t offset);

  std::unique_ptr<Device> inner_;
  FaultPlan plan_;
  bool armed_ = false;
  std::uint64_t writes_ = 0, flushes_ = 0, reads_ = 0;
  std::atomic<std::uint64_t> injected_{0};
  // Injected failures, completed at the next poll (never inside submit: callers may hold state
  // that a callback run from submit would see half-updated).
  std::deque<std::pair<IoCallback, Result<std::size_t>>> pending_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bad_spots_;  // [offset, end) of '!' writes
};

}  // namespace vigil::storage
