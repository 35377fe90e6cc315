#pragma once
// The catalog rows a recording produces (docs/catalog.md): the camera (registered by name when a
// recording client pushes it), the stream (one recording session with fixed codec parameters),
// each closed segment with its extents and GOP index blob, gaps with their reason, and the end
// of the stream. Sessions run these through the Batcher, so neither a network nor an IO thread
// waits on PostgreSQL; every function here takes the batcher's transaction.
// Times are wall-clock microseconds (record pts are mapped to them at ingest).
// Thread: the batcher's or the catalog pool's. Errors: throws (pqxx; std::invalid_argument).
#include <cstdint>
#include <pqxx/transaction>
#include <optional>
#include <string>
#include <vector>

#include "common/track.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"

namespace vigil::catalog {

// The id of camera NAME, registering it (pushed: no URL) if new.
std::int64_t ensure_camera(pqxx::work& tx, const std::string& name);

struct StreamOpening {
  std::int64_t camera_id = 0;
  TrackRole role = TrackRole::main;  // the camera's track this stream records
  MediaKind media_kind = MediaKind::video;
  std::string codec;                     // FFmpeg codec name
  std::string extradata{};               // bytes, as FFmpeg's extradata
  int width = 0, height = 0;             // 0: not video / unknown
  int sample_rate_hz = 0, channels = 0;  // audio; 0: video / unknown (kept NULL)
  std::int64_t declared_rate_bps = 0;
  std::int64_t admitted_rate_bps = 0;
  std::int64_t disk_id = 0;
  std::int64_t started_at_us = 0;
  std::int64_t id = 0;  // 0: the next of the streams sequence; else one reserve_stream_ids gave
  // The camera's ownership epoch it opens under (catalog::check_owner; docs/nodes.md); none: the
  // camera has no owner (never fenced).
  std::optional<std::int64_t> owner_epoch{};
};
// A new stream row in state recording; returns its id.
std::int64_t open_stream(pqxx::work& tx, const StreamOpening& s);

// A running stream re-admitted at ADMITTED_RATE_BPS (its source sends more than it declared).
void update_admitted_rate(pqxx::work& tx, std::int64_t stream_id, std::int64_t admitted_rate_bps);

// COUNT stream ids taken from the streams sequence, for streams opened later without the catalog
// (during an outage: docs/catalog.md, "When the catalog is down"). Nobody else gets them.
std::vector<std::int64_t> reserve_stream_ids(pqxx::work& tx, int count);

// A closed segment on VOLUME_ID, from the writer's summary: the segment row (closed, with the
// CRC of its record bytes unknown = 0 until the scrubber computes it), its extents in ordinal
// order (EXTENT_OFFSETS: device offsets, computed by the caller from the volume), and its GOP
// index blob. A segment marked discard goes in as 'deleting': the next start frees its extents.
void record_closed_segment(pqxx::work& tx, std::int64_t volume_id, const storage::SegmentSummary& segment,
                           const std::vector<std::uint64_t>& extent_offsets, std::uint64_t extent_bytes,
                           std::int64_t closed_at_us);

// reason: source_lost, deadline_missed, rate_exceeded, crash_recovery, io_error, corruption.
void record_gap(pqxx::work& tx, std::int64_t stream_id, std::int64_t from_us, std::int64_t to_us,
                const std::string& reason, const std::string& detail);

// Frames refused and never stored (server/recording/refused_run.hpp): a gap of STREAM_ID
// [FROM_US, TO_US) with REASON (rate_exceeded, deadline_missed, io_error) and DETAIL, cut where a
// later stream of the same track begins (a recorder resent those frames there with their
// capture times: only the time before was lost). Applied again (a replayed spool row), it adds
// nothing: a gap of the stream with that start and reason is there. Returns whether it added one.
bool record_refused_gap(pqxx::work& tx, std::int64_t stream_id, std::int64_t from_us, std::int64_t to_us,
                        const std::string& reason, const std::string& detail);

// A track of a camera (ROLE, MEDIA_KIND) recording again after its previous stream ended: the
// hole between them is a gap on the previous stream of that track (another track's streams,
// e.g. the camera's audio or sub stream, never make a gap in this one's), [its last recorded instant, NOW_US), reason source_lost, with DETAIL (e.g.
// "client disconnected"). Nothing when there is no ended previous stream, or when that stream
// is still 'recording' in the catalog (its end has not been committed yet). Returns whether a
// gap was recorded.
// WHY, when given, replaces the detail (the recorder knows the cause, e.g. "camera unreachable").
// A previous stream a sweeper ended as 'failed_over' (its node died, docs/nodes.md) makes the gap
// reason 'failover', whatever WHY says.
// An io_error, deadline_missed or rate_exceeded gap of the previous stream is cut at NOW_US
// (dropped if it starts there or later): the recorder resent from its first frame not durable
// (or not taken), so only the time before NOW_US was lost.
bool record_reconnect_gap(pqxx::work& tx, std::int64_t camera_id, TrackRole role, MediaKind media_kind,
                          std::int64_t now_us, const std::string& why = {});

// After an unclean stop (kill -9, power loss): streams on DISK_IDS still 'recording' were never
// ended. Each becomes 'interrupted' at its last recorded instant, and the time from there to
// RESTART_US is a crash_recovery gap. Returns how many streams were ended. Run after volume
// recovery (which puts their last segments into the catalog) and before sessions open.
int end_streams_after_crash(pqxx::work& tx, const std::vector<std::int64_t>& disk_ids, std::int64_t restart_us);

// A stream that ended without its client ending it: STATE ('stalled': its source stopped sending;
// 'interrupted': its disk failed) at its last recorded instant, and from there to UNTIL_US a gap
// with REASON (source_stalled, io_error) that the camera's next stream continues
// (record_reconnect_gap). An io_error or deadline_missed gap (packets never written, which the
// recorder resends) ends, at the latest, where the track's next stream begins.
void end_stream_with_gap(pqxx::work& tx, std::int64_t stream_id, const std::string& state, std::int64_t until_us,
                         const std::string& reason, const std::string& detail);

// stopped (ended cleanly) or interrupted (source lost, server stopping).
void end_stream(pqxx::work& tx, std::int64_t stream_id, const std::string& state, std::int64_t ended_at_us);

// Segment ids are unique across volumes: volume V numbers its segments from V << this. Each disk
// counts its own ids in memory (the IO thread never asks the catalog), so two disks must never
// start from the same number; catalog volume ids are unique, so the ranges never overlap, and
// 2^40 segments fill no real volume.
inline constexpr int kSegmentIdVolumeShift = 40;

// The first segment id of volume VOLUME_ID (catalog id) not used on VOLUME or in the catalog:
// where that disk's id counter starts.
std::uint64_t next_segment_id(pqxx::work& tx, std::int64_t volume_id, const storage::Volume& volume);

}  // namespace vigil::catalog
