#include "catalog/audit_rows.hpp"

#include <pqxx/pqxx>

#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

std::optional<std::int64_t> opt_int(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
}

bool valid_action(const std::string& a) { return a == "export" || a == "lock_create" || a == "lock_release"; }

}  // namespace

std::int64_t insert_audit(pqxx::transaction_base& tx, const AuditRow& row) {
  if (!valid_action(row.action))
    throw CatalogError::invalid("audit action must be export, lock_create or lock_release");
  return tx
      .exec_params1(
          "INSERT INTO audit_log (action, token_id, who, camera, from_us, to_us, lock_id, reason) "
          "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
          row.action, row.token_id, row.who, row.camera, row.from_us, row.to_us, row.lock_id, row.reason)[0]
      .as<std::int64_t>();
}

void audit_lock_release(pqxx::transaction_base& tx, std::int64_t lock_id, std::optional<std::int64_t> token_id,
                        const std::string& who) {
  tx.exec_params(
      "INSERT INTO audit_log (action, token_id, who, camera, from_us, to_us, lock_id, reason) "
      "SELECT 'lock_release', $2, $3, c.name, l.start_us, l.end_us, l.id, l.reason "
      "FROM evidence_locks l JOIN streams s ON s.id = l.stream_id JOIN cameras c ON c.id = s.camera_id "
      "WHERE l.id = $1",
      lock_id, token_id, who);
}

std::vector<AuditRow> list_audit(pqxx::transaction_base& tx, const AuditQuery& q) {
  std::vector<AuditRow> out;
  const auto rows = tx.exec_params(
      "SELECT id, at_us, action, token_id, who, camera, from_us, to_us, lock_id, reason FROM audit_log "
      "WHERE at_us >= $1 AND at_us < $2 AND ($3::text IS NULL OR action = $3) AND ($4::text IS NULL OR camera = $4) "
      "ORDER BY at_us DESC, id DESC LIMIT $5",
      q.from_us, q.to_us, q.action, q.camera, static_cast<std::int64_t>(q.limit));
  for (const auto& r : rows) {
    out.push_back({r[0].as<std::int64_t>(), r[1].as<std::int64_t>(), r[2].as<std::string>(), opt_int(r[3]),
                   r[4].as<std::string>(), r[5].as<std::string>(), opt_int(r[6]), opt_int(r[7]), opt_int(r[8]),
                   r[9].as<std::string>()});
  }
  return out;
}

}  // namespace vigil::catalog
