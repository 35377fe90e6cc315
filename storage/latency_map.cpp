#include "storage/latency_map.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <iterator>
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

// At most half full: linear probing then finds a key or its place in a few slots.
std::size_t table_slots(std::size_t max_cells) noexcept {
  return std::bit_ceil(std::max<std::size_t>(max_cells, 8) * 2);
}

// splitmix64's finaliser: neighbouring regions land far apart.
std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint32_t saturated_ns(Nanos t) noexcept {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(t.count(), 0, UINT32_MAX));
}

}  // namespace

LatencyMap::LatencyMap(std::uint64_t device_bytes, std::uint64_t region_bytes, std::size_t max_cells)
    : device_bytes_(device_bytes),
      region_bytes_(region_bytes == 0 ? (1u << 20) : region_bytes),
      max_cells_(std::max<std::size_t>(max_cells, 1)),
      slots_(table_slots(max_cells_)) {}

std::size_t LatencyMap::find(std::uint64_t k) const noexcept {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = static_cast<std::size_t>(mix(k)) & mask;
  while (slots_[i].key != k && slots_[i].key != kEmpty) i = (i + 1) & mask;
  return i;
}

void LatencyMap::clear() noexcept {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  cells_ = 0;
  change_rate_ = 1.0;
}

bool LatencyMap::assign(const LatencyMap& other) noexcept {
  if (other.slots_.size() != slots_.size()) return false;
  std::copy(other.slots_.begin(), other.slots_.end(), slots_.begin());
  device_bytes_ = other.device_bytes_;
  region_bytes_ = other.region_bytes_;
  max_cells_ = other.max_cells_;
  cells_ = other.cells_;
  updates_ = other.updates_;
  change_rate_ = other.change_rate_;
  return true;
}

std::uint32_t LatencyMap::region_of(std::uint64_t offset) const noexcept {
  const std::uint64_t last = regions() == 0 ? 0 : regions() - 1;
  return static_cast<std::uint32_t>(std::min(offset / region_bytes_, last));
}

bool LatencyMap::update(std::uint64_t from_offset, std::uint64_t to_offset, Nanos service) noexcept {
  const std::uint64_t k = key(region_of(from_offset), region_of(to_offset));
  Slot& c = slots_[find(k)];
  ++updates_;
  if (c.key == kEmpty) {
    if (full()) {
      change_rate_ += (1.0 - change_rate_) / kChangeWindow;  // a cell it could not learn
      return false;
    }
    c.key = k;
    ++cells_;
  }
  const std::uint32_t ns = saturated_ns(service);
  const bool changed = c.samples == 0 || ns > c.worst_ns;
  if (changed) c.worst_ns = std::max(c.worst_ns, ns);
  if (c.samples < UINT32_MAX) ++c.samples;
  change_rate_ += ((changed ? 1.0 : 0.0) - change_rate_) / kChangeWindow;
  return changed;
}

std::optional<Nanos> LatencyMap::predict(std::uint64_t from_offset, std::uint64_t to_offset) const noexcept {
  const Slot& s = slots_[find(key(region_of(from_offset), region_of(to_offset)))];
  if (s.key == kEmpty) return std::nullopt;
  return Nanos(s.worst_ns);
}

std::optional<LatencyCell> LatencyMap::cell(std::uint32_t from_region, std::uint32_t to_region) const noexcept {
  const Slot& s = slots_[find(key(from_region, to_region))];
  if (s.key == kEmpty) return std::nullopt;
  return LatencyCell{Nanos(s.worst_ns), s.samples};
}

std::vector<std::byte> LatencyMap::serialize() const {
  std::vector<Slot> sorted;
  sorted.reserve(cells_);
  std::copy_if(slots_.begin(), slots_.end(), std::back_inserter(sorted), [](const Slot& s) { return s.key != kEmpty; });
  std::sort(sorted.begin(), sorted.end(), [](const Slot& a, const Slot& b) { return a.key < b.key; });
  std::vector<std::byte> out(kHeaderBytes + sorted.size() * kCellBytes + kCrcBytes);
  std::span<std::byte> o(out);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  le::put<std::uint32_t>(o, 8, kVersion);
  le::put<std::uint32_t>(o, 12, 0);
  le::put<std::uint64_t>(o, 16, device_bytes_);
  le::put<std::uint64_t>(o, 24, region_bytes_);
  le::put<std::uint64_t>(o, 32, sorted.size());
  std::size_t at = kHeaderBytes;
  for (const Slot& c : sorted) {
    le::put<std::uint32_t>(o, at, static_cast<std::uint32_t>(c.key >> 32));
    le::put<std::uint32_t>(o, at + 4, static_cast<std::uint32_t>(c.key));
    // ns in 32 bits: 4.29 s, far above any positioning time; a longer stall saturates.
    le::put<std::uint32_t>(o, at + 8, c.worst_ns);
    le::put<std::uint32_t>(o, at + 12, c.samples);
    at += kCellBytes;
  }
  le::put<std::uint32_t>(o, at, crc32c(std::span<const std::byte>(out.data(), at)));
  return out;
}

Result<LatencyMap> LatencyMap::parse(std::span<const std::byte> in, std::uint64_t device_bytes,
                                     std::uint64_t region_bytes, std::size_t max_cells) noexcept {
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
  if (le::get<std::uint64_t>(in, 16) != device_bytes ||
      le::get<std::uint64_t>(in, 24) != (region_bytes == 0 ? (1u << 20) : region_bytes)) {
    return errc::invalid_argument;
  }
  try {
    LatencyMap map(device_bytes, region_bytes, std::max<std::size_t>(max_cells, cells));
    for (std::size_t i = 0, at = kHeaderBytes; i < cells; ++i, at += kCellBytes) {
      const auto from = le::get<std::uint32_t>(in, at), to = le::get<std::uint32_t>(in, at + 4);
      if (from >= map.regions() || to >= map.regions()) return errc::corruption;
      Slot& s = map.slots_[map.find(key(from, to))];
      if (s.key != kEmpty) return errc::corruption;  // a cell twice
      s = {key(from, to), le::get<std::uint32_t>(in, at + 8), le::get<std::uint32_t>(in, at + 12)};
      ++map.cells_;
    }
    map.change_rate_ = 0;  // a restored map starts as converged as it was saved
    return map;
  } catch (...) {  // allocation
    return errc::io_error;
  }
}

Result<void> LatencyMap::save(const std::filesystem::path& path) const noexcept {
  try {
    return save_bytes(path, serialize());
  } catch (...) {  // allocation
    return errc::io_error;
  }
}

std::uint64_t LatencyMap::cells_in(std::span<const std::byte> bytes) noexcept {
  return bytes.size() < kHeaderBytes ? 0 : le::get<std::uint64_t>(bytes, 32);
}

Result<void> LatencyMap::save_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) noexcept {
  try {
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
                                    std::uint64_t region_bytes, std::size_t max_cells) noexcept {
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
    return parse(bytes, device_bytes, region_bytes, max_cells);
  } catch (...) {  // allocation
    return errc::io_error;
  }
}

std::filesystem::path latency_map_path(const std::filesystem::path& volume_or_profile) {
  return volume_or_profile.string() + ".latmap";
}

}  // namespace vigil::storage
