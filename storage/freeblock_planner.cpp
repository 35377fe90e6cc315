#include "storage/freeblock_planner.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vigil::storage {

FreeblockWanted::FreeblockWanted(const HddModel& model)
    : model_(model),
      sector_bytes_(model.geometry().sector_bytes),
      heads_(model.geometry().heads),
      total_sectors_(model.capacity_bytes() / model.geometry().sector_bytes),
      bits_((total_sectors_ + 63) / 64),
      per_track_(model.tracks()) {}

// Walks [offset, offset + bytes) track by track, calling ON_SECTOR(sector) for each sector and
// adding what it returns to the track's count; returns the sum.
template <class Fn>
std::uint64_t FreeblockWanted::per_track(std::uint64_t offset, std::uint64_t bytes, Fn&& on_sector) {
  std::uint64_t sector = offset / sector_bytes_;
  const std::uint64_t end = std::min(total_sectors_, (offset + bytes + sector_bytes_ - 1) / sector_bytes_);
  std::uint64_t sum = 0;
  while (sector < end) {
    const HeadPosition pos = model_.position_of(sector * sector_bytes_);
    const HddTrack track = model_.track(pos);
    const std::uint64_t stop = std::min(end, track.first_sector + track.sectors);
    std::int64_t delta = 0;
    for (; sector < stop; ++sector) delta += on_sector(sector);
    per_track_[static_cast<std::uint64_t>(pos.cylinder) * heads_ + pos.head] += static_cast<std::uint32_t>(delta);
    sum += static_cast<std::uint64_t>(std::abs(delta));
  }
  return sum;
}

void FreeblockWanted::want(std::uint64_t offset, std::uint64_t bytes) {
  remaining_ += per_track(offset, bytes, [this](std::uint64_t s) -> std::int64_t {
    std::uint64_t& word = bits_[s / 64];
    const std::uint64_t bit = std::uint64_t{1} << (s % 64);
    if (word & bit) return 0;
    word |= bit;
    return 1;
  });
}

std::uint64_t FreeblockWanted::take(std::uint64_t offset, std::uint64_t bytes) {
  const std::uint64_t taken = per_track(offset, bytes, [this](std::uint64_t s) -> std::int64_t {
    std::uint64_t& word = bits_[s / 64];
    const std::uint64_t bit = std::uint64_t{1} << (s % 64);
    if (!(word & bit)) return 0;
    word &= ~bit;
    return -1;
  });
  remaining_ -= taken;
  return taken;
}

std::uint32_t FreeblockWanted::on_track(HeadPosition track) const noexcept {
  return per_track_[static_cast<std::uint64_t>(track.cylinder) * heads_ + track.head];
}

std::uint32_t FreeblockWanted::count(std::uint64_t first, std::uint64_t end) const noexcept {
  std::uint32_t n = 0;
  while (first < end && first % 64 != 0) n += wanted(first++) ? 1 : 0;
  for (; first + 64 <= end; first += 64) n += static_cast<std::uint32_t>(std::popcount(bits_[first / 64]));
  while (first < end) n += wanted(first++) ? 1 : 0;
  return n;
}

