#include "storage/file_device.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <linux/fs.h>
#include <liburing.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>
#include <vector>

#include "common/log.hpp"

namespace vigil::storage {

const char* io_backend_name(IoBackend b) noexcept {
  switch (b) {
    case IoBackend::automatic: return "automatic";
    case IoBackend::io_uring: return "io_uring";
    case IoBackend::sync: return "sync";
  }
  return "unknown";
}

namespace {

enum class Op { read, write, flush };

struct Command {
  Op op;
  std::uint64_t offset;
  std::byte* buf;
  std::size_t len;
  bool durable;
  IoCallback done;
};

// An errno as a vigil error, keeping the cause in the log: callers see io_error (or
// no-space) and operators see why.
errc from_errno(int e, const char* what, std::uint64_t offset) {
  log::error("disk IO failed", {{"op", what}, {"offset", offset}, {"error", std::strerror(e)}});
  return errc::io_error;
}

}  // namespace

struct FileDevice::Impl {
  int fd = -1;
  DeviceInfo info;
  std::size_t max_in_flight = 8;
  IoBackend backend = IoBackend::sync;
  std::optional<io_uring> ring;
  std::vector<std::optional<Command>> slots;  // io_uring: user_data = slot index
  std::vector<std::size_t> free_slots;
  std::deque<Command> sync_queue;  // sync backend: executed in poll()
  std::size_t inflight = 0;
  // wake(): an eventfd with a poll request in the ring (not counted in inflight), so a poll()
  // blocked in io_uring_wait_cqe returns when another thread writes it.
  static constexpr std::uintptr_t kWakeTag = ~std::uintptr_t{0};
  int wake_fd = -1;

  ~Impl() {
    if (ring) io_uring_queue_exit(&*ring);
    if (wake_fd >= 0) ::close(wake_fd);
    if (fd >= 0) ::close(fd);
  }

  // Re-arms the wake poll; false if the ring refused it (then wake() is a no-op).
  bool arm_wake() noexcept {
    io_uring_sqe* sqe = io_uring_get_sqe(&*ring);
    if (sqe == nullptr) return false;
    io_uring_prep_poll_add(sqe, wake_fd, POLLIN);
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(kWakeTag));
    return io_uring_submit(&*ring) >= 0;
  }

  Result<void> check(std::uint64_t offset, std::size_t len, const void* buf) const noexcept {
    const std::uint64_t b = info.logical_block_bytes;
    if (offset % b || len % b || reinterpret_cast<std::uintptr_t>(buf) % b || len == 0) return errc::invalid_argument;
    if (offset > info.size_bytes || len > info.size_bytes - offset) return errc::invalid_argument;
    return {};
  }

