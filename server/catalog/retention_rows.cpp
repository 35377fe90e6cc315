#include "server/catalog/retention_rows.hpp"

#include <pqxx/pqxx>

namespace vigil::catalog {
namespace {

// pqxx 6 has no array parameters: ids go in as a PostgreSQL array literal of integers.
std::string id_array(const std::vector<std::uint64_t>& ids) {
  std::string s = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "}";
}

}  // namespace

RetentionView retention_view(pqxx::work& tx, std::int64_t volume_id) {
  RetentionView v;
  const auto rows = tx.exec_params(
      "SELECT s.id, s.stream_id, s.start_us, s.end_us, "
      "       (SELECT count(*) FROM segment_extents e WHERE e.segment_id = s.id) "
      "FROM segments s WHERE s.volume_id = $1 AND s.state IN ('closed', 'damaged')",
      volume_id);
  for (const auto& r : rows) {
    v.closed.push_back({.segment_id = r[0].as<std::uint64_t>(),
                        .stream_id = r[1].as<std::uint64_t>(),
                        .start_us = r[2].as<std::int64_t>(),
                        .end_us = r[3].as<std::int64_t>(),
                        .extent_count = r[4].as<std::uint64_t>()});
  }
  const auto ages = tx.exec_params(
      "SELECT DISTINCT st.id, c.retention_days FROM streams st JOIN cameras c ON c.id = st.camera_id "
      "JOIN segments s ON s.stream_id = st.id "
      "WHERE s.volume_id = $1 AND c.retention_days IS NOT NULL",
      volume_id);
  for (const auto& r : ages) {
    v.per_stream[r[0].as<std::uint64_t>()].max_age_us = r[1].as<std::int64_t>() * 86'400'000'000LL;
  }
  return v;
}

std::vector<std::uint64_t> mark_deleting(pqxx::work& tx, const std::vector<std::uint64_t>& ids) {
  std::vector<std::uint64_t> marked;
  if (ids.empty()) return marked;
  // A hole is a gap only where older recording of the camera stays (normally retention takes
  // the oldest, which just moves the start forward). Recorded before the rows change state.
  tx.exec_params0(
      "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) "
      "SELECT s.stream_id, s.start_us, s.end_us, 'retention', 'reclaimed segment ' || s.id "
      "FROM segments s WHERE s.id = ANY($1::bigint[]) AND s.state IN ('closed', 'damaged') AND s.end_us > s.start_us "
      "AND EXISTS (SELECT 1 FROM segments o JOIN streams os ON os.id = o.stream_id "
      "            JOIN streams ss ON ss.id = s.stream_id "
      "            WHERE os.camera_id = ss.camera_id AND o.start_us < s.start_us "
      "            AND o.state IN ('closed', 'damaged') AND NOT (o.id = ANY($1::bigint[])))",
      id_array(ids));
  for (const auto& r : tx.exec_params("UPDATE segments SET state = 'deleting' "
                                      "WHERE id = ANY($1::bigint[]) AND state IN ('closed', 'damaged') RETURNING id",
                                      id_array(ids))) {
    marked.push_back(r[0].as<std::uint64_t>());
  }
  return marked;
}

void finish_deleting(pqxx::work& tx, const std::vector<std::uint64_t>& ids) {
  if (ids.empty()) return;
  tx.exec_params0("DELETE FROM segments WHERE id = ANY($1::bigint[]) AND state = 'deleting'", id_array(ids));
}

}  // namespace vigil::catalog
