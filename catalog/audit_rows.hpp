#pragma once
// The audit trail (table `audit_log`, docs/catalog.md): who exported which camera's range, and
// who created or released which evidence lock, and when. Rows are only ever added.
// Thread: the catalog pool. Errors: throws (pqxx; CatalogError for a bad action, before any SQL).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

namespace vigil::catalog {

struct AuditRow {
  std::int64_t id = 0;                     // set by the catalog
  std::int64_t at_us = 0;                  // set by the catalog (its clock)
  std::string action{};                    // export, lock_create, lock_release
  std::optional<std::int64_t> token_id{};  // nullopt: vigild runs without tokens
  std::string who{};                       // the token's label (and a lock's locked_by)
  std::string camera{};
  std::optional<std::int64_t> from_us{}, to_us{};
  std::optional<std::int64_t> lock_id{};
  std::string reason{};  // a lock's reason; an export's options
};

// Adds ROW (its id and at_us are the catalog's); returns the id.
std::int64_t insert_audit(pqxx::transaction_base& tx, const AuditRow& row);
// Adds a lock_release row for lock LOCK_ID, its camera, range and reason read from the lock.
void audit_lock_release(pqxx::transaction_base& tx, std::int64_t lock_id, std::optional<std::int64_t> token_id,
                        const std::string& who);

struct AuditQuery {
  std::optional<std::string> action{};  // only this action
  std::optional<std::string> camera{};  // only this camera
  std::int64_t from_us = 0, to_us = 0;  // at_us in [from_us, to_us)
  std::size_t limit = 100;
};
// Rows, newest first.
std::vector<AuditRow> list_audit(pqxx::transaction_base& tx, const AuditQuery& q);

}  // namespace vigil::catalog
