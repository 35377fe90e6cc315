#include "catalog/timeline_rows.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>

#include "catalog/camera_rows.hpp"
#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

constexpr std::int64_t kDayUs = 86'400'000'000;

std::int64_t day_of(std::int64_t t_us) {
  // Floor division: days before 1970 stay in their own day.
  return (t_us >= 0 ? t_us / kDayUs : (t_us - kDayUs + 1) / kDayUs) * kDayUs;
}

// A text[] parameter (pqxx 6.4 passes arrays as text). Names are validated first, so the
// literal holds only [A-Za-z0-9._-]: nothing in it can quote or escape.
std::optional<std::string> name_array(const std::vector<std::string>& names) {
  if (names.empty()) return std::nullopt;
  std::string out = "{";
  for (const auto& n : names) {
    if (!is_valid_camera_name(n)) throw CatalogError::invalid("camera name '" + n + "' is not valid");
    if (out.size() > 1) out += ',';
    out += n;
  }
  return out + "}";
}

}  // namespace

std::vector<TimelineDay> day_totals(const std::vector<TimelineRun>& runs, const std::vector<TimelineGap>& gaps) {
  std::map<std::int64_t, TimelineDay> days;
  for (const auto& r : runs) {
    for (std::int64_t d = day_of(r.start_us); d < r.end_us; d += kDayUs) {
      auto& day = days[d];
      day.day_start_us = d;
      day.recorded_us += std::min(r.end_us, d + kDayUs) - std::max(r.start_us, d);
    }
  }
  for (const auto& g : gaps) {
    for (std::int64_t d = day_of(g.start_us); d < g.end_us; d += kDayUs) {
      auto& day = days[d];
      day.day_start_us = d;
      ++day.gaps;
    }
  }
  std::vector<TimelineDay> out;
  out.reserve(days.size());
  for (auto& [d, day] : days) out.push_back(day);
  return out;
}

