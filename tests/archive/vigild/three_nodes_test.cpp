// The scale-out set-up of docs/nodes.md end to end, on real processes on loopback: three vigild
// nodes, one PostgreSQL catalog, one SeaweedFS archive, twelve cameras pulled from the GStreamer
// RTSP test camera. Placement spreads the cameras over the three nodes; closed segments are copied
// to the archive; kill -9 of the busiest node moves its cameras to the others within the bound,
// each with a 'failover' gap, and the dead node's copied footage exports from a surviving node's
// front door byte for byte as the dead node exported it; then a drain of one survivor moves its
// cameras to the last node without a gap.
// Skipped, saying so, when SeaweedFS is not built (deploy/seaweedfs.sh). Label "s3".
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "catalog/camera_rows.hpp"
#include "tests/server/two_nodes.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/seaweedfs_process.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using test::Catalog;
using test::eventually;
using test::recording_on;
using test::wall_us;

namespace {

std::string in_list(const std::set<std::string>& names) {
  std::string out = "(";
  for (const auto& n : names) out += (out.size() > 1 ? ",'" : "'") + n + "'";
  return out + ")";
}

}  // namespace

TEST_CASE(
    "three nodes, one PostgreSQL, one SeaweedFS, twelve pulled cameras: spread, kill -9 with the dead node's "
    "footage from the archive, drain",
    "[nodes][archive][s3][rtsp][integration]") {
  const std::string binary = test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");
  test::SeaweedFs weed(binary);
  REQUIRE(weed.make_bucket("vigil-archive"));

  constexpr int kCameras = 12;
  test::TempDir dir;
  const auto credentials = test::seaweed_credentials_file(dir.path());
  const std::string db = test::shared_cluster().create_database("three_nodes");
  const auto profile = test::make_sim_profile(dir.path());
  const auto camera = test::start_rtsp_camera(dir.path(), 0, 256);
  // 2-s segments, copied as soon as they close (a camera's archive_after_s defaults to 0).
  const std::vector<std::string> extra{"--segment-max",         "2",
                                       "--archive-endpoint",    "127.0.0.1:" + std::to_string(weed.s3_port),
                                       "--archive-credentials", credentials.string(),
                                       "--archive-poll-ms",     "200"};
  const std::array<std::string, 3> names{"a", "b", "c"};
  std::map<std::string, std::unique_ptr<test::VigildProcess>> node;
  for (const auto& n : names) {
    std::filesystem::create_directories(dir.path() / n);
    node[n] = test::start_node(dir.path() / n, profile, db, n, extra);
  }
  Catalog cat(db);
  const auto logs = [&] {
    for (const auto& [n, d] : node) {
      if (d) UNSCOPED_INFO("node " << n << ": " << d->output().substr(0, 20000));
    }
  };
  REQUIRE(
      eventually([&] { return cat.number("SELECT count(*) FROM nodes WHERE lease_until > clock_timestamp()") == 3; },
                 30s));
  {
    pqxx::work tx(cat.db);
    for (int i = 0; i < kCameras; ++i) {
      catalog::add_camera(tx, "cam" + std::to_string(i), "rtsp://127.0.0.1:" + std::to_string(camera.port) + "/cam1");
    }
    tx.commit();
  }

  // Placement: every camera recorded by exactly one node, and every node records some.
  const auto placed_total = [&] {
    std::size_t total = 0;
    for (const auto& n : names) total += cat.names(recording_on(n)).size();
    return total;
  };
  const bool placed = eventually([&] { return placed_total() == kCameras; }, 90s);
  if (!placed) logs();
  REQUIRE(placed);
  std::map<std::string, std::set<std::string>> on;
  for (const auto& n : names) on[n] = cat.names(recording_on(n));
  std::cout << "three nodes: placement of " << kCameras << " cameras: " << on["a"].size() << " on a, " << on["b"].size()
            << " on b, " << on["c"].size() << " on c\n";
  const auto fewest = std::min({on["a"].size(), on["b"].size(), on["c"].size()});
  const auto most = std::max({on["a"].size(), on["b"].size(), on["c"].size()});
  CHECK(most - fewest <= 2);  // equal nodes, equal headroom: an even spread, give or take a heartbeat's claims
  for (const auto& n : names) {
    INFO("node " << n);
    CHECK(!on[n].empty());
    CHECK(cat.names("SELECT name FROM cameras WHERE owner_node = '" + n + "'") == on[n]);
  }
  CHECK(
      cat.number("SELECT count(*) FROM streams WHERE state = 'recording' AND role = 'main' AND media_kind = 'video'") ==
      kCameras);

  // The busiest node is the victim; one of its cameras' footage must outlive it through the archive.
  const std::string victim = *std::max_element(names.begin(), names.end(), [&](const auto& x, const auto& y) {
    return on[x].size() < on[y].size();
  });
  const std::string watched = *on[victim].begin();
  const std::string copied_of_watched =
      "FROM segments g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = s.camera_id JOIN disks d ON "
      "d.id = s.disk_id JOIN segment_copies k ON k.segment_id = g.id WHERE s.role = 'main' AND s.media_kind = "
      "'video' AND d.node = '" +
      victim + "' AND c.name = '" + watched + "'";
  const bool copied = eventually([&] { return cat.number("SELECT count(*) " + copied_of_watched) >= 2; }, 60s);
  if (!copied) logs();
  REQUIRE(copied);
  // The copied span (closed segments only have copies), a little inside it so no part is open.
  const std::int64_t from_us = cat.number("SELECT min(g.start_us) " + copied_of_watched) + 100'000;
  const std::int64_t to_us = cat.number("SELECT max(g.end_us) " + copied_of_watched) - 100'000;
  REQUIRE(to_us > from_us);
  const std::string export_path =
      "/api/v1/cameras/" + watched + "/export.mp4?from=" + test::media_time(from_us) + "&to=" + test::media_time(to_us);
  const auto before = test::http_request(node[victim]->http(), "GET", export_path);
  REQUIRE(before.status == 200);
  REQUIRE(before.body.size() > 10000);

  // kill -9 of the victim: its cameras record on the two others.
  const auto killed_us = wall_us();
  const auto killed = std::chrono::steady_clock::now();
  REQUIRE(::kill(node[victim]->pid(), SIGKILL) == 0);
  node[victim]->stop(SIGKILL);  // reaped
  std::vector<std::string> survivors;
  for (const auto& n : names) {
    if (n != victim) survivors.push_back(n);
  }
  const std::string moved_sql =
      "SELECT DISTINCT c.name FROM cameras c JOIN streams s ON s.camera_id = c.id JOIN segments g ON g.stream_id = "
      "s.id JOIN disks d ON d.id = s.disk_id WHERE d.node <> '" +
      victim + "' AND s.started_at_us > " + std::to_string(killed_us) + " AND c.name IN " + in_list(on[victim]);
  const bool moved = eventually([&] { return cat.names(moved_sql).size() == on[victim].size(); }, 60s, 20ms);
  if (!moved) logs();
  REQUIRE(moved);
  const double seen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const double first_frame_s =
      static_cast<double>(
          cat.number("SELECT max(first) FROM (SELECT min(g.start_us) AS first FROM segments g JOIN streams s ON s.id = "
                     "g.stream_id JOIN cameras c ON c.id = s.camera_id JOIN disks d ON d.id = s.disk_id WHERE d.node "
                     "<> '" +
                     victim + "' AND s.started_at_us > " + std::to_string(killed_us) + " AND c.name IN " +
                     in_list(on[victim]) + " GROUP BY c.id) f") -
          killed_us) /
      1e6;
  std::cout << "three nodes: kill -9 of node " << victim << " with " << on[victim].size()
            << " cameras: the last of them recording elsewhere " << first_frame_s
            << " s after the kill, seen in the catalog after " << seen_s << " s (target 10 s)\n";
  CHECK(first_frame_s <= 10.0);
  for (const auto& c : on[victim]) {
    INFO(c);
    CHECK(eventually(
        [&] {
          return cat.number(
                     "SELECT count(*) FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id "
                     "= s.camera_id WHERE g.reason = 'failover' AND c.name = '" +
                     c + "'") == 1;
        },
        30s));
  }

  // The dead node's copied footage, from each survivor's front door: the same bytes it exported.
  for (const auto& s : survivors) {
    INFO("front door of " << s);
    const auto after = test::http_request(node[s]->http(), "GET", export_path);
    INFO(after.body.substr(0, 300));
    REQUIRE(after.status == 200);
    CHECK(after.body == before.body);
  }

  // A drain of one survivor moves its cameras to the last node, with no gap from the drain on.
  const std::string drained = survivors[0], last = survivors[1];
  const auto drain_start_us = wall_us();
  const auto drain =
      test::run_to_exit(VIGIL_CLI_PATH, {"node", "drain", drained, "--http", node[drained]->http(), "--timeout", "90"},
                        dir.path() / "drain.log");
  if (drain.status != 0) logs();
  INFO(drain.output);
  REQUIRE(drain.status == 0);
  CHECK(drain.output.find("node " + drained + " drained") != std::string::npos);
  CHECK(eventually([&] { return cat.names(recording_on(last)).size() == kCameras; }, 30s));
  CHECK(eventually([&] { return cat.names(recording_on(drained)).empty(); }, 10s));  // it stops within a second
  CHECK(cat.number("SELECT count(*) FROM cameras WHERE owner_node = '" + last + "'") == kCameras);
  CHECK(cat.number("SELECT count(*) FROM gaps WHERE end_us > " + std::to_string(drain_start_us)) == 0);
}
