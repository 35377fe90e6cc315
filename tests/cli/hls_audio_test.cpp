// A camera's AAC audio in HLS and in the streamed export (docs/media.md, "Audio"), with real
// peers: `vigil record` sends a file with AAC audio in real time, vigild serves it, ffprobe and
// ffmpeg read what it serves.
// - Recorded HLS: the init segment has the audio track (mp4a), every media segment holds the AAC
//   of its own time (48 kHz mono, about one 1024-sample frame per 21.3 ms of the segment), the
//   segments together hold the recorded audio once, in order, without a hole; ffmpeg reads the
//   playlist over HTTP; the catalog keeps the audio's sample rate and channels (camera API).
// - The streamed export (more than --export-memory-bytes) carries every audio packet recorded, as
//   the in-memory export does.
// - A change of the AAC configuration inside a recorded playlist's range (a camera recorded at
//   48 kHz mono, then at 16 kHz stereo): the segments from the change on have an init of their
//   own (after a discontinuity), every segment read with its init holds its own audio.
// - Live HLS: a player following live.m3u8 to its end gets the AAC beside the video. A channel
//   opened before the audio records gets it from the next segment on: a new init (EXT-X-MAP with
//   mp4a) after an EXT-X-DISCONTINUITY, each segment's audio that of its init.
// - A G.711 camera's HLS (G.711 has no MP4 sample entry) and a camera without audio: the video
//   alone, every packet, a playlist ffmpeg reads.
// - GStreamer RTSP cameras (tests/support/rtsp_camera.py /av-aac, /av-pcmu) read by vigil's own RTSP
//   session: the AAC camera's HLS segments hold its audio (rate and channels from its SDP, kept in
//   the catalog), the G.711 camera's HLS is its video.
#include <sys/stat.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/proxy_process.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

namespace {

constexpr double kAacFrameS = 1024.0 / 48000;  // one AAC frame at 48 kHz

struct Probed {
  std::string codec;
  int sample_rate = 0, channels = 0;
  std::vector<double> pts_s;  // the audio packets' times, in order
};

// ffprobe's first audio stream of FILE (or URL): codec, sample rate, channels, packet times. No
// audio stream: an empty codec and no packets.
Probed probe_audio(const std::string& file, const fs::path& dir, const std::string& tag) {
  Probed r;
  const auto streams = dir / (tag + ".as");
  REQUIRE(
      test::run_to_exit("/usr/bin/ffprobe",
                        {"-v", "error", "-select_streams", "a:0", "-show_entries",
                         "stream=codec_name,sample_rate,channels", "-of", "default=nw=1", "-o", streams.string(), file},
                        dir / (tag + ".ffprobe.log"))
          .status == 0);
  std::ifstream s(streams);
  for (std::string line; std::getline(s, line);) {
    if (line.starts_with("codec_name=")) r.codec = line.substr(11);
    if (line.starts_with("sample_rate=")) r.sample_rate = std::stoi(line.substr(12));
    if (line.starts_with("channels=")) r.channels = std::stoi(line.substr(9));
  }
  const auto packets = dir / (tag + ".ap");
  REQUIRE(test::run_to_exit("/usr/bin/ffprobe",
                            {"-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time", "-of",
                             "csv=p=0", "-o", packets.string(), file},
                            dir / (tag + ".ffprobe.log"))
              .status == 0);
  std::ifstream in(packets);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line != "N/A") r.pts_s.push_back(std::stod(line));
  }
  return r;
}

// Every packet after the first one AAC frame after the previous: no hole, none twice.
void check_contiguous(const std::vector<double>& pts_s) {
  for (std::size_t i = 1; i < pts_s.size(); ++i) {
    INFO("audio packet " << i << " at " << pts_s[i] << " s");
    CHECK(std::abs(pts_s[i] - pts_s[i - 1] - kAacFrameS) < 0.002);
  }
}

// A test clip of SECONDS with 48 kHz mono audio of CODEC (aac; pcm_mulaw at 8 kHz) in FILE; AAC at
// AAC_HZ with AAC_CHANNELS where given.
void make_av_clip(const fs::path& file, int seconds, const std::string& codec, const fs::path& dir, int aac_hz = 48000,
                  int aac_channels = 1) {
  const bool g711 = codec == "pcm_mulaw";
  REQUIRE(test::run_to_exit("/usr/bin/ffmpeg",
                            {"-v",         "error",
                             "-f",         "lavfi",
                             "-i",         "testsrc=size=320x240:rate=25",
                             "-f",         "lavfi",
                             "-i",         "sine=frequency=440:sample_rate=" + std::to_string(g711 ? 8000 : aac_hz),
                             "-ac",        std::to_string(g711 ? 1 : aac_channels),
                             "-t",         std::to_string(seconds),
                             "-c:v",       "libx264",
                             "-g",         "25",
                             "-bf",        "0",
                             "-pix_fmt",   "yuv420p",
                             "-c:a",       codec,
                             file.string()},
                            dir / "ffmpeg.log")
              .status == 0);
}

