#include "catalog/migrator.hpp"

#include <chrono>
#include <cstdio>
#include <pqxx/pqxx>
#include <span>
#include <string_view>
#include <utility>

#include "common/log.hpp"
#include "schema/migrations.hpp"

namespace vigil::catalog {
namespace {

// pg_advisory_xact_lock key shared by every Vigil migrator: ASCII "vigilsch".
constexpr long long kMigrationLockKey = 0x76696769'6c736368;

// Owned by the migrator, not by a migration: its shape never changes. (applied_at is the one
// timestamptz in the catalog; everything the migrations create uses bigint microseconds.)
constexpr const char* kCreateVersionTable = R"(
CREATE TABLE vigil_schema_version (
  version    integer PRIMARY KEY CHECK (version > 0),
  name       text NOT NULL,
  sql_sha256 text,
  applied_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE vigil_schema_version IS
  'One row per applied catalog migration (schema/NNNN_name.sql). Written only by the vigil migrator.';
)";

std::string label(int version, std::string_view name) {
  char number[16];
  std::snprintf(number, sizeof number, "%04d", version);
  return std::string(number) + "_" + std::string(name);
}

std::string first_line(std::string_view text) {
  const auto end = text.find('\n');
  return std::string(text.substr(0, end));
}

void check_embedded(std::span<const schema::Migration> all) {
  if (all.empty() || static_cast<int>(all.size()) != schema::latest_version()) {
    throw std::logic_error("embedded catalog migrations: latest_version() does not match their count");
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].version != static_cast<int>(i) + 1) {
      throw std::logic_error("embedded catalog migrations are not numbered 1..N without holes");
    }
  }
}

bool version_table_exists(pqxx::transaction_base& tx) {
  return !tx.exec("SELECT to_regclass('vigil_schema_version')")[0][0].is_null();
}

// The highest applied version; throws if the table has holes (someone edited it by hand).
int read_version(pqxx::transaction_base& tx) {
  const auto row = tx.exec("SELECT coalesce(max(version), 0), count(*) FROM vigil_schema_version")[0];
  const int max_version = row[0].as<int>();
  const long long rows = row[1].as<long long>();
  if (rows != max_version) {
    throw std::runtime_error("catalog: vigil_schema_version holds " + std::to_string(rows) +
                             " rows but its highest version is " + std::to_string(max_version) +
                             "; the table was edited by hand and needs repair");
  }
  return max_version;
}

// A released migration must never change; warn (do not refuse) when one was edited after
// this database applied it, since the database has the old text's effect.
void warn_if_edited(pqxx::transaction_base& tx, std::span<const schema::Migration> all) {
  const auto rows = tx.exec("SELECT version, sql_sha256 FROM vigil_schema_version ORDER BY version");
  for (const auto& row : rows) {
    const int version = row[0].as<int>();
    if (version < 1 || version > static_cast<int>(all.size()) || row[1].is_null()) continue;
    const schema::Migration& m = all[static_cast<std::size_t>(version) - 1];
    if (row[1].as<std::string>() != m.sha256) {
      log::warn("catalog migration changed after it was applied; released migrations must not be edited",
                {{"migration", label(m.version, m.name)},
                 {"applied_sha256", row[1].as<std::string>()},
                 {"embedded_sha256", m.sha256}});
    }
  }
}

}  // namespace

SchemaTooNew::SchemaTooNew(int db_version, int binary_version)
    : std::runtime_error("the catalog database has schema version " + std::to_string(db_version) +
                         ", newer than this vigil understands (up to " + std::to_string(binary_version) +
                         "); upgrade vigil to a release that knows schema version " + std::to_string(db_version) +
                         ", or point it at another database"),
      db_version_(db_version),
      binary_version_(binary_version) {}

MigrationFailed::MigrationFailed(int version, const std::string& name, std::string sqlstate, const std::string& cause)
    : std::runtime_error("catalog migration " + label(version, name) + " failed and was rolled back: " +
                         first_line(cause) + (sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")")),
      version_(version),
      sqlstate_(std::move(sqlstate)) {}

CatalogReadOnly::CatalogReadOnly()
    : std::runtime_error(
          "the catalog server is read-only (a standby?): vigild writes to the primary only; give --db the "
          "primary, or every host (host=a,b port=p,q) with target_session_attrs=read-write") {}

MigrationReport migrate(pqxx::connection& conn) {
  const auto all = schema::migrations();
  check_embedded(all);
  const int latest = schema::latest_version();

  MigrationReport report;
  for (bool first = true;; first = false) {
    // One transaction per migration. The advisory lock is held until it commits, so a
    // concurrent migrator reads the version only after this migration is in or out.
    pqxx::work tx(conn, "vigil_migrate");
    if (first && tx.exec1("SHOW transaction_read_only")[0].as<std::string>() == "on") throw CatalogReadOnly();
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
    if (!version_table_exists(tx)) tx.exec(kCreateVersionTable);
    const int db_version = read_version(tx);
    // Checked before anything is applied (on the first pass), and again after each commit in
    // case a newer vigil migrated the database meanwhile.
    if (db_version > latest) throw SchemaTooNew(db_version, latest);
    if (first) {
      report.from_version = db_version;
      warn_if_edited(tx, all);
    }
    if (db_version == latest) {
      tx.commit();
      break;
    }

    const schema::Migration& m = all[static_cast<std::size_t>(db_version)];
    const auto started = std::chrono::steady_clock::now();
    try {
      tx.exec(std::string(m.sql), "migration " + label(m.version, m.name));
    } catch (const pqxx::sql_error& e) {
      throw MigrationFailed(m.version, std::string(m.name), e.sqlstate(), e.what());
    }
    tx.exec_params("INSERT INTO vigil_schema_version (version, name, sql_sha256) VALUES ($1, $2, $3)", m.version,
                   std::string(m.name), std::string(m.sha256));
    tx.commit();
    report.applied.push_back(m.version);
    const auto elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    log::info("catalog migration applied",
              {{"migration", label(m.version, m.name)}, {"elapsed_ms", elapsed_ms.count()}});
  }
  report.to_version = latest;
  return report;
}

int current_version(pqxx::connection& conn) {
  pqxx::read_transaction tx(conn, "vigil_schema_version");
  int version = 0;
  if (version_table_exists(tx)) {
    version = tx.exec("SELECT coalesce(max(version), 0) FROM vigil_schema_version")[0][0].as<int>();
  }
  tx.commit();
  return version;
}

}  // namespace vigil::catalog
