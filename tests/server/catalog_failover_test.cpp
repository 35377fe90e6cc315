// vigild through a catalog failover (docs/catalog.md, "PostgreSQL high availability"): its --db
// lists a primary and its synchronous streaming standby (libpq multi-host, target_session_attrs=
// read-write, the standby first so that libpq must skip it), and a wire camera records at 25 fps
// while the primary is killed (SIGKILL of every process of it, as a crashed host) and, a few
// seconds later, the standby promoted (pg_ctl promote: what Patroni does once the leader key
// expires). Checked:
// - recording never stopped: every frame acknowledged, every one played back afterwards, no gap;
// - what the primary committed before the kill is on the new primary (synchronous replication),
//   and the rows written during and after the switch are there too;
// - /healthz says ok again, and the node's lease on the new primary is live again;
// - a --db that names only the standby is refused at start with what to give it instead.
// The switch's times are printed (the numbers quoted in docs/catalog.md).
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <pqxx/pqxx>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/replicated_catalog.hpp"
#include "tests/support/script_frames.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool healthy(const test::VigildProcess& d) {
  return test::http_request_without_token(d.http(), "GET", "/healthz").status == 200;
}

std::int64_t scalar(const std::string& conninfo, const std::string& sql, std::int64_t param) {
  pqxx::connection conn(conninfo);
  pqxx::nontransaction q(conn);
  return q.exec_params1(sql, param)[0].as<std::int64_t>();
}

// Is NODE's lease on the server at CONNINFO live, renewed after AFTER (PostgreSQL's clock, text)?
bool lease_live(const std::string& conninfo, const std::string& node, const std::string& after) {
  try {
    pqxx::connection conn(conninfo);
    pqxx::nontransaction q(conn);
    return q.exec_params1(
                "SELECT count(*) FROM nodes WHERE node = $1 AND lease_until > clock_timestamp() AND "
                "heartbeat_at > $2::timestamptz",
                node, after)[0]
               .as<int>() == 1;
  } catch (const pqxx::failure&) {
    return false;  // not answering (yet)
  }
}

proto::Envelope open_playback(const std::string& name, double rate, std::int64_t from_us, std::int64_t to_us) {
  proto::Envelope e;
  auto* o = e.mutable_open_playback();
  o->set_stream_name(name);
  o->set_start_us(from_us);
  o->set_end_us(to_us);
  o->set_rate(rate);
  return e;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A camera at 25 fps in real time: sends the frames due by now (a burst at a time).
struct LiveCamera {
  test::PacedSender& sender;
  Clock::time_point started = Clock::now();
  void keep_up() {
    const auto due = static_cast<std::uint64_t>(seconds(Clock::now() - started) * 25) + 1;
    if (due > sender.sent()) sender.send_until(due, 25);
    std::this_thread::sleep_for(20ms);  // the pause between polls of what the loop waits for
  }
};

}  // namespace

