#include "catalog/front_door_rows.hpp"

#include <algorithm>
#include <pqxx/pqxx>

#include "catalog/copy_stand_in.hpp"

namespace vigil::catalog {
namespace {

constexpr const char* kNodeColumns =
    "n.node, COALESCE(n.http_address, ''), COALESCE(n.wire_address, ''), n.lease_until > clock_timestamp()";

// SQL: segment g is read from its copy by the reader ($6), not served by its volume's node.
std::string read_from_copy() { return "(" + holder_down_sql(6) + " AND " + kHasCopySql + ")"; }

NodeEndpoint node_of(const pqxx::row& r) {
  return {.node = r[0].as<std::string>(),
          .http_address = r[1].as<std::string>(),
          .wire_address = r[2].as<std::string>(),
          .live = r[3].as<bool>()};
}

}  // namespace

std::optional<NodeEndpoint> media_holder(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         HolderEnd end, const std::string& reader_node) {
  const std::string order = end == HolderEnd::first ? "g.start_us, g.id" : "g.start_us DESC, g.id DESC";
  const auto r = tx.exec_params(
      std::string("SELECT ") + kNodeColumns +
          " FROM cameras c JOIN streams s ON s.camera_id = c.id JOIN segments g ON g.stream_id = s.id "
          "JOIN volumes v ON v.id = g.volume_id JOIN disks d ON d.id = v.disk_id JOIN nodes n ON n.node = d.node "
          "WHERE c.name = $1 AND s.role = $2 AND s.media_kind = $3 AND g.state IN ('open', 'closed') "
          "AND g.end_us > $4::bigint AND g.start_us < $5::bigint AND NOT " +
          read_from_copy() + " ORDER BY " + order + " LIMIT 1",
      track.camera, std::string(role_name(track.role)), std::string(media_kind_name(track.media_kind)), from_us, to_us,
      reader_node);
  if (r.empty()) return std::nullopt;
  return node_of(r[0]);
}

std::vector<HolderRun> media_holder_runs(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         const std::string& reader_node) {
  std::vector<HolderRun> out;
  const auto rows = tx.exec_params(
      "SELECT d.node, g.start_us, g.end_us, g.state = 'open' FROM cameras c JOIN streams s ON s.camera_id = c.id "
      "JOIN segments g ON g.stream_id = s.id JOIN volumes v ON v.id = g.volume_id JOIN disks d ON d.id = v.disk_id "
      "WHERE c.name = $1 AND s.role = $2 AND s.media_kind = $3 AND g.state IN ('open', 'closed') "
      "AND g.end_us > $4::bigint AND g.start_us < $5::bigint AND NOT " +
          read_from_copy() + " ORDER BY g.start_us, g.id",
      track.camera, std::string(role_name(track.role)), std::string(media_kind_name(track.media_kind)), from_us, to_us,
      reader_node);
  for (const auto& r : rows) {
    const auto node = r[0].as<std::string>();
    const auto start = r[1].as<std::int64_t>(), end = r[2].as<std::int64_t>();
    const bool open = r[3].as<bool>();
    if (!out.empty() && out.back().node == node) {
      out.back().to_us = std::max(out.back().to_us, end);
      out.back().open = out.back().open || open;
      continue;
    }
    if (out.size() == 8) break;
    out.push_back({node, start, end, open});
  }
  return out;
}

std::vector<HolderRun> volume_only_spans(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         const std::string& node, const std::string& reader_node) {
  std::vector<HolderRun> out;
  const auto rows = tx.exec_params(
      "SELECT g.start_us, g.end_us, g.state = 'open', " + read_from_copy() +
          " FROM cameras c JOIN streams s ON s.camera_id = c.id "
          "JOIN segments g ON g.stream_id = s.id JOIN volumes v ON v.id = g.volume_id JOIN disks d ON d.id = v.disk_id "
          "WHERE c.name = $1 AND s.role = $2 AND s.media_kind = $3 AND g.state IN ('open', 'closed') "
          "AND g.end_us > $4::bigint AND g.start_us < $5::bigint AND d.node = $7 ORDER BY g.start_us, g.id",
      track.camera, std::string(role_name(track.role)), std::string(media_kind_name(track.media_kind)), from_us, to_us,
      reader_node, node);
  bool follows = false;  // the previous segment has no copy either: this one may extend its span
  for (const auto& r : rows) {
    const auto start = std::max(r[0].as<std::int64_t>(), from_us), end = std::min(r[1].as<std::int64_t>(), to_us);
    const bool open = r[2].as<bool>(), copy = r[3].as<bool>();
    if (copy) {
      follows = false;
      continue;
    }
    // Consecutive segments without a copy are one span (what lies between two segments is no
    // footage at all); the open one apart: it is why the rest has no copy yet, or never will.
    if (follows && open == out.back().open) {
      out.back().to_us = std::max(out.back().to_us, end);
      continue;
    }
    if (out.size() == 8) break;
    out.push_back({node, start, end, open});
    follows = true;
  }
  return out;
}

std::optional<NodeEndpoint> camera_owner(pqxx::work& tx, const std::string& camera) {
  const auto r = tx.exec_params(std::string("SELECT ") + kNodeColumns +
                                    " FROM cameras c JOIN nodes n ON n.node = c.owner_node WHERE c.name = $1",
                                camera);
  if (r.empty()) return std::nullopt;
  return node_of(r[0]);
}

}  // namespace vigil::catalog
