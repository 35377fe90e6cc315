// Fencing in the catalog and planned drains (catalog/pending_rows.hpp, catalog/drain_rows.hpp,
// schema 0013, docs/nodes.md) in a real PostgreSQL: a stream carries the epoch it was opened
// under; once its camera has moved on, a plain segment row of it is refused (SQLSTATE VF001) and
// the pending-row writer writes it marked instead (fenced_epoch: acknowledged footage stays
// findable) and ends the stream as 'fenced'. A drain hands each camera to another node, which
// records it beside its owner and becomes the owner, in one transaction, only once its first
// frames are in the catalog; a drain with nobody to take the cameras changes nothing.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/catalog_error.hpp"
#include "catalog/drain_rows.hpp"
#include "catalog/migrator.hpp"
#include "catalog/node_rows.hpp"
#include "catalog/pending_rows.hpp"
#include "catalog/recording_rows.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

std::int64_t scalar(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction q(c);
  const auto r = q.exec1(sql);
  return r[0].is_null() ? -1 : r[0].as<std::int64_t>();
}

std::string text(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction q(c);
  const auto r = q.exec1(sql);
  return r[0].is_null() ? std::string("NULL") : r[0].as<std::string>();
}

void exec(pqxx::connection& c, const std::string& sql) {
  pqxx::work tx(c);
  tx.exec0(sql);
  tx.commit();
}

void renew(pqxx::connection& c, const std::string& node) {
  pqxx::work tx(c);
  catalog::renew_lease(tx, node, catalog::new_incarnation(tx), 4000, 0);
  tx.commit();
}

// A disk and a volume of NODE: the volume's id.
std::int64_t volume_of(pqxx::connection& c, const std::string& node) {
  pqxx::work tx(c);
  const auto disk =
      tx.exec_params1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ($1, '/v/' || $1, 1) RETURNING id",
                      node)[0]
          .as<std::int64_t>();
  const auto vol = tx.exec_params1(
                         "INSERT INTO volumes (disk_id, volume_uuid, path, capacity_bytes, block_bytes, extent_bytes) "
                         "VALUES ($1, gen_random_uuid(), '/v/' || $2, 1048576, 4096, 65536) RETURNING id",
                         disk, node)[0]
                       .as<std::int64_t>();
  tx.commit();
  return vol;
}

std::int64_t disk_of_volume(pqxx::connection& c, std::int64_t volume) {
  return scalar(c, "SELECT disk_id FROM volumes WHERE id = " + std::to_string(volume));
}

// NODE opens a stream of camera CAMERA on VOLUME as the recording service does: the owner checked
// (throws catalog::Fenced) and the stream stamped with the epoch it opens under.
std::int64_t open_on(pqxx::connection& c, const std::string& node, const std::string& camera, std::int64_t volume,
                     std::int64_t started_us) {
  const auto disk = disk_of_volume(c, volume);
  pqxx::work tx(c);
  const auto cam = catalog::ensure_camera(tx, camera);
  const auto epoch = catalog::check_owner(tx, cam, node);
  catalog::record_reconnect_gap(tx, cam, TrackRole::main, MediaKind::video, started_us);
  const auto id = catalog::open_stream(tx, {.camera_id = cam,
                                            .codec = "h264",
                                            .declared_rate_bps = 1000,
                                            .admitted_rate_bps = 1000,
                                            .disk_id = disk,
                                            .started_at_us = started_us,
                                            .owner_epoch = epoch});
  tx.commit();
  return id;
}

// Segment N of STREAM on VOLUME, [START_US, END_US), open (a progress row) or closed.
catalog::PendingRow segment_row(std::int64_t volume, std::int64_t stream, int n, std::int64_t start_us,
                                std::int64_t end_us, bool open) {
  catalog::ClosedSegmentRow r;
  r.volume_id = volume;
  r.segment_id = (static_cast<std::uint64_t>(volume) << catalog::kSegmentIdVolumeShift) + static_cast<std::uint64_t>(n);
  r.stream_id = static_cast<std::uint64_t>(stream);
  r.start_us = start_us;
  r.end_us = end_us;
  r.data_bytes = 1000;
  r.frame_count = 10;
  r.extent_offsets = {0};
  r.extent_bytes = 65536;
  r.closed_at_us = end_us;
  if (open) return catalog::OpenSegmentRow{r};
  return r;
}

catalog::Applied write_row(pqxx::connection& c, const catalog::PendingRow& row) {
  pqxx::work tx(c);
  const auto out = catalog::apply(tx, row);
  tx.commit();
  return out;
}

}  // namespace

