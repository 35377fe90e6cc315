// What readers see before the catalog does (server/disks/recent_segments.hpp): a recording's closed
// segments are kept while their catalog rows wait (a catalog that cannot be reached) and dropped
// once they commit; an ended recording's entry goes with them; only the camera asked for and the
// range asked for are answered, with device offsets of the segment's extents.
#include <catch2/catch_test_macros.hpp>

#include "catalog/batcher.hpp"
#include "server/disks/recent_segments.hpp"
#include "storage/clock.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/segment_fixture.hpp"

using namespace vigil;

namespace {

// A batcher that never reaches a catalog: every row stays waiting.
catalog::BatcherOptions unreachable() {
  catalog::BatcherOptions o;
  o.reachable = [] { return false; };
  o.stop_grace = std::chrono::milliseconds(0);
  return o;
}

server::RecentSegments::Source source(const std::string& camera, std::uint64_t stream, const storage::Volume& vol) {
  server::RecentSegments::Source s;
  s.track = Track{.camera = camera};
  s.stream_id = stream;
  s.volume_id = 7;
  s.volume = &vol;
  s.codec = "h264";
  s.rate_bps = 1'000'000;
  return s;
}

}  // namespace

TEST_CASE("recent segments: kept while their rows wait, only the camera and range asked for", "[recent]") {
  storage::VirtualClock clock;
  storage::SimulatedDisk disk(clock, {.size_bytes = 8 << 20});
  REQUIRE(storage::Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = storage::Volume::open(disk);
  REQUIRE(vol.has_value());
  const auto seg = test::write_script_segment(**vol, 1, 3, 50);
  REQUIRE(seg.frame_count == 50);

  catalog::Batcher batcher("host=/nonexistent-vigil-socket-dir dbname=none connect_timeout=1", unreachable());
  server::RecentSegments recent(batcher);
  recent.started(source("gate", 3, **vol));
  recent.started(source("porch", 4, **vol));
  const auto row = batcher.enqueue(catalog::ReclaimRow{});
  recent.closed(3, seg, row);

  const auto all = recent.of(Track{.camera = "gate"}, seg.first_pts, seg.end_pts);
  REQUIRE(all.size() == 1);
  CHECK(!all[0].open);
  CHECK(all[0].volume_id == 7);
  CHECK(all[0].start_us == seg.first_pts);
  CHECK(all[0].segment.segment_id == 1);
  CHECK(all[0].segment.end_offset == seg.end_offset);
  CHECK(all[0].segment.gops.size() == seg.gop_index.size());
  REQUIRE(all[0].segment.extent_offsets.size() == seg.extents.size());
  CHECK(all[0].segment.extent_offsets[0] == (*vol)->extent_offset(seg.extents[0]));
  CHECK(recent.of(Track{.camera = "porch"}, seg.first_pts, seg.end_pts).empty());               // another camera
  CHECK(recent.of(Track{.camera = "gate"}, seg.end_pts, seg.end_pts + 1'000'000).empty());      // after it
  CHECK(recent.of(Track{.camera = "gate"}, seg.first_pts - 1'000'000, seg.first_pts).empty());  // before it
  // Ended: still answered while its row waits (the catalog does not have it yet).
  recent.ended(3);
  CHECK(recent.of(Track{.camera = "gate"}, seg.first_pts, seg.end_pts).size() == 1);
  CHECK(!recent.durable_end_us(Track{.camera = "gate"}));  // nothing records now

  // At most kClosedPerStream closed segments per recording: the oldest goes first.
  recent.started(source("yard", 5, **vol));
  for (std::uint64_t id = 10; id < 10 + server::RecentSegments::kClosedPerStream + 2; ++id) {
    auto s = seg;
    s.segment_id = id;
    recent.closed(5, s, batcher.enqueue(catalog::ReclaimRow{}));
  }
  const auto yard = recent.of(Track{.camera = "yard"}, seg.first_pts, seg.end_pts);
  REQUIRE(yard.size() == server::RecentSegments::kClosedPerStream);
  CHECK(yard.front().segment.segment_id == 12);
}

TEST_CASE("recent segments: rows committed, the catalog answers alone; ended ones stay a grace period", "[recent]") {
  storage::VirtualClock clock;
  storage::SimulatedDisk disk(clock, {.size_bytes = 8 << 20});
  REQUIRE(storage::Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = storage::Volume::open(disk);
  REQUIRE(vol.has_value());
  const auto seg = test::write_script_segment(**vol, 1, 3, 20);
  // Nothing waits in this batcher: every row number is done.
  catalog::Batcher batcher("host=/nonexistent-vigil-socket-dir dbname=none connect_timeout=1", unreachable());
  server::RecentSegments recent(batcher);
  recent.started(source("gate", 3, **vol));
  recent.closed(3, seg, 0);
  CHECK(recent.of(Track{.camera = "gate"}, seg.first_pts, seg.end_pts).empty());
  // An ended recording's last segments stay a while (a playback finishing from memory), then go.
  recent.closed(3, seg, 0);
  recent.ended(3);
  CHECK(recent.of(Track{.camera = "gate"}, seg.first_pts, seg.end_pts).size() == 1);
}

TEST_CASE("recent segments: a camera's tracks are apart (its sub stream is not its main video)", "[recent][track]") {
  storage::VirtualClock clock;
  storage::SimulatedDisk disk(clock, {.size_bytes = 8 << 20});
  REQUIRE(storage::Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = storage::Volume::open(disk);
  REQUIRE(vol.has_value());
  const auto seg = test::write_script_segment(**vol, 1, 3, 20);
  catalog::Batcher batcher("host=/nonexistent-vigil-socket-dir dbname=none connect_timeout=1", unreachable());
  server::RecentSegments recent(batcher);
  auto sub = source("gate", 3, **vol);
  sub.track.role = TrackRole::sub;
  recent.started(sub);
  recent.closed(3, seg, batcher.enqueue(catalog::ReclaimRow{}));
  const Track main_video{.camera = "gate"};
  const Track sub_video{.camera = "gate", .role = TrackRole::sub};
  CHECK(recent.of(main_video, seg.first_pts, seg.end_pts).empty());
  CHECK(recent.of(sub_video, seg.first_pts, seg.end_pts).size() == 1);
  CHECK(recent.recording(sub_video));
  CHECK_FALSE(recent.recording(main_video));
  const auto timeline = recent.timeline_segments({"gate"}, seg.first_pts, seg.end_pts);
  REQUIRE(timeline.size() == 1);
  CHECK(timeline[0].role == TrackRole::sub);
  CHECK(timeline[0].media_kind == MediaKind::video);
}
