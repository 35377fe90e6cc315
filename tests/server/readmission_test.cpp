// Re-admission at the measured rate on a real vigild: a recording declared at 0.4 Mbit/s whose
// source really sends about 0.65 Mbit/s (script frames at 25 fps) is policed; once a whole window
// of its media time (10 s) was policed while sending more than it was admitted for, vigild
// re-admits it at what it measured (with headroom) because the disk still fits it — /disks shows
// the new rate, the catalog's stream row has it, and the recorder's frames are all acknowledged.
// Against a server that polices for ever, the admitted rate never moves and the test fails.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cmath>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;

namespace {

double admitted_peak_bps(const test::VigildProcess& d) {
  auto r = test::http_request(d.http(), "GET", "/api/v1/disks");
  REQUIRE(r.status == 200);
  const auto disk = json::parse(r.body).at("disks").as_array().at(0).as_object();
  const auto& streams = disk.at("admitted").at("streams").as_array();
  REQUIRE(streams.size() == 1);
  return streams.at(0).as_object().at("peak_rate_bps").to_number<double>();
}

}  // namespace

TEST_CASE("a recording that keeps sending more than it declared is re-admitted at its measured rate",
          "[admission][vigild][readmission]") {
  test::TempDir dir;
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile, 128));
  REQUIRE(d.wait_ready());
  constexpr double kDeclaredBps = 400'000;
  client::WireClient c(d.wire(), 30s);
  const auto stream = test::open_admitted(c, "noisy", static_cast<std::uint64_t>(kDeclaredBps));
  CHECK(admitted_peak_bps(d) == kDeclaredBps);

  // Send as fast as policing lets us; stop once the re-admission shows, or at a deadline (the
  // window is 10 s of media time: 250 frames, policed to the declared rate ~15 s of wall time).
  test::PacedSender sender(c, stream);
  double peak = kDeclaredBps;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (peak == kDeclaredBps && std::chrono::steady_clock::now() < deadline) {
    sender.send_until(sender.sent() + 25, 25);
    peak = admitted_peak_bps(d);
  }
  INFO(d.output());
  CHECK(sender.counts().rate_refusals > 0);  // it really was policed first
  // Script frames average ~3.1 KB at 25 fps: ~0.63 Mbit/s with record headers; re-admitted at
  // that times 1.25 headroom.
  CHECK(peak > 0.6e6 * 1.25 * 0.9);
  CHECK(peak < 0.7e6 * 1.25 * 1.1);
  CHECK_THAT(d.output(), ContainsSubstring("recording re-admitted at its measured rate"));

  // At the new rate a cycle's half holds what the source sends: the rest is taken and durable.
  sender.send_until(sender.sent() + 50, 25);
  sender.finish();
  CHECK(sender.counts().acked == sender.sent());

  pqxx::connection db("host=" + (dir.path() / "data" / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  // The stream's catalog row carries the new rate (through the batcher: bounded wait).
  double stored = 0;
  CHECK(test::eventually([&] {
    pqxx::work tx(db);
    stored = tx.exec1("SELECT admitted_rate_bps FROM streams WHERE id = " + std::to_string(stream))[0].as<double>();
    return std::abs(stored - peak) < 1;
  }));
  CHECK(std::abs(stored - peak) < 1);
}
