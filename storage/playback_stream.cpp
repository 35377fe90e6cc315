#include "storage/playback_stream.hpp"

#include <algorithm>

namespace vigil::storage {
namespace {
constexpr std::size_t kMinKeyframeRead = 8 * 1024;
std::size_t round_up(std::size_t n, std::size_t block) { return (n + block - 1) / block * block; }
}  // namespace

PlaybackStream::PlaybackStream(std::vector<PlaybackSegment> segments, PlaybackRange range, std::size_t cycle_bytes,
                               std::size_t block_bytes, std::function<void()> on_ready)
    : segments_(std::move(segments)),
      range_(range),
      cycle_bytes_(std::max(cycle_bytes, block_bytes)),
      block_(block_bytes),
      on_ready_(std::move(on_ready)) {
  if (range_.direction == ReadDirection::reverse) range_.keyframes_only = true;
  // The GOPs that intersect [from, to): from the keyframe at or before FROM (a decoder needs
  // it) to the last keyframe before TO.
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const auto& g = segments_[s].gops.entries();
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g[i].pts >= range_.to_pts) break;
      if (gop_end_pts(s, i) <= range_.from_pts) continue;
      units_.push_back({s, i, false});
    }
  }
  if (range_.direction == ReadDirection::reverse) std::reverse(units_.begin(), units_.end());
}

std::int64_t PlaybackStream::gop_end_pts(std::size_t s, std::size_t i) const {
  const auto& g = segments_[s].gops.entries();
  if (i + 1 < g.size()) return g[i + 1].pts;
  return segments_[s].end_pts == kNoTimestamp ? g[i].pts + 1 : std::max(segments_[s].end_pts, g[i].pts + 1);
}

std::pair<std::uint64_t, std::uint64_t> PlaybackStream::unit_bytes(const Unit& u) const {
  const auto& seg = segments_[u.segment];
  const auto& g = seg.gops.entries();
  const std::uint64_t begin = g[u.gop].offset;
  std::uint64_t end = u.gop + 1 < g.size() ? g[u.gop + 1].offset : seg.end_offset;
  if (range_.keyframes_only && !u.whole && key_estimate_ > 0) end = std::min<std::uint64_t>(end, begin + key_estimate_);
  return {begin, std::max(begin, end)};
}

StreamIo PlaybackStream::prepare(std::uint64_t) {
  StreamIo io;
  io.write = false;
  {
    std::lock_guard lock(mu_);
    if (error_) {
      io.skip_reason = "failed";
      return io;
    }
    // The previous read is still in flight (a stream's first IO, added mid-cycle, may not be done
    // when the next cycle starts): a second one now would be handed over with the first, before
    // its bytes arrived, and land later in buffers already served or freed.
    if (!reading_.empty()) {
      io.skip_reason = "previous_read_pending";
      return io;
    }
    // The other half still holds a cycle's worth: the viewer has not caught up.
    if (ready_bytes_ >= cycle_bytes_) {
      io.skip_reason = "consumer_stalled";
      return io;
    }
  }
  std::size_t budget = 0;
  while (budget < cycle_bytes_ && (!retry_.empty() || next_unit_ < units_.size())) {
    Unit u;
    if (!retry_.empty()) {
      u = retry_.front();
    } else {
      u = units_[next_unit_];
    }
    const auto [begin, end] = unit_bytes(u);
    const std::size_t length = end - begin;
    // A GOP larger than what is left of the budget waits for the next cycle, unless it is the
    // first of this one (a GOP is never split across cycles).
    if (budget > 0 && budget + length > cycle_bytes_) break;
    if (!retry_.empty()) {
      retry_.pop_front();
    } else {
      ++next_unit_;
    }
    Reading r{u, std::make_shared<PlaybackGop>(), {}};
    const auto& seg = segments_[u.segment];
    r.gop->from_pts = seg.gops.entries()[u.gop].pts;
    r.gop->to_pts = gop_end_pts(u.segment, u.gop);
    const std::uint64_t eb = seg.extent_bytes;
    bool bad = eb == 0 || end <= begin;
    // A GOP may continue into the next extent(s): one piece per extent, each block-aligned.
    for (std::uint64_t pos = begin; !bad && pos < end;) {
      const std::uint64_t ordinal = pos / eb;
      if (ordinal >= seg.extent_offsets.size()) {
        bad = true;
        break;
      }
      const std::uint64_t in_extent = pos % eb;
      const std::uint64_t piece_end = std::min(end - ordinal * eb, eb);
      const std::uint64_t aligned = in_extent / block_ * block_;
      const std::size_t len = round_up(piece_end - aligned, block_);
      AlignedBuffer buf(len, block_);
      io.pieces.push_back({seg.extent_offsets[ordinal] + aligned, buf.span()});
      r.gop->buffers.push_back(std::move(buf));
      // Remember the exact bytes of this piece (the tail past PIECE_END is not the GOP's).
      r.pieces.push_back({piece_end - aligned, in_extent - aligned});
      r.gop->bytes += len;
      budget += len;
      pos = (ordinal + 1) * eb + block_;  // data of the next extent starts after its header
    }
    if (bad) {
      r.gop->damaged = true;
      r.gop->damage = end <= begin ? "GOP index and data length disagree" : "GOP outside the segment's extents";
    }
    reading_.push_back(std::move(r));
  }
  if (io.pieces.empty()) {
    io.skip_reason = "no_data";
    // Only damaged units (no IO): hand them over now, as gaps.
    if (!reading_.empty()) finished(0, {});
  }
  return io;
}

