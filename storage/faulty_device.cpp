#include "storage/faulty_device.hpp"

#include <cerrno>
#include <charconv>
#include <thread>

#include "common/log.hpp"

namespace vigil::storage {
namespace {

struct KindName {
  FaultRule::Kind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {{FaultRule::Kind::write_error, "write"}, {FaultRule::Kind::flush_error, "flush"},
                               {FaultRule::Kind::read_error, "read"},   {FaultRule::Kind::torn_write, "torn"},
                               {FaultRule::Kind::full, "full"},         {FaultRule::Kind::slow_write, "slow"}};

std::string_view kind_name(FaultRule::Kind k) {
  for (const auto& e : kKinds) {
    if (e.kind == k) return e.name;
  }
  return "?";
}

// What a device that ran out of space says (a thin-provisioned disk, a full filesystem under a
// file volume): the write did not land.
boost::system::error_code no_space() { return {ENOSPC, boost::system::generic_category()}; }

}  // namespace

Result<FaultPlan> parse_fault_plan(std::string_view text) noexcept {
  FaultPlan plan;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view rule = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return errc::invalid_argument;  // "write@3,"
    const auto at = rule.find('@');
    if (at == std::string_view::npos) return errc::invalid_argument;
    FaultRule r;
    bool known = false;
    for (const auto& e : kKinds) {
      if (e.name == rule.substr(0, at)) {
        r.kind = e.kind;
        known = true;
      }
    }
    if (!known) return errc::invalid_argument;
    std::string_view count = rule.substr(at + 1);
    if (!count.empty() && count.back() == '+') {
      r.for_good = true;
      count.remove_suffix(1);
    } else if (!count.empty() && count.back() == '!') {
      if (r.kind != FaultRule::Kind::write_error && r.kind != FaultRule::Kind::torn_write)
        return errc::invalid_argument;
      r.bad_spot = true;
      count.remove_suffix(1);
    }
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), r.nth);
    if (ec != std::errc{} || end != count.data() + count.size() || r.nth == 0) return errc::invalid_argument;
    if (r.kind == FaultRule::Kind::full) r.for_good = true;  // space does not come back by itself
    plan.rules.push_back(r);
  }
  if (plan.rules.empty()) return errc::invalid_argument;
  return plan;
}

std::string fault_plan_text(const FaultPlan& plan) {
  std::string out;
  for (const auto& r : plan.rules) {
    if (!out.empty()) out += ',';
    out += std::string(kind_name(r.kind)) + "@" + std::to_string(r.nth) + (r.for_good ? "+" : r.bad_spot ? "!" : "");
  }
  return out;
}

FaultyDevice::FaultyDevice(std::unique_ptr<Device> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(std::move(plan)) {}

FaultyDevice::~FaultyDevice() {
  while (in_flight() > 0) poll(1);
}

const FaultRule* FaultyDevice::match(bool write, bool flush, std::uint64_t n) const noexcept {
  for (const auto& r : plan_.rules) {
    const bool writes = r.kind == FaultRule::Kind::write_error || r.kind == FaultRule::Kind::torn_write ||
                        r.kind == FaultRule::Kind::full || r.kind == FaultRule::Kind::slow_write;
    const bool kind_matches = write   ? writes
                              : flush ? r.kind == FaultRule::Kind::flush_error
                                      : r.kind == FaultRule::Kind::read_error;
    if (kind_matches && (n == r.nth || (r.for_good && n > r.nth))) return &r;
  }
  return nullptr;
}

void FaultyDevice::fail_later(IoCallback done, Result<std::size_t> result, const char* what, std::uint64_t offset) {
  injected_.fetch_add(1, std::memory_order_relaxed);
  log::warn("fault injected (test plan)",
            {{"device", inner_->info().name}, {"op", what}, {"offset", offset}, {"error", result.error().message()}});
  pending_.emplace_back(std::move(done), std::move(result));
}

Result<void> FaultyDevice::submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept {
  if (in_flight() >= max_in_flight()) return errc::unavailable;
  if (armed_ && match(false, false, ++reads_)) {
    fail_later(std::move(done), errc::io_error, "read", offset);
    return {};
  }
  return inner_->submit_read(offset, buf, std::move(done));
}

Result<void> FaultyDevice::submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                                        IoCallback done) noexcept {
  if (in_flight() >= max_in_flight()) return errc::unavailable;
  const FaultRule* rule = armed_ ? match(true, false, ++writes_) : nullptr;
  if (!rule) {
    for (const auto& [from, to] : bad_spots_) {
      if (offset < to && from < offset + buf.size()) {
        fail_later(std::move(done), errc::io_error, "write (bad spot)", offset);
        return {};
      }
    }
    return inner_->submit_write(offset, buf, durable, std::move(done));
  }
  if (rule->kind == FaultRule::Kind::slow_write) {
    // The IO thread waits as it would for a device that takes long to start a command; the
    // scheduler counts it as the command's device time (from its issue), as it would a real one.
    if (injected_.fetch_add(1, std::memory_order_relaxed) == 0) {
      log::warn("fault injected (test plan): slow writes",
                {{"device", info().name}, {"extra_ms", kSlowWriteDelay.count()}});
    }
    std::this_thread::sleep_for(kSlowWriteDelay);
    return inner_->submit_write(offset, buf, durable, std::move(done));
  }
  if (rule->bad_spot) bad_spots_.emplace_back(offset, offset + buf.size());
  if (rule->kind == FaultRule::Kind::full) {
    fail_later(std::move(done), no_space(), "write", offset);
    return {};
  }
  const std::size_t block = info().logical_block_bytes;
  const std::size_t prefix = rule->kind == FaultRule::Kind::torn_write ? buf.size() / 2 / block * block : 0;
  if (prefix == 0) {
    fail_later(std::move(done), errc::io_error, "write", offset);
    return {};
  }
  // A torn write: the first half lands (as a power cut or a failing sector mid-command would leave
  // it), and the caller is told the write failed.
  injected_.fetch_add(1, std::memory_order_relaxed);
  log::warn("fault injected (test plan): torn write",
            {{"device", info().name}, {"offset", offset}, {"bytes", buf.size()}, {"landed", prefix}});
  return inner_->submit_write(offset, buf.first(prefix), durable, [done = std::move(done)](Result<std::size_t>) {
    if (done) done(errc::io_error);
  });
}

Result<void> FaultyDevice::submit_flush(IoCallback done) noexcept {
  if (in_flight() >= max_in_flight()) return errc::unavailable;
  if (armed_ && match(false, true, ++flushes_)) {
    fail_later(std::move(done), errc::io_error, "flush", 0);
    return {};
  }
  return inner_->submit_flush(std::move(done));
}

std::size_t FaultyDevice::poll(std::size_t min_complete) noexcept {
  std::size_t ran = 0;
  while (!pending_.empty()) {
    auto [done, result] = std::move(pending_.front());
    pending_.pop_front();
    ++ran;
    if (done) done(std::move(result));
  }
  if (inner_->in_flight() == 0) return ran;
  return ran + inner_->poll(ran >= min_complete ? 0 : min_complete - ran);
}

}  // namespace vigil::storage
