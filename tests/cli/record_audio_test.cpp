// A camera's audio recorded beside its video, without transcoding (docs/media.md, "Audio"): a
// file with AAC audio recorded by `vigil record`, and GStreamer RTSP cameras with AAC (RFC 3640),
// G.711 mu-law and Opus read by vigil's own RTSP session, each record an audio stream of the camera
// (the camera API lists it, media_kind audio); `vigil play --audio` gives back every audio packet
// recorded, in order, at the times they were sent, its bytes unchanged (a file's AAC priming frame,
// before its first picture, and the frames after its last included), and so does vigild's MP4
// export; a camera without audio records its video alone, as before; --no-audio leaves the audio out.
// A play across a change of the video's codec parameters (two parts, two files) keeps each part's
// audio up to the next part's start: every packet is in one of the files.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

namespace {

struct AudioPacket {
  double pts_s = 0;
  std::int64_t size = 0;
};

// ffprobe's packets of FILE's first audio stream, and its codec and sample rate.
struct ProbedAudio {
  std::string codec;
  int sample_rate = 0, channels = 0;
  std::vector<AudioPacket> packets;
};

ProbedAudio probe_audio(const fs::path& file, const fs::path& dir) {
  ProbedAudio r;
  const auto streams = dir / (file.filename().string() + ".as");
  REQUIRE(test::run_to_exit("/usr/bin/ffprobe",
                            {"-v", "error", "-select_streams", "a:0", "-show_entries",
                             "stream=codec_name,sample_rate,channels", "-of", "default=nw=1", "-o", streams.string(),
                             file.string()},
                            dir / "ffprobe.log")
              .status == 0);
  std::ifstream s(streams);
  for (std::string line; std::getline(s, line);) {
    if (line.starts_with("codec_name=")) r.codec = line.substr(11);
    if (line.starts_with("sample_rate=")) r.sample_rate = std::stoi(line.substr(12));
    if (line.starts_with("channels=")) r.channels = std::stoi(line.substr(9));
  }
  const auto packets = dir / (file.filename().string() + ".ap");
  REQUIRE(test::run_to_exit("/usr/bin/ffprobe",
                            {"-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time,size", "-of",
                             "csv=p=0", "-o", packets.string(), file.string()},
                            dir / "ffprobe.log")
              .status == 0);
  std::ifstream in(packets);
  for (std::string line; std::getline(in, line);) {
    const auto comma = line.find(',');
    if (line.empty() || comma == std::string::npos || line.substr(0, comma) == "N/A") continue;
    r.packets.push_back({std::stod(line.substr(0, comma)), std::stoll(line.substr(comma + 1))});
  }
  return r;
}

// "recorded N audio packets of NAME as stream S; M acknowledged": N (after checking N == M), or -1.
int recorded_audio_packets(const std::string& output, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(
          output, m, std::regex("recorded (\\d+) audio packets of " + name + R"( as stream \d+; (\d+) acknowledged)")))
    return -1;
  CHECK(m[1] == m[2]);
  return std::stoi(m[1]);
}

// The camera's streams of MEDIA_KIND in the camera API.
std::vector<boost::json::object> streams_of(const test::VigildProcess& d, const std::string& camera,
                                            const std::string& media_kind) {
  const auto reply = test::HttpApi{d.http()}.get("/api/v1/cameras/" + camera);
  REQUIRE(reply.status == 200);
  std::vector<boost::json::object> out;
  const boost::json::value camera_json = reply.json();  // held: iterating into the temporary would dangle
  for (const auto& s : camera_json.at("streams").as_array()) {
    if (s.at("media_kind").as_string() == media_kind) out.push_back(s.as_object());
  }
  return out;
}

test::ExitResult play_with_audio(const test::VigildProcess& d, const std::string& camera, const fs::path& out,
                                 const fs::path& dir) {
  return test::run_to_exit(VIGIL_CLI_PATH,
                           {"--server", d.wire(), "play", "--stream", camera, "--from", "-1h", "--audio", "-o",
                            out.string()},
                           dir / (camera + "-play.log"));
}

// Every packet of GOT is SENT's, in order, at its time (relative to the first) and of its size.
void check_same_audio(const std::vector<AudioPacket>& got, const std::vector<AudioPacket>& sent, double tolerance_s) {
  REQUIRE(got.size() == sent.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("audio packet " << i);
    CHECK(got[i].size == sent[i].size);
    CHECK(std::abs((got[i].pts_s - got[0].pts_s) - (sent[i].pts_s - sent[0].pts_s)) <= tolerance_s);
    if (i > 0) CHECK(got[i].pts_s > got[i - 1].pts_s);
  }
}

}  // namespace

