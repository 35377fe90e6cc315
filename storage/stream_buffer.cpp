#include "storage/stream_buffer.hpp"

#include <cmath>
#include <cstring>

namespace vigil::storage {

std::size_t stream_io_bytes(Rate rate, double cycle_s, std::size_t block_bytes) noexcept {
  const double raw = std::ceil(rate.bytes_over(cycle_s));
  const auto blocks = static_cast<std::size_t>(std::ceil(raw / static_cast<double>(block_bytes)));
  return std::max<std::size_t>(1, blocks) * block_bytes;
}

// --- RecordingBuffer ---

RecordingBuffer::RecordingBuffer(StreamRegion region, std::size_t io_bytes, std::size_t block_bytes)
    : region_(region),
      io_bytes_(io_bytes),
      halves_{AlignedBuffer(io_bytes, block_bytes), AlignedBuffer(io_bytes, block_bytes)} {}

Result<void> RecordingBuffer::append(std::span<const std::byte> bytes) noexcept {
  std::lock_guard lock(mu_);
  if (bytes.size() > io_bytes_ - filled_) {
    refused_ += bytes.size();
    return errc::rate_exceeded;
  }
  std::memcpy(halves_[filling_].data() + filled_, bytes.data(), bytes.size());
  filled_ += bytes.size();
  return {};
}

StreamIo RecordingBuffer::prepare(std::uint64_t) {
  std::lock_guard lock(mu_);
  if (writing_) return {.write = true, .skip_reason = "previous_write_pending"};
  if (filled_ == 0) return {.write = true, .skip_reason = "no_data"};
  // The filling half becomes this cycle's write; the network continues in the other one.
  // A partly filled half is written whole (zero tail): the layout stays one S-sized step per
  // cycle, which is what admission charged for.
  const int full = filling_;
  std::memset(halves_[full].data() + filled_, 0, io_bytes_ - filled_);
  filling_ ^= 1;
  filled_ = 0;
  writing_ = true;
  const std::uint64_t offset = region_.offset + position_;
  position_ = (position_ + io_bytes_) % region_.bytes;
  return {.write = true, .pieces = {{offset, halves_[full].span()}}};
}

void RecordingBuffer::finished(std::uint64_t, Result<void> result) {
  std::lock_guard lock(mu_);
  writing_ = false;
  if (result) written_ += io_bytes_;
  else ++failed_;
}

std::uint64_t RecordingBuffer::refused_bytes() const noexcept {
  std::lock_guard lock(mu_);
  return refused_;
}

// --- PlaybackBuffer ---

PlaybackBuffer::PlaybackBuffer(StreamRegion region, std::size_t io_bytes, std::size_t block_bytes)
    : region_(region),
      io_bytes_(io_bytes),
      halves_{AlignedBuffer(io_bytes, block_bytes), AlignedBuffer(io_bytes, block_bytes)} {}

std::span<const std::byte> PlaybackBuffer::ready() noexcept {
  std::lock_guard lock(mu_);
  if (!full_[next_ready_]) return {};
  return halves_[next_ready_].span();
}

void PlaybackBuffer::release() noexcept {
  std::lock_guard lock(mu_);
  if (!full_[next_ready_]) return;
  full_[next_ready_] = false;
  next_ready_ ^= 1;
}

StreamIo PlaybackBuffer::prepare(std::uint64_t) {
  std::lock_guard lock(mu_);
  if (reading_) return {.skip_reason = "previous_read_pending"};
  if (full_[next_fill_]) {
    ++stalled_;  // both halves hold undrained data: the consumer is behind, not the disk
    return {.skip_reason = "consumer_stalled"};
  }
  reading_ = true;
  const std::uint64_t offset = region_.offset + position_;
  position_ = (position_ + io_bytes_) % region_.bytes;
  return {.write = false, .pieces = {{offset, halves_[next_fill_].span()}}};
}

void PlaybackBuffer::finished(std::uint64_t, Result<void> result) {
  std::lock_guard lock(mu_);
  reading_ = false;
  if (!result) return;
  full_[next_fill_] = true;
  next_fill_ ^= 1;
  read_ += io_bytes_;
}

std::uint64_t PlaybackBuffer::stalled_cycles() const noexcept {
  std::lock_guard lock(mu_);
  return stalled_;
}

}  // namespace vigil::storage
