#pragma once
// Camera groups in the catalog (schema 0009): an operator's named, ordered sets of cameras that the
// web UI filters its camera list and fills its video wall by (docs/openapi.yaml, /api/v1/groups).
// A camera may be in several groups; deleting it removes its memberships (ON DELETE CASCADE).
// Groups grant nothing: callers that serve tokens limited to some cameras filter the members.
// Thread: the catalog pool. Errors: throws (pqxx; CatalogError: a bad or taken name (conflict), a
// member that is not a camera (not_found), a camera named twice (invalid)).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

namespace vigil::catalog {

inline constexpr std::size_t kMaxGroupNameBytes = 64;
inline constexpr std::size_t kMaxGroupCameras = 1000;

struct CameraGroup {
  std::int64_t id = 0;
  std::string name;
  std::vector<std::string> cameras;  // in the group's order (camera_group_members.position)
  std::int64_t created_at_us = 0;
};

// 1-64 bytes, no control characters, no leading or trailing space; CatalogError naming the rule.
void check_group_name(const std::string& name);

// Every group, by name.
std::vector<CameraGroup> list_camera_groups(pqxx::work& tx);
std::optional<CameraGroup> camera_group(pqxx::work& tx, std::int64_t id);
// The new group's id. A group named so exists already: CatalogError of kind conflict.
std::int64_t create_camera_group(pqxx::work& tx, const std::string& name, const std::vector<std::string>& cameras);
// False if there is no such group.
bool rename_camera_group(pqxx::work& tx, std::int64_t id, const std::string& name);
// Replaces the group's members by CAMERAS, in that order. False if there is no such group.
bool set_camera_group_members(pqxx::work& tx, std::int64_t id, const std::vector<std::string>& cameras);
// False if there is no such group. The cameras stay.
bool delete_camera_group(pqxx::work& tx, std::int64_t id);

}  // namespace vigil::catalog
