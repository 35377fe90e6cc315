// The embedded PostgreSQL default: a real private cluster, its start/stop life cycle, and
// recovery from what a killed vigild leaves behind.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <pqxx/pqxx>

#include "server/app/embedded_postgres.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using vigil::server::EmbeddedPostgres;
using vigil::server::EmbeddedPostgresOptions;
using vigil::test::TempDir;

namespace {

EmbeddedPostgresOptions options_for(const TempDir& dir) {
  EmbeddedPostgresOptions o;
  o.data_dir = dir.path() / "data";
  o.fsync = false;
  return o;
}

uid_t owner_of_process(pid_t pid) {
  struct stat st {};
  REQUIRE(::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0);
  return st.st_uid;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  return line[line.rfind(')') + 2] != 'Z';
}

}  // namespace

TEST_CASE("embedded PostgreSQL initialises a private cluster on a unix socket only", "[embedded_pg]") {
  TempDir dir;
  EmbeddedPostgres pg(options_for(dir));
  pg.start();
  REQUIRE(pg.running());

  pqxx::connection conn(pg.conninfo());
  pqxx::nontransaction tx(conn);
  CHECK(tx.exec1("SELECT current_database()")[0].as<std::string>() == "vigil");
  CHECK(tx.exec1("SHOW listen_addresses")[0].as<std::string>().empty());
  // Crash recovery syncs the data directory with one syncfs, not a fsync per file (restart time
  // after a kill: seconds otherwise).
  CHECK(tx.exec1("SHOW recovery_init_sync_method")[0].as<std::string>() == "syncfs");
  CHECK(std::filesystem::exists(dir.path() / "data" / "pg" / "run" / ".s.PGSQL.5432"));
  CHECK(std::filesystem::exists(dir.path() / "data" / "pg" / "data" / "PG_VERSION"));
  if (::geteuid() == 0) {
    // PostgreSQL refuses root; the cluster must run as the unprivileged system user.
    CHECK(owner_of_process(pg.postmaster_pid()) != 0);
  } else {
    CHECK(owner_of_process(pg.postmaster_pid()) == ::geteuid());
  }
}

TEST_CASE("embedded PostgreSQL stops cleanly and keeps data across restarts", "[embedded_pg]") {
  TempDir dir;
  auto opts = options_for(dir);
  {
    EmbeddedPostgres pg(opts);
    pg.start();
    pqxx::connection conn(pg.conninfo());
    pqxx::work tx(conn);
    tx.exec0("CREATE TABLE kept(v int)");
    tx.exec0("INSERT INTO kept VALUES (42)");
    tx.commit();
    pid_t pid = pg.postmaster_pid();
    pg.stop();
    CHECK_FALSE(alive(pid));
    CHECK(vigil::test::postgres_processes_under(dir.path()).empty());
    CHECK_FALSE(std::filesystem::exists(dir.path() / "data" / "pg" / "data" / "postmaster.pid"));
  }
  EmbeddedPostgres again(opts);
  again.start();
  pqxx::connection conn(again.conninfo());
  pqxx::nontransaction tx(conn);
  CHECK(tx.exec1("SELECT v FROM kept")[0].as<int>() == 42);
}

TEST_CASE("embedded PostgreSQL starts despite a stale postmaster.pid", "[embedded_pg]") {
  TempDir dir;
  auto opts = options_for(dir);
  {
    EmbeddedPostgres pg(opts);
    pg.start();
  }
  const auto pid_file = dir.path() / "data" / "pg" / "data" / "postmaster.pid";
  SECTION("naming a process that no longer exists") {
    pid_t dead = 0;
    {
      vigil::SpawnOptions s;
      s.argv = {"/bin/true"};
      auto child = vigil::ChildProcess::spawn(s);
      dead = child.pid();
      child.wait();
    }
    std::ofstream(pid_file) << dead << "\n" << (dir.path() / "data" / "pg" / "data").string() << "\n";
  }
  SECTION("naming a live process that is not a postmaster (pid reuse)") {
    // Our own pid is alive and not a postmaster: PostgreSQL alone would refuse to start.
    std::ofstream(pid_file) << ::getpid() << "\n" << (dir.path() / "data" / "pg" / "data").string() << "\n";
  }
  EmbeddedPostgres pg(opts);
  pg.start();
  REQUIRE(pg.running());
  pqxx::connection conn(pg.conninfo());
  CHECK(conn.is_open());
}

TEST_CASE("embedded PostgreSQL stops an orphaned postmaster instead of running a second one", "[embedded_pg]") {
  TempDir dir;
  auto opts = options_for(dir);
  EmbeddedPostgres first(opts);
  first.start();
  const pid_t orphan = first.postmaster_pid();

  EmbeddedPostgres second(opts);
  second.start();
  CHECK_FALSE(alive(orphan));
  REQUIRE(second.running());
  CHECK(second.postmaster_pid() != orphan);
  pqxx::connection conn(second.conninfo());
  CHECK(conn.is_open());
}

TEST_CASE("embedded PostgreSQL re-initialises a cluster whose initdb never finished", "[embedded_pg]") {
  TempDir dir;
  auto opts = options_for(dir);
  // What an interrupted first start leaves: a data directory but no "initialized" marker.
  std::filesystem::create_directories(dir.path() / "data" / "pg" / "data");
  std::ofstream(dir.path() / "data" / "pg" / "data" / "PG_VERSION") << "15\n";
  EmbeddedPostgres pg(opts);
  pg.start();
  pqxx::connection conn(pg.conninfo());
  CHECK(conn.is_open());
  CHECK(std::filesystem::exists(dir.path() / "data" / "pg" / "initialized"));
}

TEST_CASE("embedded PostgreSQL refuses a data path too long for a unix socket", "[embedded_pg]") {
  TempDir dir;
  auto opts = options_for(dir);
  opts.data_dir = dir.path() / std::string(120, 'x');
  EmbeddedPostgres pg(opts);
  REQUIRE_THROWS_WITH(pg.start(), Catch::Matchers::ContainsSubstring("too long"));
}
