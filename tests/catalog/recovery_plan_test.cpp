// Reconciling a crashed volume with the catalog, on a simulated disk and a real PostgreSQL:
// the open segment is closed where the volume says it ends and a crash gap recorded; an
// orphan on disk is adopted with its extents and GOP index; an orphan of a stream the catalog
// lacks is kept, never reclaimed (reconcile_volume rebuilds its stream: stream_rebuild_test); a catalog segment missing from the volume is marked damaged with a gap; one that
// cannot be read is kept (damaged, with a gap) and restored once it reads again.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>
#include <set>

#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/recovery_plan.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/retention.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/segment_fixture.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;
using namespace vigil::storage;

namespace {

std::int64_t add_stream(pqxx::work& tx, std::int64_t camera) {
  return tx
      .exec_params1(
          "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES ($1, 'h264', 4000000) RETURNING id",
          camera)[0]
      .as<std::int64_t>();
}

// A 4 MiB volume of 64 KiB extents in the catalog, on its own disk row; returns the volume's id.
std::int64_t add_volume(pqxx::work& tx, const std::string& path) {
  const auto disk =
      tx.exec_params1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('n1', $1, 4194304) RETURNING id",
                      path)[0]
          .as<std::int64_t>();
  return tx
      .exec_params1(
          "INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes) VALUES ($1, $2, 4194304, 65536) "
          "RETURNING id",
          disk, path)[0]
      .as<std::int64_t>();
}

}  // namespace

TEST_CASE("recovery reconciles a volume and the catalog in both directions", "[recovery][catalog]") {
  pqxx::connection conn(test::shared_cluster().create_database("recovery_plan"));
  catalog::migrate(conn);
  std::int64_t stream = 0, other = 0, volume_id = 0;
  {
    pqxx::work tx(conn);
    auto cam = tx.exec1("INSERT INTO cameras (name) VALUES ('gate') RETURNING id")[0].as<std::int64_t>();
    stream = add_stream(tx, cam);
    other = add_stream(tx, cam);
    volume_id = add_volume(tx, "sim:0");
    // 10: open when the crash came; 11: closed; 12: closed but gone from the volume.
    for (auto [id, state] : {std::pair{10, "open"}, {11, "closed"}, {12, "closed"}}) {
      tx.exec_params0(
          "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, checksum_crc32c, closed_at_us) "
          "VALUES ($1, $2, $3, $4, 3600, 7200, CASE WHEN $4 = 'closed' THEN 0 END, "
          "CASE WHEN $4 = 'closed' THEN 1 END)",
          id, id == 11 ? other : stream, volume_id, std::string(state));
    }
    tx.commit();
  }

  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 4 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  test::write_script_segment(*vol, 10, static_cast<std::uint64_t>(stream), 30);  // the open one
  test::write_script_segment(*vol, 11, static_cast<std::uint64_t>(other), 10);
  test::write_script_segment(*vol, 13, static_cast<std::uint64_t>(stream), 12);  // orphan on disk, known stream
  test::write_script_segment(*vol, 14, 999, 5);                                  // orphan on disk, unknown stream
  disk.crash();
  vol = *Volume::open(disk);

  const std::int64_t restart_us = 10'000'000;
  pqxx::work tx(conn);
  auto plan =
      catalog::plan_recovery(catalog::scan_volume(*vol), catalog::catalog_segments(tx, volume_id), {stream, other});
  REQUIRE(plan.close.size() == 1);
  CHECK(plan.close[0].segment_id == 10);
  REQUIRE(plan.adopt.size() == 1);
  CHECK(plan.adopt[0].segment_id == 13);
  CHECK(plan.reclaim.empty());
  CHECK(plan.kept == std::vector<std::uint64_t>{14});
  REQUIRE(plan.lost.size() == 1);
  CHECK(plan.lost[0].id == 12);
  catalog::apply_recovery_plan(tx, volume_id, plan, restart_us);
  tx.commit();
  for (auto id : plan.reclaim) REQUIRE(reclaim_segment(*vol, id).has_value());

  {
    pqxx::nontransaction q(conn);
    const std::int64_t end10 = 30 * 3600 + 3600;  // pts (µs) + duration of frame 30
    auto s10 = q.exec1("SELECT state, end_us, frame_count FROM segments WHERE id = 10");
    CHECK(s10[0].as<std::string>() == "closed");
    CHECK(s10[1].as<std::int64_t>() == end10);
    CHECK(s10[2].as<std::int64_t>() == 30);
    auto gap =
        q.exec_params1("SELECT start_us, end_us FROM gaps WHERE stream_id = $1 AND reason = 'crash_recovery'", stream);
    CHECK(gap[0].as<std::int64_t>() == end10);
    CHECK(gap[1].as<std::int64_t>() == restart_us);
    CHECK(q.exec1("SELECT count(*) FROM segment_extents WHERE segment_id = 13")[0].as<int>() >= 1);
    CHECK(q.exec1("SELECT gop_count FROM gop_index WHERE segment_id = 13")[0].as<int>() == 2);
    CHECK(q.exec1("SELECT state FROM segments WHERE id = 12")[0].as<std::string>() == "damaged");
    CHECK(q.exec1("SELECT count(*) FROM gaps WHERE reason = 'corruption'")[0].as<int>() == 1);
    CHECK(vol->segments().count(14) == 1);  // video of a stream the catalog lacks is never reclaimed
  }

  // A second pass finds nothing left to do.
  pqxx::work again(conn);
  auto second =
      catalog::plan_recovery(catalog::scan_volume(*vol), catalog::catalog_segments(again, volume_id), {stream, other});
  CHECK(second.close.empty());
  CHECK(second.adopt.empty());
  CHECK(second.reclaim.empty());
  CHECK(second.lost.empty());
}

