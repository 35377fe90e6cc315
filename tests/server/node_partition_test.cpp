// A node cut off from PostgreSQL while everything else goes on (docs/nodes.md, "A node cut off from
// PostgreSQL"): two nodes on one catalog, node a's catalog connections through a proxy that can
// drop the link (tests/support/blockable_proxy.hpp), a's cameras pulled from the GStreamer RTSP
// test camera. Only a's database link is cut: a itself, its cameras, its disk and its HTTP and wire
// ports, b and PostgreSQL all go on.
// - A partition shorter than the lease: nothing moves (no sweep, no new epoch, no gap), and a's
//   rows land unmarked once the link is back. Nor after every connection is reset.
// - A partition past the lease, cut at the worst moment (a's session inside a transaction, so
//   PostgreSQL keeps its locks: the sweeper's, or a camera row FOR SHARE): PostgreSQL ends that
//   session within idle_in_transaction_session_timeout (catalog/conninfo.hpp), b takes a's cameras
//   (a failover gap) while a records on; back, a's rows land marked (segments.fenced_epoch), its
//   streams end 'fenced', it stops the cameras, and everything it recorded through the partition is
//   findable: its footage covers the failover gap, which goes.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>

#include "catalog/conninfo.hpp"
#include "tests/server/two_nodes.hpp"
#include "tests/support/blockable_proxy.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/proxy_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;
using test::recording_on;
using test::TwoNodes;
using test::wall_us;

namespace {

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// Node a's sessions, told apart from everyone else's in pg_stat_activity.
constexpr const char* kApplication = "vigild-partitioned";

// The largest stretch of [FROM_US, TO_US] that node a's segments of CAMERA do not cover.
std::int64_t largest_hole_us(test::Catalog& cat, const std::string& camera, std::int64_t from_us, std::int64_t to_us) {
  pqxx::nontransaction q(cat.db);
  std::int64_t covered_to = from_us, hole = 0;
  for (const auto& r : q.exec(
           "SELECT g.start_us, g.end_us FROM segments g JOIN streams s ON s.id = g.stream_id JOIN disks d ON d.id = "
           "s.disk_id JOIN cameras c ON c.id = s.camera_id WHERE d.node = 'a' AND s.role = 'main' AND s.media_kind = "
           "'video' AND c.name = " +
           quoted(camera) + " ORDER BY g.start_us")) {
    const auto start = r[0].as<std::int64_t>(), end = r[1].as<std::int64_t>();
    if (start > covered_to) hole = std::max(hole, std::min(start, to_us) - covered_to);
    covered_to = std::max(covered_to, end);
    if (covered_to >= to_us) break;
  }
  return std::max(hole, to_us - std::min(covered_to, to_us));
}

}  // namespace