TEST_CASE("a stale epoch's segment rows are refused, and written marked so acknowledged footage stays findable",
          "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_fencing"));
  catalog::migrate(conn);
  {
    pqxx::work tx(conn);
    catalog::add_camera(tx, "cam0", "rtsp://127.0.0.1:1/cam");
    tx.commit();
  }
  renew(conn, "a");
  renew(conn, "b");
  const auto vol_a = volume_of(conn, "a");
  exec(conn, "UPDATE cameras SET owner_node = 'a', owner_epoch = nextval('camera_owner_epoch')");
  const auto epoch_a = scalar(conn, "SELECT owner_epoch FROM cameras");
  const auto stream = open_on(conn, "a", "cam0", vol_a, 1'000'000);
  CHECK(scalar(conn, "SELECT owner_epoch FROM streams WHERE id = " + std::to_string(stream)) == epoch_a);
  // Under the camera's epoch: written as ever.
  CHECK_FALSE(write_row(conn, segment_row(vol_a, stream, 1, 1'000'000, 2'000'000, false)).fenced_stream);
  CHECK_FALSE(write_row(conn, segment_row(vol_a, stream, 2, 2'000'000, 3'000'000, true)).fenced_stream);

  // The camera moves to b (a's lease lapsed: swept and claimed) while a still records it.
  exec(conn, "UPDATE cameras SET owner_node = 'b', owner_epoch = nextval('camera_owner_epoch')");
  {
    // A plain write of a's stream is refused, with the fencing error code; so is extending its open segment.
    pqxx::work tx(conn);
    try {
      tx.exec_params0(
          "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count) "
          "VALUES ($1, $2, $3, 'closed', 3000000, 4000000, 1, 1)",
          (vol_a << catalog::kSegmentIdVolumeShift) + 9, stream, vol_a);
      FAIL("a stale epoch's segment row was accepted");
    } catch (const pqxx::sql_error& e) {
      CHECK(e.sqlstate() == "VF001");
      CHECK(std::string(e.what()).find("stale owner epoch") != std::string::npos);
    }
  }
  {
    pqxx::work tx(conn);
    CHECK_THROWS_AS(tx.exec_params0("UPDATE segments SET end_us = end_us + 1 WHERE id = $1",
                                    (vol_a << catalog::kSegmentIdVolumeShift) + 2),
                    pqxx::sql_error);
  }
  // The pending-row writer: the open segment's next progress row and a new segment are written
  // marked with the stale epoch, the stream ends as fenced, and the node is told.
  const auto progressed = write_row(conn, segment_row(vol_a, stream, 2, 2'000'000, 3'500'000, true));
  REQUIRE(progressed.fenced_stream);
  CHECK(*progressed.fenced_stream == stream);
  CHECK(write_row(conn, segment_row(vol_a, stream, 3, 3'500'000, 4'000'000, false)).fenced_stream == stream);
  CHECK(text(conn, "SELECT state FROM streams WHERE id = " + std::to_string(stream)) == "fenced");
  CHECK(scalar(conn, "SELECT ended_at_us FROM streams WHERE id = " + std::to_string(stream)) == 4'000'000);
  // Nothing acknowledged is lost: every segment is there, the ones written after the move marked.
  CHECK(scalar(conn, "SELECT count(*) FROM segments WHERE stream_id = " + std::to_string(stream)) == 3);
  CHECK(scalar(conn, "SELECT count(*) FROM segments WHERE fenced_epoch IS NULL") == 1);
  CHECK(scalar(conn, "SELECT count(*) FROM segments WHERE fenced_epoch = " + std::to_string(epoch_a)) == 2);
  CHECK(scalar(conn, "SELECT max(end_us) FROM segments WHERE stream_id = " + std::to_string(stream)) == 4'000'000);
  // Its end, when the node stops the camera, does not undo the fencing.
  write_row(conn, catalog::StreamEndRow{.stream_id = stream, .state = "stopped", .ended_us = 4'100'000});
  CHECK(text(conn, "SELECT state FROM streams WHERE id = " + std::to_string(stream)) == "fenced");
  // Nor may a open a stream of it again.
  CHECK_THROWS_AS(open_on(conn, "a", "cam0", vol_a, 5'000'000), catalog::Fenced);

  // A stream a opened while cut off from the catalog (its row queued) lands after the move: it is
  // partition footage, opened under no epoch the camera has, and its segments land marked.
  const auto queued = 900'000;
  write_row(conn, catalog::StreamOpenRow{.stream_id = queued,
                                         .camera = "cam0",
                                         .codec = "h264",
                                         .declared_rate_bps = 1000,
                                         .admitted_rate_bps = 1000,
                                         .disk_id = disk_of_volume(conn, vol_a),
                                         .started_at_us = 4'000'000});
  CHECK(write_row(conn, segment_row(vol_a, queued, 4, 4'000'000, 5'000'000, false)).fenced_stream == queued);
  CHECK(scalar(conn, "SELECT count(*) FROM segments WHERE stream_id = 900000 AND fenced_epoch IS NOT NULL") == 1);

  // A camera nobody owns (pushed by `vigil record`) is never fenced, whatever happens to epochs.
  const auto pushed = open_on(conn, "a", "pushed", vol_a, 1'000'000);
  CHECK(scalar(conn, "SELECT owner_epoch FROM streams WHERE id = " + std::to_string(pushed)) == -1);  // NULL
  CHECK(scalar(conn, "SELECT nextval('camera_owner_epoch')") > 0);
  CHECK_FALSE(write_row(conn, segment_row(vol_a, pushed, 5, 1'000'000, 2'000'000, false)).fenced_stream);
}

