#include "catalog/stream_rebuild.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <pqxx/pqxx>

#include "catalog/recording_rows.hpp"

namespace vigil::catalog {
namespace {

// The catalog's rules for these columns (schema/0001_catalog.sql): a description that breaks
// one would make the whole rebuild fail on its CHECK.
bool valid_camera_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  const auto ok = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (!first && (c == '.' || c == '_' || c == '-'));
  };
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!ok(s[i], i == 0)) return false;
  return true;
}

bool valid_codec_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::string unknown_camera(std::int64_t stream_id) { return "unknown-stream-" + std::to_string(stream_id); }

}  // namespace

std::vector<RebuiltStream> plan_stream_rebuild(const std::vector<VolumeSegment>& found,
                                               const std::set<std::int64_t>& known_streams) {
  std::map<std::int64_t, std::vector<const VolumeSegment*>> by_stream;
  for (const auto& v : found) {
    const auto id = static_cast<std::int64_t>(v.stream_id);
    // Only what plan_recovery would adopt once the stream is known: readable, with frames.
    if (!v.scanned || !v.readable || v.frame_count == 0 || known_streams.count(id)) continue;
    by_stream[id].push_back(&v);
  }
  std::vector<RebuiltStream> out;
  for (auto& [id, segments] : by_stream) {
    std::sort(segments.begin(), segments.end(), [](const auto* a, const auto* b) { return a->start_us < b->start_us; });
    RebuiltStream s;
    s.stream_id = id;
    s.start_us = segments.front()->start_us;
    s.end_us = s.start_us;
    std::optional<storage::StreamDescription> described;
    std::string why = "segment headers carry no stream description (written before descriptions)";
    for (const auto* v : segments) {
      s.end_us = std::max(s.end_us, v->end_us);
      ++s.segments;
      s.frames += v->frame_count;
      s.data_bytes += v->data_bytes;
      if (described) continue;
      if (auto d = storage::decode_stream_description(v->description)) {
        described = std::move(*d);
      } else if (!v->description.empty()) {
        why = "the stream description in segment " + std::to_string(v->segment_id) + "'s header does not decode (" +
              d.error().message() + ")";
      }
    }
    if (described) {
      s.description = std::move(*described);
      if (!valid_camera_name(s.description.camera)) {
        s.warning = "camera name '" + s.description.camera.substr(0, 80) + "' is not one the catalog accepts";
        s.description.camera = unknown_camera(id);
      }
    } else {
      s.warning = why;
      s.description.camera = unknown_camera(id);
      s.description.codec = "unknown";
      s.description.time_base_num = 1;
      s.description.time_base_den = 1'000'000;
    }
    auto& d = s.description;
    if (!valid_codec_name(d.codec)) {
      if (s.warning.empty()) s.warning = "codec name '" + d.codec.substr(0, 40) + "' is not one the catalog accepts";
      d.codec = "unknown";
    }
    if (d.role != "main" && d.role != "sub") d.role = "main";
    if (d.media_kind != "video" && d.media_kind != "audio") d.media_kind = "video";
    if (d.width <= 0 || d.height <= 0 || d.width > INT32_MAX || d.height > INT32_MAX) d.width = d.height = 0;
    if (d.admitted_rate_bps < 0) d.admitted_rate_bps = 0;
    if (d.declared_rate_bps <= 0) {
      // Not described: what the segments hold over the time they cover.
      const auto span_us = std::max<std::int64_t>(1, s.end_us - s.start_us);
      const double bps = static_cast<double>(s.data_bytes) * 8e6 / static_cast<double>(span_us);
      d.declared_rate_bps = std::max<std::int64_t>(1, static_cast<std::int64_t>(bps));
    }
    // The stream opened at or before its first frame; a start after it is not believed.
    if (d.started_at_us <= 0 || d.started_at_us > s.start_us) d.started_at_us = s.start_us;
    out.push_back(std::move(s));
  }
  return out;
}

