// vigild as a real process: start on a temp data dir, health over HTTP, clean stop, recovery
// after kill -9, external --db, and one-line errors for bad flags.
#include <signal.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <thread>

#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using vigil::test::TempDir;
using vigil::test::VigildProcess;

namespace {

boost::json::object healthz(const VigildProcess& d) {
  auto r = vigil::test::http_request(d.http(), "GET", "/healthz");
  INFO(r.body);
  REQUIRE(r.status == 200);
  return boost::json::parse(r.body).as_object();
}

// Bounded wait for processes to disappear (the kernel delivers PDEATHSIG asynchronously).
bool no_postgres_within(const std::filesystem::path& dir, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!vigil::test::postgres_processes_under(dir).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

vigil::test::ExitResult run_vigild(std::vector<std::string> args, const std::filesystem::path& log) {
  return vigil::test::run_to_exit(VIGILD_PATH, std::move(args), log);
}

}  // namespace

TEST_CASE("vigild serves /healthz with the database ok and leaves no postgres after SIGTERM", "[vigild]") {
  TempDir dir;
  const auto data = dir.path() / "data";
  {
    VigildProcess d(data);
    REQUIRE(d.wait_ready());
    auto h = healthz(d);
    CHECK(h.at("status").as_string() == "ok");
    CHECK(h.at("version").as_string() == VIGIL_VERSION);
    const auto& db = h.at("database").as_object();
    CHECK(db.at("status").as_string() == "ok");
    CHECK(db.at("mode").as_string() == "embedded");
    CHECK(db.at("schema_version").as_int64() >= 1);
    CHECK_FALSE(vigil::test::postgres_processes_under(data).empty());

    CHECK(vigil::test::http_request(d.http(), "GET", "/no/such/thing").status == 404);
    CHECK(vigil::test::http_request(d.http(), "POST", "/healthz").status == 405);

    int st = d.stop(SIGTERM);
    INFO(d.output());
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
  }
  // vigild waited for its postmaster: nothing may remain, right now, without polling.
  CHECK(vigil::test::postgres_processes_under(data).empty());
  CHECK_FALSE(std::filesystem::exists(data / "run" / "endpoints.json"));
}

TEST_CASE("vigild recovers after kill -9", "[vigild]") {
  TempDir dir;
  const auto data = dir.path() / "data";
  {
    VigildProcess d(data);
    REQUIRE(d.wait_ready());
    d.stop(SIGKILL);
  }
  // The postmaster dies with its parent (PDEATHSIG); the next start must neither refuse nor
  // run a second postmaster on the same data, whatever state the first one left.
  CHECK(no_postgres_within(data, std::chrono::seconds(30)));
  VigildProcess again(data);
  REQUIRE(again.wait_ready());
  CHECK(healthz(again).at("database").as_object().at("status").as_string() == "ok");
  auto postgres = vigil::test::postgres_processes_under(data);
  CHECK_FALSE(postgres.empty());
}

TEST_CASE("a second vigild on the same data directory is refused", "[vigild]") {
  TempDir dir;
  const auto data = dir.path() / "data";
  VigildProcess first(data);
  REQUIRE(first.wait_ready());
  auto r = run_vigild({"--data", data.string(), "--listen", "127.0.0.1:0", "--http-port", "0"}, dir.path() / "2.log");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, ContainsSubstring("another vigild"));
  CHECK(healthz(first).at("status").as_string() == "ok");
}

TEST_CASE("vigild --db uses an external PostgreSQL", "[vigild]") {
  TempDir dir;
  auto conninfo = vigil::test::shared_cluster().create_database("vigild_external");
  VigildProcess d(dir.path() / "data", {"--db", conninfo});
  REQUIRE(d.wait_ready());
  auto db = healthz(d).at("database").as_object();
  CHECK(db.at("mode").as_string() == "external");
  CHECK(db.at("status").as_string() == "ok");
  CHECK_FALSE(std::filesystem::exists(dir.path() / "data" / "pg"));
}

