// Catalog migrations and the first schema, against a real PostgreSQL (one throwaway cluster
// per test process, a fresh database per test case).
#include "catalog/migrator.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <exception>
#include <latch>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "schema/migrations.hpp"
#include "tests/support/temp_cluster.hpp"

using Catch::Matchers::ContainsSubstring;
using vigil::catalog::current_version;
using vigil::catalog::migrate;
using vigil::catalog::MigrationFailed;
using vigil::catalog::SchemaTooNew;

namespace {

const char* const kCatalogTables[] = {
    "cameras",   "disks", "volumes", "disk_profiles",       "streams", "segments",  "segment_extents",
    "gop_index", "gaps",  "events",  "admission_decisions", "tokens",  "audit_log", "vigil_schema_version",
};

std::string fresh_database(std::string_view hint) { return vigil::test::shared_cluster().create_database(hint); }

std::vector<int> all_versions() {
  std::vector<int> out;
  for (int v = 1; v <= vigil::schema::latest_version(); ++v) out.push_back(v);
  return out;
}

long long scalar(pqxx::connection& conn, const std::string& sql) {
  pqxx::nontransaction tx(conn);
  return tx.exec1(sql)[0].as<long long>();
}

std::string text(pqxx::connection& conn, const std::string& sql) {
  pqxx::nontransaction tx(conn);
  return tx.exec1(sql)[0].as<std::string>();
}

bool table_exists(pqxx::connection& conn, const std::string& table) {
  pqxx::nontransaction tx(conn);
  return tx.exec_params1("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = $1", table)[0]
             .as<int>() == 1;
}

void exec(pqxx::connection& conn, const std::string& sql) {
  pqxx::work tx(conn);
  tx.exec(sql);
  tx.commit();
}

// Runs SQL in its own transaction; returns the SQLSTATE it failed with, "" if it succeeded.
std::string sqlstate_of(pqxx::connection& conn, const std::string& sql) {
  try {
    exec(conn, sql);
    return "";
  } catch (const pqxx::sql_error& e) {
    return e.sqlstate();
  }
}

constexpr const char* kCheckViolation = "23514";
constexpr const char* kForeignKeyViolation = "23503";

// The version table as the migrator creates it, for databases the tests fake.
constexpr const char* kFakeVersionTable =
    "CREATE TABLE vigil_schema_version (version integer PRIMARY KEY, name text NOT NULL,"
    " sql_sha256 text, applied_at timestamptz NOT NULL DEFAULT now())";

// A camera, disk, volume, recording stream and closed segment; ids are all 1.
void seed_recording(pqxx::connection& conn) {
  exec(conn, R"(
    INSERT INTO cameras (id, name, url) VALUES (1, 'gate-1', 'rtsp://10.0.0.5/main');
    INSERT INTO disks (id, node, device_path, capacity_bytes) VALUES (1, 'node-a', '/dev/sdb', 4000000000000);
    INSERT INTO volumes (id, disk_id, path, capacity_bytes, extent_bytes)
      VALUES (1, 1, '/dev/sdb', 4000000000000, 268435456);
    INSERT INTO streams (id, camera_id, disk_id, codec, width, height, declared_rate_bps, admitted_rate_bps, state)
      VALUES (1, 1, 1, 'h264', 1920, 1080, 4000000, 4500000, 'recording');
    INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count,
                          checksum_crc32c, closed_at_us)
      VALUES (1, 1, 1, 'closed', 1700000000000000, 1700000060000000, 30000000, 1500, 3735928559, 1700000061000000);
    INSERT INTO segment_extents (segment_id, ordinal, volume_offset_bytes, length_bytes)
      VALUES (1, 0, 0, 268435456);
    INSERT INTO gop_index (segment_id, format, gop_count, blob) VALUES (1, 1, 30, '\x0102'::bytea);
  )");
}

}  // namespace

