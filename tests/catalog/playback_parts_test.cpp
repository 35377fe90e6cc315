// plan_playback's parts (issue 19, "any range, whole"): one plan across volumes and reconnects
// with the same codec parameters; where they change, the plan ends and names where the next part
// begins — never before the previous part's end, so a reconnect stamped a little before the
// previous recording ended (two clocks) cannot plan the previous part again; with one_volume
// (wire playback: one disk's scheduler) the volume change ends the plan too. The segments are
// the recording node's fresher ones alone (no segment rows needed).
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/playback_rows.hpp"
#include "catalog/recording_rows.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

constexpr std::int64_t S = 1'000'000;
constexpr std::int64_t T0 = 1'700'000'000 * S;

// A closed segment of [START, END) on VOLUME, a keyframe every second, at WIDTH.
catalog::FreshSegment seg(std::uint64_t id, std::int64_t volume, std::int64_t start, std::int64_t end, int width) {
  catalog::FreshSegment f{.volume_id = volume,
                          .start_us = start,
                          .codec = "h264",
                          .extradata = "sps-" + std::to_string(width),
                          .width = width,
                          .height = width * 3 / 4,
                          .rate_bps = 1'000'000};
  f.segment.segment_id = id;
  f.segment.stream_id = id;
  f.segment.end_pts = end;
  f.segment.end_offset = 1000;
  std::uint64_t offset = 0;
  for (std::int64_t t = start; t < end; t += S) f.segment.gops.add({.pts = t, .offset = offset++ * 10, .sequence = 0});
  return f;
}

}  // namespace

TEST_CASE("a playback plan goes on across volumes and reconnects, and ends where the codec changes",
          "[catalog][playback]") {
  const std::string db = test::shared_cluster().create_database("playback_parts");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  {
    pqxx::work tx(conn);
    catalog::ensure_camera(tx, "gate");
    tx.commit();
  }
  const std::vector<catalog::FreshSegment> fresher{
      seg(1, 1, T0, T0 + 10 * S, 320),                     // volume 1
      seg(2, 2, T0 + 12 * S, T0 + 20 * S, 320),            // volume 2, a reconnect: the same part
      seg(3, 2, T0 + 20 * S - S / 100, T0 + 30 * S, 160),  // another resolution, stamped 10 ms early
      seg(4, 2, T0 + 30 * S, T0 + 40 * S, 320),            // back
  };
  auto plan = [&](std::int64_t from, std::int64_t to, bool one_volume = false) {
    pqxx::work tx(conn);
    return catalog::plan_playback(tx, Track{.camera = "gate"}, from, to, 10'000, fresher, one_volume);
  };

  const auto all = plan(T0, T0 + 60 * S);
  REQUIRE(all.segments.size() == 2);
  CHECK(all.segment_volumes == std::vector<std::int64_t>{1, 2});
  CHECK(all.to_us == T0 + 20 * S);
  CHECK(all.width == 320);
  REQUIRE(all.parts.size() == 3);
  CHECK(all.parts[0].from_us == T0);
  CHECK(all.parts[0].to_us == T0 + 20 * S);
  CHECK(all.parts[0].segments == 2);
  CHECK(all.parts[1].width == 160);
  CHECK(all.parts[1].from_us == T0 + 20 * S);  // the previous part's end, not the early stamp
  CHECK(all.parts[2].from_us == T0 + 30 * S);
  CHECK(all.next_from_us == T0 + 20 * S);

  // The next part from where the plan said: that part alone, not the previous one again.
  const auto second = plan(all.next_from_us, T0 + 60 * S);
  REQUIRE(second.segments.size() == 1);
  CHECK(second.segments[0].segment_id == 3);
  CHECK(second.width == 160);
  CHECK(second.next_from_us == T0 + 30 * S);
  const auto third = plan(second.next_from_us, T0 + 60 * S);
  REQUIRE(third.segments.size() == 1);
  CHECK(third.segments[0].segment_id == 4);
  CHECK(third.next_from_us == 0);
  CHECK(third.parts.size() == 1);

  // One disk's reader: the volume change ends the plan as well.
  const auto wire = plan(T0, T0 + 60 * S, true);
  REQUIRE(wire.segments.size() == 1);
  CHECK(wire.next_from_us == T0 + 12 * S);
  CHECK(wire.parts.size() == 3);  // parts are by codec parameters
  const auto wire2 = plan(wire.next_from_us, T0 + 60 * S, true);
  REQUIRE(wire2.segments.size() == 1);
  CHECK(wire2.segments[0].segment_id == 2);
  CHECK(wire2.next_from_us == T0 + 20 * S);
}

TEST_CASE("a playback plan is of one track: a camera's sub stream is planned apart, and only if it has one",
          "[catalog][playback][track]") {
  const std::string db = test::shared_cluster().create_database("playback_tracks");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  {
    pqxx::work tx(conn);
    const auto cam = catalog::ensure_camera(tx, "gate");
    const auto disk =
        tx.exec1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('n1', 'sim:0', 1) RETURNING id")[0]
            .as<std::int64_t>();
    catalog::open_stream(tx, {.camera_id = cam,
                              .codec = "h264",
                              .declared_rate_bps = 1'000'000,
                              .admitted_rate_bps = 1'000'000,
                              .disk_id = disk,
                              .started_at_us = T0});
    tx.commit();
  }
  const Track main_video{.camera = "gate"};
  const Track sub_video{.camera = "gate", .role = TrackRole::sub};
  pqxx::work tx(conn);
  const auto main_plan = catalog::plan_playback(tx, main_video, T0, T0 + 60 * S);
  CHECK(main_plan.camera_exists);
  CHECK(main_plan.track_exists);
  const auto no_sub = catalog::plan_playback(tx, sub_video, T0, T0 + 60 * S);
  CHECK(no_sub.camera_exists);
  CHECK_FALSE(no_sub.track_exists);  // the routes answer 404 "has no sub video stream"
  CHECK(no_sub.segments.empty());
}
