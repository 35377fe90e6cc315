// `vigil bench export`: what an operator waits for when they seek or export while the server
// records at full admitted load (target: time to first byte p95 ≤ 300 ms; NVR users report
// seconds to minutes). Against a vigild this bench starts (a volume file on this machine's disk,
// profiled first — or, with --disk sim:wd400bb, admission and the slack test on the simulated
// WD400BB's profile, so admission fills with a few streams):
//   1. archive: a few cameras record pre-encoded H.264 faster than real time, so there is video
//      to fetch (closed segments);
//   2. baseline: N requests of each kind with no recording load (and N more after step 3) —
//        export  = export.mp4 of a random 10–30 s range (TTFB and total time),
//        thumbnail = thumbnail.jpg at a random time,
//        HLS seek = the playlist from a random time, then its first segment (TTFB of the
//                   segment, timed from the playlist request: what a player waits for);
//   3. loaded: recording streams replayed at real time, added one by one until admission
//      refuses (or --max-streams), and while they record, N more requests of each kind.
// The baseline is measured before the load starts and again after it stops (pooled: order
// effects cancel). Times are picked at random (seeded); each phase asks the same requests one
// GOP later than the one before (same shapes, other bytes), so no answer comes from vigild's
// export cache. Reported: p50/p95/max TTFB per kind and phase beside the 300 ms target
// and beside the baseline (ratio loaded/unloaded), and the deadline misses vigild logged during
// the loaded phase (must be 0).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <pqxx/pqxx>
#include <random>
#include <set>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>

