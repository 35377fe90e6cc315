// Pulled cameras in /healthz and /metrics, end to end with a real RTSP camera (GStreamer's RTSP
// server) and a camera whose URL nothing answers: /healthz says cameras degraded and names the
// down one (the node stays 200, degraded); vigil_camera_up is 1 for the recording camera and 0 for
// the down one, whose recorder restarts are counted. When the real camera goes away its camera
// turns down (up 0, named in /healthz) and its restarts are counted; when it comes back it records
// again (up 1). A removed camera leaves both: no up series, not in /healthz.
#include <signal.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <fstream>
#include <iterator>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;

namespace {

boost::json::object healthz(const test::VigildProcess& d, int* status = nullptr) {
  const auto r = test::http_request_without_token(d.http(), "GET", "/healthz");
  if (status) *status = r.status;
  return boost::json::parse(r.body).as_object();
}

// The names /healthz lists as down.
std::vector<std::string> down_names(const boost::json::object& h) {
  std::vector<std::string> names;
  for (const auto& c : h.at("cameras").at("down_cameras").as_array()) names.emplace_back(c.at("name").as_string());
  return names;
}

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

test::PromText scrape(const test::VigildProcess& d) {
  const auto r = test::http_request(d.http(), "GET", "/metrics");
  REQUIRE(r.status == 200);
  auto p = test::parse_prometheus_text(r.body);
  for (const auto& e : p.errors) UNSCOPED_INFO(e);
  CHECK(p.errors.empty());
  return p;
}

std::optional<double> up(const test::VigildProcess& d, const std::string& camera) {
  return scrape(d).value("vigil_camera_up", {{"camera", camera}});
}

double restarts(const test::VigildProcess& d, const std::string& camera) {
  return scrape(d).value("vigil_camera_restarts_total", {{"camera", camera}}).value_or(0);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("pulled cameras in /healthz and /metrics: up, down by name, restarts counted, back up",
          "[camera][cli][rtsp][ingest][health]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  auto camera = test::start_rtsp_camera(dir.path(), 0, 256);
  auto args = test::sim_volume_args(dir.path(), profile, 256, /*pull_cameras=*/true);
  args.insert(args.end(), {"--recorder", VIGIL_CLI_PATH});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  const test::HttpApi api{d.http()};
  const std::string live_url = "rtsp://127.0.0.1:" + std::to_string(camera.port) + "/cam1";
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  REQUIRE(api.call("POST", "/api/v1/cameras", R"({"name":"porch","url":")" + live_url + R"("})").status == 201);
  REQUIRE(api.call("POST", "/api/v1/cameras", R"({"name":"gone","url":"rtsp://127.0.0.1:1/cam1"})").status == 201);

  // The real camera records, the other is down and named; the node serves on, degraded.
  boost::json::object h;
  int status = 0;
  const bool settled = eventually(
      [&] {
        h = healthz(d, &status);
        const auto& c = h.at("cameras").as_object();
        return c.at("recording").as_int64() == 1 && c.at("down").as_int64() == 1;
      },
      60s, 200ms);
  INFO(boost::json::serialize(h));
  if (!settled) UNSCOPED_INFO("camera: " << slurp(camera.log));
  REQUIRE(settled);
  CHECK(status == 200);
  CHECK(h.at("status").as_string() == "degraded");
  const auto& cameras = h.at("cameras").as_object();
  CHECK(cameras.at("status").as_string() == "degraded");
  CHECK(cameras.at("pulling").as_bool());
  CHECK(cameras.at("enabled").as_int64() == 2);
  CHECK(down_names(h) == std::vector<std::string>{"gone"});
  CHECK_FALSE(std::string(cameras.at("down_cameras").as_array()[0].at("reason").as_string()).empty());
  CHECK(h.at("disks").at("status").as_string() == "ok");
  CHECK(h.at("catalog").at("status").as_string() == "ok");
  CHECK(up(d, "porch") == 1);
  CHECK(up(d, "gone") == 0);
  // Its recorder is started again and again (backoff from 1 s), each time counted.
  CHECK(eventually([&] { return restarts(d, "gone") >= 2; }, 60s, 200ms));
  CHECK(restarts(d, "porch") == 0);

  // The real camera goes away: its camera turns down, named, and its recorder restarts.
  const double porch_restarts = restarts(d, "porch");
  (void)camera.process.terminate(SIGKILL, 5s);
  CHECK(eventually([&] { return up(d, "porch") == 0; }, 60s, 200ms));
  CHECK(eventually([&] { return lists(down_names(healthz(d)), "porch"); }, 60s, 200ms));
  CHECK(eventually([&] { return restarts(d, "porch") > porch_restarts; }, 60s, 200ms));
  // Every enabled camera down: the cameras part is down, the node only degraded (200).
  h = healthz(d, &status);
  CHECK(h.at("cameras").at("status").as_string() == "down");
  CHECK(h.at("status").as_string() == "degraded");
  CHECK(status == 200);

  // It comes back on the same port: recording again, up again, no longer named.
  camera = test::start_rtsp_camera(dir.path(), camera.port, 256);
  CHECK(eventually([&] { return up(d, "porch") == 1; }, 90s, 200ms));
  CHECK_FALSE(lists(down_names(healthz(d)), "porch"));

  // A removed camera is not a camera that is down: no up series, not counted.
  REQUIRE(api.call("DELETE", "/api/v1/cameras/gone").status == 200);
  CHECK(eventually([&] { return !up(d, "gone").has_value(); }, 30s, 200ms));
  CHECK(eventually(
      [&] {
        const auto after = healthz(d);
        return after.at("cameras").at("enabled").as_int64() == 1 && after.at("cameras").at("down").as_int64() == 0 &&
               after.at("status").as_string() == "ok";
      },
      30s, 200ms));
  REQUIRE(d.stop(SIGTERM) == 0);
}
