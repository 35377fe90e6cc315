// `vigil bench ingest`: K pre-encoded streams replayed at real time through the wire protocol
// into a vigild it starts (embedded PostgreSQL, a volume file on the real device, the disk
// profiled first). The replaying client runs in its own process (replay_process.hpp), all K
// streams starting at once (a start-up burst), pinned away from the CPU vigild's IO threads are
// pinned to where the machine has two or more; vigild's CPU and the generator's are measured
// apart (/proc/PID/stat, wait4). K doubles until a step has a deadline miss or loses a packet.
// Reported: the largest K sustained with 0 misses, vigild's and the generator's CPU per Gbit/s,
// misses by cause, model recalibrations, the IO threads' priority, and memory per stream (the
// double buffer vigild reserves, and the measured RSS growth per stream). Target: at most 0.25
// core per Gbit/s; 1,000 x 4 Mbit/s with 0 misses.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "bench/bench_vigild.hpp"
#include "bench/benches.hpp"
#include "bench/replay.hpp"
#include "bench/replay_process.hpp"
#include "common/progress.hpp"

namespace fs = std::filesystem;

namespace vigil::bench {

BenchReport ingest_bench(const BenchOptions& options) {
  int max_streams = options.quick ? 16 : 128;
  int min_streams = 1;
  double rate_mbps = 4, seconds = options.quick ? 4 : 10;
  fs::path dir_base = fs::temp_directory_path();
  int extent_mib = 16;  // smaller for a thousand streams: the volume is allocated in full
  for (std::size_t i = 0; i + 1 < options.args.size(); i += 2) {
    const auto& k = options.args[i];
    const auto& v = options.args[i + 1];
    if (k == "--max-streams") max_streams = std::stoi(v);
    else if (k == "--streams") min_streams = max_streams = std::stoi(v);  // one step at exactly K
    else if (k == "--rate-mbps") rate_mbps = std::stod(v);
    else if (k == "--seconds") seconds = std::stod(v);
    else if (k == "--dir") dir_base = v;
    else if (k == "--extent-mib") extent_mib = std::stoi(v);
    else
      throw std::invalid_argument(
          "unknown option " + k +
          " (--max-streams K | --streams K, --rate-mbps R --seconds S --dir DIR --extent-mib M)");
  }
  if (options.args.size() % 2) throw std::invalid_argument("option " + options.args.back() + " needs a value");
  const ScratchDir scratch(dir_base, "vigil-bench-ingest");
  const fs::path& dir = scratch.path();

  Progress progress("ingest", 1.0);
  const double rate_bps = rate_mbps * 1e6;
  const ReplayClip clip = make_replay_clip(dir, rate_bps);
  const double clip_bps = clip.rate_bps();
  // The disk's profile, quick, on a scratch file beside the volume.
  const fs::path profile = profile_disk_of(dir);
  const fs::path log = dir / "vigild.log";
  // Every stream of every step keeps its segment (no retention here): the extents its bytes
  // take (at the declared rate), plus one.
  std::uint64_t total_streams = 0;
  for (int k = min_streams; k <= max_streams; k *= 2) total_streams += static_cast<std::uint64_t>(k);
  const std::uint64_t extent = static_cast<std::uint64_t>(std::max(1, extent_mib)) << 20;
  const auto per_stream = static_cast<std::uint64_t>(clip_bps * 1.5 / 8 * seconds / static_cast<double>(extent)) + 2;
  const std::uint64_t volume_bytes = std::max<std::uint64_t>(1ull << 30, (total_streams * per_stream + 8) * extent);
  // The online model check is on: it takes the IO thread's waits for a CPU off what it observes,
  // and a trip recalibrates the model instead of pausing admission (docs/admission.md). The IO
  // threads ask for real-time priority (--io-priority realtime, the default).
  BenchVigild vigild(dir / "data",
                     {"--volume", (dir / "vol").string(), "--volume-size", std::to_string(volume_bytes),
                      "--extent-bytes", std::to_string(extent), "--profile", profile.string(),
                      // every stream is one connection from this machine's address
                      "--max-connections-per-address", std::to_string(std::max(256, max_streams + 16))},
                     log);
  const std::string wire = vigild.wire();
  // The IO thread on CPU 0, the load generator on the others (with two CPUs or more); vigild's
  // other threads where the kernel puts them.
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int> generator_cpus;
  int io_pinned = 0;
  if (cpus >= 2) {
    io_pinned = pin_threads(vigild.pid(), "vigil-io", {0});
    for (int c = 1; c < cpus; ++c) generator_cpus.push_back(c);
  }
  double best_generator_cpu = 0;
  // The last step, sustained or not: what the generator reached and what vigild spent on it.
  int last_k = 0;
  double last_gbit = 0, last_cpu_per_gbit = 0, last_generator_cpu = 0;
  std::size_t last_acked = 0;

  int best = 0;
  double best_cpu_per_gbit = 0, buffer_per_stream = 0, rss_per_stream = 0, best_gbit = 0;
  double best_buffer = 0, best_rss = 0;
  std::string stopped_because;
  int steps = 0;
  for (int k = min_streams; k <= max_streams; k *= 2) ++steps;
  int step = 0;
  for (int k = min_streams; k <= max_streams; k *= 2, ++step) {
    const auto misses_before = count_lines(log, "msg=\"deadline missed\"");
    const double cpu0 = cpu_seconds_of(vigild.pid()), rss0 = rss_bytes_of(vigild.pid());
    const auto t0 = std::chrono::steady_clock::now();
    // RSS half-way through, from a watcher thread while the generator process runs.
    std::jthread rss_watch([&](std::stop_token st) {
      const auto at = t0 + std::chrono::duration<double>(seconds / 2);
      while (!st.stop_requested() && std::chrono::steady_clock::now() < at) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (!st.stop_requested()) rss_per_stream = (rss_bytes_of(vigild.pid()) - rss0) / k;
    });
    const auto generated = replay_in_process(wire, "ingest-" + std::to_string(k), k, clip,
                                             {.declared_bps = clip_bps * 1.5, .seconds = seconds}, generator_cpus);
    rss_watch.request_stop();
    rss_watch.join();
    const auto& results = generated.results;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds_of(vigild.pid()) - cpu0;
    const auto misses = count_lines(log, "msg=\"deadline missed\"") - misses_before;
    bool ok = misses == 0;
    if (misses) stopped_because = std::to_string(misses) + " deadline misses";
    double bytes = 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      const bool good = r.complete();
      if (!good && stopped_because.empty()) {
        stopped_because = "stream " + std::to_string(i) + ": " +
                          (!r.error.empty() ? r.error
                                            : std::to_string(r.refused) + " refused, " + std::to_string(r.acked) +
                                                  " of " + std::to_string(r.sent) + " acknowledged");
      }
      ok = ok && good;
      bytes += static_cast<double>(r.sent) * clip.bytes / static_cast<double>(clip.packets.size());
      if (r.buffer_bytes) buffer_per_stream = 2.0 * static_cast<double>(r.buffer_bytes);
    }
    const double gbit_s = Rate::from_bytes_over(bytes, wall).bps() / 1e9;
    last_k = k;
    last_gbit = gbit_s;
    last_cpu_per_gbit = gbit_s > 0 ? (cpu / wall) / gbit_s : 0;
    last_generator_cpu = gbit_s > 0 ? (generated.cpu_seconds / wall) / gbit_s : 0;
    last_acked = static_cast<std::size_t>(
        std::count_if(results.begin(), results.end(), [](const ReplayResult& x) { return x.complete(); }));
    progress.update(static_cast<double>(step + 1) / steps);
    if (!ok) {
      stopped_because = "K = " + std::to_string(k) + " failed: " + stopped_because;
      break;
    }
    best = k;
    best_buffer = buffer_per_stream;
    best_rss = rss_per_stream;
    best_gbit = gbit_s;
    best_cpu_per_gbit = gbit_s > 0 ? (cpu / wall) / gbit_s : 0;
    best_generator_cpu = gbit_s > 0 ? (generated.cpu_seconds / wall) / gbit_s : 0;
  }
  const auto misses_of = [&](const char* cause) {
    return static_cast<double>(count_lines(log, std::string("cause=") + cause));
  };
  const double recalibrations = static_cast<double>(count_lines(log, "disk model optimistic: recalibrated"));
  const bool io_normal = count_lines(log, "disk IO thread at normal priority") > 0;
  progress.finish();
  if (!stopped_because.empty()) {
    // The failed step's story is in vigild's log: keep it past the clean-up.
    const fs::path kept = dir_base / ("vigil-bench-ingest-" + std::to_string(::getpid()) + "-vigild.log");
    std::error_code ec;
    fs::copy_file(log, kept, fs::copy_options::overwrite_existing, ec);
    if (!ec) stopped_because += " (vigild's log: " + kept.string() + ")";
  }

