#include "tests/support/rtsp_camera_process.hpp"

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/eventually.hpp"

namespace vigil::test {

RtspCamera start_rtsp_camera(const std::filesystem::path& dir, int port, int kbps, const std::string& credentials) {
  using namespace std::chrono_literals;
  RtspCamera camera;
  // A log per start: a restarted camera's "ready" line must be its own.
  camera.log = dir / ("rtsp-camera-" + std::to_string(port) + "-" +
                      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".log");
  SpawnOptions o;
  o.argv = {"/usr/bin/python3", VIGIL_SOURCE_DIR "/tests/support/rtsp_camera.py", std::to_string(port)};
  if (kbps > 0 || !credentials.empty()) o.argv.push_back(std::to_string(kbps));
  if (!credentials.empty()) o.argv.push_back(credentials);
  o.output_file = camera.log;
  camera.process = ChildProcess::spawn(o);
  REQUIRE(eventually(
      [&] {
        std::ifstream in(camera.log);
        const std::string text(std::istreambuf_iterator<char>(in), {});
        const auto at = text.find("ready ");
        if (at == std::string::npos) return false;
        camera.port = std::stoi(text.substr(at + 6));
        return true;
      },
      30s));
  return camera;
}

}  // namespace vigil::test