TEST_CASE("embedded migrations are numbered 1..N and carry their text and checksum", "[catalog][migrator]") {
  const auto all = vigil::schema::migrations();
  REQUIRE(vigil::schema::latest_version() >= 1);
  REQUIRE(static_cast<int>(all.size()) == vigil::schema::latest_version());
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].version == static_cast<int>(i) + 1);
    CHECK_FALSE(all[i].name.empty());
    CHECK(all[i].sha256.size() == 64);
    // Each holds DDL (a later migration may only ALTER what exists).
    CHECK((all[i].sql.find("CREATE") != std::string_view::npos || all[i].sql.find("ALTER") != std::string_view::npos));
  }
  CHECK(all[0].name == "catalog");
  // The raw string literal kept the whole file, up to its last statement.
  CHECK_THAT(std::string(all[0].sql), ContainsSubstring("CREATE TABLE tokens"));
}

TEST_CASE("migrate on an empty database applies every migration and creates the catalog", "[catalog][migrator]") {
  pqxx::connection conn(fresh_database("migrate_empty"));
  REQUIRE(current_version(conn) == 0);

  const auto report = migrate(conn);

  CHECK(report.from_version == 0);
  CHECK(report.to_version == vigil::schema::latest_version());
  CHECK(report.applied == all_versions());
  CHECK(current_version(conn) == vigil::schema::latest_version());
  for (const char* table : kCatalogTables) {
    INFO("table " << table);
    CHECK(table_exists(conn, table));
  }
  CHECK(scalar(conn, "SELECT count(*) FROM vigil_schema_version") == vigil::schema::latest_version());
  CHECK(text(conn, "SELECT name FROM vigil_schema_version WHERE version = 1") == "catalog");
  CHECK(text(conn, "SELECT sql_sha256 FROM vigil_schema_version WHERE version = 1") ==
        vigil::schema::migrations()[0].sha256);
}

TEST_CASE("migrate on an up-to-date database is a no-op", "[catalog][migrator]") {
  pqxx::connection conn(fresh_database("migrate_twice"));
  migrate(conn);
  const std::string versions_sql =
      "SELECT string_agg(version || ' ' || name || ' ' || applied_at, ',' ORDER BY version) FROM vigil_schema_version";
  const std::string objects_sql = "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace";
  const std::string versions_before = text(conn, versions_sql);
  const long long objects_before = scalar(conn, objects_sql);

  const auto report = migrate(conn);

  CHECK(report.applied.empty());
  CHECK(report.from_version == vigil::schema::latest_version());
  CHECK(report.to_version == vigil::schema::latest_version());
  CHECK(text(conn, versions_sql) == versions_before);
  CHECK(scalar(conn, objects_sql) == objects_before);
}