TEST_CASE("recovery keeps what it cannot read, and restores it once it reads again", "[recovery][catalog]") {
  pqxx::connection conn(test::shared_cluster().create_database("recovery_keep"));
  catalog::migrate(conn);
  std::int64_t stream = 0, volume_id = 0;
  {
    pqxx::work tx(conn);
    auto cam = tx.exec1("INSERT INTO cameras (name) VALUES ('yard') RETURNING id")[0].as<std::int64_t>();
    stream = add_stream(tx, cam);
    volume_id = add_volume(tx, "sim:1");
    tx.exec_params0(
        "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, frame_count, checksum_crc32c, "
        "closed_at_us) VALUES (20, $1, $2, 'closed', 3600, 7200, 10, 0, 1)",
        stream, volume_id);
    tx.commit();
  }
  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 4 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  test::write_script_segment(*vol, 20, static_cast<std::uint64_t>(stream), 10);
  const std::set<std::int64_t> streams{stream};

  // A read error at start (a cable, a controller): the segment is damaged with a gap, and kept.
  disk.fail_io(1, errc::io_error);
  {
    pqxx::work tx(conn);
    auto plan = catalog::plan_recovery(catalog::scan_volume(*vol), catalog::catalog_segments(tx, volume_id), streams);
    CHECK(plan.reclaim.empty());
    CHECK(plan.kept == std::vector<std::uint64_t>{20});
    REQUIRE(plan.lost.size() == 1);
    catalog::apply_recovery_plan(tx, volume_id, plan, 10'000'000);
    tx.commit();
  }
  CHECK(vol->segments().count(20) == 1);
  {
    pqxx::nontransaction q(conn);
    CHECK(q.exec1("SELECT state FROM segments WHERE id = 20")[0].as<std::string>() == "damaged");
    CHECK(
        q.exec1("SELECT count(*) FROM gaps WHERE reason = 'corruption' AND detail LIKE '%unreadable%'")[0].as<int>() ==
        1);
  }
  // The next start reads it: closed again, its frames back, the gap gone.
  {
    pqxx::work tx(conn);
    auto plan = catalog::plan_recovery(catalog::scan_volume(*vol), catalog::catalog_segments(tx, volume_id), streams);
    REQUIRE(plan.restore.size() == 1);
    CHECK(plan.kept.empty());
    catalog::apply_recovery_plan(tx, volume_id, plan, 20'000'000);
    tx.commit();
  }
  {
    pqxx::nontransaction q(conn);
    CHECK(q.exec1("SELECT state FROM segments WHERE id = 20")[0].as<std::string>() == "closed");
    CHECK(q.exec1("SELECT frame_count FROM segments WHERE id = 20")[0].as<int>() == 10);
    CHECK(q.exec1("SELECT count(*) FROM gaps WHERE reason = 'corruption'")[0].as<int>() == 0);
  }
  // An operator's repair frees what cannot be read.
  disk.fail_io(1, errc::io_error);
  pqxx::work tx(conn);
  auto repair = catalog::plan_recovery(catalog::scan_volume(*vol), catalog::catalog_segments(tx, volume_id), streams,
                                       /*reclaim_unreadable=*/true);
  CHECK(repair.reclaim == std::vector<std::uint64_t>{20});
}

