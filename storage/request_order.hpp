#pragma once
// Orders for a set of pending small requests on one disk (seed 004 §III-B/C, docs/latency-map.md):
// pure functions over requests with offsets, sizes and optional deadlines, parameterised by a
// service-time predictor so the same code orders by the learned latency map or by LBN distance.
//
//   FCFS          arrival order.
//   SATF          greedy: next = the request with the shortest predicted service time from the
//                 head (over a live queue the caller takes only the first pick).
//   FSATF         Nearest Insertion over the frozen batch (a TSP path from the head; O(N²)
//                 predictions, at worst twice the optimal tour): the next city is the request
//                 nearest to the path, inserted where it adds least,
//                     cost(v into a→b) = W[a][v] + W[v][b] − W[a][b],  or W[last][v] at the end.
//   EDF           earliest deadline first (requests without one after all that have one).
//   G-MATRIX      EDF with k-lookahead: of the k earliest deadlines, over all k! orders pick the
//                 one with the smallest maximum overtime O = max(0, C − D), then the shortest
//                 path, and emit its first request; C is predicted from NOW and the head's place.
// "By map" = with MapPredictor, "by LBN" = with LbnDistancePredictor.
// Thread: pure functions, any thread. Errors: none (an empty input gives an empty order).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "storage/clock.hpp"
#include "storage/latency_map.hpp"

namespace vigil::storage {

struct PendingIo {
  std::uint64_t offset = 0;
  std::uint32_t bytes = 4096;
  std::optional<Nanos> deadline;  // absolute, on the scheduler's clock
};

// Where the head is once R is served: the byte after it. Every "head_offset" below is this for
// the request served last (a map learns cells from it too, LatencyMap::update's FROM).
inline std::uint64_t end_offset(const PendingIo& r) noexcept { return r.offset + r.bytes; }

class ServiceTimePredictor {
 public:
  virtual ~ServiceTimePredictor() = default;
  // Service time of TO issued when a request ending at FROM_OFFSET completes.
  virtual Nanos predict(std::uint64_t from_offset, const PendingIo& to) const noexcept = 0;
};

// base + ns_per_byte × |to − from|: LBN distance as the cost (the usual elevator assumption).
class LbnDistancePredictor final : public ServiceTimePredictor {
 public:
  LbnDistancePredictor(Nanos base, double ns_per_byte) noexcept : base_(base), ns_per_byte_(ns_per_byte) {}
  Nanos predict(std::uint64_t from_offset, const PendingIo& to) const noexcept override;

 private:
  Nanos base_;
  double ns_per_byte_;
};

// The learned map's worst-case cell; FALLBACK for a cell not learned yet.
class MapPredictor final : public ServiceTimePredictor {
 public:
  MapPredictor(const LatencyMap& map, const ServiceTimePredictor& fallback) noexcept : map_(map), fallback_(fallback) {}
  Nanos predict(std::uint64_t from_offset, const PendingIo& to) const noexcept override;

 private:
  const LatencyMap& map_;
  const ServiceTimePredictor& fallback_;
};

// Each returns a permutation of [0, requests.size()): the order to serve them in.
std::vector<std::size_t> order_fcfs(std::span<const PendingIo> requests);
std::vector<std::size_t> order_satf(std::uint64_t head_offset, std::span<const PendingIo> requests,
                                    const ServiceTimePredictor& predictor);
std::vector<std::size_t> order_nearest_insertion(std::uint64_t head_offset, std::span<const PendingIo> requests,
                                                 const ServiceTimePredictor& predictor);
std::vector<std::size_t> order_edf(std::span<const PendingIo> requests);
std::vector<std::size_t> order_g_matrix(std::uint64_t head_offset, Nanos now, std::span<const PendingIo> requests,
                                        const ServiceTimePredictor& predictor, std::size_t k = 4);

// One pick from a live queue (index into REQUESTS; requests must not be empty).
std::size_t pick_satf(std::uint64_t head_offset, std::span<const PendingIo> requests,
                      const ServiceTimePredictor& predictor);
std::size_t pick_edf(std::span<const PendingIo> requests);
std::size_t pick_g_matrix(std::uint64_t head_offset, Nanos now, std::span<const PendingIo> requests,
                          const ServiceTimePredictor& predictor, std::size_t k = 4);

// Predicted time to serve REQUESTS in ORDER from the head (the first edge included).
Nanos predicted_path(std::uint64_t head_offset, std::span<const PendingIo> requests, std::span<const std::size_t> order,
                     const ServiceTimePredictor& predictor);

}  // namespace vigil::storage
