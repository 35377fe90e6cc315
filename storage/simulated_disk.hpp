#pragma once
// SimulatedDisk: a memory-backed Device on a VirtualClock, for deterministic tests of
// everything above the Device seam, with fault injection for crash tests.
//
// Durability model: two images. `durable` is what survives a crash; a non-durable write
// lands in a volatile cache (visible to reads at once) and reaches `durable` at the next
// completed flush. A durable write (FUA) reaches both at completion. crash() drops the cache
// and everything in flight: afterwards the disk reads back exactly the durable image, which
// is what a restarted process would find.
//
// Timing: commands complete in submit order; each takes timing().service_time(...) of
// virtual time, and the clock only moves inside poll(). The HDD model plugs in here as the timing.
// Thread: single-threaded, like every Device (the IO thread).
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>
#include <algorithm>

#include "storage/device.hpp"

namespace vigil::storage {

enum class IoKind { read, write, flush, seek };

// One command as the timing model sees it. START is when the disk begins it (commands run
// one at a time in submit order), so a model can track the arm and the platter's angle.
struct TimedCommand {
  IoKind kind = IoKind::read;
  std::uint64_t offset = 0;
  std::size_t bytes = 0;
  bool durable = false;  // write with FUA / RWF_DSYNC semantics
  Nanos start{0};
};

// How long a command occupies the disk. The default is a flat cost plus transfer time; the
// HDD model (storage/hdd_model.hpp) adds seeks, rotation, zones, caches and buffers.
class TimingModel {
 public:
  virtual ~TimingModel() = default;
  virtual Nanos service_time(const TimedCommand& cmd) = 0;
};

class FixedTiming final : public TimingModel {
 public:
  explicit FixedTiming(Nanos per_command = std::chrono::microseconds(100), double bytes_per_ns = 0.2)
      : per_command_(per_command), bytes_per_ns_(bytes_per_ns) {}
  Nanos service_time(const TimedCommand& cmd) override {
    if (cmd.kind == IoKind::seek) return per_command_;
    return per_command_ + Nanos(static_cast<std::int64_t>(static_cast<double>(cmd.bytes) / bytes_per_ns_));
  }

 private:
  Nanos per_command_;
  double bytes_per_ns_;
};

struct SimulatedDiskOptions {
  std::uint64_t size_bytes = 64 << 20;
  std::uint32_t block_bytes = 4096;
  std::size_t max_in_flight = 8;
  // false: timing only — no memory images (a 40 GB model disk for benchmarks); reads leave
  // their buffer untouched and crash/snapshot have nothing to keep.
  bool store_data = true;
};

class SimulatedDisk final : public Device {
 public:
  SimulatedDisk(VirtualClock& clock, SimulatedDiskOptions options = {},
                std::unique_ptr<TimingModel> timing = std::make_unique<FixedTiming>());

  TimingModel& timing() noexcept { return *timing_; }
  VirtualClock& clock() noexcept { return clock_; }
  // When the disk finishes everything queued so far (>= now).
  Nanos busy_until() const noexcept { return std::max(busy_until_, clock_.now()); }

  const DeviceInfo& info() const noexcept override { return info_; }
  Result<void> submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept override;
  Result<void> submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                            IoCallback done) noexcept override;
  Result<void> submit_flush(IoCallback done) noexcept override;
  // A SCSI-style SEEK: moves the arm to OFFSET's cylinder, transfers nothing. Not part of the
  // Device seam (real devices have no such command); the Semi-preemptible IO executor uses it
  // to split long seeks on the simulated hard disk.
  Result<void> submit_seek(std::uint64_t offset, IoCallback done) noexcept;
  std::size_t poll(std::size_t min_complete) noexcept override;
  std::size_t in_flight() const noexcept override { return queue_.size(); }
  std::size_t max_in_flight() const noexcept override { return options_.max_in_flight; }

  // --- fault injection (counts are of commands submitted from now on, 1 = the next one) ---
  // The Nth command fails with CODE and has no effect.
  void fail_io(std::uint64_t nth, errc code);
  // The Nth write persists only its first K bytes to the durable image, then the disk loses
  // power: that command and every later one fail with io_error until crash().
  void tear_write(std::uint64_t nth_write, std::size_t k);
  // After N more commands complete normally, the disk loses power (as above).
  void power_fail_after(std::uint64_t n);
  // Power loss: drops all in-flight commands (their callbacks never run) and clears injected
  // faults. LOSE_CACHE (the default, the worst case) drops writes not yet flushed; false
  // models a disk that got its whole cache onto the media in time. Afterwards the disk
  // holds exactly its durable image.
  void crash(bool lose_cache = true);
  bool powered_off() const noexcept { return powered_off_; }

  std::span<const std::byte> durable_image() const noexcept { return durable_; }
  std::vector<std::byte> snapshot() const { return durable_; }
  void restore(const std::vector<std::byte>& image);  // also drops the cache, like crash()

  struct Counters {
    std::uint64_t commands = 0, reads = 0, writes = 0, flushes = 0, seeks = 0, bytes_written = 0, bytes_read = 0;
  };
  const Counters& counters() const noexcept { return counters_; }

 private:
  struct Command {
    IoKind kind;
    std::uint64_t offset;
    std::span<std::byte> read_buf;
    std::span<const std::byte> write_buf;
    bool durable;
    IoCallback done;
    Nanos complete_at;
    std::uint64_t ordinal;        // 1-based count of all commands since the last arm
    std::uint64_t write_ordinal;  // 1-based count of writes, 0 for others
  };
  Result<void> check(std::uint64_t offset, std::size_t len, const void* buf) const noexcept;
  Result<void> enqueue(Command cmd) noexcept;
  Result<std::size_t> execute(const Command& cmd) noexcept;

  VirtualClock& clock_;
  SimulatedDiskOptions options_;
  std::unique_ptr<TimingModel> timing_;
  DeviceInfo info_;
  std::vector<std::byte> durable_;
  std::vector<std::byte> cache_;                              // current contents as reads see them
  std::vector<std::pair<std::uint64_t, std::size_t>> dirty_;  // ranges written since the last flush
  std::deque<Command> queue_;
  Nanos busy_until_{0};
  std::uint64_t submitted_ = 0, writes_submitted_ = 0;
  std::optional<std::pair<std::uint64_t, errc>> fail_;
  std::optional<std::pair<std::uint64_t, std::size_t>> tear_;
  std::optional<std::uint64_t> power_fail_at_;  // completed-command count
  std::uint64_t completed_ = 0;
  bool powered_off_ = false;
  Counters counters_;
};

}  // namespace vigil::storage
