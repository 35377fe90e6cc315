#include "tests/support/temp_dir.hpp"

#include <fstream>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

namespace vigil::test {

TempDir::TempDir(const std::string& prefix) {
  std::string templ = "/tmp/" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + templ);
  path_ = buf.data();
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                          std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                          std::filesystem::perms::others_exec);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

bool flip_byte(const std::filesystem::path& file, std::int64_t at) {
  const int fd = ::open(file.c_str(), O_RDWR);
  if (fd < 0) return false;
  unsigned char b = 0;
  bool ok = ::pread(fd, &b, 1, at) == 1;
  if (ok) {
    b ^= 0x5a;
    ok = ::pwrite(fd, &b, 1, at) == 1 && ::fsync(fd) == 0;
  }
  ::close(fd);
  return ok;
}

}  // namespace vigil::test
