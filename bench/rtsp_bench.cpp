// `vigil bench rtsp`: K simulated RTSP cameras (bench/rtsp_farm.*: one clip encoded once, served
// looped at real time) pulled and recorded by a vigild the bench starts (embedded PostgreSQL, a
// volume file on the real device) and then, against the same cameras in the same run, by
// MediaMTX recording fMP4 segments (bench/mediamtx_peer.*; skipped, and said so, when no binary
// is given). One after the other, so that neither shares the two cores with the other.
// Each side: cameras added all at once through its API; add → first packet stored (Vigil: the
// camera's timeline has a run; MediaMTX: its first segment file has bytes) per camera; over a
// steady window, the CPU of the server and ALL its descendants (vigild's PostgreSQL, recorders
// or ingest workers, whatever they are) per Gbit/s stored, and their proportional memory above
// the idle server per camera; every gap in Vigil's timeline with its reason; the time until all
// K are removed and nothing records. The farm's own CPU is measured separately.
#include <unistd.h>

#include <boost/json.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/benches.hpp"
#include "bench/percentile.hpp"
#include "bench/mediamtx_peer.hpp"
#include "bench/process_tree.hpp"
#include "bench/replay.hpp"
#include "bench/rtsp_farm.hpp"
#include "common/progress.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace vigil::bench {
namespace {

struct RtspOptions {
  int cameras = 50;
  double warmup_s = 10, window_s = 30, start_timeout_s = 120, removal_timeout_s = 60;
  ClipSpec clip;
  fs::path dir_base = fs::temp_directory_path();
  std::string mediamtx;
  bool peer = true;
  bool advertise_rate = true;  // the cameras' SDP says their encoder's bitrate (b=AS), as IP cameras' do
  std::optional<int> model_check_cycles;
  std::optional<int> cycle_ms;  // vigild's --cycle-ms (its buffers per stream are 2 x T x rate)
};

constexpr const char* kOptionList =
    "--cameras K --seconds S --warmup S --rate-mbps R --width W --height H --dir DIR --mediamtx PATH --no-peer "
    "--no-advertised-rate --model-check-cycles N --cycle-ms MS";

// What one side (Vigil or the peer) measured.
struct SideResult {
  int added = 0;
  std::vector<double> first_stored_s;  // add → first packet stored, per camera that recorded
  std::vector<double> ready_s;         // MediaMTX: add → path ready (reading the camera)
  double cpu_cores = 0, gbit_s = 0;
  std::map<std::string, double> cores_by_process;
  std::map<std::string, int> processes;
  double pss_idle_bytes = 0, pss_loaded_bytes = 0;
  std::map<std::string, double> pss_idle_by_process, pss_loaded_by_process;
  double farm_cores = 0;
  double removal_s = -1;  // -1: not all removed within the time-out
  int gaps = 0, gaps_at_removal = 0;
  std::map<std::string, int> gap_reasons, removal_gap_reasons;
  std::size_t deadline_misses = 0;  // vigild's log: cycles whose IO finished late (no loss by itself)
  std::string kept_logs;            // where vigild's logs were kept when something went wrong
  double cores_per_gbit() const { return gbit_s > 0 ? cpu_cores / gbit_s : 0; }
  double memory_per_camera_mb() const { return added ? (pss_loaded_bytes - pss_idle_bytes) / added / 1e6 : 0; }
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

std::string camera_name(int i) { return "cam" + std::to_string(i); }

RtspOptions parse(const BenchOptions& options) {
  RtspOptions o;
  if (options.quick) {
    // Small enough for CI: a 360p clip at 1 Mbit/s, two cameras, a short window.
    o.cameras = 2;
    o.warmup_s = 2;
    o.window_s = 5;
    o.start_timeout_s = 60;
    o.clip = {.width = 640, .height = 360, .fps = 25, .gop = 50, .rate_mbps = 1, .seconds = 10};
  }
  const auto& a = options.args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& k = a[i];
    if (k == "--no-peer") {
      o.peer = false;
      continue;
    }
    if (k == "--no-advertised-rate") {  // no b=AS: each recorder measures a GOP before it opens
      o.advertise_rate = false;
      continue;
    }
    if (k == "--help" || k == "-h") throw std::invalid_argument("options: " + std::string(kOptionList));
    if (i + 1 >= a.size()) throw std::invalid_argument("option " + k + " needs a value");
    const auto& v = a[++i];
    if (k == "--cameras") o.cameras = std::stoi(v);
    else if (k == "--seconds") o.window_s = std::stod(v);
    else if (k == "--warmup") o.warmup_s = std::stod(v);
    else if (k == "--rate-mbps") o.clip.rate_mbps = std::stod(v);
    else if (k == "--width") o.clip.width = std::stoi(v);
    else if (k == "--height") o.clip.height = std::stoi(v);
    else if (k == "--dir") o.dir_base = v;
    else if (k == "--mediamtx") o.mediamtx = v;
    else if (k == "--model-check-cycles") o.model_check_cycles = std::stoi(v);
    else if (k == "--cycle-ms") o.cycle_ms = std::stoi(v);
    else throw std::invalid_argument("unknown option " + k + " (" + std::string(kOptionList) + ")");
  }
  if (o.cameras < 1) throw std::invalid_argument("--cameras must be at least 1");
  // Removal that takes a second per camera (one recorder stopped after another) is measured, not cut.
  o.removal_timeout_s = std::max(o.removal_timeout_s, 2.0 * o.cameras);
  if (!o.mediamtx.empty() && !find_mediamtx(o.mediamtx)) {
    throw std::invalid_argument("--mediamtx " + o.mediamtx + ": not an executable");
  }
  return o;
}

// The CPU cores and Gbit/s of a steady window: the server's tree, the farm's tree, the bytes
// STORED() reports before and after.
template <typename Stored>
void measure_window(SideResult& r, int server, int farm, double window_s, Stored stored) {
  const auto t0 = Clock::now();
  const TreeSample s0 = sample_tree(server), f0 = sample_tree(farm);
  const double b0 = stored();
  sleep_s(window_s);
  const TreeSample s1 = sample_tree(server), f1 = sample_tree(farm);
  const double b1 = stored();
  const double wall = seconds_since(t0);
  r.cpu_cores = (s1.cpu_total_s() - s0.cpu_total_s()) / wall;
  for (const auto& [name, cpu] : s1.cpu_s) {
    const auto before = s0.cpu_s.find(name);
    r.cores_by_process[name] = (cpu - (before == s0.cpu_s.end() ? 0 : before->second)) / wall;
  }
  r.processes = s1.processes;
  r.farm_cores = (f1.cpu_total_s() - f0.cpu_total_s()) / wall;
  r.gbit_s = (b1 - b0) * 8 / wall / 1e9;
  r.pss_loaded_bytes = s1.pss_total_bytes();
  r.pss_loaded_by_process = s1.pss_bytes;
}

// Vigil's timeline of CAMERAS since FROM_S (Unix seconds).
boost::json::array timelines(BenchHttp& http, double from_s, int cameras) {
  std::string names;
  for (int i = 0; i < cameras; ++i) names += (i ? "," : "") + camera_name(i);
  const auto r = http.get("/api/v1/timeline?from=@" + std::to_string(from_s) + "&cameras=" + names);
  if (r.status != 200) throw std::runtime_error("vigild's timeline: " + std::to_string(r.status) + " " + r.body);
  return boost::json::parse(r.body).at("cameras").as_array();
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

SideResult run_vigil(const RtspOptions& o, const CameraFarm& farm, const fs::path& dir, double stream_bps,
                     Progress& progress) {
  SideResult r;
  const fs::path profile = profile_disk_of(dir);
  // Every camera's stream keeps its segments for the whole run (no retention): room for the
  // run at the clip's rate plus two extents each.
  const std::uint64_t extent = 16ull << 20;
  // Recording lasts the start-up, the warm-up, the window and the removal; start-up and removal
  // each took up to about a second per camera (issue 21). The volume file is allocated in full:
  // refuse a run the disk cannot hold rather than fill a shared machine's disk.
  const double run_s = 30 + o.warmup_s + o.window_s + 1.0 * o.cameras;
  const auto volume_bytes = std::max<std::uint64_t>(
      1ull << 30, static_cast<std::uint64_t>(o.cameras * (2.0 * extent + stream_bps / 8 * run_s)) + 8 * extent);
  const auto free_bytes = fs::space(dir).available;
  if (free_bytes < volume_bytes + (2ull << 30)) {
    throw std::runtime_error("the volume file for " + std::to_string(o.cameras) + " cameras needs " +
                             std::to_string(volume_bytes >> 20) + " MiB and 2 GiB spare; " + dir.string() + " has " +
                             std::to_string(free_bytes >> 20) + " MiB free (--dir elsewhere, or fewer --cameras)");
  }
  std::vector<std::string> args{"--volume",       (dir / "vol").string(), "--volume-size", std::to_string(volume_bytes),
                                "--extent-bytes", std::to_string(extent), "--profile",     profile.string()};
  if (o.model_check_cycles) {
    args.push_back("--model-check-cycles");
    args.push_back(std::to_string(*o.model_check_cycles));
  }
  if (o.cycle_ms) {
    args.push_back("--cycle-ms");
    args.push_back(std::to_string(*o.cycle_ms));
  }
  BenchVigild vigild(dir / "data", args, dir / "vigild.log");
  BenchHttp http(vigild.http(), dir / "data");
  sleep_s(1);  // its PostgreSQL's start-up work done: the idle baseline
  const auto idle = sample_tree(vigild.pid());
  r.pss_idle_bytes = idle.pss_total_bytes();
  r.pss_idle_by_process = idle.pss_bytes;

  const double from_s = unix_now_s() - 1;
  std::vector<Clock::time_point> added(static_cast<std::size_t>(o.cameras));
  for (int i = 0; i < o.cameras; ++i) {
    added[static_cast<std::size_t>(i)] = Clock::now();
    const auto res =
        http.send("POST", "/api/v1/cameras",
                  boost::json::serialize(boost::json::object{{"name", camera_name(i)}, {"url", farm.url(i)}}));
    if (res.status != 201)
      throw std::runtime_error("POST /api/v1/cameras: " + std::to_string(res.status) + " " + res.body);
  }
  r.added = o.cameras;
  std::set<std::string> recording;
  const auto start = Clock::now();
  while (static_cast<int>(recording.size()) < o.cameras && seconds_since(start) < o.start_timeout_s) {
    for (const auto& t : timelines(http, from_s, o.cameras)) {
      const auto& c = t.as_object();
      const std::string name(c.at("camera").as_string());
      if (!c.at("runs").as_array().empty() && recording.insert(name).second) {
        r.first_stored_s.push_back(seconds_since(added[std::stoul(name.substr(3))]));
      }
    }
    progress.update(0.25 * static_cast<double>(recording.size()) / o.cameras);
    sleep_s(0.2);
  }
  sleep_s(o.warmup_s);
  progress.update(0.3);
  auto stored = [&] {
    double bytes = 0;
    for (const auto& t : timelines(http, from_s, o.cameras))
      for (const auto& run : t.at("runs").as_array()) bytes += run.at("bytes").to_number<double>();
    return bytes;
  };
  measure_window(r, vigild.pid(), farm.pid(), o.window_s, stored);
  progress.update(0.45);
  auto count_gaps = [&](std::map<std::string, int>* reasons) {
    int n = 0;
    for (const auto& t : timelines(http, from_s, o.cameras)) {
      for (const auto& g : t.at("gaps").as_array()) {
        ++n;
        if (reasons) ++(*reasons)[std::string(g.at("reason").as_string())];
      }
    }
    return n;
  };
  r.gaps = count_gaps(&r.gap_reasons);

  // Removal: every camera deleted at once; done when no timeline says it records (every
  // camera's recording ended; ingest workers outlive their cameras, so processes do not tell).
  const auto removing = Clock::now();
  for (int i = 0; i < o.cameras; ++i) {
    const auto res = http.send("DELETE", "/api/v1/cameras/" + camera_name(i));
    if (res.status != 200) throw std::runtime_error("DELETE camera: " + std::to_string(res.status) + " " + res.body);
  }
  while (seconds_since(removing) < o.removal_timeout_s) {
    bool any = false;
    for (const auto& t : timelines(http, from_s, o.cameras)) any = any || t.at("recording").as_bool();
    if (!any) {
      r.removal_s = seconds_since(removing);
      break;
    }
    sleep_s(0.1);
  }
  std::map<std::string, int> all_reasons;
  r.gaps_at_removal = count_gaps(&all_reasons) - r.gaps;
  for (const auto& [reason, n] : all_reasons) {
    const int before = r.gap_reasons.contains(reason) ? r.gap_reasons.at(reason) : 0;
    if (n > before) r.removal_gap_reasons[reason] = n - before;
  }
  r.deadline_misses = count_lines(dir / "vigild.log", "msg=\"deadline missed\"");
  progress.update(0.5);
  if (r.gaps || r.gaps_at_removal || r.removal_s < 0 || static_cast<int>(r.first_stored_s.size()) < o.cameras) {
    // The story is in vigild's log and its recorders': keep them past the clean-up.
    const fs::path kept = o.dir_base / ("vigil-bench-rtsp-" + std::to_string(::getpid()) + "-logs");
    std::error_code ec;
    fs::create_directories(kept, ec);
    fs::copy_file(dir / "vigild.log", kept / "vigild.log", fs::copy_options::overwrite_existing, ec);
    fs::copy(dir / "data" / "log", kept, fs::copy_options::overwrite_existing | fs::copy_options::recursive, ec);
    if (!ec) r.kept_logs = kept.string();
  }
  return r;
}

SideResult run_mediamtx(const RtspOptions& o, const CameraFarm& farm, const fs::path& binary, const fs::path& dir,
                        Progress& progress) {
  SideResult r;
  MediamtxPeer peer(binary, dir);
  sleep_s(1);
  r.pss_idle_bytes = sample_tree(peer.pid()).pss_total_bytes();
  std::vector<Clock::time_point> added(static_cast<std::size_t>(o.cameras));
  for (int i = 0; i < o.cameras; ++i) {
    added[static_cast<std::size_t>(i)] = Clock::now();
    std::string error;
    if (!peer.add(camera_name(i), farm.url(i), error)) throw std::runtime_error("MediaMTX refused a path: " + error);
  }
  r.added = o.cameras;
  std::set<std::string> ready, stored;
  const auto start = Clock::now();
  while (static_cast<int>(stored.size()) < o.cameras && seconds_since(start) < o.start_timeout_s) {
    for (const auto& name : peer.ready_paths()) {
      if (ready.insert(name).second) r.ready_s.push_back(seconds_since(added[std::stoul(name.substr(3))]));
    }
    for (int i = 0; i < o.cameras; ++i) {
      const auto name = camera_name(i);
      if (!stored.contains(name) && peer.recorded_bytes(name) > 0) {
        stored.insert(name);
        r.first_stored_s.push_back(seconds_since(added[static_cast<std::size_t>(i)]));
      }
    }
    progress.update(0.5 + 0.25 * static_cast<double>(stored.size()) / o.cameras);
    sleep_s(0.2);
  }
  sleep_s(o.warmup_s);
  progress.update(0.8);
  measure_window(r, peer.pid(), farm.pid(), o.window_s,
                 [&] { return static_cast<double>(peer.recorded_bytes_total()); });
  progress.update(0.95);
  const auto removing = Clock::now();
  for (int i = 0; i < o.cameras; ++i) peer.remove(camera_name(i));
  while (seconds_since(removing) < o.removal_timeout_s) {
    if (peer.ready_paths().empty()) {
      r.removal_s = seconds_since(removing);
      break;
    }
    sleep_s(0.1);
  }
  return r;
}

// Memory above idle per camera, by process name: what each part of a server costs per camera.
std::string memory_breakdown(const SideResult& r) {
  std::string s;
  for (const auto& [name, loaded] : r.pss_loaded_by_process) {
    const auto idle = r.pss_idle_by_process.find(name);
    const double above = loaded - (idle == r.pss_idle_by_process.end() ? 0 : idle->second);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s %.2f", s.empty() ? "" : ", ", name.c_str(),
                  r.added ? above / r.added / 1e6 : 0.0);
    s += buf;
  }
  return s;
}

std::string breakdown(const SideResult& r) {
  std::string s;
  for (const auto& [name, cores] : r.cores_by_process) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s x%d %.3f", s.empty() ? "" : ", ", name.c_str(),
                  r.processes.contains(name) ? r.processes.at(name) : 0, cores);
    s += buf;
  }
  return s;
}

}  // namespace