TEST_CASE("a catalog failover to a synchronous standby: recording goes on, rows land on the new primary",
          "[vigild][catalog][failover]") {
  test::ReplicatedCatalog pg;
  const std::string node = "pgha";
  // The standby first: libpq must skip it (read-only) and connect to the primary.
  const std::string db = "host=127.0.0.1,127.0.0.1 port=" + std::to_string(pg.standby_port()) + "," +
                         std::to_string(pg.primary_port()) + " user=vigil dbname=vigil target_session_attrs=read-write";
  test::RecordingRig rig({"--db", db, "--node", node, "--segment-max", "2"});
  auto& d = *rig.vigild;
  REQUIRE(healthy(d));

  client::WireClient c(d.wire(), 30s);
  const auto stream = test::open_admitted(c, "lobby", 2'000'000);
  const auto id = static_cast<std::int64_t>(stream);
  test::PacedSender sender(c, stream);
  // Every frame a keyframe, so every frame is a place a segment may end: this test is about the
  // catalog, and whether segments start at a keyframe is gop_seam_test's (a stream sending its
  // whole buffer each cycle may still rotate inside a GOP: docs/format.md).
  sender.set_gop(1);
  LiveCamera camera{sender};
  // Before the switch: segments closed and committed on the primary, the node's lease live there.
  const std::string closed_sql = "SELECT count(*) FROM segments WHERE stream_id = $1 AND state = 'closed'";
  std::int64_t closed_before = 0;
  REQUIRE(test::eventually(
      [&] {
        camera.keep_up();
        closed_before = scalar(pg.primary_local(), closed_sql, id);
        return closed_before >= 2 && lease_live(pg.primary_local(), node, "-infinity");
      },
      60s, 0ms));
  pqxx::connection standby(pg.standby_local());
  CHECK(pqxx::nontransaction(standby).exec1("SELECT pg_is_in_recovery()")[0].as<bool>());

  // The primary dies. No primary for 3 s (Patroni: the leader key's ttl running out); recording goes on.
  const auto killed_at = Clock::now();
  const auto killed_us = now_us();
  pg.kill_primary();
  bool seen_down = false;
  while (Clock::now() < killed_at + 3s) {
    camera.keep_up();
    seen_down = seen_down || !healthy(d);
  }
  pg.promote_standby();
  const auto promoted_at = Clock::now();
  const auto promoted_pg = pqxx::nontransaction(standby).exec1("SELECT clock_timestamp()::text")[0].as<std::string>();

  // Recording goes on until vigild is back: /healthz ok, its lease renewed on the new primary, and
  // a segment closed after the kill committed there.
  std::optional<Clock::time_point> healthy_at, lease_at, rows_at;
  const bool back = test::eventually(
      [&] {
        camera.keep_up();
        const auto now = Clock::now();
        if (!healthy_at && healthy(d)) healthy_at = now;
        if (!lease_at && lease_live(pg.standby_local(), node, promoted_pg)) lease_at = now;
        if (!rows_at) {
          try {
            pqxx::connection conn(pg.standby_local());
            pqxx::nontransaction q(conn);
            if (q.exec_params1("SELECT count(*) FROM segments WHERE stream_id = $1 AND state = 'closed' AND "
                               "start_us > $2",
                               id, killed_us)[0]
                    .as<int>() > 0)
              rows_at = now;
          } catch (const pqxx::failure&) {}
        }
        return healthy_at && lease_at && rows_at;
      },
      60s, 0ms);
  CHECK(back);
  CHECK(seen_down);  // the health probe noticed the switch
  // Two more seconds of recording on the new primary, then the camera stops.
  const auto more_until = Clock::now() + 2s;
  while (Clock::now() < more_until) camera.keep_up();
  sender.finish();
  INFO(d.output());
  CHECK(sender.counts().acked == sender.sent());
  std::cout << "catalog failover: no primary for " << seconds(promoted_at - killed_at) << " s (kill to promoted); "
            << "after the promotion /healthz ok in " << (healthy_at ? seconds(*healthy_at - promoted_at) : -1)
            << " s, the node's lease live on the new primary in " << (lease_at ? seconds(*lease_at - promoted_at) : -1)
            << " s, a segment closed after the kill committed there in "
            << (rows_at ? seconds(*rows_at - promoted_at) : -1) << " s; " << sender.sent()
            << " frames, all acknowledged" << std::endl;

  // Everything is on the new primary: the stream ended, every frame in its segments, the
  // segments committed before the kill among them, no gap.
  REQUIRE(test::eventually(
      [&] {
        pqxx::nontransaction q(standby);
        const auto r = q.exec_params("SELECT state FROM streams WHERE id = $1", id);
        return !r.empty() && r[0][0].as<std::string>() == "stopped";
      },
      60s));
  pqxx::nontransaction q(standby);
  CHECK_FALSE(q.exec1("SELECT pg_is_in_recovery()")[0].as<bool>());
  CHECK(q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1", id)[0]
            .as<std::uint64_t>() == sender.sent());
  CHECK(q.exec_params1(closed_sql, id)[0].as<std::int64_t>() > closed_before);
  CHECK(q.exec1("SELECT count(*) FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = "
                "s.camera_id WHERE c.name = 'lobby'")[0]
            .as<int>() == 0);
  const auto spool = rig.dir.path() / "data" / "catalog.spool";
  CHECK(
      test::eventually([&] { return !std::filesystem::exists(spool) || std::filesystem::file_size(spool) == 0; }, 30s));
  CHECK(healthy(d));

  // Every acknowledged frame plays back, in order, exactly as sent, with no gap.
  std::string segments;
  for (const auto& row : q.exec_params("SELECT id, start_us, end_us, frame_count FROM segments WHERE stream_id = $1 "
                                       "ORDER BY start_us",
                                       id))
    segments +=
        row[0].c_str() + std::string(" ") + row[1].c_str() + ".." + row[2].c_str() + " " + row[3].c_str() + "\n";
  INFO(segments);
  client::WireClient viewer(d.wire(), 30s);
  viewer.hello("failover viewer", test::token());
  viewer.send(open_playback("lobby", 8.0, now_us() - 3'600'000'000, now_us() + 3'600'000'000));
  auto started = viewer.receive();
  REQUIRE(started.msg.has_playback_started());
  // A frame is known by its payload (a playback's pts are wall-clock times, not the sender's).
  std::map<std::vector<std::byte>, std::uint64_t> by_payload;
  std::vector<std::uint64_t> played, expected;
  for (std::uint64_t seq = 1; seq <= sender.sent(); ++seq) {
    by_payload.emplace(test::script_frame(seq, stream).payload, seq);
    expected.push_back(seq);
  }
  for (;;) {
    auto r = viewer.receive();
    if (r.msg.has_playback_end()) {
      CHECK(r.msg.playback_end().reason() == "end of range");
      CHECK(r.msg.playback_end().gaps_size() == 0);
      break;
    }
    REQUIRE(r.msg.has_media_packet());
    const auto it = by_payload.find(r.payload);
    played.push_back(it == by_payload.end() ? 0 : it->second);  // 0: not a frame that was sent
  }
  CHECK(played == expected);
}

