#pragma once
// A fresh directory under /tmp, removed with everything in it on destruction.
// Mode 0755 so an unprivileged cluster user can traverse it when tests run as root.
#include <cstdint>
#include <filesystem>
#include <string>

namespace vigil::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "vigil-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes TEXT to FILE, creating its directories.
void write_file(const std::filesystem::path& file, const std::string& text);

// Damage: the byte at offset AT of FILE XORed with 0x5a, written back and synced. False if the
// file could not be read or written there.
bool flip_byte(const std::filesystem::path& file, std::int64_t at);

}  // namespace vigil::test
