// `vigil record` end to end with real peers: ffmpeg encodes a test clip (lavfi testsrc, libx264,
// no B-frames), `vigil record` demuxes it and records it into a real vigild over loopback, every
// packet is acknowledged, and after vigild stops `vigil fsck` finds exactly those packets on the
// volume with no problem. Admission refusal, an unreachable server and a bad input each get
// their own exit code and a clear message.
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("vigil record records an ffmpeg-encoded clip durably; refusals and failures are told apart",
          "[record][cli][ffmpeg]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 3);
  const auto profile = test::make_sim_profile(dir.path());
  const auto volume = dir.path() / "vol";
  test::VigildProcess d(dir.path() / "data", {"--volume", volume.string(), "--volume-size", std::to_string(128 << 20),
                                              "--extent-bytes", std::to_string(4 << 20), "--profile", profile.string(),
                                              "--cycle-ms", "200", "--model-check-cycles", "0"});
  REQUIRE(d.wait_ready());

  auto rec =
      test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "lobby", clip.string(), "--fast"},
                        dir.path() / "rec.log");
  INFO(rec.output);
  CHECK(rec.status == 0);
  CHECK_THAT(rec.output, ContainsSubstring("recorded 75 packets of lobby"));
  CHECK_THAT(rec.output, ContainsSubstring("75 acknowledged as durable"));

  auto big = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", d.wire(), "record", "--stream", "huge", clip.string(), "--rate", "100000"},
                               dir.path() / "big.log");
  INFO(big.output);
  CHECK(big.status == 4);
  CHECK_THAT(big.output, ContainsSubstring("refused by admission"));
  CHECK_THAT(big.output, ContainsSubstring("largest rate that fits"));

  auto missing =
      test::run_to_exit(VIGIL_CLI_PATH,
                        {"--server", d.wire(), "record", "--stream", "x", (dir.path() / "nope.mp4").string()},
                        dir.path() / "missing.log");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.output, ContainsSubstring("cannot open"));
  REQUIRE(d.stop(SIGTERM) == 0);

  auto gone = test::run_to_exit(VIGIL_CLI_PATH, {"--server", "127.0.0.1:1", "record", "--stream", "x", clip.string()},
                                dir.path() / "gone.log");
  CHECK(gone.status == 3);

  // The volume holds exactly the recorded packets, all intact.
  auto fsck = test::run_to_exit(VIGIL_CLI_PATH, {"fsck", volume.string()}, dir.path() / "fsck.log");
  INFO(fsck.output);
  CHECK(fsck.status == 0);
  CHECK_THAT(fsck.output, ContainsSubstring("75 records"));
}
