// The media pool: work runs on the pool's threads, not the awaiting one, and its result (or its
// error) comes back to the awaiting coroutine; FFmpeg's failures (std::runtime_error) are 422,
// device errors stay themselves; thumbnail builds are bounded.
#include <catch2/catch_test_macros.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "common/media_limits.hpp"
#include "server/media/media_pool.hpp"

using namespace vigil;
using namespace vigil::server;
namespace asio = boost::asio;

TEST_CASE("media pool: work runs on a pool thread and resumes on the caller's; libav failures are 422",
          "[media][pool]") {
  MediaPool pool(2, 4);
  asio::io_context io;
  std::thread::id caller, worker, resumed;
  std::string text;
  bool refused = false, device = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        caller = std::this_thread::get_id();
        const std::string word = "remuxed";
        text = co_await run_media(&pool, [&] {
          worker = std::this_thread::get_id();
          return word + " on the pool";
        });
        resumed = std::this_thread::get_id();
        try {
          co_await run_media(&pool, [&] { throw std::runtime_error("Invalid data found when processing input"); });
        } catch (const ApiError& e) {
          refused =
              e.code() == ApiErrc::unprocessable && std::string(e.what()).find("Invalid data") != std::string::npos;
        }
        try {
          co_await run_media(&pool, [&] { throw std::system_error(std::make_error_code(std::errc::io_error)); });
        } catch (const std::system_error&) {
          device = true;
        }
      },
      asio::detached);
  io.run();
  CHECK(text == "remuxed on the pool");
  CHECK(worker != caller);
  CHECK(resumed == caller);
  CHECK(refused);
  CHECK(device);
}

TEST_CASE("media pool: at most thumbnail_builds thumbnails at once", "[media][pool]") {
  MediaPool pool(1, 2);
  auto a = pool.reserve_thumbnail();
  auto b = pool.reserve_thumbnail();
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(pool.reserve_thumbnail());
  a.reset();
  CHECK(pool.reserve_thumbnail());
}

TEST_CASE("media limits: the rules, each named", "[media][limits]") {
  const std::string avcc = {1, 100, 0, 40, char(0xff), char(0xe1), 0, 4, 0x67, 1, 2, 3, 1, 0, 2, 0x68, 1};
  CHECK(media_limits_breach({.codec = "h264", .extradata = avcc, .width = 1920, .height = 1080}).empty());
  CHECK(media_limits_breach({.codec = "h264", .extradata = {}, .width = 8192, .height = 1}).empty());
  CHECK(media_limits_breach({.codec = "aac", .extradata = "\x12\x10", .width = 0, .height = 0}).empty());
  CHECK(media_limits_breach({.codec = "mjpeg", .extradata = {}, .width = 640, .height = 480}).find("not allowed") !=
        std::string::npos);
  CHECK(media_limits_breach({.codec = "h264", .extradata = avcc.substr(0, 12), .width = 640, .height = 480})
            .find("parameter sets") != std::string::npos);
  CHECK(media_limits_breach({.codec = "h264", .extradata = {}, .width = 8193, .height = 480}).find("1..8192") !=
        std::string::npos);
  CHECK(media_limits_breach(
            {.codec = "h264", .extradata = {}, .width = 640, .height = 480, .time_base_num = 2, .time_base_den = 1})
            .find("time base") != std::string::npos);
}
