#include "catalog/evidence_locks.hpp"

#include <algorithm>
#include <pqxx/pqxx>
#include <stdexcept>

#include "catalog/catalog_error.hpp"

namespace vigil::catalog {

std::int64_t add_evidence_lock(pqxx::work& tx, const LockRequest& r) {
  if (r.end_us <= r.start_us) throw CatalogError::invalid("evidence lock: the range must end after it starts");
  if (r.reason.empty()) throw CatalogError::invalid("evidence lock: a reason is required");
  return tx
      .exec_params1(
          "INSERT INTO evidence_locks (stream_id, start_us, end_us, reason, locked_by) "
          "VALUES ($1, $2, $3, $4, $5) RETURNING id",
          r.stream_id, r.start_us, r.end_us, r.reason, r.locked_by)[0]
      .as<std::int64_t>();
}

bool remove_evidence_lock(pqxx::work& tx, std::int64_t id) {
  auto r = tx.exec_params(
      "UPDATE evidence_locks SET unlocked_at_us = GREATEST(vigil_now_us(), locked_at_us) "
      "WHERE id = $1 AND unlocked_at_us IS NULL",
      id);
  return r.affected_rows() == 1;
}

std::optional<std::vector<std::int64_t>> lock_camera_range(pqxx::work& tx, const std::string& camera,
                                                           std::int64_t start_us, std::int64_t end_us,
                                                           const std::string& reason, const std::string& locked_by) {
  if (end_us <= start_us) throw CatalogError::invalid("evidence lock: the range must end after it starts");
  if (reason.empty() || reason.size() > 1000)
    throw CatalogError::invalid("evidence lock: a reason of 1-1000 bytes is required");
  auto cam = tx.exec_params("SELECT id FROM cameras WHERE name = $1", camera);
  if (cam.empty()) return std::nullopt;
  // Streams still recording have no end yet: they overlap anything after their start.
  auto rows = tx.exec_params(
      "INSERT INTO evidence_locks (stream_id, start_us, end_us, reason, locked_by) "
      "SELECT id, $2, $3, $4, $5 FROM streams WHERE camera_id = $1 AND started_at_us < $3 "
      "AND (ended_at_us IS NULL OR ended_at_us > $2) ORDER BY id RETURNING id",
      cam[0][0].as<std::int64_t>(), start_us, end_us, reason, locked_by);
  std::vector<std::int64_t> ids;
  for (const auto& r : rows) ids.push_back(r[0].as<std::int64_t>());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<LockRow> list_evidence_locks(pqxx::work& tx, bool all, std::size_t limit) {
  auto rows = tx.exec_params(
      "SELECT l.id, l.stream_id, c.name, l.start_us, l.end_us, l.reason, l.locked_by, l.locked_at_us, "
      "l.unlocked_at_us FROM evidence_locks l JOIN streams s ON s.id = l.stream_id JOIN cameras c ON c.id = "
      "s.camera_id WHERE $1 OR l.unlocked_at_us IS NULL ORDER BY l.id DESC LIMIT $2",
      all, static_cast<std::int64_t>(limit));
  std::vector<LockRow> out;
  for (const auto& r : rows) {
    LockRow l;
    l.id = r[0].as<std::int64_t>();
    l.stream_id = r[1].as<std::int64_t>();
    l.camera = r[2].as<std::string>();
    l.start_us = r[3].as<std::int64_t>();
    l.end_us = r[4].as<std::int64_t>();
    l.reason = r[5].as<std::string>();
    l.locked_by = r[6].as<std::string>();
    l.locked_at_us = r[7].as<std::int64_t>();
    if (!r[8].is_null()) l.unlocked_at_us = r[8].as<std::int64_t>();
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<storage::EvidenceLock> active_evidence_locks(pqxx::work& tx, std::int64_t volume_id) {
  // A lock matters on a volume when any segment of its stream is there.
  auto rows = volume_id == 0
                  ? tx.exec("SELECT stream_id, start_us, end_us FROM evidence_locks WHERE unlocked_at_us IS NULL")
                  : tx.exec_params(
                        "SELECT l.stream_id, l.start_us, l.end_us FROM evidence_locks l "
                        "WHERE l.unlocked_at_us IS NULL AND EXISTS (SELECT 1 FROM segments s "
                        "WHERE s.stream_id = l.stream_id AND s.volume_id = $1)",
                        volume_id);
  std::vector<storage::EvidenceLock> out;
  out.reserve(rows.size());
  for (const auto& row : rows) {
    out.push_back(
        {static_cast<std::uint64_t>(row[0].as<std::int64_t>()), row[1].as<std::int64_t>(), row[2].as<std::int64_t>()});
  }
  return out;
}

}  // namespace vigil::catalog
