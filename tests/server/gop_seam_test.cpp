// Segment rotation and GOPs (docs/format.md, "Segments start at a keyframe"): a recording rotates
// its segment by time (--segment-max 1) several times inside an 8 s H.264 clip with a keyframe
// every 25 frames, recorded in real time. Every acknowledged frame must come back, in order, none missing, from every
// reader: the MP4 export, the recorded HLS playlist, and wire playback (`vigil play`) at rate 1
// and at a fast rate. Against a server that rotates in the middle of a GOP, the frames of each
// new segment before its first keyframe are never served and every reader here comes up short.
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <ctime>
#include <fstream>
#include <pqxx/pqxx>

#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;

namespace {

void check_packets(const std::vector<test::ProbedPacket>& out, const std::vector<test::ProbedPacket>& source) {
  REQUIRE(out.size() == source.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("packet " << i);
    CHECK(out[i].size == source[i].size);
    CHECK(out[i].key == source[i].key);
    if (i > 0) CHECK(out[i].pts > out[i - 1].pts);
  }
}

}  // namespace

TEST_CASE("segments rotated every second: every frame is exported, streamed and played back",
          "[http][media][ffmpeg][segment]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 8);  // 200 packets, a keyframe every 25
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 200);
  auto args = test::sim_volume_args(dir.path(), test::make_sim_profile(dir.path()));
  args.insert(args.end(), {"--segment-max", "1"});
  const auto data = dir.path() / "data";
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  // In real time, declared well above the clip's rate: a camera with room in its cycle's half
  // (one that fills it every cycle may rotate mid-GOP: docs/format.md). Its segments rotate by
  // time every second or so, wherever in a GOP that falls.
  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", d.wire(), "record", "--stream", "gate", "--rate", "4", clip.string()},
                               dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  test::wait_for_closed_frames(data, 200);
  {  // several rotations, each segment starting where the one before ended
    pqxx::connection c("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
    pqxx::nontransaction q(c);
    const auto rows = q.exec("SELECT start_us, end_us, frame_count FROM segments ORDER BY start_us");
    CHECK(rows.size() >= 4);
    std::int64_t frames = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i > 0) CHECK(rows[i][0].as<std::int64_t>() == rows[i - 1][1].as<std::int64_t>());
      frames += rows[i][2].as<std::int64_t>();
    }
    CHECK(frames == 200);
  }
  const auto now_s = std::time(nullptr);
  // --fast records ahead of wall-clock time: the range ends an hour from now.
  const std::string range = "from=@" + std::to_string(now_s - 3600) + "&to=@" + std::to_string(now_s + 3600);
  const std::string base = "/api/v1/cameras/gate/";

  {  // the MP4 export
    auto full = test::http_request(d.http(), "GET", base + "export.mp4?" + range);
    INFO(full.head);
    REQUIRE(full.status == 200);
    std::ofstream(dir.path() / "full.mp4", std::ios::binary) << full.body;
    check_packets(test::probe_packets(dir.path() / "full.mp4", dir.path()), source);
  }
  {  // the recorded HLS playlist, as a player reads it
    const std::string url = "http://" + d.http() + base + "hls.m3u8?" + range + "&access_token=" + d.token();
    check_packets(test::probe_packets(url, dir.path()), source);
  }
  for (const char* rate : {"1", "8"}) {  // wire playback, at the recorded pace and fast
    INFO("rate " << rate);
    const auto out = dir.path() / (std::string("play-") + rate + ".mkv");
    auto played = test::run_to_exit(VIGIL_CLI_PATH,
                                    {"--server", d.wire(), "play", "--stream", "gate", "--from",
                                     "@" + std::to_string(now_s - 3600), "--to", "@" + std::to_string(now_s + 3600),
                                     "--rate", rate, "-o", out.string()},
                                    dir.path() / (std::string("play-") + rate + ".log"));
    INFO(played.output);
    REQUIRE(played.status == 0);
    check_packets(test::probe_packets(out, dir.path()), source);
  }
}
