// The catalog side of the admin routes in a real PostgreSQL: a camera created once (a second
// create changes nothing), read, changed (null clears), removed or disabled as `vigil camera
// remove` does; retention_days as retention's per-stream max age; a camera range lock on each
// overlapping stream, listed and released; the newest profile of a disk; admission decisions
// tied to their camera, filtered and keyset-paginated newest first.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/admission_rows.hpp"
#include "catalog/camera_admin.hpp"
#include "catalog/evidence_locks.hpp"
#include "catalog/migrator.hpp"
#include "catalog/profiles.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

std::int64_t add_stream(pqxx::work& tx, std::int64_t camera, std::int64_t from, std::optional<std::int64_t> to) {
  return tx
      .exec_params1(
          "INSERT INTO streams (camera_id, codec, declared_rate_bps, state, started_at_us, ended_at_us) "
          "VALUES ($1, 'h264', 1000, $2, $3, $4) RETURNING id",
          camera, std::string(to ? "stopped" : "pending"), from, to)[0]
      .as<std::int64_t>();
}

}  // namespace

TEST_CASE("admin rows: cameras, retention, range locks", "[catalog][admin]") {
  pqxx::connection conn(test::shared_cluster().create_database("admin_rows"));
  catalog::migrate(conn);
  pqxx::work tx(conn);

  const auto id = catalog::create_camera(tx, {.name = "porch", .url = "rtsp://u:p@h/s", .retention_days = 30});
  CHECK(id > 0);
  try {
    catalog::create_camera(tx, {.name = "porch", .url = "rtsp://other/s"});
    FAIL("a second camera named porch was created");
  } catch (const catalog::CatalogError& e) {
    CHECK(e.kind() == catalog::CatalogError::Kind::conflict);
  }
  auto d = catalog::camera_details(tx, "porch");
  REQUIRE(d.has_value());
  CHECK(d->url == "rtsp://u:p@h/s");
  CHECK(d->retention_days == 30);
  CHECK(d->state == "never recorded");
  CHECK_THROWS_AS(catalog::create_camera(tx, {.name = "x", .retention_days = 0}), catalog::CatalogError);
  CHECK_THROWS_AS(catalog::create_camera(tx, {.name = "x", .substream_url = "rtsp://h/s"}), std::invalid_argument);
  CHECK_THROWS_AS(catalog::create_camera(tx, {.name = "../x"}), std::invalid_argument);

  catalog::CameraChange ch;
  ch.enabled = false;
  ch.retention_days = std::optional<int>(7);
  CHECK(catalog::update_camera(tx, "porch", ch));
  d = catalog::camera_details(tx, "porch");
  CHECK_FALSE(d->enabled);
  CHECK(d->retention_days == 7);
  CHECK(d->url == "rtsp://u:p@h/s");  // not given: kept
  catalog::CameraChange clear;
  clear.retention_days = std::optional<int>();
  CHECK(catalog::update_camera(tx, "porch", clear));
  CHECK_FALSE(catalog::camera_details(tx, "porch")->retention_days.has_value());
  CHECK_FALSE(catalog::update_camera(tx, "nosuch", ch));
  catalog::CameraChange bad;
  bad.url = std::optional<std::string>();
  bad.substream_url = std::optional<std::string>("rtsp://h/sub");
  CHECK_THROWS_AS(catalog::update_camera(tx, "porch", bad), std::invalid_argument);

  // Retention: every stream of a camera with retention_days gets that max age.
  CHECK(catalog::update_camera(tx, "porch", ch));
  const auto s1 = add_stream(tx, id, 1000, 5000);
  const auto s2 = add_stream(tx, id, 6000, std::nullopt);
  const auto other = catalog::create_camera(tx, {.name = "yard"});
  const auto s3 = add_stream(tx, other, 1000, 2000);
  const auto ret = catalog::camera_retention(tx);
  REQUIRE(ret.size() == 2);
  CHECK(ret.at(static_cast<std::uint64_t>(s1)).max_age_us == 7LL * 86'400'000'000);
  CHECK(ret.count(static_cast<std::uint64_t>(s2)) == 1);
  CHECK(ret.count(static_cast<std::uint64_t>(s3)) == 0);

  auto streams = catalog::camera_streams(tx, "porch", 10);
  REQUIRE(streams.has_value());
  REQUIRE(streams->size() == 2);
  CHECK(streams->at(0).id == s2);  // newest first
  CHECK_FALSE(catalog::camera_streams(tx, "nosuch", 10).has_value());

  // A range lock covers each overlapping stream (the open one too), none outside.
  auto locks = catalog::lock_camera_range(tx, "porch", 4000, 7000, "case 1", "ops");
  REQUIRE(locks.has_value());
  CHECK(locks->size() == 2);
  CHECK(catalog::lock_camera_range(tx, "porch", 5000, 5500, "gap", "")->empty());
  CHECK_FALSE(catalog::lock_camera_range(tx, "nosuch", 1, 2, "r", "").has_value());
  CHECK_THROWS_AS(catalog::lock_camera_range(tx, "porch", 2, 1, "r", ""), std::invalid_argument);
  CHECK(catalog::list_evidence_locks(tx, false, 100).size() == 2);
  CHECK(catalog::remove_evidence_lock(tx, locks->front()));
  const auto active = catalog::list_evidence_locks(tx, false, 100);
  REQUIRE(active.size() == 1);
  CHECK(active[0].camera == "porch");
  CHECK(catalog::list_evidence_locks(tx, true, 100).size() == 2);
  CHECK(catalog::active_evidence_locks(tx).size() == 1);

  // Removal: with streams disabled, without deleted, unknown none.
  CHECK(catalog::remove_or_disable_camera(tx, "porch") == catalog::Removal::disabled);
  CHECK(catalog::camera_details(tx, "porch").has_value());
  CHECK(catalog::create_camera(tx, {.name = "lone"}) > 0);
  CHECK(catalog::remove_or_disable_camera(tx, "lone") == catalog::Removal::deleted);
  CHECK_FALSE(catalog::camera_details(tx, "lone").has_value());
  CHECK(catalog::remove_or_disable_camera(tx, "lone") == catalog::Removal::none);
  tx.commit();
}

TEST_CASE("admin rows: profiles and the admission decisions audit", "[catalog][admin]") {
  pqxx::connection conn(test::shared_cluster().create_database("admin_decisions"));
  catalog::migrate(conn);
  pqxx::work tx(conn);
  admission::DiskProfile p;
  p.device = "/dev/sdq";
  p.device_bytes = 40'000'000'000;
  p.random_read = {{64e3, 1e6}, {5e6, 20e6}, {6e6, 25e6}, {7e6, 27e6}};
  p.random_write = p.random_read;
  p.seq_read = {{64e3, 1e6}, {30e6, 30e6}, {30e6, 30e6}, {30e6, 30e6}};
  p.seq_write = p.seq_read;
  p.read_range = p.write_range = admission::near_peak_range(p.seq_read);
  const auto profile_id = catalog::store_profile(tx, p, "node1");
  const auto disk =
      tx.exec1("SELECT disk_id FROM disk_profiles WHERE id = " + std::to_string(profile_id))[0].as<std::int64_t>();
  auto row = catalog::disk_row(tx, disk);
  REQUIRE(row.has_value());
  CHECK(row->profile_id == profile_id);
  CHECK(row->device_path == "/dev/sdq");
  auto stored = catalog::stored_profile(tx, disk);
  REQUIRE(stored.has_value());
  CHECK(stored->id == profile_id);
  CHECK(stored->json.find("random_read") != std::string::npos);
  CHECK_FALSE(catalog::stored_profile(tx, disk + 1).has_value());
  CHECK_FALSE(catalog::disk_row(tx, disk + 1).has_value());

  const auto cam = catalog::create_camera(tx, {.name = "door"});
  const auto stream = add_stream(tx, cam, 10, 20);
  admission::AdmissionController adm(p, {.policy = admission::Policy::conservative, .r_rt = 1});
  const auto ok = adm.decide({}, {1, true, vigil::Rate::from_Bps(1e5), {}, {}, {}});
  REQUIRE(ok.admitted);
  std::vector<admission::StreamDemand> full(19, {1, false, vigil::Rate::from_Bps(1e6), {}, {}, {}});
  const auto no = adm.decide(full, {20, false, vigil::Rate::from_Bps(3e6), {}, {}, {}});
  REQUIRE_FALSE(no.admitted);
  // Tied to the camera through the stream, or by name; an unknown name ties to nothing.
  const auto a = catalog::log_decision(tx, ok, disk, stream, 1.0);
  const auto b = catalog::log_decision(tx, no, disk, std::nullopt, 1.0, std::string("door"));
  const auto c = catalog::log_decision(tx, no, disk, std::nullopt, 1.0, std::string("ghost"));
  CHECK(tx.exec1("SELECT count(*) FROM admission_decisions WHERE camera_id = " + std::to_string(cam))[0].as<int>() ==
        2);

  catalog::DecisionQuery q;
  q.from_us = 0;
  q.to_us = std::numeric_limits<std::int64_t>::max() / 2;
  auto page = catalog::find_decisions(tx, q);
  REQUIRE(page.rows.size() == 3);
  CHECK(page.rows[0].id == c);  // same instant (one transaction): newest id first
  CHECK_FALSE(page.next.has_value());
  CHECK_FALSE(page.rows[0].camera.has_value());
  CHECK(page.rows[2].camera == "door");
  CHECK(page.rows[2].stream_id == stream);

  q.camera = "door";
  page = catalog::find_decisions(tx, q);
  REQUIRE(page.rows.size() == 2);
  q.outcome = "refused";
  page = catalog::find_decisions(tx, q);
  REQUIRE(page.rows.size() == 1);
  CHECK(page.rows[0].id == b);
  CHECK(page.rows[0].reason == no.reason);

  catalog::DecisionQuery paged;
  paged.from_us = 0;
  paged.to_us = q.to_us;
  paged.limit = 2;
  page = catalog::find_decisions(tx, paged);
  REQUIRE(page.rows.size() == 2);
  REQUIRE(page.next.has_value());
  paged.after = page.next;
  page = catalog::find_decisions(tx, paged);
  REQUIRE(page.rows.size() == 1);
  CHECK(page.rows[0].id == a);
  CHECK_FALSE(page.next.has_value());
  paged.after.reset();
  paged.disk_id = disk + 1;
  CHECK(catalog::find_decisions(tx, paged).rows.empty());
  tx.commit();
}
