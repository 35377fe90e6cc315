// The pulled cameras' board that /healthz and vigil_camera_up read: a camera is recording while
// it has a recording stream, starting before its first session ended, down (reconnecting) after
// one ended until it records again; down cameras are listed by name up to the bound given; the up
// gauge follows the states at render time and a camera no longer pulled loses its series;
// restarts are counted per camera. And a family's series can be removed (only that one).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "server/core/vigild_metrics.hpp"
#include "server/recording/camera_status.hpp"
#include "tests/support/prometheus_text.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace vigil::server;

namespace {

test::PromText render(const Metrics& m) {
  auto p = test::parse_prometheus_text(m.render());
  for (const auto& e : p.errors) UNSCOPED_INFO(e);
  CHECK(p.errors.empty());
  return p;
}

}  // namespace

TEST_CASE("camera status: recording, starting and down cameras in health and vigil_camera_up", "[metrics][camera]") {
  Metrics m;
  CameraStatusBoard board(&m);
  CHECK_FALSE(board.health().pulling);  // nothing published yet
  CHECK(render(m).find("vigil_camera_up").empty());

  // a records; b's first session runs; c's and d's sessions ended (unreachable), not recording since.
  m.camera("a").stream_started(Rate::from_bps(1'000'000));
  board.publish({{"d", false, "camera unreachable or stream lost: d"},
                 {"a", true, ""},
                 {"b", true, ""},
                 {"c", true, "camera unreachable or stream lost: c"}});
  auto h = board.health(1);
  CHECK(h.pulling);
  CHECK(h.enabled == 4);
  CHECK(h.recording == 1);
  CHECK(h.starting == 1);
  CHECK(h.down == 2);
  REQUIRE(h.down_cameras.size() == 1);  // the bound; by name
  CHECK(h.down_cameras[0].name == "c");
  CHECK(h.down_cameras[0].reason == "camera unreachable or stream lost: c");
  CHECK(board.health().down_cameras.size() == 2);

  auto p = render(m);
  CHECK(p.value("vigil_camera_up", {{"camera", "a"}}) == 1);
  CHECK(p.value("vigil_camera_up", {{"camera", "b"}}) == 0);
  CHECK(p.value("vigil_camera_up", {{"camera", "c"}}) == 0);
  CHECK(p.value("vigil_camera_up", {{"camera", "d"}}) == 0);

  // c records again: up, no longer down, though its last session's reason stays.
  m.camera("c").stream_started(Rate::from_bps(1'000'000));
  board.restarted("c");
  board.restarted("c");
  CHECK(board.health().down == 1);
  p = render(m);
  CHECK(p.value("vigil_camera_up", {{"camera", "c"}}) == 1);
  CHECK(p.value("vigil_camera_restarts_total", {{"camera", "c"}}) == 2);
  CHECK(p.value("vigil_camera_restarts_total", {{"camera", "a"}}) == std::nullopt);

  // a's stream ends and its session with it: down. d is removed: its series goes, the rest stay.
  m.camera("a").stream_ended(Rate::from_bps(1'000'000));
  board.publish({{"a", false, "camera stream ended"}, {"b", true, ""}, {"c", true, "camera unreachable: c"}});
  h = board.health();
  CHECK(h.enabled == 3);
  CHECK(h.down == 1);
  REQUIRE(h.down_cameras.size() == 1);
  CHECK(h.down_cameras[0].name == "a");
  p = render(m);
  CHECK(p.value("vigil_camera_up", {{"camera", "a"}}) == 0);
  CHECK(p.find("vigil_camera_up", {{"camera", "d"}}).empty());
  CHECK(p.find("vigil_camera_up").size() == 3);
  CHECK(p.value("vigil_camera_restarts_total", {{"camera", "c"}}) == 2);  // counters stay
}

TEST_CASE("metrics: a removed series leaves the render, the family's others stay", "[metrics]") {
  metrics::Registry r;
  auto& g = r.gauge("vigil_test_up", "Up.", {"camera"});
  g.with({"a"}).set(1);
  g.with({"b"}).set(0);
  g.remove({"a"});
  g.remove({"never"});  // no such series: nothing happens
  const auto text = r.render();
  CHECK_THAT(text, !ContainsSubstring("camera=\"a\""));
  CHECK_THAT(text, ContainsSubstring("vigil_test_up{camera=\"b\"} 0"));
}

TEST_CASE("camera status: a camera is up while its main video records, not while only its sub stream does",
          "[metrics][camera][track]") {
  Metrics m;
  CameraStatusBoard board(&m);
  m.camera("a").stream_started(Rate::from_bps(200'000), /*main_video=*/false);  // its sub stream
  board.publish({{"a", true, "camera unreachable or stream lost: a"}});
  CHECK(board.health().down == 1);
  auto p = render(m);
  CHECK(p.value("vigil_camera_up", {{"camera", "a"}}) == 0);
  CHECK(p.value("vigil_camera_recording_streams", {{"camera", "a"}}) == 1);  // every track's stream counts
  m.camera("a").stream_started(Rate::from_bps(1'000'000));
  CHECK(board.health().recording == 1);
  p = render(m);
  CHECK(p.value("vigil_camera_up", {{"camera", "a"}}) == 1);
  CHECK(p.value("vigil_camera_recording_streams", {{"camera", "a"}}) == 2);
}