  BenchReport r;
  r.name = "ingest: pre-encoded H.264 streams replayed at real time into vigild over the wire protocol";
  r.parameters = {{"stream_rate_mbps", clip_bps / 1e6},
                  {"declared_rate_mbps", clip_bps * 1.5 / 1e6},
                  {"seconds_per_step", seconds},
                  {"max_streams_tried", max_streams},
                  {"cycle_s", 1},
                  {"device", dir.string()}};
  r.figures.push_back({"streams sustained (0 misses, all acked)", "streams", static_cast<double>(best),
                       static_cast<double>(max_streams), "the largest K tried", true});
  r.figures.push_back(
      {"vigild CPU per Gbit/s ingested", "cores", best_cpu_per_gbit, 0.25, "target (issue [E])", false});
  r.figures.push_back({"ingested at that K", "Gbit/s", best_gbit, best_gbit, "measured", true});
  r.figures.push_back(
      {"last step: K", "streams", static_cast<double>(last_k), static_cast<double>(last_k), "measured", true});
  r.figures.push_back({"last step: streams complete (all acked)", "streams", static_cast<double>(last_acked),
                       static_cast<double>(last_k), "K", true});
  r.figures.push_back({"last step: ingested", "Gbit/s", last_gbit, last_gbit, "measured", true});
  r.figures.push_back(
      {"last step: vigild CPU per Gbit/s", "cores", last_cpu_per_gbit, 0.25, "target (issue [E])", false});
  r.figures.push_back(
      {"last step: generator CPU per Gbit/s", "cores", last_generator_cpu, last_generator_cpu, "measured", false});
  r.figures.push_back(
      {"load generator CPU per Gbit/s", "cores", best_generator_cpu, best_generator_cpu, "measured", false});
  r.figures.push_back({"misses, cause slow_io", "misses", misses_of("slow_io"), 0, "target", false});
  r.figures.push_back({"misses, cause cpu_starved", "misses", misses_of("cpu_starved"), 0, "target", false});
  r.figures.push_back({"model recalibrations", "times", recalibrations, 0, "measured", false});
  r.figures.push_back({"memory per stream: double buffer", "MB", best_buffer / 1e6,
                       2 * Rate::from_bps(clip_bps * 1.5).Bps() / 1e6, "2 x T x declared rate", false});
  r.figures.push_back(
      {"memory per stream: measured RSS growth", "MB", best_rss / 1e6, best_buffer / 1e6, "the double buffer", false});
  if (!stopped_because.empty()) r.notes.push_back(stopped_because);
  if (best > 0) {
    r.notes.push_back(std::string(best_cpu_per_gbit <= 0.25 ? "meets" : "misses") +
                      " the target of <= 0.25 core per Gbit/s at K = " + std::to_string(best));
  } else {
    r.notes.push_back("no step succeeded: nothing to measure");
  }
  r.notes.push_back(std::string("vigild's IO threads at ") + (io_normal ? "normal" : "real-time") + " priority; " +
                    (cpus >= 2 ? std::to_string(io_pinned) +
                                     " pinned to CPU 0, the load generator (its own process) "
                                     "on CPUs 1-" +
                                     std::to_string(cpus - 1)
                               : std::string("one CPU: nothing pinned")));
  if (best == max_streams)
    r.notes.push_back("no step failed: the limit is above " + std::to_string(max_streams) + " streams");
  return r;
}

}  // namespace vigil::bench
