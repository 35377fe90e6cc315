#include "common/log_rotation.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace fs = std::filesystem;

namespace vigil {
namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string errno_text(const std::string& what, const fs::path& path, int e) {
  return what + " " + path.string() + ": " + std::strerror(e);
}

fs::path numbered(const fs::path& path, int n) { return fs::path(path.string() + "." + std::to_string(n)); }

// Copies [from, to) of IN to the end of OUT. Returns 0 or an errno.
int copy_range(int in, int out, std::uint64_t from, std::uint64_t to) {
  char buf[64 * 1024];
  while (from < to) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, to - from));
    const ssize_t n = ::pread(in, buf, want, static_cast<off_t>(from));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;  // shorter than it was: someone else truncated it
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return errno;
      done += w;
    }
    from += static_cast<std::uint64_t>(n);
  }
  return 0;
}

}  // namespace

LogRotationResult rotate_log_if_large(const fs::path& path, const LogRotationLimits& limits) {
  LogRotationResult r;
  Fd in(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (in.fd < 0) {
    if (errno == ENOENT) return r;
    r.outcome = LogRotated::failed;
    r.error = errno_text("opening", path, errno);
    return r;
  }
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) {
    r.outcome = LogRotated::failed;
    r.error = errno_text("stat", path, errno);
    return r;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size <= limits.max_bytes) return r;

  // Older files move up one number; the oldest beyond KEEP goes.
  const int keep = std::max(limits.keep, 1);
  std::error_code ec;
  fs::remove(numbered(path, keep), ec);
  for (int i = keep - 1; i >= 1; --i) {
    fs::rename(numbered(path, i), numbered(path, i + 1), ec);  // a missing one is no error
  }
  const auto first = numbered(path, 1);
  Fd out(::open(first.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 0777));
  if (out.fd < 0) {
    r.outcome = LogRotated::failed;
    r.error = errno_text("creating", first, errno);
    return r;
  }
  // The front that can be collapsed: whole file-system blocks, ending before the end of the file
  // (the kernel refuses a range that reaches it). The rest — less than a block, part of a
  // line — stays at the head of PATH.
  const std::uint64_t block = st.st_blksize > 0 ? static_cast<std::uint64_t>(st.st_blksize) : 4096;
  std::uint64_t cut = size / block * block;
  if (cut == size) cut -= block;
  if (cut > 0) {
    if (int e = copy_range(in.fd, out.fd, 0, cut)) {
      r.outcome = LogRotated::failed;
      r.error = errno_text("copying to", first, e);
      return r;
    }
    if (::fallocate(in.fd, FALLOC_FL_COLLAPSE_RANGE, 0, static_cast<off_t>(cut)) == 0) {
      r.outcome = LogRotated::lossless;
      r.moved_bytes = cut;
      return r;
    }
    if (errno != EOPNOTSUPP && errno != EINVAL) {
      r.outcome = LogRotated::failed;
      r.error = errno_text("collapsing the front of", path, errno);
      return r;
    }
  }
  // No collapse here: the rest up to the end as it is now, then the file emptied.
  if (::fstat(in.fd, &st) != 0) {
    r.outcome = LogRotated::failed;
    r.error = errno_text("stat", path, errno);
    return r;
  }
  const auto end = static_cast<std::uint64_t>(st.st_size);
  if (int e = copy_range(in.fd, out.fd, cut, end)) {
    r.outcome = LogRotated::failed;
    r.error = errno_text("copying to", first, e);
    return r;
  }
  if (::ftruncate(in.fd, 0) != 0) {
    r.outcome = LogRotated::failed;
    r.error = errno_text("truncating", path, errno);
    return r;
  }
  r.outcome = LogRotated::truncated;
  r.moved_bytes = end;
  return r;
}

}  // namespace vigil
