// Pulled cameras served by ingest workers, end to end with a real RTSP camera (GStreamer's RTSP
// server; 50 cameras pull its shared /cam1 mount): 50 cameras added at once through the HTTP API
// all record (a recording stream, frames stored) with no hole that has no reason; removed at once,
// every recording ends cleanly (stopped, nothing left unstored in the workers' logs). And a worker
// killed with SIGKILL: its cameras record again, after a gap whose reason names the worker's death.
// Times (add -> first segment, removal) are printed, never asserted: they depend on the machine.
#include <signal.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <iterator>
#include <iostream>
#include <pqxx/pqxx>
#include <regex>
#include <vector>

#include "common/child_process.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every ingest worker's log in DATA/log, joined.
std::string worker_logs(const std::filesystem::path& data) {
  std::string all;
  for (const auto& e : std::filesystem::directory_iterator(data / "log")) {
    if (e.path().filename().string().starts_with("ingest-worker-")) all += slurp(e.path());
  }
  return all;
}

struct Catalog {
  pqxx::connection db;
  explicit Catalog(const std::filesystem::path& data)
      : db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil") {}
  std::string scalar(const std::string& sql) {
    pqxx::nontransaction q(db);
    auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
  }
  long long number(const std::string& sql) {
    const auto s = scalar(sql);
    return s.empty() ? 0 : std::stoll(s);
  }
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

TEST_CASE("50 pulled cameras added at once all record without an unexplained hole, and all end when removed",
          "[camera][cli][rtsp][ingest]") {
  constexpr int kCameras = 50;
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  // 50 cameras at 256 kbit/s fit the simulated disk (it admits ~32 of 3 Mbit/s).
  [[maybe_unused]] auto [camera, port, camera_log] = test::start_rtsp_camera(dir.path(), 0, 256);
  auto args = test::sim_volume_args(dir.path(), profile, 512, /*pull_cameras=*/true);
  // 1 s cycles: the simulated disk's seeks (~13 ms a stream a cycle) leave room for 50 streams.
  const auto cycle = std::find(args.begin(), args.end(), "--cycle-ms");
  REQUIRE(cycle != args.end());
  *std::next(cycle) = "1000";
  args.insert(args.end(), {"--recorder", VIGIL_CLI_PATH, "--ingest-workers", "2"});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  const test::HttpApi api{d.http()};
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(port) + "/cam1";
  auto name = [](int i) { return "cam" + std::to_string(100 + i); };

  // All at once: one request each, in parallel.
  std::vector<std::future<int>> adds;
  for (int i = 0; i < kCameras; ++i) {
    adds.push_back(std::async(std::launch::async, [&, i] {
      return api.call("POST", "/api/v1/cameras", R"({"name":")" + name(i) + R"(","url":")" + url + R"("})").status;
    }));
  }
  for (auto& a : adds) REQUIRE(a.get() == 201);

  Catalog cat(data);
  const std::string ours = "c.name LIKE 'cam1%'";
  INFO(d.output());
  // Every camera records: a stream in state recording, with frames in a segment.
  const bool all_record = eventually(
      [&] {
        return cat.number(
                   "SELECT count(DISTINCT c.id) FROM cameras c JOIN streams s ON s.camera_id = c.id JOIN "
                   "segments g ON g.stream_id = s.id WHERE s.state = 'recording' AND " +
                   ours) == kCameras;
      },
      120s);
  if (!all_record) {
    UNSCOPED_INFO("camera: " << slurp(camera_log));
    UNSCOPED_INFO("workers: " << worker_logs(data).substr(0, 20000));
  }
  REQUIRE(all_record);
  // Add -> admitted (its stream opened): the session sends what it read ahead at once, so its
  // first packet is stored within one cycle after that. Per camera, in seconds. (A segment's
  // catalog row comes with the batcher's progress rows, later: not a measure of the first packet.)
  std::vector<double> admitted_s;
  {
    pqxx::nontransaction q(cat.db);
    for (const auto& row : q.exec("SELECT (min(s.started_at_us) - c.created_at_us) / 1e6 FROM cameras c JOIN streams s "
                                  "ON s.camera_id = c.id WHERE " +
                                  ours + " GROUP BY c.id")) {
      admitted_s.push_back(row[0].as<double>());
    }
  }
  REQUIRE(admitted_s.size() == kCameras);
  std::cout << "ingest: " << kCameras << " cameras added at once: add -> admitted p50 " << percentile(admitted_s, 0.5)
            << " s, p99 " << percentile(admitted_s, 0.99) << " s, max " << percentile(admitted_s, 1.0)
            << " s (first packet stored within one 1 s cycle after)\n";

  // Worker memory: the resident set of each worker, and its proportional share (shared library
  // pages split among the processes that map them), per camera.
  long long rss_kb = 0, pss_kb = 0;
  int workers = 0;
  const std::regex started(R"(msg="ingest worker started" worker=\d+ pid=(\d+))");
  const auto out = d.output();
  for (std::sregex_iterator it(out.begin(), out.end(), started), end; it != end; ++it) {
    std::ifstream status("/proc/" + (*it)[1].str() + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("VmRSS:")) {
        rss_kb += std::stoll(line.substr(6));
        ++workers;
      }
    }
    std::ifstream rollup("/proc/" + (*it)[1].str() + "/smaps_rollup");
    for (std::string line; std::getline(rollup, line);) {
      if (line.starts_with("Pss:")) pss_kb += std::stoll(line.substr(4));
    }
  }
  std::cout << "ingest: " << workers << " workers, RSS " << rss_kb / 1024 << " MiB in all ("
            << static_cast<double>(rss_kb) / 1024 / kCameras << " MiB per camera), PSS " << pss_kb / 1024 << " MiB ("
            << static_cast<double>(pss_kb) / 1024 / kCameras << " MiB per camera)\n";
  CHECK(workers == 2);

