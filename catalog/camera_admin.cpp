#include "catalog/camera_admin.hpp"

#include <pqxx/pqxx>
#include <regex>
#include <stdexcept>

#include "catalog/camera_rows.hpp"
#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

void check_name(const std::string& name) {
  if (!is_valid_camera_name(name)) {
    throw CatalogError::invalid("camera name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
}

void check_retention(const std::optional<int>& days) {
  if (days && (*days < 1 || *days > kMaxRetentionDays)) {
    throw CatalogError::invalid("retention_days must be an integer from 1 to 36500 (or null)");
  }
}

void check_retention_bytes(const std::optional<std::int64_t>& bytes) {
  if (bytes && (*bytes < kMinRetentionBytes || *bytes > kMaxRetentionBytes)) {
    throw CatalogError::invalid("retention_bytes must be an integer from 1048576 (1 MiB) to 2^60 (or null)");
  }
}

void check_declared_rate(const std::optional<std::int64_t>& bps) {
  if (bps && (*bps < kMinDeclaredRateBps || *bps > kMaxDeclaredRateBps)) {
    throw CatalogError::invalid("declared_rate_bps must be an integer from 64000 to 10000000000 (or null)");
  }
}

template <class T>
std::optional<T> opt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<T>();
}

}  // namespace

void check_camera_url(const std::string& url) {
  static const std::regex ok("^(rtsp|rtsps|http|https|file)://[^\\s]+$");
  if (url.size() > 2048 || url.find('\0') != std::string::npos || !std::regex_match(url, ok)) {
    throw CatalogError::invalid(
        "camera URL: expected rtsp://, rtsps://, http(s):// or file:// without spaces, "
        "at most 2048 bytes");
  }
}

std::int64_t create_camera(pqxx::work& tx, const NewCamera& c) {
  check_name(c.name);
  if (c.url) check_camera_url(*c.url);
  if (c.substream_url) {
    if (!c.url) throw CatalogError::invalid("substream_url needs a url");
    check_camera_url(*c.substream_url);
  }
  check_retention(c.retention_days);
  check_retention_bytes(c.retention_bytes);
  check_declared_rate(c.declared_rate_bps);
  auto r = tx.exec_params(
      "INSERT INTO cameras (name, url, substream_url, enabled, retention_days, declared_rate_bps, retention_bytes) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING RETURNING id",
      c.name, c.url, c.substream_url, c.enabled, c.retention_days, c.declared_rate_bps, c.retention_bytes);
  if (r.empty()) throw CatalogError::conflict("a camera named '" + c.name + "' exists already");
  return r[0][0].as<std::int64_t>();
}

std::optional<CameraDetails> camera_details(pqxx::work& tx, const std::string& name) {
  if (!is_valid_camera_name(name)) return std::nullopt;
  auto r = tx.exec_params(
      "SELECT c.id, c.name, c.url, c.substream_url, c.enabled, c.retention_days, c.created_at_us, s.state, "
      "COALESCE(s.ended_at_us, 0), (SELECT count(*) FROM streams x WHERE x.camera_id = c.id), "
      "c.declared_rate_bps, c.retention_bytes, c.archive_after_s, c.archive_retention_days, "
      // What counts against the quota: as retention_view sums it.
      "(SELECT COALESCE(sum(g.data_bytes), 0) FROM segments g JOIN streams gs ON gs.id = g.stream_id "
      " WHERE gs.camera_id = c.id AND g.state IN ('open', 'closed', 'damaged') AND NOT EXISTS (SELECT 1 FROM "
      " evidence_locks l WHERE l.stream_id = g.stream_id AND l.unlocked_at_us IS NULL AND l.start_us < g.end_us "
      " AND g.start_us < l.end_us)) "
      "FROM cameras c LEFT JOIN LATERAL (SELECT state, ended_at_us FROM streams WHERE camera_id = c.id "
      "ORDER BY (role = 'main' AND media_kind = 'video') DESC, started_at_us DESC, id DESC LIMIT 1) s ON true WHERE c.name = $1",
      name);
  if (r.empty()) return std::nullopt;
  const auto& row = r[0];
  CameraDetails d;
  d.id = row[0].as<std::int64_t>();
  d.name = row[1].as<std::string>();
  d.url = opt<std::string>(row[2]);
  d.substream_url = opt<std::string>(row[3]);
  d.enabled = row[4].as<bool>();
  d.retention_days = opt<int>(row[5]);
  d.created_at_us = row[6].as<std::int64_t>();
  d.state = row[7].is_null() ? "never recorded" : row[7].as<std::string>();
  d.last_end_us = row[8].as<std::int64_t>();
  d.streams = row[9].as<std::int64_t>();
  d.declared_rate_bps = opt<std::int64_t>(row[10]);
  d.retention_bytes = opt<std::int64_t>(row[11]);
  d.archive_after_s = opt<int>(row[12]);
  d.archive_retention_days = opt<int>(row[13]);
  d.recorded_bytes = row[14].as<std::int64_t>();
  return d;
}

