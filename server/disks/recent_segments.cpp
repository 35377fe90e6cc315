#include "server/disks/recent_segments.hpp"

#include <algorithm>

namespace vigil::server {

void RecentSegments::started(Source source) {
  std::lock_guard lock(mu_);
  const auto id = source.stream_id;
  entries_[id] = Entry{.source = std::move(source), .closed = {}, .ended = false, .ended_at = {}};
}

void RecentSegments::closed(std::uint64_t stream_id, const storage::SegmentSummary& summary, std::uint64_t row_seq) {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(stream_id);
  if (it == entries_.end()) return;
  auto& closed = it->second.closed;
  closed.push_back({summary, row_seq});
  // Beyond the bound the oldest is read from the catalog only (once its row commits).
  if (closed.size() > kClosedPerStream) closed.pop_front();
}

void RecentSegments::ended(std::uint64_t stream_id) {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(stream_id);
  if (it == entries_.end()) return;
  it->second.ended = true;
  it->second.ended_at = std::chrono::steady_clock::now();
  it->second.source.stream.reset();
  prune_locked();
}

void RecentSegments::prune_locked() {
  std::size_t ended = 0;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto& closed = it->second.closed;
    const bool in_grace = it->second.ended && now - it->second.ended_at < kEndedGrace;
    while (!in_grace && !closed.empty() && batcher_.done(closed.front().row_seq)) closed.pop_front();
    if (it->second.ended && closed.empty()) {
      it = entries_.erase(it);
    } else {
      ended += it->second.ended ? 1 : 0;
      ++it;
    }
  }
  // A long outage with cameras reconnecting again and again: the oldest ended recordings (lowest
  // stream ids) are left to the catalog, so memory stays bounded.
  for (auto it = entries_.begin(); ended > kEndedKept && it != entries_.end();) {
    if (it->second.ended) {
      it = entries_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

catalog::FreshSegment RecentSegments::fresh(const Source& s, const storage::SegmentSummary& summary, bool open) const {
  catalog::FreshSegment f;
  f.volume_id = s.volume_id;
  f.start_us = summary.first_pts;
  f.open = open;
  f.codec = s.codec;
  f.extradata = s.extradata;
  f.width = s.width;
  f.height = s.height;
  f.sample_rate_hz = s.sample_rate_hz;
  f.channels = s.channels;
  f.rate_bps = s.rate_bps;
  auto& seg = f.segment;
  seg.segment_id = summary.segment_id;
  seg.stream_id = summary.stream_id;
  seg.extent_bytes = s.volume->extent_bytes();
  seg.end_offset = summary.end_offset;
  seg.end_pts = summary.end_pts;
  seg.gops = summary.gop_index;
  for (auto e : summary.extents) seg.extent_offsets.push_back(s.volume->extent_offset(e));
  return f;
}

std::vector<catalog::FreshSegment> RecentSegments::of(const Track& track, std::int64_t from_us, std::int64_t to_us) {
  std::vector<catalog::FreshSegment> out;
  for (auto& n : of_cameras({track.camera}, from_us, to_us)) {
    if (n.track == track) out.push_back(std::move(n.segment));
  }
  return out;
}

std::vector<catalog::TimelineSegment> RecentSegments::timeline_segments(const std::vector<std::string>& cameras,
                                                                        std::int64_t from_us, std::int64_t to_us) {
  std::vector<catalog::TimelineSegment> out;
  for (auto& n : of_cameras(cameras, from_us, to_us)) {
    out.push_back({.camera = std::move(n.track.camera),
                   .role = n.track.role,
                   .media_kind = n.track.media_kind,
                   .segment_id = n.segment.segment.segment_id,
                   .start_us = n.segment.start_us,
                   .end_us = n.segment.segment.end_pts,
                   .bytes = n.segment.segment.end_offset,
                   .open = n.segment.open});
  }
  return out;
}

std::vector<RecentSegments::Named> RecentSegments::of_cameras(const std::vector<std::string>& cameras,
                                                              std::int64_t from_us, std::int64_t to_us) {
  const auto wanted = [&](const std::string& name) {
    return cameras.empty() || std::find(cameras.begin(), cameras.end(), name) != cameras.end();
  };
  const auto intersects = [&](const storage::SegmentSummary& s) {
    return s.frame_count > 0 && s.first_pts != storage::kNoTimestamp && s.end_pts > from_us && s.first_pts < to_us;
  };
  std::vector<std::pair<Source, std::shared_ptr<const storage::RecordingStream>>> live;
  std::vector<Named> out;
  {
    std::lock_guard lock(mu_);
    prune_locked();
    for (auto& [id, e] : entries_) {
      if (!wanted(e.source.track.camera)) continue;
      for (const auto& c : e.closed) {
        if (intersects(c.summary)) out.push_back({e.source.track, fresh(e.source, c.summary, false)});
      }
      if (auto stream = e.source.stream.lock()) live.emplace_back(e.source, std::move(stream));
    }
  }
  // Outside mu_: the views are copied under the stream's lock, which the IO thread takes each cycle.
  for (const auto& [source, stream] : live) {
    // The segment rotated last may not have reached closed() yet; one that did is the same.
    if (auto rotated = stream->last_rotated(); rotated && intersects(*rotated)) {
      const bool known = std::any_of(out.begin(), out.end(), [&](const Named& n) {
        return n.segment.segment.segment_id == rotated->segment_id;
      });
      if (!known) out.push_back({source.track, fresh(source, *rotated, false)});
    }
    if (auto view = stream->durable_view(); view && intersects(*view)) {
      out.push_back({source.track, fresh(source, *view, true)});
    }
  }
  return out;
}

bool RecentSegments::recording(const Track& track) {
  std::lock_guard lock(mu_);
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const auto& e) { return !e.second.ended && e.second.source.track == track; });
}

std::optional<std::int64_t> RecentSegments::durable_end_us(const Track& track) {
  std::vector<std::shared_ptr<const storage::RecordingStream>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, e] : entries_) {
      if (e.source.track != track) continue;
      if (auto stream = e.source.stream.lock()) live.push_back(std::move(stream));
    }
  }
  std::optional<std::int64_t> end;
  for (const auto& stream : live) {
    auto view = stream->durable_view();
    if (view && view->end_pts != storage::kNoTimestamp) end = std::max(end.value_or(view->end_pts), view->end_pts);
  }
  return end;
}

}  // namespace vigil::server
