// The metrics registry renders the Prometheus text exposition format 0.0.4 exactly: HELP and
// TYPE lines, label values escaped, histogram buckets cumulative with +Inf, _sum and _count;
// it refuses bad names and label counts; HTTP routes map onto a fixed set of names; and the
// whole of vigild's metric set, with a disk and a camera, reads back as valid exposition text.
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "server/api/http_metrics.hpp"
#include "server/core/metrics.hpp"
#include "server/core/vigild_metrics.hpp"
#include "tests/support/prometheus_text.hpp"

using namespace vigil;
using namespace vigil::server;

TEST_CASE("metrics: counters and gauges render with HELP, TYPE and escaped labels", "[metrics]") {
  metrics::Registry r;
  auto& c = r.counter("vigil_test_total", "A counter.\nSecond line with a \\ backslash.", {"disk"});
  c.with({"/vol/a"}).inc();
  c.with({"/vol/a"}).inc(2);
  c.with({"we\"ird\\na\nme"}).store(7);
  auto& g = r.gauge("vigil_test_ratio", "A gauge.");
  g.with({}).set(0.25);
  CHECK(r.render() ==
        "# HELP vigil_test_total A counter.\\nSecond line with a \\\\ backslash.\n"
        "# TYPE vigil_test_total counter\n"
        "vigil_test_total{disk=\"/vol/a\"} 3\n"
        "vigil_test_total{disk=\"we\\\"ird\\\\na\\nme\"} 7\n"
        "# HELP vigil_test_ratio A gauge.\n"
        "# TYPE vigil_test_ratio gauge\n"
        "vigil_test_ratio 0.25\n");
  // The reader used on vigild's output gets the values back unescaped.
  auto parsed = test::parse_prometheus_text(r.render());
  CHECK(parsed.errors.empty());
  CHECK(parsed.value("vigil_test_total", {{"disk", "we\"ird\\na\nme"}}) == 7);
  CHECK(parsed.help["vigil_test_total"] == "A counter.\nSecond line with a \\ backslash.");
}

TEST_CASE("metrics: a family without series still has its HELP and TYPE", "[metrics]") {
  metrics::Registry r;
  r.counter("vigil_empty_total", "Nothing yet.", {"camera"});
  CHECK(r.render() == "# HELP vigil_empty_total Nothing yet.\n# TYPE vigil_empty_total counter\n");
}

TEST_CASE("metrics: histograms have cumulative buckets, +Inf, _sum and _count", "[metrics]") {
  metrics::Registry r;
  auto& f = r.histogram("vigil_test_seconds", "A histogram.", {-0.5, 0, 0.125, 1}, {"route", "status"});
  auto& h = f.with({"metrics", "2xx"});
  for (double v : {-1.0, 0.0, 0.0625, 0.125, 0.5, 2.0, 3.0}) h.observe(v);
  CHECK(r.render() ==
        "# HELP vigil_test_seconds A histogram.\n"
        "# TYPE vigil_test_seconds histogram\n"
        "vigil_test_seconds_bucket{route=\"metrics\",status=\"2xx\",le=\"-0.5\"} 1\n"
        "vigil_test_seconds_bucket{route=\"metrics\",status=\"2xx\",le=\"0\"} 2\n"
        "vigil_test_seconds_bucket{route=\"metrics\",status=\"2xx\",le=\"0.125\"} 4\n"
        "vigil_test_seconds_bucket{route=\"metrics\",status=\"2xx\",le=\"1\"} 5\n"
        "vigil_test_seconds_bucket{route=\"metrics\",status=\"2xx\",le=\"+Inf\"} 7\n"
        "vigil_test_seconds_sum{route=\"metrics\",status=\"2xx\"} 4.6875\n"
        "vigil_test_seconds_count{route=\"metrics\",status=\"2xx\"} 7\n");
  CHECK(test::parse_prometheus_text(r.render()).errors.empty());
  r.histogram("vigil_plain2_seconds", "No labels.", {1}).with({}).observe(0.5);
  CHECK(
      r.render().ends_with("vigil_plain2_seconds_bucket{le=\"1\"} 1\n"
                           "vigil_plain2_seconds_bucket{le=\"+Inf\"} 1\n"
                           "vigil_plain2_seconds_sum 0.5\n"
                           "vigil_plain2_seconds_count 1\n"));
}