TEST_CASE("a node cut off from PostgreSQL records on: a short cut moves nothing and a long one fences it cleanly",
          "[nodes][camera][rtsp][integration]") {
  constexpr int kCameras = 2;
  std::unique_ptr<test::BlockableProxy> proxy;
  TwoNodes n("nodes_partition", kCameras, {}, [&proxy](const std::string& db) {
    proxy = std::make_unique<test::BlockableProxy>(db);
    return catalog::with_settings(proxy->conninfo(), {{"application_name", kApplication}});
  });
  auto& a = n.a;
  auto& b = n.b;
  auto& cat = n.cat;
  const auto logs = [&n] { n.logs(); };
  const bool placed = eventually(
      [&] {
        return !cat.names(recording_on("a")).empty() &&
               cat.names(recording_on("a")).size() + cat.names(recording_on("b")).size() == kCameras;
      },
      90s);
  if (!placed) logs();
  REQUIRE(placed);
  const auto on_a = cat.names(recording_on("a"));
  const auto& cam = *on_a.begin();
  INFO("camera " << cam << " on a");
  const std::string a_segments =
      "FROM segments g JOIN streams s ON s.id = g.stream_id JOIN disks d ON d.id = s.disk_id WHERE d.node = 'a'";
  const auto packets_on_a = [&] {
    return test::metric(a->http(), "vigil_camera_packets_accepted_total", {{"camera", cam}});
  };
  const auto epoch = [&] { return cat.number("SELECT owner_epoch FROM cameras WHERE name = " + quoted(cam)); };

  // --- A partition shorter than the lease (4 s): a's heartbeat stalls, nothing moves.
  {
    const auto epoch_before = epoch();
    const auto streams_before = cat.number("SELECT count(*) FROM streams");
    // Cut just after a heartbeat: the lease then outlives the cut by 2 s or more, however late the
    // heartbeat before it had come (a loaded machine), so the test does not race the lease.
    REQUIRE(eventually(
        [&] {
          return cat.number(
                     "SELECT count(*) FROM nodes WHERE node = 'a' AND heartbeat_at > clock_timestamp() - "
                     "interval '300 milliseconds'") == 1;
        },
        10s, 20ms));
    proxy->blackhole();
    const auto cut = std::chrono::steady_clock::now();
    const auto packets_before = packets_on_a();
    // Cut for 1.5 s (the heartbeat comes every second): a's lease is not renewed meanwhile.
    while (std::chrono::steady_clock::now() < cut + 1500ms) std::this_thread::sleep_for(50ms);
    CHECK(cat.number("SELECT count(*) FROM nodes WHERE node = 'a' AND heartbeat_at < clock_timestamp() - interval "
                     "'1 second'") == 1);
    CHECK(packets_on_a() > packets_before);  // a records through it
    proxy->pass();
    const auto end_before_us = cat.number("SELECT max(g.end_us) " + a_segments);
    // a's rows land after it, unmarked, and its recording goes on in the same stream.
    const bool landed =
        eventually([&] { return cat.number("SELECT max(g.end_us) " + a_segments) > end_before_us + 1'000'000; }, 20s);
    if (!landed) logs();
    REQUIRE(landed);
    CHECK(cat.number("SELECT count(*) " + a_segments + " AND g.fenced_epoch IS NOT NULL") == 0);
    CHECK(epoch() == epoch_before);
    CHECK(cat.number("SELECT count(*) FROM cameras WHERE owner_node = 'a' AND name = " + quoted(cam)) == 1);
    CHECK(cat.number("SELECT count(*) FROM streams") == streams_before);
    CHECK(cat.number("SELECT count(*) FROM gaps") == 0);
    CHECK(cat.number("SELECT count(*) FROM nodes WHERE node = 'a' AND lease_until > clock_timestamp()") == 1);
  }

  // --- Every connection of a reset (RST, as a restarted proxy or firewall does): a connects again
  // at once, and nothing moves either.
  {
    const auto epoch_before = epoch();
    const auto end_before_us = cat.number("SELECT max(g.end_us) " + a_segments);
    proxy->reset();
    const bool landed =
        eventually([&] { return cat.number("SELECT max(g.end_us) " + a_segments) > end_before_us + 1'000'000; }, 20s);
    if (!landed) logs();
    REQUIRE(landed);
    CHECK(proxy->connections() > 0);
    CHECK(cat.number("SELECT count(*) " + a_segments + " AND g.fenced_epoch IS NOT NULL") == 0);
    CHECK(epoch() == epoch_before);
    CHECK(cat.number("SELECT count(*) FROM gaps") == 0);
    CHECK(cat.number("SELECT count(*) FROM nodes WHERE node = 'a' AND lease_until > clock_timestamp()") == 1);
  }

  // --- A partition past the lease, cut while a's camera manager is inside its sweeping
  // transaction, holding the sweeper's advisory lock (catalog::sweep_expired_owners): no node can
  // sweep while PostgreSQL keeps that transaction open.
  const auto segments_before = cat.names("SELECT g.id::text " + a_segments);
  const auto cut_us = wall_us();
  REQUIRE(proxy->blackhole_in_transaction(20s, "pg_try_advisory_xact_lock"));
  const auto cut = std::chrono::steady_clock::now();
  const auto packets_at_cut = packets_on_a();
  const std::string a_in_transaction = std::string("SELECT count(*) FROM pg_stat_activity WHERE application_name = '") +
                                       kApplication + "' AND state LIKE 'idle in transaction%'";
  // PostgreSQL holds that transaction open for a client that has gone quiet, and ends it after
  // idle_in_transaction_session_timeout (catalog/conninfo.hpp): without it, for ever.
  CHECK(cat.number(a_in_transaction) >= 1);
  const bool ended = eventually([&] { return cat.number(a_in_transaction) == 0; }, 20s, 100ms);
  const double ended_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  CHECK(ended);
  std::cout << "nodes: partitioned inside a transaction: PostgreSQL ended that session after " << ended_s
            << " s (idle_in_transaction_session_timeout " << catalog::kIdleInTransactionTimeoutMs / 1000 << " s)\n";
  CHECK(ended_s >= catalog::kIdleInTransactionTimeoutMs / 1000.0 - 1.0);
  // a's camera manager did not wait for it: it cut its round after a lease and tries new
  // connections, its recorders untouched.
  CHECK(a->output().find("catalog round unanswered for a lease") != std::string::npos);

  // b takes a's cameras over once a's lease expired (the sweeper's rules, docs/nodes.md).
  const std::string moved_sql =
      "SELECT count(*) FROM streams s JOIN disks d ON d.id = s.disk_id JOIN cameras c ON c.id = s.camera_id "
      "WHERE d.node = 'b' AND s.started_at_us > " +
      std::to_string(cut_us) + " AND c.name = " + quoted(cam) +
      " AND EXISTS (SELECT 1 FROM segments g WHERE g.stream_id = s.id)";
  const bool moved = eventually([&] { return cat.number(moved_sql) == 1; }, 40s, 100ms);
  if (!moved) logs();
  REQUIRE(moved);
  CHECK(cat.number("SELECT count(*) FROM cameras WHERE owner_node = 'b' AND name = " + quoted(cam)) == 1);
  const auto b_first_us = cat.number(
      "SELECT min(g.start_us) FROM segments g JOIN streams s ON s.id = g.stream_id JOIN disks d ON d.id = s.disk_id "
      "JOIN cameras c ON c.id = s.camera_id WHERE d.node = 'b' AND c.name = " +
      quoted(cam) + " AND s.started_at_us > " + std::to_string(cut_us));
  const std::string failover_gaps =
      "SELECT count(*) FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = s.camera_id "
      "WHERE g.reason = 'failover' AND c.name = " +
      quoted(cam);
  REQUIRE(eventually([&] { return cat.number(failover_gaps) == 1; }, 20s));
  // The catalog's own figure: b's first frame of the camera, from the cut. Not before PostgreSQL
  // ended a's session: the sweeper's lock was a's until then.
  const double moved_s = static_cast<double>(b_first_us - cut_us) / 1e6;
  std::cout << "nodes: partitioned past its lease: its camera's first frame on the other node " << moved_s
            << " s after the cut (lease 4 s; the sweeper's lock held by the cut-off session)\n";
  CHECK(moved_s >= catalog::kIdleInTransactionTimeoutMs / 1000.0 - 1.0);
  CHECK(moved_s <= catalog::kIdleInTransactionTimeoutMs / 1000.0 + 15.0);
  // a went on recording all along, and its HTTP API answers: the catalog is down, it says so.
  CHECK(packets_on_a() > packets_at_cut + 100);
  CHECK(test::http_request_without_token(a->http(), "GET", "/healthz").status == 503);
  // Its API too: the catalog pool does not wait on the cut link (an answer, a 503 at worst, at once).
  const auto asked = std::chrono::steady_clock::now();
  const auto answer = test::HttpApi{a->http()}.get("/api/v1/cameras/" + cam + "/timeline?from=-10m&to=now");
  const double answered_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  CHECK((answer.status == 200 || answer.status == 503));
  CHECK(answered_s < 5.0);

  // The link is back: a's rows land marked, it stops the camera, its stream ends 'fenced'.
  proxy->pass();
  const auto back_us = wall_us();
  const std::string a_stream_state =
      "SELECT s.state FROM streams s JOIN disks d ON d.id = s.disk_id JOIN cameras c ON c.id = s.camera_id WHERE "
      "d.node = 'a' AND s.role = 'main' AND s.media_kind = 'video' AND c.name = " +
      quoted(cam) + " AND s.started_at_us < " + std::to_string(cut_us);
  const bool fenced = eventually(
      [&] {
        const auto out = a->output();
        return cat.names(a_stream_state) == std::set<std::string>{"fenced"} &&
               out.find("catalog refused a segment row") != std::string::npos &&
               out.find("fenced: the camera is owned by another node now") != std::string::npos;
      },
      30s);
  if (!fenced) logs();
  REQUIRE(fenced);
  const double fenced_s = static_cast<double>(wall_us() - back_us) / 1e6;
  CHECK(cat.number("SELECT count(*) " + a_segments + " AND g.fenced_epoch IS NOT NULL") > 0);
  // It records the camera no more (its other camera, if it has one, it still owns and records).
  CHECK(eventually([&] { return cat.names(recording_on("a")).count(cam) == 0; }, 10s));
  CHECK(cat.number("SELECT count(*) FROM streams s JOIN disks d ON d.id = s.disk_id JOIN cameras c ON c.id = "
                   "s.camera_id WHERE d.node = 'a' AND c.name = " +
                   quoted(cam) + " AND s.state IN ('pending', 'recording')") == 0);
  CHECK(cat.number("SELECT count(*) FROM cameras WHERE owner_node = 'b' AND name = " + quoted(cam)) == 1);
  CHECK(cat.names(recording_on("b")).count(cam) == 1);

  // Nothing a recorded is lost: every row it had is there, and its footage covers the whole
  // partition up to b's first frame — so the failover gap b recorded goes (both nodes recorded it).
  const auto segments_after = cat.names("SELECT g.id::text " + a_segments);
  for (const auto& id : segments_before) CHECK(segments_after.contains(id));
  std::int64_t hole_us = 0;
  const bool covered =
      eventually([&] { return (hole_us = largest_hole_us(cat, cam, cut_us - 1'000'000, b_first_us)) <= 500'000; }, 20s);
  if (!covered) logs();
  CHECK(covered);
  CHECK(eventually([&] { return cat.number(failover_gaps) == 0; }, 10s));
  // And it is findable: the timeline (any node's front door) shows one run across the partition.
  const auto reply = test::HttpApi{b->http()}.get("/api/v1/cameras/" + cam + "/timeline?from=-10m&to=now");
  REQUIRE(reply.status == 200);
  const auto body = boost::json::parse(reply.body);
  bool one_run = false;
  for (const auto& r : body.at("runs").as_array()) {
    one_run = one_run || (r.at("start_us").to_number<std::int64_t>() <= cut_us &&
                          r.at("end_us").to_number<std::int64_t>() >= b_first_us);
  }
  INFO(reply.body);
  CHECK(one_run);
  std::cout << "nodes: partition healed; a fenced within " << fenced_s
            << " s, its footage covers the failover window (largest hole " << hole_us / 1000 << " ms)\n";
}
