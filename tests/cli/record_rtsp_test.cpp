// `vigil record` from a real RTSP camera (GStreamer's RTSP server asking for HTTP Digest
// credentials, as most IP cameras do) read by the buffered RTSP session (client/rtsp): it
// authenticates, records every access unit it read with none lost, and what `vigil play` gives
// back is the camera's H.264 at its picture size with rising timestamps. Wrong credentials get a
// clear error that never shows the password.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <regex>
#include <string>

#include "tests/support/media_fixture.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("vigil record reads a Digest-protected RTSP camera with the buffered session", "[record][cli][rtsp]") {
  test::TempDir dir;
  constexpr const char* kPassword = "s3cret-pass";
  [[maybe_unused]] auto camera = test::start_rtsp_camera(dir.path(), 0, 0, std::string("viewer:") + kPassword);
  const std::string base = "127.0.0.1:" + std::to_string(camera.port) + "/cam1";
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());

  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", d.wire(), "record", "--stream", "porch",
                                "rtsp://viewer:" + std::string(kPassword) + "@" + base, "--duration", "3"},
                               dir.path() / "rec.log");
  INFO(rec.output);
  CHECK(rec.status == 0);
  CHECK_THAT(rec.output, ContainsSubstring("reading h264 320x240 with rtsp"));
  CHECK(rec.output.find(kPassword) == std::string::npos);
  // Every packet read was acknowledged, and 3 s of a 25 fps camera is dozens of them.
  std::smatch m;
  const std::string out = rec.output;
  REQUIRE(
      std::regex_search(out, m, std::regex(R"(recorded (\d+) packets of porch as stream \d+; (\d+) acknowledged)")));
  CHECK(m[1] == m[2]);
  CHECK(std::stoi(m[1]) >= 25);

  const auto mp4 = dir.path() / "porch.mp4";
  auto play =
      test::run_to_exit(VIGIL_CLI_PATH,
                        {"--server", d.wire(), "play", "--stream", "porch", "--from", "-1h", "-o", mp4.string()},
                        dir.path() / "play.log");
  INFO(play.output);
  REQUIRE(play.status == 0);
  const auto stream = test::probe_stream(mp4, dir.path());
  CHECK_THAT(stream, ContainsSubstring("codec_name=h264"));
  CHECK(test::probe_field(stream, "width") == 320);
  CHECK(test::probe_field(stream, "height") == 240);
  const auto packets = test::probe_packets(mp4, dir.path());
  CHECK(packets.size() == static_cast<std::size_t>(std::stoi(m[1])));
  REQUIRE_FALSE(packets.empty());
  CHECK(packets.front().key);
  for (std::size_t i = 1; i < packets.size(); ++i) CHECK(packets[i].pts > packets[i - 1].pts);

  auto wrong = test::run_to_exit(VIGIL_CLI_PATH,
                                 {"--server", d.wire(), "record", "--stream", "porch2",
                                  "rtsp://viewer:not-the-password@" + base, "--duration", "1"},
                                 dir.path() / "wrong.log");
  INFO(wrong.output);
  CHECK(wrong.status == 1);
  CHECK_THAT(wrong.output, ContainsSubstring("refused the credentials (401)"));
  CHECK(wrong.output.find("not-the-password") == std::string::npos);
}
