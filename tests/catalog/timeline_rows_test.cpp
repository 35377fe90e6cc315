// The recordings timeline against a real PostgreSQL: runs merged across short holes and split
// at long ones, clipped to the range; gaps with reasons; per-day totals across midnight; the
// per-camera cap; cameras with nothing recorded; hostile camera names refused before SQL.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/timeline_rows.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/simulated_disk.hpp"
#include "storage/volume.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

constexpr std::int64_t S = 1'000'000;  // one second in microseconds
constexpr std::int64_t kDay = 86'400 * S;
constexpr std::int64_t T0 = 20'000 * kDay;  // a midnight (UTC), in 2024

struct Seeder {
  pqxx::work& tx;
  std::int64_t volume_id, disk_id;
  std::int64_t stream(const std::string& camera) {
    const auto cam = catalog::ensure_camera(tx, camera);
    return catalog::open_stream(tx, {.camera_id = cam,
                                     .codec = "h264",
                                     .extradata = "",
                                     .width = 640,
                                     .height = 360,
                                     .declared_rate_bps = 1'000'000,
                                     .admitted_rate_bps = 1'000'000,
                                     .disk_id = disk_id,
                                     .started_at_us = T0});
  }
  void segment(std::int64_t stream, std::int64_t start, std::int64_t end, std::int64_t bytes = 1000) {
    tx.exec_params0(
        "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count, "
        "checksum_crc32c, closed_at_us) VALUES ($1, $2, 'closed', $3, $4, $5, 1, 0, $4)",
        stream, volume_id, start, end, bytes);
  }
  void gap(std::int64_t stream, std::int64_t start, std::int64_t end, const std::string& reason) {
    tx.exec_params0("INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) VALUES ($1, $2, $3, $4, 'x')",
                    stream, start, end, reason);
  }
};

}  // namespace

TEST_CASE("the timeline merges short holes, splits at long ones, clips to the range, and says why",
          "[catalog][timeline]") {
  const std::string db = test::shared_cluster().create_database("timeline");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  storage::VirtualClock clock;
  storage::SimulatedDisk disk(clock, {.size_bytes = 16 << 20});
  REQUIRE(storage::Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
  auto vol = *storage::Volume::open(disk);
  {
    pqxx::work tx(conn);
    const auto volume_id = catalog::register_volume(tx, *vol, "sim:0");
    const auto disk_id = tx.exec_params1("SELECT disk_id FROM volumes WHERE id = $1", volume_id)[0].as<std::int64_t>();
    Seeder s{tx, volume_id, disk_id};
    const auto a = s.stream("gate-a");
    s.segment(a, T0, T0 + 10 * S);
    s.segment(a, T0 + 10 * S, T0 + 20 * S);          // contiguous
    s.segment(a, T0 + 20 * S + S / 2, T0 + 30 * S);  // a 0.5 s hole: same run at merge 1 s
    s.gap(a, T0 + 30 * S, T0 + 40 * S, "source_lost");
    const auto a2 = s.stream("gate-a");  // reconnected: a new stream of the same camera
    s.segment(a2, T0 + 40 * S, T0 + 50 * S, 5000);
    const auto b = s.stream("yard-b");
    s.segment(b, T0 - 5 * S, T0 + 5 * S);  // across midnight
    catalog::ensure_camera(tx, "idle-c");
    tx.commit();
  }
  auto query = [&](catalog::TimelineQuery q) {
    pqxx::read_transaction tx(conn);
    return catalog::timeline(tx, q);
  };

  SECTION("runs, gaps and days per camera") {
    const auto t = query({.cameras = {"gate-a", "yard-b", "idle-c"}, .from_us = T0 - kDay, .to_us = T0 + 45 * S});
    REQUIRE(t.size() == 3);
    const auto& a = t[0];
    REQUIRE(a.camera == "gate-a");
    REQUIRE(a.runs.size() == 2);
    CHECK(a.runs[0].start_us == T0);
    CHECK(a.runs[0].end_us == T0 + 30 * S);
    CHECK(a.runs[0].segments == 3);
    CHECK(a.runs[1].start_us == T0 + 40 * S);
    CHECK(a.runs[1].end_us == T0 + 45 * S);  // clipped to the range
    CHECK(a.runs[1].bytes == 5000);
    REQUIRE(a.gaps.size() == 1);
    CHECK(a.gaps[0].reason == "source_lost");
    CHECK(a.gaps[0].end_us - a.gaps[0].start_us == 10 * S);
    CHECK_FALSE(a.truncated);
    REQUIRE(a.days.size() == 1);
    CHECK(a.days[0].day_start_us == T0);
    CHECK(a.days[0].recorded_us == 35 * S);
    CHECK(a.days[0].gaps == 1);

    const auto& c = t[1];  // ordered by name: gate-a, idle-c, yard-b
    CHECK(c.camera == "idle-c");
    CHECK(c.runs.empty());
    CHECK(c.gaps.empty());
    CHECK(c.days.empty());

    const auto& b = t[2];
    REQUIRE(b.runs.size() == 1);
    REQUIRE(b.days.size() == 2);  // split at midnight
    CHECK(b.days[0].day_start_us == T0 - kDay);
    CHECK(b.days[0].recorded_us == 5 * S);
    CHECK(b.days[1].recorded_us == 5 * S);
  }
  SECTION("no merging: every hole breaks a run") {
    const auto t = query({.cameras = {"gate-a"}, .from_us = T0, .to_us = T0 + 60 * S, .merge_us = 0});
    REQUIRE(t.size() == 1);
    CHECK(t[0].runs.size() == 3);  // [0,20] (contiguous), [20.5,30], [40,50]
  }
  SECTION("the per-camera cap says it truncated") {
    const auto t = query({.cameras = {"gate-a"}, .from_us = T0, .to_us = T0 + 60 * S, .merge_us = 0, .max_items = 2});
    REQUIRE(t.size() == 1);
    CHECK(t[0].runs.size() == 2);
    CHECK(t[0].truncated);
  }
  SECTION("every camera when none is named; nothing outside the range") {
    const auto t = query({.from_us = T0 + 100 * S, .to_us = T0 + 200 * S});
    REQUIRE(t.size() == 3);
    for (const auto& cam : t) CHECK(cam.runs.empty());
  }
  SECTION("hostile or empty input is refused before any SQL") {
    CHECK_THROWS_AS(query({.cameras = {"a'); DROP TABLE cameras; --"}, .from_us = T0, .to_us = T0 + S}),
                    std::invalid_argument);
    CHECK_THROWS_AS(query({.cameras = {"x,y"}, .from_us = T0, .to_us = T0 + S}), std::invalid_argument);
    CHECK_THROWS_AS(query({.cameras = {"gate-a"}, .from_us = T0 + S, .to_us = T0}), std::invalid_argument);
    pqxx::read_transaction tx(conn);
    CHECK(tx.exec1("SELECT count(*) FROM cameras")[0].as<int>() == 3);
  }
  SECTION("an unknown camera is simply absent") {
    CHECK(query({.cameras = {"nobody"}, .from_us = T0, .to_us = T0 + S}).empty());
  }
}
