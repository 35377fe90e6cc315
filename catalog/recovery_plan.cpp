#include "catalog/recovery_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <pqxx/pqxx>

#include "catalog/retention_rows.hpp"
#include "storage/segment_recovery.hpp"

namespace vigil::catalog {

std::vector<VolumeSegment> scan_volume(storage::Volume& volume, const std::set<std::uint64_t>& trusted) {
  std::vector<VolumeSegment> out;
  for (const auto& [id, uses] : volume.segments()) {
    VolumeSegment v;
    v.segment_id = id;
    v.stream_id = uses.front().header.stream_id;
    v.extent_bytes = volume.extent_bytes();
    if (trusted.count(id)) {
      v.scanned = false;
      for (const auto& u : uses) v.extent_offsets.push_back(volume.extent_offset(u.extent));
      out.push_back(std::move(v));
      continue;
    }
    auto rec = storage::recover_segment(volume, id);
    if (!rec) {
      v.readable = false;
      out.push_back(std::move(v));
      continue;
    }
    const auto& s = rec->summary;
    v.frame_count = s.frame_count;
    v.start_us = s.first_pts == storage::kNoTimestamp ? rec->header.start_us : s.first_pts;
    v.end_us = s.end_pts == storage::kNoTimestamp ? v.start_us : s.end_pts;
    v.data_bytes = s.end_offset;
    for (auto e : s.extents) v.extent_offsets.push_back(volume.extent_offset(e));
    v.gop_index_blob = s.gop_index.encode();
    v.gop_count = static_cast<std::uint32_t>(s.gop_index.size());
    v.clean = rec->clean();
    v.description = rec->header.codec_parameters;
    for (const auto& d : rec->damaged) {
      CorruptSpan c;
      c.from_us = d.from_pts;
      c.to_us = d.to_pts == storage::kNoTimestamp ? d.from_pts : d.to_pts;
      c.first_sequence = d.first_sequence;
      c.last_sequence = d.last_sequence;
      c.from_offset = d.from_offset;
      c.to_offset = d.to_offset;
      c.stop = storage::scan_stop_name(d.stop);
      v.damaged.push_back(std::move(c));
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::set<std::uint64_t> trusted_segments(pqxx::work& tx, const storage::Volume& volume, std::int64_t volume_id) {
  // One query for the whole volume: the catalog's extents of every closed segment, by ordinal.
  std::map<std::uint64_t, std::vector<std::pair<std::int64_t, std::uint64_t>>> in_catalog;
  for (
      const auto& row : tx.exec_params(
          "SELECT s.id, e.ordinal, e.volume_offset_bytes FROM segments s JOIN segment_extents e ON e.segment_id = s.id "
          "WHERE s.volume_id = $1 AND s.state IN ('closed', 'deleting') ORDER BY s.id, e.ordinal",
          volume_id)) {
    in_catalog[row[0].as<std::uint64_t>()].emplace_back(row[1].as<std::int64_t>(), row[2].as<std::uint64_t>());
  }
  std::set<std::uint64_t> out;
  for (const auto& [id, extents] : in_catalog) {
    auto it = volume.segments().find(id);
    if (it == volume.segments().end()) continue;
    const auto& uses = it->second;
    bool same = uses.size() == extents.size();
    for (std::size_t i = 0; same && i < uses.size(); ++i) {
      same = uses[i].header.ordinal == i && extents[i].first == static_cast<std::int64_t>(i) &&
             volume.extent_offset(uses[i].extent) == extents[i].second;
    }
    if (same) out.insert(id);
  }
  return out;
}

RecoveryPlan plan_recovery(const std::vector<VolumeSegment>& on_volume, const std::vector<CatalogSegment>& in_catalog,
                           const std::set<std::int64_t>& known_streams, bool reclaim_unreadable) {
  RecoveryPlan plan;
  std::map<std::uint64_t, const VolumeSegment*> disk;
  for (const auto& v : on_volume) disk[v.segment_id] = &v;
  std::set<std::uint64_t> in_cat;
  for (const auto& c : in_catalog) {
    in_cat.insert(static_cast<std::uint64_t>(c.id));
    auto it = disk.find(static_cast<std::uint64_t>(c.id));
    // A trusted segment (not scanned) is there as the catalog says.
    const bool present =
        it != disk.end() && (!it->second->scanned || (it->second->readable && it->second->frame_count > 0));
    if (c.state == "deleting") {
      // Retention had started: finish it (the extents are tombstoned or about to be).
      if (it != disk.end()) plan.reclaim.push_back(it->first);
      plan.finish_delete.push_back(c.id);
    } else if (!present) {
      if (c.state != "damaged") plan.lost.push_back(c);
      if (it != disk.end()) {
        if (it->second->readable || reclaim_unreadable) plan.reclaim.push_back(it->first);  // no frames, or freed
        else plan.kept.push_back(it->first);
      }
    } else if (c.state == "damaged") {
      plan.restore.push_back(*it->second);  // unreadable at an earlier start, readable now
    } else if (c.state == "open") {
      plan.close.push_back(*it->second);
    } else if (c.state == "closed" && it->second->scanned &&
               c.frame_count < static_cast<std::int64_t>(it->second->frame_count)) {
      // More frames on the volume than the row of a closed segment: the row is the writer's account
      // of what was durable when it closed the segment, so the rest is a failed batch that partly
      // landed and was never acknowledged (its sender resent it elsewhere). The row stands; readers
      // stop at its end.
    } else if (c.state == "closed" && it->second->scanned &&
               (c.frame_count != static_cast<std::int64_t>(it->second->frame_count) ||
                c.end_us != std::max(c.start_us, it->second->end_us))) {
      plan.refresh.push_back(*it->second);
    }
  }
  for (const auto& v : on_volume) {
    if (in_cat.count(v.segment_id)) continue;
    const bool has_frames = v.readable && v.frame_count > 0;
    if (has_frames && known_streams.count(static_cast<std::int64_t>(v.stream_id))) plan.adopt.push_back(v);
    // Frames of a stream the catalog lacks are video all the same: kept until their stream is
    // rebuilt from the segment headers (stream_rebuild.hpp; reconcile_volume does it first).
    else if (has_frames) plan.kept.push_back(v.segment_id);
    else if (v.readable || reclaim_unreadable) plan.reclaim.push_back(v.segment_id);
    else plan.kept.push_back(v.segment_id);
  }
  return plan;
}

namespace {

void write_extents_and_index(pqxx::work& tx, const VolumeSegment& v) {
  tx.exec_params0("DELETE FROM segment_extents WHERE segment_id = $1", static_cast<std::int64_t>(v.segment_id));
  for (std::size_t i = 0; i < v.extent_offsets.size(); ++i) {
    tx.exec_params0(
        "INSERT INTO segment_extents (segment_id, ordinal, volume_offset_bytes, length_bytes) "
        "VALUES ($1, $2, $3, $4)",
        static_cast<std::int64_t>(v.segment_id), static_cast<int>(i), static_cast<std::int64_t>(v.extent_offsets[i]),
        static_cast<std::int64_t>(v.extent_bytes));
  }
  pqxx::binarystring blob(v.gop_index_blob.data(), v.gop_index_blob.size());
  tx.exec_params0(
      "INSERT INTO gop_index (segment_id, format, gop_count, blob) VALUES ($1, 1, $2, $3) "
      "ON CONFLICT (segment_id) DO UPDATE SET gop_count = EXCLUDED.gop_count, blob = EXCLUDED.blob",
      static_cast<std::int64_t>(v.segment_id), static_cast<int>(v.gop_count), blob);
}

// A corruption gap for each damaged span inside V, once (a later repair of the same segment
// finds the same spans).
void write_corruption_gaps(pqxx::work& tx, const VolumeSegment& v) {
  for (const auto& d : v.damaged) {
    if (d.to_us <= d.from_us) continue;  // frames without time: nothing to show on a timeline
    tx.exec_params0(
        "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) SELECT $1, $2, $3, 'corruption', $4 "
        "WHERE NOT EXISTS (SELECT 1 FROM gaps WHERE stream_id = $1 AND start_us = $2 AND end_us = $3 "
        "                  AND reason = 'corruption')",
        static_cast<std::int64_t>(v.stream_id), d.from_us, d.to_us,
        "segment " + std::to_string(v.segment_id) + ": frames " + std::to_string(d.first_sequence) + "-" +
            std::to_string(d.last_sequence) + " damaged on the volume (" + d.stop + " at offset " +
            std::to_string(d.from_offset) + "); playback resumes at offset " + std::to_string(d.to_offset));
  }
}

}  // namespace

// What recovery finds on its volume is acknowledged footage: a segment of a stream whose camera
// has moved on (docs/nodes.md) is written marked, never refused (the segments_owner_epoch trigger).
constexpr const char* kMarkStale = "fenced_epoch = COALESCE(fenced_epoch, vigil_stale_epoch(stream_id))";

void apply_recovery_plan(pqxx::work& tx, std::int64_t volume_id, const RecoveryPlan& plan, std::int64_t restart_us) {
  for (const auto& v : plan.close) {
    const auto id = static_cast<std::int64_t>(v.segment_id);
    // No checksum over the whole segment is known after a crash: 'damaged' is for lost data,
    // so a truncated segment is closed with the CRCs of its records as its integrity.
    tx.exec_params0(
        "UPDATE segments SET state = 'closed', end_us = GREATEST(start_us, $2), data_bytes = $3, "
        "frame_count = $4, checksum_crc32c = 0, closed_at_us = $5, " +
            std::string(kMarkStale) + " WHERE id = $1",
        id, v.end_us, static_cast<std::int64_t>(v.data_bytes), static_cast<std::int64_t>(v.frame_count), restart_us);
    write_extents_and_index(tx, v);
    write_corruption_gaps(tx, v);
    // A stream still recording in the catalog is ended by end_streams_after_crash, whose gap
    // starts at this segment's end: one gap for the crash, not two.
    const bool stream_running = !tx.exec_params("SELECT 1 FROM streams WHERE id = $1 AND state = 'recording'",
                                                static_cast<std::int64_t>(v.stream_id))
                                     .empty();
    if (restart_us > v.end_us && !stream_running) {
      tx.exec_params0(
          "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) "
          "VALUES ($1, $2, $3, 'crash_recovery', $4)",
          static_cast<std::int64_t>(v.stream_id), v.end_us, restart_us,
          "segment " + std::to_string(v.segment_id) + (v.clean ? " ended cleanly" : " truncated at a torn write"));
    }
  }
  for (const auto& v : plan.adopt) {
    const auto id = static_cast<std::int64_t>(v.segment_id);
    tx.exec_params0(
        "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count, "
        "checksum_crc32c, closed_at_us, fenced_epoch) VALUES ($1, $2, $3, 'closed', $4::bigint, "
        "GREATEST($4::bigint, $5::bigint), $6, $7, 0, $8, vigil_stale_epoch($2))",
        id, static_cast<std::int64_t>(v.stream_id), volume_id, v.start_us, v.end_us,
        static_cast<std::int64_t>(v.data_bytes), static_cast<std::int64_t>(v.frame_count), restart_us);
    write_extents_and_index(tx, v);
    write_corruption_gaps(tx, v);
  }
  const std::set<std::uint64_t> kept(plan.kept.begin(), plan.kept.end());
  for (const auto& c : plan.lost) {
    tx.exec_params0("UPDATE segments SET state = 'damaged' WHERE id = $1", c.id);
    if (c.end_us > c.start_us) {
      const bool unreadable = kept.count(static_cast<std::uint64_t>(c.id)) > 0;
      tx.exec_params0(
          "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) VALUES ($1, $2, $3, 'corruption', $4)",
          c.stream_id, c.start_us, c.end_us,
          "segment " + std::to_string(c.id) +
              (unreadable ? " is unreadable on its volume (kept; tried again at every start)"
                          : " is missing from its volume"));
    }
  }
  for (const auto& v : plan.restore) {
    // Readable again: the segment is back, and so is its video (the gap its loss left goes).
    const auto id = static_cast<std::int64_t>(v.segment_id);
    tx.exec_params0(
        "UPDATE segments SET state = 'closed', end_us = GREATEST(start_us, $2), data_bytes = $3, frame_count = $4, "
        "checksum_crc32c = COALESCE(checksum_crc32c, 0), closed_at_us = COALESCE(closed_at_us, $5), " +
            std::string(kMarkStale) + " WHERE id = $1",
        id, v.end_us, static_cast<std::int64_t>(v.data_bytes), static_cast<std::int64_t>(v.frame_count), restart_us);
    tx.exec_params0("DELETE FROM gaps WHERE stream_id = $1 AND reason = 'corruption' AND detail LIKE $2",
                    static_cast<std::int64_t>(v.stream_id), "segment " + std::to_string(v.segment_id) + " is %");
    write_extents_and_index(tx, v);
    write_corruption_gaps(tx, v);
  }
  finish_deleting(tx, std::vector<std::uint64_t>(plan.finish_delete.begin(), plan.finish_delete.end()));
  for (const auto& v : plan.refresh) {
    tx.exec_params0("UPDATE segments SET end_us = GREATEST(start_us, $2), data_bytes = $3, frame_count = $4, " +
                        std::string(kMarkStale) + " WHERE id = $1",
                    static_cast<std::int64_t>(v.segment_id), v.end_us, static_cast<std::int64_t>(v.data_bytes),
                    static_cast<std::int64_t>(v.frame_count));
    write_extents_and_index(tx, v);
    write_corruption_gaps(tx, v);
  }
}

std::vector<CatalogSegment> catalog_segments(pqxx::work& tx, std::int64_t volume_id) {
  std::vector<CatalogSegment> out;
  for (const auto& row : tx.exec_params(
           "SELECT id, stream_id, state, start_us, end_us, frame_count, data_bytes FROM segments WHERE volume_id = $1",
           volume_id)) {
    out.push_back({row[0].as<std::int64_t>(), row[1].as<std::int64_t>(), row[2].as<std::string>(),
                   row[3].as<std::int64_t>(), row[4].as<std::int64_t>(), row[5].as<std::int64_t>(),
                   row[6].as<std::int64_t>()});
  }
  return out;
}

}  // namespace vigil::catalog
