#include "storage/device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "common/page_memory.hpp"
#include "storage/memory_lock.hpp"

namespace vigil::storage {
namespace {

// Submit, then poll until this command's callback has run.
template <class Submit>
Result<void> run_sync(Device& dev, Submit submit) noexcept {
  std::optional<Result<std::size_t>> outcome;
  auto submitted = submit([&outcome](Result<std::size_t> r) { outcome = std::move(r); });
  if (!submitted) return submitted.error();
  while (!outcome) dev.poll(1);
  if (!*outcome) return outcome->error();
  return {};
}

// Keeps up to max_in_flight() commands in flight until all of COMMANDS are done.
Result<void> run_many(Device& dev, std::span<const IoCommand> commands, bool write) noexcept {
  std::optional<std::error_code> first_error;
  std::size_t next = 0, done = 0;
  const std::size_t depth = std::max<std::size_t>(1, dev.max_in_flight());
  auto on_done = [&](Result<std::size_t> r) {
    ++done;
    if (!r && !first_error) first_error = r.error();
  };
  while (done < commands.size()) {
    // Stop submitting after an error; wait for what is in flight (its buffers are ours).
    while (!first_error && next < commands.size() && next - done < depth) {
      const auto& c = commands[next];
      auto submitted =
          write ? dev.submit_write(c.offset, c.buf, false, on_done) : dev.submit_read(c.offset, c.buf, on_done);
      if (!submitted) {
        if (submitted.error() == errc::unavailable && next > done) break;  // the queue is full: reap first
        first_error = submitted.error();
        break;
      }
      ++next;
    }
    if (next == done) break;  // nothing in flight (an error stopped the submissions)
    dev.poll(1);
  }
  if (first_error) return *first_error;
  return {};
}

}  // namespace

Result<void> read_many_sync(Device& dev, std::span<const IoCommand> reads) noexcept {
  return run_many(dev, reads, /*write=*/false);
}

Result<void> write_many_sync(Device& dev, std::span<const IoCommand> writes) noexcept {
  return run_many(dev, writes, /*write=*/true);
}

Result<void> read_sync(Device& dev, std::uint64_t offset, std::span<std::byte> buf) noexcept {
  return run_sync(dev, [&](IoCallback cb) { return dev.submit_read(offset, buf, std::move(cb)); });
}

Result<void> write_sync(Device& dev, std::uint64_t offset, std::span<const std::byte> buf, bool durable) noexcept {
  return run_sync(dev, [&](IoCallback cb) { return dev.submit_write(offset, buf, durable, std::move(cb)); });
}

Result<void> flush_sync(Device& dev) noexcept {
  return run_sync(dev, [&](IoCallback cb) { return dev.submit_flush(std::move(cb)); });
}

AlignedBuffer::AlignedBuffer(std::size_t bytes, std::size_t alignment) : size_(bytes) {
  if (bytes == 0) return;
  // aligned_alloc needs a size that is a multiple of the alignment.
  std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  data_ = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, rounded);
  if (memory_lock::lock(data_, rounded)) locked_ = rounded;
}

void AlignedBuffer::release_pages() noexcept {
  if (data_ == nullptr) return;
  const auto [first, last] = page_memory::whole_pages(data_, size_);
  if (last == first) return;
  // Only pages wholly inside the buffer: the allocator's own bytes around it are left alone.
  (void)memory_lock::give_back(reinterpret_cast<void*>(first), last - first, locked_ != 0);
}

std::size_t AlignedBuffer::resident_bytes() const noexcept { return page_memory::resident_bytes(data_, size_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      locked_(std::exchange(other.locked_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    if (locked_) memory_lock::unlock(data_, locked_);
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    locked_ = std::exchange(other.locked_, 0);
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() {
  // Unlocked before the free: the allocator may keep the pages, and a locked page it hands out
  // again would count against RLIMIT_MEMLOCK for good.
  if (locked_) memory_lock::unlock(data_, locked_);
  std::free(data_);
}

}  // namespace vigil::storage
