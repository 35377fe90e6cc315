// The audit trail in a real catalog: rows added with who, what and when, listed newest first and
// filtered by action and camera; a lock's release row reads its camera, range and reason from the
// lock; a bad action is refused before SQL.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/audit_rows.hpp"
#include "catalog/migrator.hpp"
#include "catalog/token_rows.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

TEST_CASE("audit rows: written, listed newest first, filtered", "[audit]") {
  const std::string db = test::shared_cluster().create_database("audit");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  pqxx::work tx(conn);
  const auto token = catalog::create_token(tx, "viewer", "desk");
  catalog::AuditRow row{.action = "export",
                        .token_id = token.id,
                        .who = "desk",
                        .camera = "gate",
                        .from_us = 1'000,
                        .to_us = 2'000,
                        .reason = ""};
  const auto first = catalog::insert_audit(tx, row);
  row.camera = "porch";
  const auto second = catalog::insert_audit(tx, row);
  CHECK(second > first);
  catalog::insert_audit(
      tx,
      catalog::AuditRow{.action = "lock_create", .who = "no-auth", .camera = "gate", .lock_id = 7, .reason = "case 1"});
  const catalog::AuditQuery all{.from_us = 0, .to_us = std::int64_t{1} << 62};
  auto rows = catalog::list_audit(tx, all);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].action == "lock_create");  // newest first
  CHECK_FALSE(rows[0].token_id.has_value());
  CHECK(rows[0].lock_id == std::optional<std::int64_t>(7));
  CHECK(rows[2].id == first);
  CHECK(rows[2].token_id == std::optional<std::int64_t>(token.id));
  CHECK(rows[2].from_us == std::optional<std::int64_t>(1'000));
  CHECK(rows[2].at_us > 0);
  auto q = all;
  q.action = "export";
  q.camera = "gate";
  rows = catalog::list_audit(tx, q);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].id == first);
  CHECK_THROWS_AS(catalog::insert_audit(tx, catalog::AuditRow{.action = "delete"}), std::invalid_argument);
}
