// Decode times for reordered cameras (client/rtsp/decode_times.hpp): for the GOP shapes encoders
// produce (no B-frames, IBBP, B-pyramids, open GOPs), every decode time rises strictly, none passes
// its frame's presentation time, and every frame comes out once, in decode order; a stream that
// reorders deeper than the depth is refused with the depth it needs.
#include <catch2/catch_test_macros.hpp>
#include <vector>

#include "client/rtsp/decode_times.hpp"

using vigil::client::rtsp::DecodeTimes;
using vigil::client::rtsp::TimedFrame;

namespace {

// Pushes PTS (decode order) through a DecodeTimes of DEPTH and flushes: every frame with its time.
std::vector<TimedFrame> run(int depth, const std::vector<std::int64_t>& pts) {
  DecodeTimes d(depth);
  std::vector<TimedFrame> out;
  for (auto p : pts) REQUIRE(d.push(p, out) == DecodeTimes::Outcome::ok);
  d.flush(out);
  return out;
}

void check_valid(const std::vector<std::int64_t>& pts, const std::vector<TimedFrame>& out) {
  REQUIRE(out.size() == pts.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("frame " << i);
    CHECK(out[i].pts == pts[i]);
    CHECK(out[i].dts <= out[i].pts);
    if (i > 0) CHECK(out[i].dts > out[i - 1].dts);
  }
}

}  // namespace

TEST_CASE("a stream in presentation order keeps decode time = presentation time at depth 0", "[rtsp][dts]") {
  const std::vector<std::int64_t> pts{0, 3600, 7200, 10800};
  const auto out = run(0, pts);
  check_valid(pts, out);
  for (const auto& f : out) CHECK(f.dts == f.pts);
}

TEST_CASE("IBBP with one reorder place: decode times one frame behind, held frames before them", "[rtsp][dts]") {
  // 90 kHz, 25 fps: I0 P3 B1 B2 P6 B4 B5 in decode order.
  const std::vector<std::int64_t> pts{0, 10800, 3600, 7200, 21600, 14400, 18000};
  const auto out = run(1, pts);
  check_valid(pts, out);
  CHECK(out[0].dts == -10800);  // held: one step (the smallest gap seen, P3 - I0) before the next
  CHECK(out[1].dts == 0);
  CHECK(out[2].dts == 3600);
  CHECK(out[4].dts == 10800);
}

TEST_CASE("a B-pyramid needs depth 2; depth 1 refuses it and says so", "[rtsp][dts]") {
  // I0 P4 B2 b1 b3 P8 B6 b5 b7 (x264's b-pyramid, 3 B-frames).
  const std::vector<std::int64_t> pts{0, 4, 2, 1, 3, 8, 6, 5, 7};
  check_valid(pts, run(2, pts));
  check_valid(pts, run(4, pts));  // deeper than needed is fine too: only later

  DecodeTimes shallow(1);
  std::vector<TimedFrame> out;
  std::size_t i = 0;
  while (i < pts.size() && shallow.push(pts[i], out) == DecodeTimes::Outcome::ok) ++i;
  CHECK(i == 3);  // b1 is shown before P4 and B2
  CHECK(shallow.needed_depth() == 2);
  const auto handed = out.size();
  CHECK(shallow.push(100, out) == DecodeTimes::Outcome::too_early);  // refused for good
  CHECK(out.size() == handed);
  for (std::size_t k = 1; k < out.size(); ++k) CHECK(out[k].dts > out[k - 1].dts);
}

TEST_CASE("depth 0 refuses the first reordered frame and asks for depth 1", "[rtsp][dts]") {
  DecodeTimes d(0);
  std::vector<TimedFrame> out;
  CHECK(d.push(0, out) == DecodeTimes::Outcome::ok);
  CHECK(d.push(10800, out) == DecodeTimes::Outcome::ok);
  CHECK(d.push(3600, out) == DecodeTimes::Outcome::too_early);
  CHECK(d.needed_depth() == 1);
  CHECK(out.size() == 2);
  // A repeated timestamp stays allowed at depth 0, as it always was.
  DecodeTimes same(0);
  CHECK(same.push(5, out) == DecodeTimes::Outcome::ok);
  CHECK(same.push(5, out) == DecodeTimes::Outcome::ok);
}

TEST_CASE("an open GOP whose leading pictures come before the keyframe in time", "[rtsp][dts]") {
  // I8 B6 b5 b7 P12 B10 ...: the session starts at I8 but frames shown before it follow.
  const std::vector<std::int64_t> pts{8, 6, 5, 7, 12, 10, 9, 11, 16};
  check_valid(pts, run(2, pts));
}

TEST_CASE("a stream that ends before depth + 1 frames arrived still hands every frame out", "[rtsp][dts]") {
  const std::vector<std::int64_t> pts{0, 7200};
  check_valid(pts, run(3, pts));
  CHECK(run(3, {}).empty());
  // Depth is bounded by what H.264/H.265 allow.
  CHECK(DecodeTimes(99).depth() == DecodeTimes::kMaxDepth);
}
