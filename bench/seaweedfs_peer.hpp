#pragma once
// SeaweedFS (`weed server -s3`) on 127.0.0.1, as the archive tier's object store for benches and
// tests (docs/archive.md): the binary deploy/seaweedfs.sh built and cached, every port the
// kernel's pick, one S3 identity with CREDENTIALS, its data and log under DIR. Stopped (SIGTERM,
// then waited for) on destruction. Errors: exceptions (tool layer); make_bucket() reports a store
// that never became ready by returning false.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "archive/s3_client.hpp"
#include "common/child_process.hpp"

namespace vigil::bench {

// $VIGIL_SEAWEEDFS, else the binary deploy/seaweedfs.sh built (its --path), else "".
std::string seaweedfs_binary();

// A port free now on 127.0.0.1 (the kernel's pick; the server binds it moments later).
std::uint16_t free_loopback_port();

class SeaweedFsPeer {
 public:
  // S3_PORT 0: the kernel's pick. DIR must exist and outlive the peer.
  SeaweedFsPeer(const std::string& binary, const std::filesystem::path& dir, archive::Credentials credentials,
                std::uint16_t s3_port = 0);
  ~SeaweedFsPeer();
  SeaweedFsPeer(const SeaweedFsPeer&) = delete;
  SeaweedFsPeer& operator=(const SeaweedFsPeer&) = delete;

  std::uint16_t s3_port() const noexcept { return s3_port_; }
  archive::S3Client client() const;
  // Waits (bounded by TIMEOUT) until the S3 gateway, the filer and a volume all answer, by making
  // BUCKET (with object lock). False on timeout.
  bool make_bucket(const std::string& bucket, std::chrono::seconds timeout = std::chrono::seconds(120)) const;
  ChildProcess& process() noexcept { return process_; }

 private:
  archive::Credentials credentials_;
  std::uint16_t s3_port_;
  ChildProcess process_;
};

}  // namespace vigil::bench