TEST_CASE("vigil record records a file's AAC audio as the camera's audio stream, losslessly", "[record][cli][audio]") {
  test::TempDir dir;
  const auto clip = dir.path() / "av.mp4";
  REQUIRE(test::run_to_exit("/usr/bin/ffmpeg", {"-v",         "error",
                                                "-f",         "lavfi",
                                                "-i",         "testsrc=size=320x240:rate=25",
                                                "-f",         "lavfi",
                                                "-i",         "sine=frequency=440:sample_rate=48000",
                                                "-t",         "3",
                                                "-c:v",       "libx264",
                                                "-g",         "25",
                                                "-bf",        "0",
                                                "-pix_fmt",   "yuv420p",
                                                "-c:a",       "aac",
                                                "-b:a",       "64k",
                                                clip.string()},
                            dir.path() / "ffmpeg.log")
              .status == 0);
  const auto sent = probe_audio(clip, dir.path());
  REQUIRE(sent.codec == "aac");
  REQUIRE(sent.packets.size() > 100);  // 3 s of 1024-sample frames at 48 kHz: ~141

  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  auto rec = test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "porch", clip.string()},
                               dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  CHECK_THAT(rec.output, ContainsSubstring("and its audio: aac 48000 Hz, 1 channel(s)"));
  CHECK(recorded_audio_packets(rec.output, "porch") == static_cast<int>(sent.packets.size()));

  const auto audio_streams = streams_of(d, "porch", "audio");
  REQUIRE(audio_streams.size() == 1);
  CHECK(audio_streams[0].at("codec").as_string() == "aac");
  CHECK(streams_of(d, "porch", "video").size() == 1);

  // Played back beside the video: every packet as sent (the source's time base is 1/48000).
  const auto out = dir.path() / "porch.mkv";
  auto play = play_with_audio(d, "porch", out, dir.path());
  INFO(play.output);
  REQUIRE(play.status == 0);
  const auto got = probe_audio(out, dir.path());
  CHECK(got.codec == "aac");
  CHECK(got.sample_rate == 48000);
  CHECK(got.channels == 1);
  check_same_audio(got.packets, sent.packets, 0.0015);

  // Exported as MP4 by vigild: the same audio, its priming frame (before the first picture) and
  // the frames after the last picture included.
  const auto exported = test::http_request(d.http(), "GET", "/api/v1/cameras/porch/export.mp4?from=-1h");
  REQUIRE(exported.status == 200);
  const auto exported_file = dir.path() / "porch-export.mp4";
  std::ofstream(exported_file, std::ios::binary) << exported.body;
  const auto in_export = probe_audio(exported_file, dir.path());
  CHECK(in_export.codec == "aac");
  check_same_audio(in_export.packets, sent.packets, 0.0015);

  // --no-audio: the video alone.
  auto video_only =
      test::run_to_exit(VIGIL_CLI_PATH,
                        {"--server", d.wire(), "record", "--stream", "yard", "--no-audio", "--fast", clip.string()},
                        dir.path() / "rec2.log");
  INFO(video_only.output);
  REQUIRE(video_only.status == 0);
  CHECK(recorded_audio_packets(video_only.output, "yard") == -1);
  CHECK(streams_of(d, "yard", "audio").empty());
}

TEST_CASE("vigil play --audio across two parts keeps each part's audio up to the next part's start",
          "[record][cli][audio]") {
  test::TempDir dir;
  // Two recordings of one camera at two picture sizes (two parts of the range), each with 3 s of
  // AAC whose last frames lie after the last picture.
  const auto make_clip = [&](const std::string& name, const std::string& size) {
    const auto clip = dir.path() / name;
    REQUIRE(test::run_to_exit("/usr/bin/ffmpeg", {"-v",         "error",
                                                  "-f",         "lavfi",
                                                  "-i",         "testsrc=size=" + size + ":rate=25",
                                                  "-f",         "lavfi",
                                                  "-i",         "sine=frequency=440:sample_rate=48000",
                                                  "-t",         "3",
                                                  "-c:v",       "libx264",
                                                  "-g",         "25",
                                                  "-bf",        "0",
                                                  "-pix_fmt",   "yuv420p",
                                                  "-c:a",       "aac",
                                                  clip.string()},
                              dir.path() / "ffmpeg.log")
                .status == 0);
    return clip;
  };
  const auto big = make_clip("big.mp4", "320x240");
  const auto small = make_clip("small.mp4", "160x120");
  const auto sent_big = probe_audio(big, dir.path());
  const auto sent_small = probe_audio(small, dir.path());
  REQUIRE(sent_big.packets.size() > 100);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  for (const auto& clip : {big, small}) {
    auto rec = test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "loft", clip.string()},
                                 dir.path() / (clip.stem().string() + "-rec.log"));
    INFO(rec.output);
    REQUIRE(rec.status == 0);
  }
  const auto out = dir.path() / "loft.mkv";
  auto play = play_with_audio(d, "loft", out, dir.path());
  INFO(play.output);
  REQUIRE(play.status == 0);
  CHECK_THAT(play.output, ContainsSubstring("part 1 -> "));
  // Every audio packet recorded is in one of the files, once, in order: a part's audio runs to the
  // next part's start (its frames after its last picture too; the next recording's priming frame,
  // before its first picture and so before the part boundary, ends the first file).
  auto got = probe_audio(out, dir.path()).packets;
  const auto second = probe_audio(dir.path() / "loft.part2.mkv", dir.path()).packets;
  INFO(got.size() << " + " << second.size() << " audio packets in the two files");
  got.insert(got.end(), second.begin(), second.end());
  auto sent = sent_big.packets;
  sent.insert(sent.end(), sent_small.packets.begin(), sent_small.packets.end());
  REQUIRE(got.size() == sent.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("audio packet " << i);
    CHECK(got[i].size == sent[i].size);
  }
  CHECK(second.size() + 1 >= sent_small.packets.size());
}