TEST_CASE("a drain hands each camera over make-before-break, and with no other live node changes nothing",
          "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_drain"));
  catalog::migrate(conn);
  {
    pqxx::work tx(conn);
    for (int i = 0; i < 2; ++i) catalog::add_camera(tx, "cam" + std::to_string(i), "rtsp://127.0.0.1:1/cam");
    tx.commit();
  }
  renew(conn, "a");
  exec(conn, "UPDATE cameras SET owner_node = 'a', owner_epoch = nextval('camera_owner_epoch')");
  const auto vol_a = volume_of(conn, "a"), vol_b = volume_of(conn, "b");
  const auto a0 = open_on(conn, "a", "cam0", vol_a, 1'000'000);
  write_row(conn, segment_row(vol_a, a0, 1, 1'000'000, 2'000'000, true));

  // Nobody to drain to (b's lease expired): refused, nothing changed.
  exec(conn,
       "INSERT INTO nodes (node, incarnation, lease_until, heartbeat_at, joined_at) VALUES "
       "('b', gen_random_uuid(), clock_timestamp() - interval '1 s', clock_timestamp(), clock_timestamp())");
  {
    pqxx::work tx(conn);
    try {
      catalog::start_drain(tx, "a");
      FAIL("a drain with nobody to take the cameras was accepted");
    } catch (const catalog::CatalogError& e) {
      CHECK(e.kind() == catalog::CatalogError::Kind::conflict);
      CHECK(std::string(e.what()).find("no other live node") != std::string::npos);
    }
  }
  {
    pqxx::work tx(conn);
    CHECK_THROWS_AS(catalog::start_drain(tx, "nobody"), catalog::CatalogError);
  }
  CHECK(text(conn, "SELECT state FROM nodes WHERE node = 'a'") == "active");
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE owner_node = 'a' AND handover_node IS NULL") == 2);

  renew(conn, "b");
  {
    pqxx::work tx(conn);
    const auto started = catalog::start_drain(tx, "a");
    tx.commit();
    CHECK(started.state == "draining");
    CHECK(started.cameras == 2);
  }
  exec(conn, "INSERT INTO cameras (name, url) VALUES ('new', 'rtsp://127.0.0.1:1/new')");
  {
    pqxx::work tx(conn);
    CHECK(catalog::claim_quota(tx, "a") == 0);  // a draining node takes no new camera
    CHECK(catalog::handover_quota(tx, "a") == 0);
    CHECK(catalog::claim_quota(tx, "b") == 1);
    CHECK(catalog::handover_quota(tx, "b") == 2);
    const auto taken = catalog::claim_handovers(tx, "b", catalog::handover_quota(tx, "b"));
    REQUIRE(taken.size() == 2);
    // b records them beside a, under the epochs it will own them by; a still owns them.
    const auto owned = catalog::owned_cameras(tx, "b");
    CHECK(owned.at("cam0") == taken[0].epoch);
    CHECK(owned.at("cam1") == taken[1].epoch);
    CHECK(catalog::owned_cameras(tx, "a").size() == 2);
    CHECK(catalog::complete_handovers(tx, "b").empty());  // no frame of b's in the catalog yet
    tx.commit();
  }
  const auto h0 = scalar(conn, "SELECT handover_epoch FROM cameras WHERE name = 'cam0'");
  const auto b0 = open_on(conn, "b", "cam0", vol_b, 1'500'000);
  CHECK(scalar(conn, "SELECT owner_epoch FROM streams WHERE id = " + std::to_string(b0)) == h0);
  // Both record during the overlap: neither is fenced.
  CHECK_FALSE(write_row(conn, segment_row(vol_b, b0, 1, 1'500'000, 2'000'000, true)).fenced_stream);
  CHECK_FALSE(write_row(conn, segment_row(vol_a, a0, 1, 1'000'000, 2'200'000, true)).fenced_stream);
  {
    pqxx::work tx(conn);
    const auto moved = catalog::complete_handovers(tx, "b");
    tx.commit();
    REQUIRE(moved.size() == 1);  // cam0 only: b has no frame of cam1 yet
    CHECK(moved[0].name == "cam0");
    CHECK(moved[0].from_node == "a");
    CHECK(moved[0].epoch == h0);
  }
  CHECK(text(conn, "SELECT owner_node FROM cameras WHERE name = 'cam0'") == "b");
  CHECK(scalar(conn, "SELECT owner_epoch FROM cameras WHERE name = 'cam0'") == h0);
  // a's stream's tail, landing after the move, is handed over, not fenced.
  CHECK(scalar(conn, "SELECT owner_epoch FROM streams WHERE id = " + std::to_string(a0)) == h0);
  CHECK_FALSE(write_row(conn, segment_row(vol_a, a0, 1, 1'000'000, 2'400'000, false)).fenced_stream);
  write_row(conn, catalog::StreamEndRow{.stream_id = a0, .state = "stopped", .ended_us = 2'400'000});
  CHECK(text(conn, "SELECT state FROM streams WHERE id = " + std::to_string(a0)) == "stopped");
  CHECK(scalar(conn, "SELECT count(*) FROM segments WHERE fenced_epoch IS NOT NULL") == 0);
  // No gap: b's run began before a's ended.
  CHECK(scalar(conn, "SELECT count(*) FROM gaps") == 0);
  CHECK(text(conn, "SELECT state FROM nodes WHERE node = 'a'") == "draining");

  const auto b1 = open_on(conn, "b", "cam1", vol_b, 1'500'000);
  write_row(conn, segment_row(vol_b, b1, 2, 1'500'000, 2'000'000, true));
  {
    pqxx::work tx(conn);
    CHECK(catalog::complete_handovers(tx, "b").size() == 1);
    tx.commit();
  }
  CHECK(text(conn, "SELECT state FROM nodes WHERE node = 'a'") == "drained");
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE owner_node = 'b'") == 2);
  {
    pqxx::work tx(conn);
    const auto nodes = catalog::list_nodes(tx);
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].node == "a");
    CHECK(nodes[0].state == "drained");
    CHECK(nodes[0].cameras == 0);
    CHECK(nodes[1].cameras == 2);
    CHECK(catalog::undrain(tx, "a") == 0);
    tx.commit();
  }
  CHECK(text(conn, "SELECT state FROM nodes WHERE node = 'a'") == "active");
}

