// The wire protocol against a real vigild on loopback: hello, ping, requests this build does
// not serve yet, and hostile peers (garbage, oversize frames, no hello) that must get an
// Error frame and a closed connection while the server keeps serving others.
#include <sys/wait.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "client/wire/wire_client.hpp"
#include "proto/frame_codec.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

namespace asio = boost::asio;
using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

// One vigild for all wire tests in this process.
struct SharedServer {
  test::TempDir dir{"vigil-wire"};
  test::VigildProcess vigild{dir.path() / "data"};
  SharedServer() { REQUIRE(vigild.wait_ready()); }
};

SharedServer& shared_server() {
  static SharedServer s;
  return s;
}

// Sends raw bytes, then reads until the server closes; returns the frames it sent.
std::vector<proto::Envelope> send_raw_until_closed(const std::string& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  const auto& hp = shared_server().vigild.wire();
  auto colon = hp.rfind(':');
  sock.connect(
      {asio::ip::make_address(hp.substr(0, colon)), static_cast<unsigned short>(std::stoi(hp.substr(colon + 1)))});
  asio::write(sock, asio::buffer(bytes));
  sock.shutdown(asio::ip::tcp::socket::shutdown_send);  // end of our stream; we still read
  std::string got;
  boost::system::error_code ec;
  asio::read(sock, asio::dynamic_buffer(got), ec);  // returns at EOF: the server closed
  REQUIRE(ec == asio::error::eof);
  proto::FrameDecoder d;
  d.feed({reinterpret_cast<const std::byte*>(got.data()), got.size()});
  std::vector<proto::Envelope> out;
  for (;;) {
    auto r = d.next();
    REQUIRE(r.has_value());
    if (!*r) break;
    out.push_back((*r)->msg);
  }
  return out;
}

proto::Envelope hello_msg(std::uint32_t version = proto::kProtocolVersion) {
  proto::Envelope e;
  e.mutable_hello()->set_client_name("test");
  e.mutable_hello()->set_protocol_version(version);
  e.mutable_hello()->set_auth_token(vigil::test::token());
  return e;
}

}  // namespace

TEST_CASE("hello is answered with the server's version and limits; ping with pong", "[wire]") {
  client::WireClient c(shared_server().vigild.wire(), std::chrono::seconds(10));
  auto reply = c.hello("test", vigil::test::token());
  CHECK(reply.server_version() == VIGIL_VERSION);
  CHECK(reply.protocol_version() == proto::kProtocolVersion);
  CHECK(reply.max_frame_bytes() == 16u << 20);
  CHECK(reply.session_id() > 0);

  proto::Envelope ping;
  ping.mutable_ping()->set_nonce(0xC0FFEE);
  c.send(ping);
  auto pong = c.receive();
  REQUIRE(pong.msg.has_pong());
  CHECK(pong.msg.pong().nonce() == 0xC0FFEE);
}

TEST_CASE("a request this server does not serve yet is refused and the session stays open", "[wire]") {
  client::WireClient c(shared_server().vigild.wire(), std::chrono::seconds(10));
  c.hello("test", vigil::test::token());
  proto::Envelope open;
  open.mutable_open_record()->set_stream_name("lobby");
  c.send(open);
  try {
    c.receive();
    FAIL("expected an Error frame");
  } catch (const client::ServerError& e) {
    CHECK(e.code == proto::ERROR_CODE_UNSUPPORTED);
  }
  proto::Envelope ping;
  ping.mutable_ping()->set_nonce(7);
  c.send(ping);
  CHECK(c.receive().msg.pong().nonce() == 7);
}

TEST_CASE("hostile wire peers get an Error frame and a closed connection", "[wire]") {
  SECTION("garbage bytes") {
    auto frames = send_raw_until_closed(std::string("\x05\xff\xff\xff\xff\xff GET / HTTP/1.1\r\n\r\n", 25));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].error().code() == proto::ERROR_CODE_MALFORMED_FRAME);
  }
  SECTION("an HTTP request on the wire port") {
    // 'G' reads as a 71-byte header length; the request is shorter, so at EOF it is a cut frame.
    auto frames = send_raw_until_closed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].error().code() == proto::ERROR_CODE_TRUNCATED_FRAME);
  }
  SECTION("a header length far above the limit") {
    auto frames = send_raw_until_closed(std::string("\xff\xff\xff\xff\x0f", 5));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].error().code() == proto::ERROR_CODE_FRAME_TOO_LARGE);
  }
  SECTION("a media payload above the server's maximum") {
    proto::Envelope media;
    media.mutable_media_packet()->set_payload_bytes((16u << 20) + 1);
    std::vector<std::byte> payload((16u << 20) + 1);
    auto wire = proto::encode_frame(hello_msg()) + proto::encode_frame(media, payload).substr(0, 64);
    auto frames = send_raw_until_closed(wire);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].has_hello_reply());
    CHECK(frames[1].error().code() == proto::ERROR_CODE_FRAME_TOO_LARGE);
  }
  SECTION("a request before hello") {
    proto::Envelope ping;
    ping.mutable_ping()->set_nonce(1);
    auto frames = send_raw_until_closed(proto::encode_frame(ping));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].error().code() == proto::ERROR_CODE_UNAUTHENTICATED);
  }
  SECTION("a protocol version the server does not speak") {
    auto frames = send_raw_until_closed(proto::encode_frame(hello_msg(99)));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].error().code() == proto::ERROR_CODE_UNSUPPORTED);
    CHECK_THAT(frames[0].error().message(), ContainsSubstring("99"));
  }
  // Whatever the hostile peer did, the server still serves a well-behaved one.
  client::WireClient c(shared_server().vigild.wire(), std::chrono::seconds(10));
  CHECK(c.hello("after", vigil::test::token()).server_version() == VIGIL_VERSION);
}

TEST_CASE("vigil status talks to vigild over the wire protocol", "[wire][cli]") {
  auto run = [](std::vector<std::string> args, const std::filesystem::path& log) {
    auto r = test::run_to_exit(VIGIL_CLI_PATH, std::move(args), log);
    return std::pair{r.status, r.output};
  };
  test::TempDir dir;
  auto [ok, out] = run({"--server", shared_server().vigild.wire(), "status"}, dir.path() / "a.log");
  CHECK(ok == 0);
  CHECK_THAT(out, ContainsSubstring(VIGIL_VERSION));
  CHECK_THAT(out, ContainsSubstring("max payload bytes"));

  auto [down, out2] = run({"--server", "127.0.0.1:1", "status"}, dir.path() / "b.log");
  CHECK(down == 3);
  CHECK_THAT(out2, ContainsSubstring("cannot connect"));

  auto [usage, out3] = run({"frobnicate"}, dir.path() / "c.log");
  CHECK(usage == 2);
  CHECK_THAT(out3, ContainsSubstring("unknown command"));

  auto [help, out4] = run({"--help"}, dir.path() / "d.log");
  CHECK(help == 0);
  CHECK_THAT(out4, ContainsSubstring("status"));
}
