#include "catalog/camera_rows.hpp"

#include <pqxx/pqxx>
#include <regex>
#include <stdexcept>

#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

void check_name(const std::string& name) {
  if (!is_valid_camera_name(name)) {
    throw CatalogError::invalid("camera name '" + name +
                                "': 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
}

void check_url(const std::string& url) {
  // What the puller (libavformat) opens; rtsp:// is the camera case, files and http(s) serve tests
  // and relays. Never a shell: the URL is one argv entry of the recorder.
  static const std::regex ok("^(rtsp|rtsps|http|https|file)://[^\\s]+$");
  if (url.size() > 2048 || !std::regex_match(url, ok)) {
    throw CatalogError::invalid("camera URL '" + url +
                                "': expected rtsp://, rtsps://, http(s):// or file:// without spaces");
  }
}

}  // namespace

bool is_valid_camera_name(const std::string& name) {
  static const std::regex ok("^[A-Za-z0-9][A-Za-z0-9._-]*$");
  return !name.empty() && name.size() <= 64 && std::regex_match(name, ok);
}

std::int64_t add_camera(pqxx::work& tx, const std::string& name, const std::string& url,
                        const std::optional<std::string>& substream_url) {
  check_name(name);
  check_url(url);
  if (substream_url) check_url(*substream_url);
  return tx
      .exec_params1(
          "INSERT INTO cameras (name, url, substream_url, enabled) VALUES ($1, $2, $3, true) "
          "ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, substream_url = EXCLUDED.substream_url, "
          "enabled = true RETURNING id",
          name, url, substream_url)[0]
      .as<std::int64_t>();
}

std::vector<CameraRow> list_cameras(pqxx::work& tx) {
  std::vector<CameraRow> out;
  const auto rows = tx.exec(
      "SELECT c.id, c.name, c.url, c.substream_url, c.enabled, s.state, COALESCE(s.ended_at_us, 0), "
      "c.declared_rate_bps FROM cameras c LEFT JOIN LATERAL (SELECT state, ended_at_us FROM streams WHERE camera_id = c.id "
      "ORDER BY (role = 'main' AND media_kind = 'video') DESC, started_at_us DESC, id DESC LIMIT 1) s ON true ORDER BY c.name");
  for (const auto& r : rows) {
    CameraRow c;
    c.id = r[0].as<std::int64_t>();
    c.name = r[1].as<std::string>();
    if (!r[2].is_null()) c.url = r[2].as<std::string>();
    if (!r[3].is_null()) c.substream_url = r[3].as<std::string>();
    c.enabled = r[4].as<bool>();
    if (!r[5].is_null()) c.last_stream_state = r[5].as<std::string>();
    c.last_end_us = r[6].as<std::int64_t>();
    if (!r[7].is_null()) c.declared_rate_bps = r[7].as<std::int64_t>();
    out.push_back(std::move(c));
  }
  return out;
}

bool remove_camera(pqxx::work& tx, const std::string& name) {
  auto r = tx.exec_params(
      "DELETE FROM cameras c WHERE name = $1 AND NOT EXISTS "
      "(SELECT 1 FROM streams s WHERE s.camera_id = c.id) "
      "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.camera_id = c.id) RETURNING id",
      name);
  if (!r.empty()) return true;
  return !tx.exec_params("UPDATE cameras SET enabled = false WHERE name = $1 RETURNING id", name).empty();
}

}  // namespace vigil::catalog
