// A flood of connections cannot take vigild's memory or its descriptors: 2,000 connections that
// never say hello cost little each and are all closed at the hello deadline, after which a
// recorder gets in as usual; one address is held to --max-connections-per-address on the wire
// port (an Error frame, then closed) and on the HTTP port (503); and before hello a frame may
// not announce more than 64 KiB of payload (refused at its header, before any payload arrives).
// A real vigild; each case fails against a server without the limit it checks.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <vector>

#include "client/wire/wire_client.hpp"
#include "proto/frame_codec.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using Catch::Matchers::ContainsSubstring;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr int kHelloTimeoutS = 3;
constexpr std::size_t kPerAddress = 256;  // vigild's default --max-connections-per-address

struct Limited {
  test::TempDir dir{"vigil-conn-limits"};
  test::VigildProcess vigild{dir.path() / "data",
                             {"--hello-timeout", std::to_string(kHelloTimeoutS), "--http-timeout", "120"}};
  Limited() { REQUIRE(vigild.wait_ready()); }
};

Limited& server() {
  static Limited s;
  return s;
}

// The test opens thousands of sockets: its soft descriptor limit goes up to the hard one.
bool raise_own_fd_limit(rlim_t need) {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  return lim.rlim_cur >= need;
}

std::pair<std::string, int> split(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  return {host_port.substr(0, colon), std::stoi(host_port.substr(colon + 1))};
}

// A blocking TCP connection to HOST_PORT from SOURCE (any 127.x.y.z is this host), or -1.
int connect_from(const std::string& source, const std::string& host_port) {
  const auto [host, port] = split(host_port);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::size_t rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// Everything the server sent on FD until it closed it, waiting at most WAIT; nullopt if still open.
std::optional<std::string> read_until_closed(int fd, std::chrono::milliseconds wait) {
  std::string got;
  const auto until = Clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<std::size_t>(n));
  }
}

// The first frame in BYTES, which must be an Error.
proto::Error error_frame(const std::string& bytes) {
  proto::FrameDecoder d;
  d.feed(std::as_bytes(std::span(bytes.data(), bytes.size())));
  auto f = d.next();
  REQUIRE(f.has_value());
  REQUIRE(f->has_value());
  REQUIRE((*f)->msg.has_error());
  return (*f)->msg.error();
}

}  // namespace

TEST_CASE("2,000 connections that never say hello: bounded memory, all closed at the deadline, a recorder then gets in",
          "[wire][limits]") {
  constexpr int kConnections = 2000;
  // From eight addresses (250 each, under the per-address cap), so that every one is served.
  constexpr int kSources = 8;
  // A connection that has not said hello holds a 4 KiB read buffer and its session's state; 2,000
  // of them may cost at most this much more memory (a 128 KiB read buffer each would be 250 MiB).
  constexpr std::size_t kMaxGrowthBytes = 48u << 20;
  if (!raise_own_fd_limit(kConnections + 256)) SKIP("the hard descriptor limit is below 2,256");
  auto& s = server();
  const std::size_t rss_before = rss_bytes(s.vigild.pid());
  REQUIRE(rss_before > 0);

  struct Conn {
    int fd;
    Clock::time_point opened;
    std::optional<Clock::time_point> closed;
  };
  std::vector<Conn> conns;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = connect_from("127.0.0." + std::to_string(2 + i % kSources), s.vigild.wire());
    REQUIRE(fd >= 0);
    conns.push_back({fd, Clock::now(), std::nullopt});
  }
  // Each must be closed by the server (nothing is sent to any) within the hello deadline and a
  // margin for a loaded machine; meanwhile vigild's memory is sampled.
  const auto margin = 10s;
  const auto deadline = conns.back().opened + std::chrono::seconds(kHelloTimeoutS) + margin;
  std::size_t rss_peak = rss_before, open_left = conns.size(), refused = 0;
  std::vector<pollfd> fds(conns.size());
  while (open_left > 0 && Clock::now() < deadline) {
    for (std::size_t i = 0; i < conns.size(); ++i)
      fds[i] = {.fd = conns[i].closed ? -1 : conns[i].fd, .events = POLLIN, .revents = 0};
    ::poll(fds.data(), fds.size(), 50);
    rss_peak = std::max(rss_peak, rss_bytes(s.vigild.pid()));
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (conns[i].closed || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[256];
      const ssize_t n = ::recv(conns[i].fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) ++refused;  // words from the server: a refusal (none of these is over a limit)
      if (n > 0) continue;
      conns[i].closed = Clock::now();
      --open_left;
    }
  }
  auto late = std::count_if(conns.begin(), conns.end(), [&](const Conn& c) {
    return !c.closed || *c.closed - c.opened > std::chrono::seconds(kHelloTimeoutS) + margin;
  });
  for (auto& c : conns) ::close(c.fd);
  INFO("vigild RSS before " << rss_before / 1024 << " KiB, peak " << rss_peak / 1024 << " KiB");
  CHECK(open_left == 0);
  CHECK(late == 0);
  CHECK(refused == 0);
  CHECK(rss_peak - rss_before <= kMaxGrowthBytes);
  // None closed early either: each lasted at least (almost) the hello timeout.
  const auto early = std::count_if(conns.begin(), conns.end(), [](const Conn& c) {
    return c.closed && *c.closed - c.opened < std::chrono::seconds(kHelloTimeoutS) - 500ms;
  });
  CHECK(early == 0);

  // A recorder that says hello is served as usual.
  client::WireClient c(s.vigild.wire(), 10s);
  CHECK(c.hello("after-the-flood", test::token()).server_version() == VIGIL_VERSION);
}

