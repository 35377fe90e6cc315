// `vigil bench freeblock`: seeds 003 and 000 (freeblock scheduling) on the simulated Quantum
// Atlas 10K, in virtual time (docs/freeblock.md).
//   Part A (seed 003 Figs. 2, 5, 6): the share of the head's time spent in rotational latency for
//     random 4 KB requests under FCFS, C-LOOK, SSTF, SPTF and SPTF-SWn% at a few queue depths —
//     the bandwidth a freeblock scheduler could hand out for free.
//   Part C (issue 23, Vigil's own workload): the integrity scrubber's share of the residual disk
//     time beside recording streams at 90 % of the admitted load, through the real cycle scheduler
//     and background broker (tier 1: cycle slack); the streams' cycle completion p99 with the
//     scrubber on and off, and deadline misses (bench/scrub_share.*).
//   Part B (seed 003 Fig. 8, seed 000 Fig. 8): the free bandwidth a whole-disk background scan
//     gets from the freeblock planner under an OLTP-like random foreground load, the head's useful
//     utilisation with and without it, scans per day, and the foreground's response time with and
//     without it (the same run twice).
//   Part D (issue 23, the real device): the scrubber beside recording on this machine's disk — a
//     real vigild, wire cameras in real time, the scrubber off and then on with 1 s epochs (every
//     closed segment re-read every second: far more than its 7-day default asks), the recording's
//     acknowledgement delay and an interactive reader's export time in each (bench/recording_phase.*).
// Every foreground request's time is split by HddModel::predict (overhead, seek/head switch,
// rotation, transfer); the bench checks the split against what the model then charges.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_vigild.hpp"
#include "bench/benches.hpp"
#include "bench/percentile.hpp"
#include "bench/recording_phase.hpp"
#include "bench/replay.hpp"
#include "bench/scrub_share.hpp"
#include "bench/tier_share.hpp"
#include "common/progress.hpp"
#include "storage/freeblock_planner.hpp"
#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace vigil::bench {
namespace {

constexpr const char* kSeed003 = "seed 003";
constexpr const char* kSeed000 = "seed 000";
constexpr std::uint64_t kBlock = 4096;
constexpr Nanos kNoise = 200us;  // the margin sweep's second half: each command up to 0.2 ms late

double ms(Nanos t) { return static_cast<double>(t.count()) / 1e6; }
double s_of(Nanos t) { return static_cast<double>(t.count()) / 1e9; }

struct Request {
  std::uint64_t offset = 0;
  std::size_t bytes = kBlock;
  bool write = false;
  Nanos arrived{0};
  int client = 0;
};

// Foreground orders (seed 003 §3.3). SPTF-SWn%: the smallest seek among the requests whose
// positioning time is within n % of SPTF's choice.
struct Policy {
  enum Kind { fcfs, clook, sstf, sptf, sptf_sw } kind = fcfs;
  int window_pct = 0;
  std::string name() const {
    switch (kind) {
      case fcfs: return "FCFS";
      case clook: return "C-LOOK";
      case sstf: return "SSTF";
      case sptf: return "SPTF";
      case sptf_sw: return "SPTF-SW" + std::to_string(window_pct) + "%";
    }
    return "?";
  }
};

std::size_t pick(const Policy& p, const HddModel& m, std::uint64_t head_offset, Nanos now,
                 const std::vector<Request>& queue) {
  if (p.kind == Policy::fcfs || queue.size() == 1) return 0;
  std::size_t best = 0;
  if (p.kind == Policy::clook) {
    // The nearest request at or beyond the head in LBN order, else the lowest (the sweep restarts).
    std::size_t low = 0;
    bool ahead = false;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      if (queue[i].offset < queue[low].offset) low = i;
      if (queue[i].offset >= head_offset && (!ahead || queue[i].offset < queue[best].offset)) {
        best = i;
        ahead = true;
      }
    }
    return ahead ? best : low;
  }
  const HeadPosition from = m.head_position();
  if (p.kind == Policy::sstf) {
    Nanos best_seek = Nanos::max();
    for (std::size_t i = 0; i < queue.size(); ++i) {
      const Nanos seek = m.move_time(from, m.position_of(queue[i].offset));
      if (seek < best_seek) {
        best_seek = seek;
        best = i;
      }
    }
    return best;
  }
  std::vector<Nanos> positioning(queue.size());
  for (std::size_t i = 0; i < queue.size(); ++i) {
    positioning[i] = m.predict(from, queue[i].offset, queue[i].bytes, now).positioning();
    if (positioning[i] < positioning[best]) best = i;
  }
  if (p.kind == Policy::sptf) return best;
  const Nanos limit = positioning[best] + positioning[best] * p.window_pct / 100;
  Nanos best_seek = m.move_time(from, m.position_of(queue[best].offset));
  for (std::size_t i = 0; i < queue.size(); ++i) {
    if (positioning[i] > limit) continue;
    const Nanos seek = m.move_time(from, m.position_of(queue[i].offset));
    if (seek < best_seek) {
      best_seek = seek;
      best = i;
    }
  }
  return best;
}

