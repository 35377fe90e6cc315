// vigild through a database outage (docs/catalog.md, "When the catalog is down"), with the
// embedded PostgreSQL frozen (postmaster and backends SIGSTOPped, as a hung or overloaded database
// server looks):
// - /healthz never waits on PostgreSQL: it still answers and says the catalog is down (503,
//   degraded); when PostgreSQL resumes it says ok again. Before, /healthz ran its query through
//   the catalog pool and did not answer at all during such an outage.
// - a recording goes on, and SIGTERM ends vigild within 10 s without losing the catalog rows it
//   could not commit: they are in DATA/catalog.spool, and the next start commits them (the
//   stream ends 'stopped' with all its frames, not as a crashed one). Before, the stop waited on
//   the batcher for ever. The CI variant freezes PostgreSQL for 20 s; the [.soak] one for 10 min.
// - a camera that connects during the outage is admitted and recorded (a known token, a stream id
//   reserved ahead); its rows land once PostgreSQL resumes.
// - a killed embedded postmaster is started again by vigild; the recording goes on through it.
#include <signal.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>

#include "catalog/spool.hpp"
#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

struct Health {
  int status = 0;
  std::string database;
  std::string overall, catalog, disks, cameras;  // the node's status and each part's
  std::chrono::steady_clock::duration took{};    // request to answer
};

Health health(const test::VigildProcess& d) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = test::http_request_without_token(d.http(), "GET", "/healthz");
  Health h;
  h.status = r.status;
  h.took = std::chrono::steady_clock::now() - start;
  if (!r.body.empty()) {
    const auto doc = boost::json::parse(r.body);
    h.database = doc.at("database").at("status").as_string().c_str();
    h.overall = doc.at("status").as_string().c_str();
    h.catalog = doc.at("catalog").at("status").as_string().c_str();
    h.disks = doc.at("disks").at("status").as_string().c_str();
    h.cameras = doc.at("cameras").at("status").as_string().c_str();
  }
  return h;
}

void signal_all(const std::vector<pid_t>& pids, int sig) {
  for (auto pid : pids) ::kill(pid, sig);
}

// Resumes the frozen processes when the test ends, whatever happened.
struct Frozen {
  explicit Frozen(std::vector<pid_t> p) : pids(std::move(p)) { signal_all(pids, SIGSTOP); }
  ~Frozen() { thaw(); }
  void thaw() { signal_all(std::exchange(pids, {}), SIGCONT); }
  std::vector<pid_t> pids;
};

bool any_alive(const std::vector<pid_t>& pids) {
  for (auto pid : pids) {
    if (::kill(pid, 0) == 0) return true;
  }
  return false;
}

// A recording that starts with the catalog up, goes on through OUTAGE with PostgreSQL frozen and
// ends; vigild is stopped during the outage and started again once PostgreSQL resumes.
void record_through_outage_then_stop(std::chrono::seconds outage) {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  test::make_sim_profile(dir.path());
  const std::vector<std::string> args{"--volume",
                                      (dir.path() / "vol").string(),
                                      "--volume-size",
                                      std::to_string(outage > std::chrono::minutes(1) ? (1 << 30) : (256 << 20)),
                                      "--extent-bytes",
                                      std::to_string(4 << 20),
                                      "--profile",
                                      (dir.path() / "wd.json").string(),
                                      "--cycle-ms",
                                      "200",
                                      "--model-check-cycles",
                                      "0"};
  std::optional<test::VigildProcess> d(std::in_place, data, args);
  REQUIRE(d->wait_ready());
  client::WireClient c(d->wire(), 30s);
  const auto stream = test::open_admitted(c, "dock", 2'000'000);
  test::PacedSender sender(c, stream);
  sender.send_until(25, 25);

  const auto postgres = test::postgres_processes_under(data);
  REQUIRE_FALSE(postgres.empty());
  Frozen frozen(postgres);
  // The recording goes on for the whole outage; /healthz keeps answering and says so.
  const auto until = std::chrono::steady_clock::now() + outage;
  while (std::chrono::steady_clock::now() < until) sender.send_until(sender.sent() + 25, 25);
  CHECK(test::eventually([&] { return health(*d).status == 503; }, 30s, 200ms));
  sender.finish();
  CHECK(sender.counts().acked == sender.sent());
  INFO(d->output());
  // A camera that connects during the outage gets in: its token is known, its stream id reserved.
  const auto late = test::record_acked(*d, "gate", 50, 25);
  REQUIRE(test::eventually(
      [&] {
        const auto out = d->output();
        std::size_t n = 0;
        for (auto at = out.find("recording ended"); at != std::string::npos; at = out.find("recording ended", at + 1))
          ++n;
        return n == 2;
      },
      30s));

  // Stopped during the outage: out within the deadline, the rows it could not commit spooled.
  ::kill(d->pid(), SIGTERM);
  CHECK(test::eventually([&] { return !d->child().running(); }, 10s, 20ms));
  d->stop(SIGKILL);  // reaps it (kills it only if the check above failed)
  const auto spooled = catalog::Spool::read(data / "catalog.spool");
  CHECK(spooled.records.size() >= 2);  // the segment and the stream's end at least
  CHECK(spooled.unreadable_bytes == 0);

  // PostgreSQL resumes; what is left of the frozen cluster goes away; vigild starts again.
  frozen.thaw();
  REQUIRE(test::eventually([&] { return !any_alive(postgres); }, 60s));
  d.emplace(data, args);
  REQUIRE(d->wait_ready());
  pqxx::connection conn("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  pqxx::nontransaction q(conn);
  const auto id = static_cast<std::int64_t>(stream);
  CHECK(q.exec_params1("SELECT state FROM streams WHERE id = $1", id)[0].as<std::string>() == "stopped");
  CHECK(q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1", id)[0]
            .as<std::uint64_t>() == sender.sent());
  CHECK(q.exec_params1("SELECT count(*) FROM gaps WHERE stream_id = $1", id)[0].as<int>() == 0);
  const auto late_id = static_cast<std::int64_t>(late.stream);
  CHECK(q.exec_params1("SELECT c.name FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE s.id = $1", late_id)[0]
            .as<std::string>() == "gate");
  CHECK(q.exec_params1("SELECT state FROM streams WHERE id = $1", late_id)[0].as<std::string>() == "stopped");
  CHECK(
      q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1", late_id)[0].as<int>() ==
      50);
  // Everything the spool held is committed: it is emptied.
  CHECK(test::eventually([&] { return std::filesystem::file_size(data / "catalog.spool") == 0; }, 30s));
}

}  // namespace

