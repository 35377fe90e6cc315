// Orders over pending small requests (seed 004 §III-B/C): FCFS, SATF, Nearest Insertion
// (FSATF), EDF and G-MATRIX, by LBN distance and by the learned latency map, checked as
// permutations, against an exact optimum, on hand-made deadline cases, and on the simulated
// ST373207LW: map order beats LBN order, and G-MATRIX meets the deadlines EDF meets with more
// throughput.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "storage/hdd_model.hpp"
#include "storage/latency_map.hpp"
#include "storage/request_order.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kRegion = 128 * 1024;

bool is_permutation_of(const std::vector<std::size_t>& order, std::size_t n) {
  std::vector<std::size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  return sorted == want;
}

// The simulated ST373207LW serving small reads back to back, and a map of it pre-filled over a
// fixed set of positions (seed 004 measured "when the matrix was filled").
struct MappedDisk {
  HddModel model{hdd_preset("st373207lw")};
  Nanos now{0};
  std::uint64_t head = 0;
  std::vector<std::uint64_t> positions;
  LatencyMap map{model.capacity_bytes(), kRegion};
  // LBN distance: a flat 8 ms plus the seek's slope, so EDF-by-LBN and G-MATRIX-by-LBN see
  // plausible times; as an order it is plain LBN distance.
  LbnDistancePredictor lbn{8ms, 1e-7};
  MapPredictor by_map{map, lbn};

  explicit MappedDisk(int count, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::uint64_t> block(0, model.capacity_bytes() / 4096 - 64);
    for (int i = 0; i < count; ++i) positions.push_back(block(rng) * 4096);
    for (std::uint64_t a : positions) {
      for (std::uint64_t b : positions) {
        read(a);
        map.update(a + 4096, b, read(b));  // from where a ended
      }
    }
  }
  Nanos read(std::uint64_t offset) {
    const Nanos t = model.service_time({IoKind::read, offset, 4096, false, now});
    now += t;
    head = offset + 4096;
    return t;
  }
};

struct DeadlineRun {
  Nanos max_response[2]{};
  int misses[2]{};
  double ops_per_s = 0;
};

// Seed 004 §V-D: 8 clients with 100 ms deadlines and 8 with 200 ms, each issuing its next read
// as soon as the previous completes; the drive holds one request. PICK chooses the next.
template <class Pick>
DeadlineRun run_deadlines(MappedDisk& disk, int completions, Pick pick) {
  const Nanos class_deadline[2] = {100ms, 200ms};
  std::mt19937_64 rng(11);
  std::vector<PendingIo> queue;
  std::vector<int> client_of;
  std::vector<Nanos> issued;
  auto issue = [&](int client) {
    const Nanos d = class_deadline[client / 8];
    queue.push_back({disk.positions[rng() % disk.positions.size()], 4096, disk.now + d});
    client_of.push_back(client);
    issued.push_back(disk.now);
  };
  for (int c = 0; c < 16; ++c) issue(c);
  DeadlineRun out;
  const Nanos start = disk.now;
  for (int i = 0; i < completions; ++i) {
    const std::size_t k = pick(disk, std::span<const PendingIo>(queue));
    const PendingIo r = queue[k];
    const int client = client_of[k];
    const Nanos at = issued[k];
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(k));
    client_of.erase(client_of.begin() + static_cast<std::ptrdiff_t>(k));
    issued.erase(issued.begin() + static_cast<std::ptrdiff_t>(k));
    disk.read(r.offset);
    const int cls = client / 8;
    out.max_response[cls] = std::max(out.max_response[cls], disk.now - at);
    if (disk.now > *r.deadline) ++out.misses[cls];
    issue(client);
  }
  out.ops_per_s = completions / (static_cast<double>((disk.now - start).count()) / 1e9);
  return out;
}

}  // namespace

