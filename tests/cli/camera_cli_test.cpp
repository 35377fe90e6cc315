// Pulled cameras end to end with a real RTSP camera (GStreamer's RTSP server): `vigil camera add`
// puts it in the catalog through vigild's HTTP API (an admin token's change; a viewer's is refused), vigild's camera manager records it (live view shows its frames), the
// camera going away and coming back is a gap with its reason on the first stream and a new
// stream after it, `vigil camera remove` stops the recording cleanly, and what was recorded plays
// back. A source whose first RTP packets carry no timestamps records and plays back too.
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <boost/json.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <pqxx/pqxx>

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

}  // namespace

TEST_CASE("vigild records a pulled RTSP camera, across an outage, until it is removed", "[camera][cli][rtsp]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  [[maybe_unused]] auto [camera, port, camera_log] = test::start_rtsp_camera(dir.path());
  test::VigildProcess d(data, {"--volume", (dir.path() / "vol").string(), "--volume-size", std::to_string(256 << 20),
                               "--extent-bytes", std::to_string(4 << 20), "--profile", profile.string(), "--cycle-ms",
                               "200", "--model-check-cycles", "0", "--recorder", VIGIL_CLI_PATH,
                               // 16x of the camera is over the default playback share of this slow disk.
                               "--playback-share", "1"});
  REQUIRE(d.wait_ready());
  auto cli = [&](std::vector<std::string> args, const std::string& log) {
    return test::run_to_exit(VIGIL_CLI_PATH, std::move(args), dir.path() / log);
  };
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(port) + "/cam1";

  // Bad names and URLs never reach the catalog.
  CHECK(cli({"camera", "add", "../etc", url, "--data", data.string()}, "bad1.log").status == 2);
  auto bad_url = cli({"camera", "add", "porch", "rtsp://x y; rm -rf /", "--data", data.string()}, "bad2.log");
  CHECK(bad_url.status == 2);
  CHECK_THAT(bad_url.output, ContainsSubstring("camera URL"));

  // Through vigild's HTTP API with an admin token: a viewer's is refused, and nothing changes.
  auto viewer_token = cli({"token", "create", "--role", "viewer", "--data", data.string()}, "viewer.log");
  REQUIRE(viewer_token.status == 0);
  const auto vgl = viewer_token.output.find("vgl_");
  REQUIRE(vgl != std::string::npos);
  const auto viewer = viewer_token.output.substr(vgl, viewer_token.output.find_first_of("\r\n", vgl) - vgl);
  auto refused = cli({"--token", viewer, "camera", "add", "porch", url, "--data", data.string()}, "refused.log");
  CHECK(refused.status == 4);
  CHECK_THAT(refused.output, ContainsSubstring("needs an admin token"));
  auto listed_by_viewer = cli({"--token", viewer, "camera", "list", "--data", data.string()}, "viewer-list.log");
  CHECK(listed_by_viewer.status == 0);
  CHECK_THAT(listed_by_viewer.output, !ContainsSubstring("porch"));
  auto add = cli({"camera", "add", "porch", url, "--data", data.string()}, "add.log");
  INFO(add.output);
  REQUIRE(add.status == 0);
  pqxx::connection db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  auto scalar = [&](const std::string& sql) {
    pqxx::nontransaction q(db);
    auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
  };
  const std::string streams_of_porch =
      "SELECT count(*) FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'porch'";
  const std::string newest_state =
      "SELECT s.state FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'porch' "
      "ORDER BY s.id DESC LIMIT 1";
  INFO(d.output());
  REQUIRE(eventually([&] { return scalar(newest_state) == "recording"; }));

  // Live view shows the camera's frames as they are recorded.
  auto live = cli({"--server", d.wire(), "play", "--stream", "porch", "--live", "--duration", "2", "-o",
                   (dir.path() / "live.ts").string()},
                  "live.log");
  INFO(live.output);
  CHECK(live.status == 0);
  CHECK_THAT(live.output, ContainsSubstring("keyframes"));

  // The camera goes away: the recorder fails to reconnect (the camera manager logs why) ...
  camera.terminate(SIGTERM, 5s);
  // Its lines are tagged with its name in its ingest worker's log (one worker: one camera).
  const auto recorder_log = data / "log" / "ingest-worker-0.log";
  REQUIRE(eventually(
      [&] { return slurp(recorder_log).find("camera=porch vigil record: cannot open") != std::string::npos; }, 90s));
  CHECK_THAT(d.output(), ContainsSubstring("camera recorder stopped; retrying"));
  // ... and comes back on the same port: recording resumes in a new stream, the outage is a gap.
  [[maybe_unused]] auto [camera2, port2, camera2_log] = test::start_rtsp_camera(dir.path(), port);
  REQUIRE(port2 == port);
  const bool resumed =
      eventually([&] { return std::stoi(scalar(streams_of_porch)) >= 2 && scalar(newest_state) == "recording"; }, 90s);
  if (!resumed) {
    UNSCOPED_INFO("vigild: " << d.output());
    UNSCOPED_INFO("recorder: " << slurp(recorder_log));
  }
  REQUIRE(resumed);
  const auto gap = scalar(
      "SELECT g.reason || ': ' || g.detail FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c "
      "ON c.id = s.camera_id WHERE c.name = 'porch' ORDER BY g.id DESC LIMIT 1");
  INFO(gap);
  CHECK_THAT(gap, ContainsSubstring("source_lost: camera unreachable"));

  auto list = cli({"camera", "list", "--data", data.string()}, "list.log");
  CHECK(list.status == 0);
  CHECK_THAT(list.output, ContainsSubstring("porch"));
  CHECK_THAT(list.output, ContainsSubstring(url));

  // Removed: the recorder stops cleanly and the stream ends as stopped.
  REQUIRE(cli({"camera", "remove", "porch", "--data", data.string()}, "rm.log").status == 0);
  REQUIRE(eventually([&] { return scalar(newest_state) == "stopped"; }));
  CHECK(cli({"camera", "remove", "nobody", "--data", data.string()}, "rm2.log").status == 1);

  // Everything recorded plays back.
  REQUIRE(eventually([&] {
    return scalar(
               "SELECT count(*) FROM segments g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON "
               "c.id = s.camera_id WHERE c.name = 'porch' AND g.state = 'closed'") != "0";
  }));
  auto play = cli({"--server", d.wire(), "play", "--stream", "porch", "--from", "-1h", "--rate", "16", "-o",
                   (dir.path() / "porch.mkv").string()},
                  "play.log");
  INFO(play.output);
  CHECK(play.status == 0);

  // A source with B-frames: the buffered RTSP session sees its timestamps go back and ends before
  // that frame; its worker reads the next connection with decode times two frames behind (RTP has
  // none), still with the buffered session, and it records and plays back with rising decode
  // times and its frames in their reordered presentation order.
  REQUIRE(
      cli({"camera", "add", "yard", "rtsp://127.0.0.1:" + std::to_string(port) + "/bframes", "--data", data.string()},
          "add2.log")
          .status == 0);
  const std::string yard_state =
      "SELECT s.state FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'yard' ORDER BY s.id DESC LIMIT 1";
  REQUIRE(eventually([&] { return scalar(yard_state) == "recording"; }));
  {
    const auto logs = [&] {
      return slurp(data / "log" / "ingest-worker-0.log") + slurp(data / "log" / "ingest-worker-1.log");
    };
    const std::string second_connection =
        "camera=yard vigil record: reading this camera with decode times 2 frames behind (B-frames) from its next "
        "connection";
    CHECK(eventually([&] {
      const auto text = logs();
      const auto at = text.find(second_connection);
      return at != std::string::npos &&
             text.find("camera=yard vigil record: reading h264 320x240 with rtsp", at) != std::string::npos;
    }));
    INFO(logs());
    CHECK_THAT(logs(), ContainsSubstring("camera=yard vigil record: input lost: its frames are reordered (B-frames)"));
    CHECK_THAT(logs(), !ContainsSubstring("camera=yard vigil record: reading h264 320x240 with libavformat"));
    REQUIRE(eventually([&] { return scalar(yard_state) == "recording"; }));
  }
  auto yard_live = cli({"--server", d.wire(), "play", "--stream", "yard", "--live", "--duration", "2", "-o",
                        (dir.path() / "yard.mkv").string()},
                       "yard.log");
  INFO(yard_live.output);
  CHECK(yard_live.status == 0);
  REQUIRE(cli({"camera", "remove", "yard", "--data", data.string()}, "rm3.log").status == 0);
  REQUIRE(eventually([&] { return scalar(yard_state) == "stopped"; }));
  // What was recorded since the reconnect, as vigild exports it: decode times rise, and the
  // B-frames keep their place (some presentation times come before their predecessor's).
  const auto clip = dir.path() / "yard.mp4";
  const auto exported = test::http_request(d.http(), "GET", "/api/v1/cameras/yard/export.mp4?from=-1h");
  REQUIRE(exported.status == 200);
  std::ofstream(clip, std::ios::binary) << exported.body;
  auto probe = test::run_to_exit("/usr/bin/ffprobe",
                                 {"-v", "error", "-show_entries", "packet=pts,dts", "-of", "csv=p=0", clip.string()},
                                 dir.path() / "probe.log");
  REQUIRE(probe.status == 0);
  std::istringstream rows(slurp(dir.path() / "probe.log"));
  std::vector<std::pair<long long, long long>> pts_dts;
  for (std::string row; std::getline(rows, row);) {
    long long pts = 0, dts = 0;
    if (std::sscanf(row.c_str(), "%lld,%lld", &pts, &dts) == 2) pts_dts.emplace_back(pts, dts);
  }
  CHECK(pts_dts.size() >= 25);
  int reordered = 0;
  for (std::size_t i = 1; i < pts_dts.size(); ++i) {
    CHECK(pts_dts[i].second > pts_dts[i - 1].second);
    CHECK(pts_dts[i].second <= pts_dts[i].first);
    reordered += pts_dts[i].first < pts_dts[i - 1].first;
  }
  CHECK(reordered > 0);
  camera2.terminate(SIGTERM, 5s);
  REQUIRE(d.stop(SIGTERM) == 0);
}

