// Retention inside a real vigild: a small volume recorded past full keeps recording — the oldest
// unlocked segments are reclaimed (catalog rows and extents), an evidence-locked one never is,
// the hole it leaves after the locked one is a 'retention' gap, every packet sent is
// acknowledged, and /metrics counts it. And a camera's retention_days reclaims an old segment
// though space is plentiful, and so does its byte quota (retention_bytes): the oldest first, never
// locked evidence, which does not count against it.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;

namespace {

// One session of camera NAME: PACKETS script frames, every one acknowledged (a refused packet —
// the buffer is full while the volume has no room — is sent again once a cycle took data).
// Returns the stream id.
std::uint64_t record_session(const test::VigildProcess& d, const std::string& name, std::uint64_t packets) {
  return test::record_acked(d, name, packets, 10).stream;
}

// The same at a rate that takes 400 frames in one cycle or two (a quota needs segments of a MiB).
std::uint64_t record_session_at(const test::VigildProcess& d, const std::string& name, std::uint64_t packets) {
  return test::record_acked(d, name, packets, 40, 20'000'000).stream;
}

std::int64_t count(const std::string& db, const std::string& sql) {
  pqxx::connection c(db);
  return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>();
}

// CAMERA keeps one day; STREAM's segments are made three days old.
void age_past_retention(const std::string& db, const std::string& camera, std::uint64_t stream) {
  pqxx::connection c(db);
  pqxx::work tx(c);
  tx.exec_params0("UPDATE cameras SET retention_days = 1 WHERE name = $1", camera);
  tx.exec_params0(
      "UPDATE segments SET start_us = start_us - 259200000000, end_us = end_us - 259200000000 WHERE stream_id = $1",
      static_cast<std::int64_t>(stream));
  tx.commit();
}

}  // namespace

TEST_CASE("a full volume keeps recording: retention reclaims the oldest unlocked segments, never a locked one",
          "[retention][vigild]") {
  // 24 MiB in 1 MiB extents: each session's segment takes at least one, so the volume is full
  // after about twenty sessions. Reserve 0 s: the floor (two extents) is what retention keeps.
  test::RecordingRig rig({"--volume-size", std::to_string(24 << 20), "--extent-bytes", std::to_string(1 << 20),
                          "--retention-reserve", "0", "--retention-interval", "3600"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto db = rig.catalog();

  const auto first = record_session(d, "yard", 30);
  // The batcher commits the segment's close shortly: wait for it (bounded), then lock it.
  REQUIRE(eventually(
      [&] {
        return count(db, "SELECT count(*) FROM segments WHERE state = 'closed' AND stream_id = " +
                             std::to_string(first)) > 0;
      },
      20s));
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    tx.exec_params0(
        "INSERT INTO evidence_locks (stream_id, start_us, end_us, reason) "
        "SELECT stream_id, start_us, end_us + 1, 'incident 7' FROM segments WHERE stream_id = $1",
        static_cast<std::int64_t>(first));
    tx.commit();
  }
  const auto second = record_session(d, "yard", 30);
  // Well past what the volume holds: 50 sessions of at least one extent each.
  for (int i = 0; i < 48; ++i) record_session(d, "yard", 30);

  // The locked segment is still there; the second session's (the oldest unlocked) is gone, and
  // the hole it left after the locked one is a gap that says why.
  CHECK(count(db, "SELECT count(*) FROM segments WHERE state = 'closed' AND stream_id = " + std::to_string(first)) >=
        1);
  CHECK(count(db, "SELECT count(*) FROM segments WHERE stream_id = " + std::to_string(second)) == 0);
  CHECK(count(db, "SELECT count(*) FROM gaps WHERE reason = 'retention' AND stream_id = " + std::to_string(second)) >=
        1);
  CHECK(count(db, "SELECT count(*) FROM segments WHERE state = 'closed'") < 50);
  const auto scrape = test::parse_prometheus_text(test::http_request(d.http(), "GET", "/metrics").body);
  const std::string disk = std::filesystem::absolute(rig.dir.path() / "vol").string();
  CHECK(scrape.value("vigil_disk_retention_reclaimed_segments_total", {{"disk", disk}}) >= 1);
  CHECK(scrape.value("vigil_disk_retention_reclaimed_bytes_total", {{"disk", disk}}) >= (1 << 20));
  CHECK(scrape.value("vigil_disk_retention_failures_total", {{"disk", disk}}) == 0);
  // Everything recorded so far locked.
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    tx.exec0(
        "INSERT INTO evidence_locks (stream_id, start_us, end_us, reason) "
        "SELECT stream_id, min(start_us), max(end_us) + 1, 'everything' FROM segments GROUP BY stream_id");
    tx.commit();
  }
  auto no_room = [&] {
    auto r = test::http_request(d.http(), "GET", "/api/v1/disks");
    return r.status == 200 && r.body.find("\"no_room\":true") != std::string::npos;
  };
  {
    // A camera keeps recording (its open segment is not reclaimable) until the volume is short
    // of its reserve; retention then finds nothing it may take.
    client::WireClient live(d.wire(), 30s);
    live.hello("retention test", test::token());
    live.send(test::open_record("porch", 2'000'000));
    auto admitted = live.receive();
    REQUIRE(admitted.msg.has_admit());
    test::PacedSender sender(live, admitted.msg.admit().stream_id());
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!no_room() && std::chrono::steady_clock::now() < deadline) sender.send_until(sender.sent() + 20, 20);
    REQUIRE(no_room());
    // A new recording is refused at once, with the reason — never admitted to stall.
    client::WireClient c(d.wire(), 30s);
    c.hello("retention test", test::token());
    c.send(test::open_record("yard", 2'000'000));
    auto reply = c.receive();
    REQUIRE(reply.msg.has_refuse());
    CHECK(reply.msg.refuse().reason_code() == proto::REFUSE_REASON_NO_SPACE);
    CHECK_THAT(reply.msg.refuse().reason(), ContainsSubstring("evidence-locked"));
    sender.finish();
  }
  // Retention stops before the IO threads it hands work to: a clean exit (and, in a sanitizer
  // build, a clean report).
  CHECK(d.stop() == 0);
  CHECK_THAT(d.output(), !ContainsSubstring("Sanitizer") && !ContainsSubstring("runtime error"));
}

