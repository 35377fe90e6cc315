#pragma once
// The simulated cameras of `vigil bench rtsp`: one H.264 clip encoded once by ffmpeg (libx264,
// no B-frames, a fixed GOP, an access unit delimiter per frame) and kept in a cache under the
// build directory, then served looped at real time on K RTSP mounts by bench/rtsp_farm.py
// (GStreamer's RTSP server; nothing is encoded per camera). Errors: exceptions (tool layer).
#include <filesystem>
#include <string>

namespace vigil::bench {

struct ClipSpec {
  int width = 1280, height = 720, fps = 25, gop = 50;
  double rate_mbps = 4;
  double seconds = 20;  // the loop's length (a multiple of the GOP is best)
};

// The cached clip for SPEC (encoded now if absent; minutes at 720p on a busy machine).
std::filesystem::path cached_clip(const ClipSpec& spec);
// The clip's measured rate, bits per second, over SPEC.seconds.
double clip_rate_bps(const std::filesystem::path& clip, const ClipSpec& spec);

class CameraFarm {
 public:
  // Serves CLIP on rtsp://127.0.0.1:PORT/cam0 … cam{K-1}; waits (up to 30 s) until it listens.
  // ADVERTISED_BPS > 0: each camera's SDP says b=AS of it (its encoder's configured bitrate).
  CameraFarm(const std::filesystem::path& clip, int fps, int cameras, const std::filesystem::path& log,
             double advertised_bps = 0);
  ~CameraFarm();  // SIGTERM, waited for
  CameraFarm(const CameraFarm&) = delete;
  CameraFarm& operator=(const CameraFarm&) = delete;

  int pid() const noexcept { return pid_; }
  std::string url(int camera) const;

 private:
  int pid_ = 0, port_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago (for servers that must be told one).
int free_port();

}  // namespace vigil::bench