TEST_CASE("/healthz answers during a database outage and says the catalog is down", "[vigild][catalog][outage]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  test::VigildProcess d(data);
  REQUIRE(d.wait_ready());
  CHECK(health(d).status == 200);

  const auto postgres = test::postgres_processes_under(data);
  REQUIRE_FALSE(postgres.empty());
  signal_all(postgres, SIGSTOP);
  // Every request answers (a hang would fail the test at its timeout); within a few probes the
  // catalog is reported down.
  Health seen;
  const bool down = test::eventually(
      [&] {
        seen = health(d);
        return seen.status == 503 && seen.database == "error";
      },
      30s, 200ms);
  // Answered from the probe's last answer, never by asking PostgreSQL: well inside the probe's
  // 2 s deadline, let alone the outage (a bound on waiting, not on speed).
  const auto during = health(d);
  // /metrics does not wait on PostgreSQL either, and says the same.
  const auto metrics = test::http_request_without_token(d.http(), "GET", "/metrics");
  signal_all(postgres, SIGCONT);
  CHECK(metrics.status == 200);
  CHECK(metrics.body.find("\nvigil_catalog_up 0\n") != std::string::npos);
  CHECK(down);
  CHECK(seen.overall == "down");
  CHECK(seen.catalog == "down");
  CHECK(seen.disks == "ok");  // no volume configured: nothing to be unhealthy about
  CHECK(seen.cameras == "ok");
  CHECK(during.status == 503);
  CHECK(during.took < 5s);
  CHECK(test::eventually([&] { return health(d).status == 200; }, 30s, 200ms));
  const auto after = health(d);
  CHECK(after.database == "ok");
  CHECK(after.overall == "ok");
  CHECK(after.catalog == "ok");
}

TEST_CASE("SIGTERM during a database outage exits in time and the next start commits the queued rows",
          "[vigild][catalog][outage]") {
  record_through_outage_then_stop(20s);
}

TEST_CASE("a 10-minute database outage: recording goes on, SIGTERM exits in time, no row lost",
          "[vigild][catalog][outage][.soak]") {
  record_through_outage_then_stop(std::chrono::minutes(10));
}

TEST_CASE("during a database outage a camera reconnects and records; its rows land when PostgreSQL resumes",
          "[vigild][catalog][outage]") {
  test::RecordingRig rig;
  auto& d = *rig.vigild;
  const auto first = test::record_acked(d, "yard", 50, 25);  // the catalog up: the token is known

  const auto postgres = test::postgres_processes_under(rig.dir.path() / "data");
  REQUIRE_FALSE(postgres.empty());
  Frozen frozen(postgres);
  REQUIRE(test::eventually([&] { return health(d).status == 503; }, 30s, 200ms));
  // The same camera again: admitted and every frame acknowledged with nothing from PostgreSQL.
  const auto again = test::record_acked(d, "yard", 100, 25);
  CHECK(again.counts.acked == 100);
  INFO(d.output());
  CHECK(d.output().find("recording opened with a reserved stream id") != std::string::npos);
  frozen.thaw();

  // Once PostgreSQL answers: the stream, its camera, its frames and its end, and the hole between
  // the two recordings as a gap on the first, all committed while vigild runs.
  pqxx::connection conn(rig.catalog());
  const auto id = static_cast<std::int64_t>(again.stream);
  const auto state = [&] {
    pqxx::nontransaction q(conn);
    const auto r = q.exec_params("SELECT state FROM streams WHERE id = $1", id);
    return r.empty() ? std::string() : r[0][0].as<std::string>();
  };
  REQUIRE(test::eventually([&] { return state() == "stopped"; }, 60s));
  pqxx::nontransaction q(conn);
  CHECK(q.exec_params1("SELECT c.name FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE s.id = $1", id)[0]
            .as<std::string>() == "yard");
  CHECK(q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1", id)[0].as<int>() ==
        100);
  CHECK(q.exec_params1("SELECT count(*) FROM gaps WHERE stream_id = $1 AND reason = 'source_lost'",
                       static_cast<std::int64_t>(first.stream))[0]
            .as<int>() == 1);
  CHECK(test::eventually([&] { return std::filesystem::file_size(rig.dir.path() / "data" / "catalog.spool") == 0; },
                         30s));
}

