#include "catalog/retention_rows.hpp"

#include <pqxx/pqxx>
#include <map>
#include <string>

namespace vigil::catalog {
namespace {

// pqxx 6 has no array parameters: ids go in as a PostgreSQL array literal of integers.
std::string id_array(const std::vector<std::uint64_t>& ids) {
  std::string s = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "}";
}

}  // namespace

RetentionView retention_view(pqxx::work& tx, std::int64_t volume_id, std::int64_t now_us, std::size_t limit,
                             bool with_quota, std::int64_t day_us) {
  RetentionView v;
  std::map<std::uint64_t, std::size_t> seen;  // segment id -> its index in v.closed
  auto add = [&](const pqxx::result& rows, bool over_quota) {
    for (const auto& r : rows) {
      const auto id = r[0].as<std::uint64_t>();
      if (!r[5].is_null()) v.per_stream[r[1].as<std::uint64_t>()].max_age_us = r[5].as<std::int64_t>() * day_us;
      if (auto it = seen.find(id); it != seen.end()) {
        v.closed[it->second].over_quota = v.closed[it->second].over_quota || over_quota;
        continue;
      }
      seen.emplace(id, v.closed.size());
      v.closed.push_back({.segment_id = id,
                          .stream_id = r[1].as<std::uint64_t>(),
                          .start_us = r[2].as<std::int64_t>(),
                          .end_us = r[3].as<std::int64_t>(),
                          .extent_count = r[4].as<std::uint64_t>(),
                          .over_quota = over_quota});
    }
  };
  // Not under an active evidence lock (the overlap storage::is_locked tests, again there): a long
  // locked range at the old end must not hide what may go after it.
  const std::string unlocked =
      "NOT EXISTS (SELECT 1 FROM evidence_locks l WHERE l.stream_id = s.stream_id "
      "            AND l.unlocked_at_us IS NULL AND l.start_us < s.end_us AND s.start_us < l.end_us) ";
  // The oldest (what space needs first; segments_volume_start), and those past their camera's
  // age: never the whole volume, which can hold millions of segments.
  const std::string cols =
      "SELECT s.id, s.stream_id, s.start_us, s.end_us, "
      "       (SELECT count(*) FROM segment_extents e WHERE e.segment_id = s.id), c.retention_days "
      "FROM segments s JOIN streams st ON st.id = s.stream_id JOIN cameras c ON c.id = st.camera_id "
      "WHERE s.volume_id = $1 AND s.state IN ('closed', 'damaged') AND " +
      unlocked;
  add(tx.exec_params(cols + "ORDER BY s.start_us LIMIT $2", volume_id, static_cast<std::int64_t>(limit)), false);
  add(tx.exec_params(cols + "AND c.retention_days IS NOT NULL AND s.end_us < $3 - c.retention_days * $4::bigint "
                            "ORDER BY s.start_us LIMIT $2",
                     volume_id, static_cast<std::int64_t>(limit), now_us, day_us),
      false);
  if (!with_quota) return v;
  // Past their camera's byte quota: for each camera with one whose unlocked recording (every
  // volume, open segments too) holds more than it, its oldest closed segments until the excess
  // is covered — those of them on this volume. Only cameras over their quota are walked, oldest
  // first and at most LIMIT segments each.
  add(tx.exec_params(
          "WITH held AS ("
          "  SELECT c.id AS camera_id, c.retention_bytes, "
          "         (SELECT COALESCE(sum(s.data_bytes), 0) FROM segments s JOIN streams st ON st.id = s.stream_id "
          "          WHERE st.camera_id = c.id AND s.state IN ('open', 'closed', 'damaged') AND " +
              unlocked +
              ") AS bytes "
              "  FROM cameras c WHERE c.retention_bytes IS NOT NULL), "
              "over AS (SELECT camera_id, bytes - retention_bytes AS excess FROM held WHERE bytes > retention_bytes) "
              "SELECT x.id, x.stream_id, x.start_us, x.end_us, "
              "       (SELECT count(*) FROM segment_extents e WHERE e.segment_id = x.id), x.retention_days "
              "FROM over o CROSS JOIN LATERAL ("
              "  SELECT s.id, s.stream_id, s.start_us, s.end_us, s.volume_id, c.retention_days, "
              "         sum(s.data_bytes) OVER (ORDER BY s.start_us, s.id) - s.data_bytes AS older_bytes "
              "  FROM segments s JOIN streams st ON st.id = s.stream_id JOIN cameras c ON c.id = st.camera_id "
              "  WHERE st.camera_id = o.camera_id AND s.state IN ('closed', 'damaged') AND " +
              unlocked +
              "  ORDER BY s.start_us, s.id LIMIT $2) x "
              "WHERE x.older_bytes < o.excess AND x.volume_id = $1 ORDER BY x.start_us",
          volume_id, static_cast<std::int64_t>(limit)),
      true);
  return v;
}

std::vector<std::uint64_t> mark_deleting(pqxx::work& tx, const std::vector<std::uint64_t>& ids, bool check_locks) {
  std::vector<std::uint64_t> marked;
  if (ids.empty()) return marked;
  // Retention chose IDS from a view read in an earlier transaction: a lock taken since then must
  // still hold. Taking or releasing a lock waits for this marking (and this for them), and the
  // marking re-checks the active locks itself, so none slips in between.
  tx.exec0("LOCK TABLE evidence_locks IN SHARE MODE");
  for (const auto& r : tx.exec_params(
           "UPDATE segments s SET state = 'deleting' "
           "WHERE s.id = ANY($1::bigint[]) AND s.state IN ('closed', 'damaged') "
           "AND (NOT $2 OR NOT EXISTS (SELECT 1 FROM evidence_locks l WHERE l.stream_id = s.stream_id "
           "                AND l.unlocked_at_us IS NULL AND l.start_us < s.end_us AND s.start_us < l.end_us)) "
           "RETURNING s.id",
           id_array(ids), check_locks)) {
    marked.push_back(r[0].as<std::uint64_t>());
  }
  // A hole is a gap only where older recording of the camera stays (normally retention takes
  // the oldest, which just moves the start forward), and never where the archive keeps the
  // segment (it stays playable from there: finish_deleting marks it archived).
  tx.exec_params0(
      "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) "
      "SELECT s.stream_id, s.start_us, s.end_us, 'retention', 'reclaimed segment ' || s.id "
      "FROM segments s WHERE s.id = ANY($1::bigint[]) AND s.end_us > s.start_us "
      "AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id) "
      "AND EXISTS (SELECT 1 FROM segments o JOIN streams os ON os.id = o.stream_id "
      "            JOIN streams ss ON ss.id = s.stream_id "
      "            WHERE os.camera_id = ss.camera_id AND o.start_us < s.start_us "
      "            AND o.state IN ('closed', 'damaged'))",
      id_array(marked));
  return marked;
}

void finish_deleting(pqxx::work& tx, const std::vector<std::uint64_t>& ids) {
  if (ids.empty()) return;
  // A segment with a verified archive copy keeps its row, GOP index and copy: only where it lay
  // on the volume goes. The others go whole (extents, GOP index and any copy row with them).
  // The copy was verified against the segment's checksum before the damage could be copied, so
  // the scrubber's 'corruption' gaps over the local copy (catalog/scrub_rows.hpp) go too: the
  // footage is whole again, whether the scrubber's repair or retention archived it.
  tx.exec_params0(
      "WITH kept AS (UPDATE segments s SET state = 'archived' WHERE s.id = ANY($1::bigint[]) AND s.state = 'deleting' "
      "              AND EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id) "
      "              RETURNING s.id, s.stream_id), "
      "     freed AS (DELETE FROM segment_extents e USING kept WHERE e.segment_id = kept.id) "
      "DELETE FROM gaps g USING kept WHERE g.stream_id = kept.stream_id AND g.reason = 'corruption' "
      "  AND starts_with(g.detail, 'scrub: segment ' || kept.id || ' on ')",
      id_array(ids));
  tx.exec_params0("DELETE FROM segments WHERE id = ANY($1::bigint[]) AND state = 'deleting'", id_array(ids));
}

}  // namespace vigil::catalog
