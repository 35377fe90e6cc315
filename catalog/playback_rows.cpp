#include "catalog/playback_rows.hpp"

#include <algorithm>
#include <pqxx/pqxx>
#include <stdexcept>

#include "catalog/copy_stand_in.hpp"
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

void lay_out_as_object(storage::PlaybackSegment& seg, std::size_t slot) {
  const std::uint64_t eb = seg.extent_bytes;
  const std::uint64_t extents = eb == 0 ? 0 : (seg.end_offset + eb - 1) / eb;
  seg.extent_offsets.clear();
  for (std::uint64_t i = 0; i < extents; ++i) seg.extent_offsets.push_back(slot * kArchiveSlotBytes + i * eb);
}

PlaybackPlan plan_playback(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us, int limit,
                           const std::vector<FreshSegment>& fresher, bool one_volume, const std::string& reader_node) {
  PlaybackPlan plan;
  const std::string role(role_name(track.role)), kind(media_kind_name(track.media_kind));
  auto cam = tx.exec_params(
      "SELECT c.id, EXISTS (SELECT 1 FROM streams s WHERE s.camera_id = c.id AND s.role = $2 AND s.media_kind = $3) "
      "FROM cameras c WHERE c.name = $1",
      track.camera, role, kind);
  if (cam.empty()) return plan;
  plan.camera_exists = true;
  plan.camera_id = cam[0][0].as<std::int64_t>();
  plan.track_exists = cam[0][1].as<bool>() || !fresher.empty();
  // segments_stream_start serves the range per stream. Open segments too: they are readable up
  // to their last durable cycle (this row's figures, or fresher ones from the recording node).
  // The copy is read when only the archive holds the segment, or when it stands in for a closed
  // segment of a node that is down (copy_stand_in.hpp).
  const std::string copy_read = "(g.state = 'archived' OR " + holder_down_sql(7) + ")";
  const auto rows = tx.exec_params(
      "SELECT g.id, g.stream_id, g.volume_id, g.start_us, g.end_us, g.data_bytes, v.extent_bytes, "
      "       s.codec, s.extradata, COALESCE(s.width, 0), COALESCE(s.height, 0), "
      "       COALESCE(s.admitted_rate_bps, s.declared_rate_bps), gi.blob, "
      "       (SELECT array_agg(e.volume_offset_bytes ORDER BY e.ordinal) FROM segment_extents e "
      "         WHERE e.segment_id = g.id), g.state = 'open', "
      "       COALESCE(s.sample_rate_hz, 0), COALESCE(s.channels, 0), "
      "       k.segment_id IS NOT NULL, k.bucket, k.object_key, v.block_bytes "
      "FROM streams s JOIN segments g ON g.stream_id = s.id JOIN volumes v ON v.id = g.volume_id "
      "LEFT JOIN gop_index gi ON gi.segment_id = g.id "
      "LEFT JOIN segment_copies k ON k.segment_id = g.id AND k.tier = 's3' AND " +
          copy_read +
          " WHERE s.camera_id = $1 AND s.role = $5 AND s.media_kind = $6 "
          "  AND (g.state IN ('open', 'closed') OR (g.state = 'archived' AND k.segment_id IS NOT NULL)) "
          "  AND g.end_us > $2::bigint AND g.start_us < $3::bigint "
          "ORDER BY g.start_us, g.id LIMIT $4",
      plan.camera_id, from_us, to_us, limit, role, kind, reader_node);
  std::vector<FreshSegment> found;
  for (const auto& row : rows) {
    FreshSegment f;
    f.volume_id = row[2].as<std::int64_t>();
    f.start_us = row[3].as<std::int64_t>();
    f.open = row[14].as<bool>();
    f.codec = row[7].as<std::string>();
    f.extradata = row[8].is_null() ? std::string() : pqxx::binarystring(row[8]).str();
    f.width = row[9].as<int>();
    f.height = row[10].as<int>();
    f.sample_rate_hz = row[15].as<int>();
    f.channels = row[16].as<int>();
    f.rate_bps = row[11].as<std::int64_t>();
    auto& seg = f.segment;
    seg.segment_id = row[0].as<std::uint64_t>();
    seg.stream_id = row[1].as<std::uint64_t>();
    seg.extent_bytes = row[6].as<std::uint64_t>();
    seg.end_offset = row[5].as<std::uint64_t>();
    seg.end_pts = row[4].as<std::int64_t>();
    if (!row[12].is_null()) {
      pqxx::binarystring blob(row[12]);
      auto gops = storage::GopIndex::decode(
          std::span<const std::byte>(reinterpret_cast<const std::byte*>(blob.data()), blob.size()));
      if (!gops) throw std::runtime_error("segment " + row[0].as<std::string>() + ": unreadable GOP index");
      seg.gops = std::move(*gops);
    }
    seg.extent_offsets = row[13].is_null() ? std::vector<std::uint64_t>{} : parse_array(row[13].as<std::string>());
    if (row[17].as<bool>()) {
      f.archived = ArchivedObject{.bucket = row[18].as<std::string>(),
                                  .key = row[19].as<std::string>(),
                                  .bytes = seg.end_offset,
                                  .block_bytes = row[20].as<std::size_t>()};
    }
    found.push_back(std::move(f));
  }
  // The recording node's view wins: a fresher end, or a segment whose row has not committed yet.
  for (const auto& f : fresher) {
    if (f.segment.end_pts <= from_us || f.start_us >= to_us) continue;
    auto same = std::find_if(found.begin(), found.end(),
                             [&](const FreshSegment& c) { return c.segment.segment_id == f.segment.segment_id; });
    // An archived row stays: its extents are free, whatever the node still remembers of them.
    if (same != found.end()) {
      if (!same->archived) *same = f;
    } else found.push_back(f);
  }
  std::stable_sort(found.begin(), found.end(), [](const FreshSegment& a, const FreshSegment& b) {
    return a.start_us != b.start_us ? a.start_us < b.start_us : a.segment.segment_id < b.segment.segment_id;
  });
  // Audio: the rate and channels too (G.711 and RTP's Opus have no config that would say them).
  const auto same_codec = [](const FreshSegment& a, const PlaybackPart& p, const std::string& extradata,
                             std::pair<int, int> audio) {
    return a.codec == p.codec && a.width == p.width && a.height == p.height && a.extradata == extradata &&
           std::pair(a.sample_rate_hz, a.channels) == audio;
  };
  std::string part_extradata;
  std::pair<int, int> part_audio;
  bool first_part = true;
  for (auto& f : found) {
    // An open segment the catalog knows only by its first row may have no keyframe yet: nothing
    // of it can be decoded, so nothing of it is served (it will be within a cycle or two).
    if (f.segment.gops.empty()) continue;
    if (plan.parts.empty() || !same_codec(f, plan.parts.back(), part_extradata, part_audio)) {
      // A part begins where the previous one ends at the earliest: a reconnect's first frame may
      // be stamped a little before the previous recording's end (two clocks), and a request
      // from the part's start must not plan the previous part again. Its first GOP is still
      // served whole: the keyframe at or before the start.
      const std::int64_t from = plan.parts.empty() ? f.start_us : std::max(f.start_us, plan.parts.back().to_us);
      if (!plan.parts.empty()) first_part = false;
      plan.parts.push_back({.from_us = from, .to_us = from, .codec = f.codec, .width = f.width, .height = f.height});
      part_extradata = f.extradata;
      part_audio = {f.sample_rate_hz, f.channels};
    }
    auto& part = plan.parts.back();
    part.to_us = std::max(part.to_us, f.segment.end_pts);
    ++part.segments;
    if (!first_part || plan.next_from_us != 0) {
      if (plan.next_from_us == 0) plan.next_from_us = part.from_us;
      continue;  // another part: listed, not planned
    }
    if (plan.segments.empty()) {
      plan.volume_id = f.volume_id;
      plan.codec = f.codec;
      plan.extradata = f.extradata;
      plan.width = f.width;
      plan.height = f.height;
      plan.sample_rate_hz = f.sample_rate_hz;
      plan.channels = f.channels;
      plan.from_us = f.start_us;
    } else if (one_volume && (f.archived.has_value() != plan.segment_archives.front().has_value() ||
                              (!f.archived && f.volume_id != plan.volume_id))) {
      // A reader of one disk: the rest is read by a playback of its own (the parts list names
      // parts by codec parameters, so it does not change).
      plan.next_from_us = std::max(f.start_us, plan.to_us);  // as a part's start, above
      continue;
    }
    plan.rate_bps = std::max(plan.rate_bps, f.rate_bps);
    const double seconds = std::max(1.0, static_cast<double>(f.segment.end_pts - f.start_us) / 1e6);
    const Rate data_rate = Rate::from_bytes_over(static_cast<double>(f.segment.end_offset), seconds);
    plan.data_rate_bps = std::max(plan.data_rate_bps, static_cast<std::int64_t>(data_rate.bps()));
    plan.to_us = f.segment.end_pts;
    plan.reaches_open = f.open;
    plan.segment_volumes.push_back(f.volume_id);
    if (f.archived) lay_out_as_object(f.segment, plan.segments.size());
    plan.segment_archives.push_back(std::move(f.archived));
    plan.segments.push_back(std::move(f.segment));
  }
  return plan;
}

}  // namespace vigil::catalog
