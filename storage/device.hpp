#pragma once
// The one seam for disk IO (like LevelDB's Env): the cycle scheduler, volumes and the
// profiler talk to a Device, never to a file descriptor. Implementations: FileDevice
// (O_DIRECT file or block device; io_uring, or pread/pwrite as a fallback) and SimulatedDisk
// (memory-backed, virtual time, fault injection).
//
// Model: asynchronous submit + completion callbacks, reaped by poll(). At most
// max_in_flight() commands are outstanding; submit fails with errc::unavailable beyond that.
// Thread: a Device is used by exactly one thread, its disk's IO thread; callbacks run inside
// poll() on that thread.
// Errors: values (Result), never exceptions; every function here is noexcept. A short
// transfer is reported as errc::io_error, never as success.
// Alignment: REQUIRES offset, length and buffer address to be multiples of
// info().logical_block_bytes (use AlignedBuffer).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "common/errors.hpp"
#include "storage/clock.hpp"

namespace vigil::storage {

struct DeviceInfo {
  std::string name;  // path, or "sim:..." for a simulated disk
  std::uint32_t logical_block_bytes = 4096;
  std::uint64_t size_bytes = 0;
  std::uint32_t optimal_io_bytes = 0;  // 0 = the device does not say
  bool rotational = false;
};

// Completion of one command: bytes transferred (0 for flush) or the error.
using IoCallback = std::function<void(Result<std::size_t>)>;

class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceInfo& info() const noexcept = 0;

  // Queue a read of buf.size() bytes at OFFSET into BUF. BUF must stay valid until the callback.
  virtual Result<void> submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept = 0;
  // Queue a write. DURABLE = the data is on stable storage when the callback reports success
  // (RWF_DSYNC / FUA); otherwise a later flush makes it durable.
  virtual Result<void> submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                                    IoCallback done) noexcept = 0;
  // Queue a flush: every write completed before it is on stable storage when it completes.
  virtual Result<void> submit_flush(IoCallback done) noexcept = 0;

  // Reaps finished commands and runs their callbacks. Blocks until at least MIN_COMPLETE have
  // finished (0 = do not block). Returns how many callbacks ran.
  virtual std::size_t poll(std::size_t min_complete) noexcept = 0;

  virtual std::size_t in_flight() const noexcept = 0;
  virtual std::size_t max_in_flight() const noexcept = 0;

  // Any thread: makes a poll() that is blocked (or the next one to block) return as soon as it
  // can, possibly having run no callback, so the IO thread sees a request that arrived while it
  // waited for a long command (the cycle's flush, a chunk). Default: nothing (a device whose
  // poll never blocks on the outside world, e.g. the simulated disk in virtual time).
  virtual void wake() noexcept {}
};

// Blocking helpers for code that is not on a cycle's hot path (recovery, fsck, tools, tests):
// submit one command and poll until it completes.
Result<void> read_sync(Device& dev, std::uint64_t offset, std::span<std::byte> buf) noexcept;
Result<void> write_sync(Device& dev, std::uint64_t offset, std::span<const std::byte> buf, bool durable) noexcept;
Result<void> flush_sync(Device& dev) noexcept;

// Many commands at once, up to max_in_flight() in flight: the device sees a full queue instead
// of one command at a time (an HDD sorts them by position, a file or an SSD serves them in
// parallel). Used where start-up or format touches every extent header. Waits for all of them;
// the first error is returned.
struct IoCommand {
  std::uint64_t offset = 0;
  std::span<std::byte> buf;
};
Result<void> read_many_sync(Device& dev, std::span<const IoCommand> reads) noexcept;
// Not durable: a flush_sync afterwards makes them so (one flush for all).
Result<void> write_many_sync(Device& dev, std::span<const IoCommand> writes) noexcept;

// A heap buffer aligned for O_DIRECT. Move-only; zero-filled on allocation.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Locked in memory when storage/memory_lock.hpp is enabled (vigild's real-time IO threads).
  AlignedBuffer(std::size_t bytes, std::size_t alignment = 4096);
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::span<std::byte> span() noexcept { return {data_, size_}; }
  std::span<const std::byte> span() const noexcept { return {data_, size_}; }
  // The buffer's whole pages go back to the kernel until written again (a buffer half that was
  // written and waits to fill: storage/segment_writer.hpp); its contents read as zeros.
  void release_pages() noexcept;
  // Bytes of it in memory now (mincore): what it costs, as opposed to its size.
  std::size_t resident_bytes() const noexcept;

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t locked_ = 0;  // bytes mlock'ed (memory_lock.hpp), unlocked before the free
};

}  // namespace vigil::storage
