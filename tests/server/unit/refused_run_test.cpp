// Which refused frames were never stored (server/recording/refused_run.hpp): a frame resent and
// stored is not lost; frames a sender gave up are, in one run per stretch of them, ended by the
// next stored frame or the recording's end, with their reason.
#include "server/recording/refused_run.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using namespace vigil::server;
using Catch::Matchers::ContainsSubstring;

namespace {

// Frame N of a 25 fps source: pts N·40 ms (wall-clock µs the same, for the test), 1000 + N bytes.
FrameKey key(std::int64_t n) {
  return {.pts = n * 3600,
          .dts = n * 3600,
          .has_pts = true,
          .has_dts = true,
          .payload_bytes = 1000 + static_cast<std::uint64_t>(n)};
}
RefusedFrame frame(std::int64_t n, LossReason why = LossReason::rate_exceeded) {
  return {.key = key(n), .start_us = n * 40'000, .end_us = (n + 1) * 40'000, .reason = why};
}

}  // namespace

TEST_CASE("a refused frame that is resent and stored is not lost", "[recording][gaps]") {
  RefusedRuns runs;
  // Frame 5 refused for the rate, 6 and 7 sent before the sender heard (out of order).
  CHECK(runs.refused(frame(5)).empty());
  CHECK(runs.refused(frame(6, runs.last_reason())).empty());
  CHECK(runs.refused(frame(7)).empty());
  // The sender resends from 5; 6 is refused again before it gets in.
  CHECK(runs.stored(key(5)).empty());
  CHECK(runs.refused(frame(6)).empty());
  CHECK(runs.stored(key(6)).empty());
  CHECK(runs.stored(key(7)).empty());
  CHECK_FALSE(runs.waiting());
  CHECK(runs.stored(key(8)).empty());
  CHECK(runs.close().empty());
  CHECK(runs.lost_frames() == 0);
}

TEST_CASE("frames a sender gave up are one run, ended by its next stored frame", "[recording][gaps]") {
  RefusedRuns runs;
  for (int n = 10; n < 14; ++n) CHECK(runs.refused(frame(n)).empty());
  CHECK(runs.refused(frame(11)).empty());  // refused twice: counted once
  // The sender dropped 10..13 and sends 14 under the refused sequence number.
  const auto ended = runs.stored(key(14));
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].reason == LossReason::rate_exceeded);
  CHECK(ended[0].start_us == 400'000);
  CHECK(ended[0].end_us == 560'000);
  CHECK(ended[0].frames == 4);
  CHECK(ended[0].payload_bytes == 1010 + 1011 + 1012 + 1013);
  CHECK_FALSE(runs.waiting());
  CHECK(runs.lost_frames() == 4);
  CHECK_THAT(lost_run_detail(ended[0], 400'000),
             ContainsSubstring("4 frames (4046 payload bytes)") && ContainsSubstring("admitted rate 400000 bit/s"));
}

TEST_CASE("a sender that resends only some refused frames loses the others", "[recording][gaps]") {
  RefusedRuns runs;
  for (int n = 1; n <= 6; ++n) runs.refused(frame(n));
  CHECK(runs.stored(key(1)).empty());
  CHECK(runs.stored(key(2)).empty());
  // 3 and 4 given up; 5 resent.
  auto ended = runs.stored(key(5));
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].frames == 2);
  CHECK(ended[0].start_us == 120'000);
  CHECK(ended[0].end_us == 200'000);
  CHECK(runs.waiting());  // 6 may still come
  // The recording ends before it does: lost at the close.
  ended = runs.close();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].frames == 1);
  CHECK(ended[0].start_us == 240'000);
  CHECK(runs.lost_frames() == 3);
}

TEST_CASE("a change of reason ends a run: each run has one reason", "[recording][gaps]") {
  RefusedRuns runs;
  runs.refused(frame(1, LossReason::deadline_missed));
  runs.refused(frame(2, LossReason::deadline_missed));
  runs.refused(frame(3, LossReason::rate_exceeded));
  runs.refused(frame(4, LossReason::io_error));
  const auto ended = runs.close();
  REQUIRE(ended.size() == 3);
  CHECK(ended[0].reason == LossReason::deadline_missed);
  CHECK(ended[0].frames == 2);
  CHECK(ended[1].reason == LossReason::rate_exceeded);
  CHECK(ended[2].reason == LossReason::io_error);
  CHECK(ended[2].end_us > ended[2].start_us);
  CHECK(loss_reason_name(ended[2].reason) == "io_error");
}

TEST_CASE("a sender that never resends is bounded and still one run", "[recording][gaps]") {
  RefusedRuns runs(8);
  for (int n = 1; n <= 100; ++n) CHECK(runs.refused(frame(n)).empty());
  CHECK(runs.lost_frames() == 92);  // beyond the bound, the oldest count as lost at once
  const auto ended = runs.stored(key(101));
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].frames == 100);
  CHECK(ended[0].start_us == 40'000);
  CHECK(ended[0].end_us == 101 * 40'000);
}

TEST_CASE("a frame without a duration still makes a non-empty gap", "[recording][gaps]") {
  RefusedRuns runs;
  runs.refused({.key = key(1), .start_us = 7, .end_us = 7, .reason = LossReason::rate_exceeded});
  const auto ended = runs.close();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].start_us == 7);
  CHECK(ended[0].end_us == 8);
}