  // Everything removed at once: every recording ends (stopped), each having sent what it read.
  const auto remove_start = std::chrono::steady_clock::now();
  std::vector<std::future<int>> removes;
  for (int i = 0; i < kCameras; ++i) {
    removes.push_back(
        std::async(std::launch::async, [&, i] { return api.call("DELETE", "/api/v1/cameras/" + name(i)).status; }));
  }
  for (auto& r : removes) REQUIRE(r.get() == 200);
  REQUIRE(eventually(
      [&] {
        return cat.number(
                   "SELECT count(*) FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE s.ended_at_us IS "
                   "NULL AND " +
                   ours) == 0;
      },
      60s));
  const double removal_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - remove_start).count();
  std::cout << "ingest: " << kCameras << " cameras removed at once: every recording ended in " << removal_s << " s\n";
  // Every stream ended cleanly; the sessions say every packet read was acknowledged.
  CHECK(
      cat.number("SELECT count(*) FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE s.state <> 'stopped' AND " +
                 ours) == 0);
  REQUIRE(eventually([&] {
    const auto logs = worker_logs(data);
    int summaries = 0;
    for (auto at = logs.find("acknowledged as durable"); at != std::string::npos;
         at = logs.find("acknowledged as durable", at + 1))
      ++summaries;
    return summaries >= kCameras;
  }));
  const auto logs = worker_logs(data);
  CHECK_THAT(logs, !ContainsSubstring("were not stored"));
  // No hole without a reason: a camera's second stream (if it had one) follows a gap that says why.
  CHECK(cat.number("SELECT count(*) FROM gaps WHERE detail IS NULL OR detail = ''") == 0);
  const auto per_camera_streams =
      cat.number("SELECT max(n) FROM (SELECT count(*) AS n FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE " +
                 ours + " GROUP BY c.id) t");
  const auto gaps = cat.number("SELECT count(*) FROM gaps");
  INFO("streams per camera at most " << per_camera_streams << ", gaps " << gaps);
  if (per_camera_streams > 1) CHECK(gaps > 0);

  camera.terminate(SIGTERM, 5s);
  REQUIRE(d.stop(SIGTERM) == 0);
}

TEST_CASE("an ingest worker killed with SIGKILL: its cameras record again after a gap that names its death",
          "[camera][cli][rtsp][ingest]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  [[maybe_unused]] auto [camera, port, camera_log] = test::start_rtsp_camera(dir.path(), 0, 512);
  auto args = test::sim_volume_args(dir.path(), profile, 256, /*pull_cameras=*/true);
  args.insert(args.end(), {"--recorder", VIGIL_CLI_PATH, "--ingest-workers", "2"});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  const test::HttpApi api{d.http()};
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(port) + "/cam1";
  for (const auto* n : {"a1", "a2", "a3", "a4"}) {
    REQUIRE(
        api.call("POST", "/api/v1/cameras", R"({"name":")" + std::string(n) + R"(","url":")" + url + R"("})").status ==
        201);
  }
  Catalog cat(data);
  INFO(d.output());
  if (!eventually([&] { return cat.number("SELECT count(*) FROM streams WHERE state = 'recording'") == 4; }, 60s)) {
    FAIL("not all 4 cameras recording after 60 s; the workers' logs:\n" << worker_logs(data));
  }

  // Worker 0's pid, and which cameras it records.
  const auto out = d.output();
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex(R"(msg="ingest worker started" worker=0 pid=(\d+))")));
  const pid_t pid = std::stoi(m[1].str());
  std::vector<std::string> its;
  const std::regex on_it("msg=\"camera recorder started\" camera=(\\S+) pid=" + m[1].str() + " worker=0");
  for (std::sregex_iterator it(out.begin(), out.end(), on_it), end; it != end; ++it) its.push_back((*it)[1].str());
  REQUIRE(!its.empty());
  REQUIRE(its.size() < 4);  // the other worker's cameras are not touched
  REQUIRE(::kill(pid, SIGKILL) == 0);

  // Each of its cameras: a new stream recording, after a gap whose reason is the worker's death.
  for (const auto& n : its) {
    INFO(n);
    const std::string of = " FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = '" + n + "'";
    REQUIRE(eventually(
        [&] {
          return cat.number("SELECT count(*)" + of) >= 2 &&
                 cat.scalar("SELECT s.state" + of + " ORDER BY s.id DESC LIMIT 1") == "recording";
        },
        60s));
    const auto gap = cat.scalar(
        "SELECT g.reason || ': ' || g.detail FROM gaps g JOIN streams s ON s.id = g.stream_id "
        "JOIN cameras c ON c.id = s.camera_id WHERE c.name = '" +
        n + "' ORDER BY g.id DESC LIMIT 1");
    CHECK_THAT(gap, ContainsSubstring("ingest worker died (signal 9)"));
  }
  // The other worker's cameras kept their first stream.
  CHECK(cat.number("SELECT count(*) FROM streams") == 4 + static_cast<long long>(its.size()));
  CHECK_THAT(d.output(), ContainsSubstring("ingest worker died; its cameras start again"));

  camera.terminate(SIGTERM, 5s);
  REQUIRE(d.stop(SIGTERM) == 0);
}
