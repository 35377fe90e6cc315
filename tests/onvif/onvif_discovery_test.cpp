// Discovery against the ONVIF simulator on loopback (tests/support/onvif_simulator): a unicast
// Probe finds it, both profiles and their RTSP URIs are read and main/substream chosen right;
// a wrong password is a NotAuthorized error; a camera that never answers, or a probe nobody
// answers, ends within its bound; a malformed reply is refused cleanly.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>

#include "onvif/discovery.hpp"
#include "tests/support/onvif_simulator.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil::onvif;
using vigil::test::OnvifSimulator;
using vigil::test::OnvifSimulatorOptions;
using namespace std::chrono_literals;

namespace {
DiscoveryOptions unicast(const OnvifSimulator& sim, Credentials c = {}) {
  DiscoveryOptions o;
  o.probe_address = sim.probe_address();
  o.timeout = 1000ms;  // the simulator answers at once; the probe still waits the timeout out
  o.device_timeout = 5000ms;
  o.credentials = std::move(c);
  return o;
}
}  // namespace

TEST_CASE("discovery finds the simulator, reads both profiles and picks main and substream", "[onvif]") {
  OnvifSimulatorOptions so;
  so.rtsp_port = 18554;
  OnvifSimulator sim(so);
  const auto devices = discover(unicast(sim));
  REQUIRE(devices.size() == 1);
  const auto& d = devices[0];
  INFO(d.error);
  REQUIRE(d.error.empty());
  CHECK(d.match.name == "Front Door");
  CHECK(d.match.hardware == "SIM-1080");
  CHECK(d.address == "127.0.0.1");
  CHECK(d.match.endpoint.starts_with("urn:uuid:"));
  REQUIRE(d.profiles.size() == 2);
  CHECK(d.profiles[0].token == "main");
  CHECK(d.profiles[0].encoding == "H264");
  CHECK(d.profiles[0].width == 1920);
  CHECK(d.profiles[0].height == 1080);
  CHECK(d.profiles[0].frame_rate == 25);
  CHECK(d.profiles[0].bitrate_kbps == 4096);
  CHECK(d.profiles[1].width == 640);
  CHECK(d.main_uri == "rtsp://127.0.0.1:18554/main");
  CHECK(d.substream_uri == "rtsp://127.0.0.1:18554/sub");
  const auto j = devices_json(devices);
  CHECK(j.at("devices").as_array().at(0).at("substream_url").as_string() == "rtsp://127.0.0.1:18554/sub");
}

TEST_CASE("with WS-Security the right password reads the camera and a wrong one is NotAuthorized", "[onvif]") {
  OnvifSimulatorOptions so;
  so.user = "admin";
  so.password = "s3cret";
  OnvifSimulator sim(so);
  const auto good = discover(unicast(sim, {"admin", "s3cret"}));
  REQUIRE(good.size() == 1);
  INFO(good[0].error);
  CHECK(good[0].error.empty());
  CHECK(good[0].profiles.size() == 2);

  const auto matches = probe(unicast(sim));
  REQUIRE(matches.size() == 1);
  CHECK_THROWS_AS(read_device(matches[0], {"admin", "wrong"}, 5000ms), NotAuthorized);
  CHECK_THROWS_AS(read_device(matches[0], {}, 5000ms), NotAuthorized);
  const auto bad = discover(unicast(sim, {"admin", "wrong"}));
  REQUIRE(bad.size() == 1);
  CHECK_THAT(bad[0].error, ContainsSubstring("wrong user or password"));
  CHECK(bad[0].profiles.empty());
}

TEST_CASE("a camera that never answers is given up within its timeout", "[onvif]") {
  OnvifSimulatorOptions so;
  so.silent = true;
  OnvifSimulator sim(so);
  auto options = unicast(sim);
  options.device_timeout = 500ms;
  const auto start = std::chrono::steady_clock::now();
  const auto devices = discover(options);
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(devices.size() == 1);
  CHECK_THAT(devices[0].error, ContainsSubstring("did not answer within 500 ms"));
  CHECK(sim.requests() == 1);
  // Probe timeout + device timeout, with a wide margin for a loaded machine: the bound is what is
  // checked (an unbounded wait would never return), not the speed.
  CHECK(took < 1000ms + 500ms + 10s);
}

TEST_CASE("a probe nobody answers finds nothing after its timeout", "[onvif]") {
  std::string address;
  {
    OnvifSimulator gone;  // a loopback UDP port that is closed again
    address = gone.probe_address();
  }
  DiscoveryOptions o;
  o.probe_address = address;
  o.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  CHECK(probe(o).empty());
  CHECK(std::chrono::steady_clock::now() - start >= 300ms);
  o.probe_address = "not an address:x";
  CHECK_THROWS_AS(probe(o), OnvifError);
}

TEST_CASE("a malformed reply is refused with the reason", "[onvif]") {
  OnvifSimulatorOptions so;
  so.malformed = true;
  OnvifSimulator sim(so);
  const auto devices = discover(unicast(sim));
  REQUIRE(devices.size() == 1);
  CHECK_THAT(devices[0].error, ContainsSubstring("malformed XML"));
  CHECK(devices[0].main_uri.empty());
}

TEST_CASE("a silent camera among others hides none of them; all are read within one device timeout", "[onvif]") {
  OnvifSimulatorOptions quiet;
  quiet.silent = true;
  OnvifSimulator silent1(quiet), silent2(quiet), silent3(quiet);
  OnvifSimulatorOptions so;
  so.also_announce = {silent1.http_port(), silent2.http_port(), silent3.http_port()};
  OnvifSimulator sim(so);
  auto options = unicast(sim);
  options.device_timeout = 3000ms;
  const auto start = std::chrono::steady_clock::now();
  const auto devices = discover(options);
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(devices.size() == 4);
  CHECK(devices[0].error.empty());
  CHECK(devices[0].substream_uri == "rtsp://127.0.0.1:8554/sub");
  for (std::size_t i = 1; i < 4; ++i) CHECK_THAT(devices[i].error, ContainsSubstring("did not answer within 3000 ms"));
  // Read in parallel (~4 s): under the 1 s probe + 3 x 3 s that reading them one after another
  // needs at the least, a lower bound of the sequential time that leaves 6 s for a loaded machine.
  CHECK(took < 1000ms + 3 * 3000ms);
}
