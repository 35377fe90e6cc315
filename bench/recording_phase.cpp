#include "bench/recording_phase.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/export_requests.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace vigil::bench {
namespace {

std::int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One camera's acknowledgement delays, appended on its replay thread only.
struct CameraAcks {
  std::int64_t first_wall_us = 0;
  std::vector<double> delay_ms;
};

std::map<std::string, double> read_metrics(BenchHttp& http, const std::vector<std::string>& names) {
  const std::string body = http.get("/metrics").body;
  std::map<std::string, double> out;
  for (const auto& n : names) out[n] = metric_sum(body, n);
  return out;
}

}  // namespace

double metric_sum(const std::string& body, const std::string& name) {
  double sum = 0;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name) || line.size() == name.size()) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

void RecordingPhase::add(const RecordingPhase& o) {
  ack_delay_ms.insert(ack_delay_ms.end(), o.ack_delay_ms.begin(), o.ack_delay_ms.end());
  interactive_ms.insert(interactive_ms.end(), o.interactive_ms.begin(), o.interactive_ms.end());
  interactive_failed += o.interactive_failed;
  sent += o.sent;
  acked += o.acked;
  recorded_bytes += o.recorded_bytes;
  seconds += o.seconds;
  for (const auto& [k, v] : o.metric_delta) metric_delta[k] += v;
  for (const auto& [k, v] : o.metric_end) metric_end[k] = v;
}

RecordingPhase run_recording_phase(const RecordingPhaseSpec& spec, const ReplayClip& clip) {
  fs::create_directories(spec.dir);
  std::vector<std::string> args{"--volume",
                                (spec.dir / "vol").string(),
                                "--volume-size",
                                std::to_string(2ull << 30),
                                "--extent-bytes",
                                std::to_string(4ull << 20),
                                "--profile",
                                spec.profile.string(),
                                "--model-check-cycles",
                                "0",
                                "--no-camera-pull",
                                "--segment-max",
                                std::to_string(spec.segment_max_s)};
  args.insert(args.end(), spec.vigild_flags.begin(), spec.vigild_flags.end());
  BenchVigild vigild(spec.dir / "data", args, spec.dir / "vigild.log");
  BenchHttp http(vigild.http(), spec.dir / "data");
  const auto before = read_metrics(http, spec.metrics);

  RecordingPhase out;
  std::vector<std::unique_ptr<CameraAcks>> acks;
  std::vector<ReplayResult> results(static_cast<std::size_t>(spec.cameras));
  std::atomic<bool> recording{true};
  const auto start = std::chrono::steady_clock::now();
  {
    // The interactive reader: camera 0's seconds [now − 3 s, now − 1 s] as export.mp4, every 250 ms.
    std::jthread reader([&] {
      BenchHttp reads(vigild.http(), spec.dir / "data");
      std::this_thread::sleep_for(3s);
      while (recording.load()) {
        const std::int64_t now_us = wall_now_us();
        const auto t = reads.get("/api/v1/cameras/phase-0/export.mp4?from=" + at(now_us - 3'000'000) +
                                 "&to=" + at(now_us - 1'000'000));
        if (t.status == 200 && t.body.find("moov") != std::string::npos) {
          out.interactive_ms.push_back(t.total_ms);
        } else {
          ++out.interactive_failed;
        }
        std::this_thread::sleep_for(250ms);
      }
    });
    std::vector<std::jthread> cameras;
    for (int i = 0; i < spec.cameras; ++i) {
      acks.push_back(std::make_unique<CameraAcks>());
      CameraAcks* cam = acks.back().get();
      cam->first_wall_us = wall_now_us();
      cameras.emplace_back([&, i, cam] {
        results[static_cast<std::size_t>(i)] = replay(
            vigild.wire(), "phase-" + std::to_string(i), clip,
            {.declared_bps = clip.rate_bps() * 1.5,
             .seconds = spec.seconds,
             .first_wall_us = cam->first_wall_us,
             .on_ack = [cam](std::uint64_t, std::chrono::steady_clock::time_point newest_sent) {
               // From the newest durable packet's send, not its nominal capture time: a burst
               // goes out up to 80 ms early, which made quick runs' delays negative.
               cam->delay_ms.push_back(
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - newest_sent).count());
             }});
      });
    }
    for (auto& t : cameras) t.join();
    recording = false;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].admitted)
      throw std::runtime_error("camera " + std::to_string(i) + " not admitted: " + results[i].error);
    out.sent += results[i].sent;
    out.acked += results[i].acked;
    out.ack_delay_ms.insert(out.ack_delay_ms.end(), acks[i]->delay_ms.begin(), acks[i]->delay_ms.end());
  }
  out.recorded_bytes = clip.rate_bps() / 8 * spec.seconds * spec.cameras;
  out.metric_end = read_metrics(http, spec.metrics);
  for (const auto& [k, v] : out.metric_end) out.metric_delta[k] = v - before.at(k);
  return out;
}

}  // namespace vigil::bench
