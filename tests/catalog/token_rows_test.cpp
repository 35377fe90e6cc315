// API tokens in a real catalog: only the hash is stored; a token authenticates with its role
// until it is revoked or expires; list and revoke; bad roles and labels are refused before SQL.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/token_rows.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

TEST_CASE("tokens: created once, stored as a hash, valid until revoked or expired", "[token]") {
  const std::string db = test::shared_cluster().create_database("tokens");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  constexpr std::int64_t now = 1'800'000'000'000'000;

  pqxx::work tx(conn);
  const auto viewer = catalog::create_token(tx, "viewer", "wall display");
  const auto admin = catalog::create_token(tx, "admin", "ops");
  const auto brief = catalog::create_token(tx, "recorder", "trial camera", now + 60'000'000);
  CHECK(viewer.token.rfind("vgl_", 0) == 0);
  CHECK(viewer.token.size() == 44);
  CHECK(viewer.token != admin.token);
  // Only the SHA-256 is in the table: the plain text is nowhere.
  CHECK(tx.exec_params1("SELECT count(*) FROM tokens WHERE token_sha256 = $1", viewer.token)[0].as<int>() == 0);
  CHECK(tx.exec_params1("SELECT token_sha256 FROM tokens WHERE id = $1", viewer.id)[0].as<std::string>() ==
        catalog::token_sha256_hex(viewer.token));
  // Known test vector: SHA-256("abc").
  CHECK(catalog::token_sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  auto role = [&](const std::string& token, std::int64_t at) {
    return catalog::role_of_token(tx, catalog::token_sha256_hex(token), at);
  };
  CHECK(role(viewer.token, now) == std::optional<std::string>("viewer"));
  CHECK(role(admin.token, now) == std::optional<std::string>("admin"));
  CHECK(role(brief.token, now) == std::optional<std::string>("recorder"));
  CHECK_FALSE(role(brief.token, now + 60'000'000).has_value());  // expired
  CHECK_FALSE(role("vgl_0000", now).has_value());
  CHECK_FALSE(role("", now).has_value());

  CHECK(catalog::revoke_token(tx, viewer.id));
  CHECK_FALSE(catalog::revoke_token(tx, viewer.id));  // already revoked
  CHECK_FALSE(catalog::revoke_token(tx, 999'999));
  CHECK_FALSE(role(viewer.token, now).has_value());

  const auto rows = catalog::list_tokens(tx);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].label == "wall display");
  CHECK(rows[0].revoked_at_us.has_value());
  CHECK_FALSE(rows[1].revoked_at_us.has_value());
  CHECK(rows[2].expires_at_us == std::optional<std::int64_t>(now + 60'000'000));

  // Revoking by label: vigild's own recorder token of an earlier run.
  catalog::create_token(tx, "recorder", "vigild camera recorders");
  const auto second = catalog::create_token(tx, "recorder", "vigild camera recorders");
  CHECK(catalog::revoke_tokens_labelled(tx, "vigild camera recorders") == 2);
  CHECK_FALSE(role(second.token, now).has_value());

  CHECK_THROWS_AS(catalog::create_token(tx, "root", "x"), std::invalid_argument);
  CHECK_THROWS_AS(catalog::create_token(tx, "viewer", std::string(201, 'x')), std::invalid_argument);
  CHECK_THROWS_AS(catalog::create_token(tx, "viewer", std::string("a\0b", 3)), std::invalid_argument);
}

TEST_CASE("tokens: a camera set and the events role", "[token]") {
  const std::string db = test::shared_cluster().create_database("token_scope");
  pqxx::connection conn(db);
  catalog::migrate(conn);
  constexpr std::int64_t now = 1'800'000'000'000'000;
  pqxx::work tx(conn);
  // "NULL" is a valid camera name: it stays a name, not an SQL null.
  const auto scoped =
      catalog::create_token(tx, "viewer", "lobby", std::nullopt, std::vector<std::string>{"lobby-1", "NULL", "gate.2"});
  const auto events = catalog::create_token(tx, "events", "detector");
  const auto g = catalog::grant_of_token(tx, catalog::token_sha256_hex(scoped.token), now);
  REQUIRE(g);
  CHECK(g->id == scoped.id);
  CHECK(g->role == "viewer");
  CHECK(g->label == "lobby");
  CHECK(g->cameras == std::optional<std::vector<std::string>>({"lobby-1", "NULL", "gate.2"}));
  const auto e = catalog::grant_of_token(tx, catalog::token_sha256_hex(events.token), now);
  REQUIRE(e);
  CHECK(e->role == "events");
  CHECK_FALSE(e->cameras.has_value());
  const auto rows = catalog::list_tokens(tx);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].cameras == g->cameras);
  CHECK_FALSE(rows[1].cameras.has_value());
  // Bad sets are refused before SQL: empty, or a name that is not a camera name.
  CHECK_THROWS_AS(catalog::create_token(tx, "viewer", "x", std::nullopt, std::vector<std::string>{}),
                  std::invalid_argument);
  CHECK_THROWS_AS(catalog::create_token(tx, "viewer", "x", std::nullopt, std::vector<std::string>{"a\"},{b"}),
                  std::invalid_argument);
}