TEST_CASE("damage in a closed segment: start-up trusts its row, fsck's full scan finds it and records the gap",
          "[recovery][catalog]") {
  pqxx::connection conn(test::shared_cluster().create_database("recovery_resync"));
  catalog::migrate(conn);
  std::int64_t stream = 0, volume_id = 0;
  {
    pqxx::work tx(conn);
    auto cam = tx.exec1("INSERT INTO cameras (name) VALUES ('ramp') RETURNING id")[0].as<std::int64_t>();
    stream = add_stream(tx, cam);
    volume_id = add_volume(tx, "sim:2");
    tx.commit();
  }
  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 4 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  const auto seg = test::write_script_segment(*vol, 30, static_cast<std::uint64_t>(stream), 40);
  {
    pqxx::work tx(conn);
    std::vector<std::uint64_t> offsets;
    for (auto e : seg.extents) offsets.push_back(vol->extent_offset(e));
    catalog::record_closed_segment(tx, volume_id, seg, offsets, vol->extent_bytes(), 1);
    tx.commit();
  }
  // Frame 20's payload rots on the disk after the segment was closed.
  std::uint64_t ordinal = 0, last = 0;
  std::optional<std::uint64_t> at;
  REQUIRE(recover_segment(*vol, 30, [&](const ScannedRecord& r) {
            if (r.offset < last) ++ordinal;
            last = r.offset;
            if (r.header.sequence == 20)
              at = vol->extent_offset(seg.extents[ordinal]) + r.offset + kRecordHeaderBytes + 7;
          }).has_value());
  REQUIRE(at.has_value());
  AlignedBuffer b(4096);
  REQUIRE(read_sync(disk, *at / 4096 * 4096, b.span()).has_value());
  b.data()[*at % 4096] ^= std::byte{1};
  REQUIRE(write_sync(disk, *at / 4096 * 4096, b.span(), true).has_value());

  // Start-up: the closed row matches the volume's extents; the segment is not read at all.
  auto start = catalog::reconcile_volume(conn, *vol, volume_id, 10'000'000);
  CHECK(start.trusted == 1);
  CHECK(start.scanned == 0);
  // `vigil fsck --repair`: the full scan finds the damage; the row loses exactly frame 20, and a
  // corruption gap covers exactly its time. Everything after it stays in the segment.
  auto repair = catalog::reconcile_volume(conn, *vol, volume_id, 20'000'000, {.full_scan = true});
  REQUIRE(repair.plan.refresh.size() == 1);
  {
    pqxx::nontransaction q(conn);
    CHECK(q.exec1("SELECT frame_count FROM segments WHERE id = 30")[0].as<int>() == 39);
    CHECK(q.exec1("SELECT end_us FROM segments WHERE id = 30")[0].as<std::int64_t>() == seg.end_pts);
    auto gap = q.exec1("SELECT start_us, end_us, detail FROM gaps WHERE reason = 'corruption'");
    CHECK(gap[0].as<std::int64_t>() == 20 * 3600);  // the end of frame 19
    CHECK(gap[1].as<std::int64_t>() == 21 * 3600);  // frame 21
    CHECK(gap[2].as<std::string>().find("frames 20-20") != std::string::npos);
  }
  // A second repair finds nothing new and adds no second gap.
  catalog::reconcile_volume(conn, *vol, volume_id, 30'000'000, {.full_scan = true});
  pqxx::nontransaction q(conn);
  CHECK(q.exec1("SELECT count(*) FROM gaps WHERE reason = 'corruption'")[0].as<int>() == 1);
}
