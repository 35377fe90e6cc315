#pragma once
// LatencyMap: seed 004's learned service-time map (docs/latency-map.md). The device is split into
// regions of region_bytes; cell (i, j) holds the WORST service time observed for a small request
// in region j issued right after one in region i completed (the drive's queue holding one
// request), learned from completions with no profiling phase. Keeping the worst absorbs cache
// hits and remapped sectors, and is what a deadline needs; seed 004: "after 100 measurements
// the probability to observe an even worse service time is less than 10⁻⁶ %".
//
// Cells are directed (i → j and j → i apart): on a rotating disk the two differ by the
// rotational phase, and a symmetric half (the seed's storage trick) would keep the worse of the
// two. Only learned cells are stored, so a map over a whole disk costs what the hot set the
// workload touches costs: an open-addressing table of at most max_cells cells (16 bytes each, at
// most half full), allocated once at construction, so that update() — on the IO thread, after
// every command — is O(1) and never allocates. A full map learns no new cell (update() returns
// false, full() is true) until its owner clear()s it; assign() copies a map of the same capacity
// without allocating (the IO thread hands a copy to the thread that saves it).
//
// Persistence: a small versioned little-endian file (layout in docs/latency-map.md) ending in a
// CRC32C of everything before it, saved next to the volume or profile it belongs to
// (latency_map_path). load() refuses a damaged file (errc::corruption), a newer version
// (errc::unsupported) and a map of another shape (errc::invalid_argument): a map learned on
// another disk or at another granularity would mislead the scheduler, so it is relearned.
//
// Thread: one owner (the disk's IO thread). Errors: Result values (storage layer), noexcept.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "common/errors.hpp"
#include "storage/clock.hpp"

namespace vigil::storage {

struct LatencyCell {
  Nanos worst{0};
  std::uint32_t samples = 0;
};

class LatencyMap {
 public:
  static constexpr std::uint32_t kVersion = 1;
  static constexpr std::size_t kDefaultMaxCells = std::size_t{1} << 16;  // a 2 MiB table

  // A zero REGION_BYTES is taken as 1 MiB. Throws std::bad_alloc only (the table, once).
  LatencyMap(std::uint64_t device_bytes, std::uint64_t region_bytes, std::size_t max_cells = kDefaultMaxCells);

  std::uint64_t device_bytes() const noexcept { return device_bytes_; }
  std::uint64_t region_bytes() const noexcept { return region_bytes_; }
  std::uint64_t regions() const noexcept { return (device_bytes_ + region_bytes_ - 1) / region_bytes_; }
  std::uint32_t region_of(std::uint64_t offset) const noexcept;

  // A completion: a request at TO_OFFSET, issued when the one at FROM_OFFSET completed, took
  // SERVICE. Keeps the worst per cell. Returns true if the map changed (a cell learned or raised).
  bool update(std::uint64_t from_offset, std::uint64_t to_offset, Nanos service) noexcept;

  // The worst service time seen for TO after FROM; nullopt for a cell not learned yet.
  std::optional<Nanos> predict(std::uint64_t from_offset, std::uint64_t to_offset) const noexcept;
  std::optional<LatencyCell> cell(std::uint32_t from_region, std::uint32_t to_region) const noexcept;
  std::size_t learned_cells() const noexcept { return cells_; }
  std::size_t max_cells() const noexcept { return max_cells_; }
  bool full() const noexcept { return cells_ >= max_cells_; }
  // Forgets every cell (O(table), no allocation); the change rate starts again at 1.
  void clear() noexcept;
  // Becomes a copy of OTHER without allocating. OTHER must have the same max_cells (false if not).
  bool assign(const LatencyMap& other) noexcept;

  // Convergence: the share of recent updates that changed the map (filled or raised a cell), an
  // exponential average over about the last 256 updates. 1 while learning starts, → 0 once the
  // worst cases are found; a rise later means the disk changed (remapping, a new hot set).
  double change_rate() const noexcept { return change_rate_; }
  std::uint64_t updates() const noexcept { return updates_; }

  std::vector<std::byte> serialize() const;
  // Errors: corruption (bad magic, size or CRC), unsupported (newer version), invalid_argument
  // (learned for another device size or region size).
  // MAX_CELLS: the table's capacity (at least the file's cells).
  static Result<LatencyMap> parse(std::span<const std::byte> bytes, std::uint64_t device_bytes,
                                  std::uint64_t region_bytes, std::size_t max_cells = kDefaultMaxCells) noexcept;

  // Writes PATH atomically (a temporary beside it, fsync, rename). Errors: io_error.
  Result<void> save(const std::filesystem::path& path) const noexcept;
  // The same for BYTES that serialize() made (on another thread, from a copy). Errors: io_error.
  static Result<void> save_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) noexcept;
  // The cell count in the header of BYTES that serialize() made.
  static std::uint64_t cells_in(std::span<const std::byte> bytes) noexcept;
  // Errors: not_found, io_error, and parse()'s.
  static Result<LatencyMap> load(const std::filesystem::path& path, std::uint64_t device_bytes,
                                 std::uint64_t region_bytes, std::size_t max_cells = kDefaultMaxCells) noexcept;

 private:
  static std::uint64_t key(std::uint32_t from, std::uint32_t to) noexcept {
    return (static_cast<std::uint64_t>(from) << 32) | to;
  }
  // A region index is below 2³² − 1 (region_of), so no cell has this key.
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = kEmpty;
    std::uint32_t worst_ns = 0;  // saturates at 4.29 s, as in the file
    std::uint32_t samples = 0;
  };
  // The slot holding KEY, or the empty slot where it would go (the table is never full).
  std::size_t find(std::uint64_t key) const noexcept;

  std::uint64_t device_bytes_;
  std::uint64_t region_bytes_;
  std::size_t max_cells_;
  std::vector<Slot> slots_;  // a power of two, at least twice max_cells_
  std::size_t cells_ = 0;
  std::uint64_t updates_ = 0;
  double change_rate_ = 1.0;
};

// Where the map of the volume or profile at PATH is kept: PATH with ".latmap" appended.
std::filesystem::path latency_map_path(const std::filesystem::path& volume_or_profile);

}  // namespace vigil::storage
