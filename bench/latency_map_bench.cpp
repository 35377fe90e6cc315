// `vigil bench latency-map`: seed 004 (real-time scheduling with a latency map) on the simulated
// Seagate ST373207LW, in virtual time (docs/latency-map.md). Reproduces
//   - Fig. 5: throughput against queue length for FCFS (NOOP), SATF/FSATF by LBN distance and by
//     the learned map — the map's ordering +13 % on average, +17 % at most, over LBN ordering;
//   - Table II: 8 clients with 100 ms deadlines and 8 with 200 ms, EDF against G-MATRIX (EDF with
//     4-lookahead over the map): max response per class and throughput.
// The workload is the seed's: synchronous clients, one small read each (1–4 KB), addresses drawn
// from a fixed set of random positions over the whole disk, 128 KB cells, measured once the map
// is full. The map is filled by running every ordered pair of positions once (4 KB reads back
// to back) before the runs and keeps learning from every completion during them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "bench/benches.hpp"
#include "bench/device_distance.hpp"
#include "common/progress.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/hdd_model.hpp"
#include "storage/latency_map.hpp"
#include "storage/latency_map_learner.hpp"
#include "storage/request_order.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace vigil::bench {
namespace {

constexpr std::uint64_t kRegion = 128 * 1024;
constexpr const char* kSeed = "seed 004";

double ms(Nanos t) { return static_cast<double>(t.count()) / 1e6; }

// The disk, the position set and the map; reads are issued when the previous one completes
// (one request at the drive, as seed 004 runs it).
struct Rig {
  HddModel model{hdd_preset("st373207lw")};
  Nanos now{0};
  std::uint64_t head = 0;
  std::vector<std::uint64_t> positions;
  // Every ordered pair of up to 1,000 positions: 10⁶ cells.
  LatencyMap map{model.capacity_bytes(), kRegion, std::size_t{1} << 20};
  // LBN ordering: distance only (the base does not change an order; 8 ms is the disk's mean
  // random service time, so EDF-by-LBN's predictions are plausible).
  LbnDistancePredictor lbn{8ms, 1e-7};
  MapPredictor by_map{map, lbn};
  std::mt19937_64 rng;

  Rig(std::size_t count, std::uint64_t seed) : rng(seed) {
    std::uniform_int_distribution<std::uint64_t> block(0, model.capacity_bytes() / 4096 - 64);
    for (std::size_t i = 0; i < count; ++i) positions.push_back(block(rng) * 4096);
  }
  Nanos read(std::uint64_t offset, std::uint32_t bytes) {
    const Nanos t = model.service_time({IoKind::read, offset, bytes, false, now});
    map.update(head, offset, t);  // learning from every completion
    now += t;
    head = offset + bytes;
    return t;
  }
  // Every ordered pair once, 4 KB (the largest request: a later, smaller predecessor ends
  // earlier in the rotation, so the learned time stays an upper bound).
  void fill_map(Progress& progress, double& step) {
    for (std::uint64_t a : positions) {
      for (std::uint64_t b : positions) {
        read(a, 4096);
        read(b, 4096);
      }
      progress.update(++step);
    }
  }
  PendingIo next_request(std::optional<Nanos> deadline = std::nullopt) {
    const auto bytes = static_cast<std::uint32_t>(512 * (2 + rng() % 7));  // 1–4 KB
    return {positions[rng() % positions.size()], bytes, deadline};
  }
};

enum class Policy { fcfs, satf_lbn, fsatf_lbn, satf_map, fsatf_map };
constexpr Policy kPolicies[] = {Policy::fcfs, Policy::satf_lbn, Policy::fsatf_lbn, Policy::satf_map, Policy::fsatf_map};
const char* name_of(Policy p) {
  switch (p) {
    case Policy::fcfs: return "FCFS";
    case Policy::satf_lbn: return "SATF-LBN";
    case Policy::fsatf_lbn: return "FSATF-LBN";
    case Policy::satf_map: return "SATF-MAP";
    case Policy::fsatf_map: return "FSATF-MAP";
  }
  return "?";
}

// Q synchronous clients, each re-issuing on completion; returns ops/s over COMPLETIONS after a
// warm-up of one round of the queue.
double throughput(Rig& rig, Policy policy, std::size_t q, int completions) {
  std::vector<PendingIo> queue;
  for (std::size_t i = 0; i < q; ++i) queue.push_back(rig.next_request());
  std::vector<PendingIo> batch;  // FSATF: the frozen round, in service order
  const ServiceTimePredictor& pred = policy == Policy::satf_map || policy == Policy::fsatf_map
                                         ? static_cast<const ServiceTimePredictor&>(rig.by_map)
                                         : rig.lbn;
  const int warmup = static_cast<int>(q);
  Nanos start{0};
  for (int i = 0; i < warmup + completions; ++i) {
    if (i == warmup) start = rig.now;
    PendingIo r;
    if (policy == Policy::fsatf_lbn || policy == Policy::fsatf_map) {
      if (batch.empty()) {
        for (std::size_t k : order_nearest_insertion(rig.head, queue, pred)) batch.push_back(queue[k]);
        queue.clear();
        std::reverse(batch.begin(), batch.end());  // served from the back
      }
      r = batch.back();
      batch.pop_back();
    } else {
      const std::size_t k = policy == Policy::fcfs ? 0 : pick_satf(rig.head, queue, pred);
      r = queue[k];
      queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(k));
    }
    rig.read(r.offset, r.bytes);
    queue.push_back(rig.next_request());
  }
  return completions / (static_cast<double>((rig.now - start).count()) / 1e9);
}