  Result<void> submit(Command cmd) noexcept {
    if (inflight >= max_in_flight) return errc::unavailable;
    if (!ring) {
      sync_queue.push_back(std::move(cmd));
      ++inflight;
      return {};
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&*ring);
    if (sqe == nullptr) return errc::unavailable;
    switch (cmd.op) {
      case Op::read: io_uring_prep_read(sqe, fd, cmd.buf, static_cast<unsigned>(cmd.len), cmd.offset); break;
      case Op::write:
        io_uring_prep_write(sqe, fd, cmd.buf, static_cast<unsigned>(cmd.len), cmd.offset);
        if (cmd.durable) sqe->rw_flags = RWF_DSYNC;
        break;
      case Op::flush: io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC); break;
    }
    const std::size_t slot = free_slots.back();
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<std::uintptr_t>(slot)));
    int r = io_uring_submit(&*ring);
    if (r < 0) return from_errno(-r, "io_uring_submit", cmd.offset);
    free_slots.pop_back();
    slots[slot] = std::move(cmd);
    ++inflight;
    return {};
  }

  // The outcome of a finished command: RES is bytes moved or -errno.
  static Result<std::size_t> outcome(const Command& cmd, long res) {
    const char* what = cmd.op == Op::read ? "read" : cmd.op == Op::write ? "write" : "flush";
    if (res < 0) return from_errno(static_cast<int>(-res), what, cmd.offset);
    if (cmd.op != Op::flush && static_cast<std::size_t>(res) != cmd.len) {
      log::error("short disk transfer", {{"op", what}, {"offset", cmd.offset}, {"wanted", cmd.len}, {"got", res}});
      return errc::io_error;
    }
    return static_cast<std::size_t>(cmd.op == Op::flush ? 0 : res);
  }

  static long run_sync(int fd, const Command& cmd) {
    for (;;) {
      long r = 0;
      switch (cmd.op) {
        case Op::read: r = ::pread(fd, cmd.buf, cmd.len, static_cast<off_t>(cmd.offset)); break;
        case Op::write: {
          iovec iov{cmd.buf, cmd.len};
          r = ::pwritev2(fd, &iov, 1, static_cast<off_t>(cmd.offset), cmd.durable ? RWF_DSYNC : 0);
          break;
        }
        case Op::flush: r = ::fdatasync(fd); break;
      }
      if (r < 0 && errno == EINTR) continue;
      return r < 0 ? -errno : r;
    }
  }

  std::size_t poll(std::size_t min_complete) noexcept {
    std::size_t ran = 0;
    if (!ring) {
      while (!sync_queue.empty()) {
        Command cmd = std::move(sync_queue.front());
        sync_queue.pop_front();
        --inflight;
        auto result = outcome(cmd, run_sync(fd, cmd));
        ++ran;
        if (cmd.done) cmd.done(result);
      }
      return ran;
    }
    while (inflight > 0) {
      io_uring_cqe* cqe = nullptr;
      int r = ran < min_complete ? io_uring_wait_cqe(&*ring, &cqe) : io_uring_peek_cqe(&*ring, &cqe);
      if (r == -EINTR) continue;
      if (r < 0 || cqe == nullptr) break;  // -EAGAIN from peek: nothing finished yet
      if (reinterpret_cast<std::uintptr_t>(io_uring_cqe_get_data(cqe)) == kWakeTag) {
        io_uring_cqe_seen(&*ring, cqe);
        std::uint64_t n = 0;
        while (::read(wake_fd, &n, sizeof n) < 0 && errno == EINTR) {}
        // If the ring refuses the re-arm, later wakes are lost (the eventfd stays open: wake()
        // may be writing it from another thread) and poll waits for completions as before.
        if (!arm_wake()) log::warn("io_uring wake poll not re-armed", {{"device", info.name}});
        break;  // woken: return to the caller, which looks at its requests
      }
      const auto slot = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(io_uring_cqe_get_data(cqe)));
      const long res = cqe->res;
      io_uring_cqe_seen(&*ring, cqe);
      Command cmd = std::move(*slots[slot]);
      slots[slot].reset();
      free_slots.push_back(slot);
      --inflight;
      auto result = outcome(cmd, res);
      ++ran;
      if (cmd.done) cmd.done(result);
    }
    return ran;
  }
};

