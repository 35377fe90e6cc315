#include "catalog/archive_rows.hpp"

#include <pqxx/pqxx>

namespace vigil::catalog {

std::vector<ArchiveTarget> archive_targets(pqxx::work& tx, std::int64_t volume_id, std::int64_t now_us,
                                           std::int64_t default_after_us, std::size_t limit) {
  const auto rows = tx.exec_params(
      "SELECT s.id, s.stream_id, s.start_us, s.end_us, s.data_bytes, s.checksum_crc32c, "
      "       array_agg(e.volume_offset_bytes ORDER BY e.ordinal), c.name, st.role, s.closed_at_us "
      "FROM segments s JOIN segment_extents e ON e.segment_id = s.id "
      "JOIN streams st ON st.id = s.stream_id JOIN cameras c ON c.id = st.camera_id "
      "WHERE s.volume_id = $1 AND s.state = 'closed' AND s.checksum_crc32c <> 0 "
      "  AND s.closed_at_us <= $2::bigint - COALESCE(c.archive_after_s::bigint * 1000000, $4::bigint) "
      "  AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id AND k.tier = 's3') "
      // Found damaged by the scrubber (catalog/scrub_rows.hpp): a copy must be what was recorded.
      "  AND NOT EXISTS (SELECT 1 FROM gaps g WHERE g.stream_id = s.stream_id AND g.reason = 'corruption' "
      "                  AND starts_with(g.detail, 'scrub: segment ' || s.id || ' on ')) "
      "GROUP BY s.id, c.name, st.role ORDER BY s.closed_at_us, s.id LIMIT $3",
      volume_id, now_us, static_cast<std::int64_t>(limit), default_after_us);
  std::vector<ArchiveTarget> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    out.push_back({.segment = scrub_target_from(r),
                   .camera = r[7].as<std::string>(),
                   .role = r[8].as<std::string>(),
                   .closed_at_us = r[9].as<std::int64_t>()});
  }
  return out;
}

std::optional<std::int64_t> oldest_uncopied_closed_at_us(pqxx::work& tx, std::int64_t volume_id) {
  const auto row = tx.exec_params1(
      "SELECT min(s.closed_at_us) FROM segments s "
      "WHERE s.volume_id = $1 AND s.state = 'closed' AND s.checksum_crc32c <> 0 "
      "  AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id AND k.tier = 's3') "
      "  AND NOT EXISTS (SELECT 1 FROM gaps g WHERE g.stream_id = s.stream_id AND g.reason = 'corruption' "
      "                  AND starts_with(g.detail, 'scrub: segment ' || s.id || ' on '))",
      volume_id);
  if (row[0].is_null()) return std::nullopt;
  return row[0].as<std::int64_t>();
}

bool record_segment_copy(pqxx::work& tx, const SegmentCopy& copy) {
  const auto r = tx.exec_params(
      "INSERT INTO segment_copies (segment_id, tier, bucket, object_key, bytes, etag) "
      "SELECT id, 's3', $2, $3, $4, $5 FROM segments WHERE id = $1 AND state = 'closed' "
      "ON CONFLICT (segment_id, tier) DO NOTHING",
      static_cast<std::int64_t>(copy.segment_id), copy.bucket, copy.object_key, static_cast<std::int64_t>(copy.bytes),
      copy.etag);
  return r.affected_rows() == 1;
}

std::vector<HoldChange> legal_hold_changes(pqxx::work& tx, std::int64_t volume_id, std::size_t limit) {
  const auto rows = tx.exec_params(
      "SELECT k.segment_id, k.bucket, k.object_key, k.bytes, k.etag, k.legal_hold, "
      "       EXISTS (SELECT 1 FROM evidence_locks l WHERE l.stream_id = s.stream_id AND l.unlocked_at_us IS NULL "
      "               AND l.start_us < s.end_us AND l.end_us > s.start_us) AS locked "
      "FROM segment_copies k JOIN segments s ON s.id = k.segment_id "
      "WHERE s.volume_id = $1 AND k.tier = 's3' "
      "  AND k.legal_hold <> EXISTS (SELECT 1 FROM evidence_locks l WHERE l.stream_id = s.stream_id "
      "                              AND l.unlocked_at_us IS NULL AND l.start_us < s.end_us AND l.end_us > s.start_us) "
      "ORDER BY k.segment_id LIMIT $2",
      volume_id, static_cast<std::int64_t>(limit));
  std::vector<HoldChange> out;
  for (const auto& r : rows) {
    out.push_back({.copy = {.segment_id = r[0].as<std::uint64_t>(),
                            .bucket = r[1].as<std::string>(),
                            .object_key = r[2].as<std::string>(),
                            .etag = r[4].as<std::string>(),
                            .bytes = r[3].as<std::uint64_t>()},
                   .hold = r[6].as<bool>()});
  }
  return out;
}

