// The limits vigild puts on its catalog sessions (catalog/conninfo.hpp, docs/catalog.md "Session
// limits"): added to whatever form --db takes, never overriding what the operator wrote, and in
// force on a real connection.
#include "catalog/conninfo.hpp"

#include <libpq-fe.h>

#include <catch2/catch_test_macros.hpp>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

// CONNINFO's explicit settings, as libpq reads them.
std::map<std::string, std::string> settings(const std::string& conninfo) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> options(PQconninfoParse(conninfo.c_str(), &error),
                                                                         PQconninfoFree);
  if (error) PQfreemem(error);
  REQUIRE(options);
  std::map<std::string, std::string> out;
  for (auto* o = options.get(); o->keyword; ++o) {
    if (o->val) out[o->keyword] = o->val;
  }
  return out;
}

}  // namespace

TEST_CASE("session limits are added to a key=value or URI conninfo, never over the operator's own",
          "[catalog][conninfo]") {
  auto s = settings(catalog::with_session_limits("host=/tmp/x port=5433 dbname='my db'", 2));
  CHECK(s["host"] == "/tmp/x");
  CHECK(s["port"] == "5433");
  CHECK(s["dbname"] == "my db");
  CHECK(s["connect_timeout"] == "2");
  CHECK(s["keepalives"] == "1");
  CHECK(s["keepalives_idle"] == "5");
  CHECK(s["keepalives_interval"] == "2");
  CHECK(s["keepalives_count"] == "3");
  CHECK(s["tcp_user_timeout"] == "10000");
  CHECK(s["options"] == "-c idle_in_transaction_session_timeout=10000");

  // A multi-host URI (docs/catalog.md, "PostgreSQL high availability") with settings of its own.
  s = settings(catalog::with_session_limits(
      "postgresql://vigil@pg1:5432,pg2:5433/vigil?target_session_attrs=read-write&connect_timeout=5&options=-c%"
      "20search_path%3Dvigil",
      2));
  CHECK(s["host"] == "pg1,pg2");
  CHECK(s["port"] == "5432,5433");
  CHECK(s["user"] == "vigil");
  CHECK(s["target_session_attrs"] == "read-write");
  CHECK(s["connect_timeout"] == "5");
  CHECK(s["options"] == "-c search_path=vigil -c idle_in_transaction_session_timeout=10000");

  // The operator's own timeout stands.
  s = settings(catalog::with_session_limits(
      "host=h options='-c idle_in_transaction_session_timeout=0' keepalives_idle=60 tcp_user_timeout=0", 2));
  CHECK(s["options"] == "-c idle_in_transaction_session_timeout=0");
  CHECK(s["keepalives_idle"] == "60");
  CHECK(s["tcp_user_timeout"] == "0");

  // A value with a quote or a backslash survives the round trip; what libpq cannot parse is left
  // as it is (connecting says why).
  CHECK(settings(catalog::with_settings("host=h password='it\\'s \\\\ x'", {{"port", "1"}}))["password"] ==
        "it's \\ x");
  CHECK(catalog::with_session_limits("host='unterminated", 2) == "host='unterminated");
}

TEST_CASE("a session opened with the limits has them on the server", "[catalog][conninfo]") {
  pqxx::connection conn(catalog::with_session_limits(test::shared_cluster().create_database("conninfo"), 2));
  pqxx::nontransaction q(conn);
  CHECK(q.exec1("SHOW idle_in_transaction_session_timeout")[0].as<std::string>() == "10s");
}