TEST_CASE("a read-only server (a standby) is refused with what to give --db, and nothing is touched",
          "[catalog][migrator]") {
  const auto conninfo = fresh_database("read_only");
  {
    // Sessions of this database refuse writes from now on, as a hot standby's do.
    pqxx::connection admin(conninfo);
    exec(admin, "ALTER DATABASE " + admin.quote_name(admin.dbname()) + " SET default_transaction_read_only = on");
  }
  pqxx::connection conn(conninfo);
  try {
    migrate(conn);
    FAIL("migrate succeeded on a read-only server");
  } catch (const vigil::catalog::CatalogReadOnly& e) {
    CHECK_THAT(e.what(), ContainsSubstring("read-only"));
    CHECK_THAT(e.what(), ContainsSubstring("target_session_attrs=read-write"));
  }
  CHECK(scalar(conn, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace") == 0);
}

TEST_CASE("a database newer than this binary is refused before anything is applied", "[catalog][migrator]") {
  const int latest = vigil::schema::latest_version();
  const int newer = latest + 1;
  pqxx::connection conn(fresh_database("too_new"));
  // A database whose every migration came from a newer release: only the version table exists,
  // so whatever migrate() applied would show up as a catalog table.
  exec(conn, kFakeVersionTable);
  exec(conn, "INSERT INTO vigil_schema_version (version, name) SELECT v, 'future' FROM generate_series(1, " +
                 std::to_string(newer) + ") AS v");

  bool thrown = false;
  try {
    migrate(conn);
  } catch (const SchemaTooNew& e) {
    thrown = true;
    CHECK(e.db_version() == newer);
    CHECK(e.binary_version() == latest);
    CHECK(e.code() == vigil::errc::schema_too_new);
    CHECK_THAT(e.what(), ContainsSubstring("upgrade vigil"));
    CHECK_THAT(e.what(), ContainsSubstring(std::to_string(newer)));
  }
  CHECK(thrown);
  CHECK_FALSE(table_exists(conn, "cameras"));
  CHECK(scalar(conn, "SELECT count(*) FROM vigil_schema_version") == newer);
  CHECK(current_version(conn) == newer);
}

TEST_CASE("an up-to-date catalog is refused once a newer release has migrated it", "[catalog][migrator]") {
  pqxx::connection conn(fresh_database("too_new_later"));
  migrate(conn);
  exec(conn, "INSERT INTO vigil_schema_version (version, name) VALUES (" +
                 std::to_string(vigil::schema::latest_version() + 1) + ", 'future')");
  CHECK_THROWS_AS(migrate(conn), SchemaTooNew);
}

TEST_CASE("a version table with holes is refused, not papered over", "[catalog][migrator]") {
  pqxx::connection conn(fresh_database("version_holes"));
  exec(conn, kFakeVersionTable);
  exec(conn, "INSERT INTO vigil_schema_version (version, name) VALUES (2, 'orphan')");
  CHECK_THROWS_WITH(migrate(conn), ContainsSubstring("edited by hand"));
  CHECK_FALSE(table_exists(conn, "cameras"));
}

TEST_CASE("a migration that fails midway is rolled back whole", "[catalog][migrator]") {
  pqxx::connection conn(fresh_database("migrate_conflict"));
  // 0001 creates cameras ... segments before events; an incompatible events table makes it
  // fail after those have been created in its transaction.
  exec(conn, "CREATE TABLE events (note text)");

  bool thrown = false;
  try {
    migrate(conn);
  } catch (const MigrationFailed& e) {
    thrown = true;
    CHECK(e.version() == 1);
    CHECK(e.sqlstate() == "42P07");  // duplicate_table
    CHECK_THAT(e.what(), ContainsSubstring("0001_catalog"));
  }
  CHECK(thrown);
  CHECK(current_version(conn) == 0);
  CHECK_FALSE(table_exists(conn, "vigil_schema_version"));
  CHECK_FALSE(table_exists(conn, "cameras"));
  CHECK_FALSE(table_exists(conn, "segments"));
  CHECK(scalar(conn, "SELECT count(*) FROM pg_proc WHERE proname = 'vigil_now_us'") == 0);

  // Once the conflict is gone, the same migration applies cleanly.
  exec(conn, "DROP TABLE events");
  CHECK(migrate(conn).applied == all_versions());
  CHECK(table_exists(conn, "events"));
}

TEST_CASE("concurrent migrators apply each migration exactly once", "[catalog][migrator]") {
  const std::string conninfo = fresh_database("migrate_concurrent");
  constexpr int kMigrators = 4;
  std::vector<vigil::catalog::MigrationReport> reports(kMigrators);
  std::vector<std::exception_ptr> errors(kMigrators);
  std::latch start(kMigrators);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kMigrators; ++i) {
      threads.emplace_back([&, i] {
        try {
          pqxx::connection conn(conninfo);
          start.arrive_and_wait();
          reports[i] = migrate(conn);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
  }

  std::vector<int> applied;
  for (int i = 0; i < kMigrators; ++i) {
    if (errors[i]) {
      try {
        std::rethrow_exception(errors[i]);
      } catch (const std::exception& e) {
        FAIL("migrator " << i << " threw: " << e.what());
      }
    }
    CHECK(reports[i].to_version == vigil::schema::latest_version());
    applied.insert(applied.end(), reports[i].applied.begin(), reports[i].applied.end());
  }
  std::sort(applied.begin(), applied.end());
  CHECK(applied == all_versions());
  pqxx::connection conn(conninfo);
  CHECK(scalar(conn, "SELECT count(*) FROM vigil_schema_version") == vigil::schema::latest_version());
}

TEST_CASE("catalog constraints reject impossible rows", "[catalog][schema]") {
  pqxx::connection conn(fresh_database("constraints"));
  migrate(conn);
  seed_recording(conn);

  SECTION("gaps have a positive length and a known reason") {
    CHECK(
        sqlstate_of(conn, "INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES (1, 100, 200, 'source_lost')")
            .empty());
    CHECK(sqlstate_of(conn,
                      "INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES (1, 200, 100, 'source_lost')") ==
          kCheckViolation);
    CHECK(sqlstate_of(conn,
                      "INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES (1, 100, 100, 'source_lost')") ==
          kCheckViolation);
    CHECK(
        sqlstate_of(conn, "INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES (1, 100, 200, 'gremlins')") ==
        kCheckViolation);
    CHECK(
        sqlstate_of(conn, "INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES (99, 100, 200, 'io_error')") ==
        kForeignKeyViolation);
  }
  SECTION("tokens are stored as a SHA-256 hex digest with a known role") {
    const std::string digest(64, 'a');
    CHECK(sqlstate_of(conn, "INSERT INTO tokens (token_sha256, role) VALUES ('" + digest + "', 'viewer')").empty());
    CHECK(sqlstate_of(conn, "INSERT INTO tokens (token_sha256, role) VALUES ('" + std::string(64, 'b') +
                                "', 'root')") == kCheckViolation);
    CHECK(sqlstate_of(conn, "INSERT INTO tokens (token_sha256, role) VALUES ('s3cret-plaintext', 'admin')") ==
          kCheckViolation);
    CHECK(sqlstate_of(conn, "INSERT INTO tokens (token_sha256, role) VALUES ('" + digest + "', 'admin')") ==
          "23505");  // unique_violation
  }
  SECTION("segments end after they start, and a closed segment has its checksum") {
    CHECK(sqlstate_of(conn, "INSERT INTO segments (stream_id, volume_id, start_us, end_us) VALUES (1, 1, 500, 400)") ==
          kCheckViolation);
    CHECK(sqlstate_of(conn,
                      "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, closed_at_us)"
                      " VALUES (1, 1, 'closed', 400, 500, 600)") == kCheckViolation);
    CHECK(sqlstate_of(conn, "INSERT INTO segments (stream_id, volume_id, start_us, end_us) VALUES (1, 1, 400, 400)")
              .empty());
  }
  SECTION("rates are positive and a recording stream has an admitted rate") {
    CHECK(sqlstate_of(conn, "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES (1, 'h264', 0)") ==
          kCheckViolation);
    CHECK(sqlstate_of(conn,
                      "INSERT INTO streams (camera_id, disk_id, codec, declared_rate_bps, state)"
                      " VALUES (1, 1, 'h264', 1000000, 'recording')") == kCheckViolation);
    CHECK(sqlstate_of(conn, "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES (1, 'h264', 1000000)")
              .empty());
  }
  SECTION("events lie inside the frame and end after they start") {
    CHECK(sqlstate_of(conn,
                      "INSERT INTO events (camera_id, start_us, end_us, type, location)"
                      " VALUES (1, 10, 10, 'motion', box '(0.1,0.1),(0.5,0.5)')")
              .empty());
    CHECK(sqlstate_of(conn,
                      "INSERT INTO events (camera_id, start_us, end_us, type, location)"
                      " VALUES (1, 10, 20, 'motion', box '(0.5,0.5),(1.5,0.9)')") == kCheckViolation);
    CHECK(sqlstate_of(conn, "INSERT INTO events (camera_id, start_us, end_us, type) VALUES (1, 20, 10, 'motion')") ==
          kCheckViolation);
    CHECK(sqlstate_of(conn,
                      "INSERT INTO events (camera_id, start_us, end_us, type, attributes)"
                      " VALUES (1, 10, 20, 'object', '[1, 2]')") == kCheckViolation);
  }
  SECTION("volume extents are whole O_DIRECT blocks") {
    CHECK(sqlstate_of(conn,
                      "INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes)"
                      " VALUES (1, '/dev/sdb2', 1000000000, 1000)") == kCheckViolation);
    CHECK(sqlstate_of(conn,
                      "INSERT INTO volumes (disk_id, path, capacity_bytes, block_bytes, extent_bytes)"
                      " VALUES (1, '/dev/sdb2', 1000000000, 3000, 3000)") == kCheckViolation);
  }
}

TEST_CASE("deletes keep recorded evidence and take dependent rows along", "[catalog][schema]") {
  pqxx::connection conn(fresh_database("deletes"));
  migrate(conn);
  seed_recording(conn);
  exec(conn, R"(
    INSERT INTO gaps (stream_id, start_us, end_us, reason) VALUES (1, 1700000060000000, 1700000061000000, 'source_lost');
    INSERT INTO admission_decisions (stream_id, camera_id, disk_id, policy, outcome, requested_rate_bps,
                                     admitted_rate_bps, cycle_us)
      VALUES (1, 1, 1, 'conservative', 'admitted', 4000000, 4500000, 1000000);
  )");

  // A stream (or camera, or volume) that still has segments cannot be deleted.
  CHECK(sqlstate_of(conn, "DELETE FROM streams WHERE id = 1") == kForeignKeyViolation);
  CHECK(sqlstate_of(conn, "DELETE FROM cameras WHERE id = 1") == kForeignKeyViolation);
  CHECK(sqlstate_of(conn, "DELETE FROM volumes WHERE id = 1") == kForeignKeyViolation);

  // Deleting a segment takes its extents and GOP index with it.
  exec(conn, "DELETE FROM segments WHERE id = 1");
  CHECK(scalar(conn, "SELECT count(*) FROM gop_index") == 0);
  CHECK(scalar(conn, "SELECT count(*) FROM segment_extents") == 0);

  // Then the stream goes, with its gaps; the admission audit row stays, detached.
  exec(conn, "DELETE FROM streams WHERE id = 1");
  CHECK(scalar(conn, "SELECT count(*) FROM gaps") == 0);
  CHECK(scalar(conn, "SELECT count(*) FROM admission_decisions WHERE stream_id IS NULL AND camera_id = 1") == 1);
}

TEST_CASE("time-range queries are served by indexes", "[catalog][schema]") {
  pqxx::connection conn(fresh_database("explain"));
  migrate(conn);

  // With sequential scans priced out, a query the schema has no index for still plans a
  // Seq Scan; one it has an index for names that index.
  auto plan = [&](const std::string& query) {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL enable_seqscan = off");
    std::string out;
    for (const auto& row : tx.exec("EXPLAIN " + query)) out += row[0].as<std::string>() + "\n";
    return out;
  };

  CHECK_THAT(plan("SELECT id FROM events"
                  " WHERE int8range(start_us, end_us, '[]') && int8range(1700000000000000, 1700003600000000, '[]')"),
             ContainsSubstring("events_time_range"));
  CHECK_THAT(plan("SELECT id FROM events WHERE camera_id = 1"
                  " AND start_us BETWEEN 1700000000000000 AND 1700003600000000"),
             ContainsSubstring("events_camera_start"));
  // Playback: the segment holding time t, and the segments after it.
  CHECK_THAT(plan("SELECT id FROM segments WHERE stream_id = 1 AND start_us <= 1700000030000000"
                  " ORDER BY start_us DESC LIMIT 1"),
             ContainsSubstring("segments_stream_start"));
  CHECK_THAT(plan("SELECT id FROM gaps WHERE stream_id = 1 AND start_us < 1700003600000000"
                  " ORDER BY start_us"),
             ContainsSubstring("gaps_stream_start"));
}
