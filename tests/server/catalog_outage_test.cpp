// /healthz never waits on PostgreSQL: with the embedded PostgreSQL frozen (postmaster and backends
// SIGSTOPped, as a hung or overloaded database server looks), /healthz still answers and says the
// catalog is down (503, degraded); when PostgreSQL resumes it says ok again. Before, /healthz ran
// its query through the catalog pool and did not answer at all during such an outage.
#include <signal.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>

#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

struct Health {
  int status = 0;
  std::string database;
};

Health health(const test::VigildProcess& d) {
  const auto r = test::http_request_without_token(d.http(), "GET", "/healthz");
  Health h{r.status, ""};
  if (!r.body.empty()) h.database = boost::json::parse(r.body).at("database").at("status").as_string().c_str();
  return h;
}

void signal_all(const std::vector<pid_t>& pids, int sig) {
  for (auto pid : pids) ::kill(pid, sig);
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
  const bool down = test::eventually(
      [&] {
        const auto h = health(d);
        return h.status == 503 && h.database == "error";
      },
      30s, 200ms);
  signal_all(postgres, SIGCONT);
  CHECK(down);
  CHECK(test::eventually([&] { return health(d).status == 200; }, 30s, 200ms));
  CHECK(health(d).database == "ok");
}
