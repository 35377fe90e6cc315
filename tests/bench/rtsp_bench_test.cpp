// `vigil bench rtsp --quick` end to end with two small cameras: its camera farm serves them over
// RTSP, a vigild it starts pulls and records both, and it reports what it measured (the
// figures' structure and the outcomes, not speed). The peer is left out (--no-peer): MediaMTX
// is not part of the build, and the bench must say so rather than fail.
#include <boost/json.hpp>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("vigil bench rtsp records its simulated cameras, measures both sides' figures and cleans up",
          "[bench][rtsp]") {
  vigil::test::TempDir dir;
  const auto json = dir.path() / "rtsp.json";
  auto r = vigil::test::run_to_exit(VIGIL_CLI_PATH,
                                    {"bench", "rtsp", "--quick", "--cameras", "2", "--warmup", "1", "--seconds", "3",
                                     "--no-peer", "--dir", dir.path().string(), "--json", json.string()},
                                    dir.path() / "out.log");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, ContainsSubstring("CPU per Gbit/s (server + children)"));
  CHECK_THAT(r.output, ContainsSubstring("peer skipped"));

  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = boost::json::parse(ss.str()).as_object();
  CHECK(doc.at("parameters").as_object().at("cameras").to_number<int>() == 2);
  CHECK(doc.at("parameters").as_object().at("peer").as_string() == "skipped");
  std::map<std::string, double> ours;
  for (const auto& f : doc.at("figures").as_array()) {
    const auto& o = f.as_object();
    ours[std::string(o.at("name").as_string())] = o.at("ours").to_number<double>();
    CHECK(o.at("reference_source").is_string());
  }
  CHECK(ours.at("cameras recording") == 2);  // both cameras' first packets stored
  CHECK(ours.at("stored during the window") > 0);
  // Two 1 Mbit/s cameras over 3 s can cost less than one clock tick (10 ms) of CPU in all of
  // Vigil's processes: the figure is checked for what it is (CPU over what was stored), not for
  // a machine's speed.
  CHECK(ours.at("CPU of server + children") >= 0);
  CHECK(ours.at("CPU per Gbit/s (server + children)") ==
        Catch::Approx(ours.at("CPU of server + children") / ours.at("stored during the window")).epsilon(1e-6));
  CHECK(ours.at("add -> first packet stored p50") > 0);
  CHECK(ours.at("add -> first packet stored max") >= ours.at("add -> first packet stored p50"));
  CHECK(ours.at("removal of all cameras") >= 0);                // every camera removed within the time-out
  CHECK(ours.at("gaps in the timeline while recording") == 0);  // two small cameras: nothing lost
  CHECK(ours.contains("memory per camera (PSS above idle)"));
  CHECK(ours.contains("camera farm CPU during the window"));  // measured apart from the server's

  // Its scratch directory (volume, vigild's data, the farm's log) is gone.
  std::size_t left = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path()))
    left += e.path().filename().string().starts_with("vigil-bench-rtsp") ? 1 : 0;
  CHECK(left == 0);
}