TEST_CASE("a killed embedded postmaster is started again and recording goes on through it",
          "[vigild][catalog][outage]") {
  test::RecordingRig rig;
  auto& d = *rig.vigild;
  const auto data = rig.dir.path() / "data";
  client::WireClient c(d.wire(), 30s);
  const auto stream = test::open_admitted(c, "porch", 2'000'000);
  test::PacedSender sender(c, stream);
  sender.send_until(25, 25);

  pid_t postmaster = 0;
  std::ifstream(data / "pg" / "data" / "postmaster.pid") >> postmaster;
  REQUIRE(postmaster > 0);
  REQUIRE(::kill(postmaster, SIGKILL) == 0);
  INFO(d.output());
  CHECK(
      test::eventually([&] { return d.output().find("embedded PostgreSQL started again") != std::string::npos; }, 60s));
  CHECK(d.output().find("embedded PostgreSQL died") != std::string::npos);
  CHECK(test::eventually(
      [&] {
        const auto h = health(d);
        return h.status == 200 && h.database == "ok";
      },
      60s, 200ms));
  pid_t again = 0;
  std::ifstream(data / "pg" / "data" / "postmaster.pid") >> again;
  CHECK(again != postmaster);

  // The recording went on through it, and its rows reach the restarted catalog.
  sender.send_until(75, 25);
  sender.finish();
  CHECK(sender.counts().acked == 75);
  pqxx::connection conn(rig.catalog());
  const auto id = static_cast<std::int64_t>(stream);
  CHECK(test::eventually(
      [&] {
        pqxx::nontransaction q(conn);
        return q.exec_params1("SELECT state FROM streams WHERE id = $1", id)[0].as<std::string>() == "stopped";
      },
      60s));
  pqxx::nontransaction q(conn);
  CHECK(q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1", id)[0].as<int>() ==
        75);
}

TEST_CASE("retention keeps a full volume recording through a database outage", "[vigild][catalog][outage][retention]") {
  // 1 MiB extents on a 24 MiB volume (23 extents), a reserve of 20 s of 2 Mbit/s (5 extents): every
  // short recording's segment holds one extent, so the recordings during the outage need the space
  // of older ones.
  test::RecordingRig rig({"--volume-size", std::to_string(24 << 20), "--extent-bytes", std::to_string(1 << 20),
                          "--retention-interval", "1", "--retention-reserve", "20"});
  auto& d = *rig.vigild;
  for (int i = 0; i < 14; ++i) test::record_acked(d, "lot", 10, 10);
  pqxx::connection conn(rig.catalog());
  const auto count = [&](const std::string& sql) {
    pqxx::nontransaction q(conn);
    return q.exec1(sql)[0].as<long>();
  };
  REQUIRE(test::eventually([&] { return count("SELECT count(*) FROM segments WHERE state = 'closed'") == 14; }, 60s));

  const auto postgres = test::postgres_processes_under(rig.dir.path() / "data");
  REQUIRE_FALSE(postgres.empty());
  Frozen frozen(postgres);
  REQUIRE(test::eventually([&] { return health(d).status == 503; }, 30s, 200ms));
  // More recordings than the free space holds: each is admitted and acknowledged in full.
  std::vector<std::uint64_t> during;
  for (int i = 0; i < 16; ++i) during.push_back(test::record_acked(d, "lot", 100, 25).stream);
  INFO(d.output());
  CHECK(d.output().find("retention reclaimed segments without the catalog") != std::string::npos);
  frozen.thaw();

  // The catalog follows: every stream recorded during the outage ended, what was reclaimed gone.
  const auto stopped = [&] {
    pqxx::nontransaction q(conn);
    for (auto s : during) {
      const auto r = q.exec_params("SELECT state FROM streams WHERE id = $1", static_cast<std::int64_t>(s));
      if (r.empty() || r[0][0].as<std::string>() != "stopped") return false;
    }
    return true;
  };
  CHECK(test::eventually(stopped, 60s));
  CHECK(test::eventually([&] { return count("SELECT count(*) FROM segments WHERE state = 'deleting'") == 0; }, 60s));
  // The newest recording is never what is reclaimed; the catalog holds no more than the volume.
  pqxx::nontransaction q(conn);
  CHECK(q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1",
                       static_cast<std::int64_t>(during.back()))[0]
            .as<int>() == 100);
  CHECK(q.exec1("SELECT count(*) FROM segments")[0].as<long>() <= 23);
}