void apply_stream_rebuild(pqxx::work& tx, const std::vector<RebuiltStream>& streams, std::int64_t disk_id) {
  std::int64_t max_id = 0;
  for (const auto& s : streams) {
    const auto& d = s.description;
    const auto camera = ensure_camera(tx, d.camera);
    std::optional<int> width, height;
    if (d.width > 0) {
      width = static_cast<int>(d.width);
      height = static_cast<int>(d.height);
    }
    std::optional<std::int64_t> admitted;
    if (d.admitted_rate_bps > 0) admitted = d.admitted_rate_bps;
    // An audio stream's rate and channels, as recording_rows writes them (NULL where unknown).
    std::optional<int> sample_rate, channels;
    if (d.sample_rate_hz > 0 && d.sample_rate_hz <= std::numeric_limits<int>::max()) {
      sample_rate = static_cast<int>(d.sample_rate_hz);
    }
    if (d.channels > 0 && d.channels <= std::numeric_limits<int>::max()) channels = static_cast<int>(d.channels);
    // How the stream ended is not on the volume: 'interrupted' claims no clean end.
    const auto inserted = tx.exec_params0(
        "INSERT INTO streams (id, camera_id, disk_id, role, media_kind, codec, width, height, "
        "declared_rate_bps, admitted_rate_bps, state, started_at_us, ended_at_us, sample_rate_hz, channels) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'interrupted', $11, GREATEST($11::bigint, $12::bigint), "
        "$13, $14) ON CONFLICT (id) DO NOTHING",
        s.stream_id, camera, disk_id, d.role, d.media_kind, d.codec, width, height, d.declared_rate_bps, admitted,
        d.started_at_us, s.end_us, sample_rate, channels);
    if (inserted.affected_rows() > 0 && !d.extradata.empty()) {
      tx.exec_params0("UPDATE streams SET extradata = $2 WHERE id = $1", s.stream_id,
                      pqxx::binarystring(d.extradata.data(), d.extradata.size()));
    }
    max_id = std::max(max_id, s.stream_id);
  }
  if (max_id > 0) {
    tx.exec_params(
        "SELECT setval(q.seq, GREATEST($1::bigint, COALESCE(pg_sequence_last_value(q.seq), 1))) "
        "FROM (SELECT pg_get_serial_sequence('streams', 'id')::regclass AS seq) q",
        max_id);
  }
}

std::vector<HoleGap> plan_stream_holes(std::vector<StreamSpan> spans) {
  std::sort(spans.begin(), spans.end(), [](const StreamSpan& a, const StreamSpan& b) {
    return a.start_us != b.start_us ? a.start_us < b.start_us : a.stream_id < b.stream_id;
  });
  std::vector<HoleGap> out;
  if (spans.empty()) return out;
  // The stream whose recording reaches furthest so far: a hole is after it.
  StreamSpan reach = spans.front();
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const auto& next = spans[i];
    if (next.start_us > reach.end_us) out.push_back({reach.stream_id, reach.end_us, next.start_us});
    if (next.end_us > reach.end_us) reach = next;
  }
  return out;
}

int write_rebuild_gaps(pqxx::work& tx, const std::set<std::int64_t>& rebuilt) {
  if (rebuilt.empty()) return 0;
  std::string ids = "{";
  for (auto id : rebuilt) ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
  ids += "}";
  // Every stream with recorded segments of the cameras that have a rebuilt one, with the time its
  // segments cover (a stream that recorded nothing, refused say, covers no time).
  std::map<std::int64_t, std::vector<StreamSpan>> by_camera;
  for (const auto& row :
       tx.exec_params("SELECT s.camera_id, s.id, min(g.start_us), max(g.end_us) "
                      "FROM streams s JOIN segments g ON g.stream_id = s.id AND g.state <> 'deleting' "
                      "WHERE s.camera_id IN (SELECT camera_id FROM streams WHERE id = ANY($1::bigint[])) "
                      "GROUP BY s.camera_id, s.id",
                      ids)) {
    by_camera[row[0].as<std::int64_t>()].push_back(
        {row[1].as<std::int64_t>(), row[2].as<std::int64_t>(), row[3].as<std::int64_t>()});
  }
  int written = 0;
  for (auto& [camera, spans] : by_camera) {
    auto sorted = spans;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
    for (const auto& h : plan_stream_holes(spans)) {
      // Only holes next to a rebuilt stream: the others are the live catalog's business.
      const auto after =
          std::find_if(sorted.begin(), sorted.end(), [&](const auto& s) { return s.start_us == h.to_us; });
      const bool touches = rebuilt.count(h.stream_id) || (after != sorted.end() && rebuilt.count(after->stream_id));
      if (!touches) continue;
      written +=
          static_cast<int>(tx.exec_params0("INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) "
                                           "SELECT $1, $2, $3, 'source_lost', $4 WHERE NOT EXISTS (SELECT 1 FROM gaps "
                                           "WHERE stream_id = $1 AND start_us < $3 AND end_us > $2)",
                                           h.stream_id, h.from_us, h.to_us, std::string(kRebuiltGapDetail))
                               .affected_rows());
    }
  }
  return written;
}

}  // namespace vigil::catalog
