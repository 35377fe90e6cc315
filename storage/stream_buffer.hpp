#pragma once
// Double buffers of the stream IO size S = T·BR (block-aligned), one pair per stream: memory
// per stream is exactly 2·S plus a small constant, and known at admission.
//
// RecordingBuffer: the network side appends into the filling half; at the start of a cycle the
// full half is handed to the scheduler as this cycle's write and the other half starts
// filling. A recorder that sends more than S bytes in one cycle is policed: append() refuses
// the excess with errc::rate_exceeded (the caller tells that client), nothing is dropped
// silently and no other stream is affected.
// PlaybackBuffer: the scheduler reads into the empty half; the consumer drains the ready half.
// A consumer that has not drained yet makes the stream skip that cycle's IO ("consumer_stalled")
// — the IO thread never waits for a consumer.
// Both write/read a contiguous region of the device in S-sized steps (a ring), which is what
// the thesis's dummy streams do; for recordings the segment writer supplies extents instead.
// Thread: append()/consume() from one network thread, prepare()/finished() from the IO
// thread; the hand-over is guarded by a mutex held for pointer swaps only (never during IO
// or copies of other streams). Errors: values.
#include <cstdint>
#include <mutex>
#include <span>

#include "common/rate.hpp"
#include "storage/device.hpp"
#include "storage/stream_io.hpp"

namespace vigil::storage {

struct StreamRegion {
  std::uint64_t offset = 0;  // block-aligned
  std::uint64_t bytes = 0;   // a multiple of the stream IO size
};

// S = T·BR rounded up to whole blocks.
std::size_t stream_io_bytes(Rate rate, double cycle_s, std::size_t block_bytes) noexcept;

class RecordingBuffer final : public CycleStream {
 public:
  RecordingBuffer(StreamRegion region, std::size_t io_bytes, std::size_t block_bytes = 4096);

  // Network side. rate_exceeded when BYTES do not fit in this cycle's half.
  Result<void> append(std::span<const std::byte> bytes) noexcept;

  StreamIo prepare(std::uint64_t cycle) override;
  void finished(std::uint64_t cycle, Result<void> result) override;

  std::size_t memory_bytes() const noexcept { return 2 * io_bytes_; }
  std::uint64_t refused_bytes() const noexcept;
  std::uint64_t written_bytes() const noexcept { return written_; }
  std::uint64_t failed_ios() const noexcept { return failed_; }

 private:
  StreamRegion region_;
  std::size_t io_bytes_;
  AlignedBuffer halves_[2];
  mutable std::mutex mu_;
  int filling_ = 0;             // half the network appends to
  std::size_t filled_ = 0;      // bytes in the filling half
  bool writing_ = false;        // the other half is being written
  std::uint64_t position_ = 0;  // next write offset within the region
  std::uint64_t refused_ = 0, written_ = 0, failed_ = 0;
};

class PlaybackBuffer final : public CycleStream {
 public:
  PlaybackBuffer(StreamRegion region, std::size_t io_bytes, std::size_t block_bytes = 4096);

  // Consumer side: the ready half (empty span if none), then release() when done with it.
  std::span<const std::byte> ready() noexcept;
  void release() noexcept;

  StreamIo prepare(std::uint64_t cycle) override;
  void finished(std::uint64_t cycle, Result<void> result) override;

  std::size_t memory_bytes() const noexcept { return 2 * io_bytes_; }
  std::uint64_t stalled_cycles() const noexcept;
  std::uint64_t read_bytes() const noexcept { return read_; }

 private:
  StreamRegion region_;
  std::size_t io_bytes_;
  AlignedBuffer halves_[2];
  mutable std::mutex mu_;
  bool full_[2] = {false, false};  // holds data the consumer has not released
  int next_fill_ = 0;
  int next_ready_ = 0;
  bool reading_ = false;
  std::uint64_t position_ = 0;
  std::uint64_t stalled_ = 0, read_ = 0;
};

}  // namespace vigil::storage