TEST_CASE("undrain cancels handovers in progress; a handover its node cannot admit goes back to the drain",
          "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_undrain"));
  catalog::migrate(conn);
  {
    pqxx::work tx(conn);
    catalog::add_camera(tx, "cam0", "rtsp://127.0.0.1:1/cam");
    tx.commit();
  }
  renew(conn, "a");
  renew(conn, "b");
  exec(conn, "UPDATE cameras SET owner_node = 'a', owner_epoch = nextval('camera_owner_epoch')");
  {
    pqxx::work tx(conn);
    catalog::start_drain(tx, "a");
    const auto taken = catalog::claim_handovers(tx, "b", 1);
    REQUIRE(taken.size() == 1);
    // b's admission refused it: given back to the drain (another node may take it), a keeps it.
    CHECK(catalog::release_camera(tx, "cam0", "b", taken[0].epoch));
    tx.commit();
  }
  CHECK(text(conn, "SELECT owner_node FROM cameras") == "a");
  CHECK(text(conn, "SELECT handover_node FROM cameras") == "NULL");
  {
    pqxx::work tx(conn);
    CHECK(catalog::claim_handovers(tx, "b", 1).size() == 1);
    CHECK(catalog::undrain(tx, "a") == 1);
    tx.commit();
  }
  CHECK(text(conn, "SELECT state FROM nodes WHERE node = 'a'") == "active");
  CHECK(text(conn, "SELECT handover_node FROM cameras") == "NULL");
  CHECK(text(conn, "SELECT owner_node FROM cameras") == "a");
}
