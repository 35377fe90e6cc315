#pragma once
// A camera on loopback for the RTSP tests, a thread of the test: it answers one connection with a
// script (DESCRIBE with a recorded SDP, SETUP with a chosen Transport and Session, Basic or
// Digest challenges), and the test sends the media itself, framed as RTSP interleaved data —
// what real cameras do that GStreamer's test server does not, and losses on demand.
// Errors: Catch2 assertions.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/rtsp/rtsp_message.hpp"
#include "client/rtsp/rtsp_session.hpp"
#include "tests/rtsp/rtsp_fixtures.hpp"

namespace vigil::test::scripted_camera {

using namespace client::rtsp;  // the session's messages and digest, as a camera speaks them
using rtsp_fixtures::Bytes;
using rtsp_fixtures::read_file;

inline std::string interleaved(int channel, const Bytes& packet) {
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

inline constexpr const char* kUser = "admin";
inline constexpr const char* kPassword = "pw1";

inline std::string reply(const RtspMessage& request, int status, const std::string& headers,
                         const std::string& body = "") {
  std::string r = "RTSP/1.0 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
                  "\r\nCSeq: " + std::string(request.header("cseq").value_or("0")) + "\r\n" + headers;
  if (!body.empty()) r += "Content-Type: application/sdp\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

inline ScriptedCamera::Script script(const Camera& c, const std::function<std::string()>& base) {
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
inline Bytes shifted(Bytes p, std::uint16_t dseq, std::uint32_t dts) {
  const std::uint16_t seq = static_cast<std::uint16_t>(((p[2] << 8) | p[3]) + dseq);
  const std::uint32_t ts =
      ((std::uint32_t{p[4]} << 24) | (std::uint32_t{p[5]} << 16) | (std::uint32_t{p[6]} << 8) | p[7]) + dts;
  p[2] = static_cast<std::uint8_t>(seq >> 8);
  p[3] = static_cast<std::uint8_t>(seq);
  for (int i = 0; i < 4; ++i) p[4 + i] = static_cast<std::uint8_t>(ts >> (24 - 8 * i));
  return p;
}

}  // namespace vigil::test::scripted_camera
