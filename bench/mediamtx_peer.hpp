#pragma once
// MediaMTX as `vigil bench rtsp`'s peer: a binary built from its source outside this repository
// (docs/benchmarks.md says how), started with a configuration of the bench's own — only its API
// on a free port, every path recorded as fMP4 segments under the bench's scratch directory,
// RTSP sources pulled over TCP. Cameras are added and removed through its API, as Vigil's are
// through vigild's. Errors: exceptions (tool layer).
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vigil::bench {

class BenchHttp;

// The peer's binary: PATH if given, else $VIGIL_MEDIAMTX; none if neither names an executable.
std::optional<std::filesystem::path> find_mediamtx(const std::string& path);

class MediamtxPeer {
 public:
  // Starts BINARY on DIR/mediamtx.yml; waits (up to 30 s) until its API answers.
  MediamtxPeer(const std::filesystem::path& binary, const std::filesystem::path& dir);
  ~MediamtxPeer();  // SIGTERM, waited for
  MediamtxPeer(const MediamtxPeer&) = delete;
  MediamtxPeer& operator=(const MediamtxPeer&) = delete;

  int pid() const noexcept { return pid_; }
  // Adds path NAME pulling URL and recording it; false (and why in ERROR) if refused.
  bool add(const std::string& name, const std::string& url, std::string& error);
  // Removes path NAME.
  bool remove(const std::string& name);
  // The paths whose source is ready (reading the camera).
  std::vector<std::string> ready_paths();
  // Bytes of the recorded segment files of path NAME (0: none written yet).
  std::uintmax_t recorded_bytes(const std::string& name) const;
  std::uintmax_t recorded_bytes_total() const;

 private:
  std::filesystem::path dir_;
  int pid_ = 0;
  std::unique_ptr<BenchHttp> api_;
};

}  // namespace vigil::bench
