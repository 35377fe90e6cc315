// The archive part of `vigil bench failover` (bench/archive_impact.hpp).
#include "bench/archive_impact.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>

#include "archive/s3_client.hpp"
#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/replay.hpp"
#include "bench/seaweedfs_peer.hpp"

namespace fs = std::filesystem;

namespace vigil::bench {
namespace {

constexpr std::int64_t kFrameUs = 40'000;  // the replayed clips are 25 fps
const archive::Credentials kCredentials{"vigilbenchaccess", "vigil-bench-secret-not-real", "us-east-1", "s3"};
constexpr const char* kBucket = "vigil-bench-archive";

std::int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The sum of every series of metric NAME in Prometheus text BODY (one per disk).
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

// One camera's acknowledgement delays, appended on its replay thread only.
struct CameraAcks {
  std::int64_t first_wall_us = 0;
  std::vector<double> delay_ms;
};

// K cameras recording for P.seconds into a fresh vigild (EXTRA: its archive flags, if any).
ArchivePhase run_phase(const ArchiveImpactParams& p, const ReplayClip& clip, const fs::path& dir,
                       const std::vector<std::string>& extra, double* lag_s) {
  std::vector<std::string> args{"--volume",
                                (dir / "vol").string(),
                                "--volume-size",
                                std::to_string(2ull << 30),
                                "--extent-bytes",
                                std::to_string(4ull << 20),
                                "--profile",
                                p.profile.string(),
                                "--model-check-cycles",
                                "0",
                                "--no-camera-pull",
                                "--segment-max",
                                std::to_string(p.segment_max_s)};
  args.insert(args.end(), extra.begin(), extra.end());
  BenchVigild vigild(dir / "data", args, dir / "vigild.log");
  BenchHttp http(vigild.http(), dir / "data");
  const double archived_before = metric_sum(http.get("/metrics").body, "vigil_archive_bytes_total");

  std::vector<std::unique_ptr<CameraAcks>> acks;
  std::vector<ReplayResult> results(static_cast<std::size_t>(p.cameras));
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < p.cameras; ++i) {
      acks.push_back(std::make_unique<CameraAcks>());
      CameraAcks* cam = acks.back().get();
      cam->first_wall_us = wall_now_us();
      threads.emplace_back([&, i, cam] {
        results[static_cast<std::size_t>(i)] =
            replay(vigild.wire(), "archive-" + std::to_string(i), clip,
                   {.declared_bps = clip.rate_bps() * 1.5,
                    .seconds = p.seconds,
                    .first_wall_us = cam->first_wall_us,
                    .on_ack = [cam](std::uint64_t acked) {
                      // The newest durable frame was captured at FIRST + (ACKED - 1) x 40 ms.
                      const auto captured_us = cam->first_wall_us + static_cast<std::int64_t>(acked - 1) * kFrameUs;
                      cam->delay_ms.push_back(static_cast<double>(wall_now_us() - captured_us) / 1e3);
                    }});
      });
    }
  }
  ArchivePhase out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].admitted)
      throw std::runtime_error("camera " + std::to_string(i) + " not admitted: " + results[i].error);
    out.sent += results[i].sent;
    out.acked += results[i].acked;
    out.ack_delay_ms.insert(out.ack_delay_ms.end(), acks[i]->delay_ms.begin(), acks[i]->delay_ms.end());
  }
  out.recorded_bytes = clip.rate_bps() / 8 * p.seconds * p.cameras;
  const std::string metrics = http.get("/metrics").body;
  out.archived_bytes = metric_sum(metrics, "vigil_archive_bytes_total") - archived_before;
  out.archived_segments = metric_sum(metrics, "vigil_archive_segments_total");
  out.failures = metric_sum(metrics, "vigil_archive_failures_total");
  if (lag_s) *lag_s = metric_sum(metrics, "vigil_archive_lag_seconds");
  return out;
}

// Closed segments (with a checksum: the archiver's candidates) without an S3 copy: count, bytes.
std::pair<std::int64_t, double> uncopied(const std::string& conninfo) {
  pqxx::connection c(conninfo);
  pqxx::nontransaction q(c);
  const auto r = q.exec1(
      "SELECT count(*), COALESCE(sum(s.data_bytes), 0) FROM segments s WHERE s.state = 'closed' "
      "AND s.checksum_crc32c <> 0 AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id)");
  return {r[0].as<std::int64_t>(), r[1].as<double>()};
}

