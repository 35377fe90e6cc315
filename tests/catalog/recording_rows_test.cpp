// The catalog side of a recording against a real PostgreSQL: frames recorded through the cycle
// scheduler on a simulated disk, each closed segment recorded through the batcher, then the
// catalog checked against the volume: fsck's catalog check finds nothing to say.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/batcher.hpp"
#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/recording_stream.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;
using namespace vigil::storage;
using namespace std::chrono_literals;

TEST_CASE("a recording's segments land in the catalog and agree with the volume", "[catalog][recording]") {
  const std::string db = test::shared_cluster().create_database("recording_rows");
  pqxx::connection conn(db);
  catalog::migrate(conn);

  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 64 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
  auto vol = *Volume::open(disk);
  std::int64_t volume_id = 0, stream_id = 0;
  std::uint64_t next_id = 0;
  {
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, "sim:0");
    const auto cam = catalog::ensure_camera(tx, "gate-1");
    CHECK(catalog::ensure_camera(tx, "gate-1") == cam);  // by name, once
    const auto disk_id = tx.exec_params1("SELECT disk_id FROM volumes WHERE id = $1", volume_id)[0].as<std::int64_t>();
    stream_id = catalog::open_stream(tx, {.camera_id = cam,
                                          .codec = "h264",
                                          .extradata = "\x01\x64\x00\x1f",
                                          .width = 1280,
                                          .height = 720,
                                          .declared_rate_bps = 4'000'000,
                                          .admitted_rate_bps = 4'000'000,
                                          .disk_id = disk_id,
                                          .started_at_us = 0});
    next_id = catalog::next_segment_id(tx, volume_id, *vol);
    tx.commit();
  }
  CHECK(next_id == static_cast<std::uint64_t>(volume_id) << catalog::kSegmentIdVolumeShift);

  catalog::Batcher batcher(db, {.max_delay = std::chrono::milliseconds(50)});
  LinearServiceModel model(100us, 200e6);
  CycleScheduler sched(disk, clock, model, {.cycle = 1s, .chunk_bytes = 16 * 1024}, &clock);
  std::uint64_t acked = 0, closed = 0;
  RecordingStream rec(
      *vol, static_cast<std::uint64_t>(stream_id), {}, 1, 0, {.io_bytes = 48 * 1024, .max_segment_bytes = 200 * 1024},
      [&] { return next_id++; }, [&](std::uint64_t seq) { acked = seq; },
      [&](const SegmentSummary& s) {
        ++closed;
        std::vector<std::uint64_t> offsets;
        for (auto e : s.extents) offsets.push_back(vol->extent_offset(e));
        batcher.enqueue("close segment " + std::to_string(s.segment_id),
                        [s, offsets, volume_id, eb = vol->extent_bytes()](pqxx::work& tx) {
                          catalog::record_closed_segment(tx, volume_id, s, offsets, eb, 1'000'000);
                        });
      });
  sched.add_stream(static_cast<std::uint64_t>(stream_id), rec, clock.now());
  std::uint64_t seq = 1;
  for (int c = 0; c < 30; ++c) {
    for (int i = 0; i < 10; ++i, ++seq) {
      auto f = test::script_frame(seq, static_cast<std::uint64_t>(stream_id));
      REQUIRE(rec.append(f.header, f.payload).has_value());
    }
    sched.run_cycle();
  }
  sched.run_cycle();  // the last frames
  CHECK(acked == seq - 1);
  auto last = rec.close();
  REQUIRE(last.has_value());
  {
    std::vector<std::uint64_t> offsets;
    for (auto e : last->extents) offsets.push_back(vol->extent_offset(e));
    pqxx::work tx(conn);
    catalog::record_closed_segment(tx, volume_id, *last, offsets, vol->extent_bytes(), 2'000'000);
    catalog::record_gap(tx, stream_id, 5, 5, "source_lost", "empty: not recorded");
    catalog::end_stream(tx, stream_id, "stopped", 3'000'000);
    tx.commit();
  }
  batcher.flush();
  CHECK(closed >= 2);
  CHECK(batcher.rejected() == 0);

  pqxx::work tx(conn);
  CHECK(tx.exec1("SELECT count(*) FROM segments WHERE state = 'closed'")[0].as<std::uint64_t>() == closed + 1);
  CHECK(tx.exec1("SELECT sum(frame_count) FROM segments")[0].as<std::uint64_t>() == seq - 1);
  CHECK(tx.exec1("SELECT count(*) FROM gaps")[0].as<int>() == 0);
  CHECK(tx.exec_params1("SELECT state FROM streams WHERE id = $1", stream_id)[0].as<std::string>() == "stopped");
  // What fsck --db would say: nothing.
  const auto problems = catalog::check_against_catalog(tx, catalog::scan_volume(*vol), volume_id);
  std::string said;
  for (const auto& p : problems) said += p.describe() + "\n";
  INFO(said);
  CHECK(problems.empty());
}