TEST_CASE("metrics: values are formatted as Prometheus reads them", "[metrics]") {
  CHECK(metrics::format_value(0) == "0");
  CHECK(metrics::format_value(1) == "1");
  CHECK(metrics::format_value(-0.125) == "-0.125");
  CHECK(metrics::format_value(1e21) == "1e+21");
  CHECK(metrics::format_value(INFINITY) == "+Inf");
  CHECK(metrics::format_value(-INFINITY) == "-Inf");
  CHECK(metrics::format_value(std::nan("")) == "NaN");
  CHECK(metrics::escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

TEST_CASE("metrics: bad names, duplicates and wrong label counts are refused", "[metrics]") {
  metrics::Registry r;
  CHECK_THROWS_AS(r.counter("1bad", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("bad-name", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("ok_total", "x", {"bad-label"}), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("ok_total", "x", {"__reserved"}), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("h_seconds", "x", {1}, {"le"}), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("h2_seconds", "x", {1, 0.5}), std::invalid_argument);
  auto& c = r.counter("ok_total", "x", {"disk"});
  CHECK_THROWS_AS(r.gauge("ok_total", "again"), std::invalid_argument);
  CHECK_THROWS_AS(c.with({}), std::invalid_argument);
  CHECK_THROWS_AS(c.with({"a", "b"}), std::invalid_argument);
  CHECK(&c.with({"a"}) == &c.with({"a"}));  // one series per label values, kept
}

TEST_CASE("metrics: HTTP paths map onto a fixed set of route names", "[metrics]") {
  CHECK(http_route_name("/healthz") == "healthz");
  CHECK(http_route_name("/metrics") == "metrics");
  CHECK(http_route_name("/metrics?x=1") == "metrics");
  CHECK(http_route_name("/api/v1/cameras") == "cameras");
  CHECK(http_route_name("/api/v1/timeline?from=1") == "timeline");
  CHECK(http_route_name("/api/v1/cameras/door%20cam/timeline?from=1") == "camera_timeline");
  CHECK(http_route_name("/api/v1/cameras/door/export.mp4?from=-1m&to=now") == "camera_export");
  CHECK(http_route_name("/api/v1/cameras/door/hls.m3u8?from=-1h") == "camera_hls_playlist");
  CHECK(http_route_name("/api/v1/cameras/door/hls/init.mp4") == "camera_hls_segment");
  CHECK(http_route_name("/api/v1/cameras/door/hls/seg-17.m4s?from=1") == "camera_hls_segment");
  CHECK(http_route_name("/api/v1/cameras/door/hls/") == "other");
  CHECK(http_route_name("/api/v1/cameras/door/hls/a/b") == "other");
  CHECK(http_route_name("/api/v1/cameras/door/thumbnail.jpg?at=-1m") == "camera_thumbnail");
  CHECK(http_route_name("/api/v1/cameras/door/live.m3u8") == "camera_live_playlist");
  CHECK(http_route_name("/api/v1/cameras/door/live/seg.m4s?n=3") == "camera_live_segment");
  CHECK(http_route_name("/api/v1/events?from=-1h") == "events");
  CHECK(http_route_name("/api/v1/events/42") == "event");
  CHECK(http_route_name("/api/v1/events/") == "events");
  CHECK(http_route_name("/api/v1/events/42/x") == "other");
  CHECK(http_route_name("/api/v1/cameras/a/b/timeline") == "other");
  CHECK(http_route_name("/api/v1/cameras//timeline") == "other");
  CHECK(http_route_name("/no/such/thing") == "other");
  CHECK(http_route_name("/") == "other");
  for (auto name : {"healthz", "metrics", "cameras", "timeline", "camera_timeline", "camera_export", "camera_thumbnail",
                    "camera_hls_playlist", "camera_hls_segment", "camera_live_playlist", "camera_live_segment",
                    "events", "event", "other"}) {
    CHECK(std::find(kHttpRoutes.begin(), kHttpRoutes.end(), name) != kHttpRoutes.end());
  }
}

TEST_CASE("metrics: vigild's metric set is valid exposition text with HELP and TYPE for each", "[metrics]") {
  Metrics m;
  auto& d = m.disk("/srv/vigil/vol0");
  storage::SchedulerConfig cfg;
  cfg.cycle = std::chrono::milliseconds(200);
  d.configured(cfg, true, 0.9);
  storage::CycleReport rep;
  rep.utilisation = 0.42;
  rep.slack = std::chrono::milliseconds(-5);
  storage::SchedulerTotals totals;
  totals.cycles = 3;
  totals.stream_bytes = 1234;
  storage::PreemptibilityMeter meter;
  meter.command(std::chrono::milliseconds(10));
  meter.idle(std::chrono::milliseconds(10));
  d.cycle(rep, totals, meter, false);
  d.miss(storage::MissCause::interactive);
  d.miss(storage::MissCause::cpu_starved);
  d.model_scale(2.5, 1);
  d.io_thread(true, false);
  d.cpu_wait(0.03);
  d.decision(DiskMetrics::Kind::recording, true);
  d.decision(DiskMetrics::Kind::playback, false);
  d.admitted(2, vigil::Rate::from_Bps(500'000), 0.3);
  auto& cam = m.camera("door \"1\"");
  cam.stream_started(vigil::Rate::from_Bps(250'000));
  cam.packet(1000);
  cam.refused(CameraMetrics::Refusal::rate_exceeded);
  m.http_request("metrics", 200, 0.002);
  m.http_request("/raw/path", 404, 0.001);  // not a route name: "other"
  m.catalog_job(true).observe(0.01);

  const auto text = m.render();
  auto p = test::parse_prometheus_text(text);
  INFO(text);
  for (const auto& e : p.errors) UNSCOPED_INFO(e);
  CHECK(p.errors.empty());
  for (const auto& [family, type] : p.types) {
    CHECK(family.starts_with("vigil_"));
    CHECK(!p.help[family].empty());
  }
  const std::map<std::string, std::string> disk{{"disk", "/srv/vigil/vol0"}};
  CHECK(p.value("vigil_disk_cycles_total", disk) == 3);
  CHECK(p.value("vigil_disk_stream_io_bytes_total", disk) == 1234);
  CHECK(p.value("vigil_disk_last_cycle_slack_seconds", disk) == -0.005);
  CHECK(p.value("vigil_disk_cycle_slack_seconds_count", disk) == 1);
  CHECK(p.value("vigil_disk_cycle_utilisation_ratio_bucket", {{"disk", "/srv/vigil/vol0"}, {"le", "0.4"}}) == 0);
  CHECK(p.value("vigil_disk_cycle_utilisation_ratio_bucket", {{"disk", "/srv/vigil/vol0"}, {"le", "0.5"}}) == 1);
  // Eq. 4.2: ½ · (10 ms)² / (10 ms + 10 ms idle) = 2.5 ms.
  CHECK(std::abs(*p.value("vigil_disk_expected_interactive_wait_seconds", disk) - 0.0025) < 1e-12);
  CHECK(p.value("vigil_disk_cycle_length_seconds", disk) == 0.2);
  CHECK(p.value("vigil_disk_deadline_misses_total", {{"disk", "/srv/vigil/vol0"}, {"cause", "interactive"}}) == 1);
  CHECK(p.value("vigil_disk_deadline_misses_total", {{"disk", "/srv/vigil/vol0"}, {"cause", "overload"}}) == 0);
  CHECK(p.value("vigil_disk_admission_decisions_total",
                {{"disk", "/srv/vigil/vol0"}, {"kind", "recording"}, {"decision", "admitted"}}) == 1);
  CHECK(p.value("vigil_disk_admission_decisions_total",
                {{"disk", "/srv/vigil/vol0"}, {"kind", "playback"}, {"decision", "refused"}}) == 1);
  CHECK(p.value("vigil_disk_admitted_streams", disk) == 2);
  CHECK(p.value("vigil_disk_model_optimistic", disk) == 0);
  CHECK(p.value("vigil_disk_deadline_misses_total", {{"disk", "/srv/vigil/vol0"}, {"cause", "cpu_starved"}}) == 1);
  CHECK(p.value("vigil_disk_model_scale_ratio", disk) == 2.5);
  CHECK(p.value("vigil_disk_model_recalibrations_total", disk) == 1);
  CHECK(p.value("vigil_disk_io_thread_realtime", disk) == 1);
  CHECK(p.value("vigil_disk_io_buffers_locked", disk) == 0);
  CHECK(p.value("vigil_disk_io_thread_cpu_wait_seconds", disk) == 0.03);
  CHECK(p.value("vigil_camera_packets_accepted_total", {{"camera", "door \"1\""}}) == 1);
  CHECK(p.value("vigil_camera_bytes_accepted_total", {{"camera", "door \"1\""}}) == 1000);
  CHECK(p.value("vigil_camera_packets_refused_total", {{"camera", "door \"1\""}, {"reason", "rate_exceeded"}}) == 1);
  CHECK(p.value("vigil_camera_recording_streams", {{"camera", "door \"1\""}}) == 1);
  CHECK(p.value("vigil_http_request_duration_seconds_count", {{"route", "metrics"}, {"status", "2xx"}}) == 1);
  CHECK(p.value("vigil_http_request_duration_seconds_count", {{"route", "other"}, {"status", "4xx"}}) == 1);
  // Series for a fixed set of routes × status classes only.
  CHECK(p.find("vigil_http_request_duration_seconds_count").size() == kHttpRoutes.size() * 4);
  CHECK(p.value("vigil_catalog_job_duration_seconds_count", {{"outcome", "ok"}}) == 1);
}
