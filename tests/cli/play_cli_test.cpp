// `vigil play` end to end with real peers: ffmpeg encodes a test clip (libx264, no B-frames),
// `vigil record` records it into a real vigild, and `vigil play` plays it back out of the
// volume and remuxes it. ffprobe checks what came out: the same codec, the same packets (size
// and key flag, in order) as the source, its duration, rising timestamps; keyframes-only
// fast-forward gives exactly the source's keyframes, reverse gives them backwards. A range with
// nothing recorded, a bad time and an unreachable server each get their own exit code.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>

#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

using test::probe_field;
using test::probe_packets;
using test::probe_stream;
}  // namespace

TEST_CASE("vigil play returns what vigil record stored: full, keyframes-only and reverse", "[play][cli][ffmpeg]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 4);
  const auto source = probe_packets(clip, dir.path());
  REQUIRE(source.size() == 100);
  std::vector<std::int64_t> source_keys;
  for (const auto& p : source) {
    if (p.key) source_keys.push_back(p.size);
  }
  REQUIRE(source_keys.size() == 4);

  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data",
                        {"--volume", (dir.path() / "vol").string(), "--volume-size", std::to_string(128 << 20),
                         "--extent-bytes", std::to_string(4 << 20), "--profile", profile.string(), "--cycle-ms", "200",
                         "--model-check-cycles", "0"});
  REQUIRE(d.wait_ready());
  auto rec =
      test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "lobby", clip.string(), "--fast"},
                        dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);

  // The last segment reaches the catalog through the batcher (at most its 1 s delay later):
  // wait for the condition, bounded.
  {
    pqxx::connection c("host=" + (dir.path() / "data" / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
    std::int64_t frames = 0;
    for (int i = 0; i < 200 && frames < 100; ++i) {
      pqxx::work tx(c);
      frames =
          tx.exec1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed'")[0].as<std::int64_t>();
      if (frames < 100) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(frames == 100);
  }
  const auto to = "@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count() +
                                       3600);
  // One vigild and recording for every check below (each starts a PostgreSQL cluster).
  auto play = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args{"--server", d.wire(), "play", "--stream", "lobby", "--from", "-1h", "--to", to};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("-o");
    args.push_back((dir.path() / out).string());
    return test::run_to_exit(VIGIL_CLI_PATH, args, dir.path() / (out + ".log"));
  };

  {  // the whole recording, remuxed to MP4, is the source packet for packet
    auto r = play({"--rate", "2"}, "full.mp4");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, ContainsSubstring("100 packets (4 keyframes"));
    const auto stream = probe_stream(dir.path() / "full.mp4", dir.path());
    CHECK_THAT(stream, ContainsSubstring("codec_name=h264"));
    CHECK_THAT(stream, ContainsSubstring("width=320"));
    // Delivered at twice real time, the file is still the recorded clip.
    CHECK(std::abs(probe_field(stream, "duration") - 4.0) < 1.0);  // within one GOP
    const auto out = probe_packets(dir.path() / "full.mp4", dir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
      if (i > 0) CHECK(out[i].pts > out[i - 1].pts);
    }
  }
  {  // real time to MPEG-TS: the duration of the source
    auto r = play({}, "full.ts");
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto stream = probe_stream(dir.path() / "full.ts", dir.path());
    CHECK(std::abs(probe_field(stream, "duration") - 4.0) < 1.0);  // within one GOP
    CHECK(probe_packets(dir.path() / "full.ts", dir.path()).size() == 100);
  }
  {  // keyframes-only at 4x: exactly the source's keyframes
    auto r = play({"--keyframes", "--rate", "4"}, "ff.mkv");
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto out = probe_packets(dir.path() / "ff.mkv", dir.path());
    std::vector<std::int64_t> sizes;
    for (const auto& p : out) {
      CHECK(p.key);
      sizes.push_back(p.size);
    }
    CHECK(sizes == source_keys);
  }
  {  // reverse: the keyframes backwards, with rising output timestamps
    auto r = play({"--reverse", "--rate", "4"}, "rev.mkv");
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto out = probe_packets(dir.path() / "rev.mkv", dir.path());
    std::vector<std::int64_t> sizes;
    for (std::size_t i = 0; i < out.size(); ++i) {
      sizes.push_back(out[i].size);
      if (i > 0) CHECK(out[i].pts > out[i - 1].pts);
    }
    CHECK(sizes == std::vector<std::int64_t>(source_keys.rbegin(), source_keys.rend()));
  }
  {  // nothing recorded, bad input and no server are told apart
    auto empty = test::run_to_exit(VIGIL_CLI_PATH,
                                   {"--server", d.wire(), "play", "--stream", "lobby", "--from", "@1000000000", "--to",
                                    "@1000000060", "-o", (dir.path() / "e.mp4").string()},
                                   dir.path() / "e.log");
    CHECK(empty.status == 5);
    CHECK_THAT(empty.output, ContainsSubstring("nothing of camera 'lobby' is recorded"));
    auto nocam = test::run_to_exit(VIGIL_CLI_PATH,
                                   {"--server", d.wire(), "play", "--stream", "nope", "--from", "-1h", "-o",
                                    (dir.path() / "n.mp4").string()},
                                   dir.path() / "n.log");
    CHECK(nocam.status == 5);
    CHECK_THAT(nocam.output, ContainsSubstring("no camera named 'nope'"));
    auto bad = test::run_to_exit(VIGIL_CLI_PATH,
                                 {"--server", d.wire(), "play", "--stream", "lobby", "--from", "yesterday", "-o",
                                  (dir.path() / "b.mp4").string()},
                                 dir.path() / "b.log");
    CHECK(bad.status == 2);
    CHECK_THAT(bad.output, ContainsSubstring("bad time 'yesterday'"));
    auto gone = test::run_to_exit(VIGIL_CLI_PATH,
                                  {"--server", "127.0.0.1:1", "play", "--stream", "lobby", "--from", "-1h", "-o",
                                   (dir.path() / "g.mp4").string()},
                                  dir.path() / "g.log");
    CHECK(gone.status == 3);
  }
}
