// The RTSP session's audio (client/rtsp/rtsp_session.hpp, with_audio): against a scripted camera
// on loopback, its m=audio is set up on the same session (Session header, interleaved 2-3 asked,
// another pair answered and used), its RTP frames come out of take_audio() in order beside the
// video's access units; audio it does not read is named and not set up; without with_audio the
// session is as before.
#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <vector>

#include "client/rtsp/rtsp_session.hpp"
#include "tests/rtsp/rtsp_fixtures.hpp"
#include "tests/rtsp/scripted_camera.hpp"

using namespace vigil::client::rtsp;
using namespace vigil;
using Catch::Matchers::ContainsSubstring;

namespace {

using test::rtsp_fixtures::Bytes;
using test::rtsp_fixtures::packets;
using test::rtsp_fixtures::read_file;
using namespace test::scripted_camera;

const std::atomic<bool> kNever{false};

// G.711 packet N: payload type 0, 160 samples of value N, timestamps 160 apart.
Bytes pcmu_packet(std::uint16_t n) {
  const std::uint32_t ts = 5000 + 160u * n;
  Bytes p{0x80,
          0x00,
          static_cast<std::uint8_t>(n >> 8),
          static_cast<std::uint8_t>(n),
          static_cast<std::uint8_t>(ts >> 24),
          static_cast<std::uint8_t>(ts >> 16),
          static_cast<std::uint8_t>(ts >> 8),
          static_cast<std::uint8_t>(ts),
          0,
          0,
          0x12,
          0x34};
  p.resize(12 + 160, static_cast<std::uint8_t>(n));
  return p;
}

// The scripted camera's answers, with the audio's SETUP (its control "stream=1") answered on
// channels 6-7.
ScriptedCamera::Script with_audio_channels(const Camera& c, const std::function<std::string()>& base) {
  auto plain = script(c, base);
  return [plain](const std::string& method, const RtspMessage& r) {
    if (method == "SETUP" && r.uri.ends_with("stream=1")) {
      return reply(r, 200, "Transport: RTP/AVP/TCP;unicast;interleaved=6-7\r\nSession: abc;timeout=60\r\n");
    }
    return plain(method, r);
  };
}

}  // namespace

TEST_CASE("the session sets up a camera's G.711 audio and hands its frames out beside the video",
          "[rtsp][session][audio]") {
  Camera c;
  c.sdp += "m=audio 0 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\na=control:stream=1\r\n";
  std::unique_ptr<ScriptedCamera> cam;
  cam = std::make_unique<ScriptedCamera>(with_audio_channels(c, [&] { return cam->url(); }));
  RtspSession s(cam->url(), kNever, kNever, std::chrono::seconds(10), true);
  REQUIRE(s.audio());
  CHECK(s.audio()->codec == AudioCodec::pcm_mulaw);
  CHECK(s.skipped_audio().empty());

  const auto rtp = packets(read_file("gstreamer.rtp"));
  RtpDepacketizer direct(VideoCodec::h264, 96);
  std::vector<AccessUnit> expected;
  std::string media;
  std::uint16_t sent_audio = 0;
  for (std::size_t i = 0; i < rtp.size(); ++i) {
    direct.push(rtp[i], expected);
    media += interleaved(4, rtp[i]);
    if (i % 3 == 0) media += interleaved(6, pcmu_packet(sent_audio++));
    if (i % 5 == 0) media += interleaved(7, Bytes(28, 0x80));  // the audio's RTCP
  }
  REQUIRE(sent_audio > 10);
  cam->send(media);
  std::vector<AccessUnit> got;
  while (got.size() < expected.size()) REQUIRE(s.read(got));
  CHECK(got.size() == expected.size());
  // Every audio packet sent before the last video packet has been read with it.
  std::vector<AudioFrame> audio;
  s.take_audio(audio);
  REQUIRE(audio.size() >= static_cast<std::size_t>(sent_audio - 1));
  for (std::size_t i = 0; i < audio.size(); ++i) {
    INFO(i);
    CHECK(audio[i].data == Bytes(160, static_cast<std::uint8_t>(i)));
    CHECK(audio[i].timestamp - audio[0].timestamp == static_cast<std::int64_t>(160 * i));
    CHECK(audio[i].frames_lost_before == 0);
  }
  std::vector<AudioFrame> none;
  s.take_audio(none);
  CHECK(none.empty());  // taken once

  const auto requests = cam->requests();
  REQUIRE(requests.size() == 4);
  CHECK(requests[1].uri == cam->url() + "/stream=0");
  CHECK(requests[2].method == "SETUP");
  CHECK(requests[2].uri == cam->url() + "/stream=1");
  CHECK_THAT(std::string(requests[2].header("transport").value_or("")), ContainsSubstring("interleaved=2-3"));
  CHECK(requests[2].header("session") == "abc");
  CHECK(requests[3].method == "PLAY");
}

TEST_CASE("audio the session does not read is named, not set up; without with_audio none is",
          "[rtsp][session][audio]") {
  Camera c;
  c.sdp += "m=audio 0 RTP/AVP 100\r\na=rtpmap:100 G726-32/8000\r\na=control:stream=1\r\n";
  {
    std::unique_ptr<ScriptedCamera> cam;
    cam = std::make_unique<ScriptedCamera>(script(c, [&] { return cam->url(); }));
    RtspSession s(cam->url(), kNever, kNever, std::chrono::seconds(10), true);
    CHECK_FALSE(s.audio());
    CHECK(s.skipped_audio() == "G726-32/8000");
    CHECK(cam->requests().size() == 3);  // DESCRIBE, the video's SETUP, PLAY
  }
  c.sdp =
      std::string(reinterpret_cast<const char*>(read_file("gstreamer.sdp").data()), read_file("gstreamer.sdp").size()) +
      "m=audio 0 RTP/AVP 0\r\na=control:stream=1\r\n";
  std::unique_ptr<ScriptedCamera> cam;
  cam = std::make_unique<ScriptedCamera>(script(c, [&] { return cam->url(); }));
  RtspSession s(cam->url(), kNever, kNever);
  CHECK_FALSE(s.audio());
  CHECK(s.skipped_audio().empty());
  CHECK(cam->requests().size() == 3);
}
