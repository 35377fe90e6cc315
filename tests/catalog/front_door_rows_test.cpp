// Which node holds a media request's footage (catalog/front_door_rows.hpp, docs/nodes.md "One front
// door") and the failover gap shortened after a dead node's recovery (catalog::shorten_failover_gaps),
// in a real PostgreSQL: segments on two nodes' volumes, a camera's range served from each.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/front_door_rows.hpp"
#include "catalog/migrator.hpp"
#include "catalog/node_rows.hpp"
#include "catalog/recording_rows.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

std::int64_t scalar(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction q(c);
  const auto r = q.exec1(sql);
  return r[0].is_null() ? 0 : r[0].as<std::int64_t>();
}

struct Rig {
  pqxx::connection conn;
  std::int64_t camera = 0, volume_a = 0, volume_b = 0, stream_a = 0, stream_b = 0;

  explicit Rig(const std::string& name) : conn(test::shared_cluster().create_database(name)) {
    catalog::migrate(conn);
    pqxx::work tx(conn);
    catalog::add_camera(tx, "cam", "rtsp://127.0.0.1:1/cam");
    camera = tx.exec1("SELECT id FROM cameras WHERE name = 'cam'")[0].as<std::int64_t>();
    for (const char* node : {"a", "b"}) {
      catalog::renew_lease(tx, node, catalog::new_incarnation(tx), 4000, 0,
                           {.http = std::string("http://127.0.0.1:80") + node, .wire = ""});
      const auto disk = tx.exec_params1(
                              "INSERT INTO disks (node, device_path, capacity_bytes) VALUES ($1, '/v', "
                              "1 << 30) RETURNING id",
                              node)[0]
                            .as<std::int64_t>();
      const auto volume = tx.exec_params1(
                                "INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes) "
                                "VALUES ($1, '/v', 1 << 30, 1 << 20) RETURNING id",
                                disk)[0]
                              .as<std::int64_t>();
      const auto stream = catalog::open_stream(tx, {.camera_id = camera,
                                                    .codec = "h264",
                                                    .declared_rate_bps = 1000,
                                                    .admitted_rate_bps = 1000,
                                                    .disk_id = disk,
                                                    .started_at_us = node[0] == 'a' ? 1'000'000 : 20'000'000});
      (node[0] == 'a' ? volume_a : volume_b) = volume;
      (node[0] == 'a' ? stream_a : stream_b) = stream;
    }
    // a recorded [1 s, 10 s) as far as the catalog knows (its open segment's row trails), b from 20 s.
    tx.exec_params0(
        "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us) VALUES ($1, $2, 'open', "
        "1000000, 10000000)",
        stream_a, volume_a);
    tx.exec_params0(
        "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us) VALUES ($1, $2, 'open', "
        "20000000, 30000000)",
        stream_b, volume_b);
    tx.commit();
  }

  std::optional<catalog::NodeEndpoint> holder(std::int64_t from_us, std::int64_t to_us,
                                              catalog::HolderEnd end = catalog::HolderEnd::first) {
    pqxx::work tx(conn);
    return catalog::media_holder(tx, Track{.camera = "cam"}, from_us, to_us, end);
  }
};

}  // namespace

TEST_CASE("the holder of a range is the node of its first (or last) segment's volume, with its address and lease",
          "[catalog][nodes]") {
  Rig r("front_door_holder");
  auto h = r.holder(2'000'000, 5'000'000);
  REQUIRE(h);
  CHECK(h->node == "a");
  CHECK(h->http_address == "http://127.0.0.1:80a");
  CHECK(h->live);
  CHECK(r.holder(5'000'000, 25'000'000)->node == "a");  // across both: where it starts
  CHECK(r.holder(5'000'000, 25'000'000, catalog::HolderEnd::last)->node == "b");
  CHECK(r.holder(22'000'000, 23'000'000)->node == "b");
  CHECK_FALSE(r.holder(11'000'000, 19'000'000));  // nothing recorded: answered where asked
  {
    pqxx::work tx(r.conn);
    tx.exec0("UPDATE nodes SET lease_until = clock_timestamp() - interval '1 second' WHERE node = 'a'");
    tx.exec0("UPDATE cameras SET owner_node = 'b'");
    tx.commit();
  }
  CHECK_FALSE(r.holder(2'000'000, 5'000'000)->live);  // a dead node: the front door answers 503
  pqxx::work tx(r.conn);
  CHECK(catalog::camera_owner(tx, "cam")->node == "b");
  CHECK(catalog::list_nodes(tx).size() == 2);
}

TEST_CASE("a restarted node's recovered footage moves the failover gap's start to its end, or removes the gap",
          "[catalog][nodes]") {
  Rig r("front_door_gap");
  {
    pqxx::work tx(r.conn);
    tx.exec0("UPDATE nodes SET lease_until = clock_timestamp() - interval '1 second' WHERE node = 'a'");
    tx.exec0("UPDATE cameras SET owner_node = 'a'");
    REQUIRE(catalog::sweep_expired_owners(tx).size() == 1);  // a's stream ends failed_over at 10 s
    // The failover gap b's stream recorded: from a's last known instant (10 s) to b's first frame.
    tx.exec_params0(
        "INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES ($1, 10000000, 20000000, "
        "'failover')",
        r.stream_a);
    tx.commit();
  }
  REQUIRE(scalar(r.conn, "SELECT count(*) FROM streams WHERE state = 'failed_over'") == 1);
  const auto gap = [&](const char* column) {
    return scalar(r.conn, std::string("SELECT ") + column + " FROM gaps WHERE reason = 'failover'");
  };
  {
    // Nothing recovered beyond the catalog's end: the gap stays.
    pqxx::work tx(r.conn);
    CHECK(catalog::shorten_failover_gaps(tx, {r.volume_a}) == 0);
    tx.commit();
  }
  CHECK(gap("start_us") == 10'000'000);
  {
    // a's recovery closed its open segment where its data ends, 14 s: the gap starts there.
    pqxx::work tx(r.conn);
    tx.exec_params0("UPDATE segments SET end_us = 14000000 WHERE volume_id = $1", r.volume_a);
    CHECK(catalog::shorten_failover_gaps(tx, {r.volume_b}) == 0);  // another node's volume: not a's streams
    CHECK(catalog::shorten_failover_gaps(tx, {r.volume_a}) == 1);
    tx.commit();
  }
  CHECK(gap("start_us") == 14'000'000);
  CHECK(gap("end_us") == 20'000'000);
  CHECK(scalar(r.conn, "SELECT ended_at_us FROM streams WHERE id = " + std::to_string(r.stream_a)) == 14'000'000);
  {
    // Footage reaching b's first frame: nothing went unrecorded, no gap.
    pqxx::work tx(r.conn);
    tx.exec_params0("UPDATE segments SET end_us = 21000000 WHERE volume_id = $1", r.volume_a);
    CHECK(catalog::shorten_failover_gaps(tx, {r.volume_a}) == 1);
    tx.commit();
  }
  CHECK(scalar(r.conn, "SELECT count(*) FROM gaps WHERE reason = 'failover'") == 0);
}
