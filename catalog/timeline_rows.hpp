#pragma once
// The recordings timeline (docs/openapi.yaml): for each camera, the runs of one of its tracks (the
// main video unless asked otherwise: a camera's sub stream and audio have timelines of their own)
// in a time range (segments closer than MERGE_US merged into one run) and the gaps with
// their reasons, clipped to the range, at most MAX_ITEMS of each per camera (then `truncated`),
// plus per-day totals. The runs are computed in PostgreSQL (a gaps-and-islands window over the
// segments_stream_start index), so a month of segments costs one query, not one row each here.
// Thread: the catalog pool. Errors: throws (pqxx; CatalogError for a bad camera name or range).
#include <cstdint>
#include <pqxx/transaction_base>
#include <string>
#include <vector>

#include "common/track.hpp"

namespace vigil::catalog {

// A segment the recording node knows better than the catalog (its open segment's durable end, a
// closed one whose row is still queued): it replaces the catalog's row of the same id.
struct TimelineSegment {
  std::string camera;
  TrackRole role = TrackRole::main;
  MediaKind media_kind = MediaKind::video;
  std::uint64_t segment_id = 0;
  std::int64_t start_us = 0, end_us = 0;
  std::uint64_t bytes = 0;
  bool open = false;
};

struct TimelineQuery {
  std::vector<std::string> cameras{};  // empty: every camera
  TrackRole role = TrackRole::main;    // the track of each camera whose runs and gaps are told
  MediaKind media_kind = MediaKind::video;
  std::int64_t from_us = 0, to_us = 0;
  std::int64_t merge_us = 1'000'000;       // holes shorter than this do not break a run
  std::size_t max_items = 10'000;          // runs, and gaps, per camera
  std::vector<TimelineSegment> fresher{};  // of any track: those of the query's track are used
};

struct TimelineRun {
  std::int64_t start_us = 0, end_us = 0;
  std::int64_t segments = 0, bytes = 0;
  bool open = false;  // holds a segment still being written: it ends at its last durable cycle and grows
};

struct TimelineGap {
  std::int64_t start_us = 0, end_us = 0;
  std::string reason{}, detail{};
};

struct TimelineDay {
  std::int64_t day_start_us = 0;  // 00:00 UTC
  std::int64_t recorded_us = 0;   // covered by runs
  std::int64_t gaps = 0;          // gaps that touch the day
};

struct CameraTimeline {
  std::string camera;
  bool recording = false;  // a stream of the track records now: its last run grows
  bool has_track = false;  // the camera has (or had) a stream of the track
  std::vector<TimelineRun> runs{};
  std::vector<TimelineGap> gaps{};
  std::vector<TimelineDay> days{};  // UTC days of the range that have runs or gaps
  bool truncated = false;           // more than max_items runs or gaps
};

std::vector<CameraTimeline> timeline(pqxx::transaction_base& tx, const TimelineQuery& q);

// Per-UTC-day totals of RUNS and GAPS (already clipped to the range), in day order.
std::vector<TimelineDay> day_totals(const std::vector<TimelineRun>& runs, const std::vector<TimelineGap>& gaps);

}  // namespace vigil::catalog
