// The statistical policy in a real vigild charges a running recording what the disk's scheduler
// measured of it: after a camera has recorded for some cycles, GET /api/v1/disks shows the
// stream's measured rate and device time per cycle (the numbers the next decision uses), and the
// model calibration the aggressive policies apply.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>

#include "client/wire/wire_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object first_disk(const test::VigildProcess& d) {
  auto r = test::http_request(d.http(), "GET", "/api/v1/disks");
  REQUIRE(r.status == 200);
  return json::parse(r.body).at("disks").as_array().at(0).as_object();
}

}  // namespace

TEST_CASE("statistical admission in vigild uses the scheduler's measurements of the running streams",
          "[admission][vigild]") {
  test::RecordingRig rig({"--admission-policy", "statistical"});
  auto& d = *rig.vigild;
  INFO(d.output());
  CHECK(first_disk(d).at("policy").as_string() == "statistical");

  client::WireClient c(d.wire(), 20s);
  const auto stream = test::open_admitted(c, "gate", 2'000'000);

  // Record like a camera (the server's policing paces us to the declared rate: a refused packet
  // is sent again once what came before is durable) until the scheduler has measured the
  // stream for enough cycles that /disks shows it — bounded by a deadline, not a sleep.
  test::PacedSender sender(c, stream);
  json::object measured;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (measured.empty() && std::chrono::steady_clock::now() < deadline) {
    sender.send_until(sender.sent() + 10, 10);
    const auto disk = first_disk(d);
    const auto& streams = disk.at("admitted").at("streams").as_array();
    REQUIRE(streams.size() == 1);
    if (streams.at(0).as_object().contains("measured_io_ms")) measured = streams.at(0).as_object();
  }
  INFO(json::serialize(measured));
  REQUIRE_FALSE(measured.empty());
  // What it really writes: more than nothing, and not more than it may (policed at its peak).
  CHECK(measured.at("measured_mean_bps").to_number<double>() > 0);
  CHECK(measured.at("measured_mean_bps").to_number<double>() <= 2'000'000 * 1.5);
  CHECK(measured.at("measured_io_ms").to_number<double>() > 0);
  CHECK(measured.at("measured_io_ms").to_number<double>() < 200);  // within its 200 ms cycle
  const double k = first_disk(d).at("model_calibration").to_number<double>();
  CHECK(k >= 0.8);
  CHECK(k <= 1.25);
  sender.finish();
}
