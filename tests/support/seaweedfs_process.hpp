#pragma once
// SeaweedFS on 127.0.0.1 for the archive tier's tests: bench/seaweedfs_peer.hpp's server (the
// binary deploy/seaweedfs.sh built and cached, every port the kernel's pick) in a temporary
// directory, with the test credentials. Tests skip, saying so, when the binary is not built.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "archive/s3_client.hpp"
#include "bench/seaweedfs_peer.hpp"
#include "tests/support/temp_dir.hpp"

namespace vigil::test {

inline const archive::Credentials kSeaweedCredentials{"vigiltestaccess", "vigil-test-secret-key-not-real", "us-east-1",
                                                      "s3"};

// The test credentials as vigild's --archive-credentials file (access key, secret key; mode 0600)
// in DIR.
inline std::filesystem::path seaweed_credentials_file(const std::filesystem::path& dir) {
  const auto file = dir / "s3.credentials";
  write_file(file, kSeaweedCredentials.access_key + "\n" + kSeaweedCredentials.secret_key + "\n");
  std::filesystem::permissions(file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
  return file;
}

using bench::free_loopback_port;
using bench::seaweedfs_binary;

struct SeaweedFs {
  TempDir dir{"vigil-seaweedfs"};
  bench::SeaweedFsPeer peer;
  std::uint16_t s3_port;

  // S3_PORT 0: the kernel's pick.
  explicit SeaweedFs(const std::string& binary, std::uint16_t s3_port = 0)
      : peer(binary, dir.path(), kSeaweedCredentials, s3_port), s3_port(peer.s3_port()) {}

  archive::S3Client client() const { return peer.client(); }
  // Waits (bounded by TIMEOUT) until the store answers, by making BUCKET (with object lock).
  bool make_bucket(const std::string& bucket, std::chrono::seconds timeout = std::chrono::seconds(120)) const {
    return peer.make_bucket(bucket, timeout);
  }
};

}  // namespace vigil::test