struct DeadlineResult {
  Nanos max_response[2]{};
  int misses[2]{};
  double ops_per_s = 0;
};

// Who picks the next request in the deadline runs: the host by EDF or G-MATRIX (one request at
// the drive), or a tagged-queue drive (TCQ-N): the host sends in arrival order (NOOP) and the
// drive holds the N oldest, serving whichever it can reach first — SATF by its own exact
// positioning (HddModel::predicted_access from the head, now), deadline-blind, as seed 004 says
// of TCQ: "the hardware completely ignores the request order enforced by the OS".
struct DeadlinePicker {
  enum Kind { edf, g_matrix, tcq } kind = edf;
  std::size_t tcq_depth = 0;
};

// Seed 004 §V-D: 8 clients with a 100 ms deadline and 8 with 200 ms, synchronous.
DeadlineResult deadlines(Rig& rig, DeadlinePicker picker, int completions) {
  const Nanos class_deadline[2] = {100ms, 200ms};
  struct Pending {
    PendingIo io;
    int client;
    Nanos issued;
  };
  std::vector<Pending> pending;
  auto issue = [&](int client) {
    pending.push_back({rig.next_request(rig.now + class_deadline[client / 8]), client, rig.now});
  };
  for (int c = 0; c < 16; ++c) issue(c);
  DeadlineResult out;
  const Nanos start = rig.now;
  std::vector<PendingIo> ios;
  for (int i = 0; i < completions; ++i) {
    ios.clear();
    for (const auto& p : pending) ios.push_back(p.io);
    std::size_t k = 0;
    switch (picker.kind) {
      case DeadlinePicker::edf: k = pick_edf(ios); break;
      case DeadlinePicker::g_matrix: k = pick_g_matrix(rig.head, rig.now, ios, rig.by_map, 4); break;
      case DeadlinePicker::tcq:
        // PENDING is in arrival order (served ones are erased, new ones appended).
        for (std::size_t j = 1; j < std::min(picker.tcq_depth, ios.size()); ++j) {
          if (rig.model.predicted_access(ios[j].offset, rig.now) < rig.model.predicted_access(ios[k].offset, rig.now)) {
            k = j;
          }
        }
        break;
    }
    const Pending p = pending[k];
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
    rig.read(p.io.offset, p.io.bytes);
    const int cls = p.client / 8;
    out.max_response[cls] = std::max(out.max_response[cls], rig.now - p.issued);
    if (rig.now > *p.io.deadline) ++out.misses[cls];
    issue(p.client);
  }
  out.ops_per_s = completions / (static_cast<double>((rig.now - start).count()) / 1e9);
  return out;
}

// The same region every cycle, like the thesis's dummy streams.
class FixedStream final : public CycleStream {
 public:
  FixedStream(std::uint64_t offset, std::size_t bytes, bool write) : offset_(offset), buf_(bytes), write_(write) {}
  StreamIo prepare(std::uint64_t) override { return {.write = write_, .pieces = {{offset_, buf_.span()}}}; }
  void finished(std::uint64_t, Result<void>) override {}

 private:
  std::uint64_t offset_;
  AlignedBuffer buf_;
  bool write_;
};

struct CycleResult {
  double stream_ms_per_cycle = 0;  // stream-IO device time, mean over the cycles after the first 10
  std::uint64_t misses = 0;
  int map_cycles = 0;
};