TEST_CASE("every order is a permutation of its requests", "[order]") {
  std::mt19937_64 rng(1);
  LbnDistancePredictor lbn(1ms, 1e-6);
  for (std::size_t n : {0, 1, 2, 5, 17, 64}) {
    std::vector<PendingIo> reqs;
    for (std::size_t i = 0; i < n; ++i) {
      reqs.push_back(
          {rng() % (1ull << 36), 4096, i % 3 ? std::optional<Nanos>(Nanos(rng() % 1'000'000'000)) : std::nullopt});
    }
    CHECK(is_permutation_of(order_fcfs(reqs), n));
    CHECK(is_permutation_of(order_satf(0, reqs, lbn), n));
    CHECK(is_permutation_of(order_nearest_insertion(0, reqs, lbn), n));
    CHECK(is_permutation_of(order_edf(reqs), n));
    CHECK(is_permutation_of(order_g_matrix(0, 0ns, reqs, lbn), n));
  }
}

TEST_CASE("nearest insertion stays within twice the exact optimum", "[order]") {
  // Nearest Insertion's worst case is twice the optimal tour; an exact search over N ≤ 7 is
  // the oracle (research note §5.5).
  std::mt19937_64 rng(2);
  LbnDistancePredictor lbn(0ns, 1e-6);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<PendingIo> reqs;
    for (int i = 0; i < 7; ++i) reqs.push_back({rng() % (1ull << 36), 4096, std::nullopt});
    const std::uint64_t head = rng() % (1ull << 36);
    std::vector<std::size_t> perm(reqs.size());
    std::iota(perm.begin(), perm.end(), 0);
    Nanos best = Nanos::max();
    do {
      best = std::min(best, predicted_path(head, reqs, perm, lbn));
    } while (std::next_permutation(perm.begin(), perm.end()));
    const Nanos ni = predicted_path(head, reqs, order_nearest_insertion(head, reqs, lbn), lbn);
    CHECK(ni >= best);
    CHECK(ni <= 2 * best);
  }
}

TEST_CASE("EDF follows deadlines; G-MATRIX takes the shorter path when no deadline suffers", "[order]") {
  LbnDistancePredictor lbn(1ms, 1.0);  // 1 ms + 1 ms per MB
  const std::uint64_t mb = 1'000'000;
  // Far request with the earlier deadline, near one with a later deadline; both loose.
  std::vector<PendingIo> loose{{50 * mb, 4096, 500ms}, {2 * mb, 4096, 600ms}};
  CHECK(pick_edf(loose) == 0);
  CHECK(pick_g_matrix(0, 0ns, loose, lbn) == 1);  // near first: 3 + 49 ms, both on time
  CHECK(order_g_matrix(0, 0ns, loose, lbn) == std::vector<std::size_t>{1, 0});
  // Tight: the far one must go first (on time at 51 ms; 52 ms after the near one), although
  // the near one first is the shorter path.
  std::vector<PendingIo> tight{{50 * mb, 4096, 51ms}, {2 * mb, 4096, 600ms}};
  CHECK(pick_g_matrix(0, 0ns, tight, lbn) == 0);
  // Nothing can be on time: the smaller maximum overtime wins.
  std::vector<PendingIo> late{{50 * mb, 4096, 10ms}, {2 * mb, 4096, 1ms}};
  CHECK(order_g_matrix(0, 0ns, late, lbn) == std::vector<std::size_t>{1, 0});
  // Without deadlines G-MATRIX is the shortest path over its window.
  std::vector<PendingIo> none{{9 * mb, 4096, {}}, {1 * mb, 4096, {}}, {5 * mb, 4096, {}}};
  CHECK(order_g_matrix(0, 0ns, none, lbn) == std::vector<std::size_t>{1, 2, 0});
}

TEST_CASE("on the simulated ST373207LW, map order beats LBN order in measured time", "[order][latency-map]") {
  MappedDisk disk(120, 3);
  std::mt19937_64 rng(4);
  Nanos by_lbn{0}, by_map{0};
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<PendingIo> reqs;
    for (int i = 0; i < 32; ++i) reqs.push_back({disk.positions[rng() % disk.positions.size()], 4096, {}});
    for (int which = 0; which < 2; ++which) {
      const auto& predictor = which == 0 ? static_cast<const ServiceTimePredictor&>(disk.lbn) : disk.by_map;
      const Nanos t0 = disk.now;
      for (std::size_t i : order_nearest_insertion(disk.head, reqs, predictor)) disk.read(reqs[i].offset);
      (which == 0 ? by_lbn : by_map) += disk.now - t0;
    }
  }
  INFO("FSATF-LBN " << by_lbn.count() / 1e6 << " ms, FSATF-MAP " << by_map.count() / 1e6 << " ms");
  // Seed 004 Fig. 5: +13 % throughput on average; the model's map is exact, so ask for ≥ 10 %.
  CHECK(static_cast<double>(by_map.count()) < 0.9 * static_cast<double>(by_lbn.count()));
}

TEST_CASE("G-MATRIX meets the deadlines EDF meets, with more throughput", "[order][latency-map]") {
  MappedDisk edf_disk(150, 5), gm_disk(150, 5);
  const int completions = 3000;
  const DeadlineRun edf =
      run_deadlines(edf_disk, completions, [](MappedDisk&, std::span<const PendingIo> q) { return pick_edf(q); });
  const DeadlineRun gm = run_deadlines(gm_disk, completions, [](MappedDisk& d, std::span<const PendingIo> q) {
    return pick_g_matrix(d.head, d.now, q, d.by_map, 4);
  });
  INFO("EDF " << edf.max_response[0].count() / 1e6 << "/" << edf.max_response[1].count() / 1e6 << " ms at "
              << edf.ops_per_s << " ops/s, misses " << edf.misses[0] << "/" << edf.misses[1]);
  INFO("G-MATRIX " << gm.max_response[0].count() / 1e6 << "/" << gm.max_response[1].count() / 1e6 << " ms at "
                   << gm.ops_per_s << " ops/s, misses " << gm.misses[0] << "/" << gm.misses[1]);
  // Pure EDF overloads the disk here (it ignores position: ~126 ops/s for 16 clients that want
  // more), so it misses in both classes; G-MATRIX's shorter paths leave it almost none.
  for (int cls = 0; cls < 2; ++cls) CHECK(gm.misses[cls] <= edf.misses[cls]);
  CHECK(gm.misses[0] + gm.misses[1] <= completions / 100);
  CHECK(gm.ops_per_s > 1.15 * edf.ops_per_s);  // seed 004 Table II: 172 vs 130 ops/s (+32 %)
}
