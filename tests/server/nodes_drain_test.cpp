// A planned drain on real processes (docs/nodes.md, "Drain"): two vigild nodes on one PostgreSQL,
// three pulled GStreamer RTSP cameras. `vigil node drain a` moves every camera a records to b
// make-before-break: b records each beside a, and a stops only once b's first frames are in the
// catalog. Asserted from the catalog and the timeline b serves: every camera on b, no gap row at
// all, and each moved camera's recording contiguous across the move (a's last frame at or after
// b's first). Then a drain of b, with a drained, is refused and changes nothing; undrain takes a back.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <iostream>
#include <string>

#include "tests/server/two_nodes.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;
using test::recording_on;
using test::TwoNodes;
using test::wall_us;

TEST_CASE("vigil node drain moves every camera to the other node without a gap; with nobody to take them it is refused",
          "[nodes][camera][rtsp][integration]") {
  constexpr int kCameras = 3;
  TwoNodes n("nodes_drain", kCameras);
  auto& [dir, db, profile, camera, a, b, cat] = n;
  const auto logs = [&n] { n.logs(); };
  const bool placed =
      eventually([&] { return cat.names(recording_on("a")).size() + cat.names(recording_on("b")).size() == kCameras; },
                 90s);
  if (!placed) logs();
  REQUIRE(placed);
  auto on_a = cat.names(recording_on("a"));
  if (on_a.empty()) {
    // Placement gave a nothing: give it one, so the drain has something to move (it records it at its next round).
    const auto name = *cat.names(recording_on("b")).begin();
    cat.number("UPDATE cameras SET owner_node = 'a', owner_epoch = nextval('camera_owner_epoch') WHERE name = '" +
               name + "' RETURNING 1");
    REQUIRE(eventually([&] { return cat.names(recording_on("a")).size() == 1; }, 30s));
    on_a = cat.names(recording_on("a"));
  }
  std::cout << "nodes: drain of a node with " << on_a.size() << " of " << kCameras << " cameras\n";

  const auto drain_start_us = wall_us();
  const auto drained = test::run_to_exit(VIGIL_CLI_PATH, {"node", "drain", "a", "--http", a->http(), "--timeout", "90"},
                                         dir.path() / "drain.log");
  const auto drain_end_us = wall_us();
  if (drained.status != 0) logs();
  INFO(drained.output);
  REQUIRE(drained.status == 0);
  CHECK(drained.output.find("moved " + std::to_string(on_a.size()) + "/" + std::to_string(on_a.size()) + " cameras") !=
        std::string::npos);
  CHECK(drained.output.find("node a drained") != std::string::npos);
  std::cout << "nodes: drain took " << static_cast<double>(drain_end_us - drain_start_us) / 1e6 << " s\n";

  // Every camera is b's, recorded there, and a records none.
  CHECK(cat.names("SELECT name FROM cameras WHERE owner_node = 'b'").size() == kCameras);
  CHECK(cat.number("SELECT count(*) FROM nodes WHERE node = 'a' AND state = 'drained'") == 1);
  REQUIRE(eventually(
      [&] { return cat.names(recording_on("b")).size() == kCameras && cat.names(recording_on("a")).empty(); }, 30s));
  // a's streams of the moved cameras ended once b recorded them: not fenced, not failed over.
  REQUIRE(eventually(
      [&] {
        return cat.number(
                   "SELECT count(*) FROM streams s JOIN disks d ON d.id = s.disk_id WHERE d.node = 'a' "
                   "AND s.state IN ('pending', 'recording')") == 0;
      },
      30s));
  CHECK(cat.number("SELECT count(*) FROM streams s JOIN disks d ON d.id = s.disk_id WHERE d.node = 'a' "
                   "AND s.state IN ('fenced', 'failed_over')") == 0);
  CHECK(cat.number("SELECT count(*) FROM segments WHERE fenced_epoch IS NOT NULL") == 0);
  // No gap since the drain began: no failover, no source lost.
  CHECK(cat.number("SELECT count(*) FROM gaps WHERE end_us > " + std::to_string(drain_start_us)) == 0);

  const test::HttpApi api{b->http()};
  for (const auto& name : on_a) {
    INFO(name);
    const std::string of =
        " JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = s.camera_id JOIN disks d "
        "ON d.id = s.disk_id WHERE c.name = '" +
        name + "' AND s.role = 'main' AND s.media_kind = 'video' AND d.node = ";
    // The runs overlap or touch: a's last recorded instant is at or after b's first.
    const auto a_last_us = cat.number("SELECT max(g.end_us) FROM segments g" + of + "'a'");
    const auto b_first_us = cat.number("SELECT min(g.start_us) FROM segments g" + of + "'b'");
    CHECK(b_first_us > drain_start_us);
    CHECK(a_last_us >= b_first_us);
    std::cout << "nodes: " << name << ": overlap of a's and b's recordings " << (a_last_us - b_first_us) / 1000
              << " ms\n";
    // The timeline b serves: no gap since the drain began, and one run across the whole drain.
    const auto reply = api.get("/api/v1/cameras/" + name + "/timeline?from=-10m&to=now");
    REQUIRE(reply.status == 200);
    const auto body = boost::json::parse(reply.body);
    for (const auto& g : body.at("gaps").as_array()) CHECK(g.at("end_us").to_number<std::int64_t>() <= drain_start_us);
    bool across = false;
    for (const auto& r : body.at("runs").as_array()) {
      across = across || (r.at("start_us").to_number<std::int64_t>() <= drain_start_us &&
                          r.at("end_us").to_number<std::int64_t>() >= drain_end_us);
    }
    CHECK(across);
  }

  // A drained node takes no new camera: a fourth one goes to b.
  {
    pqxx::work tx(cat.db);
    catalog::add_camera(tx, "cam9", "rtsp://127.0.0.1:" + std::to_string(camera.port) + "/cam1");
    tx.commit();
  }
  REQUIRE(eventually([&] { return cat.names(recording_on("b")).contains("cam9"); }, 60s));
  CHECK(cat.number("SELECT count(*) FROM cameras WHERE owner_node = 'a'") == 0);

  // Draining b now: no other live active node (a is drained): refused, clearly, and nothing changes.
  const auto refused =
      test::run_to_exit(VIGIL_CLI_PATH, {"node", "drain", "b", "--http", b->http()}, dir.path() / "drain-b.log");
  INFO(refused.output);
  CHECK(refused.status == 1);
  CHECK(refused.output.find("no other live node can take node b's cameras") != std::string::npos);
  CHECK(cat.number("SELECT count(*) FROM nodes WHERE node = 'b' AND state = 'active'") == 1);
  CHECK(cat.number("SELECT count(*) FROM cameras WHERE owner_node = 'b' AND handover_node IS NULL") == kCameras + 1);

  // vigil node list shows both; undrain takes a back.
  const auto listed = test::run_to_exit(VIGIL_CLI_PATH, {"node", "list", "--http", b->http()}, dir.path() / "list.log");
  CHECK(listed.status == 0);
  CHECK(listed.output.find("drained") != std::string::npos);
  const auto undrained =
      test::run_to_exit(VIGIL_CLI_PATH, {"node", "undrain", "a", "--http", b->http()}, dir.path() / "undrain.log");
  CHECK(undrained.status == 0);
  CHECK(cat.number("SELECT count(*) FROM nodes WHERE node = 'a' AND state = 'active'") == 1);
}
