// The catalog half of `vigil fsck --db` and the evidence-lock table, against a real PostgreSQL
// and a volume on a simulated disk: after reconcile the two agree; then each kind of
// disagreement is planted and found by check_against_catalog, and repaired by reconcile_volume.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/evidence_locks.hpp"
#include "catalog/migrator.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/retention.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/segment_fixture.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;
using namespace vigil::storage;
using Kind = catalog::CatalogProblem::Kind;

namespace {

std::int64_t make_stream(pqxx::connection& conn, const std::string& camera) {
  pqxx::work tx(conn);
  auto cam = tx.exec_params1("INSERT INTO cameras (name) VALUES ($1) RETURNING id", camera)[0].as<std::int64_t>();
  auto id = tx.exec_params1(
                  "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES ($1, 'h264', 4000000) "
                  "RETURNING id",
                  cam)[0]
                .as<std::int64_t>();
  tx.commit();
  return id;
}

std::vector<catalog::CatalogProblem> check(pqxx::connection& conn, Volume& vol, std::int64_t volume_id) {
  pqxx::work tx(conn);
  return catalog::check_against_catalog(tx, catalog::scan_volume(vol), volume_id);
}

}  // namespace

TEST_CASE("fsck's catalog check finds each disagreement and repair resolves it", "[fsck][catalog]") {
  pqxx::connection conn(test::shared_cluster().create_database("volume_check"));
  catalog::migrate(conn);
  const auto stream = make_stream(conn, "lobby");

  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 4 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  for (std::uint64_t id = 1; id <= 3; ++id)
    test::write_script_segment(*vol, id, static_cast<std::uint64_t>(stream), 20);

  std::int64_t volume_id = 0;
  {
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, "sim:0");
    CHECK(catalog::register_volume(tx, *vol, "sim:0") == volume_id);  // idempotent, by uuid
    tx.commit();
  }
  // First sight: every segment is an orphan on disk of a known stream.
  auto first = check(conn, *vol, volume_id);
  REQUIRE(first.size() == 3);
  for (const auto& p : first) {
    CHECK(p.kind == Kind::orphan_on_disk);
    CHECK(p.serious());
  }
  auto r = catalog::reconcile_volume(conn, *vol, volume_id, 50'000'000);
  CHECK(r.plan.adopt.size() == 3);
  CHECK(check(conn, *vol, volume_id).empty());

  // A closed row with fewer frames than the volume holds is not a disagreement: the rest is a failed
  // batch that landed in part and was never acknowledged; the row stands and readers stop at it.
  {
    pqxx::work tx(conn);
    tx.exec0("UPDATE segments SET frame_count = 7 WHERE id = 2");
    tx.commit();
  }
  CHECK(check(conn, *vol, volume_id).empty());
  // Plant one of each: a row deleted, a count wrong (more than the volume holds), a row pointing at nothing.
  {
    pqxx::work tx(conn);
    tx.exec0("DELETE FROM segments WHERE id = 1");
    tx.exec0("UPDATE segments SET frame_count = 25 WHERE id = 2");
    tx.exec_params0(
        "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, checksum_crc32c, "
        "closed_at_us) VALUES (99, $1, $2, 'closed', 1000, 2000, 0, 1)",
        stream, volume_id);
    tx.commit();
  }
  auto found = check(conn, *vol, volume_id);
  std::map<Kind, std::int64_t> kinds;
  for (const auto& p : found) {
    INFO(p.describe());
    CHECK(p.serious());
    kinds[p.kind] = p.segment_id;
  }
  CHECK(found.size() == 3);
  CHECK(kinds[Kind::orphan_on_disk] == 1);
  CHECK(kinds[Kind::mismatch] == 2);
  CHECK(kinds[Kind::missing_data] == 99);
  CHECK(found[0].describe().find("segment") != std::string::npos);

  // What `vigil fsck --repair` runs: a full scan (start-up trusts segment 2's closed row, whose
  // extents still match, and would not see its wrong count).
  catalog::reconcile_volume(conn, *vol, volume_id, 60'000'000, {.reclaim_unreadable = true, .full_scan = true});
  CHECK(check(conn, *vol, volume_id).empty());
  pqxx::nontransaction q(conn);
  CHECK(q.exec1("SELECT frame_count FROM segments WHERE id = 2")[0].as<int>() == 20);
  CHECK(q.exec1("SELECT state FROM segments WHERE id = 99")[0].as<std::string>() == "damaged");
  CHECK(q.exec1("SELECT count(*) FROM gaps WHERE reason = 'corruption'")[0].as<int>() == 1);
}

TEST_CASE("evidence locks live in the catalog and keep retention away", "[retention][catalog]") {
  pqxx::connection conn(test::shared_cluster().create_database("evidence_locks"));
  catalog::migrate(conn);
  const auto stream = make_stream(conn, "yard");
  const auto elsewhere = make_stream(conn, "dock");

  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 4 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  test::write_script_segment(*vol, 1, static_cast<std::uint64_t>(stream), 10);
  std::int64_t volume_id = 0;
  {
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, "sim:0");
    tx.commit();
  }
  catalog::reconcile_volume(conn, *vol, volume_id, 1);

  std::int64_t lock = 0;
  {
    pqxx::work tx(conn);
    CHECK_THROWS_AS(catalog::add_evidence_lock(tx, {.stream_id = stream, .start_us = 5, .end_us = 5, .reason = "x"}),
                    std::invalid_argument);
    CHECK_THROWS_AS(catalog::add_evidence_lock(tx, {.stream_id = stream, .start_us = 0, .end_us = 5}),
                    std::invalid_argument);
    lock = catalog::add_evidence_lock(tx, {.stream_id = stream,
                                           .start_us = 0,
                                           .end_us = 10'000,
                                           .reason = "case 4711; it's evidence",
                                           .locked_by = "admin"});
    catalog::add_evidence_lock(tx, {.stream_id = elsewhere, .start_us = 0, .end_us = 10'000, .reason = "other"});
    tx.commit();
  }
  std::vector<EvidenceLock> locks;
  {
    pqxx::work tx(conn);
    locks = catalog::active_evidence_locks(tx, volume_id);
    CHECK(catalog::active_evidence_locks(tx).size() == 2);
  }
  REQUIRE(locks.size() == 1);  // the other stream has nothing on this volume
  CHECK(locks[0].stream_id == static_cast<std::uint64_t>(stream));

  // Retention under pressure takes nothing locked.
  RetentionInput in{.closed = {{.segment_id = 1,
                                .stream_id = static_cast<std::uint64_t>(stream),
                                .start_us = 3600,
                                .end_us = 40'000,
                                .extent_count = 1}},
                    .locks = locks,
                    .free_extents = 0,
                    .extent_bytes = vol->extent_bytes(),
                    .admitted_ingest = Rate::from_bps(8e6),
                    .now_us = 100'000'000};
  CHECK(choose_reclaim({}, in).empty());

  pqxx::work tx(conn);
  CHECK(catalog::remove_evidence_lock(tx, lock));
  CHECK_FALSE(catalog::remove_evidence_lock(tx, lock));  // already released
  CHECK(catalog::active_evidence_locks(tx, volume_id).empty());
  in.locks = catalog::active_evidence_locks(tx, volume_id);
  CHECK(choose_reclaim({}, in) == std::vector<std::uint64_t>{1});
  CHECK(tx.exec_params1("SELECT unlocked_at_us IS NOT NULL FROM evidence_locks WHERE id = $1", lock)[0].as<bool>());
}