// STREAMS recording/playback streams of 256 KiB per 1 s cycle at random places on the disk,
// through the cycle scheduler, in C-LOOK or FSATF-MAP order (the map learning from the
// scheduler's own commands; unlearned cells optimistic for the order, worst case for the fit).
CycleResult cycle_run(bool by_map, int streams, int cycles) {
  constexpr std::size_t kIoBytes = 256 * 1024;
  SimulatedHdd hdd(hdd_preset("st373207lw"));
  LatencyMapLearner learner(LatencyMap(hdd.capacity, kRegion), std::make_unique<LbnDistancePredictor>(8ms, 1e-7),
                            std::make_unique<LbnDistancePredictor>(24ms, 1e-7));
  LinearServiceModel service(17ms, 40e6);  // admission's worst case: full stroke + rotation, inner zone
  SchedulerConfig cfg{.cycle = 1s, .chunk_bytes = kIoBytes};
  if (by_map) learner.order(cfg);
  CycleScheduler sched(*hdd.disk, hdd.clock, service, cfg, &hdd.clock);
  sched.on_command = [&](const CommandTrace& t) { learner.observe(t); };
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<std::uint64_t> block(0, (hdd.capacity - kIoBytes) / 4096);
  std::vector<std::unique_ptr<FixedStream>> owned;
  for (int i = 0; i < streams; ++i) {
    owned.push_back(std::make_unique<FixedStream>(block(rng) * 4096, kIoBytes, i % 2 == 0));
    sched.add_stream(static_cast<std::uint64_t>(i + 1), *owned.back(), hdd.clock.now());
  }
  CycleResult out;
  Nanos busy{0};
  sched.on_cycle = [&](const CycleReport& r) {
    if (r.cycle > 10) busy += r.rt_busy;
    if (r.stream_order_used) ++out.map_cycles;
    learner.cycle_ended(r);
  };
  for (int c = 0; c < cycles; ++c) sched.run_cycle();
  out.misses = sched.totals().misses;
  out.stream_ms_per_cycle = ms(busy) / (cycles - 10);
  return out;
}

// The real device (research note B6): does distance matter here, and what does the map's order buy?
// DEVICE empty: a scratch file of the region's size in the temporary directory, removed after.
void device_part(BenchReport& report, const std::filesystem::path& device, bool quick) {
  DeviceDistanceParams p{.path = device,
                         .region_bytes = (quick ? 256ULL : 2048ULL) << 20,
                         .distance_samples = quick ? 2000 : 20000,
                         .map_positions = quick ? 32 : 64,
                         .queue_depth = 16,
                         .order_completions = quick ? 2000 : 20000};
  std::filesystem::path scratch;
  if (p.path.empty()) {
    scratch = std::filesystem::temp_directory_path() / ("vigil-latmap-" + std::to_string(::getpid()));
    p.path = scratch;
  }
  struct RemoveScratch {
    std::filesystem::path path;
    ~RemoveScratch() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } remove_scratch{scratch};
  const DeviceDistanceResult r = measure_device_distance(p);
  report.parameters["device"] = (scratch.empty() ? p.path.string() : "scratch file " + p.path.string());
  report.parameters["device_region_bytes"] = p.region_bytes;
  report.parameters["device_distance_samples"] = p.distance_samples;
  report.figures.push_back({"device: Pearson r, 4 KiB service time vs LBN distance", "r", r.pearson_r, 0.57,
                            std::string(kSeed) + " Fig. 3: 0.57 SCSI, 0.42 SAS (rotating)", false});
  report.figures.push_back({"device: FSATF-MAP throughput, queue " + std::to_string(p.queue_depth), "ops/s",
                            r.fsatf_map_ops_per_s, r.fcfs_ops_per_s, "baseline: FCFS, same device, alternating rounds",
                            true});
  char line[160];
  std::snprintf(line, sizeof line, "device: median 4 KiB read %.0f us over %d samples; map %zu cells", r.median_us,
                p.distance_samples, r.map_cells);
  report.notes.push_back(line);
  if (r.prefill_mb_per_s > 0) {
    std::snprintf(line, sizeof line, "device: region written first at %.0f MB/s", r.prefill_mb_per_s);
    report.notes.push_back(line);
  }
  for (const DistanceDecade& d : r.decades) {
    std::snprintf(line, sizeof line, "device: distance >= %10llu B: %5d reads, median %7.0f us, p99 %7.0f us",
                  static_cast<unsigned long long>(d.from_bytes), d.samples, d.median_us, d.p99_us);
    report.notes.push_back(line);
  }
}

}  // namespace

