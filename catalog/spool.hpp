#pragma once
// The Batcher's spool (docs/catalog.md, "When the catalog is down"): catalog rows that could not
// be committed yet, kept in one append-only file under vigild's data directory so that neither
// a stop nor a crash during a database outage loses them. Each record is
//     u32 magic 'VGSP' | u32 length | u32 CRC-32C of the payload | payload (an encoded row)
// and every append is made durable (fdatasync) before it returns. A record that does not check
// out (a torn append at a crash) ends the readable part: what follows it is reported, not used.
// Thread: one Spool is used by one thread at a time. Errors: throws std::system_error.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vigil::catalog {

class Spool {
 public:
  // Opens PATH for appending, creating it (and making its directory entry durable) if missing.
  explicit Spool(std::filesystem::path path);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Appends RECORDS in order, durably.
  void append(std::span<const std::string> records);
  // Empties the file, durably: everything it held is in the catalog.
  void clear();
  std::uint64_t bytes() const noexcept { return bytes_; }
  const std::filesystem::path& path() const noexcept { return path_; }

  struct Contents {
    std::vector<std::string> records;    // in the order appended
    std::uint64_t unreadable_bytes = 0;  // after the first record that does not check out
  };
  // What PATH holds (nothing if it does not exist).
  static Contents read(const std::filesystem::path& path);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t bytes_ = 0;
};

}  // namespace vigil::catalog