TEST_CASE("a reconnect records the hole since the camera's last stream, once that stream has ended",
          "[catalog][recording]") {
  pqxx::connection conn(test::shared_cluster().create_database("reconnect_gap"));
  catalog::migrate(conn);
  pqxx::work tx(conn);
  const auto cam = catalog::ensure_camera(tx, "yard");
  CHECK_FALSE(
      catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, 5'000'000));  // no previous stream
  const auto disk = tx.exec1(
                          "INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('n1', 'sim:0', 1) "
                          "RETURNING id")[0]
                        .as<std::int64_t>();
  const auto first = catalog::open_stream(tx, {.camera_id = cam,
                                               .codec = "h264",
                                               .declared_rate_bps = 1'000'000,
                                               .admitted_rate_bps = 1'000'000,
                                               .disk_id = disk,
                                               .started_at_us = 1'000'000});
  CHECK_FALSE(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video,
                                            5'000'000));  // still recording: its end is not known yet
  catalog::end_stream(tx, first, "interrupted", 2'000'000);
  CHECK(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, 5'000'000));
  auto gap = tx.exec_params1("SELECT start_us, end_us, reason, detail FROM gaps WHERE stream_id = $1", first);
  CHECK(gap[0].as<std::int64_t>() == 1'000'000);  // no segment: from the stream's start
  CHECK(gap[1].as<std::int64_t>() == 5'000'000);
  CHECK(gap[2].as<std::string>() == "source_lost");
  CHECK(gap[3].as<std::string>().find("client disconnected") != std::string::npos);
}

namespace {

// A fresh catalog with camera NAME on a disk: streams of it opened at a given time, their gaps read back.
struct CameraRows {
  CameraRows(const std::string& db, const std::string& name)
      : conn(test::shared_cluster().create_database(db)), tx((catalog::migrate(conn), conn)) {
    cam = catalog::ensure_camera(tx, name);
    disk = tx.exec1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('n1', 'sim:0', 1) RETURNING id")[0]
               .as<std::int64_t>();
  }
  std::int64_t open(std::int64_t at, TrackRole role = TrackRole::main, MediaKind kind = MediaKind::video) {
    return catalog::open_stream(tx, {.camera_id = cam,
                                     .role = role,
                                     .media_kind = kind,
                                     .codec = "h264",
                                     .declared_rate_bps = 1'000'000,
                                     .admitted_rate_bps = 1'000'000,
                                     .disk_id = disk,
                                     .started_at_us = at});
  }
  pqxx::result gaps(std::int64_t stream) {
    return tx.exec_params("SELECT start_us, end_us, reason FROM gaps WHERE stream_id = $1 ORDER BY start_us", stream);
  }
  pqxx::connection conn;
  pqxx::work tx;
  std::int64_t cam = 0, disk = 0;
};

}  // namespace

