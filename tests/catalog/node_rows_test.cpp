// Nodes sharing one catalog (catalog/node_rows.hpp, docs/nodes.md) in a real PostgreSQL: leases
// on PostgreSQL's clock, claims (the best-ranked live node takes its share; SKIP LOCKED keeps two
// claimers off each other's cameras), the sweeper (only expired owners, one sweeper at a time,
// the dead node's streams ended as failed_over so the next stream starts with a failover gap),
// giving a refused camera up (only when another node could take it), and a node's volume that
// fails at start never taking another node's volume at the same path with it.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/migrator.hpp"
#include "catalog/node_rows.hpp"
#include "catalog/recording_rows.hpp"
#include "server/disks/volume_startup.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"

using namespace vigil;

namespace {

std::int64_t scalar(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction q(c);
  return q.exec1(sql)[0].as<std::int64_t>();
}

void exec(pqxx::connection& c, const std::string& sql) {
  pqxx::work tx(c);
  tx.exec0(sql);
  tx.commit();
}

void renew(pqxx::connection& c, const std::string& node, std::int64_t lease_ms = 4000, std::int64_t headroom = 0) {
  pqxx::work tx(c);
  catalog::renew_lease(tx, node, catalog::new_incarnation(tx), lease_ms, headroom);
  tx.commit();
}

std::vector<catalog::ClaimedCamera> claim(pqxx::connection& c, const std::string& node) {
  pqxx::work tx(c);
  auto got = catalog::claim_cameras(tx, node, catalog::claim_quota(tx, node));
  tx.commit();
  return got;
}

void add_cameras(pqxx::connection& c, int n) {
  pqxx::work tx(c);
  for (int i = 0; i < n; ++i) catalog::add_camera(tx, "cam" + std::to_string(i), "rtsp://127.0.0.1:1/cam");
  tx.commit();
}

}  // namespace

TEST_CASE("a node alone claims every camera at once; two live nodes share them", "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_claim"));
  catalog::migrate(conn);
  add_cameras(conn, 4);
  exec(conn, "INSERT INTO cameras (name) VALUES ('pushed')");  // no URL: recorded by a client, never claimed

  renew(conn, "a");
  const auto first = claim(conn, "a");
  REQUIRE(first.size() == 4);
  CHECK(first[0].epoch > 0);
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE owner_node = 'a'") == 4);
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE owner_node IS NULL") == 1);
  {
    pqxx::work tx(conn);
    CHECK(catalog::owned_cameras(tx, "a").size() == 4);
    CHECK(catalog::owned_cameras(tx, "b").empty());
  }

  // Four more, and a second node: the node ranked first (fewer cameras, then name) takes half of
  // the unowned ones; the other claims nothing in that round.
  add_cameras(conn, 8);  // cam0..cam3 exist: cam4..cam7 are new
  renew(conn, "b");
  CHECK(claim(conn, "a").empty());  // a owns 4, b none: b ranks first
  CHECK(claim(conn, "b").size() == 2);
  CHECK(claim(conn, "b").size() == 1);  // b (2) still ranks before a (4): half of the 2 left, rounded up
  CHECK(claim(conn, "b").size() == 1);
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE owner_node = 'b'") == 4);
  // More headroom ranks first whatever the counts.
  exec(conn, "INSERT INTO cameras (name, url) VALUES ('cam8', 'rtsp://127.0.0.1:1/cam')");
  renew(conn, "a", 4000, 1'000'000);
  CHECK(claim(conn, "b").empty());
  CHECK(claim(conn, "a").size() == 1);
  // Epochs are all different: each claim drew its own.
  CHECK(scalar(conn, "SELECT count(DISTINCT owner_epoch) FROM cameras WHERE owner_node IS NOT NULL") == 9);
  // A node whose lease expired claims nothing.
  exec(conn, "INSERT INTO cameras (name, url) VALUES ('cam9', 'rtsp://127.0.0.1:1/cam')");
  exec(conn, "UPDATE nodes SET lease_until = clock_timestamp() - interval '1 second' WHERE node = 'a'");
  {
    pqxx::work tx(conn);
    CHECK(catalog::claim_quota(tx, "a") == 0);
  }
}

