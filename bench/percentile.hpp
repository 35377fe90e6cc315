#pragma once
// Nearest-rank percentiles of a bench's samples (the smallest sample with at least Q of them at or
// below it), as the benches report p50/p99 beside their references.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace vigil::bench {

// Q in [0, 1]; 0 when V is empty.
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank > 0 ? rank - 1 : 0)];
}

}  // namespace vigil::bench
