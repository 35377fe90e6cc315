#pragma once
// FileDevice: a regular file or a block device, opened with O_DIRECT, behind the Device seam.
// Backends: io_uring (liburing) with at most max_in_flight commands in the ring, or — where
// io_uring is unavailable (old kernel, disabled by sysctl, seccomp) — synchronous
// pread/pwrite/fdatasync executed inside poll(), announced by one warning log line.
// Durability: durable writes use RWF_DSYNC; flush is fdatasync (IORING_FSYNC_DATASYNC).
// A short transfer is an io_error, never a silent success.
// Thread: the disk's IO thread only (see device.hpp). Errors: values.
#include <filesystem>
#include <memory>

#include "storage/device.hpp"

namespace vigil::storage {

enum class IoBackend { automatic, io_uring, sync };
const char* io_backend_name(IoBackend b) noexcept;

struct FileDeviceOptions {
  std::uint64_t create_bytes = 0;  // create or extend a regular file to this size; 0 = must exist
  std::size_t max_in_flight = 8;
  IoBackend backend = IoBackend::automatic;
  // Take an exclusive flock (busy if another process holds it): vigild and `vigil fsck` set it
  // so a volume is never recovered or repaired by two processes at once.
  bool exclusive = false;
};

class FileDevice final : public Device {
 public:
  static Result<std::unique_ptr<FileDevice>> open(const std::filesystem::path& path,
                                                  const FileDeviceOptions& options = {}) noexcept;
  ~FileDevice() override;  // waits for in-flight commands, then closes
  FileDevice(const FileDevice&) = delete;
  FileDevice& operator=(const FileDevice&) = delete;

  IoBackend backend() const noexcept;

  const DeviceInfo& info() const noexcept override;
  Result<void> submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept override;
  Result<void> submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                            IoCallback done) noexcept override;
  Result<void> submit_flush(IoCallback done) noexcept override;
  std::size_t poll(std::size_t min_complete) noexcept override;
  std::size_t in_flight() const noexcept override;
  std::size_t max_in_flight() const noexcept override;
  void wake() noexcept override;  // an eventfd the ring polls (io_uring backend)

  struct Impl;  // backend state (file_device.cpp)
  explicit FileDevice(std::unique_ptr<Impl> impl) noexcept;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::storage
