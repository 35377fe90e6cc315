#include "catalog/playback_rows.hpp"

#include <pqxx/pqxx>
#include <stdexcept>

#include "common/rate.hpp"

namespace vigil::catalog {
namespace {

// A PostgreSQL bigint[] in text form: {1,2,3}.
std::vector<std::uint64_t> parse_array(const std::string& text) {
  std::vector<std::uint64_t> out;
  std::uint64_t v = 0;
  bool in = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
      in = true;
    } else if (in) {
      out.push_back(v);
      v = 0;
      in = false;
    }
  }
  return out;
}

}  // namespace

PlaybackPlan plan_playback(pqxx::work& tx, const std::string& camera, std::int64_t from_us, std::int64_t to_us,
                           int limit) {
  PlaybackPlan plan;
  auto cam = tx.exec_params("SELECT id FROM cameras WHERE name = $1", camera);
  if (cam.empty()) return plan;
  plan.camera_exists = true;
  plan.camera_id = cam[0][0].as<std::int64_t>();
  // segments_stream_start serves the range per stream; closed segments only (an open one is
  // still being written: live playback reads the recording's own buffer).
  const auto rows = tx.exec_params(
      "SELECT g.id, g.stream_id, g.volume_id, g.start_us, g.end_us, g.data_bytes, v.extent_bytes, "
      "       s.codec, s.extradata, COALESCE(s.width, 0), COALESCE(s.height, 0), "
      "       COALESCE(s.admitted_rate_bps, s.declared_rate_bps), gi.blob, "
      "       (SELECT array_agg(e.volume_offset_bytes ORDER BY e.ordinal) FROM segment_extents e "
      "         WHERE e.segment_id = g.id) "
      "FROM streams s JOIN segments g ON g.stream_id = s.id JOIN volumes v ON v.id = g.volume_id "
      "JOIN gop_index gi ON gi.segment_id = g.id "
      "WHERE s.camera_id = $1 AND g.state = 'closed' AND g.end_us > $2::bigint AND g.start_us < $3::bigint "
      "ORDER BY g.start_us, g.id LIMIT $4",
      plan.camera_id, from_us, to_us, limit);
  for (const auto& row : rows) {
    const std::string codec = row[7].as<std::string>();
    const std::string extradata = row[8].is_null() ? std::string() : pqxx::binarystring(row[8]).str();
    const auto volume_id = row[2].as<std::int64_t>();
    if (plan.segments.empty()) {
      plan.volume_id = volume_id;
      plan.codec = codec;
      plan.extradata = extradata;
      plan.width = row[9].as<int>();
      plan.height = row[10].as<int>();
      plan.from_us = row[3].as<std::int64_t>();
    } else if (codec != plan.codec || extradata != plan.extradata || volume_id != plan.volume_id) {
      break;  // another configuration or volume: a playback of its own
    }
    pqxx::binarystring blob(row[12]);
    auto gops = storage::GopIndex::decode(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(blob.data()), blob.size()));
    if (!gops) throw std::runtime_error("segment " + row[0].as<std::string>() + ": unreadable GOP index");
    storage::PlaybackSegment seg;
    seg.segment_id = row[0].as<std::uint64_t>();
    seg.stream_id = row[1].as<std::uint64_t>();
    seg.extent_bytes = row[6].as<std::uint64_t>();
    seg.end_offset = row[5].as<std::uint64_t>();
    seg.end_pts = row[4].as<std::int64_t>();
    seg.gops = std::move(*gops);
    seg.extent_offsets = row[13].is_null() ? std::vector<std::uint64_t>{} : parse_array(row[13].as<std::string>());
    plan.rate_bps = std::max(plan.rate_bps, row[11].as<std::int64_t>());
    const double seconds =
        std::max(1.0, static_cast<double>(row[4].as<std::int64_t>() - row[3].as<std::int64_t>()) / 1e6);
    const Rate data_rate = Rate::from_bytes_over(static_cast<double>(seg.end_offset), seconds);
    plan.data_rate_bps = std::max(plan.data_rate_bps, static_cast<std::int64_t>(data_rate.bps()));
    plan.to_us = row[4].as<std::int64_t>();
    plan.segments.push_back(std::move(seg));
  }
  return plan;
}

}  // namespace vigil::catalog
