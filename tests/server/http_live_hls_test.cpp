// Live HLS at the live edge, with real peers: `vigil record` sends an ffmpeg clip in real time,
// and while it records ffmpeg plays /live.m3u8 (token in the URL, as a player would) to the end
// the playlist announces when the recording stops. What ffmpeg got must be a run of the source's
// packets (same sizes, key flags, in order) starting at a keyframe, on one rising timeline.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <thread>

#include "common/child_process.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("HTTP live HLS: a player at the live edge gets the recording's packets until it ends",
          "[http][hls][live][ffmpeg]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 10);
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 250);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  CHECK(test::http_request(d.http(), "GET", "/api/v1/cameras/yard/live.m3u8").status == 404);  // not recording

  // Real time: the recording lasts the clip's 10 s.
  SpawnOptions rec;
  rec.argv = {VIGIL_CLI_PATH, "--server", d.wire(), "record", "--stream", "yard", clip.string()};
  rec.output_file = dir.path() / "rec.log";
  rec.new_session = false;
  auto recorder = ChildProcess::spawn(rec);

  // The live playlist exists once the recording has a complete segment (bounded wait).
  test::HttpResult pl;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    pl = test::http_request(d.http(), "GET", "/api/v1/cameras/yard/live.m3u8");
    if (pl.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(pl.body);
  REQUIRE(pl.status == 200);
  CHECK_THAT(pl.body, ContainsSubstring("#EXT-X-MAP:URI=\"live/init.mp4"));
  CHECK_THAT(pl.body, ContainsSubstring("live/seg.m4s?c="));
  CHECK_THAT(pl.body, !ContainsSubstring("#EXT-X-ENDLIST"));  // still recording
  // Segments are named by their channel: another channel's (an earlier recording's) are not served.
  CHECK(test::http_request(d.http(), "GET", "/api/v1/cameras/yard/live/seg.m4s?c=1&n=0").status == 404);

  // ffmpeg follows the live playlist until the recording ends (EXT-X-ENDLIST).
  const auto out = dir.path() / "live.mp4";
  auto ff = test::run_to_exit("/usr/bin/ffmpeg",
                              {"-loglevel", "error", "-y", "-i",
                               "http://" + d.http() + "/api/v1/cameras/yard/live.m3u8?access_token=" + d.token(), "-c",
                               "copy", out.string()},
                              dir.path() / "ffmpeg-live.log");
  INFO(ff.output);
  REQUIRE(ff.status == 0);
  CHECK(recorder.wait() == 0);  // the recorder had finished: the playlist ended with it
  const auto got = test::probe_packets(out, dir.path());
  REQUIRE(got.size() >= 25);  // at least a segment's worth
  CHECK(got.front().key);
  // Where the player joined: the source keyframe whose size matches its first packet.
  std::size_t at = source.size();
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i].key && source[i].size == got.front().size) {
      at = i;
      break;
    }
  }
  REQUIRE(at + got.size() <= source.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("packet " << i << " (source " << at + i << ")");
    CHECK(got[i].size == source[at + i].size);
    CHECK(got[i].key == source[at + i].key);
    if (i > 0) CHECK(got[i].pts > got[i - 1].pts);
  }
  // After the end the playlist says so.
  auto last = test::http_request(d.http(), "GET", "/api/v1/cameras/yard/live.m3u8");
  CHECK(last.status == 200);
  CHECK_THAT(last.body, ContainsSubstring("#EXT-X-ENDLIST"));
}
