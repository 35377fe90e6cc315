// Hostile HTTP clients on a real vigild: oversized headers (431), malformed
// requests (400), and slow clients (slowloris) — cut off when their request has not arrived
// whole within --http-timeout, while every other client is served meanwhile.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
namespace asio = boost::asio;

namespace {

asio::ip::tcp::socket connect(asio::io_context& io, const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address(host_port.substr(0, colon)),
             static_cast<unsigned short>(std::stoi(host_port.substr(colon + 1)))});
  return s;
}

}  // namespace

TEST_CASE("HTTP: oversized, malformed and slow requests get a clear answer and hurt no one else", "[http][hostile]") {
  test::TempDir dir;
  test::VigildProcess d(dir.path() / "data", {"--no-camera-pull", "--http-timeout", "2"});
  REQUIRE(d.wait_ready());

  {  // headers over 8 KiB: 431; a body over 1 MiB: 413; garbage: 400
    auto big =
        test::http_request(d.http(), "GET", "/api/v1/cameras", "X-Filler: " + std::string(16 * 1024, 'a') + "\r\n");
    CHECK(big.status == 431);
    // (A body over 1 MiB — 413 — is tested with the events API, tests/server/http_events_test.cpp.)
    asio::io_context io;
    auto s = connect(io, d.http());
    asio::write(s, asio::buffer(std::string("\x16\x03\x01 not http at all\r\n\r\n")));
    std::string resp;
    boost::system::error_code ec;
    asio::read(s, asio::dynamic_buffer(resp), ec);
    CHECK(resp.rfind("HTTP/1.1 400", 0) == 0);
  }
  {  // slowloris: 20 connections that trickle a request byte by byte are closed by the server
    asio::io_context io;
    std::vector<asio::ip::tcp::socket> slow;
    for (int i = 0; i < 20; ++i) {
      slow.push_back(connect(io, d.http()));
      asio::write(slow.back(), asio::buffer(std::string("GET /api/v1/cameras HTTP/1.1\r\nHost: x\r\n")));
    }
    // While they hang, others are served.
    CHECK(test::http_request(d.http(), "GET", "/healthz").status == 200);
    CHECK(test::http_request(d.http(), "GET", "/api/v1/cameras").status == 200);
    // Keep trickling a header byte every 200 ms: within the 2 s limit plus a margin the server
    // must have closed every one (a write or read fails), long before the trickle would end.
    int closed = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::vector<bool> done(slow.size(), false);
    while (closed < static_cast<int>(slow.size()) && std::chrono::steady_clock::now() < give_up) {
      for (std::size_t i = 0; i < slow.size(); ++i) {
        if (done[i]) continue;
        boost::system::error_code ec;
        asio::write(slow[i], asio::buffer(std::string("X")), ec);
        if (!ec && slow[i].available(ec) > 0) {
          char buf[512];
          slow[i].read_some(asio::buffer(buf), ec);  // the server's last word (if any), then EOF
        }
        if (ec) {
          done[i] = true;
          ++closed;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK(closed == static_cast<int>(slow.size()));
    CHECK(test::http_request(d.http(), "GET", "/healthz").status == 200);
  }
}
