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

TEST_CASE("media limits: a camera's audio (AAC, G.711, Opus) within its bounds, anything else refused",
          "[media][limits][audio]") {
  const auto audio = [](std::string_view codec, std::string_view extradata, std::int64_t rate, std::int64_t channels) {
    return media_limits_breach({.codec = codec,
                                .extradata = extradata,
                                .time_base_num = 1,
                                .time_base_den = rate,
                                .sample_rate = rate,
                                .channels = channels});
  };
  CHECK(audio("aac", "\x12\x10", 44100, 2).empty());
  CHECK(audio("pcm_mulaw", "", 8000, 1).empty());
  CHECK(audio("pcm_alaw", "", 8000, 1).empty());
  CHECK(audio("opus", "", 48000, 2).empty());
  CHECK(audio("aac", "\x12\x10", 96000, 8).empty());
  // Out of bounds: each named.
  CHECK(audio("aac", "\x12\x10", 7999, 1).find("sample rate 7999 Hz") != std::string::npos);
  CHECK(audio("aac", "\x12\x10", 192000, 1).find("8000..96000") != std::string::npos);
  CHECK(audio("pcm_mulaw", "", 8000, 0).find("channels") != std::string::npos);
  CHECK(audio("opus", "", 48000, 9).find("1..8") != std::string::npos);
  CHECK(audio("aac", std::string(1025, 'x'), 48000, 2).find("audio extradata of 1025 bytes") != std::string::npos);
  CHECK(audio("pcm_alaw", "x", 8000, 1).find("no extradata") != std::string::npos);
  // Other audio codecs are not stored; audio has no picture; video has no sample rate.
  CHECK(audio("mp3", "", 44100, 2).find("not allowed") != std::string::npos);
  CHECK(audio("adpcm_g726", "", 8000, 1).find("not allowed") != std::string::npos);
  CHECK(media_limits_breach({.codec = "aac", .width = 640, .height = 480, .sample_rate = 48000, .channels = 2})
            .find("picture size") != std::string::npos);
  CHECK(media_limits_breach({.codec = "h264", .width = 640, .height = 480, .sample_rate = 48000})
            .find("no sample rate") != std::string::npos);
  // The catalog keeps no sample rate: a media route checks the rest.
  CHECK(media_limits_breach({.codec = "pcm_mulaw"}).empty());
}
