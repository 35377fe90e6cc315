// The RTSP session (client/rtsp/rtsp_session.hpp) against a scripted camera on loopback
// (tests/rtsp/scripted_camera.hpp): what real cameras do that GStreamer's test server does not — Basic and Digest
// challenges, another interleaved channel than asked for, a keep-alive they need (a session
// timeout), their own requests and stray bytes among the media, RTP over UDP only, no H.264 —
// and the media itself: the access units of 2 s of a real camera's RTP (tests/rtsp/data), framed
// and mixed so, are exactly those the depacketizer makes of the packets alone.
#include "client/rtsp/rtsp_session.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

}  // namespace

TEST_CASE("the session reads a camera's media among its requests, stray bytes and other channels", "[rtsp][session]") {
  Camera c;
  std::unique_ptr<ScriptedCamera> cam;
  cam = std::make_unique<ScriptedCamera>(script(c, [&] { return cam->url(); }));
  RtspSession s(cam->url(), kNever, kNever);
  CHECK(s.video().codec == VideoCodec::h264);
  CHECK(s.video().bandwidth_bps == 102000);  // its b=AS:102

  const auto rtp = packets(read_file("gstreamer.rtp"));
  RtpDepacketizer direct(VideoCodec::h264, 96);
  std::vector<AccessUnit> expected;
  std::string media;
  for (std::size_t i = 0; i < rtp.size(); ++i) {
    direct.push(rtp[i], expected);
    media += interleaved(4, rtp[i]);
    if (i % 5 == 0) media += interleaved(5, Bytes(28, 0x80));  // RTCP on the other channel
    if (i % 7 == 0) media += "\r\n";                           // bytes that start nothing
    if (i == 10) media += "GET_PARAMETER " + cam->url() + " RTSP/1.0\r\nCSeq: 1\r\n\r\n";
  }
  REQUIRE(expected.size() > 10);
  cam->send(media);

  std::vector<AccessUnit> got;
  while (got.size() < expected.size()) REQUIRE(s.read(got));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(i);
    CHECK(got[i].annexb == expected[i].annexb);
    CHECK(got[i].timestamp == expected[i].timestamp);
    CHECK(got[i].keyframe == expected[i].keyframe);
  }
  const auto requests = cam->requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].method == "DESCRIBE");
  CHECK(requests[1].method == "SETUP");
  CHECK(requests[1].uri == cam->url() + "/stream=0");
  CHECK_THAT(std::string(requests[1].header("transport").value_or("")), ContainsSubstring("RTP/AVP/TCP"));
  CHECK(requests[2].method == "PLAY");
  CHECK(requests[2].header("session") == "abc");
  CHECK_FALSE(requests[2].header("range"));  // live: no seek asked for (GStreamer's server aborts on one)

  // The camera goes away: the session ends, saying so.
  cam->close_connection();
  std::vector<AccessUnit> more;
  while (s.read(more)) {}
  CHECK(s.error() == "the camera closed the connection");
}

TEST_CASE("the session answers Basic and Digest challenges; a wrong password is refused", "[rtsp][session]") {
  for (const std::string auth : {"basic", "digest"}) {
    INFO(auth);
    Camera c;
    c.auth = auth;
    std::unique_ptr<ScriptedCamera> cam;
    cam = std::make_unique<ScriptedCamera>(script(c, [&] { return cam->url(); }));
    RtspSession s(cam->url("admin:pw1@"), kNever, kNever);
    const auto requests = cam->requests();
    // DESCRIBE twice (the 401, then with credentials), SETUP and PLAY with them at once.
    REQUIRE(requests.size() == 4);
    CHECK_FALSE(requests[0].header("authorization"));
    for (std::size_t i = 1; i < 4; ++i) CHECK(requests[i].header("authorization"));

    std::unique_ptr<ScriptedCamera> cam2;
    cam2 = std::make_unique<ScriptedCamera>(script(c, [&] { return cam2->url(); }));
    try {
      RtspSession refused(cam2->url("admin:wrong@"), kNever, kNever);
      FAIL("a wrong password opened the session");
    } catch (const std::runtime_error& e) {
      CHECK_THAT(e.what(), ContainsSubstring("the camera refused the credentials (401)"));
      CHECK_THAT(e.what(), ContainsSubstring("admin:***@"));
      CHECK_THAT(e.what(), !ContainsSubstring("wrong"));
    }
  }
}

TEST_CASE("the session keeps a camera's session alive within half its timeout", "[rtsp][session]") {
  Camera c;
  c.session = "abc;timeout=2";  // a keep-alive at least every second
  std::unique_ptr<ScriptedCamera> cam;
  cam = std::make_unique<ScriptedCamera>(script(c, [&] { return cam->url(); }));
  RtspSession s(cam->url(), kNever, kNever);
  const auto rtp = packets(read_file("gstreamer.rtp"));
  std::atomic<bool> stop{false};
  // The camera streams its clip in a loop, a packet every 5 ms, until the test has its answer.
  std::thread sender([&] {
    for (std::uint32_t loop = 0; !stop.load(); ++loop) {
      for (const auto& p : rtp) {
        if (stop.load()) break;
        cam->send(interleaved(4, shifted(p, static_cast<std::uint16_t>(loop * rtp.size()), loop * 180000)));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  });
  const auto has_keep_alive = [&] {
    for (const auto& r : cam->requests()) {
      if (r.method == "OPTIONS" && r.header("session") == "abc") return true;
    }
    return false;
  };
  std::vector<AccessUnit> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!has_keep_alive() && std::chrono::steady_clock::now() < deadline && s.read(got)) {}
  stop.store(true);
  sender.join();
  CHECK(has_keep_alive());
  CHECK_FALSE(got.empty());
}

TEST_CASE("a camera the session cannot read is told apart: no H.264/H.265, RTP over UDP only", "[rtsp][session]") {
  const auto unsupported = [](Camera c, const std::string& why) {
    INFO(why);
    std::unique_ptr<ScriptedCamera> cam;
    cam = std::make_unique<ScriptedCamera>(script(c, [&] { return cam->url(); }));
    try {
      RtspSession s(cam->url(), kNever, kNever);
      FAIL("opened");
    } catch (const UnsupportedStream& e) {
      CHECK_THAT(e.what(), ContainsSubstring(why));
    }
  };
  Camera audio_only;
  audio_only.sdp = "v=0\r\nm=audio 0 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n";
  unsupported(audio_only, "H.26");
  Camera udp;
  udp.transport = "RTP/AVP;unicast;client_port=5000-5001";
  unsupported(udp, "RTP over UDP only");
  Camera refuses_tcp;
  refuses_tcp.setup_status = 461;
  unsupported(refuses_tcp, "461");

  // A camera that refuses the stream otherwise is an error, not "read it another way".
  Camera broken;
  broken.setup_status = 503;
  std::unique_ptr<ScriptedCamera> cam;
  cam = std::make_unique<ScriptedCamera>(script(broken, [&] { return cam->url(); }));
  try {
    RtspSession s(cam->url(), kNever, kNever);
    FAIL("opened");
  } catch (const UnsupportedStream&) {
    FAIL("503 taken for an unsupported stream");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("SETUP answered 503"));
  }
}
