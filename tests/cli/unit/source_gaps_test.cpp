// Holes in what a source delivered (client/cli/source_gaps.hpp): a timestamp well beyond the
// previous packet's end is a hole from that end to it; ordinary steps, B-frame reordering (pts
// only, stepping a mini-GOP at a time), jitter and clock jumps are not.
#include <catch2/catch_test_macros.hpp>

#include "client/cli/source_gaps.hpp"

using namespace vigil::client;

namespace {
constexpr double kTb = 1.0 / 90'000;    // RTP's 90 kHz
constexpr std::int64_t kFrame = 3'600;  // 25 fps
}  // namespace

TEST_CASE("a hole in the timestamps is reported from the last packet's end to the next packet", "[record][gaps]") {
  SourceGapDetector d(kTb);
  for (int i = 0; i < 50; ++i) CHECK_FALSE(d.packet(i * kFrame, 0));
  // 2 s missing: frames 50..99 never came.
  const auto hole = d.packet(100 * kFrame, 0);
  REQUIRE(hole);
  CHECK(hole->from_ts == 50 * kFrame);
  CHECK(hole->to_ts == 100 * kFrame);
  CHECK(hole->missing_frames == 50);
  // And it goes on normally.
  for (int i = 101; i < 150; ++i) CHECK_FALSE(d.packet(i * kFrame, 0));
}

TEST_CASE("durations give the interval from the first packet", "[record][gaps]") {
  SourceGapDetector d(kTb);
  CHECK_FALSE(d.packet(0, kFrame));
  const auto hole = d.packet(30 * kFrame, kFrame);  // 1.2 s later
  REQUIRE(hole);
  CHECK(hole->from_ts == kFrame);
  CHECK(hole->missing_frames == 29);
}

TEST_CASE("a file's packet stretched over the hole (mp4: duration = the next dts) does not hide it", "[record][gaps]") {
  SourceGapDetector d(kTb);
  for (int i = 0; i < 74; ++i) CHECK_FALSE(d.packet(i * kFrame, kFrame));
  CHECK_FALSE(d.packet(74 * kFrame, 51 * kFrame));  // 2.96 s, lasting to 5.00 s
  const auto hole = d.packet(125 * kFrame, kFrame);
  REQUIRE(hole);
  CHECK(hole->from_ts == 75 * kFrame);
  CHECK(hole->to_ts == 125 * kFrame);
  CHECK(hole->missing_frames == 50);
}

TEST_CASE("jitter, short stutters, reordering and clock jumps are not holes", "[record][gaps]") {
  SourceGapDetector d(kTb);
  std::int64_t t = 0;
  for (int i = 0; i < 25; ++i) CHECK_FALSE(d.packet(t += kFrame, 0));
  CHECK_FALSE(d.packet(t += 3 * kFrame, 0));    // two frames late: below kHoleFrames and kMinHoleS
  CHECK_FALSE(d.packet(t += 10 * kFrame, 0));   // 0.4 s: below kMinHoleS
  CHECK_FALSE(d.packet(t - 5 * kFrame, 0));     // backwards: reordered, or the clock went back
  CHECK_FALSE(d.packet(t += 300 * kFrame, 0));  // 12 s ahead: a clock jump, vigild re-pins it
  CHECK_FALSE(d.packet(t += kFrame, 0));
}

TEST_CASE("B-frames without dts step a mini-GOP at a time and are never a hole", "[record][gaps]") {
  SourceGapDetector d(kTb);
  // Decode order I P B B B B B B B (pts): P eight frames ahead, the Bs behind it.
  std::int64_t base = 0;
  for (int gop = 0; gop < 20; ++gop, base += 8 * kFrame) {
    CHECK_FALSE(d.packet(base + 8 * kFrame, 0));
    for (int b = 1; b < 8; ++b) CHECK_FALSE(d.packet(base + b * kFrame, 0));
  }
}
