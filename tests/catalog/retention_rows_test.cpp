// Retention's catalog step against a real PostgreSQL: segments chosen from an earlier view are
// marked 'deleting' only if no evidence lock covers them now — a lock taken between retention's
// choice and its marking holds — and the hole left before kept recording is a 'retention' gap.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/evidence_locks.hpp"
#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/retention_rows.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/simulated_disk.hpp"
#include "storage/volume.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

constexpr std::int64_t S = 1'000'000;
constexpr std::int64_t T0 = 1'767'225'600 * S;  // 2026-01-01T00:00:00Z

}  // namespace

TEST_CASE("retention marks only segments no evidence lock covers, re-checked when marking", "[catalog][retention]") {
  const std::string db = test::shared_cluster().create_database("retention_rows");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  storage::VirtualClock clock;
  storage::SimulatedDisk disk(clock, {.size_bytes = 16 << 20});
  REQUIRE(storage::Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
  auto vol = *storage::Volume::open(disk);
  std::int64_t stream = 0;
  std::vector<std::uint64_t> ids;
  {
    pqxx::work tx(conn);
    const auto volume_id = catalog::register_volume(tx, *vol, "sim:0");
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
    // Four 10 s segments: [0,10) [10,20) [20,30) [30,40).
    for (int i = 0; i < 4; ++i) {
      ids.push_back(tx.exec_params1("INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, data_bytes, "
                                    "frame_count, checksum_crc32c, closed_at_us) "
                                    "VALUES ($1, $2, 'closed', $3, $4, 1000, 1, 0, $4) RETURNING id",
                                    stream, volume_id, T0 + i * 10 * S, T0 + (i + 1) * 10 * S)[0]
                        .as<std::uint64_t>());
    }
    tx.commit();
  }
  // Retention chose the three oldest (its view had no lock); then an operator locks [12 s, 15 s).
  const std::vector<std::uint64_t> chosen{ids[0], ids[1], ids[2]};
  {
    pqxx::work tx(conn);
    catalog::add_evidence_lock(tx, {.stream_id = stream,
                                    .start_us = T0 + 12 * S,
                                    .end_us = T0 + 15 * S,
                                    .reason = "incident 42",
                                    .locked_by = "test"});
    tx.commit();
  }
  std::vector<std::uint64_t> marked;
  {
    pqxx::work tx(conn);
    marked = catalog::mark_deleting(tx, chosen);
    tx.commit();
  }
  CHECK(marked == std::vector<std::uint64_t>{ids[0], ids[2]});
  {
    pqxx::nontransaction q(conn);
    CHECK(q.exec_params1("SELECT state FROM segments WHERE id = $1", static_cast<std::int64_t>(ids[1]))[0]
              .as<std::string>() == "closed");
    // [20,30) leaves a hole after the kept, locked [10,20): a retention gap; [0,10) only moves the start.
    auto gaps =
        q.exec_params("SELECT start_us, end_us, reason FROM gaps WHERE stream_id = $1 ORDER BY start_us", stream);
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0][0].as<std::int64_t>() == T0 + 20 * S);
    CHECK(gaps[0][2].as<std::string>() == "retention");
  }
  // Once released, the lock no longer keeps it.
  {
    pqxx::work tx(conn);
    const auto lock_id = tx.exec1("SELECT id FROM evidence_locks")[0].as<std::int64_t>();
    REQUIRE(catalog::remove_evidence_lock(tx, lock_id));
    tx.commit();
  }
  pqxx::work tx(conn);
  CHECK(catalog::mark_deleting(tx, {ids[1]}) == std::vector<std::uint64_t>{ids[1]});
}