TEST_CASE("RTSP cameras' AAC, G.711 and Opus are recorded by vigil's own RTSP session", "[record][cli][rtsp][audio]") {
  test::TempDir dir;
  [[maybe_unused]] auto camera = test::start_rtsp_camera(dir.path(), 0);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  struct Case {
    std::string path, name, codec;
    int sample_rate, channels;
  };
  for (const auto& c : {Case{"/av-aac", "aac-cam", "aac", 48000, 1}, Case{"/av-pcmu", "pcmu-cam", "pcm_mulaw", 8000, 1},
                        Case{"/av-opus", "opus-cam", "opus", 48000, 2}}) {
    INFO(c.path);
    const std::string url = "rtsp://127.0.0.1:" + std::to_string(camera.port) + c.path;
    auto rec =
        test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", c.name, url, "--duration", "3"},
                          dir.path() / (c.name + ".log"));
    INFO(rec.output);
    REQUIRE(rec.status == 0);
    CHECK_THAT(rec.output, ContainsSubstring("with rtsp"));
    CHECK_THAT(rec.output, ContainsSubstring("and its audio: " + c.codec));
    const int recorded = recorded_audio_packets(rec.output, c.name);
    CHECK(recorded >= 100);  // 3 s of audio in 20 or 21.3 ms frames (~145), less what the start took
    const auto audio_streams = streams_of(d, c.name, "audio");
    REQUIRE(audio_streams.size() == 1);
    CHECK(audio_streams[0].at("codec").as_string() == c.codec);

    const auto out = dir.path() / (c.name + ".mkv");
    auto play = play_with_audio(d, c.name, out, dir.path());
    INFO(play.output);
    REQUIRE(play.status == 0);
    const auto got = probe_audio(out, dir.path());
    CHECK(got.codec == c.codec);
    CHECK(got.sample_rate == c.sample_rate);
    CHECK(got.channels == c.channels);
    // What plays is what was recorded, in order, without a hole: each codec's frames here are 20 ms
    // (G.711's packets, Opus) or 21.3 ms (AAC's 1024 samples at 48 kHz), Matroska's times to the ms.
    REQUIRE(got.packets.size() >= 40);
    CHECK(got.packets.size() <= static_cast<std::size_t>(recorded));
    for (std::size_t i = 1; i < got.packets.size(); ++i) {
      INFO("audio packet " << i);
      CHECK(got.packets[i].pts_s > got.packets[i - 1].pts_s);
      CHECK(got.packets[i].pts_s - got.packets[i - 1].pts_s < 0.030);
    }
    if (c.codec == "pcm_mulaw") {
      for (const auto& p : got.packets) CHECK(p.size == 160);  // rtppcmupay's 20 ms at 8 kHz
    }
  }

  // A camera without audio: its video alone, as before.
  auto plain = test::run_to_exit(VIGIL_CLI_PATH,
                                 {"--server", d.wire(), "record", "--stream", "plain",
                                  "rtsp://127.0.0.1:" + std::to_string(camera.port) + "/cam1", "--duration", "2"},
                                 dir.path() / "plain.log");
  INFO(plain.output);
  REQUIRE(plain.status == 0);
  CHECK(plain.output.find("audio") == std::string::npos);
  CHECK(streams_of(d, "plain", "audio").empty());
  CHECK(streams_of(d, "plain", "video").size() == 1);
}
