#include "catalog/admission_rows.hpp"

#include <pqxx/pqxx>

namespace vigil::catalog {
namespace {

template <class T>
std::optional<T> opt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<T>();
}

}  // namespace

std::optional<DiskRow> disk_row(pqxx::work& tx, std::int64_t disk_id) {
  auto r = tx.exec_params(
      "SELECT d.id, d.node, d.device_path, d.state, d.capacity_bytes, p.id, p.measured_at_us FROM disks d "
      "LEFT JOIN LATERAL (SELECT id, measured_at_us FROM disk_profiles WHERE disk_id = d.id "
      "ORDER BY measured_at_us DESC, id DESC LIMIT 1) p ON true WHERE d.id = $1",
      disk_id);
  if (r.empty()) return std::nullopt;
  DiskRow d;
  d.id = r[0][0].as<std::int64_t>();
  d.node = r[0][1].as<std::string>();
  d.device_path = r[0][2].as<std::string>();
  d.state = r[0][3].as<std::string>();
  d.capacity_bytes = r[0][4].as<std::int64_t>();
  d.profile_id = opt<std::int64_t>(r[0][5]);
  d.profile_measured_at_us = opt<std::int64_t>(r[0][6]);
  return d;
}

std::optional<StoredProfile> stored_profile(pqxx::work& tx, std::int64_t disk_id) {
  auto r = tx.exec_params(
      "SELECT id, disk_id, measured_at_us, profile::text FROM disk_profiles WHERE disk_id = $1 "
      "ORDER BY measured_at_us DESC, id DESC LIMIT 1",
      disk_id);
  if (r.empty()) return std::nullopt;
  return StoredProfile{r[0][0].as<std::int64_t>(), r[0][1].as<std::int64_t>(), r[0][2].as<std::int64_t>(),
                       r[0][3].as<std::string>()};
}

DecisionPage find_decisions(pqxx::work& tx, const DecisionQuery& q) {
  // One more row than asked tells whether another page follows.
  const bool cursor = q.after.has_value();
  auto rows = tx.exec_params(
      "SELECT a.id, a.decided_at_us, a.disk_id, a.stream_id, c.name, a.policy, a.outcome, a.requested_rate_bps, "
      "a.admitted_rate_bps, a.max_admissible_rate_bps, a.predicted_busy_us, a.cycle_us, a.reason, a.details::text "
      "FROM admission_decisions a LEFT JOIN streams s ON s.id = a.stream_id "
      "LEFT JOIN cameras c ON c.id = COALESCE(a.camera_id, s.camera_id) "
      "WHERE a.decided_at_us BETWEEN $1 AND $2 AND ($3::bigint IS NULL OR a.disk_id = $3) "
      "AND ($4::text IS NULL OR c.name = $4) AND ($5::text IS NULL OR a.outcome = $5) "
      "AND (NOT $6 OR (a.decided_at_us, a.id) < ($7, $8)) "
      "ORDER BY a.decided_at_us DESC, a.id DESC LIMIT $9",
      q.from_us, q.to_us, q.disk_id, q.camera, q.outcome, cursor, cursor ? q.after->decided_at_us : 0,
      cursor ? q.after->id : 0, static_cast<std::int64_t>(q.limit + 1));
  DecisionPage page;
  for (const auto& r : rows) {
    if (page.rows.size() == q.limit) {
      const auto& last = page.rows.back();
      page.next = DecisionCursor{last.decided_at_us, last.id};
      break;
    }
    DecisionRow d;
    d.id = r[0].as<std::int64_t>();
    d.decided_at_us = r[1].as<std::int64_t>();
    d.disk_id = opt<std::int64_t>(r[2]);
    d.stream_id = opt<std::int64_t>(r[3]);
    d.camera = opt<std::string>(r[4]);
    d.policy = r[5].as<std::string>();
    d.outcome = r[6].as<std::string>();
    d.requested_rate_bps = r[7].as<std::int64_t>();
    d.admitted_rate_bps = opt<std::int64_t>(r[8]);
    d.max_admissible_rate_bps = opt<std::int64_t>(r[9]);
    d.predicted_busy_us = opt<std::int64_t>(r[10]);
    d.cycle_us = r[11].as<std::int64_t>();
    d.reason = opt<std::string>(r[12]);
    d.details_json = r[13].as<std::string>();
    page.rows.push_back(std::move(d));
  }
  return page;
}

}  // namespace vigil::catalog
