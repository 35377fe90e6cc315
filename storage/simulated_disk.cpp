#include "storage/simulated_disk.hpp"

#include <algorithm>
#include <cstring>

namespace vigil::storage {

SimulatedDisk::SimulatedDisk(VirtualClock& clock, SimulatedDiskOptions options, std::unique_ptr<TimingModel> timing)
    : clock_(clock),
      options_(options),
      timing_(std::move(timing)),
      durable_(options.store_data ? options.size_bytes : 0),
      cache_(options.store_data ? options.size_bytes : 0) {
  info_.name = "sim:memory";
  info_.logical_block_bytes = options.block_bytes;
  info_.size_bytes = options.size_bytes;
  info_.optimal_io_bytes = 0;
  info_.rotational = false;
}

Result<void> SimulatedDisk::check(std::uint64_t offset, std::size_t len, const void* buf) const noexcept {
  const std::uint64_t b = options_.block_bytes;
  if (offset % b || len % b || reinterpret_cast<std::uintptr_t>(buf) % b) return errc::invalid_argument;
  if (offset > options_.size_bytes || len > options_.size_bytes - offset) return errc::invalid_argument;
  return {};
}

Result<void> SimulatedDisk::enqueue(Command cmd) noexcept {
  if (queue_.size() >= options_.max_in_flight) return errc::unavailable;
  const std::size_t bytes = cmd.kind == IoKind::write ? cmd.write_buf.size() : cmd.read_buf.size();
  const Nanos start = std::max(busy_until_, clock_.now());
  busy_until_ = start + timing_->service_time({cmd.kind, cmd.offset, bytes, cmd.durable, start});
  cmd.complete_at = busy_until_;
  cmd.ordinal = ++submitted_;
  cmd.write_ordinal = cmd.kind == IoKind::write ? ++writes_submitted_ : 0;
  queue_.push_back(std::move(cmd));
  return {};
}

Result<void> SimulatedDisk::submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept {
  if (auto r = check(offset, buf.size(), buf.data()); !r) return r;
  return enqueue(Command{IoKind::read, offset, buf, {}, false, std::move(done), {}, 0, 0});
}

Result<void> SimulatedDisk::submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                                         IoCallback done) noexcept {
  if (auto r = check(offset, buf.size(), buf.data()); !r) return r;
  return enqueue(Command{IoKind::write, offset, {}, buf, durable, std::move(done), {}, 0, 0});
}

Result<void> SimulatedDisk::submit_flush(IoCallback done) noexcept {
  return enqueue(Command{IoKind::flush, 0, {}, {}, false, std::move(done), {}, 0, 0});
}

Result<void> SimulatedDisk::submit_seek(std::uint64_t offset, IoCallback done) noexcept {
  if (offset >= options_.size_bytes) return errc::invalid_argument;
  return enqueue(Command{IoKind::seek, offset, {}, {}, false, std::move(done), {}, 0, 0});
}

Result<std::size_t> SimulatedDisk::execute(const Command& cmd) noexcept {
  if (powered_off_) return errc::io_error;
  if (fail_ && fail_->first == cmd.ordinal) return fail_->second;
  if (tear_ && cmd.kind == IoKind::write && tear_->first == cmd.write_ordinal) {
    // Power is lost mid-transfer: a prefix reaches the media, the rest never does.
    const std::size_t k = std::min(tear_->second, cmd.write_buf.size());
    if (options_.store_data) std::memcpy(durable_.data() + cmd.offset, cmd.write_buf.data(), k);
    powered_off_ = true;
    return errc::io_error;
  }
  if (!options_.store_data) {
    // Timing-only disk (benchmarks on a 40 GB model): nothing is kept and reads leave the
    // buffer as it was (touching gigabytes of buffers would cost more than the simulation).
    switch (cmd.kind) {
      case IoKind::read:
        counters_.reads++;
        counters_.bytes_read += cmd.read_buf.size();
        return cmd.read_buf.size();
      case IoKind::write:
        counters_.writes++;
        counters_.bytes_written += cmd.write_buf.size();
        return cmd.write_buf.size();
      case IoKind::flush: counters_.flushes++; return std::size_t{0};
      case IoKind::seek: counters_.seeks++; return std::size_t{0};
    }
  }
  switch (cmd.kind) {
    case IoKind::seek: counters_.seeks++; return std::size_t{0};
    case IoKind::read:
      std::memcpy(cmd.read_buf.data(), cache_.data() + cmd.offset, cmd.read_buf.size());
      counters_.reads++;
      counters_.bytes_read += cmd.read_buf.size();
      return cmd.read_buf.size();
    case IoKind::write:
      std::memcpy(cache_.data() + cmd.offset, cmd.write_buf.data(), cmd.write_buf.size());
      if (cmd.durable) {
        std::memcpy(durable_.data() + cmd.offset, cmd.write_buf.data(), cmd.write_buf.size());
      } else {
        dirty_.emplace_back(cmd.offset, cmd.write_buf.size());
      }
      counters_.writes++;
      counters_.bytes_written += cmd.write_buf.size();
      return cmd.write_buf.size();
    case IoKind::flush:
      for (auto [off, len] : dirty_) std::memcpy(durable_.data() + off, cache_.data() + off, len);
      dirty_.clear();
      counters_.flushes++;
      return std::size_t{0};
  }
  return errc::io_error;
}

std::size_t SimulatedDisk::poll(std::size_t min_complete) noexcept {
  std::size_t ran = 0;
  while (!queue_.empty()) {
    Command& front = queue_.front();
    if (front.complete_at > clock_.now()) {
      if (ran >= min_complete) break;
      clock_.advance_to(front.complete_at);  // virtual time: wait by jumping ahead
    }
    Command cmd = std::move(front);
    queue_.pop_front();
    auto result = execute(cmd);
    if (result) {
      ++completed_;
      if (power_fail_at_ && completed_ >= *power_fail_at_) powered_off_ = true;
    }
    ++counters_.commands;
    ++ran;
    if (cmd.done) cmd.done(result);
  }
  return ran;
}

void SimulatedDisk::fail_io(std::uint64_t nth, errc code) { fail_ = {submitted_ + nth, code}; }

void SimulatedDisk::tear_write(std::uint64_t nth_write, std::size_t k) { tear_ = {writes_submitted_ + nth_write, k}; }

void SimulatedDisk::power_fail_after(std::uint64_t n) {
  power_fail_at_ = completed_ + n;
  if (n == 0) powered_off_ = true;
}

void SimulatedDisk::crash(bool lose_cache) {
  queue_.clear();  // in-flight commands vanish with the process; their callbacks never run
  if (!lose_cache) {
    for (auto [off, len] : dirty_) std::memcpy(durable_.data() + off, cache_.data() + off, len);
  }
  cache_ = durable_;
  dirty_.clear();
  fail_.reset();
  tear_.reset();
  power_fail_at_.reset();
  powered_off_ = false;
  busy_until_ = clock_.now();
}

void SimulatedDisk::restore(const std::vector<std::byte>& image) {
  durable_ = image;
  durable_.resize(options_.size_bytes);
  crash();
}

}  // namespace vigil::storage
