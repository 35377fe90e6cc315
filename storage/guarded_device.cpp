#include "storage/guarded_device.hpp"

#include "common/log.hpp"

namespace vigil::storage {

GuardedDevice::GuardedDevice(std::unique_ptr<Device> inner, std::uint32_t fail_after)
    : inner_(std::move(inner)), fail_after_(std::max<std::uint32_t>(1, fail_after)) {}

GuardedDevice::~GuardedDevice() {
  while (inner_->in_flight() > 0) inner_->poll(1);
}

void GuardedDevice::outcome(bool ok) noexcept {
  if (ok) {
    in_a_row_.store(0, std::memory_order_relaxed);
    return;
  }
  const auto n = in_a_row_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n >= fail_after_ && !failing_.exchange(true, std::memory_order_acq_rel)) {
    log::error("volume failing: its device failed writes or flushes repeatedly",
               {{"device", info().name}, {"failures_in_a_row", n}});
  }
}

Result<void> GuardedDevice::submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept {
  return inner_->submit_read(offset, buf, [this, done = std::move(done)](Result<std::size_t> r) {
    ++delivered_;
    if (done) done(std::move(r));
  });
}

Result<void> GuardedDevice::submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                                         IoCallback done) noexcept {
  // The retry is submitted from inside poll(), by the first attempt's completion: BUF is still
  // the caller's (it must stay valid until DONE runs) and the first attempt's slot is free again.
  return inner_->submit_write(offset, buf, durable,
                              [this, offset, buf, durable, done = std::move(done)](Result<std::size_t> first) mutable {
                                if (first) {
                                  outcome(true);
                                  ++delivered_;
                                  if (done) done(std::move(first));
                                  return;
                                }
                                retried_.fetch_add(1, std::memory_order_relaxed);
                                log::warn("disk write failed; writing the same bytes again",
                                          {{"device", info().name},
                                           {"offset", offset},
                                           {"bytes", buf.size()},
                                           {"error", first.error().message()}});
                                auto second = [this, done](Result<std::size_t> r) {
                                  outcome(r.has_value());
                                  ++delivered_;
                                  if (done) done(std::move(r));
                                };
                                if (auto s = inner_->submit_write(offset, buf, durable, second); !s) second(s.error());
                              });
}

Result<void> GuardedDevice::submit_flush(IoCallback done) noexcept {
  return inner_->submit_flush([this, done = std::move(done)](Result<std::size_t> r) {
    outcome(r.has_value());
    ++delivered_;
    if (done) done(std::move(r));
  });
}

std::size_t GuardedDevice::poll(std::size_t min_complete) noexcept {
  // A retried write's first completion runs no caller callback: keep polling until MIN_COMPLETE
  // of the callers' callbacks ran (or nothing is left in flight).
  const std::size_t start = delivered_;
  // An inner poll that ran nothing although asked to block was woken (wake()): return too.
  std::size_t ran = inner_->poll(min_complete);
  while (ran > 0 && delivered_ - start < min_complete && inner_->in_flight() > 0) {
    ran = inner_->poll(1);
  }
  return delivered_ - start;
}

}  // namespace vigil::storage
