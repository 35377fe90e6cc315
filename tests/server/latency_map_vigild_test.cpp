// The latency map in a running vigild (docs/latency-map.md "In vigild"), forced on with
// --latency-map on for this machine's volume file: the IO thread learns cells from its own
// commands (a recording, and the scrubber's reads of its closed segments at 300 ms epochs), saves
// the map next to the volume periodically and at shutdown; a restart loads it (the cell count in
// the log and /metrics); a damaged file is refused with a log line, startup goes on, and the map
// is learned again and saved whole. A vigild that never learns, never saves, or fails to start on
// a damaged file fails this. Also: what auto decides here (this machine's virtio disk says
// rotational = 1 in sysfs, and auto does not believe it).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>

#include "server/disks/disk_latency_map.hpp"
#include "storage/latency_map.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("vigild learns a latency map, saves it next to the volume, loads it, and relearns a damaged one",
          "[vigild][latency-map]") {
  const std::vector<std::string> map_on{"--latency-map",    "on",  "--latency-map-save-s", "1",
                                        "--scrub-epoch-ms", "300", "--segment-max",        "1"};
  test::RecordingRig rig(map_on);
  const auto vol = std::filesystem::absolute(rig.dir.path() / "vol");
  const auto file = storage::latency_map_path(vol);
  const std::string disk = vol.string();
  const auto metric = [&](const std::string& name) {
    return test::parse_prometheus_text(test::http_request(rig.vigild->http(), "GET", "/metrics").body)
        .value(name, {{"disk", disk}})
        .value_or(-1);
  };
  // The rig's volume: 256 MiB in extents of 4 MiB, the map's cells.
  const auto load = [&] { return storage::LatencyMap::load(file, 256 << 20, 4 << 20); };
  // SIGTERM: a clean shutdown, which saves the map.
  const auto stop = [&] {
    REQUIRE(rig.vigild->stop() == 0);
    CHECK_THAT(rig.vigild->output(), ContainsSubstring("when=shutdown"));
  };
  const auto start = [&](std::vector<std::string> extra) {
    rig.vigild.reset();
    std::vector<std::string> args{"--volume",
                                  disk,
                                  "--profile",
                                  (rig.dir.path() / "wd.json").string(),
                                  "--cycle-ms",
                                  "200",
                                  "--model-check-cycles",
                                  "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    rig.vigild = std::make_unique<test::VigildProcess>(rig.dir.path() / "data", args);
    REQUIRE(rig.vigild->wait_ready());
  };

  {
    INFO(rig.vigild->output());
    CHECK(metric("vigil_latency_map_enabled") == 1);
    CHECK(metric("vigil_latency_map_loaded_cells") == 0);
    test::record_acked(*rig.vigild, "gate", 100, 20);
    // Learned from the writes and the scrubber's reads, and saved by the periodic saver.
    REQUIRE(test::eventually([&] { return metric("vigil_latency_map_cells") > 0; }, 20s));
    REQUIRE(test::eventually([&] { return metric("vigil_latency_map_saves_total") >= 1; }, 20s));
    CHECK(std::filesystem::exists(file));
    CHECK_THAT(rig.vigild->output(), ContainsSubstring("latency map: none saved yet"));
  }

  // A clean shutdown saves the live map; a restart loads exactly that.
  stop();
  start(map_on);
  std::size_t saved = 0;
  {
    INFO(rig.vigild->output());
    auto map = load();
    REQUIRE(map.has_value());
    saved = map->learned_cells();
    REQUIRE(saved > 0);
    CHECK(metric("vigil_latency_map_loaded_cells") == static_cast<double>(saved));
    CHECK_THAT(rig.vigild->output(), ContainsSubstring("latency map loaded"));
    CHECK_THAT(rig.vigild->output(), ContainsSubstring("cells=" + std::to_string(saved)));
  }

  // Damaged while vigild is down: a byte inside the cells flipped (the CRC no longer matches).
  stop();
  {
    auto map = load();
    REQUIRE(map.has_value());
    REQUIRE(test::flip_byte(file, 44));  // the first cell's from-region
    REQUIRE_FALSE(load().has_value());
  }
  start(map_on);
  {
    INFO(rig.vigild->output());
    CHECK_THAT(rig.vigild->output(), ContainsSubstring("latency map refused, learning it again from scratch"));
    CHECK(metric("vigil_latency_map_loaded_cells") == 0);
    CHECK(metric("vigil_latency_map_enabled") == 1);
    // Relearned from the scrubber's reads of the closed segments, and saved whole again.
    REQUIRE(test::eventually([&] { return metric("vigil_latency_map_cells") > 0; }, 20s));
    REQUIRE(test::eventually([&] { return metric("vigil_latency_map_saves_total") >= 1; }, 20s));
  }
  stop();
  start({});  // the default, auto
  {
    INFO(rig.vigild->output());
    auto map = load();
    REQUIRE(map.has_value());
    CHECK(map->learned_cells() > 0);
    // Auto follows the device: on only where it rotates (not this machine's virtio disk).
    const auto media = server::probe_media(vol);
    CHECK(metric("vigil_latency_map_enabled") == (media.rotational ? 1 : 0));
    if (!media.rotational) CHECK_THAT(rig.vigild->output(), ContainsSubstring("latency map off"));
  }
}
