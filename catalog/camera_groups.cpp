#include "catalog/camera_groups.hpp"

#include <algorithm>
#include <pqxx/pqxx>
#include <set>

#include "catalog/camera_rows.hpp"
#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

void check_members(const std::vector<std::string>& cameras) {
  if (cameras.size() > kMaxGroupCameras) {
    throw CatalogError::invalid("a group holds at most " + std::to_string(kMaxGroupCameras) + " cameras");
  }
  std::set<std::string> seen;
  for (const auto& c : cameras) {
    if (!is_valid_camera_name(c)) throw CatalogError::invalid("'" + c.substr(0, 64) + "' is not a valid camera name");
    if (!seen.insert(c).second) throw CatalogError::invalid("camera '" + c + "' is named twice");
  }
}

// Members in order; every name must be a camera (not_found names the first that is not).
void insert_members(pqxx::work& tx, std::int64_t id, const std::vector<std::string>& cameras) {
  for (std::size_t i = 0; i < cameras.size(); ++i) {
    auto r = tx.exec_params(
        "INSERT INTO camera_group_members (group_id, camera_id, position) "
        "SELECT $1, id, $3 FROM cameras WHERE name = $2 RETURNING camera_id",
        id, cameras[i], static_cast<int>(i));
    if (r.empty()) throw CatalogError::not_found("no camera named '" + cameras[i] + "'");
  }
}

// Groups (all, or the one with ID) with their members in order.
std::vector<CameraGroup> select_groups(pqxx::work& tx, std::optional<std::int64_t> id) {
  auto rows = tx.exec_params(
      "SELECT g.id, g.name, g.created_at_us, c.name FROM camera_groups g "
      "LEFT JOIN camera_group_members m ON m.group_id = g.id LEFT JOIN cameras c ON c.id = m.camera_id "
      "WHERE $1::bigint IS NULL OR g.id = $1 ORDER BY g.name, g.id, m.position",
      id);
  std::vector<CameraGroup> out;
  for (const auto& r : rows) {
    const auto gid = r[0].as<std::int64_t>();
    if (out.empty() || out.back().id != gid) out.push_back({gid, r[1].as<std::string>(), {}, r[2].as<std::int64_t>()});
    if (!r[3].is_null()) out.back().cameras.push_back(r[3].as<std::string>());
  }
  return out;
}

bool group_exists(pqxx::work& tx, std::int64_t id) {
  return !tx.exec_params("SELECT 1 FROM camera_groups WHERE id = $1 FOR UPDATE", id).empty();
}

}  // namespace

void check_group_name(const std::string& name) {
  const bool controls = std::any_of(name.begin(), name.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == 0x7f;
  });
  if (name.empty() || name.size() > kMaxGroupNameBytes || controls || name.front() == ' ' || name.back() == ' ') {
    throw CatalogError::invalid(
        "group name is not valid: 1-64 bytes, no control characters, no leading or trailing space");
  }
}

std::vector<CameraGroup> list_camera_groups(pqxx::work& tx) { return select_groups(tx, std::nullopt); }

std::optional<CameraGroup> camera_group(pqxx::work& tx, std::int64_t id) {
  auto groups = select_groups(tx, id);
  if (groups.empty()) return std::nullopt;
  return std::move(groups.front());
}

std::int64_t create_camera_group(pqxx::work& tx, const std::string& name, const std::vector<std::string>& cameras) {
  check_group_name(name);
  check_members(cameras);
  auto r =
      tx.exec_params("INSERT INTO camera_groups (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id", name);
  if (r.empty()) throw CatalogError::conflict("a group named '" + name + "' exists already");
  const auto id = r[0][0].as<std::int64_t>();
  insert_members(tx, id, cameras);
  return id;
}

bool rename_camera_group(pqxx::work& tx, std::int64_t id, const std::string& name) {
  check_group_name(name);
  if (!group_exists(tx, id)) return false;
  auto taken = tx.exec_params("SELECT 1 FROM camera_groups WHERE name = $1 AND id <> $2", name, id);
  if (!taken.empty()) throw CatalogError::conflict("a group named '" + name + "' exists already");
  tx.exec_params("UPDATE camera_groups SET name = $2 WHERE id = $1", id, name);
  return true;
}

bool set_camera_group_members(pqxx::work& tx, std::int64_t id, const std::vector<std::string>& cameras) {
  check_members(cameras);
  if (!group_exists(tx, id)) return false;
  tx.exec_params("DELETE FROM camera_group_members WHERE group_id = $1", id);
  insert_members(tx, id, cameras);
  return true;
}

bool delete_camera_group(pqxx::work& tx, std::int64_t id) {
  return tx.exec_params("DELETE FROM camera_groups WHERE id = $1", id).affected_rows() == 1;
}

}  // namespace vigil::catalog