TEST_CASE("two nodes claiming at once take different cameras without waiting", "[catalog][nodes]") {
  const auto db = test::shared_cluster().create_database("nodes_skip_locked");
  pqxx::connection one(db), two(db);
  catalog::migrate(one);
  add_cameras(one, 6);
  pqxx::work t1(one);
  const auto a = catalog::claim_cameras(t1, "a", 3);  // rows locked, not committed
  pqxx::work t2(two);
  t2.exec0("SET LOCAL lock_timeout = '2s'");  // it must not wait on t1's rows at all
  const auto b = catalog::claim_cameras(t2, "b", 6);
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  for (const auto& x : a) {
    for (const auto& y : b) CHECK(x.name != y.name);
  }
  t1.commit();
  t2.commit();
  CHECK(scalar(one, "SELECT count(*) FROM cameras WHERE owner_node IS NULL") == 0);
}

TEST_CASE("the sweeper releases only expired owners' cameras, ending their streams with a failover gap after",
          "[catalog][nodes]") {
  const auto db = test::shared_cluster().create_database("nodes_sweep");
  pqxx::connection conn(db), other(db);
  catalog::migrate(conn);
  add_cameras(conn, 2);
  renew(conn, "a");
  renew(conn, "dead");
  std::int64_t cam0 = 0, dead_stream = 0, live_stream = 0, old_epoch = 0;
  {
    pqxx::work tx(conn);
    tx.exec0("UPDATE cameras SET owner_node = 'dead', owner_epoch = nextval('camera_owner_epoch') WHERE name = 'cam0'");
    tx.exec0("UPDATE cameras SET owner_node = 'a', owner_epoch = nextval('camera_owner_epoch') WHERE name = 'cam1'");
    old_epoch = tx.exec1("SELECT owner_epoch FROM cameras WHERE name = 'cam0'")[0].as<std::int64_t>();
    cam0 = tx.exec1("SELECT id FROM cameras WHERE name = 'cam0'")[0].as<std::int64_t>();
    const auto cam1 = tx.exec1("SELECT id FROM cameras WHERE name = 'cam1'")[0].as<std::int64_t>();
    const auto dead_disk =
        tx.exec1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('dead', '/v', 1) RETURNING id")[0]
            .as<std::int64_t>();
    const auto a_disk =
        tx.exec1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('a', '/v', 1) RETURNING id")[0]
            .as<std::int64_t>();
    dead_stream = catalog::open_stream(tx, {.camera_id = cam0,
                                            .codec = "h264",
                                            .declared_rate_bps = 1000,
                                            .admitted_rate_bps = 1000,
                                            .disk_id = dead_disk,
                                            .started_at_us = 1'000'000});
    live_stream = catalog::open_stream(tx, {.camera_id = cam1,
                                            .codec = "h264",
                                            .declared_rate_bps = 1000,
                                            .admitted_rate_bps = 1000,
                                            .disk_id = a_disk,
                                            .started_at_us = 1'000'000});
    tx.commit();
  }
  {
    pqxx::work tx(conn);
    CHECK(catalog::sweep_expired_owners(tx).empty());  // every lease is live
    tx.commit();
  }
  exec(conn, "UPDATE nodes SET lease_until = clock_timestamp() - interval '1 millisecond' WHERE node = 'dead'");
  {
    // Another node sweeping (holding the lock): this one sweeps nothing, and does not wait.
    pqxx::work holder(other);
    holder.exec("SELECT pg_advisory_xact_lock(" + std::to_string(0x766967696c737770LL) + ")");
    pqxx::work tx(conn);
    CHECK(catalog::sweep_expired_owners(tx).empty());
    tx.commit();
  }
  {
    pqxx::work tx(conn);
    const auto swept = catalog::sweep_expired_owners(tx);
    tx.commit();
    REQUIRE(swept.size() == 1);
    CHECK(swept[0].name == "cam0");
    CHECK(swept[0].from_node == "dead");
  }
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE name = 'cam0' AND owner_node IS NULL") == 1);
  CHECK(scalar(conn, "SELECT owner_epoch FROM cameras WHERE name = 'cam0'") > old_epoch);  // fenced
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE name = 'cam1' AND owner_node = 'a'") == 1);
  CHECK(scalar(conn, "SELECT count(*) FROM streams WHERE id = " + std::to_string(dead_stream) +
                         " AND state = 'failed_over' AND ended_at_us IS NOT NULL") == 1);
  CHECK(scalar(conn, "SELECT count(*) FROM streams WHERE id = " + std::to_string(live_stream) +
                         " AND state = 'recording'") == 1);

  // The camera's next stream, on the claiming node: the hole is a failover gap.
  {
    pqxx::work tx(conn);
    CHECK(catalog::record_reconnect_gap(tx, cam0, TrackRole::main, MediaKind::video, 5'000'000, "anything"));
    tx.commit();
  }
  CHECK(scalar(conn, "SELECT count(*) FROM gaps WHERE stream_id = " + std::to_string(dead_stream) +
                         " AND reason = 'failover' AND end_us = 5000000") == 1);
}