// Head time split over the foreground requests served.
struct HeadTime {
  Nanos overhead{0}, seek{0}, rotation{0}, transfer{0};
  std::uint64_t requests = 0, mispredicted = 0;
  Nanos total() const { return overhead + seek + rotation + transfer; }
  double rotation_share() const { return static_cast<double>(rotation.count()) / static_cast<double>(total().count()); }
  double mean_access_ms() const { return ms(total()) / static_cast<double>(requests); }
  void add(const Positioning& p, Nanos charged) {
    overhead += p.overhead;
    seek += p.seek + p.head_switch;
    rotation += p.rotation;
    transfer += p.transfer;
    ++requests;
    mispredicted += charged != p.total() ? 1 : 0;
  }
};

// Serves R on M at NOW; returns its completion time, adding its split to HT.
Nanos serve(HddModel& m, const Request& r, Nanos now, HeadTime& ht) {
  const bool cached = !r.write && m.continues_read_ahead(r.offset);
  const Positioning p = m.predict(m.head_position(), r.offset, r.bytes, now);
  const Nanos t = m.service_time({r.write ? IoKind::write : IoKind::read, r.offset, r.bytes, r.write, now});
  if (!cached) ht.add(p, t);
  return now + t;
}

// Part A: "Random" (seed 003 §3): closed, QUEUE requests outstanding, 4 KB, uniform over the
// disk, 2:1 read : write (writes durable: the head does the work at once).
HeadTime random_run(const Policy& policy, std::size_t queue_depth, int requests, std::uint64_t seed) {
  HddModel m(hdd_preset("atlas10k"));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> block(0, m.capacity_bytes() / kBlock - 1);
  int issued = 0;
  auto next = [&] { return Request{block(rng) * kBlock, kBlock, issued++ % 3 == 2, {}, 0}; };
  std::vector<Request> queue;
  for (std::size_t i = 0; i < queue_depth; ++i) queue.push_back(next());
  HeadTime ht, warm;
  Nanos now{0};
  std::uint64_t head_offset = 0;
  const int warmup = static_cast<int>(queue_depth) * 5;
  for (int i = 0; i < warmup + requests; ++i) {
    const std::size_t k = pick(policy, m, head_offset, now, queue);
    const Request r = queue[k];
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(k));
    now = serve(m, r, now, i < warmup ? warm : ht);
    head_offset = r.offset + r.bytes;
    queue.push_back(next());
  }
  return ht;
}

// Part B: OLTP-like (seed 003 §6): closed, MPL clients, think time exponential with mean 30 ms,
// 2:1 read : write, sizes 4 KB multiples with mean ~8 KB, uniform over the disk; a whole-disk
// background scan through the freeblock planner (or none).
struct OltpResult {
  Nanos elapsed{0};
  HeadTime foreground;
  double response_ms = 0;
  std::uint64_t free_sectors = 0, free_commands = 0;
  Nanos free_useful{0};      // media time of the wanted sectors read
  Nanos opportunity{0};      // Σ rotational latency of the foreground requests: the potential
  double scan_fraction = 0;  // of the disk read by the scan
  Nanos scan_done{-1};       // when the scan finished (-1: not in the run)
  Nanos last5_started{-1};   // when 95 % of the scan was read
  std::uint32_t max_tracks_examined = 0;
  double mean_tracks_examined = 0;
  std::uint64_t plans = 0, cut_off = 0;  // searches, and those the cut-off stopped
};

