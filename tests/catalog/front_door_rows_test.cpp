// Which node holds a media request's footage (catalog/front_door_rows.hpp, docs/nodes.md "One front
// door") and the failover gap shortened after a dead node's recovery (catalog::shorten_failover_gaps),
// in a real PostgreSQL: segments on two nodes' volumes, a camera's range served from each. A dead
// node's closed, copied segments are read from their copies by a reader with an archive tier
// (catalog/copy_stand_in.hpp): no node holds them, the plan names their objects, and what has no
// copy is listed.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>
#include <tuple>
#include <vector>

#include "catalog/camera_rows.hpp"
#include "catalog/front_door_rows.hpp"
#include "catalog/migrator.hpp"
#include "catalog/node_rows.hpp"
#include "catalog/playback_rows.hpp"
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

TEST_CASE("a down node's closed, copied segments are read from their copies by another node with an archive tier",
          "[catalog][nodes][archive]") {
  Rig r("front_door_copies");
  {
    // a: [1 s, 4 s) and [4 s, 7 s) closed and copied, [7 s, 8 s) not copied yet, [8 s, 9 s) copied,
    // [9 s, 9.5 s) and [9.54 s, 10 s) not copied (a frame's interval between them), [10 s, 12 s) open.
    pqxx::work tx(r.conn);
    tx.exec_params0("DELETE FROM segments WHERE volume_id = $1", r.volume_a);
    storage::GopIndex gops;
    gops.add({.pts = 0, .offset = 0, .sequence = 0});
    const auto blob = gops.encode();
    const pqxx::binarystring bytes(blob.data(), blob.size());
    for (const auto& [start, end, state, copied] :
         std::vector<std::tuple<int, int, std::string, bool>>{{1000, 4000, "closed", true},
                                                              {4000, 7000, "closed", true},
                                                              {7000, 8000, "closed", false},
                                                              {8000, 9000, "closed", true},
                                                              {9000, 9500, "closed", false},
                                                              {9540, 10000, "closed", false},
                                                              {10000, 12000, "open", false}}) {
      const auto id = tx.exec_params1(
                            "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, data_bytes, "
                            "checksum_crc32c, closed_at_us) VALUES ($1, $2, $3, $4::bigint * 1000, "
                            "$5::bigint * 1000, 5000, CASE WHEN $3 = 'closed' THEN 7 END, "
                            "CASE WHEN $3 = 'closed' THEN 1 END) RETURNING id",
                            r.stream_a, r.volume_a, state, start, end)[0]
                          .as<std::int64_t>();
      tx.exec_params0("INSERT INTO gop_index (segment_id, format, gop_count, blob) VALUES ($1, 1, 1, $2)", id, bytes);
      if (copied) {
        tx.exec_params0(
            "INSERT INTO segment_copies (segment_id, tier, bucket, object_key, bytes, etag) VALUES ($1, 's3', "
            "'vigil-archive', 'cam/main/' || $1::bigint, 5000, 'e')",
            id);
      }
    }
    tx.commit();
  }
  const Track track{.camera = "cam"};
  const auto holder = [&](std::int64_t from_us, std::int64_t to_us, const std::string& reader) {
    pqxx::work tx(r.conn);
    return catalog::media_holder(tx, track, from_us, to_us, catalog::HolderEnd::first, reader);
  };
  const auto archived_in_plan = [&](const std::string& reader) {
    pqxx::work tx(r.conn);
    const auto plan = catalog::plan_playback(tx, track, 2'000'000, 6'000'000, 10'000, {}, false, reader);
    REQUIRE(plan.segments.size() == 2);
    std::vector<std::string> keys;
    for (const auto& a : plan.segment_archives) keys.push_back(a ? a->key : "");
    return keys;
  };
  const std::vector<std::string> none{"", ""};

  // a alive: its node serves it, the store is never read.
  CHECK(holder(2'000'000, 6'000'000, "b")->node == "a");
  CHECK(archived_in_plan("b") == none);
  {
    pqxx::work tx(r.conn);
    tx.exec0("UPDATE nodes SET lease_until = clock_timestamp() - interval '1 second' WHERE node = 'a'");
    tx.commit();
  }
  // a down: its copied span is no node's for b; b's plan reads the copies.
  CHECK_FALSE(holder(2'000'000, 6'000'000, "b"));
  const auto keys = archived_in_plan("b");
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].starts_with("cam/main/"));
  CHECK(keys[1].starts_with("cam/main/"));
  // Without an archive tier (no reader), or as a itself (its own volumes), still a's.
  CHECK(holder(2'000'000, 6'000'000, "")->node == "a");
  CHECK(holder(2'000'000, 6'000'000, "a")->node == "a");
  CHECK(archived_in_plan("") == none);
  CHECK(archived_in_plan("a") == none);
  // A range reaching what has no copy: a's, and those spans are named.
  CHECK(holder(2'000'000, 9'000'000, "b")->node == "a");
  pqxx::work tx(r.conn);
  CHECK(catalog::media_holder_runs(tx, track, 2'000'000, 6'000'000, "b").empty());
  const auto runs = catalog::media_holder_runs(tx, track, 2'000'000, 25'000'000, "b");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].node == "a");
  CHECK(runs[0].from_us == 7'000'000);
  CHECK(runs[0].to_us == 12'000'000);
  CHECK(runs[0].open);
  CHECK(runs[1].node == "b");
  // The spans without a copy, clipped to the range: a copied segment breaks them, a frame's
  // interval between two segments does not, and the open segment is a span of its own.
  const auto spans = catalog::volume_only_spans(tx, track, 2'000'000, 11'000'000, "a", "b");
  REQUIRE(spans.size() == 3);
  CHECK(std::tuple(spans[0].from_us, spans[0].to_us, spans[0].open) == std::tuple(7'000'000, 8'000'000, false));
  CHECK(std::tuple(spans[1].from_us, spans[1].to_us, spans[1].open) == std::tuple(9'000'000, 10'000'000, false));
  CHECK(std::tuple(spans[2].from_us, spans[2].to_us, spans[2].open) == std::tuple(10'000'000, 11'000'000, true));
  CHECK(catalog::volume_only_spans(tx, track, 2'000'000, 6'000'000, "a", "b").empty());
}