void PlaybackStream::scan(Reading& r) {
  auto& gop = *r.gop;
  if (gop.damaged) return;
  const auto& seg = segments_[r.unit.segment];
  std::uint64_t next_sequence = seg.gops.entries()[r.unit.gop].sequence;
  const bool key_only = range_.keyframes_only && !r.unit.whole;
  std::vector<ScannedRecord> frames;
  for (std::size_t i = 0; i < gop.buffers.size(); ++i) {
    const auto [length, start] = r.pieces[i];
    RecordScanner scanner(gop.buffers[i].span().first(length), block_, seg.stream_id, next_sequence, start);
    while (auto rec = scanner.next()) {
      frames.push_back(*rec);
      if (key_only) break;  // the keyframe is all that is wanted
    }
    if (key_only) {
      if (frames.empty()) {
        // Truncated: the keyframe is longer than the estimate. Read the whole GOP next cycle.
        // Anything else is damage.
        if (scanner.stop() == ScanStop::truncated || scanner.stop() == ScanStop::end_of_data) {
          r.unit.whole = true;
          return;
        }
        gop.damaged = true;
        gop.damage = scan_stop_name(scanner.stop());
        return;
      }
      break;
    }
    if (scanner.stop() != ScanStop::end_of_data) {
      gop.damaged = true;
      gop.damage = scan_stop_name(scanner.stop());
      return;
    }
    next_sequence = *scanner.next_sequence();
  }
  if (frames.empty() || !frames.front().header.keyframe()) {
    gop.damaged = true;
    gop.damage = frames.empty() ? "no frame" : "does not start with a keyframe";
    return;
  }
  if (range_.keyframes_only) {
    const std::size_t key_bytes = frames.front().payload.size() + kRecordHeaderBytes;
    key_estimate_ = std::max(key_estimate_, round_up(std::max(key_bytes + key_bytes / 2, kMinKeyframeRead), block_));
    frames.resize(1);
  } else if (range_.direction == ReadDirection::forward) {
    std::erase_if(frames, [&](const ScannedRecord& f) {
      return f.header.pts != kNoTimestamp && f.header.pts >= range_.to_pts;
    });
  }
  gop.frames = std::move(frames);
}

void PlaybackStream::finished(std::uint64_t, Result<void> result) {
  std::vector<Reading> done;
  done.swap(reading_);
  if (result) {
    for (auto& r : done) scan(r);
  }
  {
    std::lock_guard lock(mu_);
    if (!result) {
      error_ = result.error();
    } else {
      bool retrying = false;
      for (auto& r : done) {
        bytes_read_ += r.gop->bytes;
        // A keyframe longer than the estimate is read again whole; the GOPs after it in this
        // batch are read again too, so they are never served before it.
        if (retrying || (r.unit.whole && r.gop->frames.empty() && !r.gop->damaged)) {
          retrying = true;
          retry_.push_back(r.unit);
          continue;
        }
        ++finished_units_;
        ready_bytes_ += r.gop->bytes;
        if (r.gop->damaged) r.gop->buffers.clear();
        ready_.push_back(std::move(r.gop));
      }
    }
  }
  if (on_ready_) on_ready_();
}

std::shared_ptr<PlaybackGop> PlaybackStream::pop() {
  std::lock_guard lock(mu_);
  if (ready_.empty()) return nullptr;
  auto g = std::move(ready_.front());
  ready_.pop_front();
  ready_bytes_ -= std::min(ready_bytes_, g->bytes);
  ++served_;
  return g;
}

bool PlaybackStream::done() const {
  std::lock_guard lock(mu_);
  return error_.has_value() || (ready_.empty() && finished_units_ >= units_.size());
}

std::optional<std::error_code> PlaybackStream::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

std::uint64_t PlaybackStream::bytes_read() const {
  std::lock_guard lock(mu_);
  return bytes_read_;
}

}  // namespace vigil::storage
