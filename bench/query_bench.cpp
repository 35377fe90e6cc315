// `vigil bench query`: the HTTP API's timeline query on a seeded catalog, end to end (HTTP on
// loopback → catalog pool → PostgreSQL → JSON) against a vigild this bench starts. Two shapes an
// operator asks for: one camera over 30 days of segments (target p95 ≤ 50 ms) and 256 cameras over
// 24 hours (target p95 ≤ 250 ms). Segments are 512 s long (256 MiB at 4 Mbit/s, the default
// segment size), with a gap every few hours, so the row counts are those of a real month.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <pqxx/pqxx>
#include <stdexcept>
#include <unistd.h>

#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/benches.hpp"
#include "common/progress.hpp"

namespace fs = std::filesystem;

namespace vigil::bench {
namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kSegmentUs = 512 * kSecond;

// CAMERAS cameras, each one stream recorded over [T0, T0 + SPAN) in 512 s segments, a 30 s
// gap (source_lost) every GAP_EVERY; all in set-based SQL (seconds, not minutes).
void seed(pqxx::connection& c, const std::string& prefix, int cameras, std::int64_t t0, std::int64_t span,
          std::int64_t gap_every) {
  pqxx::work tx(c);
  const auto disk = tx.exec1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('bench', 'bench-" +
                             tx.esc(prefix) + "', 1099511627776) RETURNING id")[0]
                        .as<std::int64_t>();
  const auto volume =
      tx.exec_params1(
            "INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes) VALUES ($1, 'bench', 1099511627776, "
            "268435456) RETURNING id",
            disk)[0]
          .as<std::int64_t>();
  tx.exec_params0("INSERT INTO cameras (name) SELECT $1::text || '-' || i FROM generate_series(1, $2::int) i", prefix,
                  cameras);
  tx.exec_params0(
      "INSERT INTO streams (camera_id, disk_id, codec, declared_rate_bps, admitted_rate_bps, state, started_at_us, "
      "ended_at_us) SELECT id, $2, 'h264', 4000000, 4000000, 'stopped', $3::bigint, $3::bigint + $4::bigint FROM cameras "
      "WHERE name LIKE $1::text || '-%'",
      prefix, disk, t0, span);
  tx.exec_params0(
      "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count, checksum_crc32c, "
      "closed_at_us) SELECT s.id, $2::bigint, 'closed', t, least(t + $5::bigint, $3::bigint + $4::bigint), 268435456, "
      "12800, 0, t + $5::bigint FROM streams s JOIN cameras c ON c.id = s.camera_id, "
      "generate_series($3::bigint, $3::bigint + $4::bigint - 1, $5::bigint) t "
      "WHERE c.name LIKE $1::text || '-%' AND (t - $3::bigint) % $6::bigint >= 30000000",  // the gap's 30 s are not recorded
      prefix, volume, t0, span, kSegmentUs, gap_every);
  tx.exec_params0(
      "INSERT INTO gaps (stream_id, start_us, end_us, reason, detail) SELECT s.id, t, t + 30000000, 'source_lost', "
      "'camera unreachable' FROM streams s JOIN cameras c ON c.id = s.camera_id, "
      "generate_series($2::bigint, $2::bigint + $3::bigint - 1, $4::bigint) t WHERE c.name LIKE $1::text || '-%'",
      prefix, t0, span, gap_every);
  tx.exec0("ANALYZE");
  tx.commit();
}

struct Latency {
  double p50_ms = 0, p95_ms = 0, max_ms = 0;
  std::size_t bytes = 0;
};

Latency measure(BenchHttp& client, const std::string& target, int n, Progress& progress, double& done, double total) {
  std::vector<double> ms;
  std::size_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    const auto r = client.get(target);
    ms.push_back(r.total_ms);
    if (r.status != 200) throw std::runtime_error(target + " answered " + std::to_string(r.status));
    bytes = r.body.size();
    progress.update(++done / total);
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * static_cast<double>(ms.size())))];
  };
  return {pct(0.5), pct(0.95), ms.back(), bytes};
}

}  // namespace

BenchReport query_bench(const BenchOptions& options) {
  const int requests = options.quick ? 40 : 300;
  if (!options.args.empty())
    throw std::invalid_argument("unknown option " + options.args.front() + " (query takes --quick, --json)");
  const ScratchDir scratch(fs::temp_directory_path(), "vigil-bench-query");
  const fs::path& dir = scratch.path();

  Progress progress("query", 1.0);
  BenchVigild vigild(dir / "data", {"--no-camera-pull"}, dir / "vigild.log");
  const std::int64_t day = 86'400 * kSecond;
  const std::int64_t t0 = 20'000 * day;  // a midnight, UTC
  {
    pqxx::connection c(vigild.conninfo());
    seed(c, "month", 1, t0, 30 * day, 6 * 3600 * kSecond);
    seed(c, "site", 256, t0, day, 4 * 3600 * kSecond);
  }
  progress.update(0.1);
  BenchHttp client(vigild.http(), dir / "data");
  const auto at = [](std::int64_t us) { return "%40" + std::to_string(us / kSecond); };  // @UNIX
  const std::string one = "/api/v1/cameras/month-1/timeline?from=" + at(t0) + "&to=" + at(t0 + 30 * day);
  std::string site_list;
  for (int i = 1; i <= 256; ++i) site_list += (i > 1 ? "," : "") + std::string("site-") + std::to_string(i);
  const std::string many_named = "/api/v1/timeline?from=" + at(t0) + "&to=" + at(t0 + day) + "&cameras=" + site_list;
  double done = 0;
  const double total = 2.0 * requests / 0.9;
  (void)client.get(one);  // warm: the pool's connection, PostgreSQL's caches
  (void)client.get(many_named);
  const auto month = measure(client, one, requests, progress, done, total);
  const auto site = measure(client, many_named, requests, progress, done, total);
  progress.finish();

  BenchReport r;
  r.name = "query: timeline over HTTP on a seeded catalog (HTTP -> catalog pool -> PostgreSQL -> JSON)";
  r.parameters = {{"requests_per_shape", requests},
                  {"segment_s", 512},
                  {"month_segments", 30 * 86400 / 512},
                  {"site_cameras", 256},
                  {"site_segments_per_camera", 86400 / 512 + 1}};
  r.figures.push_back({"timeline p95, 1 camera x 30 days", "ms", month.p95_ms, 50, "target (issue [F])", false});
  r.figures.push_back({"timeline p50, 1 camera x 30 days", "ms", month.p50_ms, 50, "target p95 (issue [F])", false});
  r.figures.push_back({"timeline p95, 256 cameras x 24 h", "ms", site.p95_ms, 250, "target (issue [F])", false});
  r.figures.push_back({"timeline p50, 256 cameras x 24 h", "ms", site.p50_ms, 250, "target p95 (issue [F])", false});
  r.notes.push_back("response sizes: " + std::to_string(month.bytes) + " bytes (1 camera), " +
                    std::to_string(site.bytes) + " bytes (256 cameras); slowest: " + std::to_string(month.max_ms) +
                    " / " + std::to_string(site.max_ms) + " ms");
  r.notes.push_back(std::string(month.p95_ms <= 50 && site.p95_ms <= 250 ? "meets" : "misses") +
                    " the targets (p95 <= 50 ms and <= 250 ms)");
  return r;
}

}  // namespace vigil::bench