void record(const test::VigildProcess& d, const std::string& camera, const fs::path& clip, const fs::path& dir) {
  auto rec = test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", camera, clip.string()},
                               dir / (camera + "-rec.log"));
  INFO(rec.output);
  REQUIRE(rec.status == 0);
}

std::vector<boost::json::object> streams_of(const test::VigildProcess& d, const std::string& camera,
                                            const std::string& media_kind) {
  const auto reply = test::http_request(d.http(), "GET", "/api/v1/cameras/" + camera);
  REQUIRE(reply.status == 200);
  const boost::json::value camera_json = reply.json();  // held: iterating into the temporary would dangle
  std::vector<boost::json::object> out;
  for (const auto& s : camera_json.at("streams").as_array()) {
    if (s.at("media_kind").as_string() == media_kind) out.push_back(s.as_object());
  }
  return out;
}

void write_file(const fs::path& file, const std::string& bytes) { std::ofstream(file, std::ios::binary) << bytes; }

// The number after "KEY=" in URI.
std::int64_t uri_param(const std::string& uri, const std::string& key) {
  std::smatch m;
  REQUIRE(std::regex_search(uri, m, std::regex("[?&]" + key + "=(\\d+)")));
  return std::stoll(m[1]);
}

// CAMERA's HLS playlist of the last hour, its init segment and its media segments (URIs, bodies).
struct Hls {
  std::string playlist, init_uri, init;
  std::vector<std::string> segment_uris, segments;
};

// MIN_SEGMENTS: a recording of 6 s reaches at least two 4 s cells of wall-clock time.
Hls fetch_hls(const test::VigildProcess& d, const std::string& camera, std::size_t min_segments) {
  Hls h;
  const std::string base = "/api/v1/cameras/" + camera + "/";
  auto pl = test::http_request(d.http(), "GET", base + "hls.m3u8?from=-1h");
  INFO(pl.body);
  REQUIRE(pl.status == 200);
  h.playlist = pl.body;
  CHECK_THAT(h.playlist, ContainsSubstring("#EXT-X-ENDLIST"));
  const auto uris = test::playlist_uris(h.playlist);
  REQUIRE(uris.size() >= 1 + min_segments);  // the init segment and the media segments
  REQUIRE(uris.front().starts_with("hls/init.mp4"));
  h.init_uri = uris.front();
  auto init = test::http_request(d.http(), "GET", base + h.init_uri);
  REQUIRE(init.status == 200);
  h.init = init.body;
  for (std::size_t i = 1; i < uris.size(); ++i) {
    auto seg = test::http_request(d.http(), "GET", base + uris[i]);
    INFO(uris[i]);
    REQUIRE(seg.status == 200);
    h.segment_uris.push_back(uris[i]);
    h.segments.push_back(seg.body);
  }
  return h;
}

// HLS of a camera whose audio stays out of it: no audio anywhere, every video packet, a playlist
// ffmpeg reads.
void check_video_only_hls(const test::VigildProcess& d, const std::string& camera, std::size_t video_packets,
                          const fs::path& dir) {
  INFO(camera);
  // The master playlist names the video's codec alone.
  auto master = test::http_request(d.http(), "GET", "/api/v1/cameras/" + camera + "/hls/master.m3u8?from=-1h");
  REQUIRE(master.status == 200);
  CHECK(std::regex_search(master.body, std::regex(R"(CODECS="avc1\.[0-9A-F]{6}",RESOLUTION=320x240)")));
  const auto h = fetch_hls(d, camera, 1);
  CHECK(h.init_uri.find("audio=") == std::string::npos);
  for (const auto& u : h.segment_uris) CHECK(u.find("audio=") == std::string::npos);
  CHECK(h.init.find("mp4a") == std::string::npos);
  std::string whole = h.init;
  for (const auto& s : h.segments) whole += s;
  const auto file = dir / (camera + "-hls.mp4");
  write_file(file, whole);
  CHECK(probe_audio(file.string(), dir, camera + "-hls").codec.empty());
  CHECK(test::probe_packets(file, dir).size() == video_packets);
  const auto out = dir / (camera + "-hls.mkv");
  auto ff = test::run_to_exit("/usr/bin/ffmpeg",
                              {"-loglevel", "error", "-y", "-i",
                               "http://" + d.http() + "/api/v1/cameras/" + camera +
                                   "/hls.m3u8?from=-1h&access_token=" + d.token(),
                               "-c", "copy", out.string()},
                              dir / (camera + "-hls-ffmpeg.log"));
  INFO(ff.output);
  REQUIRE(ff.status == 0);
  CHECK(test::probe_packets(out, dir).size() == video_packets);
  CHECK(probe_audio(out.string(), dir, camera + "-hls-mkv").codec.empty());
}

}  // namespace

