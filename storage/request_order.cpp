#include "storage/request_order.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace vigil::storage {
namespace {

constexpr Nanos kNever = Nanos::max();

Nanos deadline_of(const PendingIo& r) { return r.deadline.value_or(kNever); }

// Indices by deadline, ties (and no deadline) in arrival order.
std::vector<std::size_t> by_deadline(std::span<const PendingIo> requests) {
  std::vector<std::size_t> idx(requests.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return deadline_of(requests[a]) < deadline_of(requests[b]); });
  return idx;
}

}  // namespace

Nanos LbnDistancePredictor::predict(std::uint64_t from_offset, const PendingIo& to) const noexcept {
  const std::uint64_t d = to.offset > from_offset ? to.offset - from_offset : from_offset - to.offset;
  return base_ + Nanos(static_cast<std::int64_t>(std::llround(static_cast<double>(d) * ns_per_byte_)));
}

Nanos MapPredictor::predict(std::uint64_t from_offset, const PendingIo& to) const noexcept {
  if (auto t = map_.predict(from_offset, to.offset)) return *t;
  return fallback_.predict(from_offset, to);
}

std::vector<std::size_t> order_fcfs(std::span<const PendingIo> requests) {
  std::vector<std::size_t> idx(requests.size());
  std::iota(idx.begin(), idx.end(), 0);
  return idx;
}

std::size_t pick_satf(std::uint64_t head_offset, std::span<const PendingIo> requests,
                      const ServiceTimePredictor& predictor) {
  std::size_t best = 0;
  Nanos best_t = kNever;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Nanos t = predictor.predict(head_offset, requests[i]);
    if (t < best_t) best_t = t, best = i;
  }
  return best;
}

std::vector<std::size_t> order_satf(std::uint64_t head_offset, std::span<const PendingIo> requests,
                                    const ServiceTimePredictor& predictor) {
  std::vector<PendingIo> left(requests.begin(), requests.end());
  std::vector<std::size_t> ids(requests.size()), out;
  std::iota(ids.begin(), ids.end(), 0);
  while (!left.empty()) {
    const std::size_t i = pick_satf(head_offset, left, predictor);
    out.push_back(ids[i]);
    head_offset = end_offset(left[i]);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

std::vector<std::size_t> order_nearest_insertion(std::uint64_t head_offset, std::span<const PendingIo> requests,
                                                 const ServiceTimePredictor& predictor) {
  const std::size_t n = requests.size();
  // Path nodes: kHead (the head's place) then request indices. W(a, v) = predicted service of v
  // after a; the head is never a destination.
  constexpr std::size_t kHead = std::numeric_limits<std::size_t>::max();
  auto from_offset = [&](std::size_t a) { return a == kHead ? head_offset : end_offset(requests[a]); };
  auto w = [&](std::size_t a, std::size_t v) { return predictor.predict(from_offset(a), requests[v]); };

  std::vector<std::size_t> path{kHead};
  std::vector<bool> placed(n, false);
  std::vector<Nanos> to_path(n);  // distance of each request to the nearest node on the path
  for (std::size_t v = 0; v < n; ++v) to_path[v] = w(kHead, v);
  for (std::size_t step = 0; step < n; ++step) {
    std::size_t v = n;
    for (std::size_t u = 0; u < n; ++u) {
      if (!placed[u] && (v == n || to_path[u] < to_path[v])) v = u;
    }
    // Cheapest insertion: after path[p], before path[p + 1] (or at the end).
    std::size_t best_p = path.size() - 1;
    Nanos best = w(path.back(), v);
    for (std::size_t p = 0; p + 1 < path.size(); ++p) {
      const Nanos inc = w(path[p], v) + w(v, path[p + 1]) - w(path[p], path[p + 1]);
      if (inc < best) best = inc, best_p = p;
    }
    path.insert(path.begin() + static_cast<std::ptrdiff_t>(best_p + 1), v);
    placed[v] = true;
    for (std::size_t u = 0; u < n; ++u) {
      if (!placed[u]) to_path[u] = std::min(to_path[u], w(v, u));
    }
  }
  return {path.begin() + 1, path.end()};
}

std::size_t pick_edf(std::span<const PendingIo> requests) { return by_deadline(requests).front(); }

std::vector<std::size_t> order_edf(std::span<const PendingIo> requests) { return by_deadline(requests); }

std::size_t pick_g_matrix(std::uint64_t head_offset, Nanos now, std::span<const PendingIo> requests,
                          const ServiceTimePredictor& predictor, std::size_t k) {
  std::vector<std::size_t> window = by_deadline(requests);
  window.resize(std::min(std::max<std::size_t>(k, 1), window.size()));
  std::sort(window.begin(), window.end());  // next_permutation walks all k! orders from the sorted one
  std::size_t best_first = window.front();
  Nanos best_over = kNever, best_path = kNever;
  do {
    Nanos t = now, path{0}, over{0};
    std::uint64_t at = head_offset;
    for (std::size_t i : window) {
      const Nanos s = predictor.predict(at, requests[i]);
      t += s;
      path += s;
      if (requests[i].deadline) over = std::max(over, t - *requests[i].deadline);
      at = end_offset(requests[i]);
    }
    if (over < best_over || (over == best_over && path < best_path)) {
      best_over = over, best_path = path, best_first = window.front();
    }
  } while (std::next_permutation(window.begin(), window.end()));
  return best_first;
}

std::vector<std::size_t> order_g_matrix(std::uint64_t head_offset, Nanos now, std::span<const PendingIo> requests,
                                        const ServiceTimePredictor& predictor, std::size_t k) {
  std::vector<PendingIo> left(requests.begin(), requests.end());
  std::vector<std::size_t> ids(requests.size()), out;
  std::iota(ids.begin(), ids.end(), 0);
  while (!left.empty()) {
    const std::size_t i = pick_g_matrix(head_offset, now, left, predictor, k);
    now += predictor.predict(head_offset, left[i]);
    head_offset = end_offset(left[i]);
    out.push_back(ids[i]);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return out;
}

Nanos predicted_path(std::uint64_t head_offset, std::span<const PendingIo> requests, std::span<const std::size_t> order,
                     const ServiceTimePredictor& predictor) {
  Nanos t{0};
  for (std::size_t i : order) {
    t += predictor.predict(head_offset, requests[i]);
    head_offset = end_offset(requests[i]);
  }
  return t;
}

}  // namespace vigil::storage