TEST_CASE("an io_error gap covers only the time lost: it ends where the camera's resent stream begins",
          "[catalog][recording]") {
  CameraRows rows("io_error_gap", "dock");
  auto& tx = rows.tx;
  const auto cam = rows.cam;
  auto open = [&](std::int64_t at) { return rows.open(at); };
  auto gaps = [&](std::int64_t stream) { return rows.gaps(stream); };
  SECTION("the failed stream ended first: the reconnect cuts its gap") {
    const auto first = open(1'000'000);
    catalog::end_stream_with_gap(tx, first, "interrupted", 5'000'000, "io_error", "disk failed");
    REQUIRE(gaps(first).size() == 1);
    CHECK_FALSE(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video,
                                              1'400'000));  // resent from 1.4 s: nothing else missing
    open(1'400'000);
    auto g = gaps(first);
    REQUIRE(g.size() == 1);
    CHECK(g[0][0].as<std::int64_t>() == 1'000'000);
    CHECK(g[0][1].as<std::int64_t>() == 1'400'000);
    CHECK(g[0][2].as<std::string>() == "io_error");
  }
  SECTION("the new stream opened before the failed one's end was committed") {
    const auto first = open(1'000'000);
    CHECK_FALSE(
        catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, 1'400'000));  // still 'recording'
    open(1'400'000);
    catalog::end_stream_with_gap(tx, first, "interrupted", 5'000'000, "io_error", "disk failed");
    auto g = gaps(first);
    REQUIRE(g.size() == 1);
    CHECK(g[0][1].as<std::int64_t>() == 1'400'000);
  }
  SECTION("nothing lost: the resent stream begins where the failed one's frames ended") {
    const auto first = open(1'000'000);
    catalog::end_stream_with_gap(tx, first, "interrupted", 5'000'000, "io_error", "disk failed");
    CHECK_FALSE(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, 1'000'000));
    CHECK(gaps(first).empty());
  }
}

TEST_CASE("a gap of refused frames ends where the camera's next stream resent them", "[catalog][recording][gaps]") {
  CameraRows rows("refused_gap", "yard");
  auto& tx = rows.tx;
  const auto cam = rows.cam;
  auto open = [&](std::int64_t at) { return rows.open(at); };
  auto gaps = [&](std::int64_t stream) { return rows.gaps(stream); };
  const auto first = open(1'000'000);
  SECTION("inside a stream: one gap, once") {
    CHECK(catalog::record_refused_gap(tx, first, 2'000'000, 2'400'000, "rate_exceeded", "10 frames"));
    CHECK_FALSE(catalog::record_refused_gap(tx, first, 2'000'000, 2'400'000, "rate_exceeded", "10 frames"));
    CHECK(catalog::record_refused_gap(tx, first, 2'000'000, 2'400'000, "deadline_missed", "late"));
    CHECK(gaps(first).size() == 2);
  }
  SECTION("refused at the end, resent in the next stream: the reconnect cuts the gap") {
    catalog::end_stream(tx, first, "interrupted", 3'000'000);
    CHECK(catalog::record_refused_gap(tx, first, 2'800'000, 3'000'000, "rate_exceeded", "5 frames"));
    CHECK_FALSE(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, 2'900'000));
    open(2'900'000);
    auto g = gaps(first);
    REQUIRE(g.size() == 1);
    CHECK(g[0][1].as<std::int64_t>() == 2'900'000);
  }
  SECTION("the next stream was opened first (the batcher commits later): the gap is cut as it goes in") {
    open(2'900'000);
    CHECK(catalog::record_refused_gap(tx, first, 2'800'000, 3'000'000, "rate_exceeded", "5 frames"));
    CHECK_FALSE(catalog::record_refused_gap(tx, first, 2'950'000, 3'000'000, "rate_exceeded", "resent"));
    auto g = gaps(first);
    REQUIRE(g.size() == 1);
    CHECK(g[0][0].as<std::int64_t>() == 2'800'000);
    CHECK(g[0][1].as<std::int64_t>() == 2'900'000);
  }
  SECTION("re-opened for a frame larger than its buffer: the next stream begins at the same instant") {
    // A live camera's capture clock: both streams start with the refused keyframe, and every frame
    // the first refused is in the second, so no gap is left (the order is (started_at_us, id)).
    const auto second = open(1'000'000);
    CHECK_FALSE(catalog::record_refused_gap(tx, first, 1'000'000, 1'160'000, "rate_exceeded", "4 frames"));
    CHECK(gaps(first).empty());
    // The later stream's own refusals are not cut by the earlier one.
    CHECK(catalog::record_refused_gap(tx, second, 1'500'000, 1'600'000, "rate_exceeded", "2 frames"));
    CHECK(gaps(second).size() == 1);
  }
}

