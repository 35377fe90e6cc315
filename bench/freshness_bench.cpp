// `vigil bench freshness`: how soon an acknowledged frame can be exported (issue [I]: within 2 s
// of its acknowledgement, at any bitrate). Against a vigild this bench starts (a volume file on
// this machine's disk, profiled first — or --disk sim:PRESET), in steps of K = 1, 32 and 256
// cameras recording pre-encoded H.264 in real time over the wire protocol:
//   a sampler picks a camera, waits for its next durable acknowledgement (the instant the ack
//   arrives on the wire: frames 0 .. N-1 are durable), and asks for export.mp4 of the short range
//   that ends at frame N-1 (from a keyframe 1-2 s before it) until the MP4 holds every frame of
//   that range, frame N-1 included (demuxed and counted: packet-exact, not just "200 OK").
// Reported per K: p50 and p99 of ack → exportable (the successful export's last byte), beside
// the 2 s target and beside the time the same frame waited before the open segment was readable
// (a segment became visible when it closed, at --segment-max or 256 MiB, whichever first: a
// frame waits the rest of its segment, uniform over the segment's length); at the largest K also
// beside the peers (Moonfire NVR: recordings visible within about a minute; Frigate: 10 s
// segments; MediaMTX: 1 s parts). Several samplers ask at once, each on its own connection.
// Errors: exceptions (tool layer); a frame that never becomes exportable (30 s) is counted.
extern "C" {
#include <libavformat/avformat.h>
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/benches.hpp"
#include "bench/export_requests.hpp"
#include "bench/replay.hpp"
#include "common/progress.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace vigil::bench {
namespace {

constexpr double kTargetMs = 2000;
constexpr std::int64_t kFrameUs = 40'000;                 // the replayed clips are 25 fps
constexpr std::int64_t kGopFrames = 25;                   // a keyframe every 25 frames
constexpr std::uint64_t kSegmentMaxBytes = 256ull << 20;  // storage::SegmentWriterOptions's default
constexpr auto kGiveUp = 30s;                             // a frame not exportable by then is a failure
constexpr const char* kMissLine = "msg=\"deadline missed\"";

struct Params {
  std::vector<int> streams{1, 32, 256};
  int samples = 200;  // per step
  int samplers = 4;   // concurrent HTTP clients
  double rate_mbps = 0.5;
  int segment_max_s = 600;  // vigild's --segment-max (its default)
  std::string disk = "this";
  fs::path profile;
  std::uint32_t seed = 1;
  fs::path dir = fs::temp_directory_path();
};

std::vector<int> parse_list(const std::string& v) {
  std::vector<int> out;
  for (std::size_t at = 0; at <= v.size();) {
    const auto comma = std::min(v.find(',', at), v.size());
    out.push_back(std::max(1, std::stoi(v.substr(at, comma - at))));
    at = comma + 1;
  }
  return out;
}

Params parse(const BenchOptions& options) {
  Params p;
  if (options.quick) {
    p.streams = {1, 16};
    p.samples = 20;
    p.samplers = 3;
  }
  const std::string usage =
      " (freshness takes --streams K1,K2,.. --samples N --samplers S --rate-mbps R --segment-max S "
      "--disk this|sim:PRESET --profile FILE --seed N --dir DIR)";
  if (options.args.size() % 2) throw std::invalid_argument("option " + options.args.back() + " needs a value" + usage);
  for (std::size_t i = 0; i < options.args.size(); i += 2) {
    const auto& k = options.args[i];
    const auto& v = options.args[i + 1];
    if (k == "--streams") p.streams = parse_list(v);
    else if (k == "--samples") p.samples = std::max(1, std::stoi(v));
    else if (k == "--samplers") p.samplers = std::max(1, std::stoi(v));
    else if (k == "--rate-mbps") p.rate_mbps = std::stod(v);
    else if (k == "--segment-max") p.segment_max_s = std::max(1, std::stoi(v));
    else if (k == "--disk") p.disk = v;
    else if (k == "--profile") p.profile = v;
    else if (k == "--seed") p.seed = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--dir") p.dir = v;
    else throw std::invalid_argument("unknown option " + k + usage);
  }
  if (p.disk != "this" && !p.disk.starts_with("sim:")) throw std::invalid_argument("--disk takes this or sim:PRESET");
  return p;
}

std::int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Video packets in the MP4 BYTES (0 if it is not one): what an export holds, counted the way a
// player would read it.
std::int64_t mp4_packets(const std::string& bytes) {
  struct Reader {
    const std::string* data;
    std::size_t at = 0;
  } reader{&bytes};
  constexpr int kBuffer = 64 * 1024;
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBuffer));
  AVIOContext* io = avio_alloc_context(
      buffer, kBuffer, 0, &reader,
      [](void* opaque, std::uint8_t* out, int size) -> int {
        auto* r = static_cast<Reader*>(opaque);
        const auto n = std::min<std::size_t>(static_cast<std::size_t>(size), r->data->size() - r->at);
        if (n == 0) return AVERROR_EOF;
        std::memcpy(out, r->data->data() + r->at, n);
        r->at += n;
        return static_cast<int>(n);
      },
      nullptr,
      [](void* opaque, std::int64_t offset, int whence) -> std::int64_t {
        auto* r = static_cast<Reader*>(opaque);
        const auto size = static_cast<std::int64_t>(r->data->size());
        if (whence == AVSEEK_SIZE) return size;
        const std::int64_t base = (whence & 0xff) == SEEK_CUR   ? static_cast<std::int64_t>(r->at)
                                  : (whence & 0xff) == SEEK_END ? size
                                                                : 0;
        const std::int64_t to = base + offset;
        if (to < 0 || to > size) return -1;
        r->at = static_cast<std::size_t>(to);
        return to;
      });
  AVFormatContext* fmt = avformat_alloc_context();
  fmt->pb = io;
  std::int64_t packets = 0;
  if (avformat_open_input(&fmt, nullptr, nullptr, nullptr) == 0) {
    AVPacket* p = av_packet_alloc();
    while (av_read_frame(fmt, p) >= 0) {
      packets += fmt->streams[p->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO ? 1 : 0;
      av_packet_unref(p);
    }
    av_packet_free(&p);
    avformat_close_input(&fmt);
  } else {
    avformat_free_context(fmt);
  }
  av_freep(&io->buffer);
  avio_context_free(&io);
  return packets;
}

// One recording camera's acknowledgements, as its replay thread hears them.
struct Acks {
  std::string camera;
  std::int64_t first_wall_us = 0;  // frame I is at FIRST_WALL_US + I x 40 ms
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t acked = 0;  // frames 0 .. ACKED-1 are durable
  std::chrono::steady_clock::time_point at{};
};

struct Sample {
  double fresh_ms = 0;   // ack → the export holding the frame received whole
  double export_ms = 0;  // that export's own request time
  int attempts = 0;
};

struct StepResult {
  int streams = 0, admitted = 0;
  std::vector<Sample> samples;
  std::size_t failed = 0;
  std::string first_failure;
  std::size_t misses = 0;
  double pct(double p, double Sample::*field) const {
    if (samples.empty()) return 0;
    std::vector<double> v;
    for (const auto& s : samples) v.push_back(s.*field);
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
  }
};

// "32 streams", or "246 of 256 streams" where admission refused the rest (the disk's cycle is full).
std::string streams_label(const StepResult& s) {
  return (s.admitted < s.streams ? std::to_string(s.admitted) + " of " : std::string()) + std::to_string(s.streams) +
         " streams";
}

// One sample: CAM's next acknowledgement, then exports until its last frame is in one.
std::optional<Sample> sample(BenchHttp& http, Acks& cam, std::string& failure) {
  std::uint64_t n = 0;
  std::chrono::steady_clock::time_point acked_at;
  {
    std::unique_lock lock(cam.m);
    const auto had = cam.acked;
    if (!cam.cv.wait_for(lock, 10s, [&] { return cam.acked > had; })) {
      failure = cam.camera + ": no acknowledgement for 10 s";
      return std::nullopt;
    }
    n = cam.acked;
    acked_at = cam.at;
  }
  const auto last = static_cast<std::int64_t>(n) - 1;
  // From a keyframe 1-2 s before the frame (the export starts there exactly), to just past it.
  const std::int64_t key = std::max<std::int64_t>(0, (last / kGopFrames - 1) * kGopFrames);
  const std::int64_t from_us = cam.first_wall_us + key * kFrameUs;
  const std::int64_t to_us = cam.first_wall_us + last * kFrameUs + 1;
  const std::int64_t want = last - key + 1;
  const auto target = "/api/v1/cameras/" + cam.camera + "/export.mp4?from=" + at(from_us) + "&to=" + at(to_us);
  Sample s;
  for (;;) {
    ++s.attempts;
    const auto t = http.get(target);
    const auto now = std::chrono::steady_clock::now();
    const std::int64_t got = t.status == 200 ? mp4_packets(t.body) : 0;
    if (got > want) {  // the range starts at a keyframe and ends at the frame: exactly WANT
      failure = cam.camera + ": the export of frames " + std::to_string(key) + ".." + std::to_string(last) + " held " +
                std::to_string(got) + " frames";
      return std::nullopt;
    }
    if (got == want) {
      s.fresh_ms = std::chrono::duration<double, std::milli>(now - acked_at).count();
      s.export_ms = t.total_ms;
      return s;
    }
    if (now - acked_at > kGiveUp) {
      failure = cam.camera + ": frame " + std::to_string(last) + " not exportable 30 s after its acknowledgement (" +
                (t.status == 200 ? std::to_string(got) + " of " + std::to_string(want) + " frames"
                                 : "HTTP " + std::to_string(t.status) + " " + t.body.substr(0, 160)) +
                ")";
      return std::nullopt;
    }
    std::this_thread::sleep_for(5ms);  // polling: the resolution of the measurement
  }
}

StepResult run_step(const Params& p, int k, const std::string& wire, const std::string& http_addr, const fs::path& data,
                    const ReplayClip& clip, const fs::path& log, Progress& progress, double p0, double p1) {
  StepResult r;
  r.streams = k;
  const double declared_bps = clip.rate_bps() * 1.5;
  std::vector<std::unique_ptr<Acks>> cams;
  for (int i = 0; i < k; ++i) {
    cams.push_back(std::make_unique<Acks>());
    cams.back()->camera = "fresh-" + std::to_string(k) + "-" + std::to_string(i);
  }
  std::vector<ReplayResult> results(static_cast<std::size_t>(k));
  std::vector<std::jthread> threads;
  for (int i = 0; i < k; ++i) {
    Acks* cam = cams[static_cast<std::size_t>(i)].get();
    cam->first_wall_us = wall_now_us();
    std::promise<bool> opened;
    auto answer = opened.get_future();
    threads.emplace_back([&, i, cam, opened = std::move(opened)](std::stop_token stop) mutable {
      results[static_cast<std::size_t>(i)] =
          replay(wire, cam->camera, clip,
                 {.declared_bps = declared_bps,
                  .seconds = 24 * 3600.0,
                  .stop = stop,
                  .on_open = [&opened](bool ok) { opened.set_value(ok); },
                  .first_wall_us = cam->first_wall_us,
                  .on_ack =
                      [cam](std::uint64_t acked, std::chrono::steady_clock::time_point) {
                        {
                          const std::lock_guard lock(cam->m);
                          cam->acked = acked;
                          cam->at = std::chrono::steady_clock::now();
                        }
                        cam->cv.notify_all();
                      }});
    });
    if (!answer.get()) {
      threads.back().join();
      threads.pop_back();
      r.first_failure = cam->camera + " not admitted: " + results[static_cast<std::size_t>(i)].error;
      break;
    }
    ++r.admitted;
  }
  std::this_thread::sleep_for(2s);  // every stream through a cycle or two: the load is steady
  const auto misses_before = count_lines(log, kMissLine);

  std::atomic<int> next{0};
  std::mutex m;
  std::vector<std::jthread> samplers;
  for (int s = 0; s < p.samplers && r.admitted > 0; ++s) {
    samplers.emplace_back([&, s] {
      BenchHttp http(http_addr, data);
      std::mt19937 rng(p.seed * 7919u + static_cast<std::uint32_t>(k * 31 + s));
      for (int i = next++; i < p.samples; i = next++) {
        Acks& cam = *cams[std::uniform_int_distribution<std::size_t>(0, static_cast<std::size_t>(r.admitted) - 1)(rng)];
        std::string failure;
        const auto got = sample(http, cam, failure);
        const std::lock_guard lock(m);
        if (got) r.samples.push_back(*got);
        else if (++r.failed == 1) r.first_failure = failure;
        progress.update(p0 + (p1 - p0) * static_cast<double>(r.samples.size() + r.failed) / p.samples);
      }
    });
  }
  samplers.clear();
  r.misses = count_lines(log, kMissLine) - misses_before;
  for (auto& t : threads) t.request_stop();
  threads.clear();  // every stream half-closed and took its acknowledgements
  for (int i = 0; i < r.admitted; ++i) {
    const auto& res = results[static_cast<std::size_t>(i)];
    if (!res.complete() && r.first_failure.empty()) {
      r.first_failure =
          cams[static_cast<std::size_t>(i)]->camera + ": " +
          (res.error.empty() ? std::to_string(res.acked) + " of " + std::to_string(res.sent) + " acked" : res.error);
    }
  }
  return r;
}

}  // namespace