// Runs for DURATION of virtual time, or until the scan is done when STOP_WHEN_SCANNED. NOISE:
// every command takes a uniform [0, NOISE] longer than predicted (the disk's surprise, seed 000
// §3.1), drawn from one stream for the foreground and another for the background, so the
// foreground's draws are the same with and without the scan.
OltpResult oltp_run(const Policy& policy, int mpl, Nanos duration, std::optional<FreeblockConfig> freeblock,
                    std::uint64_t seed, Nanos noise, bool stop_when_scanned = false, Progress* progress = nullptr,
                    double progress_base = 0, double scan_left = 1.0) {
  HddModel m(hdd_preset("atlas10k"));
  std::mt19937_64 fg_noise(seed + 1), bg_noise(seed + 2);
  std::uniform_int_distribution<std::int64_t> late(0, noise.count());
  FreeblockWanted wanted(m);
  if (freeblock && scan_left >= 1.0) wanted.want_all();
  if (freeblock && scan_left < 1.0) {
    // A scan's tail: SCAN_LEFT of the disk still wanted, as scattered 4 KB blocks (seed 003 Fig. 9).
    std::mt19937_64 tail(seed + 3);
    const std::uint64_t blocks = m.capacity_bytes() / kBlock;
    std::uniform_int_distribution<std::uint64_t> pick(0, blocks - 1);
    while (static_cast<double>(wanted.remaining()) < scan_left * static_cast<double>(m.capacity_bytes() / 512)) {
      wanted.want(pick(tail) * kBlock, kBlock);
    }
  }
  const std::uint64_t scan_total = wanted.remaining();
  const FreeblockPlanner planner(m, freeblock.value_or(FreeblockConfig{}));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> block(0, m.capacity_bytes() / kBlock - 8);
  std::exponential_distribution<double> think(1.0 / 30.0);         // ms
  std::exponential_distribution<double> extra_blocks(1.0 / 1.05);  // 1 + ⌊Exp⌋ blocks: mean ≈ 2 (8 KB)
  std::vector<Nanos> wakes(static_cast<std::size_t>(mpl), Nanos(0));
  std::vector<Request> queue;
  std::uint64_t issued = 0;
  OltpResult out;
  Nanos now{0}, response_sum{0};
  std::uint64_t head_offset = 0, plans = 0, examined_sum = 0;
  while (now < duration && !(stop_when_scanned && out.scan_done >= Nanos(0))) {
    for (std::size_t c = 0; c < wakes.size(); ++c) {
      if (wakes[c] == Nanos::max() || wakes[c] > now) continue;
      const auto blocks = 1 + static_cast<std::uint64_t>(extra_blocks(rng));
      queue.push_back({block(rng) * kBlock, static_cast<std::size_t>(std::min<std::uint64_t>(blocks, 8) * kBlock),
                       issued++ % 3 == 2, wakes[c], static_cast<int>(c)});
      wakes[c] = Nanos::max();
    }
    if (queue.empty()) {  // idle until the next client wakes
      now = *std::min_element(wakes.begin(), wakes.end());
      continue;
    }
    const std::size_t k = pick(policy, m, head_offset, now, queue);
    const Request r = queue[k];
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(k));
    const bool cached = !r.write && m.continues_read_ahead(r.offset);
    if (!cached) out.opportunity += m.predict(m.head_position(), r.offset, r.bytes, now).rotation;
    if (freeblock && !cached && wanted.remaining() > 0) {
      FreeblockSearchStats stats;
      if (auto fb = planner.plan(m.head_position(), now, r.offset, r.bytes, wanted, &stats)) {
        now += m.service_time({IoKind::read, fb->offset, fb->bytes, false, now}) + Nanos(late(bg_noise));
        const std::uint64_t got = wanted.take(fb->offset, fb->bytes);
        out.free_sectors += got;
        ++out.free_commands;
        const HddTrack track = m.track(fb->track);
        out.free_useful += m.geometry().rotation * static_cast<std::int64_t>(got) / track.sectors;
        if (out.last5_started < Nanos(0) && wanted.remaining() * 20 <= scan_total) out.last5_started = now;
        if (wanted.remaining() == 0) out.scan_done = now;
      }
      ++plans;
      out.cut_off += stats.cut_off ? 1 : 0;
      examined_sum += stats.tracks_examined;
      out.max_tracks_examined = std::max(out.max_tracks_examined, stats.tracks_examined);
    }
    now = serve(m, r, now, out.foreground) + Nanos(late(fg_noise));
    head_offset = r.offset + r.bytes;
    response_sum += now - r.arrived;
    wakes[static_cast<std::size_t>(r.client)] = now + Nanos(static_cast<std::int64_t>(think(rng) * 1e6));
    if (progress != nullptr && out.foreground.requests % 4096 == 0) {
      progress->update(progress_base + s_of(now) / s_of(duration));
    }
  }
  out.elapsed = now;
  out.response_ms = ms(response_sum) / static_cast<double>(std::max<std::uint64_t>(out.foreground.requests, 1));
  out.scan_fraction = scan_total == 0 ? 0 : static_cast<double>(out.free_sectors) / static_cast<double>(scan_total);
  out.plans = plans;
  out.mean_tracks_examined = plans == 0 ? 0 : static_cast<double>(examined_sum) / static_cast<double>(plans);
  return out;
}

// The disk's full sequential bandwidth: every track read whole, with its head and cylinder switches.
double full_bandwidth_bps(const HddModel& m) {
  const auto& g = m.geometry();
  double seconds = 0;
  for (const auto& z : g.zones) {
    seconds +=
        z.cylinders * (g.heads * s_of(g.rotation) + (g.heads - 1) * s_of(g.head_switch) + s_of(g.cylinder_switch));
  }
  return static_cast<double>(m.capacity_bytes()) / seconds;
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%5.1f%%", 100 * x);
  return b;
}

