#include "catalog/profiles.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

namespace vigil::catalog {

std::int64_t store_profile(pqxx::work& tx, const admission::DiskProfile& p, const std::string& node) {
  auto disk = tx.exec_params("SELECT id FROM disks WHERE node = $1 AND device_path = $2 AND state <> 'retired'", node,
                             p.device);
  std::int64_t disk_id = 0;
  if (disk.empty()) {
    disk_id = tx.exec_params1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ($1, $2, $3) RETURNING id",
                              node, p.device, static_cast<std::int64_t>(std::max<std::uint64_t>(p.device_bytes, 1)))[0]
                  .as<std::int64_t>();
  } else {
    disk_id = disk[0][0].as<std::int64_t>();
  }
  return store_profile_for_disk(tx, p, disk_id);
}

std::int64_t disk_of_volume(pqxx::work& tx, std::int64_t volume_id) {
  return tx.exec_params1("SELECT disk_id FROM volumes WHERE id = $1", volume_id)[0].as<std::int64_t>();
}

std::int64_t store_profile_for_disk(pqxx::work& tx, const admission::DiskProfile& p, std::int64_t disk_id) {
  const auto range = p.write_range.a > 0 ? p.write_range : p.read_range;
  return tx
      .exec_params1(
          "INSERT INTO disk_profiles (disk_id, format, peak_rate_bps, chunk_min_bytes, chunk_max_bytes, "
          "command_overhead_us, profile, tool_version) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8) "
          "RETURNING id",
          disk_id, p.format, static_cast<std::int64_t>(p.peak_rate().bps()),
          static_cast<std::int64_t>(std::max(1.0, range.a)), static_cast<std::int64_t>(std::max(range.a, range.b)),
          static_cast<std::int64_t>(p.command_overhead_s * 1e6), boost::json::serialize(admission::to_json(p)),
          p.tool_version)[0]
      .as<std::int64_t>();
}

std::optional<admission::DiskProfile> latest_profile(pqxx::work& tx, std::int64_t disk_id) {
  auto r = tx.exec_params(
      "SELECT profile::text FROM disk_profiles WHERE disk_id = $1 ORDER BY measured_at_us DESC, id DESC LIMIT 1",
      disk_id);
  if (r.empty()) return std::nullopt;
  return admission::profile_from_json(boost::json::parse(r[0][0].as<std::string>()));
}

std::int64_t log_decision(pqxx::work& tx, const admission::Decision& d, std::optional<std::int64_t> disk_id,
                          std::optional<std::int64_t> stream_id, double cycle_s,
                          const std::optional<std::string>& camera) {
  boost::json::object details{{"policy_variant", admission::policy_name(d.policy)},
                              {"s_avg_bytes", d.s_avg},
                              {"curve_rate_bytes_per_s", d.curve_rate.Bps()},
                              {"budget_s", d.budget_s},
                              {"streams", d.streams}};
  std::optional<std::int64_t> admitted;
  if (d.admitted) admitted = static_cast<std::int64_t>(d.requested_rate.bps());
  std::optional<std::string> reason;
  if (!d.admitted) reason = d.reason;
  return tx
      .exec_params1(
          "INSERT INTO admission_decisions (disk_id, stream_id, policy, outcome, requested_rate_bps, "
          "admitted_rate_bps, max_admissible_rate_bps, cycle_us, predicted_busy_us, reason, details, "
          "camera_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, "
          "COALESCE((SELECT camera_id FROM streams WHERE id = $2), "
          "(SELECT id FROM cameras WHERE name = $12::text))) RETURNING id",
          disk_id, stream_id, std::string(admission::policy_catalog_name(d.policy)),
          std::string(d.admitted ? "admitted" : "refused"), static_cast<std::int64_t>(d.requested_rate.bps()), admitted,
          static_cast<std::int64_t>(d.max_rate.bps()), static_cast<std::int64_t>(cycle_s * 1e6),
          static_cast<std::int64_t>(d.predicted_busy_s * 1e6), reason, boost::json::serialize(details), camera)[0]
      .as<std::int64_t>();
}

}  // namespace vigil::catalog