std::optional<FreeblockRead> FreeblockPlanner::plan(HeadPosition from, Nanos now, std::uint64_t offset,
                                                    std::size_t bytes, const FreeblockWanted& wanted,
                                                    FreeblockSearchStats* stats) const {
  const Positioning alone = model_.predict(from, offset, bytes, now);
  const Goal goal{from, now, now + alone.transfer_start(), now + alone.total(), offset, bytes};
  const Nanos overhead = model_.geometry().command_overhead;
  const HeadPosition dst = model_.position_of(offset);
  const Nanos base_move = model_.move_time(from, dst);
  // The window a track leaves: B's rotational latency, less the margin, the background
  // command's own overhead and the extra seek of going there first.
  const Nanos usable = alone.rotation - config_.margin - overhead;
  if (wanted.remaining() == 0 || usable <= Nanos(0)) return std::nullopt;
  const Nanos rotation = model_.geometry().rotation;
  FreeblockSearchStats local;
  FreeblockSearchStats& st = stats != nullptr ? *stats : local;

  std::optional<FreeblockRead> best;
  auto best_count = [&] { return best ? best->wanted_sectors : 0U; };
  auto exhausted = [&] {
    return config_.max_tracks_examined != 0 && st.tracks_examined >= config_.max_tracks_examined;
  };
  auto try_track = [&](HeadPosition t, Nanos extra) {
    if (wanted.on_track(t) <= best_count()) return;  // pruning 1: cannot beat the best on count
    if (exhausted()) {
      st.cut_off = true;
      return;
    }
    ++st.tracks_examined;
    const Nanos arrive = now + overhead + model_.move_time(from, t);
    const Nanos leave_by = goal.transfer_start - config_.margin - overhead - model_.move_time(t, dst);
    auto r = on_track(goal, t, arrive, leave_by, wanted);
    if (r && r->wanted_sectors > best_count()) {
      r->opportunity = alone.rotation;
      r->extra_seek = extra;
      best = r;
    }
  };
  // Source and destination tracks first (no extra seek).
  try_track(from, Nanos(0));
  if (!(dst == from)) try_track(dst, Nanos(0));
  if (!config_.third_tracks) return best;

  // Third tracks by ascending extra seek.
  struct Candidate {
    Nanos extra;
    HeadPosition track;
  };
  std::vector<Candidate> candidates;
  const std::uint32_t heads = model_.geometry().heads;
  const std::uint32_t cylinders = model_.cylinders();
  for (std::uint32_t c = 0; c < cylinders; ++c) {
    if (c == from.cylinder || c == dst.cylinder) {
      for (std::uint32_t h = 0; h < heads; ++h) {
        const HeadPosition t{c, h};
        if (t == from || t == dst) continue;
        const Nanos extra = model_.move_time(from, t) + model_.move_time(t, dst) - base_move;
        if (extra < usable) candidates.push_back({extra, t});
      }
      continue;
    }
    const HeadPosition t{c, 0};
    const Nanos extra = model_.move_time(from, t) + model_.move_time(t, dst) - base_move;
    if (extra < usable) candidates.push_back({extra, t});  // stands for all heads of C
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.extra < b.extra; });
  for (const Candidate& cand : candidates) {
    const Nanos window = usable - cand.extra;
    const HddTrack track = model_.track(cand.track);
    // Pruning 2: the sectors that pass in the window. Windows only shrink from here on.
    const auto fits = static_cast<std::uint32_t>(static_cast<double>(window.count()) * track.sectors /
                                                 static_cast<double>(rotation.count())) +
                      1;
    if (fits <= best_count()) break;
    if (st.cut_off) break;  // the bound was met with a track still worth examining
    if (cand.track.cylinder == from.cylinder || cand.track.cylinder == dst.cylinder) {
      try_track(cand.track, cand.extra);
    } else {
      for (std::uint32_t h = 0; h < heads; ++h) try_track({cand.track.cylinder, h}, cand.extra);
    }
  }
  return best;
}