TEST_CASE(
    "vigild killed mid-recording: the camera is recorded again after restart, the hole is a gap, "
    "what reached the disk plays back",
    "[camera][cli][rtsp][crash]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  [[maybe_unused]] auto [camera, port, camera_log] = test::start_rtsp_camera(dir.path());
  auto args = test::sim_volume_args(dir.path(), profile, 256, /*pull_cameras=*/true);
  args.insert(args.end(), {"--recorder", VIGIL_CLI_PATH});
  auto d = std::make_unique<test::VigildProcess>(data, args);
  REQUIRE(d->wait_ready());
  REQUIRE(test::run_to_exit(VIGIL_CLI_PATH,
                            {"camera", "add", "porch", "rtsp://127.0.0.1:" + std::to_string(port) + "/cam1", "--data",
                             data.string()},
                            dir.path() / "add.log")
              .status == 0);
  const std::string conninfo = "host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
  auto scalar = [&](const std::string& sql) {
    pqxx::connection db(conninfo);
    pqxx::nontransaction q(db);
    auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
  };
  const std::string newest =
      "SELECT s.id || ' ' || s.state FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'porch' "
      "ORDER BY s.id DESC LIMIT 1";
  REQUIRE(eventually([&] { return scalar(newest).ends_with(" recording"); }));
  const auto first_stream = scalar(newest).substr(0, scalar(newest).find(' '));
  // Two seconds of it go by (watched live, so we know frames flowed), then vigild is killed.
  REQUIRE(test::run_to_exit(VIGIL_CLI_PATH,
                            {"--server", d->wire(), "play", "--stream", "porch", "--live", "--duration", "2", "-o",
                             (dir.path() / "live.ts").string()},
                            dir.path() / "live.log")
              .status == 0);
  d->stop(SIGKILL);
  d.reset();
  REQUIRE(eventually([&] { return test::postgres_processes_under(data).empty(); }, 30s));

  d = std::make_unique<test::VigildProcess>(data, args);
  REQUIRE(d->wait_ready());
  INFO(d->output());
  // The manager of the new vigild starts the camera again: a new stream records.
  REQUIRE(eventually([&] {
    const auto n = scalar(newest);
    return n.ends_with(" recording") && n.substr(0, n.find(' ')) != first_stream;
  }));
  CHECK(scalar("SELECT state FROM streams WHERE id = " + first_stream) == "interrupted");
  CHECK(scalar("SELECT count(*) FROM gaps WHERE reason = 'crash_recovery' AND stream_id = " + first_stream) == "1");
  // What reached the volume before the kill is in the catalog and plays back, every frame of it.
  const auto frames =
      std::stoll(scalar("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed' "
                        "AND stream_id = " +
                        first_stream));
  CHECK(frames >= 25);  // at least the second watched live
  const auto from = scalar("SELECT min(start_us) FROM segments WHERE stream_id = " + first_stream);
  const auto to = scalar("SELECT max(end_us) FROM segments WHERE stream_id = " + first_stream);
  auto play = test::run_to_exit(VIGIL_CLI_PATH,
                                {"--server", d->wire(), "play", "--stream", "porch", "--from",
                                 "@" + std::to_string(std::stod(from) / 1e6), "--to",
                                 "@" + std::to_string(std::stod(to) / 1e6 + 0.001), "--rate", "16", "-o",
                                 (dir.path() / "before-kill.mkv").string()},
                                dir.path() / "play.log");
  INFO(play.output);
  CHECK(play.status == 0);
  CHECK_THAT(play.output, ContainsSubstring(std::to_string(frames) + " packets"));
  camera.terminate(SIGTERM, 5s);
  REQUIRE(d->stop(SIGTERM) == 0);
}

