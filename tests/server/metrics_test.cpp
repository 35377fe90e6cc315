// GET /metrics on a real vigild with a volume and a profile, while a camera records over the
// wire: the text is valid exposition format (every sample line parses, every family has HELP
// and TYPE), the disk's cycles count up, the camera's accepted and refused packets are exactly
// what the session saw, the admission decision is counted, a reconnect gap is counted, and the
// HTTP latency histogram counts exactly the requests made, by route name and status class.
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

test::PromText scrape(const test::VigildProcess& d) {
  auto r = test::http_request(d.http(), "GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK_THAT(r.header("Content-Type"), ContainsSubstring("text/plain; version=0.0.4"));
  auto p = test::parse_prometheus_text(r.body);
  INFO(r.body);
  for (const auto& e : p.errors) UNSCOPED_INFO(e);
  CHECK(p.errors.empty());
  return p;
}

struct Sent {
  std::uint64_t packets = 0, payload_bytes = 0, rate_refusals = 0, other_refusals = 0;
};

// Records TOTAL packets on a new session of camera NAME, every one acknowledged; what was sent.
Sent record(const test::VigildProcess& d, const std::string& name, std::uint64_t total) {
  const auto session = test::record_acked(d, name, total);
  Sent sent;
  sent.rate_refusals = session.counts.rate_refusals;
  sent.other_refusals = session.counts.other_refusals;
  for (std::uint64_t seq = 1; seq <= total; ++seq) {
    sent.payload_bytes += test::media_packet(session.stream, seq, session.stream).second.size();
  }
  sent.packets = total;
  return sent;
}

}  // namespace