// Part C: the scrubber beside recording at 90 % of the admitted load (tier 1, as vigild runs).
void part_c(BenchReport& report, bool quick) {
  const int cycles = quick ? 120 : 3600;
  const ScrubShareResult off = scrub_share_run({.cycles = cycles, .scrub = false});
  const ScrubShareResult on = scrub_share_run({.cycles = cycles});
  // The same with a background budget of the whole cycle: what the slack itself allows.
  const ScrubShareResult open = scrub_share_run({.cycles = cycles, .background_budget = 1s});
  const std::string target = "issue 23 target";
  report.figures.push_back({"scrubber share of residual disk time, 90 % load, vigild's 200 ms budget", "%",
                            100 * on.residual_share(), 50, target + ": >= 50 %", true});
  report.figures.push_back({"scrubber share of residual disk time, 90 % load, budget = cycle", "%",
                            100 * open.residual_share(), 50, target + ": >= 50 %", true});
  report.figures.push_back({"stream cycles without a miss, scrubber on", "%",
                            100 * (1 - static_cast<double>(on.misses + open.misses) /
                                           static_cast<double>(std::max<std::uint64_t>(on.cycles + open.cycles, 1))),
                            100, target + ": 0 misses", true});
  report.figures.push_back({"stream IO completion in its cycle, p99, scrubber on / off", "x",
                            on.rt_done_p99_ms / off.rt_done_p99_ms, 1.02, target + ": <= 2 % impact", false});
  char line[320];
  std::snprintf(line, sizeof line,
                "part C: %zu of %zu admissible 500 kB/s recording streams (conservative, r_RT 0.9, T 1 s), %d cycles; "
                "stream IO %.1f %% of the disk's time, residual %.1f %%",
                on.streams, on.admissible, cycles, 100 * on.foreground_s / on.elapsed_s,
                100 * on.residual_s / on.elapsed_s);
  report.notes.push_back(line);
  for (const auto* r : {&off, &on, &open}) {
    std::snprintf(line, sizeof line,
                  "  scrubber %s: %.2f MB/s, %.1f %% of the residual; misses %llu; cycle's stream IO done at p99 "
                  "%.1f ms, max %.1f ms",
                  r == &off  ? "off"
                  : r == &on ? "on, 200 ms budget"
                             : "on, budget = cycle",
                  r->scrub_Bps() / 1e6, 100 * r->residual_share(), static_cast<unsigned long long>(r->misses),
                  r->rt_done_p99_ms, r->rt_done_max_ms);
    report.notes.push_back(line);
  }
}

// Part D: the scrubber on this machine's disk beside recording, off then on, ROUNDS times.
// Part E: a whole-disk scrub beside playback at 90 % of the admitted load, with the broker's
// tiers 1, 1+2, 1+3 and all three (virtual time).
void part_e(BenchReport& report, bool quick, double full_bps) {
  const int cycles = quick ? 60 : 600;
  const TierShareResult one = tier_share_run({.cycles = cycles});
  const TierShareResult two = tier_share_run({.cycles = cycles, .prepend = true});
  const TierShareResult three = tier_share_run({.cycles = cycles, .rotational = true});
  const TierShareResult all = tier_share_run({.cycles = cycles, .prepend = true, .rotational = true});
  const TierShareResult off = tier_share_run({.cycles = cycles, .scrub = false});
  const std::string note = "research note 5.3's estimate for tier 3: 10-15 % of media bandwidth";
  report.figures.push_back({"tier 3's free bandwidth beside playback / full disk bandwidth", "%",
                            100 * three.free_Bps() / full_bps, 12.5, note, true});
  report.figures.push_back({"scrub rate beside playback, tiers 1+3 / tier 1 alone", "x",
                            three.scrub_Bps() / one.scrub_Bps(), 1, "tier 1 alone (same run)", true});
  report.figures.push_back({"scrub rate beside playback, tiers 1+2 / tier 1 alone", "x",
                            two.scrub_Bps() / one.scrub_Bps(), 1, "tier 1 alone (same run)", true});
  const std::uint64_t misses = one.misses + two.misses + three.misses + all.misses;
  const std::uint64_t total = one.cycles + two.cycles + three.cycles + all.cycles;
  report.figures.push_back(
      {"playback cycles without a miss, every tier set", "%",
       100 * (1 - static_cast<double>(misses) / static_cast<double>(std::max<std::uint64_t>(total, 1))), 100,
       "issue 23 target: 0 misses", true});
  report.figures.push_back({"playback IO completion in its cycle, p99, tiers 1+3 / no scrub", "x",
                            three.rt_done_p99_ms / off.rt_done_p99_ms, 1.02, "issue 23 target: <= 2 % impact", false});
  char line[320];
  std::snprintf(line, sizeof line,
                "part E: %zu of %zu admissible 500 kB/s playback streams (conservative, r_RT 0.9, T 1 s), %d cycles, a "
                "whole-disk any-order scrub (tier 3 foreground commands later than planned: %llu)",
                all.streams, all.admissible, cycles,
                static_cast<unsigned long long>(one.free_late + two.free_late + three.free_late + all.free_late));
  report.notes.push_back(line);
  for (const auto* r : {&one, &two, &three, &all}) {
    std::snprintf(line, sizeof line,
                  "  tiers %-6s scrub %.2f MB/s (tier 2 %.2f MB/s in %llu reads, tier 3 %.2f MB/s in %llu reads); "
                  "misses %llu; stream IO done at p99 %.1f ms (no scrub: %.1f ms)",
                  r == &one     ? "1"
                  : r == &two   ? "1+2"
                  : r == &three ? "1+3"
                                : "1+2+3",
                  r->scrub_Bps() / 1e6, r->prepend_bytes / r->elapsed_s / 1e6,
                  static_cast<unsigned long long>(r->prepend_reads), r->free_Bps() / 1e6,
                  static_cast<unsigned long long>(r->free_reads), static_cast<unsigned long long>(r->misses),
                  r->rt_done_p99_ms, off.rt_done_p99_ms);
    report.notes.push_back(line);
  }
}