TEST_CASE("vigil camera add and set: retention by days and by size, enable and disable", "[camera][cli]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(data, test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  auto cli = [&](std::vector<std::string> args, const std::string& log) {
    args.insert(args.end(), {"--http", d.http()});
    return test::run_to_exit(VIGIL_CLI_PATH, std::move(args), dir.path() / log);
  };
  auto camera = [&] {
    const auto r = test::http_request(d.http(), "GET", "/api/v1/cameras/porch");
    REQUIRE(r.status == 200);
    return r.json().as_object();
  };
  const std::string url = "rtsp://127.0.0.1:9/none";

  auto add = cli({"camera", "add", "porch", url, "--retention-days", "7", "--retention-size", "500G"}, "add.log");
  INFO(add.output);
  REQUIRE(add.status == 0);
  CHECK(camera().at("retention_days").to_number<std::int64_t>() == 7);
  CHECK(camera().at("retention_bytes").to_number<std::int64_t>() == 500LL << 30);

  // set changes what it names and nothing else, and prints what vigild now holds.
  auto set = cli({"camera", "set", "porch", "--retention-size", "1.5TB", "--disable"}, "set.log");
  INFO(set.output);
  REQUIRE(set.status == 0);
  CHECK_THAT(set.output, ContainsSubstring("porch: disabled, kept 7 days, at most 1.36 TiB"));
  auto c = camera();
  CHECK_FALSE(c.at("enabled").as_bool());
  CHECK(c.at("retention_days").to_number<std::int64_t>() == 7);
  CHECK(c.at("retention_bytes").to_number<std::int64_t>() == 1'500'000'000'000LL);

  auto clear =
      cli({"camera", "set", "porch", "--retention-days", "none", "--retention-size", "none", "--enable"}, "clear.log");
  INFO(clear.output);
  REQUIRE(clear.status == 0);
  CHECK_THAT(clear.output, ContainsSubstring("porch: enabled, kept default, at most default"));
  c = camera();
  CHECK(c.at("enabled").as_bool());
  CHECK(c.at("retention_days").is_null());
  CHECK(c.at("retention_bytes").is_null());

  // The archive policy (schema 0012): set, shown, cleared.
  auto archive =
      cli({"camera", "set", "porch", "--archive-after", "600", "--archive-retention-days", "90"}, "archive.log");
  INFO(archive.output);
  REQUIRE(archive.status == 0);
  CHECK_THAT(archive.output, ContainsSubstring("archived after 600 s, kept there 90 days"));
  c = camera();
  CHECK(c.at("archive_after_s").to_number<std::int64_t>() == 600);
  CHECK(c.at("archive_retention_days").to_number<std::int64_t>() == 90);
  auto unarchive =
      cli({"camera", "set", "porch", "--archive-after", "none", "--archive-retention-days", "none"}, "unarchive.log");
  REQUIRE(unarchive.status == 0);
  CHECK_THAT(unarchive.output, ContainsSubstring("archived after default, kept there default"));
  c = camera();
  CHECK(c.at("archive_after_s").is_null());
  CHECK(c.at("archive_retention_days").is_null());

  // Usage errors (exit 2) change nothing; an unknown camera is a failure (exit 1).
  for (const auto& bad :
       std::vector<std::vector<std::string>>{{"camera", "set", "porch", "--retention-size", "12 apples"},
                                             {"camera", "set", "porch", "--retention-size", "512K"},
                                             {"camera", "set", "porch", "--retention-days", "0"},
                                             {"camera", "set", "porch", "--archive-after", "-1"},
                                             {"camera", "set", "porch", "--archive-retention-days", "0"},
                                             {"camera", "add", "yard", url, "--archive-after", "5"},
                                             {"camera", "add", "yard", url, "--retention-days", "none"},
                                             {"camera", "set", "porch"},
                                             {"camera", "set", "porch", "--enable", "--disable"},
                                             {"camera", "list", "--retention-days", "3"}}) {
    const auto r = cli(bad, "bad.log");
    INFO(r.output);
    CHECK(r.status == 2);
  }
  CHECK(camera().at("retention_days").is_null());
  CHECK(cli({"camera", "set", "nobody", "--disable"}, "nobody.log").status == 1);
  REQUIRE(d.stop(SIGTERM) == 0);
}
