// The online model check on the real daemon (docs/admission.md, "The online model check"): a
// volume whose writes turn slow (--fault-plan slow@N+: each held 40 ms, several times what the
// simulated WD400BB profile predicts for a stream IO) while a camera records. vigild must trip
// the check, recalibrate the model from the tripping cycles, say so (log, /api/v1/disks,
// metrics), keep the recording it had, and go on admitting under the slower model: a smaller
// largest rate than before, but not zero — the device being slower than profiled is no reason
// to record nothing.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>

#include "client/wire/wire_client.hpp"
#include "common/child_process.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;

namespace {

boost::json::object disk(const test::VigildProcess& d) {
  const auto r = test::http_request(d.http(), "GET", "/api/v1/disks");
  REQUIRE(r.status == 200);
  return r.json().at("disks").as_array().at(0).as_object();
}

}  // namespace

TEST_CASE("a disk slower than its profile: vigild recalibrates, says so, keeps recording and admitting",
          "[admission][fault][model]") {
  test::TempDir dir;
  const auto profile = test::make_sim_profile(dir.path());
  const auto clip = test::make_h264_clip(dir.path(), 8);
  auto args = test::sim_volume_args(dir.path(), profile);
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--model-check-cycles") args[i + 1] = "5";  // on, over 5 cycles (1 s)
  }
  // Every write from the 20th on (the volume is in service, the first segment open) is slow.
  args.insert(args.end(), {"--fault-plan", "0:slow@20+"});
  test::VigildProcess d(dir.path() / "data", args);
  REQUIRE(d.wait_ready());
  const auto before = test::largest_new_rate(d);
  REQUIRE(before > 0);

  // A camera records at real time: its stream IO is what turns slow.
  SpawnOptions o;
  o.argv = {VIGIL_CLI_PATH, "--server", d.wire(), "record", "--stream", "cam", clip.string(), "--as-live"};
  o.output_file = dir.path() / "cam.log";
  auto camera = ChildProcess::spawn(o);

  INFO(d.output());
  REQUIRE(test::eventually([&] { return d.output().find("disk model optimistic: recalibrated") != std::string::npos; },
                           30s));
  const auto recalibrated = disk(d);
  CHECK(recalibrated.at("model_scale").as_double() > 1.5);
  CHECK(recalibrated.at("model_recalibrations").as_int64() >= 1);
  CHECK_FALSE(recalibrated.at("model_optimistic").as_bool());  // not paused
  const auto prom = test::parse_prometheus_text(test::http_request(d.http(), "GET", "/metrics").body);
  CHECK(prom.sum("vigil_disk_model_recalibrations_total") >= 1);
  CHECK(prom.sum("vigil_disk_model_scale_ratio") > 1.5);

  // Admission goes on under the slower model: less room than the profile promised, not none.
  const auto after = test::largest_new_rate(d);
  CHECK(after < before);
  CHECK(after > 0);
  auto second = test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "cam2", clip.string()},
                                  dir.path() / "cam2.log");
  INFO(second.output);
  CHECK(second.status == 0);
  CHECK_THAT(second.output, ContainsSubstring("200 acknowledged as durable"));

  // The camera that was recording when the disk turned slow kept every packet.
  CHECK(camera.wait() == 0);
  std::ifstream in(dir.path() / "cam.log");
  const std::string first(std::istreambuf_iterator<char>(in), {});
  INFO(first);
  CHECK_THAT(first, ContainsSubstring("recorded 200 packets of cam"));
  CHECK_THAT(first, ContainsSubstring("200 acknowledged as durable"));
}