TEST_CASE("HLS and the streamed export carry a camera's AAC audio; the catalog keeps its rate and channels",
          "[hls][http][audio][ffmpeg]") {
  test::TempDir dir;
  const auto clip = dir.path() / "av.mp4";
  make_av_clip(clip, 6, "aac", dir.path());
  const auto sent = probe_audio(clip.string(), dir.path(), "sent");
  REQUIRE(sent.codec == "aac");
  REQUIRE(sent.pts_s.size() > 270);  // 6 s of 1024-sample frames at 48 kHz: ~283

  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  auto d = std::make_unique<test::VigildProcess>(data, test::sim_volume_args(dir.path(), profile));
  REQUIRE(d->wait_ready());
  record(*d, "porch", clip, dir.path());
  test::wait_for_closed_frames(data, 150 + static_cast<std::int64_t>(sent.pts_s.size()));

  // The catalog keeps what the recorder said of the audio; the video has neither.
  const auto audio_streams = streams_of(*d, "porch", "audio");
  REQUIRE(audio_streams.size() == 1);
  CHECK(audio_streams[0].at("codec").as_string() == "aac");
  CHECK(audio_streams[0].at("sample_rate_hz").as_int64() == 48000);
  CHECK(audio_streams[0].at("channels").as_int64() == 1);
  const auto video_streams = streams_of(*d, "porch", "video");
  REQUIRE(video_streams.size() == 1);
  CHECK(!video_streams[0].contains("sample_rate_hz"));
  CHECK(!video_streams[0].contains("channels"));

  // The master playlist names both codecs (H.264 High from the recorded avcC, AAC-LC) and leads
  // to the media playlist of the same range.
  auto master = test::http_request(d->http(), "GET", "/api/v1/cameras/porch/hls/master.m3u8?from=-1h");
  INFO(master.body);
  REQUIRE(master.status == 200);
  CHECK(std::regex_search(
      master.body,
      std::regex(
          R"(#EXT-X-STREAM-INF:BANDWIDTH=\d+,CODECS="avc1\.64[0-9A-F]{4},mp4a\.40\.2",RESOLUTION=320x240\n\.\./hls\.m3u8\?from=-1h\n)")));

  // Recorded HLS: the audio as each segment's second track.
  const auto h = fetch_hls(*d, "porch", 2);
  INFO(h.playlist);
  CHECK(h.init_uri.find("&audio=1") != std::string::npos);
  CHECK(h.init.find("mp4a") != std::string::npos);
  CHECK(h.init.find("avc1") != std::string::npos);
  std::string whole = h.init;
  for (std::size_t i = 0; i < h.segments.size(); ++i) {
    INFO(h.segment_uris[i]);
    CHECK(h.segment_uris[i].find("&audio=1") != std::string::npos);
    // Each segment on its own (after the init segment): AAC of its own time, a frame per 21.3 ms.
    const auto file = dir.path() / ("seg" + std::to_string(i) + ".mp4");
    write_file(file, h.init + h.segments[i]);
    const auto got = probe_audio(file.string(), dir.path(), "seg" + std::to_string(i));
    CHECK(got.codec == "aac");
    CHECK(got.sample_rate == 48000);
    CHECK(got.channels == 1);
    const double seconds =
        static_cast<double>(uri_param(h.segment_uris[i], "t1") - uri_param(h.segment_uris[i], "t0")) / 1e6;
    INFO("segment of " << seconds << " s holds " << got.pts_s.size() << " audio packets");
    CHECK(std::abs(static_cast<double>(got.pts_s.size()) - seconds / kAacFrameS) <= 3);
    whole += h.segments[i];
  }
  // All segments: the recorded audio once, in order, no hole — what lies between the first and
  // the last video frame (the priming frame before the first picture and a frame or two after
  // the last are outside every segment).
  write_file(dir.path() / "hls.mp4", whole);
  const auto in_hls = probe_audio((dir.path() / "hls.mp4").string(), dir.path(), "hls");
  CHECK(in_hls.codec == "aac");
  CHECK(in_hls.pts_s.size() <= sent.pts_s.size());
  CHECK(in_hls.pts_s.size() + 4 >= sent.pts_s.size());
  check_contiguous(in_hls.pts_s);
  // ffmpeg plays the master playlist over HTTP (and so the media playlist it names), both tracks.
  const auto played = dir.path() / "hls.mkv";
  auto ff = test::run_to_exit("/usr/bin/ffmpeg",
                              {"-loglevel", "error", "-y", "-i",
                               "http://" + d->http() +
                                   "/api/v1/cameras/porch/hls/master.m3u8?from=-1h&access_token=" + d->token(),
                               "-c", "copy", played.string()},
                              dir.path() / "hls-ffmpeg.log");
  INFO(ff.output);
  REQUIRE(ff.status == 0);
  CHECK(test::probe_packets(played, dir.path()).size() == 150);
  const auto in_played = probe_audio(played.string(), dir.path(), "played");
  CHECK(in_played.codec == "aac");
  CHECK(in_played.pts_s.size() == in_hls.pts_s.size());

  // The streamed export (a vigild whose in-memory cap is below the recording): every audio packet
  // recorded, as the in-memory export has them.
  REQUIRE(d->stop(SIGTERM) == 0);
  d.reset();
  auto args = test::sim_volume_args(dir.path(), profile);
  args.insert(args.end(), {"--export-memory-bytes", std::to_string(64 << 10)});
  test::VigildProcess small(data, args);
  REQUIRE(small.wait_ready());
  auto streamed = test::http_request(small.http(), "GET", "/api/v1/cameras/porch/export.mp4?from=-1h");
  INFO(streamed.head);
  REQUIRE(streamed.status == 200);
  CHECK(streamed.header("X-Vigil-Export") == "fragmented");
  CHECK(streamed.chunks >= 4);
  write_file(dir.path() / "streamed.mp4", streamed.body);
  const auto in_streamed = probe_audio((dir.path() / "streamed.mp4").string(), dir.path(), "streamed");
  CHECK(in_streamed.codec == "aac");
  CHECK(in_streamed.sample_rate == 48000);
  CHECK(in_streamed.channels == 1);
  REQUIRE(in_streamed.pts_s.size() == sent.pts_s.size());
  check_contiguous(in_streamed.pts_s);
  for (std::size_t i = 0; i < sent.pts_s.size(); ++i) {
    INFO("audio packet " << i);
    CHECK(std::abs((in_streamed.pts_s[i] - in_streamed.pts_s[0]) - (sent.pts_s[i] - sent.pts_s[0])) < 0.0015);
  }
  CHECK(test::probe_packets(dir.path() / "streamed.mp4", dir.path()).size() == 150);
}

