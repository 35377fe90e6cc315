// The archive part of `vigil bench failover` (bench/archive_impact.hpp).
#include "bench/archive_impact.hpp"

#include <chrono>
#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include "archive/s3_client.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/seaweedfs_peer.hpp"

namespace fs = std::filesystem;

namespace vigil::bench {
namespace {

const archive::Credentials kCredentials{"vigilbenchaccess", "vigil-bench-secret-not-real", "us-east-1", "s3"};
constexpr const char* kBucket = "vigil-bench-archive";
const std::vector<std::string> kArchiveMetrics{"vigil_archive_bytes_total", "vigil_archive_segments_total",
                                               "vigil_archive_failures_total", "vigil_archive_lag_seconds"};

// Closed segments (with a checksum: the archiver's candidates) without an S3 copy: count, bytes.
std::pair<std::int64_t, double> uncopied(const std::string& conninfo) {
  pqxx::connection c(conninfo);
  pqxx::nontransaction q(c);
  const auto r = q.exec1(
      "SELECT count(*), COALESCE(sum(s.data_bytes), 0) FROM segments s WHERE s.state = 'closed' "
      "AND s.checksum_crc32c <> 0 AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id)");
  return {r[0].as<std::int64_t>(), r[1].as<double>()};
}

// vigild started again on DIR (a phase recorded without the archiver), nothing recording, copying
// the whole backlog; until no candidate is left (bounded).
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
    const fs::path off_dir = dir / ("off-" + std::to_string(round)), on_dir = dir / ("on-" + std::to_string(round));
    RecordingPhaseSpec spec{.dir = off_dir,
                            .profile = p.profile,
                            .cameras = p.cameras,
                            .seconds = p.seconds,
                            .segment_max_s = 2,
                            .vigild_flags = {},
                            .metrics = kArchiveMetrics};
    r.off.add(run_recording_phase(spec, clip));
    progress.update(p0 + (p1 - p0) * (3.0 * round + 1) / (3.0 * p.rounds));
    spec.dir = on_dir;
    spec.vigild_flags = archive_on;
    r.on.add(run_recording_phase(spec, clip));
    fs::remove_all(on_dir);
    progress.update(p0 + (p1 - p0) * (3.0 * round + 2) / (3.0 * p.rounds));
    // The off phase's recording, uncopied: the backlog the archiver copies at its own pace.
    drain_backlog(p, off_dir, archive_on, r);
    fs::remove_all(off_dir);
    progress.update(p0 + (p1 - p0) * (3.0 * round + 3) / (3.0 * p.rounds));
  }
  return r;
}

}  // namespace vigil::bench
