#pragma once
// What this node recorded lately, as readers must see it before the catalog does (docs/catalog.md,
// "The open segment"): each recording's open segment up to its last durable cycle, and its
// segments closed lately whose rows the batcher has not committed yet (seconds normally; the
// whole of a catalog outage). Export, thumbnails, HLS and wire playback pass these to the
// catalog's plan (catalog::FreshSegment), so every acknowledged frame is readable within a cycle
// of its acknowledgement, whatever the segment size and whether or not the catalog is up.
// Memory: per recording, its codec parameters and at most kClosedPerStream closed segment
// summaries (a GOP index each: a few KB); a recording's entry goes once it ended and its rows
// committed, or when more than kEndedKept ended ones wait.
// Thread: any (one mutex; the open segment's view is copied under the stream's own lock).
// Errors: none (what cannot be known is left out; the catalog's rows stand).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "catalog/batcher.hpp"
#include "catalog/playback_rows.hpp"
#include "catalog/timeline_rows.hpp"
#include "common/track.hpp"
#include "storage/recording_stream.hpp"
#include "storage/volume.hpp"

namespace vigil::server {

class RecentSegments {
 public:
  // Closed segments kept per recording while their rows wait: ten minutes each (the time
  // rotation), so a catalog outage of hours still leaves its last hour readable from here.
  static constexpr std::size_t kClosedPerStream = 8;
  // Ended recordings whose rows still wait, at most (the oldest go first).
  static constexpr std::size_t kEndedKept = 4096;
  // An ended recording's segments stay this long after it ended even once their rows committed: a
  // playback reading its last frames from here finds them, without asking the catalog again.
  static constexpr std::chrono::seconds kEndedGrace{30};

  struct Source {
    Track track;  // the camera's track the recording records
    std::uint64_t stream_id = 0;
    std::int64_t volume_id = 0;
    const storage::Volume* volume = nullptr;  // for extent offsets; outlives the recording
    std::string codec{}, extradata{};
    int width = 0, height = 0;
    int sample_rate_hz = 0, channels = 0;  // audio
    std::int64_t rate_bps = 0;
    std::weak_ptr<const storage::RecordingStream> stream{};
  };

  explicit RecentSegments(const catalog::Batcher& batcher) : batcher_(batcher) {}

  // A recording started (before its stream joins the scheduler).
  void started(Source source);
  // Its segment SUMMARY closed; the batcher row that catalogues it is ROW_SEQ.
  void closed(std::uint64_t stream_id, const storage::SegmentSummary& summary, std::uint64_t row_seq);
  // The recording ended (its last segment, if any, handed over with closed() before): forgotten
  // once the rows of its segments are committed.
  void ended(std::uint64_t stream_id);

  // TRACK's segments known here that intersect [FROM_US, TO_US): the open ones as far as durable,
  // the closed ones whose rows wait. Rows committed meanwhile are dropped here.
  std::vector<catalog::FreshSegment> of(const Track& track, std::int64_t from_us, std::int64_t to_us);
  // The same for every track of every camera of CAMERAS (empty: all) at once, each with its track.
  struct Named {
    Track track;
    catalog::FreshSegment segment;
  };
  std::vector<Named> of_cameras(const std::vector<std::string>& cameras, std::int64_t from_us, std::int64_t to_us);
  // The same as the timeline query's fresher segments (catalog::TimelineQuery::fresher), every track.
  std::vector<catalog::TimelineSegment> timeline_segments(const std::vector<std::string>& cameras, std::int64_t from_us,
                                                          std::int64_t to_us);
  // Whether TRACK records here now (a recording started and not yet ended()).
  bool recording(const Track& track);
  // The end of TRACK's last durable frame recorded here, if it records now.
  std::optional<std::int64_t> durable_end_us(const Track& track);

 private:
  struct Closed {
    storage::SegmentSummary summary;
    std::uint64_t row_seq = 0;
  };
  struct Entry {
    Source source;
    std::deque<Closed> closed;  // oldest first
    bool ended = false;
    std::chrono::steady_clock::time_point ended_at{};
  };
  catalog::FreshSegment fresh(const Source& s, const storage::SegmentSummary& summary, bool open) const;
  void prune_locked();

  const catalog::Batcher& batcher_;
  std::mutex mu_;
  std::map<std::uint64_t, Entry> entries_;  // by stream id; guarded by mu_
};

}  // namespace vigil::server
