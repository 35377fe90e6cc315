#include "storage/device.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

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

}  // namespace

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
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

}  // namespace vigil::storage