TEST_CASE("one address is held to --max-connections-per-address on the wire port", "[wire][limits]") {
  if (!raise_own_fd_limit(4 * kPerAddress)) SKIP("the hard descriptor limit is too low");
  auto& s = server();
  // KPERADDRESS sessions from 127.0.0.1 that said hello (an idle session lasts 60 s).
  std::vector<std::unique_ptr<client::WireClient>> held;
  for (std::size_t i = 0; i < kPerAddress; ++i) {
    held.push_back(std::make_unique<client::WireClient>(s.vigild.wire(), 10s));
    REQUIRE(held.back()->hello("held", test::token()).server_version() == VIGIL_VERSION);
  }
  // One more from the same address: an Error frame saying why, then closed.
  const int fd = connect_from("127.0.0.1", s.vigild.wire());
  REQUIRE(fd >= 0);
  const auto said = read_until_closed(fd, 10s);
  ::close(fd);
  REQUIRE(said);
  const auto e = error_frame(*said);
  CHECK(e.code() == proto::ERROR_CODE_UNAVAILABLE);
  CHECK_THAT(e.message(), ContainsSubstring("--max-connections-per-address 256"));
  // Another address is not held to this one's cap.
  const int other = connect_from("127.0.0.10", s.vigild.wire());
  REQUIRE(other >= 0);
  CHECK_FALSE(read_until_closed(other, 500ms));
  ::close(other);
  // One held session ends: its place is free again.
  held.pop_back();
  CHECK(test::eventually([&] {
    try {
      client::WireClient c(s.vigild.wire(), 10s);
      return c.hello("after", test::token()).server_version() == VIGIL_VERSION;
    } catch (const std::exception&) {
      return false;
    }
  }));
}

TEST_CASE("one address is held to --max-connections-per-address on the HTTP port: 503", "[http][limits]") {
  if (!raise_own_fd_limit(4 * kPerAddress)) SKIP("the hard descriptor limit is too low");
  auto& s = server();
  // KPERADDRESS connections that send nothing (the HTTP timeout is 120 s here).
  std::vector<int> idle;
  for (std::size_t i = 0; i < kPerAddress; ++i) {
    idle.push_back(connect_from("127.0.0.1", s.vigild.http()));
    REQUIRE(idle.back() >= 0);
  }
  // The server has taken them all once a request on another address is answered after them.
  REQUIRE(test::eventually([&] {
    const int probe = connect_from("127.0.0.11", s.vigild.http());
    const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    bool ok = ::send(probe, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size());
    const auto got = read_until_closed(probe, 10s);
    ::close(probe);
    return ok && got && got->find(" 200 ") != std::string::npos;
  }));
  auto refused = test::http_request(s.vigild.http(), "GET", "/healthz");
  CHECK(refused.status == 503);
  CHECK_THAT(refused.body, ContainsSubstring("--max-connections-per-address 256"));
  CHECK(refused.header("Retry-After") == "1");
  // One closes: the next request is served.
  ::close(idle.back());
  idle.pop_back();
  CHECK(test::eventually([&] { return test::http_request(s.vigild.http(), "GET", "/healthz").status == 200; }));
  for (int fd : idle) ::close(fd);
}

TEST_CASE("before hello a frame may announce at most 64 KiB of payload", "[wire][limits]") {
  auto& s = server();
  auto packet_header = [](std::size_t payload_bytes) {
    proto::Envelope env;
    env.mutable_media_packet()->set_stream_id(1);
    env.mutable_media_packet()->set_payload_bytes(payload_bytes);
    std::string out;
    proto::append_frame_header(out, env);
    return out;
  };
  // 64 KiB + 1 announced, none of it sent: refused at the header (the server does not wait for,
  // nor buffer, the payload; --max-frame-bytes is 16 MiB).
  {
    const int fd = connect_from("127.0.0.1", s.vigild.wire());
    REQUIRE(fd >= 0);
    const auto head = packet_header(proto::kMaxPreHelloPayloadBytes + 1);
    REQUIRE(::send(fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()));
    const auto said = read_until_closed(fd, 10s);
    ::close(fd);
    REQUIRE(said);
    CHECK(error_frame(*said).code() == proto::ERROR_CODE_FRAME_TOO_LARGE);
  }
  // 64 KiB exactly is within the pre-hello limit: taken whole, then refused for not being hello.
  {
    const int fd = connect_from("127.0.0.1", s.vigild.wire());
    REQUIRE(fd >= 0);
    const auto frame =
        packet_header(proto::kMaxPreHelloPayloadBytes) + std::string(proto::kMaxPreHelloPayloadBytes, 'v');
    REQUIRE(::send(fd, frame.data(), frame.size(), 0) == static_cast<ssize_t>(frame.size()));
    const auto said = read_until_closed(fd, 10s);
    ::close(fd);
    REQUIRE(said);
    CHECK(error_frame(*said).code() == proto::ERROR_CODE_UNAUTHENTICATED);
  }
}