void part_d(BenchReport& report, bool quick, const std::filesystem::path& base) {
  const ScratchDir scratch(base, "vigil-bench-freeblock");
  const std::filesystem::path& dir = scratch.path();
  const std::filesystem::path profile = profile_disk_of(dir);
  const ReplayClip clip = make_replay_clip(dir, 2e6, "640x360");
  const int rounds = quick ? 1 : 3;
  const std::vector<std::string> metrics{"vigil_scrub_bytes_total", "vigil_scrub_segments_total",
                                         "vigil_scrub_corrupt_segments_total"};
  RecordingPhase off, on;
  for (int round = 0; round < rounds; ++round) {
    for (const bool scrub : {false, true}) {
      const auto phase_dir = dir / ((scrub ? "on-" : "off-") + std::to_string(round));
      RecordingPhaseSpec spec{.dir = phase_dir,
                              .profile = profile,
                              .cameras = quick ? 4 : 8,
                              .seconds = quick ? 10.0 : 30.0,
                              .segment_max_s = 2,
                              .vigild_flags = scrub ? std::vector<std::string>{"--scrub-epoch-ms", "1000"}
                                                    : std::vector<std::string>{"--scrub-days", "0"},
                              .metrics = metrics};
      (scrub ? on : off).add(run_recording_phase(spec, clip));
      std::filesystem::remove_all(phase_dir);
    }
  }
  const std::string same = "scrubber off, same run (this machine's disk)";
  report.figures.push_back({"real device: recording ack delay p50, scrubber on", "ms", percentile(on.ack_delay_ms, 0.5),
                            percentile(off.ack_delay_ms, 0.5), same, false});
  report.figures.push_back({"real device: recording ack delay p99, scrubber on", "ms",
                            percentile(on.ack_delay_ms, 0.99), percentile(off.ack_delay_ms, 0.99), same, false});
  report.figures.push_back({"real device: interactive export p99, scrubber on", "ms",
                            percentile(on.interactive_ms, 0.99), percentile(off.interactive_ms, 0.99), same, false});
  report.figures.push_back({"real device: scrubber read rate", "MB/s",
                            on.metric_delta.at("vigil_scrub_bytes_total") / 1e6 / on.seconds,
                            on.recorded_bytes / 1e6 / on.seconds, "the cameras' recording rate", true});
  for (const auto* ph : {&off, &on}) {
    report.notes.push_back(
        std::string("part D, scrubber ") + (ph == &on ? "on (1 s epochs)" : "off") + ": " + std::to_string(ph->acked) +
        " of " + std::to_string(ph->sent) + " packets acknowledged, " + std::to_string(ph->ack_delay_ms.size()) +
        " acknowledgements timed, " + std::to_string(ph->interactive_ms.size()) + " exports (" +
        std::to_string(ph->interactive_failed) + " failed); " +
        std::to_string(static_cast<long long>(ph->metric_delta.at("vigil_scrub_segments_total"))) +
        " segments scrubbed, " +
        std::to_string(static_cast<long long>(ph->metric_delta.at("vigil_scrub_corrupt_segments_total"))) + " corrupt");
  }
}

}  // namespace