void record_legal_hold(pqxx::work& tx, std::uint64_t segment_id, bool hold) {
  tx.exec_params("UPDATE segment_copies SET legal_hold = $2 WHERE segment_id = $1 AND tier = 's3'",
                 static_cast<std::int64_t>(segment_id), hold);
}

std::optional<SegmentCopy> segment_copy(pqxx::work& tx, std::uint64_t segment_id) {
  const auto rows =
      tx.exec_params("SELECT bucket, object_key, bytes, etag FROM segment_copies WHERE segment_id = $1 AND tier = 's3'",
                     static_cast<std::int64_t>(segment_id));
  if (rows.empty()) return std::nullopt;
  return SegmentCopy{.segment_id = segment_id,
                     .bucket = rows[0][0].as<std::string>(),
                     .object_key = rows[0][1].as<std::string>(),
                     .etag = rows[0][3].as<std::string>(),
                     .bytes = rows[0][2].as<std::uint64_t>()};
}

std::vector<SegmentCopy> expired_copies(pqxx::work& tx, std::int64_t volume_id, std::int64_t now_us, int default_days,
                                        std::int64_t day_us, std::size_t limit) {
  const auto rows = tx.exec_params(
      "SELECT k.segment_id, k.bucket, k.object_key, k.bytes, k.etag "
      "FROM segment_copies k JOIN segments s ON s.id = k.segment_id "
      "JOIN streams st ON st.id = s.stream_id JOIN cameras c ON c.id = st.camera_id "
      "WHERE s.volume_id = $1 AND k.tier = 's3' AND NOT k.legal_hold "
      "  AND COALESCE(c.archive_retention_days, NULLIF($3::integer, 0)) IS NOT NULL "
      "  AND s.end_us < $2::bigint - COALESCE(c.archive_retention_days, NULLIF($3::integer, 0))::bigint * $4::bigint "
      "  AND NOT EXISTS (SELECT 1 FROM evidence_locks l WHERE l.stream_id = s.stream_id AND l.unlocked_at_us IS NULL "
      "                  AND l.start_us < s.end_us AND l.end_us > s.start_us) "
      "ORDER BY s.end_us, k.segment_id LIMIT $5",
      volume_id, now_us, default_days, day_us, static_cast<std::int64_t>(limit));
  std::vector<SegmentCopy> out;
  for (const auto& r : rows) {
    out.push_back({.segment_id = r[0].as<std::uint64_t>(),
                   .bucket = r[1].as<std::string>(),
                   .object_key = r[2].as<std::string>(),
                   .etag = r[4].as<std::string>(),
                   .bytes = r[3].as<std::uint64_t>()});
  }
  return out;
}

bool lock_copy_for_deletion(pqxx::work& tx, std::uint64_t segment_id) {
  // As mark_deleting: taking or releasing a lock waits for this transaction, and this for them.
  tx.exec0("LOCK TABLE evidence_locks IN SHARE MODE");
  return !tx.exec_params(
                "SELECT 1 FROM segment_copies k JOIN segments s ON s.id = k.segment_id "
                "WHERE k.segment_id = $1 AND k.tier = 's3' AND NOT k.legal_hold "
                "  AND NOT EXISTS (SELECT 1 FROM evidence_locks l WHERE l.stream_id = s.stream_id "
                "                  AND l.unlocked_at_us IS NULL AND l.start_us < s.end_us AND l.end_us > s.start_us) "
                "FOR UPDATE OF k",
                static_cast<std::int64_t>(segment_id))
              .empty();
}

void forget_copy(pqxx::work& tx, std::uint64_t segment_id) {
  // An archived segment had nothing else: its row goes (GOP index with it). A segment still on its
  // volume only loses its copy.
  tx.exec_params0("DELETE FROM segments WHERE id = $1 AND state = 'archived'", static_cast<std::int64_t>(segment_id));
  tx.exec_params0("DELETE FROM segment_copies WHERE segment_id = $1 AND tier = 's3'",
                  static_cast<std::int64_t>(segment_id));
}

}  // namespace vigil::catalog
