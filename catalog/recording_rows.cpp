#include "catalog/recording_rows.hpp"

#include <algorithm>
#include "catalog/pending_rows.hpp"

#include <pqxx/pqxx>
#include <stdexcept>

namespace vigil::catalog {

std::int64_t ensure_camera(pqxx::work& tx, const std::string& name) {
  // ON CONFLICT DO NOTHING + SELECT: two sessions naming the same camera get the same row.
  tx.exec_params0("INSERT INTO cameras (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", name);
  return tx.exec_params1("SELECT id FROM cameras WHERE name = $1", name)[0].as<std::int64_t>();
}

std::int64_t open_stream(pqxx::work& tx, const StreamOpening& s) {
  if (s.codec.empty()) throw std::invalid_argument("open_stream: codec is required");
  std::optional<int> w, h;
  if (s.width > 0 && s.height > 0) {
    w = s.width;
    h = s.height;
  }
  std::optional<std::int64_t> given;
  if (s.id != 0) given = s.id;
  // An audio stream's sample rate and channels (what its codec config may leave unsaid: G.711,
  // RTP's Opus), for the muxers and the API; NULL for video and where the recorder gave none.
  std::optional<int> rate, channels;
  if (s.sample_rate_hz > 0) rate = s.sample_rate_hz;
  if (s.channels > 0) channels = s.channels;
  const auto id =
      tx.exec_params1(
            "INSERT INTO streams (id, camera_id, disk_id, codec, width, height, declared_rate_bps, "
            "admitted_rate_bps, state, started_at_us, role, media_kind, sample_rate_hz, channels, owner_epoch) VALUES "
            "(COALESCE($9, nextval(pg_get_serial_sequence('streams', 'id'))), $1, $2, $3, $4, $5, $6, $7, 'recording', "
            "$8, $10, $11, $12, $13, $14) RETURNING id",
            s.camera_id, s.disk_id, s.codec, w, h, s.declared_rate_bps, s.admitted_rate_bps, s.started_at_us, given,
            std::string(role_name(s.role)), std::string(media_kind_name(s.media_kind)), rate, channels,
            s.owner_epoch)[0]
          .as<std::int64_t>();
  if (!s.extradata.empty()) {
    tx.exec_params0("UPDATE streams SET extradata = $2 WHERE id = $1", id, pqxx::binarystring(s.extradata));
  }
  return id;
}

void update_admitted_rate(pqxx::work& tx, std::int64_t stream_id, std::int64_t admitted_rate_bps) {
  tx.exec_params0("UPDATE streams SET admitted_rate_bps = $2 WHERE id = $1", stream_id, admitted_rate_bps);
}

std::vector<std::int64_t> reserve_stream_ids(pqxx::work& tx, int count) {
  std::vector<std::int64_t> ids;
  for (const auto& row :
       tx.exec_params("SELECT nextval(pg_get_serial_sequence('streams', 'id')) FROM generate_series(1, $1)", count)) {
    ids.push_back(row[0].as<std::int64_t>());
  }
  return ids;
}

void record_closed_segment(pqxx::work& tx, std::int64_t volume_id, const storage::SegmentSummary& seg,
                           const std::vector<std::uint64_t>& extent_offsets, std::uint64_t extent_bytes,
                           std::int64_t closed_at_us) {
  apply(tx, closed_segment_row(volume_id, seg, extent_offsets, extent_bytes, closed_at_us));
}

void record_gap(pqxx::work& tx, std::int64_t stream_id, std::int64_t from_us, std::int64_t to_us,
                const std::string& reason, const std::string& detail) {
  if (to_us <= from_us) return;  // an empty gap is no gap
  tx.exec_params0("INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) VALUES ($1, $2, $3, $4, $5)",
                  stream_id, from_us, to_us, reason, detail);
}

bool record_refused_gap(pqxx::work& tx, std::int64_t stream_id, std::int64_t from_us, std::int64_t to_us,
                        const std::string& reason, const std::string& detail) {
  // The batcher may commit this after the camera's next stream opened (opens go to the catalog
  // directly), so the cut is made here as well as in record_reconnect_gap. "Next" in the order
  // record_reconnect_gap uses, (started_at_us, id): a stream re-opened for a frame larger than its
  // buffer begins with that very frame, so with a live source's capture clock both streams start
  // at the same instant — and the frames this one refused are all in the next.
  to_us = std::min(to_us, tx.exec_params1("SELECT COALESCE(min(n.started_at_us), $2) FROM streams s "
                                          "JOIN streams n ON n.camera_id = s.camera_id AND n.role = s.role "
                                          "AND n.media_kind = s.media_kind AND n.id <> s.id "
                                          "AND (n.started_at_us, n.id) > (s.started_at_us, s.id) WHERE s.id = $1",
                                          stream_id, to_us)[0]
                              .as<std::int64_t>());
  if (to_us <= from_us) return false;
  if (!tx.exec_params("SELECT 1 FROM gaps WHERE stream_id = $1 AND start_us = $2 AND reason = $3", stream_id, from_us,
                      reason)
           .empty()) {
    return false;  // replayed
  }
  record_gap(tx, stream_id, from_us, to_us, reason, detail);
  return true;
}

bool record_reconnect_gap(pqxx::work& tx, std::int64_t camera_id, TrackRole role, MediaKind media_kind,
                          std::int64_t now_us, const std::string& why) {
  const std::string r(role_name(role)), k(media_kind_name(media_kind));
  // A recorder resends what its failed disk never made durable (or what was refused and not
  // taken before its stream ended), with the times it was captured: such a gap of the previous
  // stream ends where the new stream begins (the time lost).
  tx.exec_params0(
      "WITH prev AS (SELECT id FROM streams WHERE camera_id = $1 AND role = $3 AND media_kind = $4 "
      "ORDER BY started_at_us DESC, id DESC LIMIT 1) "
      "DELETE FROM gaps WHERE stream_id = (SELECT id FROM prev) "
      "AND reason IN ('io_error', 'deadline_missed', 'rate_exceeded') AND start_us >= $2",
      camera_id, now_us, r, k);
  tx.exec_params0(
      "WITH prev AS (SELECT id FROM streams WHERE camera_id = $1 AND role = $3 AND media_kind = $4 "
      "ORDER BY started_at_us DESC, id DESC LIMIT 1) "
      "UPDATE gaps SET end_us = $2 WHERE stream_id = (SELECT id FROM prev) "
      "AND reason IN ('io_error', 'deadline_missed', 'rate_exceeded') AND end_us > $2",
      camera_id, now_us, r, k);
  auto prev = tx.exec_params(
      "SELECT s.id, s.state, GREATEST(COALESCE((SELECT max(end_us) FROM segments WHERE stream_id = s.id), 0), "
      "COALESCE((SELECT max(end_us) FROM gaps WHERE stream_id = s.id), 0), s.started_at_us) "
      "FROM streams s WHERE s.camera_id = $1 AND s.role = $2 AND s.media_kind = $3 "
      "ORDER BY s.started_at_us DESC, s.id DESC LIMIT 1",
      camera_id, r, k);
  if (prev.empty()) return false;
  const auto state = prev[0][1].as<std::string>();
  if (state != "stopped" && state != "interrupted" && state != "stalled" && state != "failed_over") return false;
  const auto from = prev[0][2].as<std::int64_t>();
  if (now_us <= from) return false;
  std::string detail =
      state == "interrupted" ? "client disconnected; recording continues in a new stream"
      : state == "stalled"   ? "the source stalled; recording continues in a new stream"
      : state == "failed_over"
          ? "the camera's node stopped renewing its lease; another node took the camera over (docs/nodes.md)"
          : "recording stopped by the client; continues in a new stream";
  if (!why.empty() && state != "failed_over") detail = why.substr(0, 500);
  // A stalled source's hole is one reason from its last frame to its return; a dead node's, from
  // its last recorded instant to the new node's first frame (the sweeper ended its stream).
  const char* reason = state == "stalled" ? "source_stalled" : state == "failed_over" ? "failover" : "source_lost";
  record_gap(tx, prev[0][0].as<std::int64_t>(), from, now_us, reason, detail);
  return true;
}

int end_streams_after_crash(pqxx::work& tx, const std::vector<std::int64_t>& disk_ids, std::int64_t restart_us) {
  std::string ids = "{";
  for (std::size_t i = 0; i < disk_ids.size(); ++i) ids += (i ? "," : "") + std::to_string(disk_ids[i]);
  ids += "}";
  const auto ended = tx.exec_params(
      "UPDATE streams s SET state = 'interrupted', ended_at_us = GREATEST(s.started_at_us, "
      "  COALESCE((SELECT max(end_us) FROM segments g WHERE g.stream_id = s.id), s.started_at_us)) "
      "WHERE s.state IN ('pending', 'recording') AND s.disk_id = ANY($1::bigint[]) RETURNING s.id, s.ended_at_us",
      ids);
  for (const auto& row : ended) {
    record_gap(tx, row[0].as<std::int64_t>(), row[1].as<std::int64_t>(), restart_us, "crash_recovery",
               "vigild stopped while recording (crash, kill or power loss); the stream was not ended");
  }
  return static_cast<int>(ended.size());
}

void end_stream(pqxx::work& tx, std::int64_t stream_id, const std::string& state, std::int64_t ended_at_us) {
  tx.exec_params0("UPDATE streams SET state = $2, ended_at_us = GREATEST(started_at_us, $3) WHERE id = $1", stream_id,
                  state, ended_at_us);
}

void end_stream_with_gap(pqxx::work& tx, std::int64_t stream_id, const std::string& state, std::int64_t until_us,
                         const std::string& reason, const std::string& detail) {
  const auto last = tx.exec_params1(
                          "UPDATE streams s SET state = $2, ended_at_us = GREATEST(s.started_at_us, "
                          "  COALESCE((SELECT max(end_us) FROM segments g WHERE g.stream_id = s.id), s.started_at_us)) "
                          "WHERE s.id = $1 RETURNING s.ended_at_us",
                          stream_id, state)[0]
                        .as<std::int64_t>();
  if (reason == "io_error" || reason == "deadline_missed") {
    // The camera may already record again in a new stream (the batcher commits this end later
    // than the new stream's open): what it resent is not lost time.
    until_us = std::min(until_us, tx.exec_params1("SELECT COALESCE(min(n.started_at_us), $2) FROM streams s "
                                                  "JOIN streams n ON n.camera_id = s.camera_id AND n.role = s.role "
                                                  "AND n.media_kind = s.media_kind AND n.id > s.id "
                                                  "WHERE s.id = $1",
                                                  stream_id, until_us)[0]
                                      .as<std::int64_t>());
  }
  if (until_us > last) record_gap(tx, stream_id, last, until_us, reason, detail);
}

std::uint64_t next_segment_id(pqxx::work& tx, std::int64_t volume_id, const storage::Volume& volume) {
  const std::uint64_t first = static_cast<std::uint64_t>(volume_id) << kSegmentIdVolumeShift;
  const std::uint64_t end = first + (std::uint64_t{1} << kSegmentIdVolumeShift);
  // Ids below FIRST on this volume (from before ids had ranges) are left where they are.
  std::uint64_t next = tx.exec_params1("SELECT COALESCE(max(id) + 1, $1) FROM segments WHERE id >= $1 AND id < $2",
                                       static_cast<std::int64_t>(first), static_cast<std::int64_t>(end))[0]
                           .as<std::int64_t>();
  for (const auto& [id, uses] : volume.segments()) {
    if (id >= first && id < end) next = std::max(next, id + 1);
  }
  return next;
}

}  // namespace vigil::catalog
