// An interactive request reaches the device while the cycle's D chunks (or its flush) are still
// in flight: the IO thread, blocked in poll(), is woken by submit() (Device::wake) and gives
// the request one slot beyond D. A device whose commands complete only when the test releases
// them makes this deterministic: before the fix the read was submitted only after a chunk
// completed, so with every chunk held it never was.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "storage/cycle_scheduler.hpp"
#include "tests/support/eventually.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;
using vigil::test::eventually;

namespace {

// Commands complete only once released; poll(1) blocks until then or until wake().
class HeldDevice final : public Device {
 public:
  HeldDevice() { info_ = {.name = "held", .logical_block_bytes = 4096, .size_bytes = 64ull << 30}; }
  const DeviceInfo& info() const noexcept override { return info_; }
  vigil::Result<void> submit_read(std::uint64_t, std::span<std::byte> buf, IoCallback done) noexcept override {
    return add(false, false, buf.size(), std::move(done));
  }
  vigil::Result<void> submit_write(std::uint64_t, std::span<const std::byte> buf, bool,
                                   IoCallback done) noexcept override {
    return add(true, false, buf.size(), std::move(done));
  }
  vigil::Result<void> submit_flush(IoCallback done) noexcept override { return add(true, true, 0, std::move(done)); }
  std::size_t poll(std::size_t min_complete) noexcept override {
    std::size_t ran = 0;
    std::unique_lock lock(mu_);
    while (true) {
      if (released_ && !queue_.empty()) {
        auto cmd = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        cmd.done(cmd.bytes);
        lock.lock();
        ++ran;
        continue;
      }
      if (ran >= min_complete || queue_.empty()) return ran;
      if (woken_) {
        woken_ = false;
        return ran;
      }
      cv_.wait(lock);
    }
  }
  std::size_t in_flight() const noexcept override {
    std::lock_guard lock(mu_);
    return queue_.size();
  }
  std::size_t max_in_flight() const noexcept override { return 8; }
  void wake() noexcept override {
    std::lock_guard lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }

  void release_all() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Commands in flight now: (reads, writes).
  std::pair<int, int> held() const {
    std::lock_guard lock(mu_);
    int r = 0, w = 0;
    for (const auto& c : queue_) (c.write ? w : r) += 1;
    return {r, w};
  }

 private:
  struct Cmd {
    bool write, flush;
    std::size_t bytes;
    IoCallback done;
  };
  vigil::Result<void> add(bool write, bool flush, std::size_t bytes, IoCallback done) {
    std::lock_guard lock(mu_);
    queue_.push_back({write, flush, bytes, std::move(done)});
    return {};
  }
  DeviceInfo info_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Cmd> queue_;
  bool released_ = false, woken_ = false;
};

class WriteStream final : public CycleStream {
 public:
  WriteStream() : buf_(8 << 20) {}
  StreamIo prepare(std::uint64_t) override { return {.write = true, .pieces = {{1ull << 30, buf_.span()}}}; }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  AlignedBuffer buf_;
};

}  // namespace

TEST_CASE("an interactive read goes to the device while the cycle's D chunks are still in flight",
          "[scheduler][interactive_slot]") {
  const std::size_t depth = GENERATE(std::size_t{1}, std::size_t{2});
  HeldDevice dev;
  SteadyClock clock;
  LinearServiceModel model(100us, 200e6);
  WriteStream stream;
  CycleScheduler sched(dev, clock, model, {.chunk_bytes = 512 * 1024, .depth = depth});
  sched.add_stream(1, stream);
  std::jthread io([&](std::stop_token st) { sched.run(st); });
  // D chunks of the stream's write are submitted and held: the IO thread waits in poll().
  REQUIRE(eventually([&] { return dev.held().second == static_cast<int>(depth); }, 10s, 1ms));

  AlignedBuffer buf(64 * 1024);
  std::atomic<bool> read_done{false};
  sched.submit({.cls = IoClass::interactive, .offset = 0, .buf = buf.span(), .done = [&](const IoOutcome& o) {
                  if (o.result) read_done = true;
                }});
  // The read is at the device beside the held chunks, and no further chunk was issued.
  CHECK(eventually([&] { return dev.held().first == 1; }, 10s, 1ms));
  CHECK(dev.held().second == static_cast<int>(depth));
  dev.release_all();
  CHECK(eventually([&] { return read_done.load(); }, 10s, 1ms));
  io.request_stop();
}