#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/export_requests.hpp"
#include "bench/benches.hpp"
#include "bench/replay.hpp"
#include "common/progress.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace vigil::bench {
namespace {

constexpr double kTargetMs = 300;
constexpr const char* kMissLine = "msg=\"deadline missed\"";

struct Params {
  int requests = 40;     // per kind and phase
  int max_streams = 32;  // recording load: added until admission refuses or this many
  int archive_cameras = 3;
  double archive_seconds = 90;  // of video per archive camera
  double rate_mbps = 4;
  std::string disk = "this";  // or sim:wd400bb
  fs::path profile;           // a profile of this disk made before (skips profiling)
  double gap_ms = 250;        // mean pause before each request (exponential): arrivals fall anywhere in a cycle
  std::uint32_t seed = 1;
  fs::path dir = fs::temp_directory_path();
};

Params parse(const BenchOptions& options) {
  Params p;
  if (options.quick) {
    p.requests = 10;
    p.max_streams = 8;
    p.archive_cameras = 2;
    p.archive_seconds = 40;
    p.gap_ms = 50;
  }
  const std::string usage =
      " (export takes --requests N --max-streams K --archive-cameras A --archive-seconds S --rate-mbps R --gap-ms G "
      "--disk this|sim:wd400bb --profile FILE --seed N --dir DIR)";
  if (options.args.size() % 2) throw std::invalid_argument("option " + options.args.back() + " needs a value" + usage);
  for (std::size_t i = 0; i < options.args.size(); i += 2) {
    const auto& k = options.args[i];
    const auto& v = options.args[i + 1];
    if (k == "--requests") p.requests = std::max(1, std::stoi(v));
    else if (k == "--max-streams") p.max_streams = std::max(0, std::stoi(v));
    else if (k == "--archive-cameras") p.archive_cameras = std::max(1, std::stoi(v));
    else if (k == "--archive-seconds") p.archive_seconds = std::max(35.0, std::stod(v));
    else if (k == "--rate-mbps") p.rate_mbps = std::stod(v);
    else if (k == "--gap-ms") p.gap_ms = std::max(0.0, std::stod(v));
    else if (k == "--disk") p.disk = v;
    else if (k == "--profile") p.profile = v;
    else if (k == "--seed") p.seed = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--dir") p.dir = v;
    else throw std::invalid_argument("unknown option " + k + usage);
  }
  if (p.disk != "this" && !p.disk.starts_with("sim:")) throw std::invalid_argument("--disk takes this or sim:PRESET");
  return p;
}

// The rate one more stream could be admitted at now (a refused probe's answer).
double room_bps(const std::string& wire, const ReplayClip& clip) {
  const auto r = replay(wire, "bench-probe", clip, {.declared_bps = 1e12, .seconds = 0});
  return static_cast<double>(r.largest_rate_bps);
}

// Waits until the catalog holds FRAMES frames in closed segments of the archive cameras; returns
// each camera's recorded range. Bounded by progress, not by a total: a loaded machine closes
// segments late, but a catalog where nothing more closes for kNoProgress is stuck.
std::vector<Recorded> wait_for_archive(const std::string& conninfo, std::int64_t frames) {
  constexpr auto kNoProgress = 30s;
  pqxx::connection c(conninfo);
  std::int64_t had = -1;
  auto give_up = std::chrono::steady_clock::now() + kNoProgress;
  for (;;) {
    pqxx::work tx(c);
    const auto have =
        tx.exec1(
              "SELECT COALESCE(sum(s.frame_count), 0) FROM segments s JOIN streams st ON st.id = s.stream_id "
              "JOIN cameras c ON c.id = st.camera_id WHERE s.state = 'closed' AND c.name LIKE 'archive-%'")[0]
            .as<std::int64_t>();
    if (have >= frames) {
      std::vector<Recorded> out;
      for (const auto& row : tx.exec(
               "SELECT c.name, min(s.start_us), max(s.end_us) FROM segments s JOIN streams st ON st.id = s.stream_id "
               "JOIN cameras c ON c.id = st.camera_id WHERE s.state = 'closed' AND c.name LIKE 'archive-%' "
               "GROUP BY c.name ORDER BY c.name")) {
        out.push_back({row[0].as<std::string>(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>()});
      }
      return out;
    }
    const auto now = std::chrono::steady_clock::now();
    if (have > had) {
      had = have;
      give_up = now + kNoProgress;
    } else if (now > give_up) {
      throw std::runtime_error("the archive's segments stopped closing: " + std::to_string(have) + " of " +
                               std::to_string(frames) + " frames in closed segments, none more for 30 s");
    }
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

BenchReport export_bench(const BenchOptions& options) {
  const Params p = parse(options);
  const ScratchDir scratch(p.dir, "vigil-bench-export");
  const fs::path& dir = scratch.path();
  Progress progress("export", 1.0);

  const ReplayClip clip = make_replay_clip(dir, p.rate_mbps * 1e6);
  const double clip_bps = clip.rate_bps(), declared_bps = clip_bps * 1.5;
  progress.update(0.05);
  const fs::path profile = profile_for(p.disk, p.profile, dir);
  progress.update(0.15);
  const fs::path log = dir / "vigild.log";
  // Room for the archive's video and, per load stream, a few 16 MiB extents (the loaded phase
  // lasts seconds).
  const std::uint64_t extent = 16ull << 20;
  const double archive_bytes = Rate::from_bps(clip_bps).bytes_over(p.archive_cameras * p.archive_seconds);
  const std::uint64_t volume_bytes =
      std::max<std::uint64_t>(1ull << 30, static_cast<std::uint64_t>(archive_bytes * 1.5) +
                                              static_cast<std::uint64_t>(p.max_streams * 4 + 16) * extent);
  // The online model check is off, as in `vigil bench ingest`: the replaying clients share the
  // CPUs with vigild's IO thread (and with --disk sim:... the profile is not of this device).
  BenchVigild vigild(dir / "data",
                     {"--volume", (dir / "vol").string(), "--volume-size", std::to_string(volume_bytes),
                      "--extent-bytes", std::to_string(extent), "--profile", profile.string(), "--model-check-cycles",
                      "0", "--no-camera-pull"},
                     log);
  const std::string wire = vigild.wire();
  progress.update(0.2);

  // 1. The archive, recorded at SPEED x real time within what admission has room for.
  const double room0 = room_bps(wire, clip);
  const double speed = std::clamp(0.7 * room0 / p.archive_cameras / declared_bps, 1.0, 8.0);
  std::vector<ReplayResult> archive(static_cast<std::size_t>(p.archive_cameras));
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < p.archive_cameras; ++i) {
      threads.emplace_back([&, i] {
        archive[static_cast<std::size_t>(i)] =
            replay(wire, "archive-" + std::to_string(i), clip,
                   {.declared_bps = declared_bps * speed, .seconds = p.archive_seconds, .speed = speed});
      });
    }
  }
  std::int64_t archived_frames = 0;
  for (const auto& a : archive) {
    if (!a.complete()) {
      throw std::runtime_error(
          "recording the archive failed: " +
          (a.error.empty() ? std::to_string(a.acked) + " of " + std::to_string(a.sent) + " acknowledged" : a.error));
    }
    archived_frames += static_cast<std::int64_t>(a.sent);
  }
  const auto recorded = wait_for_archive(vigild.conninfo(), archived_frames);
  progress.update(0.3);

  // 2. Baseline: no recording load.
  BenchHttp http(vigild.http(), dir / "data");
  Picker pick(recorded, p.seed);
  // Warm-up, not counted: the connection, the catalog pool, PostgreSQL's and the codecs' caches.
  (void)measure(http, pick.rounds(1, 0), 0, progress, 0.3, 0.33);
  const auto rounds = pick.rounds(p.requests, p.gap_ms);
  const auto misses_start = count_lines(log, kMissLine);
  const PhaseResult before = measure(http, rounds, 0, progress, 0.33, 0.5);

  // 3. Loaded: streams added until admission refuses, then the same requests while they record.
  std::vector<ReplayResult> load(static_cast<std::size_t>(p.max_streams));
  std::vector<std::jthread> threads;
  std::string refusal;
  int admitted = 0;
  for (int i = 0; i < p.max_streams; ++i) {
    std::promise<bool> opened;
    auto answer = opened.get_future();
    threads.emplace_back([&, i, opened = std::move(opened)](std::stop_token stop) mutable {
      load[static_cast<std::size_t>(i)] =
          replay(wire, "load-" + std::to_string(i), clip,
                 {.declared_bps = declared_bps, .seconds = 24 * 3600.0, .stop = stop, .on_open = [&opened](bool ok) {
                    opened.set_value(ok);
                  }});
    });
    if (!answer.get()) {
      threads.back().join();
      refusal = load[static_cast<std::size_t>(i)].error;
      break;
    }
    ++admitted;
  }
  const double room = room_bps(wire, clip);
  const double admitted_bps = admitted * declared_bps;
  std::this_thread::sleep_for(2s);  // every stream through a cycle or two: the load is steady
  const auto misses_before = count_lines(log, kMissLine);
  const double cpu0 = cpu_seconds_of(vigild.pid());
  const auto t_loaded = std::chrono::steady_clock::now();
  const PhaseResult loaded = measure(http, rounds, 1'000'000, progress, 0.5, 0.8);
  const double loaded_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loaded).count();
  const double cpu = cpu_seconds_of(vigild.pid()) - cpu0;
  for (auto& t : threads) t.request_stop();
  threads.clear();  // joined: every load stream half-closed and took its acknowledgements
  const auto misses_loaded = count_lines(log, kMissLine) - misses_before;
  const auto misses_run = count_lines(log, kMissLine);
  std::size_t incomplete = 0;
  for (int i = 0; i < admitted; ++i) incomplete += load[static_cast<std::size_t>(i)].complete() ? 0 : 1;
  std::this_thread::sleep_for(2s);  // the streams' last cycles written: no load left
  const PhaseResult after = measure(http, rounds, 2'000'000, progress, 0.8, 1.0);
  const PhaseResult idle = pooled(before, after);
  progress.finish();

  BenchReport r;
  r.name =
      "export: seek/export time to first byte while recording at full admitted load (HTTP -> catalog -> "
      "interactive IO on the cycle scheduler -> MP4/JPEG/fMP4)";
  r.parameters = {{"requests_per_kind_and_phase", p.requests},
                  {"disk_profile", !p.profile.empty() ? p.profile.string()
                                   : p.disk == "this" ? "this machine's disk (quick profile)"
                                                      : p.disk},
                  {"cycle_s", 1},
                  {"stream_rate_mbps", clip_bps / 1e6},
                  {"declared_rate_mbps", declared_bps / 1e6},
                  {"archive_cameras", p.archive_cameras},
                  {"archive_seconds_each", p.archive_seconds},
                  {"archive_speed", speed},
                  {"load_streams_admitted", admitted},
                  {"load_streams_max", p.max_streams},
                  {"load_stopped_by", admitted < p.max_streams ? "admission refused" : "--max-streams"},
                  {"admitted_share_of_capacity", admitted_bps / std::max(1.0, admitted_bps + room)},
                  {"loaded_phase_s", loaded_s},
                  {"vigild_cpu_cores_loaded", cpu / loaded_s},
                  {"mean_gap_ms", p.gap_ms},
                  {"seed", p.seed}};
  const std::string target = "target (issue [F])", base = "baseline: no load, before + after, same run";
  auto kind = [&](const std::string& name, const Samples& l, const Samples& u) {
    r.figures.push_back({name + " TTFB p95, loaded", "ms", l.p95(), kTargetMs, target, false});
    r.figures.push_back({name + " TTFB p50, loaded", "ms", l.p50(), kTargetMs, target + " for p95", false});
    r.figures.push_back({name + " TTFB max, loaded", "ms", l.max(), kTargetMs, target + " for p95", false});
    r.figures.push_back({name + " TTFB p95, loaded vs unloaded", "ms", l.p95(), u.p95(), base, false});
    r.figures.push_back({name + " TTFB p50, loaded vs unloaded", "ms", l.p50(), u.p50(), base, false});
  };
  kind("export 10-30 s", loaded.exports, idle.exports);
  r.figures.push_back({"export 10-30 s total p95, loaded vs unloaded", "ms",
                       loaded.exports.pct(loaded.exports.total, 0.95), idle.exports.pct(idle.exports.total, 0.95), base,
                       false});
  kind("thumbnail", loaded.thumbnails, idle.thumbnails);
  kind("HLS seek (playlist + segment)", loaded.seeks, idle.seeks);
  // The scheduler's own totals, from its heartbeat (every 60 cycles) if one came.
  if (const auto m = last_field(log, "msg=\"disk cycles\"", "misses"); !m.empty()) {
    r.parameters["scheduler_heartbeat_misses_total"] = m;
    r.parameters["scheduler_heartbeat_interactive_total"] = last_field(log, "msg=\"disk cycles\"", "interactive");
  }
  r.figures.push_back(
      {"deadline misses, loaded phase", "misses", static_cast<double>(misses_loaded), 0, "target: 0", false});
  r.figures.push_back({"load streams admitted", "streams", static_cast<double>(admitted),
                       static_cast<double>(p.max_streams), "--max-streams", true});

  const bool fast =
      loaded.exports.p95() <= kTargetMs && loaded.thumbnails.p95() <= kTargetMs && loaded.seeks.p95() <= kTargetMs;
  r.notes.push_back(std::string(fast && misses_loaded == 0 ? "meets" : "misses") +
                    " the target: TTFB p95 <= 300 ms for every kind under load, 0 deadline misses (" +
                    std::to_string(misses_loaded) + " in the loaded phase, " +
                    std::to_string(misses_run - misses_start) + " from the baseline on)");
  r.notes.push_back(
      admitted < p.max_streams
          ? "load: " + std::to_string(admitted) + " streams, then admission refused: " + refusal
          : "load: " + std::to_string(admitted) + " streams (--max-streams) use " +
                std::to_string(static_cast<int>(100 * admitted_bps / std::max(1.0, admitted_bps + room))) +
                " % of what admission would admit: this machine's CPUs, not its disk, bound the load "
                "(--disk sim:wd400bb fills admission with a few streams)");
  if (idle.failed + loaded.failed > 0) {
    r.notes.push_back(std::to_string(idle.failed + loaded.failed) + " requests failed; first: " +
                      (idle.first_failure.empty() ? loaded.first_failure : idle.first_failure));
  }
  if (incomplete > 0) r.notes.push_back(std::to_string(incomplete) + " load streams did not record every packet");
  r.notes.push_back("unloaded export TTFB p95 before the load " + std::to_string(before.exports.p95()) +
                    " ms, after it " + std::to_string(after.exports.p95()) + " ms; thumbnail " +
                    std::to_string(before.thumbnails.p95()) + " / " + std::to_string(after.thumbnails.p95()) +
                    " ms; HLS seek " + std::to_string(before.seeks.p95()) + " / " + std::to_string(after.seeks.p95()) +
                    " ms");
  r.notes.push_back("bytes exported per phase (loaded): " + std::to_string(static_cast<long long>(loaded.bytes)));
  if (misses_loaded > 0 || idle.failed + loaded.failed > 0) {
    const fs::path kept = p.dir / ("vigil-bench-export-" + std::to_string(::getpid()) + "-vigild.log");
    std::error_code ec;
    fs::copy_file(log, kept, fs::copy_options::overwrite_existing, ec);
    if (!ec) r.notes.push_back("vigild's log kept: " + kept.string());
  }
  return r;
}

}  // namespace vigil::bench