std::vector<CameraTimeline> timeline(pqxx::transaction_base& tx, const TimelineQuery& q) {
  if (q.to_us <= q.from_us) throw CatalogError::invalid("the range is empty: 'to' must be after 'from'");
  const auto names = name_array(q.cameras);
  const auto limit = static_cast<std::int64_t>(q.max_items);

  const std::string role(role_name(q.role)), kind(media_kind_name(q.media_kind));

  std::vector<CameraTimeline> out;
  std::map<std::string, std::size_t> index;
  for (const auto& row : tx.exec_params(
           "SELECT c.name, "
           "  EXISTS (SELECT 1 FROM streams s WHERE s.camera_id = c.id AND s.role = $2 AND s.media_kind = $3 "
           "          AND s.state = 'recording'), "
           "  EXISTS (SELECT 1 FROM streams s WHERE s.camera_id = c.id AND s.role = $2 AND s.media_kind = $3) "
           "FROM cameras c WHERE ($1::text[] IS NULL OR c.name = ANY ($1::text[])) ORDER BY c.name",
           names, role, kind)) {
    index[row[0].as<std::string>()] = out.size();
    out.push_back({.camera = row[0].as<std::string>(), .recording = row[1].as<bool>(), .has_track = row[2].as<bool>()});
  }
  if (out.empty()) return out;

  // The fresher segments as array literals (camera names are validated identifiers: no quoting).
  std::string fresh_names = "{", fresh_ids = "{", fresh_starts = "{", fresh_ends = "{", fresh_bytes = "{",
              fresh_open = "{";
  for (const auto& f : q.fresher) {
    if (f.role != q.role || f.media_kind != q.media_kind) continue;
    if (auto it = index.find(f.camera); it != index.end()) out[it->second].has_track = true;
    if (!is_valid_camera_name(f.camera)) throw CatalogError::invalid("camera name '" + f.camera + "' is not valid");
    const char* sep = fresh_ids.size() > 1 ? "," : "";
    fresh_names += sep + f.camera;
    fresh_ids += sep + std::to_string(f.segment_id);
    fresh_starts += sep + std::to_string(f.start_us);
    fresh_ends += sep + std::to_string(f.end_us);
    fresh_bytes += sep + std::to_string(f.bytes);
    fresh_open += sep + std::string(f.open ? "t" : "f");
  }
  for (auto* a : {&fresh_names, &fresh_ids, &fresh_starts, &fresh_ends, &fresh_bytes, &fresh_open}) *a += "}";
  // Runs: a segment starts a new run when it begins more than merge_us after every earlier
  // segment of its camera ended (gaps-and-islands); each run clipped to the range.
  const auto runs = tx.exec_params(
      "WITH cams AS (SELECT id, name FROM cameras WHERE ($1::text[] IS NULL OR name = ANY ($1::text[]))), "
      "f AS (SELECT * FROM unnest($6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], "
      "      $11::boolean[]) AS f(name, id, start_us, end_us, data_bytes, open)), "
      "s AS (SELECT st.camera_id, seg.start_us, seg.end_us, seg.data_bytes, seg.state = 'open' AS open "
      "      FROM segments seg JOIN streams st ON st.id = seg.stream_id JOIN cams ON cams.id = st.camera_id "
      "      WHERE st.role = $12 AND st.media_kind = $13 "
      "        AND seg.state IN ('open', 'closed', 'archived') AND seg.end_us > $2 AND seg.start_us < $3 "
      "        AND seg.id <> ALL ($7::bigint[]) "
      "      UNION ALL SELECT cams.id, f.start_us, f.end_us, f.data_bytes, f.open FROM f JOIN cams ON cams.name = f.name "
      "      WHERE f.end_us > $2 AND f.start_us < $3), "
      "o AS (SELECT *, CASE WHEN start_us - max(end_us) OVER (PARTITION BY camera_id ORDER BY start_us, end_us "
      "      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) <= $4 THEN 0 ELSE 1 END AS brk FROM s), "
      "g AS (SELECT *, sum(brk) OVER (PARTITION BY camera_id ORDER BY start_us, end_us ROWS UNBOUNDED PRECEDING) "
      "      AS grp FROM o), "
      "r AS (SELECT camera_id, greatest(min(start_us), $2) AS start_us, least(max(end_us), $3) AS end_us, "
      "      count(*) AS n, sum(data_bytes) AS bytes, bool_or(open) AS open, "
      "      row_number() OVER (PARTITION BY camera_id ORDER BY min(start_us)) AS rn FROM g GROUP BY camera_id, grp) "
      "SELECT cams.name, r.start_us, r.end_us, r.n, r.bytes, r.open FROM r JOIN cams ON cams.id = r.camera_id "
      "WHERE r.rn <= $5 + 1 ORDER BY cams.name, r.start_us",
      names, q.from_us, q.to_us, q.merge_us, limit, fresh_names, fresh_ids, fresh_starts, fresh_ends, fresh_bytes,
      fresh_open, role, kind);
  for (const auto& row : runs) {
    auto& cam = out[index.at(row[0].as<std::string>())];
    if (cam.runs.size() == q.max_items) {
      cam.truncated = true;
      continue;
    }
    cam.runs.push_back({row[1].as<std::int64_t>(), row[2].as<std::int64_t>(), row[3].as<std::int64_t>(),
                        row[4].as<std::int64_t>(), row[5].as<bool>()});
  }

  const auto gaps = tx.exec_params(
      "SELECT name, start_us, end_us, reason, detail FROM ("
      "  SELECT c.name, greatest(g.start_us, $2) AS start_us, least(g.end_us, $3) AS end_us, g.reason, "
      "         coalesce(g.detail, '') AS detail, "
      "         row_number() OVER (PARTITION BY c.id ORDER BY g.start_us) AS rn "
      "  FROM gaps g JOIN streams st ON st.id = g.stream_id JOIN cameras c ON c.id = st.camera_id "
      "  WHERE ($1::text[] IS NULL OR c.name = ANY ($1::text[])) AND st.role = $5 AND st.media_kind = $6 "
      "    AND g.end_us > $2 AND g.start_us < $3) x "
      "WHERE rn <= $4 + 1 ORDER BY name, start_us",
      names, q.from_us, q.to_us, limit, role, kind);
  for (const auto& row : gaps) {
    auto& cam = out[index.at(row[0].as<std::string>())];
    if (cam.gaps.size() == q.max_items) {
      cam.truncated = true;
      continue;
    }
    cam.gaps.push_back(
        {row[1].as<std::int64_t>(), row[2].as<std::int64_t>(), row[3].as<std::string>(), row[4].as<std::string>()});
  }
  for (auto& cam : out) cam.days = day_totals(cam.runs, cam.gaps);
  return out;
}

}  // namespace vigil::catalog
