#pragma once
// The real RTSP camera of the integration tests: tests/support/rtsp_camera.py (GStreamer's RTSP
// server, a live 25 fps H.264 test pattern at /cam1 and /bframes, H.265 at /hevc and /hevc-bframes) as a child process.
// Errors: Catch2 assertions (the camera not listening within 30 s fails the test).
#include <filesystem>
#include <string>

#include "common/child_process.hpp"

namespace vigil::test {

struct RtspCamera {
  ChildProcess process;
  int port = 0;               // where it listens, on 127.0.0.1
  std::filesystem::path log;  // its output
};

// Starts the camera on PORT (0: any free port; a port again: the same camera restarted) at KBPS
// (0: the encoder's default), its output in a log of its own under DIR; returns once it listens.
// CREDENTIALS ("user:password"): the camera asks for them with HTTP Digest.
RtspCamera start_rtsp_camera(const std::filesystem::path& dir, int port = 0, int kbps = 0,
                             const std::string& credentials = "");

}  // namespace vigil::test
