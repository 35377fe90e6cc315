// HLS segments cut from the GOP index alone: whole GOPs, a new segment at the first keyframe of
// each target-length cell of wall-clock time, the first from the keyframe at or before the range's
// start, the last ending where the range or the recording does (left out while it still grows),
// a hole in the recording closing a segment.
#include <catch2/catch_test_macros.hpp>

#include "server/api/http_hls.hpp"

using vigil::server::cut_hls_segments;
using vigil::storage::PlaybackSegment;

namespace {

// A segment with a keyframe every GOP_US from START_US, N GOPs, ending one GOP after the last.
PlaybackSegment segment(std::int64_t start_us, std::int64_t gop_us, int n) {
  PlaybackSegment s;
  for (int i = 0; i < n; ++i) {
    s.gops.add({.pts = start_us + i * gop_us,
                .offset = static_cast<std::uint64_t>(i) * 4096 + 4096,
                .sequence = static_cast<std::uint64_t>(i) * 25 + 1});
  }
  s.end_pts = start_us + n * gop_us;
  s.end_offset = static_cast<std::uint64_t>(n) * 4096 + 4096;
  return s;
}

}  // namespace

TEST_CASE("HLS segments: whole GOPs cut on cells of the target length", "[http][hls]") {
  const std::vector<PlaybackSegment> segs{segment(10'000'000, 1'000'000, 10)};  // 10 s, a keyframe per second
  auto cuts = cut_hls_segments(segs, 0, 100'000'000, 4'000'000);
  // Cells [8, 12), [12, 16), [16, 20) s: the first segment is what the recording has of its cell.
  REQUIRE(cuts.size() == 3);
  CHECK((cuts[0].from_us == 10'000'000 && cuts[0].to_us == 12'000'000));
  CHECK((cuts[1].from_us == 12'000'000 && cuts[1].to_us == 16'000'000));
  CHECK((cuts[2].from_us == 16'000'000 && cuts[2].to_us == 20'000'000));

  // From inside a GOP: its keyframe starts the first segment; the range's end ends the last.
  cuts = cut_hls_segments(segs, 12'500'000, 15'200'000, 4'000'000);
  REQUIRE(cuts.size() == 1);
  CHECK((cuts[0].from_us == 12'000'000 && cuts[0].to_us == 15'200'000));

  // GOPs longer than the target: one GOP per segment, never split.
  cuts = cut_hls_segments({segment(0, 6'000'000, 3)}, 0, 18'000'000, 4'000'000);
  REQUIRE(cuts.size() == 3);
  CHECK(cuts[1].to_us - cuts[1].from_us == 6'000'000);

  CHECK(cut_hls_segments(segs, 30'000'000, 40'000'000, 4'000'000).empty());
}

TEST_CASE("HLS segments: a hole in the recording closes a segment", "[http][hls]") {
  // 3 s recorded, a 5 s hole, 3 s more: two segments, neither spanning the hole.
  const std::vector<PlaybackSegment> segs{segment(0, 1'000'000, 3), segment(8'000'000, 1'000'000, 3)};
  const auto cuts = cut_hls_segments(segs, 0, 20'000'000, 4'000'000);
  REQUIRE(cuts.size() == 2);
  CHECK((cuts[0].from_us == 0 && cuts[0].to_us == 3'000'000));
  CHECK((cuts[1].from_us == 8'000'000 && cuts[1].to_us == 11'000'000));
  // Back to back (no hole): the storage segment boundary does not cut the HLS segment.
  const auto joined =
      cut_hls_segments({segment(0, 1'000'000, 3), segment(3'000'000, 1'000'000, 3)}, 0, 20'000'000, 4'000'000);
  REQUIRE(joined.size() == 2);
  CHECK((joined[0].from_us == 0 && joined[0].to_us == 4'000'000));
}

TEST_CASE("HLS segments: a growing range lists the same segments at every reload", "[http][hls]") {
  // A playlist asked with a start that moves (from=-1m) and an end the recording still extends:
  // the segments both lists share are the same, under the same bounds.
  const std::vector<PlaybackSegment> early{segment(10'000'000, 1'000'000, 10)};
  const std::vector<PlaybackSegment> later{segment(10'000'000, 1'000'000, 17)};
  const auto a = cut_hls_segments(early, 10'500'000, 100'000'000, 4'000'000, /*open_end=*/true);
  const auto b = cut_hls_segments(later, 13'000'000, 100'000'000, 4'000'000, /*open_end=*/true);
  // The segment still growing (its next keyframe not durable yet) is not listed.
  REQUIRE(a.size() == 2);
  CHECK((a.back().from_us == 12'000'000 && a.back().to_us == 16'000'000));
  // b starts inside the cell of a's second segment: at that cell's first keyframe.
  REQUIRE(b.size() == 3);
  CHECK((b[0].from_us == a[1].from_us && b[0].to_us == a[1].to_us));
  CHECK((b[1].from_us == 16'000'000 && b[1].to_us == 20'000'000));
  CHECK((b[2].from_us == 20'000'000 && b[2].to_us == 24'000'000));
  // Finished (the recording ended): the last one too.
  CHECK(cut_hls_segments(later, 13'000'000, 100'000'000, 4'000'000).size() == 4);
  // Past the first cell, the range's start moves the first segment a whole cell at a time.
  const auto c = cut_hls_segments(later, 17'000'000, 100'000'000, 4'000'000, /*open_end=*/true);
  REQUIRE(c.size() == 2);
  CHECK((c[0].from_us == b[1].from_us && c[0].to_us == b[1].to_us));
}
