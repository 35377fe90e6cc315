#include "storage/retention.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace vigil::storage {

std::uint64_t reserve_extents(const RetentionPolicy& policy, const RetentionInput& in) noexcept {
  if (in.extent_bytes == 0) return 0;
  const double bytes = in.admitted_ingest.bytes_over(policy.reserve_seconds);
  return static_cast<std::uint64_t>(std::ceil(bytes / static_cast<double>(in.extent_bytes)));
}

bool is_locked(const ClosedSegment& s, const std::vector<EvidenceLock>& locks) noexcept {
  return std::any_of(locks.begin(), locks.end(), [&](const EvidenceLock& l) {
    return l.stream_id == s.stream_id && l.from_us < s.end_us && s.start_us < l.to_us;
  });
}

std::vector<std::uint64_t> choose_reclaim(const RetentionPolicy& policy, const RetentionInput& in) {
  std::vector<const ClosedSegment*> unlocked;
  for (const auto& s : in.closed) {
    if (!is_locked(s, in.locks)) unlocked.push_back(&s);
  }
  std::sort(unlocked.begin(), unlocked.end(), [](auto* a, auto* b) {
    return a->start_us != b->start_us ? a->start_us < b->start_us : a->segment_id < b->segment_id;
  });
  std::set<std::uint64_t> chosen;
  std::uint64_t freed = 0;
  auto take = [&](const ClosedSegment* s) {
    if (chosen.insert(s->segment_id).second) freed += s->extent_count;
  };
  // 1. Limits: the camera's quota, the stream's age, then its byte budget (newest kept).
  std::map<std::uint64_t, std::uint64_t> held;  // stream -> extents held by all its closed segments
  for (const auto& s : in.closed) held[s.stream_id] += s.extent_count;
  for (const auto* s : unlocked) {
    if (s->over_quota) {
      take(s);
      held[s->stream_id] -= s->extent_count;
      continue;
    }
    auto it = policy.per_stream.find(s->stream_id);
    if (it == policy.per_stream.end()) continue;
    const auto& r = it->second;
    if (r.max_age_us && s->end_us < in.now_us - *r.max_age_us) {
      take(s);
      held[s->stream_id] -= s->extent_count;
    } else if (r.max_extents && held[s->stream_id] > *r.max_extents) {
      take(s);
      held[s->stream_id] -= s->extent_count;
    }
  }
  // 2. The free-space reserve, oldest first.
  const std::uint64_t want = reserve_extents(policy, in);
  for (const auto* s : unlocked) {
    if (in.free_extents + freed >= want) break;
    take(s);
  }
  std::vector<std::uint64_t> out;
  for (const auto* s : unlocked) {
    if (chosen.count(s->segment_id)) out.push_back(s->segment_id);
  }
  return out;
}

Result<void> space_admission_check(const RetentionPolicy& policy, const RetentionInput& in, Rate rate) noexcept {
  RetentionInput with = in;
  with.admitted_ingest += rate;
  std::uint64_t reclaimable = 0;
  for (const auto& s : in.closed) {
    if (!is_locked(s, in.locks)) reclaimable += s.extent_count;
  }
  // The reserve plus one extent for the new stream's first segment must be reachable.
  if (in.free_extents + reclaimable < reserve_extents(policy, with) + 1) return errc::admission_refused;
  return {};
}

Result<void> reclaim_segment(Volume& volume, std::uint64_t segment_id) noexcept {
  auto it = volume.segments().find(segment_id);
  if (it == volume.segments().end()) return errc::not_found;
  std::vector<std::uint64_t> extents;
  for (const auto& u : it->second) extents.push_back(u.extent);
  for (auto e : extents) {
    if (auto r = volume.free_extent(e); !r) return r;
  }
  return {};
}

}  // namespace vigil::storage
