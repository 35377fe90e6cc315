// Playback pacing without sleeping: frames are due at media distance / rate from the anchor,
// in either direction; pause freezes media time; a rate change continues from the last frame
// sent; a seek re-anchors.
#include <catch2/catch_test_macros.hpp>

#include "server/playback/playback_pacer.hpp"

using vigil::server::PlaybackPacer;
using namespace std::chrono_literals;

namespace {
const PlaybackPacer::Clock::time_point t0{std::chrono::seconds(1000)};
}

TEST_CASE("frames are due at real time x rate from the first one", "[pacer]") {
  PlaybackPacer p(1.0);
  CHECK(p.due(5'000'000, t0) == t0);  // anchors
  CHECK(p.due(5'040'000, t0) == t0 + 40ms);
  CHECK(p.due(6'000'000, t0 + 10ms) == t0 + 1s);
  PlaybackPacer fast(4.0);
  CHECK(fast.due(0, t0) == t0);
  CHECK(fast.due(2'000'000, t0) == t0 + 500ms);
}

TEST_CASE("reverse playback paces falling timestamps the same way", "[pacer]") {
  PlaybackPacer p(2.0);
  CHECK(p.due(10'000'000, t0) == t0);
  CHECK(p.due(8'000'000, t0) == t0 + 1s);
}

TEST_CASE("pause freezes media time and resume continues where it stopped", "[pacer]") {
  PlaybackPacer p(1.0);
  REQUIRE(p.due(0, t0) == t0);
  p.sent(0);
  p.pause(t0 + 200ms);
  CHECK_FALSE(p.due(500'000, t0 + 300ms).has_value());
  p.resume(t0 + 5s + 200ms);  // paused for 5 s
  CHECK(p.due(500'000, t0 + 5s + 200ms) == t0 + 5s + 500ms);
}

TEST_CASE("a rate change continues from the last frame sent; a seek re-anchors", "[pacer]") {
  PlaybackPacer p(1.0);
  REQUIRE(p.due(0, t0) == t0);
  p.sent(1'000'000);
  p.set_rate(4.0, t0 + 1s);
  CHECK(p.rate() == 4.0);
  CHECK(p.due(3'000'000, t0 + 1s) == t0 + 1s + 500ms);
  p.reanchor();
  CHECK(p.due(60'000'000, t0 + 2s) == t0 + 2s);
  CHECK(p.due(61'000'000, t0 + 2s) == t0 + 2s + 250ms);
}