BenchReport rtsp_bench(const BenchOptions& options) {
  const RtspOptions o = parse(options);
  const auto peer_binary = o.peer ? find_mediamtx(o.mediamtx) : std::nullopt;
  const ScratchDir scratch(o.dir_base, "vigil-bench-rtsp");
  const fs::path& dir = scratch.path();
  Progress progress("rtsp", 1.0);

  const fs::path clip = cached_clip(o.clip);
  const double stream_bps = clip_rate_bps(clip, o.clip);
  const CameraFarm farm(clip, o.clip.fps, o.cameras, dir / "farm.log", o.advertise_rate ? o.clip.rate_mbps * 1e6 : 0);
  fs::create_directories(dir / "vigil");
  const SideResult vigil = run_vigil(o, farm, dir / "vigil", stream_bps, progress);
  std::optional<SideResult> peer;
  if (peer_binary) peer = run_mediamtx(o, farm, *peer_binary, dir / "mediamtx", progress);
  progress.finish();

  BenchReport r;
  r.name = "rtsp: K simulated RTSP cameras pulled and recorded by vigild vs MediaMTX";
  r.parameters = {{"cameras", o.cameras},
                  {"clip", std::to_string(o.clip.width) + "x" + std::to_string(o.clip.height) + "p" +
                               std::to_string(o.clip.fps) + " H.264, GOP " + std::to_string(o.clip.gop)},
                  {"stream_rate_mbps", stream_bps / 1e6},
                  {"advertised_rate_mbps", o.advertise_rate ? o.clip.rate_mbps : 0.0},
                  {"vigild_cycle_ms", o.cycle_ms.value_or(1000)},
                  {"offered_gbit_s", o.cameras * stream_bps / 1e9},
                  {"warmup_s", o.warmup_s},
                  {"window_s", o.window_s},
                  {"device", dir.string()},
                  {"peer", peer_binary ? peer_binary->string() : std::string("skipped")}};
  const std::string ref = peer ? "MediaMTX, same cameras, same run" : "MediaMTX skipped";
  const SideResult none;
  const SideResult& p = peer ? *peer : none;
  r.figures.push_back({"cameras recording", "cameras", static_cast<double>(vigil.first_stored_s.size()),
                       peer ? static_cast<double>(p.first_stored_s.size()) : 0.0, ref, true});
  r.figures.push_back({"stored during the window", "Gbit/s", vigil.gbit_s, p.gbit_s, ref, true});
  r.figures.push_back(
      {"CPU per Gbit/s (server + children)", "cores", vigil.cores_per_gbit(), p.cores_per_gbit(), ref, false});
  r.figures.push_back({"CPU of server + children", "cores", vigil.cpu_cores, p.cpu_cores, ref, false});
  r.figures.push_back(
      {"memory per camera (PSS above idle)", "MB", vigil.memory_per_camera_mb(), p.memory_per_camera_mb(), ref, false});
  r.figures.push_back({"add -> first packet stored p50", "s", percentile(vigil.first_stored_s, 0.5),
                       percentile(p.first_stored_s, 0.5), ref + " (first segment bytes)", false});
  r.figures.push_back({"add -> first packet stored p99", "s", percentile(vigil.first_stored_s, 0.99),
                       percentile(p.first_stored_s, 0.99), ref + " (first segment bytes)", false});
  r.figures.push_back({"add -> first packet stored max", "s", percentile(vigil.first_stored_s, 1.0),
                       percentile(p.first_stored_s, 1.0), ref + " (first segment bytes)", false});
  r.figures.push_back({"removal of all cameras", "s", vigil.removal_s, p.removal_s, ref, false});
  r.figures.push_back({"gaps in the timeline while recording", "gaps", static_cast<double>(vigil.gaps), 0,
                       "target: 0 unless the machine is saturated", false});
  r.figures.push_back({"camera farm CPU during the window", "cores", vigil.farm_cores, p.farm_cores,
                       "the farm while " + std::string(peer ? "MediaMTX" : "nobody") + " recorded", false});

  r.notes.push_back("Vigil's processes (cores over the window): " + breakdown(vigil));
  r.notes.push_back("Vigil's memory per camera above idle, by process (MB): " + memory_breakdown(vigil));
  if (peer) {
    r.notes.push_back("MediaMTX's processes (cores over the window): " + breakdown(p));
    char buf[200];
    std::snprintf(buf, sizeof buf, "MediaMTX add -> path ready: p50 %.2f s, p99 %.2f s, max %.2f s (%zu of %d)",
                  percentile(p.ready_s, 0.5), percentile(p.ready_s, 0.99), percentile(p.ready_s, 1.0), p.ready_s.size(),
                  o.cameras);
    r.notes.push_back(buf);
  } else {
    r.notes.push_back(
        "peer skipped: no MediaMTX binary (give --mediamtx PATH or set VIGIL_MEDIAMTX; docs/benchmarks.md says how to "
        "build it): the reference column is 0");
  }
  auto listed = [](const std::map<std::string, int>& reasons) {
    std::string s;
    for (const auto& [reason, n] : reasons) s += (s.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    return s.empty() ? s : " (" + s + ")";
  };
  r.notes.push_back("Vigil gaps while recording: " + std::to_string(vigil.gaps) + listed(vigil.gap_reasons) +
                    "; added at removal: " + std::to_string(vigil.gaps_at_removal) + listed(vigil.removal_gap_reasons) +
                    "; vigild logged " + std::to_string(vigil.deadline_misses) + " deadline misses");
  if (static_cast<int>(vigil.first_stored_s.size()) < o.cameras)
    r.notes.push_back("only " + std::to_string(vigil.first_stored_s.size()) + " of " + std::to_string(o.cameras) +
                      " cameras stored a packet within " + std::to_string(static_cast<int>(o.start_timeout_s)) + " s");
  if (!vigil.kept_logs.empty()) r.notes.push_back("vigild's and its recorders' logs: " + vigil.kept_logs);
  if (vigil.removal_s < 0 || (peer && p.removal_s < 0))
    r.notes.push_back("removal did not finish within the time-out (-1)");
  r.notes.push_back(
      "CPU and memory: the server and all its descendant processes (children, grandchildren; /proc), the farm apart");
  return r;
}

}  // namespace vigil::bench
