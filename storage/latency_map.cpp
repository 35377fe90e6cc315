#include "storage/latency_map.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "storage/crc32c.hpp"
#include "storage/endian.hpp"

namespace vigil::storage {
namespace {

// File layout (little-endian): header, then `cells` records, then the CRC32C of all before it.
constexpr char kMagic[8] = {'V', 'G', 'L', 'A', 'T', 'M', 'A', 'P'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8;  // magic, version, reserved, device, region, cells
constexpr std::size_t kCellBytes = 4 + 4 + 4 + 4;            // from, to, worst_ns, samples
constexpr std::size_t kCrcBytes = 4;
// An exponential average over about this many updates (change_rate()).
constexpr double kChangeWindow = 256;

}  // namespace

LatencyMap::LatencyMap(std::uint64_t device_bytes, std::uint64_t region_bytes) noexcept
    : device_bytes_(device_bytes), region_bytes_(region_bytes == 0 ? (1u << 20) : region_bytes) {}

std::uint32_t LatencyMap::region_of(std::uint64_t offset) const noexcept {
  const std::uint64_t last = regions() == 0 ? 0 : regions() - 1;
  return static_cast<std::uint32_t>(std::min(offset / region_bytes_, last));
}

bool LatencyMap::update(std::uint64_t from_offset, std::uint64_t to_offset, Nanos service) noexcept {
  auto& c = cells_[key(region_of(from_offset), region_of(to_offset))];
  const bool changed = c.samples == 0 || service > c.worst;
  if (changed) c.worst = std::max(c.worst, service);
  if (c.samples < UINT32_MAX) ++c.samples;
  ++updates_;
  change_rate_ += ((changed ? 1.0 : 0.0) - change_rate_) / kChangeWindow;
  return changed;
}

std::optional<Nanos> LatencyMap::predict(std::uint64_t from_offset, std::uint64_t to_offset) const noexcept {
  const auto it = cells_.find(key(region_of(from_offset), region_of(to_offset)));
  if (it == cells_.end()) return std::nullopt;
  return it->second.worst;
}

std::optional<LatencyCell> LatencyMap::cell(std::uint32_t from_region, std::uint32_t to_region) const noexcept {
  const auto it = cells_.find(key(from_region, to_region));
  if (it == cells_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::byte> LatencyMap::serialize() const {
  std::vector<std::pair<std::uint64_t, LatencyCell>> sorted(cells_.begin(), cells_.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::byte> out(kHeaderBytes + sorted.size() * kCellBytes + kCrcBytes);
  std::span<std::byte> o(out);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  le::put<std::uint32_t>(o, 8, kVersion);
  le::put<std::uint32_t>(o, 12, 0);
  le::put<std::uint64_t>(o, 16, device_bytes_);
  le::put<std::uint64_t>(o, 24, region_bytes_);
  le::put<std::uint64_t>(o, 32, sorted.size());
  std::size_t at = kHeaderBytes;
  for (const auto& [k, c] : sorted) {
    le::put<std::uint32_t>(o, at, static_cast<std::uint32_t>(k >> 32));
    le::put<std::uint32_t>(o, at + 4, static_cast<std::uint32_t>(k));
    // ns in 32 bits: 4.29 s, far above any positioning time; a longer stall saturates.
    le::put<std::uint32_t>(o, at + 8, static_cast<std::uint32_t>(std::min<std::int64_t>(c.worst.count(), UINT32_MAX)));
    le::put<std::uint32_t>(o, at + 12, c.samples);
    at += kCellBytes;
  }
  le::put<std::uint32_t>(o, at, crc32c(std::span<const std::byte>(out.data(), at)));
  return out;
}

Result<LatencyMap> LatencyMap::parse(std::span<const std::byte> in, std::uint64_t device_bytes,
                                     std::uint64_t region_bytes) noexcept {
  if (in.size() < kHeaderBytes + kCrcBytes || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0) {
    return errc::corruption;
  }
  const auto cells = le::get<std::uint64_t>(in, 32);
  if (cells > (in.size() - kHeaderBytes - kCrcBytes) / kCellBytes ||
      in.size() != kHeaderBytes + cells * kCellBytes + kCrcBytes) {
    return errc::corruption;
  }
  const std::size_t body = in.size() - kCrcBytes;
  if (crc32c(in.first(body)) != le::get<std::uint32_t>(in, body)) return errc::corruption;
  // Checked only once the CRC says the header is what was written.
  if (le::get<std::uint32_t>(in, 8) > kVersion) return errc::unsupported;
  LatencyMap map(device_bytes, region_bytes);
  if (le::get<std::uint64_t>(in, 16) != device_bytes || le::get<std::uint64_t>(in, 24) != map.region_bytes_) {
    return errc::invalid_argument;
  }
  for (std::size_t i = 0, at = kHeaderBytes; i < cells; ++i, at += kCellBytes) {
    const auto from = le::get<std::uint32_t>(in, at), to = le::get<std::uint32_t>(in, at + 4);
    if (from >= map.regions() || to >= map.regions()) return errc::corruption;
    map.cells_[key(from, to)] = {Nanos(le::get<std::uint32_t>(in, at + 8)), le::get<std::uint32_t>(in, at + 12)};
  }
  map.change_rate_ = 0;  // a restored map starts as converged as it was saved
  return map;
}

Result<void> LatencyMap::save(const std::filesystem::path& path) const noexcept {
  try {
    const std::vector<std::byte> bytes = serialize();
    const std::filesystem::path tmp = path.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return errc::io_error;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        return errc::io_error;
      }
      done += static_cast<std::size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    if (::close(fd) != 0 || !synced || ::rename(tmp.c_str(), path.c_str()) != 0) return errc::io_error;
    return {};
  } catch (...) {  // allocation
    return errc::io_error;
  }
}

Result<LatencyMap> LatencyMap::load(const std::filesystem::path& path, std::uint64_t device_bytes,
                                    std::uint64_t region_bytes) noexcept {
  try {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? errc::not_found : errc::io_error;
    std::vector<std::byte> bytes;
    std::byte buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ::close(fd);
        return errc::io_error;
      }
      if (n == 0) break;
      bytes.insert(bytes.end(), buf, buf + n);
    }
    ::close(fd);
    return parse(bytes, device_bytes, region_bytes);
  } catch (...) {  // allocation
    return errc::io_error;
  }
}

std::filesystem::path latency_map_path(const std::filesystem::path& volume_or_profile) {
  return volume_or_profile.string() + ".latmap";
}

}  // namespace vigil::storage