BenchReport freshness_bench(const BenchOptions& options) {
  const Params p = parse(options);
  const ScratchDir scratch(p.dir, "vigil-bench-freshness");
  const fs::path& dir = scratch.path();
  Progress progress("freshness", 1.0);

  const ReplayClip clip = make_replay_clip(dir, p.rate_mbps * 1e6, "640x360");
  const double clip_bps = clip.rate_bps();
  progress.update(0.03);
  const fs::path profile = profile_for(p.disk, p.profile, dir);
  progress.update(0.1);
  const fs::path log = dir / "vigild.log";
  // Each camera of each step keeps its open segment (the steps last seconds): 4 MiB extents.
  const std::uint64_t extent = 4ull << 20;
  std::uint64_t cameras = 0;
  for (int k : p.streams) cameras += static_cast<std::uint64_t>(k);
  const std::uint64_t volume_bytes = std::max<std::uint64_t>(1ull << 30, (cameras * 3 + 16) * extent);
  // The online model check is off, as in `vigil bench ingest`: the replaying clients share the
  // CPUs with vigild's IO thread.
  BenchVigild vigild(dir / "data",
                     {"--volume", (dir / "vol").string(), "--volume-size", std::to_string(volume_bytes),
                      "--extent-bytes", std::to_string(extent), "--profile", profile.string(), "--model-check-cycles",
                      "0", "--no-camera-pull", "--segment-max", std::to_string(p.segment_max_s)},
                     log);
  progress.update(0.15);

  std::vector<StepResult> steps;
  for (std::size_t i = 0; i < p.streams.size(); ++i) {
    const double p0 = 0.15 + 0.85 * static_cast<double>(i) / static_cast<double>(p.streams.size());
    const double p1 = 0.15 + 0.85 * static_cast<double>(i + 1) / static_cast<double>(p.streams.size());
    steps.push_back(run_step(p, p.streams[i], vigild.wire(), vigild.http(), dir / "data", clip, log, progress, p0, p1));
  }
  progress.finish();

  // Before the open segment was readable, a frame became visible when its segment closed: at
  // --segment-max or at 256 MiB of this rate, whichever comes first; a frame waits the rest of
  // its segment, uniform over its length.
  const double segment_s = std::min(static_cast<double>(p.segment_max_s),
                                    static_cast<double>(kSegmentMaxBytes) / Rate::from_bps(clip_bps).Bps());
  const double before_p50_ms = 0.5 * segment_s * 1000, before_p99_ms = 0.99 * segment_s * 1000;

  BenchReport r;
  r.name = "freshness: durable acknowledgement on the wire -> that frame in an export.mp4 (open segment readable)";
  boost::json::array stream_counts, admitted;
  for (const auto& s : steps) {
    stream_counts.push_back(s.streams);
    admitted.push_back(s.admitted);
  }
  r.parameters = {{"streams_per_step", stream_counts},
                  {"streams_admitted", admitted},
                  {"samples_per_step", p.samples},
                  {"samplers", p.samplers},
                  {"stream_rate_mbps", clip_bps / 1e6},
                  {"declared_rate_mbps", clip_bps * 1.5 / 1e6},
                  {"segment_max_s", p.segment_max_s},
                  {"segment_s_before", segment_s},
                  {"cycle_s", 1},
                  {"export_range", "from a keyframe 1-2 s before the frame to just past it"},
                  {"disk_profile", !p.profile.empty() ? p.profile.string()
                                   : p.disk == "this" ? "this machine's disk (quick profile)"
                                                      : p.disk},
                  {"seed", p.seed}};
  const std::string target = "target (issue [I])";
  const std::string before =
      "before: visible when its segment closed (" + std::to_string(static_cast<int>(segment_s)) + " s segments)";
  bool met = true;
  for (const auto& s : steps) {
    const std::string k = streams_label(s);
    const double p50 = s.pct(0.5, &Sample::fresh_ms), p99 = s.pct(0.99, &Sample::fresh_ms);
    r.figures.push_back({"ack -> exportable p50, " + k, "ms", p50, kTargetMs, target + " for p99", false});
    r.figures.push_back({"ack -> exportable p99, " + k, "ms", p99, kTargetMs, target, false});
    r.figures.push_back({"ack -> exportable p50, " + k + " vs before", "ms", p50, before_p50_ms, before, false});
    r.figures.push_back({"ack -> exportable p99, " + k + " vs before", "ms", p99, before_p99_ms, before, false});
    r.figures.push_back({"  of which the export itself p50, " + k, "ms", s.pct(0.5, &Sample::export_ms), p50,
                         "ack -> exportable p50", false});
    met = met && !s.samples.empty() && s.failed == 0 && p99 <= kTargetMs;
    if (s.admitted < s.streams) {
      r.notes.push_back(k + ": admission refused the rest (" + s.first_failure + ")");
    } else if (!s.first_failure.empty()) {
      r.notes.push_back(k + ": " + std::to_string(s.failed) + " samples failed; first: " + s.first_failure);
    }
    if (s.misses) r.notes.push_back(k + ": vigild logged " + std::to_string(s.misses) + " deadline misses");
  }
  if (!steps.empty()) {
    const auto& s = steps.back();
    const std::string k = streams_label(s);
    const double p50 = s.pct(0.5, &Sample::fresh_ms), p99 = s.pct(0.99, &Sample::fresh_ms);
    r.figures.push_back({"ack -> exportable p99, " + k + " vs Moonfire", "ms", p99, 60'000,
                         "Moonfire NVR: recordings visible within about a minute", false});
    r.figures.push_back(
        {"ack -> exportable p99, " + k + " vs Frigate", "ms", p99, 10'000, "Frigate: 10 s segments", false});
    r.figures.push_back(
        {"ack -> exportable p50, " + k + " vs MediaMTX", "ms", p50, 1'000, "MediaMTX: 1 s parts", false});
  }
  r.notes.push_back(std::string(met ? "meets" : "misses") + " the target: every sampled frame exportable within " +
                    std::to_string(static_cast<int>(kTargetMs)) + " ms of its acknowledgement (p99)");
  r.notes.push_back(
      "each sample: the camera's next durable ack, then export.mp4 polled every 5 ms until it holds every frame up to "
      "the acknowledged one and nothing after it (demuxed and counted)");
  return r;
}

}  // namespace vigil::bench
