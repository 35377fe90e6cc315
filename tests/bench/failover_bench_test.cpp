// `vigil bench failover --quick` end to end: its front door and two recording nodes on one
// catalog, four simulated RTSP cameras, two kills of the busiest node. Checked: what it measured
// is complete and consistent (every camera the killed nodes held resumed elsewhere and has its
// failover gap; the resume times are real durations), not how fast (speed is the bench's figure).
// Its archive part (archiver off and on, four wire cameras, SeaweedFS) runs where SeaweedFS is
// built: every packet acknowledged in both phases, acknowledgement delays and copy rates measured.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/support/seaweedfs_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("vigil bench failover kills the busiest node and every one of its cameras resumes elsewhere",
          "[bench][failover]") {
  vigil::test::TempDir dir;
  const auto json = dir.path() / "failover.json";
  auto r =
      vigil::test::run_to_exit(VIGIL_CLI_PATH,
                               {"bench", "failover", "--quick", "--dir", dir.path().string(), "--json", json.string()},
                               dir.path() / "out.log");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, ContainsSubstring("Nx Witness"));

  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = boost::json::parse(ss.str()).as_object();
  CHECK(doc.at("parameters").as_object().at("nodes").to_number<int>() == 2);
  CHECK(doc.at("parameters").as_object().at("kills").to_number<int>() == 2);
  // Placement spread the four cameras over both nodes before the first kill.
  const auto& placed = doc.at("parameters").as_object().at("placement_at_start").as_object();
  int placed_total = 0;
  for (const auto& [node, n] : placed) {
    CHECK(n.to_number<int>() >= 1);
    placed_total += n.to_number<int>();
  }
  CHECK(placed.size() == 2);
  CHECK(placed_total == 4);
  std::map<std::string, std::pair<double, double>> figures;  // ours, reference
  for (const auto& f : doc.at("figures").as_array()) {
    const auto& o = f.as_object();
    figures[std::string(o.at("name").as_string())] = {o.at("ours").to_number<double>(),
                                                      o.at("reference").to_number<double>()};
  }
  const auto [resumed, moved] = figures.at("cameras resumed after a kill");
  CHECK(moved >= 2);  // each kill took at least one camera down
  CHECK(resumed == moved);
  CHECK(figures.at("failover gaps in the timelines").first == moved);
  CHECK(figures.at("resume p99").first > 0);
  CHECK(figures.at("resume p99").first >= figures.at("resume p50 (kill -9 → first frame elsewhere)").first);
  CHECK(figures.at("failover gap p50").first > 0);
  if (vigil::test::seaweedfs_binary().empty()) {
    CHECK_THAT(r.output, ContainsSubstring("archive part skipped: no SeaweedFS binary"));
  } else {
    const auto [ack_on, ack_off] = figures.at("recording ack delay p99, archiver on");
    CHECK(ack_on > 0);
    CHECK(ack_off > 0);
    CHECK(figures.at("archive copy rate while recording").first > 0);
    CHECK(figures.at("archive upload throughput, backlog").first > 0);
    // Every packet sent was acknowledged durable, in both phases (4 cameras x 10 s x 25 fps).
    for (const char* phase : {"archiver off", "archiver on"}) {
      std::smatch m;
      const std::regex counts(std::string(phase) + R"(: (\d+) of (\d+) packets acknowledged)");
      REQUIRE(std::regex_search(r.output, m, counts));
      CHECK(m[1].str() == m[2].str());
      CHECK(std::stoi(m[2].str()) == 1000);
    }
  }
  // The scratch directory (nodes' volumes, the front door's catalog, the object store) is gone.
  int left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    left += e.path().filename().string().starts_with("vigil-bench-failover");
  CHECK(left == 0);
}
