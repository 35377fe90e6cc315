// `vigil record` with keyframes larger than its stream's buffer half (T x declared rate): vigild
// refuses such a packet with its own error, and the recorder re-opens the recording at a rate
// whose buffer holds it, in a new stream, instead of resending it forever — and the timeline shows
// no gap for the frames the first stream refused (they are stored in the second).
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

// 720p keyframes are tens of kB: far over the 4 kB buffer of 50 kbit/s in 200 ms cycles.
std::filesystem::path make_720p_clip(const std::filesystem::path& dir) {
  const auto clip = dir / "clip720.mp4";
  REQUIRE(test::run_to_exit("/usr/bin/ffmpeg",
                            {"-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=1280x720:rate=25", "-t",
                             "2", "-c:v", "libx264", "-g", "25", "-bf", "0", "-pix_fmt", "yuv420p", clip.string()},
                            dir / "ffmpeg.log")
              .status == 0);
  return clip;
}

}  // namespace

TEST_CASE("vigil record re-opens at a higher rate for a keyframe larger than its buffer, once, and records it all",
          "[record][cli][ffmpeg]") {
  test::TempDir dir;
  const auto clip = make_720p_clip(dir.path());
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data",
                        {"--volume", (dir.path() / "vol").string(), "--volume-size", std::to_string(128 << 20),
                         "--extent-bytes", std::to_string(4 << 20), "--profile", profile.string(), "--cycle-ms", "200",
                         "--model-check-cycles", "0"});
  REQUIRE(d.wait_ready());

  // As a file (sent as fast as vigild takes it) and as a live camera (its capture clock: the
  // re-opened stream begins at the very instant the first one did).
  for (const std::string mode : {"--fast", "--as-live"}) {
    CAPTURE(mode);
    const std::string name = mode == "--fast" ? "bigkeys-file" : "bigkeys-live";
    // A recorder that resends the refused keyframe forever is stopped by timeout (exit 124).
    auto rec = test::run_to_exit("/usr/bin/timeout",
                                 {"60", VIGIL_CLI_PATH, "--server", d.wire(), "record", "--stream", name, clip.string(),
                                  "--rate", "0.05", mode},
                                 dir.path() / (name + ".log"));
    INFO(rec.output);
    CHECK(rec.status == 0);
    CHECK_THAT(rec.output, ContainsSubstring("is larger than the stream's buffer"));
    CHECK_THAT(rec.output, ContainsSubstring("recorded 50 packets of " + name));
    CHECK_THAT(rec.output, ContainsSubstring("50 acknowledged as durable"));

    // Nothing was lost: the frames the first stream refused are in the re-opened one, so the
    // timeline shows no gap for them (a gap here would claim evidence missing that is there).
    auto r = test::http_request(d.http(), "GET", "/api/v1/timeline?from=-10m&cameras=" + name);
    REQUIRE(r.status == 200);
    INFO(r.body);
    const auto cams = boost::json::parse(r.body).at("cameras").as_array();
    REQUIRE(cams.size() == 1);
    CHECK(cams.at(0).at("gaps").as_array().empty());
    CHECK(cams.at(0).at("runs").as_array().size() == 1);
  }
}