TEST_CASE("a refused camera is given up only under its epoch and only when another node is live", "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_release"));
  catalog::migrate(conn);
  add_cameras(conn, 1);
  renew(conn, "a");
  const auto got = claim(conn, "a");
  REQUIRE(got.size() == 1);
  {
    pqxx::work tx(conn);
    CHECK_FALSE(catalog::release_camera(tx, "cam0", "a", got[0].epoch));  // alone: kept
    tx.commit();
  }
  renew(conn, "b");
  {
    pqxx::work tx(conn);
    CHECK_FALSE(catalog::release_camera(tx, "cam0", "a", got[0].epoch + 1000));  // a stale epoch
    CHECK_FALSE(catalog::release_camera(tx, "cam0", "b", got[0].epoch));         // not b's
    CHECK(catalog::release_camera(tx, "cam0", "a", got[0].epoch));
    tx.commit();
  }
  CHECK(scalar(conn, "SELECT count(*) FROM cameras WHERE owner_node IS NULL") == 1);
  {
    pqxx::work tx(conn);  // a excludes what it gave up; b takes it
    CHECK(catalog::claim_cameras(tx, "a", 1, {"cam0"}).empty());
    CHECK(catalog::claim_cameras(tx, "b", 1).size() == 1);
    tx.commit();
  }
}

TEST_CASE("a stream of a camera another node owns is fenced off; an unowned camera records anywhere",
          "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_check_owner"));
  catalog::migrate(conn);
  add_cameras(conn, 1);
  pqxx::work tx(conn);
  const auto cam = tx.exec1("SELECT id FROM cameras WHERE name = 'cam0'")[0].as<std::int64_t>();
  CHECK_NOTHROW(catalog::check_owner(tx, cam, "a"));  // nobody's yet
  tx.exec0("UPDATE cameras SET owner_node = 'b'");
  CHECK_NOTHROW(catalog::check_owner(tx, cam, "b"));
  CHECK_THROWS_AS(catalog::check_owner(tx, cam, "a"), catalog::Fenced);
}

TEST_CASE("a restarted node's new incarnation restarts its run; a renewal keeps it", "[catalog][nodes]") {
  pqxx::connection conn(test::shared_cluster().create_database("nodes_lease"));
  catalog::migrate(conn);
  std::string id, other;
  {
    pqxx::work tx(conn);
    id = catalog::new_incarnation(tx);
    other = catalog::new_incarnation(tx);
    CHECK(catalog::renew_lease(tx, "a", id, 4000, 0).empty());  // no row before
    tx.commit();
  }
  CHECK(scalar(conn, "SELECT count(*) FROM nodes WHERE lease_until > clock_timestamp()") == 1);
  exec(conn, "UPDATE nodes SET joined_at = joined_at - interval '1 hour'");
  {
    pqxx::work tx(conn);
    CHECK(catalog::renew_lease(tx, "a", id, 4000, 0) == id);  // its own run goes on
    tx.commit();
  }
  CHECK(scalar(conn, "SELECT count(*) FROM nodes WHERE joined_at < clock_timestamp() - interval '30 minutes'") == 1);
  {
    pqxx::work tx(conn);  // another incarnation (a restart, or a second vigild under the same name)
    CHECK(catalog::renew_lease(tx, "a", other, 4000, 0) == id);
    tx.commit();
  }
  CHECK(scalar(conn, "SELECT count(*) FROM nodes WHERE joined_at < clock_timestamp() - interval '30 minutes'") == 0);
}

TEST_CASE("a node's volume that fails at start never marks another node's volume at the same path",
          "[catalog][nodes]") {
  const auto db = test::shared_cluster().create_database("nodes_volume_path");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  test::TempDir dir;
  const auto path = (dir.path() / "vol").string();  // missing, and no size to create it: it fails here
  exec(conn, "INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('b', '" + path + "', 1)");
  exec(conn,
       "INSERT INTO volumes (disk_id, volume_uuid, path, capacity_bytes, block_bytes, extent_bytes) "
       "SELECT id, gen_random_uuid(), '" +
           path + "', 1048576, 4096, 65536 FROM disks WHERE node = 'b'");
  server::VolumeConfig config;
  config.path = path;
  const auto up = server::bring_up_volumes({config}, db, "a");
  CHECK(up.open.empty());
  CHECK(up.unavailable.size() == 1);
  CHECK(scalar(conn, "SELECT count(*) FROM volumes WHERE state = 'active'") == 1);  // b's, untouched
}
