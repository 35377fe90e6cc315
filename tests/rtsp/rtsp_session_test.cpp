// The RTSP session (client/rtsp/rtsp_session.hpp) against a scripted camera on loopback, a thread
// of this test: what real cameras do that GStreamer's test server does not — Basic and Digest
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

using namespace vigil::client::rtsp;
using namespace vigil;
using Catch::Matchers::ContainsSubstring;

namespace {

using test::rtsp_fixtures::Bytes;
using test::rtsp_fixtures::packets;
using test::rtsp_fixtures::read_file;

std::string interleaved(int channel, const Bytes& packet) {
  std::string frame{'$', static_cast<char>(channel), static_cast<char>(packet.size() >> 8),
                    static_cast<char>(packet.size() & 0xff)};
  frame.append(packet.begin(), packet.end());
  return frame;
}

// A camera on 127.0.0.1 that answers one connection with SCRIPT: for each request (method, the
// whole message) the bytes to send back. What it received is kept for the test to look at.
class ScriptedCamera {
 public:
  using Script = std::function<std::string(const std::string& method, const RtspMessage& request)>;

  explicit ScriptedCamera(Script script) : script_(std::move(script)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener_, 1) == 0);
    socklen_t length = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &length);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedCamera() {
    done_.store(true);
    ::shutdown(listener_, SHUT_RDWR);
    if (const int fd = connection_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  std::string url(const std::string& credentials = "") const {
    return "rtsp://" + credentials + "127.0.0.1:" + std::to_string(port_) + "/cam";
  }
  std::vector<RtspMessage> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // Sends BYTES on the connection (from the test's thread, beside the script's answers).
  void send(const std::string& bytes) {
    std::lock_guard lock(send_mu_);
    [[maybe_unused]] auto n = ::send(connection_.load(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  void close_connection() { ::shutdown(connection_.load(), SHUT_RDWR); }

 private:
  void serve() {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    connection_.store(fd);
    std::string in;
    char chunk[4096];
    while (!done_.load()) {
      const auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      in.append(chunk, static_cast<std::size_t>(n));
      std::string why;
      while (auto m = parse_message(in, why)) {
        in.erase(0, m->consumed_bytes);
        {
          std::lock_guard lock(mu_);
          requests_.push_back(*m);
        }
        send(script_(m->method, *m));
      }
    }
    ::close(fd);
  }
  Script script_;
  int listener_ = -1, port_ = 0;
  std::atomic<int> connection_{-1};
  std::atomic<bool> done_{false};
  mutable std::mutex mu_, send_mu_;
  std::vector<RtspMessage> requests_;
  std::thread thread_;
};

}  // namespace

namespace {

// How the scripted camera answers: the SDP, the Transport and Session of its SETUP, which
// credentials it asks for.
struct Camera {
  std::string sdp =
      std::string(reinterpret_cast<const char*>(read_file("gstreamer.sdp").data()), read_file("gstreamer.sdp").size());
  std::string transport = "RTP/AVP/TCP;unicast;interleaved=4-5";  // not the 0-1 asked for
  std::string session = "abc;timeout=60";
  std::string auth;  // "", "basic" or "digest"
  int setup_status = 200;
};

constexpr const char* kUser = "admin";
constexpr const char* kPassword = "pw1";

std::string reply(const RtspMessage& request, int status, const std::string& headers, const std::string& body = "") {
  std::string r = "RTSP/1.0 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
                  "\r\nCSeq: " + std::string(request.header("cseq").value_or("0")) + "\r\n" + headers;
  if (!body.empty()) r += "Content-Type: application/sdp\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

ScriptedCamera::Script script(const Camera& c, const std::function<std::string()>& base) {
  return [c, base](const std::string& method, const RtspMessage& r) {
    if (!c.auth.empty()) {
      const auto given = r.header("authorization");
      bool ok = false;
      if (given && c.auth == "basic") ok = *given == "Basic YWRtaW46cHcx";  // base64("admin:pw1")
      if (given && c.auth == "digest") {
        const std::string expect = digest_response(kUser, "cam", kPassword, method, r.uri, "n0nce", "", "", "");
        ok = std::string(*given).find("response=\"" + expect + "\"") != std::string::npos &&
             std::string(*given).find("uri=\"" + r.uri + "\"") != std::string::npos;
      }
      if (!ok) {
        return reply(r, 401,
                     c.auth == "basic" ? "WWW-Authenticate: Basic realm=\"cam\"\r\n"
                                       : "WWW-Authenticate: Digest realm=\"cam\", nonce=\"n0nce\"\r\n");
      }
    }
    if (method == "DESCRIBE") return reply(r, 200, "Content-Base: " + base() + "/\r\n", c.sdp);
    if (method == "SETUP") {
      if (c.setup_status != 200) return reply(r, c.setup_status, "");
      return reply(r, 200, "Transport: " + c.transport + "\r\nSession: " + c.session + "\r\n");
    }
    return reply(r, 200, "Session: abc\r\n");  // PLAY, OPTIONS, TEARDOWN
  };
}

// The fixture's packet P shifted by DSEQ sequence numbers and DTS timestamp ticks (a loop of it).
Bytes shifted(Bytes p, std::uint16_t dseq, std::uint32_t dts) {
  const std::uint16_t seq = static_cast<std::uint16_t>(((p[2] << 8) | p[3]) + dseq);
  const std::uint32_t ts =
      ((std::uint32_t{p[4]} << 24) | (std::uint32_t{p[5]} << 16) | (std::uint32_t{p[6]} << 8) | p[7]) + dts;
  p[2] = static_cast<std::uint8_t>(seq >> 8);
  p[3] = static_cast<std::uint8_t>(seq);
  for (int i = 0; i < 4; ++i) p[4 + i] = static_cast<std::uint8_t>(ts >> (24 - 8 * i));
  return p;
}

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