bool update_camera(pqxx::work& tx, const std::string& name, const CameraChange& ch) {
  if (!is_valid_camera_name(name)) return false;
  if (ch.url && *ch.url) check_camera_url(**ch.url);
  if (ch.substream_url && *ch.substream_url) check_camera_url(**ch.substream_url);
  if (ch.retention_days) check_retention(*ch.retention_days);
  if (ch.declared_rate_bps) check_declared_rate(*ch.declared_rate_bps);
  if (ch.retention_bytes) check_retention_bytes(*ch.retention_bytes);
  auto cur = tx.exec_params("SELECT url, substream_url FROM cameras WHERE name = $1 FOR UPDATE", name);
  if (cur.empty()) return false;
  const auto url = ch.url ? *ch.url : opt<std::string>(cur[0][0]);
  const auto sub = ch.substream_url ? *ch.substream_url : opt<std::string>(cur[0][1]);
  if (sub && !url) throw CatalogError::invalid("substream_url needs a url (clear substream_url too)");
  // Each setting is written only when given: $n::boolean IS NULL keeps the column.
  tx.exec_params0(
      "UPDATE cameras SET enabled = COALESCE($2, enabled), url = $3, substream_url = $4, "
      "retention_days = CASE WHEN $5 THEN $6 ELSE retention_days END, "
      "declared_rate_bps = CASE WHEN $7 THEN $8 ELSE declared_rate_bps END, "
      "retention_bytes = CASE WHEN $9 THEN $10 ELSE retention_bytes END WHERE name = $1",
      name, ch.enabled, url, sub, ch.retention_days.has_value(),
      ch.retention_days ? *ch.retention_days : std::optional<int>(), ch.declared_rate_bps.has_value(),
      ch.declared_rate_bps ? *ch.declared_rate_bps : std::optional<std::int64_t>(), ch.retention_bytes.has_value(),
      ch.retention_bytes ? *ch.retention_bytes : std::optional<std::int64_t>());
  if (ch.archive_after_s && *ch.archive_after_s &&
      (**ch.archive_after_s < 0 || **ch.archive_after_s > kMaxArchiveAfterS))
    throw CatalogError::invalid("archive_after_s must be an integer from 0 to 31536000 (or null)");
  if (ch.archive_retention_days) check_retention(*ch.archive_retention_days);
  tx.exec_params0(
      "UPDATE cameras SET archive_after_s = CASE WHEN $2 THEN $3 ELSE archive_after_s END, "
      "archive_retention_days = CASE WHEN $4 THEN $5 ELSE archive_retention_days END WHERE name = $1",
      name, ch.archive_after_s.has_value(), ch.archive_after_s ? *ch.archive_after_s : std::optional<int>(),
      ch.archive_retention_days.has_value(),
      ch.archive_retention_days ? *ch.archive_retention_days : std::optional<int>());
  return true;
}

