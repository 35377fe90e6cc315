#include "tests/support/media_fixture.hpp"

#include <catch2/catch_test_macros.hpp>
#include <string>

#include "tests/support/vigild_process.hpp"

namespace vigil::test {

std::filesystem::path make_h264_clip(const std::filesystem::path& dir, int seconds) {
  const auto clip = dir / "clip.mp4";
  REQUIRE(run_to_exit("/usr/bin/ffmpeg",
                      {"-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-t",
                       std::to_string(seconds), "-c:v", "libx264", "-g", "25", "-bf", "0", "-pix_fmt", "yuv420p",
                       clip.string()},
                      dir / "ffmpeg.log")
              .status == 0);
  return clip;
}

std::filesystem::path make_sim_profile(const std::filesystem::path& dir) {
  const auto profile = dir / "wd.json";
  REQUIRE(run_to_exit(VIGIL_CLI_PATH, {"profile", "sim:wd400bb", "--quick", "-o", profile.string()}, dir / "p.log")
              .status == 0);
  return profile;
}

}  // namespace vigil::test