TEST_CASE("a camera's retention_days reclaims its old segments though space is plentiful", "[retention][vigild]") {
  test::RecordingRig rig({"--retention-interval", "1"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto db = rig.catalog();
  const auto old_stream = record_session(d, "gate", 30);
  const auto new_stream = record_session(d, "gate", 30);
  REQUIRE(eventually([&] { return count(db, "SELECT count(*) FROM segments WHERE state = 'closed'") == 2; }, 20s));
  age_past_retention(db, "gate", old_stream);  // keep 1 day; the first session's segment is 3 days old
  CHECK(eventually(
      [&] { return count(db, "SELECT count(*) FROM segments WHERE stream_id = " + std::to_string(old_stream)) == 0; },
      30s));
  CHECK(count(db, "SELECT count(*) FROM segments WHERE state = 'closed' AND stream_id = " +
                      std::to_string(new_stream)) == 1);
}

TEST_CASE("a fast stream on a small volume: retention keeps closed segments while the bounded reserve is free",
          "[retention][vigild]") {
  // 120 s of a fast disk's admitted rate is far more than this volume; the reserve is then a
  // quarter of it, and a volume that has that free loses nothing. (It once reclaimed every closed
  // segment at the first pass after such a stream was admitted.)
  test::RecordingRig rig({"--retention-interval", "1"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto db = rig.catalog();
  const auto kept = record_session(d, "kept", 30);
  const auto old_stream = record_session(d, "old", 30);
  REQUIRE(eventually([&] { return count(db, "SELECT count(*) FROM segments WHERE state = 'closed'") == 2; }, 20s));

  // A stream at three quarters of what the disk takes, open while retention passes run.
  client::WireClient probe(d.wire(), 20s);
  probe.hello("retention test", test::token());
  probe.send(test::open_record("probe", 100'000'000'000));
  const auto refused = probe.receive();
  REQUIRE(refused.msg.has_refuse());
  client::WireClient fast(d.wire(), 20s);
  test::open_admitted(fast, "fast", refused.msg.refuse().largest_rate_bps() * 3 / 4);

  // A witness that a full pass ran with the fast stream admitted: the old camera's segment, made
  // three days old with a one-day retention, goes in that pass.
  age_past_retention(db, "old", old_stream);
  REQUIRE(eventually(
      [&] { return count(db, "SELECT count(*) FROM segments WHERE stream_id = " + std::to_string(old_stream)) == 0; },
      30s));
  CHECK(count(db, "SELECT count(*) FROM segments WHERE state = 'closed' AND stream_id = " + std::to_string(kept)) == 1);
}

TEST_CASE("a camera's retention_bytes reclaims its oldest segments past the quota, never locked evidence",
          "[retention][vigild]") {
  test::RecordingRig rig({"--retention-interval", "1"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto db = rig.catalog();
  const test::HttpApi api{d.http()};
  // Three sessions of gate and one of yard, 400 script frames each (about 1.2 MiB: the frames are
  // the same, the padding of each cycle's write may differ).
  constexpr std::uint64_t kFrames = 400;
  const auto s1 = record_session_at(d, "gate", kFrames);
  const auto s2 = record_session_at(d, "gate", kFrames);
  const auto s3 = record_session_at(d, "gate", kFrames);
  const auto yard = record_session_at(d, "yard", kFrames);
  REQUIRE(eventually([&] { return count(db, "SELECT count(*) FROM segments WHERE state = 'closed'") == 4; }, 20s));
  auto bytes_of = [&](std::uint64_t stream) {
    return count(db, "SELECT COALESCE(sum(data_bytes), 0) FROM segments WHERE stream_id = " + std::to_string(stream));
  };
  const auto b1 = bytes_of(s1), b2 = bytes_of(s2), b3 = bytes_of(s3), by = bytes_of(yard);
  REQUIRE(b3 > (1 << 20));  // over the smallest quota (1 MiB) alone
  auto camera = [&](const std::string& name) {
    auto r = api.get("/api/v1/cameras/" + name);
    REQUIRE(r.status == 200);
    return r.json().as_object();
  };
  CHECK(camera("gate").at("recorded_bytes").to_number<std::int64_t>() == b1 + b2 + b3);
  CHECK(camera("gate").at("retention_bytes").is_null());

  // Below 1 MiB, or not a number: refused, nothing changed.
  CHECK(api.call("PATCH", "/api/v1/cameras/gate", R"({"retention_bytes":1000})").status == 400);
  CHECK(api.call("PATCH", "/api/v1/cameras/gate", R"({"retention_bytes":"1G"})").status == 400);

  // Room for two and a half sessions: the oldest goes, the two newest stay; yard has no quota.
  const auto quota = b2 + b3 + b1 / 2;
  auto set = api.call("PATCH", "/api/v1/cameras/gate", R"({"retention_bytes":)" + std::to_string(quota) + "}");
  INFO(set.body);
  REQUIRE(set.status == 200);
  CHECK(set.json().at("retention_bytes").to_number<std::int64_t>() == quota);
  REQUIRE(eventually([&] { return bytes_of(s1) == 0; }, 30s));
  CHECK(bytes_of(s2) == b2);
  CHECK(bytes_of(s3) == b3);
  CHECK(bytes_of(yard) == by);
  CHECK(camera("gate").at("recorded_bytes").to_number<std::int64_t>() == b2 + b3);
  // Reclaiming the oldest moves the start forward: no gap.
  CHECK(count(db,
              "SELECT count(*) FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON "
              "c.id = s.camera_id WHERE c.name = 'gate' AND g.reason = 'retention'") == 0);

  // s2 under an evidence lock: it stays and does not count, so s3 alone is over a 1 MiB quota and
  // goes, leaving a retention gap after the locked recording.
  {
    pqxx::connection c(db);
    pqxx::work tx(c);
    tx.exec_params0(
        "INSERT INTO evidence_locks (stream_id, start_us, end_us, reason) "
        "SELECT stream_id, min(start_us), max(end_us), 'incident 7' FROM segments WHERE stream_id = $1 "
        "GROUP BY stream_id",
        static_cast<std::int64_t>(s2));
    tx.commit();
  }
  CHECK(camera("gate").at("recorded_bytes").to_number<std::int64_t>() == b3);  // s2 is locked
  REQUIRE(api.call("PATCH", "/api/v1/cameras/gate", R"({"retention_bytes":1048576})").status == 200);
  REQUIRE(eventually([&] { return bytes_of(s3) == 0; }, 30s));
  CHECK(bytes_of(s2) == b2);
  CHECK(bytes_of(yard) == by);
  CHECK(count(db, "SELECT count(*) FROM gaps WHERE reason = 'retention' AND stream_id = " + std::to_string(s3)) == 1);

  // Cleared: null again.
  auto cleared = api.call("PATCH", "/api/v1/cameras/gate", R"({"retention_bytes":null})");
  REQUIRE(cleared.status == 200);
  CHECK(cleared.json().at("retention_bytes").is_null());
}
