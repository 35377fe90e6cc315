// Substreams end to end (issue 22) with a real RTSP camera (GStreamer: /cam1 at 320x240 and its
// sub stream /cam1-sub at 320x180): a pulled camera with a substream_url records both, as two
// streams of the same camera (role main and sub), each admitted and reconnected on its own. Every
// read path picks the track: the HTTP export, HLS and thumbnail with stream=sub are the sub
// stream's pictures (ffprobe's sizes), without it the main one's; the timeline lists the sub
// stream's runs apart (HTTP `substream`); wire playback of a sub stream is track_recording_test's.
// A camera without a substream answers 404 for stream=sub and is otherwise unchanged; clearing
// substream_url stops the sub stream alone.
#include <sys/wait.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <pqxx/pqxx>

#include "common/child_process.hpp"
#include "proto/vigil.pb.h"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/proxy_process.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;

namespace {

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// ffprobe's width and height of FILE's video stream, as "WxH".
std::string size_of(const std::filesystem::path& file, const std::filesystem::path& dir) {
  const auto out = dir / (file.filename().string() + ".size");
  REQUIRE(test::run_to_exit("/usr/bin/ffprobe",
                            {"-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of",
                             "csv=s=x:p=0", "-o", out.string(), file.string()},
                            dir / "ffprobe.log")
              .status == 0);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST_CASE("a pulled camera's substream is recorded as its own track and every read path can pick it",
          "[camera][cli][rtsp][substream]") {
  test::TempDir dir;
  const auto d_ = dir.path();
  const auto data = d_ / "data";
  const auto profile = test::make_sim_profile(d_);
  [[maybe_unused]] auto [camera, port, camera_log] = test::start_rtsp_camera(d_);
  test::VigildProcess d(data, {"--volume", (d_ / "vol").string(), "--volume-size", std::to_string(256 << 20),
                               "--extent-bytes", std::to_string(4 << 20), "--profile", profile.string(), "--cycle-ms",
                               "200", "--model-check-cycles", "0", "--recorder", VIGIL_CLI_PATH});
  REQUIRE(d.wait_ready());
  const std::string rtsp = "rtsp://127.0.0.1:" + std::to_string(port);
  const test::HttpApi api{d.http()};
  auto added = api.call("POST", "/api/v1/cameras",
                        boost::json::serialize(boost::json::object{{"name", "porch"},
                                                                   {"url", rtsp + "/cam1"},
                                                                   {"substream_url", rtsp + "/cam1-sub"}}));
  INFO(added.body);
  REQUIRE(added.status == 201);
  auto plain = api.call("POST", "/api/v1/cameras",
                        boost::json::serialize(boost::json::object{{"name", "yard"}, {"url", rtsp + "/cam1"}}));
  REQUIRE(plain.status == 201);

  pqxx::connection db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  auto scalar = [&](const std::string& sql) {
    pqxx::nontransaction q(db);
    auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
  };
  // Both tracks record, each with segments that reach a few seconds (the open one's row included).
  auto recorded_s = [&](const std::string& cam, const std::string& role) {
    return scalar(
        "SELECT COALESCE(max(g.end_us) - min(g.start_us), 0) / 1000000 FROM segments g JOIN streams s ON s.id = "
        "g.stream_id JOIN cameras c ON c.id = s.camera_id WHERE c.name = '" +
        cam + "' AND s.role = '" + role + "' AND s.state = 'recording'");
  };
  INFO(d.output());
  REQUIRE(eventually(
      [&] {
        const auto main_s = recorded_s("porch", "main"), sub_s = recorded_s("porch", "sub"),
                   yard_s = recorded_s("yard", "main");
        return !main_s.empty() && std::stoll(main_s) >= 3 && !sub_s.empty() && std::stoll(sub_s) >= 3 &&
               !yard_s.empty() && std::stoll(yard_s) >= 3;
      },
      90s));
  CHECK(scalar("SELECT count(*) FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'yard' AND "
               "s.role = 'sub'") == "0");

  // The camera API lists a main and a sub stream of porch, with their own sizes.
  auto cam = api.get("/api/v1/cameras/porch");
  REQUIRE(cam.status == 200);
  bool main_listed = false, sub_listed = false;
  const auto cam_json = cam.json();  // held: the loop walks into it
  for (const auto& s : cam_json.at("streams").as_array()) {
    const auto& o = s.as_object();
    if (o.at("state").as_string() != "recording") continue;
    if (o.at("role").as_string() == "main") main_listed = o.at("height").as_int64() == 240;
    if (o.at("role").as_string() == "sub") sub_listed = o.at("height").as_int64() == 180;
    CHECK(o.at("media_kind").as_string() == "video");
  }
  CHECK(main_listed);
  CHECK(sub_listed);

  const std::string base = "/api/v1/cameras/porch/";
  auto get = [&](const std::string& target) { return test::http_request(d.http(), "GET", target); };
  {  // Export: stream=sub is the sub stream's pictures, main (or none) the main one's.
    auto sub = get(base + "export.mp4?from=-1m&stream=sub");
    INFO(sub.head << sub.body.substr(0, 300));
    REQUIRE(sub.status == 200);
    write_file(d_ / "sub.mp4", sub.body);
    CHECK(size_of(d_ / "sub.mp4", d_) == "320x180");
    auto main = get(base + "export.mp4?from=-1m&stream=main");
    REQUIRE(main.status == 200);
    write_file(d_ / "main.mp4", main.body);
    CHECK(size_of(d_ / "main.mp4", d_) == "320x240");
    auto unnamed = get(base + "export.mp4?from=-1m");
    REQUIRE(unnamed.status == 200);
    write_file(d_ / "unnamed.mp4", unnamed.body);
    CHECK(size_of(d_ / "unnamed.mp4", d_) == "320x240");
    auto bad = get(base + "export.mp4?from=-1m&stream=third");
    CHECK(bad.status == 400);
    CHECK_THAT(bad.body, ContainsSubstring("'stream' must be 'main' or 'sub'"));
    // A camera without a substream: 404 saying so; its main stream as before.
    auto none = get("/api/v1/cameras/yard/export.mp4?from=-1m&stream=sub");
    CHECK(none.status == 404);
    CHECK_THAT(none.body, ContainsSubstring("has no sub video stream"));
    auto yard = get("/api/v1/cameras/yard/export.mp4?from=-1m");
    REQUIRE(yard.status == 200);
    write_file(d_ / "yard.mp4", yard.body);
    CHECK(size_of(d_ / "yard.mp4", d_) == "320x240");
  }
  {  // HLS: the sub stream's playlist names its URIs with stream=sub; its init segment is the sub's.
    auto pl = get(base + "hls.m3u8?from=-1m&stream=sub");
    INFO(pl.body);
    REQUIRE(pl.status == 200);
    const auto uris = test::playlist_uris(pl.body);
    REQUIRE(uris.size() >= 2);
    for (const auto& u : uris) CHECK_THAT(u, ContainsSubstring("stream=sub"));
    auto init = get(base + uris.front());
    REQUIRE(init.status == 200);
    auto seg = get(base + uris[1]);
    REQUIRE(seg.status == 200);
    write_file(d_ / "hls-sub.mp4", init.body + seg.body);
    CHECK(size_of(d_ / "hls-sub.mp4", d_) == "320x180");
    auto live = get(base + "live.m3u8?stream=sub");
    INFO(live.body);
    REQUIRE(live.status == 200);
    const auto live_uris = test::playlist_uris(live.body);
    REQUIRE(!live_uris.empty());
    auto live_init = get(base + live_uris.front());
    REQUIRE(live_init.status == 200);
    CHECK(get("/api/v1/cameras/yard/hls.m3u8?from=-1m&stream=sub").status == 404);
  }
  {  // Thumbnails: 160 wide, the sub stream's 16:9 against the main one's 4:3.
    auto sub = get(base + "thumbnail.jpg?at=-2s&width=160&stream=sub");
    INFO(sub.head);
    REQUIRE(sub.status == 200);
    write_file(d_ / "sub.jpg", sub.body);
    CHECK(size_of(d_ / "sub.jpg", d_) == "160x90");
    auto main = get(base + "thumbnail.jpg?at=-2s&width=160");
    REQUIRE(main.status == 200);
    write_file(d_ / "main.jpg", main.body);
    CHECK(size_of(d_ / "main.jpg", d_) == "160x120");
  }
  {  // The timeline: porch's main runs as before, its sub stream's apart; yard has no substream.
    auto tl = get("/api/v1/timeline?from=-1h");
    INFO(tl.body);
    REQUIRE(tl.status == 200);
    bool porch_seen = false, yard_seen = false;
    const auto tl_json = tl.json();
    for (const auto& c : tl_json.at("cameras").as_array()) {
      const auto& o = c.as_object();
      if (o.at("camera").as_string() == "porch") {
        porch_seen = true;
        CHECK(!o.at("runs").as_array().empty());
        REQUIRE(o.contains("substream"));
        const auto& sub = o.at("substream").as_object();
        CHECK(!sub.at("runs").as_array().empty());
        CHECK(sub.at("recording").as_bool());
      }
      if (o.at("camera").as_string() == "yard") {
        yard_seen = true;
        CHECK(!o.contains("substream"));
      }
    }
    CHECK(porch_seen);
    CHECK(yard_seen);
  }
  {  // vigil play --substream of the sub stream still recording, a range that ends before now (-20 s
     // to -1 s): it plays what is recorded there and ends (a session once hung here, at the live tail).
    SpawnOptions o;
    o.argv = {VIGIL_CLI_PATH,
              "--server",
              d.wire(),
              "play",
              "--stream",
              "porch",
              "--substream",
              "--from",
              "-20s",
              "--to",
              "-1s",
              "-o",
              (d_ / "sub-play.mkv").string()};
    o.output_file = d_ / "sub-play.log";
    o.new_session = false;
    auto play = ChildProcess::spawn(o);
    const bool exited = eventually([&] { return !play.running(); }, 60s);
    if (!exited) play.terminate(SIGKILL, 1s);
    INFO(tail_of_file(d_ / "sub-play.log", 20));
    REQUIRE(exited);
    const int status = *play.wait_status();
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(size_of(d_ / "sub-play.mkv", d_) == "320x180");
  }
  // Clearing substream_url stops the sub stream alone: it ends as stopped, the main one records on.
  auto cleared = api.call("PATCH", "/api/v1/cameras/porch", R"({"substream_url": null})");
  INFO(cleared.body);
  REQUIRE(cleared.status == 200);
  const std::string sub_state =
      "SELECT s.state FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'porch' AND s.role = 'sub' "
      "ORDER BY s.id DESC LIMIT 1";
  REQUIRE(eventually([&] { return scalar(sub_state) == "stopped"; }, 30s));
  CHECK(scalar("SELECT s.state FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'porch' AND "
               "s.role = 'main' ORDER BY s.id DESC LIMIT 1") == "recording");
  // Stopping the sub stream made no gap in the main one.
  CHECK(scalar("SELECT count(*) FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = "
               "s.camera_id WHERE c.name = 'porch' AND s.role = 'main'") == "0");
}