TEST_CASE("GET /metrics on a recording vigild: disk cycles, the camera's packets, admission, HTTP latency",
          "[metrics][vigild]") {
  test::RecordingRig rig;
  auto& d = *rig.vigild;
  INFO(d.output());
  const std::string disk = std::filesystem::absolute(rig.dir.path() / "vol").string();
  std::uint64_t metrics_requests = 0;

  // At start: the disk is there with its control variables; no camera has series yet.
  auto start = scrape(d);
  ++metrics_requests;
  REQUIRE(start.find("vigil_disk_cycles_total").size() == 1);
  CHECK(start.find("vigil_disk_cycles_total").front()->labels.at("disk") == disk);
  CHECK(start.value("vigil_disk_cycle_length_seconds", {{"disk", disk}}) == 0.2);
  CHECK(start.value("vigil_disk_profiled", {{"disk", disk}}) == 1);
  CHECK(start.value("vigil_disk_admitted_streams", {{"disk", disk}}) == 0);
  CHECK(start.find("vigil_camera_packets_accepted_total").empty());
  CHECK(start.types.count("vigil_camera_packets_accepted_total") == 1);  // HELP/TYPE even without series

  // Cycles run on their own: poll (bounded) until the IO thread has published some.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  test::PromText now;
  do {
    now = scrape(d);
    ++metrics_requests;
  } while (now.value("vigil_disk_cycles_total", {{"disk", disk}}).value_or(0) == 0 &&
           std::chrono::steady_clock::now() < deadline);
  CHECK(now.value("vigil_disk_cycles_total", {{"disk", disk}}).value_or(0) > 0);
  CHECK(now.value("vigil_disk_cycle_utilisation_ratio_count", {{"disk", disk}}).value_or(0) > 0);

  const auto sent = record(d, "metrics-cam", 120);
  CHECK(sent.rate_refusals > 0);  // 120 packets do not fit in one 50 kB cycle: policing is exercised
  // Policing holds the camera to 250 kB/s, so its ~350 kB took more than a second: the first
  // scrape measures a rate over that time, no more than the bytes sent over one second.
  {
    auto first = scrape(d);
    ++metrics_requests;
    const auto rate = first.value("vigil_camera_recording_rate_bytes_per_second", {{"camera", "metrics-cam"}});
    CHECK(rate.value_or(0) > 0);
    CHECK(rate.value_or(0) <= static_cast<double>(sent.payload_bytes));
  }

  // The IO thread publishes a cycle's totals when the cycle ends, which may be just after the
  // last acknowledgement: poll (bounded) for the stream bytes to be counted.
  const std::map<std::string, std::string> cam{{"camera", "metrics-cam"}};
  test::PromText after;
  deadline = std::chrono::steady_clock::now() + 30s;
  do {
    after = scrape(d);
    ++metrics_requests;
  } while (after.value("vigil_disk_stream_io_bytes_total", {{"disk", disk}}).value_or(0) < sent.payload_bytes &&
           std::chrono::steady_clock::now() < deadline);
  CHECK(after.value("vigil_disk_stream_io_bytes_total", {{"disk", disk}}).value_or(0) >= sent.payload_bytes);
  CHECK(after.value("vigil_camera_packets_accepted_total", cam) == sent.packets);
  CHECK(after.value("vigil_camera_bytes_accepted_total", cam) == sent.payload_bytes);
  CHECK(after.value("vigil_camera_packets_refused_total", {{"camera", "metrics-cam"}, {"reason", "rate_exceeded"}}) ==
        sent.rate_refusals);
  CHECK(after.value("vigil_camera_packets_refused_total", {{"camera", "metrics-cam"}, {"reason", "out_of_order"}}) ==
        sent.other_refusals);
  CHECK(after.value("vigil_camera_streams_total", cam) == 1);
  CHECK(after.value("vigil_camera_gaps_total", cam) == 0);
  CHECK(after.value("vigil_camera_recording_streams", cam) == 0);
  CHECK(after
            .value("vigil_disk_admission_decisions_total",
                   {{"disk", disk}, {"kind", "recording"}, {"decision", "admitted"}})
            .value_or(0) >= 1);
  CHECK(after.value("vigil_disk_stream_ios_total", {{"disk", disk}}).value_or(0) > 0);
  CHECK(after.value("vigil_disk_expected_interactive_wait_seconds", {{"disk", disk}}).value_or(0) > 0);

  // A camera that reconnects after its stream ended: the hole is a gap. Its first stream (five
  // packets, 200 ms of media pinned to the wall clock at arrival) must have ended in the catalog
  // and the wall clock must have passed its last frame, else there is no hole.
  const std::map<std::string, std::string> gap_cam{{"camera", "gap-cam"}};
  record(d, "gap-cam", 5);
  {
    pqxx::connection conn(rig.catalog());
    // The stream ends through the batcher (a bounded delay): stopped, with its last segment in the past.
    REQUIRE(test::eventually(
        [&] {
          pqxx::nontransaction q(conn);
          auto row = q.exec1(
              "SELECT s.state = 'stopped', COALESCE((SELECT max(end_us) FROM segments g WHERE g.stream_id = s.id), 0) "
              "FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'gap-cam'");
          const auto now_us =
              std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
          return row[0].as<bool>() && row[1].as<std::int64_t>() > 0 && row[1].as<std::int64_t>() < now_us;
        },
        20s));
  }
  const auto again = record(d, "gap-cam", 5);
  auto reconnected = scrape(d);
  ++metrics_requests;
  CHECK(reconnected.value("vigil_camera_streams_total", gap_cam) == 2);
  CHECK(reconnected.value("vigil_camera_gaps_total", gap_cam) == 1);
  CHECK(reconnected.value("vigil_camera_packets_accepted_total", gap_cam) == 10);
  CHECK(reconnected.value("vigil_camera_packets_accepted_total", cam) == sent.packets);
  CHECK(reconnected.value("vigil_disk_admission_decisions_total",
                          {{"disk", disk}, {"kind", "recording"}, {"decision", "admitted"}}) == 3);
  CHECK(reconnected.value("vigil_disk_admission_decisions_total",
                          {{"disk", disk}, {"kind", "recording"}, {"decision", "refused"}}) == 0);
  (void)again;

  // HTTP: exactly the requests made, by route name and status class.
  for (int i = 0; i < 3; ++i) CHECK(test::http_request(d.http(), "GET", "/healthz").status == 200);
  CHECK(test::http_request(d.http(), "GET", "/no/such/path?x=1").status == 404);
  CHECK(test::http_request(d.http(), "POST", "/metrics").status == 405);
  auto head = test::http_request(d.http(), "HEAD", "/metrics");
  ++metrics_requests;
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  auto last = scrape(d);  // observed after it is rendered: not in its own count
  const std::string h = "vigil_http_request_duration_seconds_count";
  CHECK(last.value(h, {{"route", "healthz"}, {"status", "2xx"}}) == 3);
  CHECK(last.value(h, {{"route", "other"}, {"status", "4xx"}}) == 1);
  CHECK(last.value(h, {{"route", "metrics"}, {"status", "4xx"}}) == 1);
  CHECK(last.value(h, {{"route", "metrics"}, {"status", "2xx"}}) == static_cast<double>(metrics_requests));
  CHECK(last.sum(h) == static_cast<double>(metrics_requests) + 5);
  // The catalog pool ran the sessions' catalog work (opening the recordings, their token checks);
  // /healthz does not use it (its own probe answers it, whatever the database does).
  const auto jobs = last.value("vigil_catalog_job_duration_seconds_count", {{"outcome", "ok"}}).value_or(0);
  CHECK(jobs >= 2);
  CHECK(last.value("vigil_catalog_job_wait_seconds_count").value_or(0) >= jobs);
  CHECK(last.value("vigil_disk_admitted_streams", {{"disk", disk}}) == 0);
  REQUIRE(d.stop(SIGTERM) == 0);
}