BenchReport freeblock_bench(const BenchOptions& options) {
  const bool quick = options.quick;
  bool real_device = true;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (std::size_t i = 0; i < options.args.size(); ++i) {
    if (options.args[i] == "--no-real-device") {
      real_device = false;
    } else if (options.args[i] == "--dir" && i + 1 < options.args.size()) {
      dir = options.args[++i];
    } else {
      throw std::invalid_argument("unknown option " + options.args[i] +
                                  " (freeblock takes --quick, --json FILE, --dir DIR, --no-real-device)");
    }
  }
  const int requests = quick ? 3000 : 20000;
  const std::vector<std::size_t> depths =
      quick ? std::vector<std::size_t>{1, 4, 20} : std::vector<std::size_t>{1, 2, 4, 8, 20, 32};
  std::vector<Policy> policies = {{Policy::fcfs}, {Policy::clook}, {Policy::sstf}, {Policy::sptf}};
  for (int n : quick ? std::vector<int>{40} : std::vector<int>{10, 20, 40, 60, 100}) {
    policies.push_back({Policy::sptf_sw, n});
  }
  const int mpl = 10;
  // The main run long enough for a whole scan in full mode; the margin sweep shorter.
  const Nanos oltp_duration = quick ? 60s : 3600s;
  const Nanos sweep_duration = quick ? 60s : 600s;
  const std::vector<Nanos> margins =
      quick ? std::vector<Nanos>{0us, 300us, 400us} : std::vector<Nanos>{0us, 100us, 200us, 300us, 400us, 600us};

  BenchReport report;
  report.name = "freeblock: seed 003 Figs. 2/5/6/8 and seed 000 Fig. 8 on the simulated Atlas 10K (virtual time)";
  HddModel disk(hdd_preset("atlas10k"));
  const double full_bps = full_bandwidth_bps(disk);
  report.parameters = {{"disk", "atlas10k (10,025 rpm, 5.0 ms mean seek, 0.8 ms head switch, 334-229 sectors/track)"},
                       {"part_a_workload", "closed, 4 KB, uniform, 2:1 read:durable write"},
                       {"part_a_requests_per_point", requests},
                       {"part_b_workload",
                        "OLTP-like: MPL 10, 30 ms exp. think, 2:1 read:write, 4 KB multiples, mean ~8 KB"},
                       {"part_b_foreground_order", "SPTF"},
                       {"part_b_max_virtual_seconds", s_of(oltp_duration)},
                       {"freeblock_margin_ms", 0.3},
                       {"noise_ms", ms(kNoise)},
                       {"full_bandwidth_MBps", full_bps / 1e6}};

  const double part_a_steps = static_cast<double>(depths.size() * policies.size());
  const std::vector<Nanos> noisy_margins =
      quick ? std::vector<Nanos>{100us, 300us} : std::vector<Nanos>{0us, 100us, 200us, 300us, 400us};
  const double part_b_steps =
      4.0 + static_cast<double>(margins.size() + noisy_margins.size());  // scan, baseline, sweep baseline, sweep
  Progress progress("freeblock", part_a_steps + part_b_steps);
  double step = 0;

  // --- Part A ---
  std::vector<std::vector<HeadTime>> a(depths.size());
  std::uint64_t mispredicted = 0, served = 0;
  for (std::size_t d = 0; d < depths.size(); ++d) {
    for (const Policy& p : policies) {
      a[d].push_back(random_run(p, depths[d], requests, 2026));
      mispredicted += a[d].back().mispredicted;
      served += a[d].back().requests;
      progress.update(++step);
    }
  }
  std::string header = "rotational share / mean access ms, queue:";
  for (const Policy& p : policies) header += "  " + p.name();
  report.notes.push_back(header);
  for (std::size_t d = 0; d < depths.size(); ++d) {
    std::string line = "  queue " + std::to_string(depths[d]) + ":";
    for (const HeadTime& h : a[d]) {
      char b[48];
      std::snprintf(b, sizeof b, "  %s/%.2f", pct(h.rotation_share()).c_str(), h.mean_access_ms());
      line += b;
    }
    report.notes.push_back(line);
  }
  report.notes.push_back("predict() vs charged service time: " + std::to_string(mispredicted) + " of " +
                         std::to_string(served) + " requests differ");
  const std::size_t q20 = static_cast<std::size_t>(std::find(depths.begin(), depths.end(), 20) - depths.begin());
  const std::size_t sw40 = static_cast<std::size_t>(
      std::find_if(policies.begin(), policies.end(), [](const Policy& p) { return p.window_pct == 40; }) -
      policies.begin());
  auto at20 = [&](std::size_t policy) -> const HeadTime& { return a[q20][policy]; };
  const std::string fig2 = std::string(kSeed003) + " Fig. 2: 27-36 % (midpoint)";
  report.figures.push_back({"rotational share, FCFS, queue 1", "%", 100 * a[0][0].rotation_share(), 31.5, fig2, true});
  report.figures.push_back({"rotational share, FCFS, queue 20", "%", 100 * at20(0).rotation_share(), 31.5, fig2, true});
  const std::string fig5 = std::string(kSeed003) + " Fig. 5 (20 outstanding)";
  report.figures.push_back(
      {"rotational share, C-LOOK, queue 20", "%", 100 * at20(1).rotation_share(), 50, fig5 + ": 50 %", true});
  report.figures.push_back(
      {"rotational share, SSTF, queue 20", "%", 100 * at20(2).rotation_share(), 50, fig5 + ": 50 %", true});
  report.figures.push_back(
      {"rotational share, SPTF, queue 20", "%", 100 * at20(3).rotation_share(), 22, fig5 + ": 22 %", false});
  const std::string fig6 = std::string(kSeed003) + " Fig. 6";
  report.figures.push_back(
      {"rotational share, SPTF-SW40%, queue 20", "%", 100 * at20(sw40).rotation_share(), 36, fig6 + ": 36 %", true});
  report.figures.push_back({"SPTF-SW40% / SPTF access time, queue 20", "x",
                            at20(sw40).mean_access_ms() / at20(3).mean_access_ms(), 1.06, fig6 + ": +6 %", false});
  report.figures.push_back({"SPTF-SW40% / SPTF rotational time, queue 20", "x",
                            ms(at20(sw40).rotation) / ms(at20(3).rotation), 1.66,
                            fig6 + ": 66 % more free bandwidth potential", true});
  report.figures.push_back({"SSTF / SPTF access time, queue 20", "x",
                            at20(2).mean_access_ms() / at20(3).mean_access_ms(), 1.25,
                            fig6 + ": 25 % access time difference", false});

  // --- Part B ---
  const Policy sptf{Policy::sptf};
  const std::uint64_t seed = 7;
  // The main run stops when its scan is done (full mode), so its rates are a whole scan's; the
  // baseline runs as long (the foreground trace is the same request for request).
  const OltpResult fb = oltp_run(sptf, mpl, oltp_duration, FreeblockConfig{}, seed, 0ns, true, &progress, step);
  progress.update(++step);
  const OltpResult base = oltp_run(sptf, mpl, fb.elapsed, std::nullopt, seed, 0ns);
  progress.update(++step);
  const OltpResult sweep_base = oltp_run(sptf, mpl, sweep_duration, std::nullopt, seed, 0ns);
  progress.update(++step);
  std::vector<OltpResult> runs;
  for (Nanos margin : margins) {
    runs.push_back(
        oltp_run(sptf, mpl, sweep_duration, FreeblockConfig{.margin = margin}, seed, 0ns, false, &progress, step));
    progress.update(++step);
  }
  // The same sweep with every command up to NOISE late: a margin below the noise lets a late
  // background read cost the foreground request a rotation.
  const OltpResult noisy_base = oltp_run(sptf, mpl, sweep_duration, std::nullopt, seed, kNoise);
  progress.update(++step);
  std::vector<OltpResult> noisy;
  for (Nanos margin : noisy_margins) {
    noisy.push_back(oltp_run(sptf, mpl, sweep_duration, FreeblockConfig{.margin = margin}, seed, kNoise));
    progress.update(++step);
  }
  const double free_bps = static_cast<double>(fb.free_sectors) * disk.geometry().sector_bytes / s_of(fb.elapsed);
  const double util_base = s_of(base.foreground.transfer) / s_of(base.elapsed);
  const double util_fb = (s_of(fb.foreground.transfer) + s_of(fb.free_useful)) / s_of(fb.elapsed);
  const double scans_per_day = free_bps * 86400 / static_cast<double>(disk.capacity_bytes());
  const std::string fig8 = std::string(kSeed003) + " Fig. 8";
  report.figures.push_back(
      {"free bandwidth, whole-disk scan under OLTP", "MB/s", free_bps / 1e6, 4.9, fig8 + ": 4.9 MB/s", true});
  report.figures.push_back(
      {"free bandwidth / full disk bandwidth", "%", 100 * free_bps / full_bps, 21, fig8 + ": ~21 %", true});
  report.figures.push_back(
      {"head utilisation (useful transfer), foreground only", "%", 100 * util_base, 3, fig8 + ": 3 %", true});
  report.figures.push_back({"head utilisation, with the free scan", "%", 100 * util_fb, 24, fig8 + ": 24 %", true});
  report.figures.push_back({"full scans per day", "scans/day", scans_per_day, 47, fig8 + ": ~47 per day", true});
  report.figures.push_back({"realized share of the rotational potential", "%",
                            100 * s_of(fb.free_useful) / s_of(fb.opportunity), 50,
                            std::string(kSeed003) + " Fig. 8b: about half", true});
  report.figures.push_back({"free bandwidth / full disk bandwidth (seed 000 bar)", "%", 100 * free_bps / full_bps, 15,
                            std::string(kSeed000) + " abstract: 15 % of potential bandwidth", true});
  report.figures.push_back({"foreground response time, with / without freeblock", "x",
                            fb.response_ms / base.response_ms, 1.02,
                            std::string(kSeed000) + " Fig. 8: < 2 % impact at 0.3 ms", false});
  char line[256];
  std::snprintf(line, sizeof line,
                "OLTP MPL %d, SPTF: %llu foreground requests in %.0f s virtual, mean response %.2f ms (%.2f ms with "
                "freeblock); scan read %s of the disk in %llu commands",
                mpl, static_cast<unsigned long long>(base.foreground.requests), s_of(base.elapsed), base.response_ms,
                fb.response_ms, pct(fb.scan_fraction).c_str(), static_cast<unsigned long long>(fb.free_commands));
  report.notes.push_back(line);
  report.notes.push_back("margin sweep over " + std::to_string(static_cast<int>(s_of(sweep_duration))) +
                         " s (free MB/s, response ratio): ");
  for (std::size_t i = 0; i < margins.size(); ++i) {
    const OltpResult& r = runs[i];
    const double bps = static_cast<double>(r.free_sectors) * disk.geometry().sector_bytes / s_of(r.elapsed);
    std::snprintf(line, sizeof line, "  margin %.1f ms: %.2f MB/s (%s of full), response x%.4f", ms(margins[i]),
                  bps / 1e6, pct(bps / full_bps).c_str(), r.response_ms / sweep_base.response_ms);
    report.notes.push_back(line);
  }
  report.notes.push_back("margin sweep with every command up to " + std::to_string(ms(kNoise)).substr(0, 3) +
                         " ms late (free MB/s, response ratio against the same noise without the scan): ");
  for (std::size_t i = 0; i < noisy_margins.size(); ++i) {
    const OltpResult& r = noisy[i];
    const double bps = static_cast<double>(r.free_sectors) * disk.geometry().sector_bytes / s_of(r.elapsed);
    std::snprintf(line, sizeof line, "  margin %.1f ms: %.2f MB/s (%s of full), response x%.4f", ms(noisy_margins[i]),
                  bps / 1e6, pct(bps / full_bps).c_str(), r.response_ms / noisy_base.response_ms);
    report.notes.push_back(line);
  }
  const std::size_t noisy_main =
      static_cast<std::size_t>(std::find(noisy_margins.begin(), noisy_margins.end(), 300us) - noisy_margins.begin());
  report.figures.push_back({"foreground response, with / without, 0.2 ms noise, 0.3 ms margin", "x",
                            noisy[noisy_main].response_ms / noisy_base.response_ms, 1.02,
                            std::string(kSeed000) + " Fig. 8: < 2 % impact at 0.3 ms", false});
  if (fb.scan_done >= Nanos(0)) {
    report.notes.push_back("scan finished at " + std::to_string(s_of(fb.scan_done)) + " s; the last 5 % took " +
                           pct(s_of(fb.scan_done - fb.last5_started) / s_of(fb.scan_done)) +
                           " of it (seed 003 Fig. 9: 30 %)");
  } else {
    report.notes.push_back(
        "the scan did not finish in the run: its rate is the early part's, before the tail (seed 003 Fig. 9: the "
        "last 5 % of blocks take 30 % of a scan), so a whole scan's mean is lower");
  }
  std::snprintf(line, sizeof line, "planner: %.1f tracks examined per plan, at most %u", fb.mean_tracks_examined,
                fb.max_tracks_examined);
  report.notes.push_back(line);
  report.notes.push_back(
      "without noise the model is exact: the foreground is never delayed at any margin; seed 000's <2 % is a real "
      "disk's misprediction cost, which the noisy sweep imitates");
  // The search's cut-off (FreeblockConfig::max_tracks_examined): at the scan's start, where most
  // tracks are full of wanted sectors, and in its tail (5 % of the disk left, scattered), where the
  // search walks far for a few sectors.
  report.notes.push_back("planner search cut-off over " + std::to_string(static_cast<int>(s_of(sweep_duration))) +
                         " s (free MB/s, tracks examined per plan mean / max, plans cut off):");
  for (const double left : {1.0, 0.05}) {
    for (const std::uint32_t bound : {0U, 64U, 16U, 4U}) {
      const OltpResult r = oltp_run(sptf, mpl, sweep_duration, FreeblockConfig{.max_tracks_examined = bound}, seed, 0ns,
                                    false, nullptr, 0, left);
      const double bps = static_cast<double>(r.free_sectors) * disk.geometry().sector_bytes / s_of(r.elapsed);
      std::snprintf(
          line, sizeof line, "  %s, bound %s: %.3f MB/s, %.1f / %u tracks, %s cut off, response x%.4f",
          left < 1 ? "tail (5 % left)" : "scan start", bound == 0 ? "none" : std::to_string(bound).c_str(), bps / 1e6,
          r.mean_tracks_examined, r.max_tracks_examined,
          pct(static_cast<double>(r.cut_off) / static_cast<double>(std::max<std::uint64_t>(r.plans, 1))).c_str(),
          r.response_ms / sweep_base.response_ms);
      report.notes.push_back(line);
    }
  }
  part_c(report, quick);
  part_e(report, quick, full_bps);
  if (real_device) part_d(report, quick, dir);
  progress.finish();
  return report;
}

}  // namespace vigil::bench