TEST_CASE("vigild --db with a bad URL or unreachable server fails with one clear line", "[vigild]") {
  TempDir dir;
  const auto data = (dir.path() / "data").string();
  SECTION("unreachable server") {
    auto r = run_vigild({"--data", data, "--db", "postgresql://nobody@127.0.0.1:1/none"}, dir.path() / "o.log");
    CHECK(r.status == 1);
    CHECK_THAT(r.output, ContainsSubstring("cannot connect to the database"));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  SECTION("malformed URL") {
    auto r = run_vigild({"--data", data, "--db", "postgresql://[::1"}, dir.path() / "o.log");
    CHECK(r.status == 1);
    CHECK_THAT(r.output, ContainsSubstring("database"));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
}

TEST_CASE("vigild --help, --version and bad flags", "[vigild]") {
  TempDir dir;
  auto help = run_vigild({"--help"}, dir.path() / "h.log");
  CHECK(help.status == 0);
  // The whole help, not the run's last lines: it is longer than that.
  std::ifstream help_file(dir.path() / "h.log");
  const std::string help_text((std::istreambuf_iterator<char>(help_file)), std::istreambuf_iterator<char>());
  for (const char* flag : {"--data", "--db", "--listen", "--http-port", "--config", "--archive-endpoint", "--node"}) {
    CHECK_THAT(help_text, ContainsSubstring(flag));
  }
  auto version = run_vigild({"--version"}, dir.path() / "v.log");
  CHECK(version.status == 0);
  CHECK_THAT(version.output, ContainsSubstring(VIGIL_VERSION));
  auto bad = run_vigild({"--listen", "nowhere"}, dir.path() / "b.log");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.output, ContainsSubstring("ADDR:PORT"));
  auto unknown = run_vigild({"--frobnicate"}, dir.path() / "u.log");
  CHECK(unknown.status == 2);
  auto bad_node = run_vigild({"--node", "two words"}, dir.path() / "n.log");
  CHECK(bad_node.status == 2);
  CHECK_THAT(bad_node.output, ContainsSubstring("--node"));
  // The test-only fault plans: not in --help, and refused when they name no volume or no plan.
  CHECK_THAT(help.output, !ContainsSubstring("--fault-plan"));
  CHECK_THAT(help.output, ContainsSubstring("--volume-fail-after"));
  auto no_volume = run_vigild({"--volume", "v", "--fault-plan", "1:write@3"}, dir.path() / "f1.log");
  CHECK(no_volume.status == 2);
  CHECK_THAT(no_volume.output, ContainsSubstring("no volume 1"));
  auto no_plan = run_vigild({"--volume", "v", "--fault-plan", "0:erase@3"}, dir.path() / "f2.log");
  CHECK(no_plan.status == 2);
  CHECK_THAT(no_plan.output, ContainsSubstring("is not a plan"));
  auto no_index = run_vigild({"--volume", "v", "--fault-plan", "write@3"}, dir.path() / "f3.log");
  CHECK(no_index.status == 2);
  CHECK_THAT(no_index.output, ContainsSubstring("VOLUME_INDEX:PLAN"));
}

TEST_CASE("vigild reads its options from a config file, flags winning", "[vigild]") {
  TempDir dir;
  const auto conf = dir.path() / "vigild.conf";
  SECTION("a value from the file is applied") {
    std::ofstream(conf) << "# comment\nlog-level = debug\ncatalog-threads = 1\nnode = gate-node\n";
    VigildProcess d(dir.path() / "data", {"--config", conf.string()});
    REQUIRE(d.wait_ready());
    CHECK_THAT(d.output(), ContainsSubstring("level=debug"));
    CHECK_THAT(d.output(), ContainsSubstring("node=gate-node"));
  }
  SECTION("a bad value in the file is refused with its name") {
    std::ofstream(conf) << "catalog-threads = 0\n";
    auto r = run_vigild({"--config", conf.string()}, dir.path() / "c.log");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, ContainsSubstring("catalog-threads"));
  }
  SECTION("an unknown key in the file is refused") {
    std::ofstream(conf) << "colour = blue\n";
    auto r = run_vigild({"--config", conf.string()}, dir.path() / "c.log");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, ContainsSubstring("colour"));
  }
  SECTION("a missing file is refused") {
    auto r = run_vigild({"--config", (dir.path() / "nope.conf").string()}, dir.path() / "c.log");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, ContainsSubstring("nope.conf"));
  }
}
