#pragma once
// SeaweedFS (`weed server -s3`) on 127.0.0.1 for the archive tier's tests: the binary
// deploy/seaweedfs.sh built and cached, every port the kernel's pick, an S3 identity with the
// test credentials. Tests skip, saying so, when the binary is not built.
#include <chrono>
#include <cstdint>
#include <string>

#include "archive/s3_client.hpp"
#include "common/child_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace vigil::test {

inline const archive::Credentials kSeaweedCredentials{"vigiltestaccess", "vigil-test-secret-key-not-real", "us-east-1",
                                                      "s3"};

// The binary deploy/seaweedfs.sh built (its --path), $VIGIL_SEAWEEDFS, or "" when neither.
std::string seaweedfs_binary();

// A port free now on 127.0.0.1 (the kernel's pick; the server binds it moments later).
std::uint16_t free_loopback_port();

struct SeaweedFs {
  TempDir dir{"vigil-seaweedfs"};
  ChildProcess process;
  std::uint16_t s3_port = 0;

  // S3_PORT 0: the kernel's pick.
  explicit SeaweedFs(const std::string& binary, std::uint16_t s3_port = 0);
  ~SeaweedFs();

  archive::S3Client client() const;
  // Waits (bounded by TIMEOUT) until the S3 gateway, the filer and a volume all answer, by making
  // BUCKET (with object lock). False on timeout.
  bool make_bucket(const std::string& bucket, std::chrono::seconds timeout = std::chrono::seconds(120)) const;
};

}  // namespace vigil::test
