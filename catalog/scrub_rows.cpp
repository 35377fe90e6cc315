#include "catalog/scrub_rows.hpp"

#include <pqxx/pqxx>

namespace vigil::catalog {

ScrubTarget scrub_target_from(const pqxx::row& r) {
  ScrubTarget t;
  t.segment_id = r[0].as<std::uint64_t>();
  t.stream_id = r[1].as<std::uint64_t>();
  t.start_us = r[2].as<std::int64_t>();
  t.end_us = r[3].as<std::int64_t>();
  t.data_bytes = r[4].as<std::uint64_t>();
  t.checksum_crc32c = static_cast<std::uint32_t>(r[5].as<std::int64_t>());
  auto arr = r[6].as_array();
  for (auto [kind, value] = arr.get_next(); kind != pqxx::array_parser::juncture::done;
       std::tie(kind, value) = arr.get_next()) {
    if (kind == pqxx::array_parser::juncture::string_value) t.extent_offsets.push_back(std::stoull(value));
  }
  return t;
}

std::vector<ScrubTarget> scrub_targets(pqxx::work& tx, std::int64_t volume_id) {
  const auto rows = tx.exec_params(
      "SELECT s.id, s.stream_id, s.start_us, s.end_us, s.data_bytes, s.checksum_crc32c, "
      "       array_agg(e.volume_offset_bytes ORDER BY e.ordinal) "
      "FROM segments s JOIN segment_extents e ON e.segment_id = s.id "
      "WHERE s.volume_id = $1 AND s.state = 'closed' AND s.checksum_crc32c <> 0 "
      "GROUP BY s.id ORDER BY s.start_us, s.id",
      volume_id);
  std::vector<ScrubTarget> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(scrub_target_from(r));
  return out;
}

bool segment_still_closed(pqxx::work& tx, std::uint64_t segment_id) {
  return !tx.exec_params("SELECT 1 FROM segments WHERE id = $1 AND state = 'closed'",
                         static_cast<std::int64_t>(segment_id))
              .empty();
}

bool record_corruption_gap(pqxx::work& tx, std::uint64_t stream_id, std::int64_t start_us, std::int64_t end_us,
                           const std::string& detail) {
  if (end_us <= start_us) end_us = start_us + 1;  // the table wants a non-empty range
  return !tx.exec_params(
                "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) "
                "SELECT $1, $2, $3, 'corruption', $4 WHERE NOT EXISTS (SELECT 1 FROM gaps WHERE stream_id = $1 "
                "AND start_us = $2 AND end_us = $3 AND reason = 'corruption') RETURNING id",
                static_cast<std::int64_t>(stream_id), start_us, end_us, detail)
              .empty();
}

std::string corruption_gap_prefix(std::uint64_t segment_id) {
  return "scrub: segment " + std::to_string(segment_id) + " on ";
}

std::string corruption_gap_detail(std::uint64_t segment_id, const std::string& volume, const std::string& what) {
  return corruption_gap_prefix(segment_id) + volume + ": " + what;
}

std::optional<ArchiveRepair> begin_archive_repair(pqxx::work& tx, std::uint64_t segment_id) {
  const auto id = static_cast<std::int64_t>(segment_id);
  // The copy row is locked with the segment's: archive retention cannot take it away in between.
  const auto marked = tx.exec_params(
      "WITH copy AS (SELECT k.segment_id, k.bucket, k.object_key FROM segment_copies k "
      "              WHERE k.segment_id = $1 AND k.tier = 's3' FOR SHARE) "
      "UPDATE segments s SET state = 'deleting' FROM copy "
      "WHERE s.id = copy.segment_id AND s.state = 'closed' "
      "RETURNING copy.bucket, copy.object_key, s.start_us, s.end_us, s.stream_id",
      id);
  if (marked.empty()) return std::nullopt;
  const auto& r = marked[0];
  ArchiveRepair out{.bucket = r[0].as<std::string>(),
                    .object_key = r[1].as<std::string>(),
                    .start_us = r[2].as<std::int64_t>(),
                    .end_us = r[3].as<std::int64_t>()};
  out.gaps_removed = tx.exec_params(
                           "DELETE FROM gaps WHERE stream_id = $1 AND reason = 'corruption' "
                           "AND starts_with(detail, $2) RETURNING id",
                           r[4].as<std::int64_t>(), corruption_gap_prefix(segment_id))
                         .size();
  return out;
}

}  // namespace vigil::catalog
