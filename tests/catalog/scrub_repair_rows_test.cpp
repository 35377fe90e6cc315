// The scrubber's repair from an archive copy, catalog side, against a real PostgreSQL
// (docs/scrubber.md, "Repair"): a damaged closed segment with a verified 's3' copy is marked
// 'deleting' and loses its own scrub 'corruption' gaps in one step, then finish_deleting keeps it
// as 'archived' without extents; one without a copy, or no longer closed, is left as it is, gap
// and all. The copier never offers a segment the scrubber found damaged, nor counts it as lag.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/archive_rows.hpp"
#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/retention_rows.hpp"
#include "catalog/scrub_rows.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/simulated_disk.hpp"
#include "storage/volume.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

constexpr std::int64_t S = 1'000'000;
constexpr std::int64_t T0 = 1'767'225'600 * S;  // 2026-01-01T00:00:00Z

}  // namespace

TEST_CASE("a damaged segment with a verified copy is served from it and its scrub gaps go; without one, nothing",
          "[catalog][scrub]") {
  const std::string db = test::shared_cluster().create_database("scrub_repair_rows");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  storage::VirtualClock clock;
  storage::SimulatedDisk disk(clock, {.size_bytes = 16 << 20});
  REQUIRE(storage::Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
  auto vol = *storage::Volume::open(disk);
  std::int64_t stream = 0, volume_id = 0;
  // [0,10) copied and damaged, [10,20) damaged, no copy, [20,30) intact, [30,40) copied and damaged
  std::vector<std::uint64_t> ids;
  {
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, "sim:0");
    const auto disk_id = tx.exec_params1("SELECT disk_id FROM volumes WHERE id = $1", volume_id)[0].as<std::int64_t>();
    const auto cam = catalog::ensure_camera(tx, "gate");
    stream = catalog::open_stream(tx, {.camera_id = cam,
                                       .codec = "h264",
                                       .extradata = "",
                                       .width = 640,
                                       .height = 360,
                                       .declared_rate_bps = 1'000'000,
                                       .admitted_rate_bps = 1'000'000,
                                       .disk_id = disk_id,
                                       .started_at_us = T0});
    for (int i = 0; i < 4; ++i) {
      const auto id = tx.exec_params1(
                            "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, data_bytes, "
                            "frame_count, checksum_crc32c, closed_at_us) "
                            "VALUES ($1, $2, 'closed', $3, $4, 1000, 1, 12345, $4) RETURNING id",
                            stream, volume_id, T0 + i * 10 * S, T0 + (i + 1) * 10 * S)[0]
                          .as<std::uint64_t>();
      ids.push_back(id);
      tx.exec_params0(
          "INSERT INTO segment_extents (segment_id, ordinal, volume_offset_bytes, length_bytes) VALUES ($1, 0, $2, $3)",
          static_cast<std::int64_t>(id), (i + 1) * (1 << 20), 1 << 20);
    }
    REQUIRE(catalog::record_segment_copy(tx, {.segment_id = ids[0],
                                              .bucket = "vigil-archive",
                                              .object_key = "gate/main/1-1.vseg",
                                              .etag = "\"e\"",
                                              .bytes = 1000}));
    REQUIRE(catalog::record_segment_copy(tx, {.segment_id = ids[3],
                                              .bucket = "vigil-archive",
                                              .object_key = "gate/main/1-4.vseg",
                                              .etag = "\"e\"",
                                              .bytes = 1000}));
    CHECK(catalog::record_corruption_gap(tx, stream, T0 + 32 * S, T0 + 33 * S,
                                         catalog::corruption_gap_detail(ids[3], "/v at offset 4", "bad_crc")));
    // The scrubber's findings: two runs in [0,10), one in [10,20); and a corruption gap of another
    // origin inside [0,10), which the repair does not touch.
    CHECK(catalog::record_corruption_gap(tx, stream, T0 + 2 * S, T0 + 3 * S,
                                         catalog::corruption_gap_detail(ids[0], "/v at offset 1", "bad_crc")));
    CHECK(catalog::record_corruption_gap(tx, stream, T0 + 6 * S, T0 + 7 * S,
                                         catalog::corruption_gap_detail(ids[0], "/v at offset 2", "bad_crc")));
    CHECK(catalog::record_corruption_gap(tx, stream, T0 + 12 * S, T0 + 13 * S,
                                         catalog::corruption_gap_detail(ids[1], "/v at offset 3", "bad_crc")));
    CHECK(catalog::record_corruption_gap(tx, stream, T0 + 8 * S, T0 + 9 * S, "playback: bad record"));
    tx.commit();
  }
  const auto state = [&](std::uint64_t id) {
    return pqxx::nontransaction(conn)
        .exec_params1("SELECT state FROM segments WHERE id = $1", static_cast<std::int64_t>(id))[0]
        .as<std::string>();
  };
  const auto gaps_in = [&](std::int64_t from_us, std::int64_t to_us) {
    return pqxx::nontransaction(conn)
        .exec_params1("SELECT count(*) FROM gaps WHERE stream_id = $1 AND start_us >= $2 AND end_us <= $3", stream,
                      from_us, to_us)[0]
        .as<int>();
  };

  // The copier offers neither the copied segment nor the damaged one; only the intact one counts as lag.
  {
    pqxx::work tx(conn);
    const auto targets = catalog::archive_targets(tx, volume_id, T0 + 3600 * S, 0, 10);
    REQUIRE(targets.size() == 1);
    CHECK(targets[0].segment.segment_id == ids[2]);
    CHECK(catalog::oldest_uncopied_closed_at_us(tx, volume_id) == T0 + 30 * S);  // [20,30) closed at its end
  }

  // No copy: nothing changes, the gap stays.
  {
    pqxx::work tx(conn);
    CHECK_FALSE(catalog::begin_archive_repair(tx, ids[1]).has_value());
    tx.commit();
  }
  CHECK(state(ids[1]) == "closed");
  CHECK(gaps_in(T0 + 10 * S, T0 + 20 * S) == 1);

  // A verified copy: 'deleting', its two scrub gaps gone, the other origin's gap kept.
  {
    pqxx::work tx(conn);
    const auto repair = catalog::begin_archive_repair(tx, ids[0]);
    REQUIRE(repair.has_value());
    CHECK(repair->bucket == "vigil-archive");
    CHECK(repair->object_key == "gate/main/1-1.vseg");
    CHECK(repair->start_us == T0);
    CHECK(repair->end_us == T0 + 10 * S);
    CHECK(repair->gaps_removed == 2);
    tx.commit();
  }
  CHECK(state(ids[0]) == "deleting");
  CHECK(gaps_in(T0, T0 + 10 * S) == 1);
  // Not again: it is no longer closed.
  {
    pqxx::work tx(conn);
    CHECK_FALSE(catalog::begin_archive_repair(tx, ids[0]).has_value());
  }
  // Once its extents are free: archived, read from the copy; no extents left.
  {
    pqxx::work tx(conn);
    catalog::finish_deleting(tx, {ids[0]});
    tx.commit();
  }
  CHECK(state(ids[0]) == "archived");
  CHECK(pqxx::nontransaction(conn)
            .exec_params1("SELECT count(*) FROM segment_extents WHERE segment_id = $1",
                          static_cast<std::int64_t>(ids[0]))[0]
            .as<int>() == 0);
  CHECK(state(ids[2]) == "closed");

  // Retention archiving a copied segment the scrubber found damaged (before the scrubber's repair
  // came to it): its copy is whole, so its scrub gap goes as well.
  {
    pqxx::work tx(conn);
    REQUIRE(catalog::mark_deleting(tx, {ids[3]}) == std::vector<std::uint64_t>{ids[3]});
    catalog::finish_deleting(tx, {ids[3]});
    tx.commit();
  }
  CHECK(state(ids[3]) == "archived");
  CHECK(gaps_in(T0 + 30 * S, T0 + 40 * S) == 0);
  CHECK(gaps_in(T0 + 10 * S, T0 + 20 * S) == 1);  // the uncopied one's stays
}