TEST_CASE("reconnect and refused gaps are per track: another track's stream never makes or cuts a gap in this one",
          "[catalog][recording][gaps][track]") {
  CameraRows rows("track_gaps", "porch");
  auto& tx = rows.tx;
  const auto cam = rows.cam;
  const auto main_stream = rows.open(1'000'000);
  // The camera's sub stream and audio open while its main video records: no gap anywhere (the
  // main stream is still recording, and the other tracks have no previous stream).
  CHECK_FALSE(catalog::record_reconnect_gap(tx, cam, TrackRole::sub, MediaKind::video, 1'500'000));
  const auto sub_stream = rows.open(1'500'000, TrackRole::sub);
  CHECK_FALSE(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::audio, 1'600'000));
  const auto audio_stream = rows.open(1'600'000, TrackRole::main, MediaKind::audio);
  CHECK(
      tx.exec_params1("SELECT role || '/' || media_kind FROM streams WHERE id = $1", sub_stream)[0].as<std::string>() ==
      "sub/video");
  CHECK(tx.exec_params1("SELECT role || '/' || media_kind FROM streams WHERE id = $1", audio_stream)[0]
            .as<std::string>() == "main/audio");

  // The audio session ends and comes back: its own gap, none in the video.
  catalog::end_stream(tx, audio_stream, "interrupted", 2'000'000);
  CHECK(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::audio, 4'000'000));
  rows.open(4'000'000, TrackRole::main, MediaKind::audio);
  CHECK(rows.gaps(audio_stream).size() == 1);
  CHECK(rows.gaps(main_stream).empty());
  CHECK(rows.gaps(sub_stream).empty());

  // The main video ends; the sub stream (still recording) reconnecting must not gap the main one,
  // and the main one's refused frames are not cut where another track's stream began.
  catalog::end_stream(tx, main_stream, "interrupted", 5'000'000);
  CHECK(catalog::record_refused_gap(tx, main_stream, 4'800'000, 5'000'000, "rate_exceeded", "5 frames"));
  REQUIRE(rows.gaps(main_stream).size() == 1);
  CHECK(rows.gaps(main_stream)[0][1].as<std::int64_t>() == 5'000'000);
  catalog::end_stream(tx, sub_stream, "interrupted", 5'500'000);
  CHECK(catalog::record_reconnect_gap(tx, cam, TrackRole::sub, MediaKind::video, 7'000'000));
  rows.open(7'000'000, TrackRole::sub);
  CHECK(rows.gaps(main_stream).size() == 1);  // only its refused frames
  auto sub_gaps = rows.gaps(sub_stream);
  REQUIRE(sub_gaps.size() == 1);
  CHECK(sub_gaps[0][0].as<std::int64_t>() == 1'500'000);  // no segment: from its start
  CHECK(sub_gaps[0][1].as<std::int64_t>() == 7'000'000);
  CHECK(sub_gaps[0][2].as<std::string>() == "source_lost");
  // The main video comes back: its hole is its own, from its end.
  CHECK(catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, 8'000'000));
  auto main_gaps = rows.gaps(main_stream);
  REQUIRE(main_gaps.size() == 2);
  CHECK(main_gaps[1][2].as<std::string>() == "source_lost");
  CHECK(main_gaps[1][1].as<std::int64_t>() == 8'000'000);
}