TEST_CASE("GET /metrics: an MP4 export's interactive reads land in the disk's interactive latency histogram",
          "[metrics][vigild][media]") {
  test::TempDir dir;
  auto cam = test::recorded_camera(dir.path(), "lobby", 2);
  auto& d = *cam.vigild;
  INFO(d.output());
  const std::string h = "vigil_interactive_read_seconds";
  // Nothing read interactively yet: the family is there (its disk's series at 0).
  const auto before = scrape(d);
  REQUIRE(before.types.count(h) == 1);
  CHECK(before.types.at(h) == "histogram");
  CHECK(before.sum(h + "_count") == 0);
  // The node's state at scrape time: catalog up, its batcher's queue, the disk in service.
  CHECK(before.value("vigil_catalog_up") == 1);
  CHECK(before.value("vigil_catalog_rows_waiting").has_value());
  CHECK(before.value("vigil_catalog_rows_spooled") == 0);
  CHECK(before.sum("vigil_disk_state", {{"state", "in_service"}}) == 1);
  CHECK(before.sum("vigil_disk_state") == 1);  // one disk, one state
  CHECK(before.find("vigil_disk_last_cycle_age_seconds").size() == 1);

  const std::string range = "from=-1h&to=@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                 std::chrono::system_clock::now().time_since_epoch())
                                                                 .count() +
                                                             3600);
  const auto exported = test::http_request(d.http(), "GET", "/api/v1/cameras/lobby/export.mp4?" + range);
  REQUIRE(exported.status == 200);
  REQUIRE(exported.body.size() > 1000);

  // Every interactive read the export made completed before its answer: counted, with a time.
  const auto after = scrape(d);
  const auto series = after.find(h + "_count");
  REQUIRE(series.size() == 1);  // one disk
  CHECK(series.front()->labels.at("disk") == std::filesystem::absolute(cam.data.parent_path() / "vol").string());
  CHECK(after.sum(h + "_count") >= 1);
  CHECK(after.sum(h + "_sum") > 0);
  CHECK(after.value(h + "_bucket", {{"le", "+Inf"}}) == after.sum(h + "_count"));
  REQUIRE(d.stop(SIGTERM) == 0);
}