BenchReport latency_map_bench(const BenchOptions& options) {
  const bool quick = options.quick;
  std::filesystem::path device;  // empty: a scratch file in the temporary directory
  for (std::size_t i = 0; i < options.args.size(); ++i) {
    if (options.args[i] == "--device" && i + 1 < options.args.size()) {
      device = options.args[++i];
    } else {
      throw std::invalid_argument("unknown option " + options.args[i] +
                                  " (latency-map takes --quick, --json FILE, --device PATH)");
    }
  }
  const std::size_t positions = quick ? 300 : 1000;
  const int completions = quick ? 1500 : 20000;
  const int deadline_completions = quick ? 4000 : 100000;
  const std::vector<std::size_t> queues =
      quick ? std::vector<std::size_t>{1, 4, 16, 64} : std::vector<std::size_t>{1, 2, 4, 8, 16, 32, 64, 128, 256};

  BenchReport report;
  report.name = "latency-map: seed 004 Fig. 5 and Table II on the simulated ST373207LW (virtual time)";
  report.parameters = {{"disk", "st373207lw (10,000 rpm, 4.9 ms mean seek)"},
                       {"positions", positions},
                       {"cell_bytes", kRegion},
                       {"request", "read, 1-4 KB, one at the drive"},
                       {"completions_per_point", completions},
                       {"deadline_completions", deadline_completions},
                       {"lookahead_k", 4}};

  Rig rig(positions, 2026);
  Progress progress("latency-map", static_cast<double>(positions + queues.size() * std::size(kPolicies) + 6));
  double step = 0;
  rig.fill_map(progress, step);
  report.notes.push_back("map filled: " + std::to_string(rig.map.learned_cells()) + " cells (" +
                         std::to_string(positions * positions) + " position pairs and the start)");

  // Fig. 5: throughput vs queue length.
  std::vector<std::vector<double>> ops(queues.size());
  for (std::size_t qi = 0; qi < queues.size(); ++qi) {
    for (Policy p : kPolicies) {
      ops[qi].push_back(throughput(rig, p, queues[qi], completions));
      progress.update(++step);
    }
  }
  std::string header = "ops/s   queue";
  for (Policy p : kPolicies) header += std::string("  ") + name_of(p);
  report.notes.push_back(header);
  double ratio_sum = 0, ratio_max = 0;
  int ratio_count = 0;
  for (std::size_t qi = 0; qi < queues.size(); ++qi) {
    char line[200];
    std::snprintf(line, sizeof line, "ops/s %7zu  %6.1f  %8.1f  %9.1f  %8.1f  %9.1f", queues[qi], ops[qi][0],
                  ops[qi][1], ops[qi][2], ops[qi][3], ops[qi][4]);
    report.notes.push_back(line);
    const double map_vs_lbn = ops[qi][4] / ops[qi][2];
    report.figures.push_back({"FSATF-MAP throughput, queue " + std::to_string(queues[qi]), "ops/s", ops[qi][4],
                              ops[qi][2], "baseline: FSATF-LBN, same run", true});
    if (queues[qi] > 1) {  // one request: no order to choose
      ratio_sum += map_vs_lbn;
      ratio_max = std::max(ratio_max, map_vs_lbn);
      ++ratio_count;
    }
  }
  double fcfs = 0;
  for (const auto& row : ops) fcfs += row[0];
  fcfs /= static_cast<double>(ops.size());
  report.figures.push_back({"FCFS (NOOP) throughput, mean over queues", "ops/s", fcfs, 130,
                            std::string(kSeed) + " Fig. 5: \"slightly higher than 130 IOPS\"", true});
  report.figures.push_back({"FSATF-MAP / FSATF-LBN, mean over queues > 1", "x", ratio_sum / ratio_count, 1.13,
                            std::string(kSeed) + " Fig. 5: 13 % better on average", true});
  report.figures.push_back({"FSATF-MAP / FSATF-LBN, max over queues", "x", ratio_max, 1.17,
                            std::string(kSeed) + " Fig. 5: up to 17 % better", true});

  // Table II: deadline classes.
  const DeadlineResult edf = deadlines(rig, {DeadlinePicker::edf}, deadline_completions);
  progress.update(++step);
  const DeadlineResult gm = deadlines(rig, {DeadlinePicker::g_matrix}, deadline_completions);
  progress.update(++step);
  const DeadlineResult tcq4 = deadlines(rig, {DeadlinePicker::tcq, 4}, deadline_completions);
  const DeadlineResult tcq64 = deadlines(rig, {DeadlinePicker::tcq, 64}, deadline_completions);
  const std::string table = std::string(kSeed) + " Table II";
  report.figures.push_back({"EDF max response, 100 ms class", "ms", ms(edf.max_response[0]), 99, table, false});
  report.figures.push_back({"EDF max response, 200 ms class", "ms", ms(edf.max_response[1]), 198, table, false});
  report.figures.push_back({"EDF throughput", "ops/s", edf.ops_per_s, 130, table, true});
  report.figures.push_back({"G-MATRIX max response, 100 ms class", "ms", ms(gm.max_response[0]), 86, table, false});
  report.figures.push_back({"G-MATRIX max response, 200 ms class", "ms", ms(gm.max_response[1]), 192, table, false});
  report.figures.push_back({"G-MATRIX throughput", "ops/s", gm.ops_per_s, 172, table, true});
  report.figures.push_back({"G-MATRIX / EDF throughput", "x", gm.ops_per_s / edf.ops_per_s, 172.0 / 130.0,
                            table + ": \"32% higher\"", true});
  for (const auto& [name, r, ref_100, ref_200, ref_ops] :
       {std::tuple{"TCQ4", tcq4, 407.0, 419.0, 169.0}, std::tuple{"TCQ64", tcq64, 955.0, 1272.0, 236.0}}) {
    const std::string n = name;
    report.figures.push_back({n + " max response, 100 ms class", "ms", ms(r.max_response[0]), ref_100, table, false});
    report.figures.push_back({n + " max response, 200 ms class", "ms", ms(r.max_response[1]), ref_200, table, false});
    report.figures.push_back({n + " throughput", "ops/s", r.ops_per_s, ref_ops, table, true});
  }
  report.figures.push_back({"TCQ64 / G-MATRIX throughput", "x", tcq64.ops_per_s / gm.ops_per_s, 236.0 / 172.0,
                            table + ": TCQ64 \"37%\" more than G-MATRIX", true});
  report.notes.push_back("deadline misses (100/200 ms class): EDF " + std::to_string(edf.misses[0]) + "/" +
                         std::to_string(edf.misses[1]) + ", G-MATRIX " + std::to_string(gm.misses[0]) + "/" +
                         std::to_string(gm.misses[1]) + ", TCQ4 " + std::to_string(tcq4.misses[0]) + "/" +
                         std::to_string(tcq4.misses[1]) + ", TCQ64 " + std::to_string(tcq64.misses[0]) + "/" +
                         std::to_string(tcq64.misses[1]) + " of " + std::to_string(deadline_completions));
  // The cycle's stream IOs: FSATF-MAP against C-LOOK. 48 streams is admission's limit with its
  // worst-case model (48 × (17 ms + 256 KiB at 40 MB/s) = 0.93 s of a 0.9 s share + rounding).
  const int cycles = quick ? 200 : 2000;
  for (int streams : {24, 48, 72}) {
    const CycleResult clook = cycle_run(false, streams, cycles);
    const CycleResult fsatf = cycle_run(true, streams, cycles);
    progress.update(++step);
    report.figures.push_back({"cycle stream-IO time, FSATF-MAP, " + std::to_string(streams) + " streams", "ms/cycle",
                              fsatf.stream_ms_per_cycle, clook.stream_ms_per_cycle, "baseline: C-LOOK sweep, same run",
                              false});
    report.notes.push_back("cycle, " + std::to_string(streams) + " streams x 256 KiB: misses C-LOOK " +
                           std::to_string(clook.misses) + ", FSATF-MAP " + std::to_string(fsatf.misses) +
                           "; map order taken in " + std::to_string(fsatf.map_cycles) + " of " +
                           std::to_string(cycles) + " cycles");
  }
  report.notes.push_back(
      "admission's worst-case model admits the same streams either way: the map order buys slack "
      "(background, interactive), not streams, until admission learns from the map");
  device_part(report, device, quick);
  progress.update(++step);
  report.notes.push_back(
      "TCQ-N: the host sends in arrival order, the drive serves the one of its N oldest it reaches first (exact "
      "positioning, deadline-blind); 16 clients, so TCQ64 holds every request");
  progress.finish();
  return report;
}

}  // namespace vigil::bench