std::optional<std::vector<StreamInfo>> camera_streams(pqxx::work& tx, const std::string& name, std::size_t limit) {
  if (!is_valid_camera_name(name)) return std::nullopt;
  auto cam = tx.exec_params("SELECT id FROM cameras WHERE name = $1", name);
  if (cam.empty()) return std::nullopt;
  auto rows = tx.exec_params(
      "SELECT s.id, s.disk_id, s.role, s.media_kind, s.codec, s.state, COALESCE(s.width, 0), COALESCE(s.height, 0), "
      "s.declared_rate_bps, s.admitted_rate_bps, s.measured_rate_bps, s.started_at_us, s.ended_at_us, "
      "g.n, g.bytes, g.first_us, g.last_us, COALESCE(s.sample_rate_hz, 0), COALESCE(s.channels, 0) FROM streams s LEFT JOIN LATERAL (SELECT count(*) AS n, "
      "COALESCE(sum(data_bytes), 0) AS bytes, min(start_us) AS first_us, max(end_us) AS last_us FROM segments "
      "WHERE stream_id = s.id) g ON true WHERE s.camera_id = $1 ORDER BY s.started_at_us DESC, s.id DESC LIMIT $2",
      cam[0][0].as<std::int64_t>(), static_cast<std::int64_t>(limit));
  std::vector<StreamInfo> out;
  for (const auto& r : rows) {
    StreamInfo s;
    s.id = r[0].as<std::int64_t>();
    s.disk_id = opt<std::int64_t>(r[1]);
    s.role = r[2].as<std::string>();
    s.media_kind = r[3].as<std::string>();
    s.codec = r[4].as<std::string>();
    s.state = r[5].as<std::string>();
    s.width = r[6].as<int>();
    s.height = r[7].as<int>();
    s.declared_rate_bps = r[8].as<std::int64_t>();
    s.admitted_rate_bps = opt<std::int64_t>(r[9]);
    s.measured_rate_bps = opt<std::int64_t>(r[10]);
    s.started_at_us = r[11].as<std::int64_t>();
    s.ended_at_us = opt<std::int64_t>(r[12]);
    s.segments = r[13].as<std::int64_t>();
    s.bytes = r[14].as<std::int64_t>();
    s.first_us = opt<std::int64_t>(r[15]);
    s.last_us = opt<std::int64_t>(r[16]);
    s.sample_rate_hz = r[17].as<int>();
    s.channels = r[18].as<int>();
    out.push_back(std::move(s));
  }
  return out;
}

Removal remove_or_disable_camera(pqxx::work& tx, const std::string& name) {
  if (!is_valid_camera_name(name)) return Removal::none;
  if (tx.exec_params("SELECT 1 FROM cameras WHERE name = $1 FOR UPDATE", name).empty()) return Removal::none;
  auto r = tx.exec_params(
      "DELETE FROM cameras c WHERE name = $1 AND NOT EXISTS "
      "(SELECT 1 FROM streams s WHERE s.camera_id = c.id) "
      "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.camera_id = c.id) RETURNING id",
      name);
  if (!r.empty()) return Removal::deleted;
  tx.exec_params0("UPDATE cameras SET enabled = false WHERE name = $1", name);
  return Removal::disabled;
}

std::map<std::uint64_t, storage::StreamRetention> camera_retention(pqxx::work& tx) {
  std::map<std::uint64_t, storage::StreamRetention> out;
  auto rows = tx.exec(
      "SELECT s.id, c.retention_days FROM streams s JOIN cameras c ON c.id = s.camera_id "
      "WHERE c.retention_days IS NOT NULL");
  for (const auto& r : rows) {
    storage::StreamRetention ret;
    ret.max_age_us = static_cast<std::int64_t>(r[1].as<int>()) * 86'400'000'000LL;
    out[static_cast<std::uint64_t>(r[0].as<std::int64_t>())] = ret;
  }
  return out;
}

}  // namespace vigil::catalog