FileDevice::FileDevice(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

FileDevice::~FileDevice() {
  while (impl_->inflight > 0) impl_->poll(impl_->inflight);
}

Result<std::unique_ptr<FileDevice>> FileDevice::open(const std::filesystem::path& path,
                                                     const FileDeviceOptions& options) noexcept {
  auto impl = std::make_unique<Impl>();
  int flags = O_RDWR | O_DIRECT | O_CLOEXEC;
  if (options.create_bytes) flags |= O_CREAT;
  impl->fd = ::open(path.c_str(), flags, 0640);
  if (impl->fd < 0) {
    const int e = errno;
    log::error("cannot open device", {{"path", path.string()}, {"error", std::strerror(e)}});
    return e == ENOENT ? errc::not_found : e == EACCES ? errc::permission_denied : errc::io_error;
  }
  if (options.exclusive && ::flock(impl->fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    log::error("volume is in use", {{"path", path.string()}, {"error", std::strerror(e)}});
    return e == EWOULDBLOCK ? errc::busy : errc::io_error;
  }
  struct stat st {};
  if (::fstat(impl->fd, &st) != 0) return from_errno(errno, "fstat", 0);
  impl->info.name = path.string();
  if (S_ISBLK(st.st_mode)) {
    std::uint64_t bytes = 0;
    int lbs = 0;
    unsigned int opt = 0;
    if (::ioctl(impl->fd, BLKGETSIZE64, &bytes) != 0 || ::ioctl(impl->fd, BLKSSZGET, &lbs) != 0) {
      return from_errno(errno, "ioctl", 0);
    }
    if (::ioctl(impl->fd, BLKIOOPT, &opt) != 0) opt = 0;
    impl->info.size_bytes = bytes;
    impl->info.logical_block_bytes = static_cast<std::uint32_t>(lbs);
    impl->info.optimal_io_bytes = opt;
    std::ifstream rot("/sys/dev/block/" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)) +
                      "/queue/rotational");
    int r = 0;
    impl->info.rotational = (rot >> r) && r == 1;
  } else if (S_ISREG(st.st_mode)) {
    if (options.create_bytes > static_cast<std::uint64_t>(st.st_size)) {
      // Preallocate: the volume's extents must not fail for lack of space later.
      if (::fallocate(impl->fd, 0, 0, static_cast<off_t>(options.create_bytes)) != 0) {
        const int e = errno;
        log::error("cannot preallocate volume file", {{"path", path.string()}, {"error", std::strerror(e)}});
        return e == ENOSPC ? errc::unavailable : errc::io_error;
      }
      st.st_size = static_cast<off_t>(options.create_bytes);
    }
    impl->info.size_bytes = static_cast<std::uint64_t>(st.st_size);
    // O_DIRECT on files needs the filesystem's block alignment; 4096 is safe everywhere we run.
    impl->info.logical_block_bytes = 4096;
    impl->info.optimal_io_bytes = 0;
  } else {
    return errc::invalid_argument;
  }
  impl->max_in_flight = std::max<std::size_t>(1, options.max_in_flight);
  impl->slots.resize(impl->max_in_flight);
  for (std::size_t i = impl->max_in_flight; i-- > 0;) impl->free_slots.push_back(i);

  if (options.backend != IoBackend::sync) {
    impl->ring.emplace();  // initialised in place: the ring is never copied after setup
    // One entry more than the commands: the wake poll.
    int r = io_uring_queue_init(static_cast<unsigned>(impl->max_in_flight + 1), &*impl->ring, 0);
    if (r == 0) {
      impl->backend = IoBackend::io_uring;
      impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (impl->wake_fd >= 0 && !impl->arm_wake()) {
        ::close(impl->wake_fd);
        impl->wake_fd = -1;
      }
    } else {
      impl->ring.reset();
    }
    if (r == 0) {
    } else if (options.backend == IoBackend::io_uring) {
      return from_errno(-r, "io_uring_queue_init", 0);
    } else {
      log::warn("io_uring unavailable, using pread/pwrite", {{"device", path.string()}, {"reason", std::strerror(-r)}});
    }
  }
  return std::make_unique<FileDevice>(std::move(impl));
}

IoBackend FileDevice::backend() const noexcept { return impl_->backend; }
const DeviceInfo& FileDevice::info() const noexcept { return impl_->info; }
std::size_t FileDevice::in_flight() const noexcept { return impl_->inflight; }
std::size_t FileDevice::max_in_flight() const noexcept { return impl_->max_in_flight; }
std::size_t FileDevice::poll(std::size_t min_complete) noexcept { return impl_->poll(min_complete); }

void FileDevice::wake() noexcept {
  // Only the eventfd is touched from the calling thread, never the ring.
  if (impl_->wake_fd < 0) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(impl_->wake_fd, &one, sizeof one);
}

Result<void> FileDevice::submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept {
  if (auto r = impl_->check(offset, buf.size(), buf.data()); !r) return r;
  return impl_->submit({Op::read, offset, buf.data(), buf.size(), false, std::move(done)});
}

Result<void> FileDevice::submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                                      IoCallback done) noexcept {
  if (auto r = impl_->check(offset, buf.size(), buf.data()); !r) return r;
  // The kernel only reads from BUF for a write; the const_cast is for the shared command shape.
  return impl_->submit({Op::write, offset, const_cast<std::byte*>(buf.data()), buf.size(), durable, std::move(done)});
}

Result<void> FileDevice::submit_flush(IoCallback done) noexcept {
  return impl_->submit({Op::flush, 0, nullptr, 0, false, std::move(done)});
}

}  // namespace vigil::storage
