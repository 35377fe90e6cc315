// Wire sessions cannot be held open by a peer that does nothing useful: the hello deadline is
// absolute (counted from the accept, not from the last byte), and a session that neither records
// nor plays back is closed after the idle timeout. A real vigild with short timeouts; each case
// fails against a server that re-arms its deadline on every read or never closes an idle session.
#include <poll.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "proto/frame_codec.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

namespace asio = boost::asio;
using namespace vigil;
using Clock = std::chrono::steady_clock;

namespace {

struct ShortDeadlines {
  test::TempDir dir{"vigil-wire-deadline"};
  test::VigildProcess vigild{dir.path() / "data", {"--hello-timeout", "2", "--idle-timeout", "2"}};
  ShortDeadlines() { REQUIRE(vigild.wait_ready()); }
};

ShortDeadlines& server() {
  static ShortDeadlines s;
  return s;
}

asio::ip::tcp::endpoint wire_endpoint() {
  const auto& hp = server().vigild.wire();
  auto colon = hp.rfind(':');
  return {asio::ip::make_address(hp.substr(0, colon)), static_cast<unsigned short>(std::stoi(hp.substr(colon + 1)))};
}

// True once the server has closed SOCK (EOF or reset), waiting at most WAIT for it; data the
// server sends before closing (a hello reply) is read and dropped.
bool closed_by_server(asio::ip::tcp::socket& sock, std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = sock.native_handle(), .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    boost::system::error_code ec;
    const auto n = sock.read_some(asio::buffer(buf), ec);
    if (ec) return true;  // eof or reset: closed
    (void)n;
  }
}

}  // namespace

TEST_CASE("a peer trickling bytes without finishing a hello is closed at the hello deadline", "[wire][deadline]") {
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect(wire_endpoint());
  // The start of a frame that claims a 1,000-byte header: it is never complete.
  const std::string trickle = std::string("\xe8\x07", 2) + std::string(998, 'x');
  const auto start = Clock::now();
  bool closed = false;
  // One byte every 200 ms re-arms a per-read deadline of 2 s for ever; the absolute one ends it.
  // 20 s of trickling is ten times the deadline: a server that lets it last that long fails.
  for (std::size_t i = 0; i < trickle.size() && Clock::now() - start < std::chrono::seconds(20); ++i) {
    boost::system::error_code ec;
    asio::write(sock, asio::buffer(&trickle[i], 1), ec);
    if (ec || closed_by_server(sock, std::chrono::milliseconds(200))) {
      closed = true;
      break;
    }
  }
  CHECK(closed);
}

TEST_CASE("a session that says hello and then nothing is closed at the idle deadline", "[wire][deadline]") {
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect(wire_endpoint());
  proto::Envelope hello;
  hello.mutable_hello()->set_client_name("idle");
  hello.mutable_hello()->set_protocol_version(proto::kProtocolVersion);
  hello.mutable_hello()->set_auth_token(test::token());
  asio::write(sock, asio::buffer(proto::encode_frame(hello)));
  // The idle timeout is 2 s; 30 s without a close means the session is never closed.
  CHECK(closed_by_server(sock, std::chrono::seconds(30)));

  // The server still serves a peer that talks.
  client::WireClient c(server().vigild.wire(), std::chrono::seconds(10));
  CHECK(c.hello("after", test::token()).server_version() == VIGIL_VERSION);
}
