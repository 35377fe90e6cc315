#pragma once
// The events API tests' vigild: an external catalog (the tests read the events table) with
// three cameras, and what they read back.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/time_arg.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

namespace vigil::test::events_api {

inline constexpr std::int64_t S = 1'000'000;
inline constexpr std::int64_t T0 = 1'767'225'600 * S;  // 2026-01-01T00:00:00Z

using Reply = vigil::test::HttpResult;

struct Api : vigil::test::HttpApi {
  Reply post(const std::string& body) const { return call("POST", "/api/v1/events", body); }
};

inline std::vector<std::int64_t> ids_of(const Reply& r) {
  std::vector<std::int64_t> out;
  const auto doc = r.json();
  for (const auto& e : doc.at("events").as_array()) out.push_back(e.at("id").as_int64());
  return out;
}

// The whole events table as one string: any change to any row changes it.
inline std::string table_fingerprint(const std::string& db) {
  pqxx::connection conn(db);
  pqxx::read_transaction tx(conn);
  return tx.exec1(
               "SELECT count(*)::text || ':' || coalesce(md5(string_agg(e::text, '|' ORDER BY id)), '') "
               "FROM events e")[0]
             .as<std::string>() +
         "/" + tx.exec1("SELECT count(*) FROM cameras")[0].as<std::string>();
}

struct Server {
  vigil::test::TempDir dir;
  std::string db;
  vigil::test::VigildProcess d;
  Api api;
  explicit Server(const std::string& hint)
      : db(vigil::test::shared_cluster().create_database(hint)),
        d(dir.path() / "data", {"--db", db, "--no-camera-pull"}) {
    REQUIRE(d.wait_ready());
    api.host = d.http();
    for (const char* name : {"porch", "lobby", "gate"}) {
      REQUIRE(vigil::test::run_to_exit(VIGIL_CLI_PATH, {"camera", "add", name, "rtsp://10.0.0.9/s", "--http", d.http()},
                                       dir.path() / "add.log")
                  .status == 0);
    }
  }
};

}  // namespace vigil::test::events_api
