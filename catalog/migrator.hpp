#pragma once
// Brings a PostgreSQL database to the catalog schema this binary embeds (schema/NNNN_*.sql,
// see schema/migrations.hpp and docs/catalog.md). vigild calls migrate() once at start-up,
// before it serves anything.
//
// Versions live in vigil_schema_version (version, name, sql_sha256, applied_at), one row per
// applied migration; the migrator creates that table itself.
//
// Errors: catalog-layer policy (common/errors.hpp): these functions throw. pqxx exceptions
// pass through unchanged (pqxx::broken_connection, ...), except that an SQL error raised by a
// migration's own statements becomes MigrationFailed. Whatever is thrown, the migration in
// progress is rolled back completely; migrations finished before it stay applied.
//
// Threads: call from any one thread, with a connection that no other thread uses and that has
// no transaction open. Several processes (or threads, on their own connections) may migrate
// the same database at once: they serialise on a transaction-scoped advisory lock, and each
// migration is applied exactly once.
#include <pqxx/connection>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace vigil::catalog {

struct MigrationReport {
  int from_version = 0;      // schema version found (0: empty database)
  int to_version = 0;        // schema version left (always schema::latest_version())
  std::vector<int> applied;  // versions this call applied, ascending; empty if none
};

// The database was written by a newer Vigil than this binary: refused before anything is
// touched. what() is one line telling the operator to upgrade vigil.
class SchemaTooNew : public std::runtime_error {
 public:
  SchemaTooNew(int db_version, int binary_version);
  int db_version() const noexcept { return db_version_; }
  int binary_version() const noexcept { return binary_version_; }
  boost::system::error_code code() const noexcept { return make_error_code(errc::schema_too_new); }

 private:
  int db_version_;
  int binary_version_;
};

// A statement of migration VERSION failed; that migration was rolled back as a whole.
// what() names the migration and carries PostgreSQL's first error line.
class MigrationFailed : public std::runtime_error {
 public:
  MigrationFailed(int version, const std::string& name, std::string sqlstate, const std::string& cause);
  int version() const noexcept { return version_; }
  const std::string& sqlstate() const noexcept { return sqlstate_; }  // e.g. "42P07"

 private:
  int version_;
  std::string sqlstate_;
};

// The server refuses writes (SHOW transaction_read_only: a hot standby, or a database made
// read-only): vigild's catalog must be the primary. Refused before anything is touched, since a
// standby that is up to date would otherwise pass and every later write fail. what() is one line
// saying what to give --db (docs/catalog.md, "PostgreSQL high availability").
class CatalogReadOnly : public std::runtime_error {
 public:
  CatalogReadOnly();
};

// Applies every missing migration in order, each in its own transaction together with its
// version row. Checks for a read-only server (throws CatalogReadOnly) and a too-new database
// (throws SchemaTooNew) before applying anything.
// A no-op (applied empty) on an up-to-date database. Logs each migration applied, and warns
// if an applied migration's recorded SHA-256 differs from the embedded file (it was edited
// after release). Throws std::logic_error if the embedded migrations are not 1..N.
MigrationReport migrate(pqxx::connection& conn);

// The schema version of the database: 0 on an empty database (no version table). Read-only.
int current_version(pqxx::connection& conn);

}  // namespace vigil::catalog