// The archiver's own pace: vigild started again on DIR (a phase recorded without the archiver),
// nothing recording, copying the whole backlog; until no candidate is left (bounded).
void drain_backlog(const ArchiveImpactParams& p, const fs::path& dir, const std::vector<std::string>& archive_on,
                   ArchiveImpactResult& r) {
  std::vector<std::string> args{"--volume",        (dir / "vol").string(),
                                "--volume-size",   std::to_string(2ull << 30),
                                "--extent-bytes",  std::to_string(4ull << 20),
                                "--profile",       p.profile.string(),
                                "--no-camera-pull"};
  args.insert(args.end(), archive_on.begin(), archive_on.end());
  BenchVigild vigild(dir / "data", args, dir / "vigild-backlog.log");
  const auto [segments, bytes] = uncopied(vigild.conninfo());
  const auto start = std::chrono::steady_clock::now();
  const auto give_up = start + std::chrono::seconds(120);
  while (uncopied(vigild.conninfo()).first > 0) {
    if (std::chrono::steady_clock::now() > give_up)
      throw std::runtime_error("the archiver did not copy a " + std::to_string(segments) +
                               "-segment backlog in 120 s; see " + (dir / "vigild-backlog.log").string());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.backlog_segments += static_cast<double>(segments);
  r.backlog_bytes += bytes;
  r.backlog_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ArchiveImpactResult measure_archive_impact(const ArchiveImpactParams& p, Progress& progress, double p0, double p1) {
  ArchiveImpactResult r;
  const std::string binary = seaweedfs_binary();
  if (binary.empty() || !fs::exists(binary)) {
    r.skipped = "no SeaweedFS binary (bash deploy/seaweedfs.sh builds it; or set VIGIL_SEAWEEDFS)";
    return r;
  }
  const ScratchDir scratch(p.dir, "vigil-bench-archive");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "weed");
  SeaweedFsPeer weed(binary, dir / "weed", kCredentials);
  if (!weed.make_bucket(kBucket)) throw std::runtime_error("SeaweedFS did not answer; see " + (dir / "weed").string());
  const fs::path secrets = dir / "archive.credentials";
  std::ofstream(secrets) << kCredentials.access_key << "\n" << kCredentials.secret_key << "\n";
  fs::permissions(secrets, fs::perms::owner_read | fs::perms::owner_write);
  const std::vector<std::string> archive_on{"--archive-endpoint",    "127.0.0.1:" + std::to_string(weed.s3_port()),
                                            "--archive-bucket",      kBucket,
                                            "--archive-credentials", secrets.string(),
                                            "--archive-after",       "0"};
  const ReplayClip clip = make_replay_clip(dir, p.rate_mbps * 1e6, "640x360");
  for (int round = 0; round < p.rounds; ++round) {
    for (bool on : {false, true}) {
      const fs::path phase_dir = dir / ((on ? "on-" : "off-") + std::to_string(round));
      fs::create_directories(phase_dir);
      ArchivePhase ph =
          run_phase(p, clip, phase_dir, on ? archive_on : std::vector<std::string>{}, on ? &r.lag_s_at_end : nullptr);
      ArchivePhase& into = on ? r.on : r.off;
      into.ack_delay_ms.insert(into.ack_delay_ms.end(), ph.ack_delay_ms.begin(), ph.ack_delay_ms.end());
      into.sent += ph.sent;
      into.acked += ph.acked;
      into.recorded_bytes += ph.recorded_bytes;
      into.archived_bytes += ph.archived_bytes;
      into.archived_segments += ph.archived_segments;
      into.failures += ph.failures;
      into.seconds += ph.seconds;
      if (on) {
        // The off phase's recording, uncopied: the backlog the archiver copies at its own pace.
        drain_backlog(p, dir / ("off-" + std::to_string(round)), archive_on, r);
        fs::remove_all(dir / ("off-" + std::to_string(round)));
        fs::remove_all(phase_dir);
      }
      progress.update(p0 + (p1 - p0) * (2.0 * round + (on ? 2 : 1)) / (2.0 * p.rounds));
    }
  }
  return r;
}

}  // namespace vigil::bench
