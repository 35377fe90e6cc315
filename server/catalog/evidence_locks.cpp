#include "server/catalog/evidence_locks.hpp"

#include <pqxx/pqxx>
#include <stdexcept>

namespace vigil::catalog {

std::int64_t add_evidence_lock(pqxx::work& tx, const LockRequest& r) {
  if (r.end_us <= r.start_us) throw std::invalid_argument("evidence lock: the range must end after it starts");
  if (r.reason.empty()) throw std::invalid_argument("evidence lock: a reason is required");
  return tx
      .exec_params1("INSERT INTO evidence_locks (stream_id, start_us, end_us, reason, locked_by) "
                    "VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    r.stream_id, r.start_us, r.end_us, r.reason, r.locked_by)[0]
      .as<std::int64_t>();
}

bool remove_evidence_lock(pqxx::work& tx, std::int64_t id) {
  auto r = tx.exec_params("UPDATE evidence_locks SET unlocked_at_us = GREATEST(vigil_now_us(), locked_at_us) "
                          "WHERE id = $1 AND unlocked_at_us IS NULL",
                          id);
  return r.affected_rows() == 1;
}

std::vector<storage::EvidenceLock> active_evidence_locks(pqxx::work& tx, std::int64_t volume_id) {
  // A lock matters on a volume when any segment of its stream is there.
  auto rows = volume_id == 0
                  ? tx.exec("SELECT stream_id, start_us, end_us FROM evidence_locks WHERE unlocked_at_us IS NULL")
                  : tx.exec_params("SELECT l.stream_id, l.start_us, l.end_us FROM evidence_locks l "
                                   "WHERE l.unlocked_at_us IS NULL AND EXISTS (SELECT 1 FROM segments s "
                                   "WHERE s.stream_id = l.stream_id AND s.volume_id = $1)",
                                   volume_id);
  std::vector<storage::EvidenceLock> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    out.push_back({static_cast<std::uint64_t>(row[0].as<std::int64_t>()), row[1].as<std::int64_t>(),
                   row[2].as<std::int64_t>()});
  }
  return out;
}

}  // namespace vigil::catalog