TEST_CASE("a --db that names only a read-only standby is refused at start with what to give it",
          "[vigild][catalog][failover]") {
  test::ReplicatedCatalog pg;
  test::TempDir dir;
  test::VigildProcess d(dir.path() / "data", {"--db", pg.tcp(pg.standby_port())});
  CHECK_FALSE(d.wait_ready(60s));
  CHECK_THAT(d.output(), ContainsSubstring("read-only"));
  CHECK_THAT(d.output(), ContainsSubstring("target_session_attrs=read-write"));
  // Nothing was written: the standby could not have taken it, and its primary has no catalog.
  pqxx::connection conn(pg.primary_local());
  CHECK(pqxx::nontransaction(conn).exec1("SELECT to_regclass('vigil_schema_version') IS NULL")[0].as<bool>());
}

TEST_CASE("a --db without target_session_attrs lands on the standby: vigild calls it down and loses no row",
          "[vigild][catalog][failover]") {
  test::ReplicatedCatalog pg;
  // The primary first and nothing to make libpq skip a standby: once the primary is dead, every
  // connection lands on the standby, which refuses writes.
  const std::string db = "host=127.0.0.1,127.0.0.1 port=" + std::to_string(pg.primary_port()) + "," +
                         std::to_string(pg.standby_port()) + " user=vigil dbname=vigil";
  test::RecordingRig rig({"--db", db, "--segment-max", "1"});
  auto& d = *rig.vigild;
  client::WireClient c(d.wire(), 30s);
  const auto stream = test::open_admitted(c, "porch", 2'000'000);
  const auto id = static_cast<std::int64_t>(stream);
  test::PacedSender sender(c, stream);
  sender.set_gop(1);
  LiveCamera camera{sender};
  const auto killed_at = Clock::now();
  pg.kill_primary();
  // The catalog is down, and /healthz says why.
  std::string error;
  const bool read_only = test::eventually(
      [&] {
        camera.keep_up();
        const auto reply = test::http_request_without_token(d.http(), "GET", "/healthz");
        if (reply.status != 503) return false;
        const auto doc = boost::json::parse(reply.body);
        error = doc.at("database").at("error").as_string().c_str();
        return error.find("read-only") != std::string::npos;
      },
      30s, 0ms);
  INFO(error);
  CHECK(read_only);
  // Segments close every second meanwhile; their rows wait. Then the standby is promoted.
  while (Clock::now() < killed_at + 4s) camera.keep_up();
  pg.promote_standby();
  CHECK(test::eventually(
      [&] {
        camera.keep_up();
        return healthy(d);
      },
      60s, 0ms));
  sender.finish();
  INFO(d.output());
  CHECK(sender.counts().acked == sender.sent());
  pqxx::connection conn(pg.standby_local());
  REQUIRE(test::eventually(
      [&] {
        pqxx::nontransaction q(conn);
        const auto r = q.exec_params("SELECT state FROM streams WHERE id = $1", id);
        return !r.empty() && r[0][0].as<std::string>() == "stopped";
      },
      60s));
  pqxx::nontransaction q(conn);
  CHECK(q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1", id)[0]
            .as<std::uint64_t>() == sender.sent());
  CHECK(q.exec_params1("SELECT count(*) FROM gaps WHERE stream_id = $1", id)[0].as<int>() == 0);
  CHECK_THAT(d.output(), !ContainsSubstring("catalog row rejected"));
}