// The sectors that pass whole under the head between ARRIVE and LEAVE_BY form at most two runs in
// LBA order (the pass may wrap past the track's last sector; one command reads one run). Each run
// is trimmed to its first and last wanted sector; the one with more wanted sectors is checked.
std::optional<FreeblockRead> FreeblockPlanner::on_track(const Goal& goal, HeadPosition t, Nanos arrive, Nanos leave_by,
                                                        const FreeblockWanted& wanted) const {
  if (leave_by <= arrive) return std::nullopt;
  const HddTrack track = model_.track(t);
  const std::uint32_t n = track.sectors;
  const std::uint32_t s0 = model_.next_sector(track, arrive);
  const Nanos t0 = model_.sector_arrival(track, s0, arrive);
  const double sector_ns = static_cast<double>(model_.geometry().rotation.count()) / n;
  if (leave_by <= t0) return std::nullopt;
  const auto k =
      std::min<std::uint64_t>(n, static_cast<std::uint64_t>(static_cast<double>((leave_by - t0).count()) / sector_ns));
  if (k == 0) return std::nullopt;
  struct Run {
    std::uint32_t first, end;
  };
  const Run runs[2] = {{s0, static_cast<std::uint32_t>(std::min<std::uint64_t>(n, s0 + k))},
                       {0, static_cast<std::uint32_t>(s0 + k > n ? s0 + k - n : 0)}};
  std::optional<FreeblockRead> best;
  for (const Run& r : runs) {
    if (r.end <= r.first) continue;
    const std::uint32_t count = wanted.count(track.first_sector + r.first, track.first_sector + r.end);
    if (count == 0 || (best && count <= best->wanted_sectors)) continue;
    std::uint32_t first = r.first, end = r.end;
    while (!wanted.wanted(track.first_sector + first)) ++first;
    while (!wanted.wanted(track.first_sector + end - 1)) --end;
    if (auto c = checked(goal, track, first, end, wanted)) {
      if (!best || c->wanted_sectors > best->wanted_sectors) best = c;
    }
  }
  return best;
}

std::optional<Nanos> FreeblockPlanner::verify(HeadPosition from, Nanos now, std::uint64_t offset, std::size_t bytes,
                                              std::uint64_t read_offset, std::size_t read_bytes) const {
  if (read_offset + read_bytes == offset) return std::nullopt;  // B would continue the read-ahead
  const Positioning alone = model_.predict(from, offset, bytes, now);
  const Positioning read = model_.predict(from, read_offset, read_bytes, now);
  const Nanos read_end = now + read.total();
  const Positioning b = model_.predict(model_.position_of(read_offset), offset, bytes, read_end);
  const bool in_time =
      read_end + b.overhead + b.seek + b.head_switch + config_.margin <= now + alone.transfer_start() &&
      read_end + b.total() <= now + alone.total();
  if (!in_time) return std::nullopt;
  return read_end + b.total();
}

// The exact check: the background read from the heads' place at NOW, then B from where it ends;
// B must start its transfer MARGIN after the predicted earliest moment and end no later than
// alone. A run that fails (rounding at the window's edge) loses its last sector and is checked
// again. A run that ends where B begins is cut short too: B would continue the read-ahead, whose
// timing the plan does not predict.
std::optional<FreeblockRead> FreeblockPlanner::checked(const Goal& goal, const HddTrack& track, std::uint32_t first,
                                                       std::uint32_t end, const FreeblockWanted& wanted) const {
  const std::uint32_t sector_bytes = model_.geometry().sector_bytes;
  for (int tries = 0; tries < 4 && end > first; ++tries) {
    const std::uint64_t offset = (track.first_sector + first) * sector_bytes;
    const std::size_t bytes = static_cast<std::size_t>(end - first) * sector_bytes;
    if (offset + bytes == goal.offset) {
      --end;
      continue;
    }
    const Positioning read = model_.predict(goal.from, offset, bytes, goal.now);
    const Nanos read_end = goal.now + read.total();
    const Positioning b = model_.predict(track.position, goal.offset, goal.bytes, read_end);
    const bool in_time = read_end + b.overhead + b.seek + b.head_switch + config_.margin <= goal.transfer_start &&
                         read_end + b.total() <= goal.end;
    if (in_time) {
      FreeblockRead out;
      out.offset = offset;
      out.bytes = bytes;
      out.wanted_sectors = wanted.count(track.first_sector + first, track.first_sector + end);
      out.track = track.position;
      out.foreground_end = read_end + b.total();
      return out;
    }
    --end;
  }
  return std::nullopt;
}

}  // namespace vigil::storage