TEST_CASE("recorded HLS across a change of the AAC configuration gives each segment the init of its audio",
          "[hls][http][audio][ffmpeg]") {
  test::TempDir dir;
  const auto first = dir.path() / "mono48.mp4";
  const auto second = dir.path() / "stereo16.mp4";
  make_av_clip(first, 6, "aac", dir.path(), 48000, 1);
  make_av_clip(second, 6, "aac", dir.path(), 16000, 2);
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  test::VigildProcess d(data, test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  record(d, "attic", first, dir.path());
  // A hole of more than a second (kHoleUs) between the two recordings: no segment spans both.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  record(d, "attic", second, dir.path());
  const auto sent = probe_audio(first.string(), dir.path(), "sent1").pts_s.size() +
                    probe_audio(second.string(), dir.path(), "sent2").pts_s.size();
  test::wait_for_closed_frames(data, 300 + static_cast<std::int64_t>(sent));

  const std::string base = "/api/v1/cameras/attic/";
  const auto pl = test::http_request(d.http(), "GET", base + "hls.m3u8?from=-1h");
  INFO(pl.body);
  REQUIRE(pl.status == 200);
  struct Seen {
    std::string uri, map_uri, bytes;
    bool after_discontinuity = false;
  };
  std::vector<Seen> seen;
  std::map<std::string, std::string> inits;
  {
    std::istringstream lines(pl.body);
    std::string map_uri;
    bool discontinuity = false;
    for (std::string line; std::getline(lines, line);) {
      if (line == "#EXT-X-DISCONTINUITY") discontinuity = true;
      std::smatch m;
      if (std::regex_search(line, m, std::regex(R"re(^#EXT-X-MAP:URI="([^"]+)")re"))) map_uri = m[1];
      if (line.empty() || line[0] == '#') continue;
      if (!inits.contains(map_uri)) {
        auto init = test::http_request(d.http(), "GET", base + map_uri);
        INFO(map_uri);
        REQUIRE(init.status == 200);
        inits[map_uri] = init.body;
      }
      auto seg = test::http_request(d.http(), "GET", base + line);
      INFO(line);
      REQUIRE(seg.status == 200);
      seen.push_back({line, map_uri, seg.body, discontinuity});
      discontinuity = false;
    }
  }
  REQUIRE(seen.size() >= 4);  // two recordings of 6 s, at least two 4 s cells each
  // Two inits: the second (at the first segment of 16 kHz stereo) after a discontinuity.
  REQUIRE(inits.size() == 2);
  std::size_t switched = 0;
  while (switched < seen.size() && seen[switched].map_uri == seen.front().map_uri) ++switched;
  REQUIRE(switched < seen.size());
  CHECK(seen[switched].after_discontinuity);
  // Each segment read with the init its EXT-X-MAP names: the audio's own rate and channels, and a
  // 1024-sample frame per 1024/rate s of its [t0, t1) — an init of another rate would read the
  // segment's frames at a wrong duration and count.
  for (std::size_t i = 0; i < seen.size(); ++i) {
    INFO("segment " << i << " " << seen[i].uri << " with " << seen[i].map_uri);
    const auto file = dir.path() / ("cfg-seg" + std::to_string(i) + ".mp4");
    write_file(file, inits[seen[i].map_uri] + seen[i].bytes);
    const auto got = probe_audio(file.string(), dir.path(), "cfg-seg" + std::to_string(i));
    CHECK(got.codec == "aac");
    const bool later = i >= switched;
    CHECK(got.sample_rate == (later ? 16000 : 48000));
    CHECK(got.channels == (later ? 2 : 1));
    REQUIRE(got.sample_rate > 0);
    const double seconds = static_cast<double>(uri_param(seen[i].uri, "t1") - uri_param(seen[i].uri, "t0")) / 1e6;
    const double frame_s = 1024.0 / got.sample_rate;
    INFO(seconds << " s, " << got.pts_s.size() << " audio packets");
    CHECK(std::abs(static_cast<double>(got.pts_s.size()) - seconds / frame_s) <= 3);
    for (std::size_t k = 1; k < got.pts_s.size(); ++k)
      CHECK(std::abs(got.pts_s[k] - got.pts_s[k - 1] - frame_s) < 0.002);
  }
}

TEST_CASE("live HLS carries a camera's AAC audio beside its video", "[hls][live][http][audio][ffmpeg]") {
  test::TempDir dir;
  const auto clip = dir.path() / "av.mp4";
  make_av_clip(clip, 10, "aac", dir.path());
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  SpawnOptions rec;
  rec.argv = {VIGIL_CLI_PATH, "--server", d.wire(), "record", "--stream", "gate", clip.string()};
  rec.output_file = dir.path() / "rec.log";
  rec.new_session = false;
  auto recorder = ChildProcess::spawn(rec);

  // A channel takes the audio that records when it opens: asked once the audio stream records.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  test::HttpResult pl;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto camera = test::http_request(d.http(), "GET", "/api/v1/cameras/gate");  // 404 until it records
    const bool recording = camera.status == 200 && !streams_of(d, "gate", "audio").empty() &&
                           streams_of(d, "gate", "audio")[0].at("state").as_string() == "recording";
    if (recording) {
      pl = test::http_request(d.http(), "GET", "/api/v1/cameras/gate/live.m3u8");
      if (pl.status == 200) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(pl.body);
  REQUIRE(pl.status == 200);
  auto init = test::http_request(d.http(), "GET", "/api/v1/cameras/gate/" + test::playlist_uris(pl.body).front());
  REQUIRE(init.status == 200);
  CHECK(init.body.find("mp4a") != std::string::npos);

  // A player follows the live playlist until the recording ends.
  const auto out = dir.path() / "live.mkv";
  auto ff = test::run_to_exit("/usr/bin/ffmpeg",
                              {"-loglevel", "error", "-y", "-i",
                               "http://" + d.http() + "/api/v1/cameras/gate/live.m3u8?access_token=" + d.token(), "-c",
                               "copy", out.string()},
                              dir.path() / "ffmpeg-live.log");
  INFO(ff.output);
  REQUIRE(ff.status == 0);
  CHECK(recorder.wait() == 0);
  const auto video = test::probe_packets(out, dir.path());
  REQUIRE(video.size() >= 50);  // at least two live segments
  const auto got = probe_audio(out.string(), dir.path(), "live");
  CHECK(got.codec == "aac");
  CHECK(got.sample_rate == 48000);
  CHECK(got.channels == 1);
  // The audio of the time the player saw: about a frame per 21.3 ms of its video, no hole.
  const double video_s = static_cast<double>(video.size()) / 25;
  INFO(video_s << " s of video, " << got.pts_s.size() << " audio packets");
  CHECK(static_cast<double>(got.pts_s.size()) >= (video_s - 0.5) / kAacFrameS);
  CHECK(static_cast<double>(got.pts_s.size()) <= (video_s + 0.5) / kAacFrameS);
  check_contiguous(got.pts_s);
}

TEST_CASE("a live HLS channel opened before the camera's audio records takes the audio from its next segment",
          "[hls][live][http][audio][ffmpeg]") {
  test::TempDir dir;
  // 22 s of video; its AAC starts 12 s in, so the audio's session starts well after the video's
  // (the recorder reads a file ahead of its real-time sending by a few seconds at most).
  const auto clip = dir.path() / "late.mkv";
  REQUIRE(
      test::run_to_exit("/usr/bin/ffmpeg",
                        {"-v",         "error", "-f",       "lavfi",   "-i",   "testsrc=size=320x240:rate=25",
                         "-itsoffset", "12",    "-f",       "lavfi",   "-i",   "sine=frequency=440:sample_rate=48000",
                         "-t",         "22",    "-c:v",     "libx264", "-g",   "25",
                         "-bf",        "0",     "-pix_fmt", "yuv420p", "-c:a", "aac",
                         clip.string()},
                        dir.path() / "ffmpeg.log")
          .status == 0);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  // Sent as a camera would: in real time (ffmpeg -re) through a FIFO, so the first audio packet
  // reaches the recorder 12 s after the first picture (a file it would read ahead of its sending).
  const auto fifo = dir.path() / "camera.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  SpawnOptions cam;
  cam.argv = {"/usr/bin/ffmpeg", "-v", "error",      "-re", "-i", clip.string(), "-c", "copy", "-f",
              "matroska",        "-y", fifo.string()};
  cam.output_file = dir.path() / "camera.log";
  cam.new_session = false;
  auto camera = ChildProcess::spawn(cam);
  SpawnOptions rec;
  rec.argv = {VIGIL_CLI_PATH, "--server", d.wire(), "record", "--stream", "yard", fifo.string()};
  rec.output_file = dir.path() / "rec.log";
  rec.new_session = false;
  auto recorder = ChildProcess::spawn(rec);

  // A player follows the live playlist from its first segment (the audio not recording yet) to
  // its end, fetching each segment once it is listed, with the init its EXT-X-MAP names.
  struct Seen {
    std::string map_uri, bytes;
    bool after_discontinuity = false;
  };
  std::vector<Seen> seen;
  std::map<std::string, std::string> inits;  // by URI
  std::set<std::string> fetched;
  const std::string base = "/api/v1/cameras/yard/";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool ended = false;
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    const auto pl = test::http_request(d.http(), "GET", base + "live.m3u8");
    if (pl.status != 200) {  // 404 until it records, 503 until the first segment
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    ended = pl.body.find("#EXT-X-ENDLIST") != std::string::npos;
    std::istringstream lines(pl.body);
    std::string map_uri;
    bool discontinuity = false;
    for (std::string line; std::getline(lines, line);) {
      if (line == "#EXT-X-DISCONTINUITY") discontinuity = true;
      std::smatch m;
      if (std::regex_search(line, m, std::regex(R"re(^#EXT-X-MAP:URI="([^"]+)")re"))) map_uri = m[1];
      if (line.empty() || line[0] == '#') continue;
      if (!inits.contains(map_uri)) {
        auto init = test::http_request(d.http(), "GET", base + map_uri);
        INFO(map_uri);
        REQUIRE(init.status == 200);
        inits[map_uri] = init.body;
      }
      if (fetched.insert(line).second) {
        auto seg = test::http_request(d.http(), "GET", base + line);
        INFO(line);
        REQUIRE(seg.status == 200);
        seen.push_back({map_uri, seg.body, discontinuity});
      }
      discontinuity = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(ended);
  CHECK(recorder.wait() == 0);
  CHECK(camera.wait() == 0);
  REQUIRE(seen.size() >= 8);  // 22 s in segments of about 2 s

  // The channel opened video-only; the audio came with a second init, after a discontinuity, and
  // stayed to the end.
  for (const auto& [uri, bytes] : inits)
    UNSCOPED_INFO(uri << (bytes.find("mp4a") != std::string::npos ? " has" : " has no") << " audio");
  REQUIRE(inits.size() == 2);
  const std::string first_map = seen.front().map_uri;
  CHECK(inits[first_map].find("mp4a") == std::string::npos);
  std::size_t switched = 0;
  while (switched < seen.size() && seen[switched].map_uri == first_map) ++switched;
  REQUIRE(switched < seen.size());
  CHECK(seen[switched].after_discontinuity);
  const std::string audio_map = seen[switched].map_uri;
  CHECK(uri_param(audio_map, "g") == 1);
  CHECK(inits[audio_map].find("mp4a") != std::string::npos);
  // Each segment read with its own init: the video-only ones have no audio, the later ones the
  // AAC of their own time: from the first audio packet the camera sent (the audio's session may
  // start a little before its first packet's time comes: the recorder reads ahead) to the end,
  // each segment's in full (but the last's, which ends with the recording).
  std::string with_audio = inits[audio_map];
  double audio_seconds = 0;
  bool audio_started = false;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    INFO("segment " << i << " of " << seen.size() << ", init " << seen[i].map_uri);
    CHECK(!(i > switched && seen[i].after_discontinuity));
    const auto file = dir.path() / ("live-seg" + std::to_string(i) + ".mp4");
    write_file(file, inits[seen[i].map_uri] + seen[i].bytes);
    const auto got = probe_audio(file.string(), dir.path(), "live-seg" + std::to_string(i));
    const auto video = test::probe_packets(file, dir.path());
    CHECK(video.size() >= 25);
    if (i < switched) {
      CHECK(got.codec.empty());
      continue;
    }
    CHECK(seen[i].map_uri == audio_map);
    CHECK(got.codec == "aac");
    CHECK(got.sample_rate == 48000);
    CHECK(got.channels == 1);
    const double seconds = static_cast<double>(video.size()) / 25;
    INFO(seconds << " s of video, " << got.pts_s.size() << " audio packets");
    with_audio += seen[i].bytes;
    if (got.pts_s.empty() && !audio_started) continue;  // before the audio's first packet
    REQUIRE(!got.pts_s.empty());
    if (!audio_started) {
      // The first segment with audio: from its first packet to the segment's end.
      audio_started = true;
      const double video_end_s = video.back().pts + 0.04;
      CHECK(std::abs(got.pts_s.back() + kAacFrameS - video_end_s) < 3 * kAacFrameS);
    } else if (i + 1 < seen.size()) {
      CHECK(std::abs(static_cast<double>(got.pts_s.size()) - seconds / kAacFrameS) <= 3);
    }
    audio_seconds += static_cast<double>(got.pts_s.size()) * kAacFrameS;
  }
  // The audio was not lost for this viewer: from its first packet to the end (the clip's last
  // 10 s, of which at least the segments after the switch), in order, without a hole.
  CHECK(audio_seconds >= 4);
  write_file(dir.path() / "live-audio.mp4", with_audio);
  check_contiguous(probe_audio((dir.path() / "live-audio.mp4").string(), dir.path(), "live-audio").pts_s);
}

TEST_CASE("HLS of a G.711 camera and of a camera without audio is its video alone", "[hls][http][audio][ffmpeg]") {
  test::TempDir dir;
  const auto g711 = dir.path() / "g711.mkv";
  make_av_clip(g711, 3, "pcm_mulaw", dir.path());
  const auto plain = test::make_h264_clip(dir.path(), 3);
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  test::VigildProcess d(data, test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  record(d, "door", g711, dir.path());
  record(d, "plain", plain, dir.path());
  // Both recordings closed: 75 frames of video each, and G.711's 20 ms packets or so.
  const auto g711_audio = probe_audio(g711.string(), dir.path(), "g711-sent");
  REQUIRE(g711_audio.codec == "pcm_mulaw");
  test::wait_for_closed_frames(data, 150 + static_cast<std::int64_t>(g711_audio.pts_s.size()));

  // The G.711 audio is recorded, and the catalog keeps its rate and channels.
  const auto audio = streams_of(d, "door", "audio");
  REQUIRE(audio.size() == 1);
  CHECK(audio[0].at("codec").as_string() == "pcm_mulaw");
  CHECK(audio[0].at("sample_rate_hz").as_int64() == 8000);
  CHECK(audio[0].at("channels").as_int64() == 1);
  CHECK(streams_of(d, "plain", "audio").empty());

  check_video_only_hls(d, "door", 75, dir.path());
  check_video_only_hls(d, "plain", 75, dir.path());
}

TEST_CASE("HLS of RTSP cameras: the AAC camera's audio in every segment, the G.711 camera's video alone",
          "[hls][http][audio][rtsp][ffmpeg]") {
  test::TempDir dir;
  [[maybe_unused]] auto camera = test::start_rtsp_camera(dir.path(), 0);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  for (const auto& [path, name] : {std::pair{"/av-aac", "aac-cam"}, std::pair{"/av-pcmu", "pcmu-cam"}}) {
    const std::string url = "rtsp://127.0.0.1:" + std::to_string(camera.port) + path;
    auto rec =
        test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", name, url, "--duration", "5"},
                          dir.path() / (std::string(name) + ".log"));
    INFO(rec.output);
    REQUIRE(rec.status == 0);
    CHECK_THAT(rec.output, ContainsSubstring("and its audio: "));
  }
  // The recordings ended: each playlist is whole (VOD) once the last segment is known.
  for (const auto* name : {"aac-cam", "pcmu-cam"}) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    test::HttpResult pl;
    while (std::chrono::steady_clock::now() < deadline) {
      pl = test::http_request(d.http(), "GET", std::string("/api/v1/cameras/") + name + "/hls.m3u8?from=-1h");
      if (pl.status == 200 && pl.body.find("#EXT-X-ENDLIST") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    INFO(pl.body);
    REQUIRE(pl.body.find("#EXT-X-ENDLIST") != std::string::npos);
  }

  const auto audio = streams_of(d, "aac-cam", "audio");
  REQUIRE(audio.size() == 1);
  CHECK(audio[0].at("sample_rate_hz").as_int64() == 48000);  // the SDP's MPEG4-GENERIC/48000
  CHECK(audio[0].at("channels").as_int64() == 1);
  const auto h = fetch_hls(d, "aac-cam", 1);
  CHECK(h.init.find("mp4a") != std::string::npos);
  std::string whole = h.init;
  double seconds = 0;
  for (std::size_t i = 0; i < h.segments.size(); ++i) {
    INFO(h.segment_uris[i]);
    CHECK(h.segment_uris[i].find("&audio=1") != std::string::npos);
    const auto file = dir.path() / ("rtsp-seg" + std::to_string(i) + ".mp4");
    write_file(file, h.init + h.segments[i]);
    const auto got = probe_audio(file.string(), dir.path(), "rtsp-seg" + std::to_string(i));
    CHECK(got.codec == "aac");
    CHECK(got.sample_rate == 48000);
    CHECK(got.channels == 1);
    CHECK(!got.pts_s.empty());
    seconds += static_cast<double>(uri_param(h.segment_uris[i], "t1") - uri_param(h.segment_uris[i], "t0")) / 1e6;
    whole += h.segments[i];
  }
  write_file(dir.path() / "rtsp-hls.mp4", whole);
  const auto got = probe_audio((dir.path() / "rtsp-hls.mp4").string(), dir.path(), "rtsp-hls");
  // The camera's audio over the video's time (its first packet may come a little after the first
  // picture: each RTP clock is pinned at its own first arrival), in order, without a hole.
  INFO(seconds << " s of HLS, " << got.pts_s.size() << " audio packets");
  CHECK(static_cast<double>(got.pts_s.size()) >= (seconds - 0.5) / kAacFrameS);
  CHECK(static_cast<double>(got.pts_s.size()) <= seconds / kAacFrameS + 3);
  for (std::size_t i = 1; i < got.pts_s.size(); ++i) {
    INFO("audio packet " << i);
    CHECK(got.pts_s[i] > got.pts_s[i - 1]);
    CHECK(got.pts_s[i] - got.pts_s[i - 1] < 0.030);
  }

  const auto pcmu = streams_of(d, "pcmu-cam", "audio");
  REQUIRE(pcmu.size() == 1);
  CHECK(pcmu[0].at("codec").as_string() == "pcm_mulaw");
  CHECK(pcmu[0].at("sample_rate_hz").as_int64() == 8000);
  const auto v = fetch_hls(d, "pcmu-cam", 1);
  CHECK(v.init_uri.find("audio=") == std::string::npos);
  CHECK(v.init.find("mp4a") == std::string::npos);
  std::string video_only = v.init;
  for (const auto& seg : v.segments) video_only += seg;
  write_file(dir.path() / "pcmu-hls.mp4", video_only);
  CHECK(probe_audio((dir.path() / "pcmu-hls.mp4").string(), dir.path(), "pcmu-hls").codec.empty());
  CHECK(test::probe_packets(dir.path() / "pcmu-hls.mp4", dir.path()).size() >= 100);  // ~5 s at 25 fps
}
