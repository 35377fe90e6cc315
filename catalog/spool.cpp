#include "catalog/spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include "storage/crc32c.hpp"

namespace vigil::catalog {
namespace {

constexpr std::uint32_t kMagic = 0x50534756;  // "VGSP" little-endian
constexpr std::size_t kHeaderBytes = 12;
constexpr std::uint32_t kMaxRecordBytes = 64u << 20;  // far above any row; a larger length is damage

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(), what + " " + path.string());
}

std::uint32_t crc_of(std::string_view bytes) {
  return storage::crc32c(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
}

void put_u32(std::string& out, std::uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

Spool::Spool(std::filesystem::path path) : path_(std::move(path)) {
  const bool existed = std::filesystem::exists(path_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) fail("opening the catalog spool", path_);
  const auto end = ::lseek(fd_, 0, SEEK_END);
  bytes_ = end > 0 ? static_cast<std::uint64_t>(end) : 0;
  if (!existed) {
    // The file's name must survive a crash as well as its contents.
    const int dir = ::open(path_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
  }
}

Spool::~Spool() {
  if (fd_ >= 0) ::close(fd_);
}

void Spool::append(std::span<const std::string> records) {
  if (records.empty()) return;
  std::string out;
  for (const auto& r : records) {
    put_u32(out, kMagic);
    put_u32(out, static_cast<std::uint32_t>(r.size()));
    put_u32(out, crc_of(r));
    out += r;
  }
  std::size_t done = 0;
  while (done < out.size()) {
    const auto n = ::write(fd_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A partial append is a torn record the reader stops at: cut it off so later appends are
      // readable after it.
      const int saved = errno;
      if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {
        // Left as it is: read() reports what follows as unreadable.
      }
      errno = saved ? saved : EIO;
      fail("writing the catalog spool", path_);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd_) != 0) fail("flushing the catalog spool", path_);
  bytes_ += out.size();
}

void Spool::clear() {
  if (bytes_ == 0) return;
  if (::ftruncate(fd_, 0) != 0) fail("emptying the catalog spool", path_);
  if (::fdatasync(fd_) != 0) fail("flushing the catalog spool", path_);
  bytes_ = 0;
}

Spool::Contents Spool::read(const std::filesystem::path& path) {
  Contents c;
  std::ifstream in(path, std::ios::binary);
  if (!in) return c;
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = 0;
  while (at + kHeaderBytes <= all.size()) {
    const char* h = all.data() + at;
    const auto n = get_u32(h + 4);
    if (get_u32(h) != kMagic || n > kMaxRecordBytes || at + kHeaderBytes + n > all.size()) break;
    std::string payload = all.substr(at + kHeaderBytes, n);
    if (crc_of(payload) != get_u32(h + 8)) break;
    c.records.push_back(std::move(payload));
    at += kHeaderBytes + n;
  }
  c.unreadable_bytes = all.size() - at;
  return c;
}

}  // namespace vigil::catalog
