// The scrubber's repair from an archive copy on a running vigild (docs/scrubber.md, "Repair"): a
// real H.264 recording in 1-s segments is copied to SeaweedFS and verified; then one byte inside a
// closed segment's record is flipped on the volume file. Within an epoch (shortened with the
// hidden --scrub-epoch-ms) the scrubber finds it — a 'corruption' gap, counted — and, the segment
// having a verified copy, makes the footage whole again: the segment is served from its copy
// ('archived', its damaged extents freed), the gap is gone, a log line and
// vigil_scrub_repaired_segments_total say so, and the export of the whole range is byte for byte
// the export taken before the damage. Later epochs find nothing more. Against a vigild that does
// not repair, the gap stays and the export differs or loses the damaged GOP: the test fails.
// Skipped, saying so, when SeaweedFS is not built (deploy/seaweedfs.sh). Label "s3".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <array>
#include <chrono>
#include <filesystem>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/seaweedfs_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE("a damaged segment with a verified archive copy is repaired: no gap, the same export",
          "[vigild][scrub][archive][s3]") {
  const std::string binary = test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");
  test::SeaweedFs weed(binary);
  REQUIRE(weed.make_bucket("vigil-archive"));

  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 4);  // 100 packets, a keyframe a second
  const auto data = dir.path() / "data";
  auto args = test::sim_volume_args(dir.path(), test::make_sim_profile(dir.path()));
  args.insert(args.end(), {"--segment-max", "1", "--archive-endpoint", "127.0.0.1:" + std::to_string(weed.s3_port),
                           "--archive-credentials", test::seaweed_credentials_file(dir.path()).string(),
                           "--archive-poll-ms", "200", "--scrub-epoch-ms", "300"});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  pqxx::connection c("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  const auto one = [&](const std::string& sql) { return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>(); };
  const std::string disk = std::filesystem::absolute(dir.path() / "vol").string();
  const auto scrape = [&] { return test::parse_prometheus_text(test::http_request(d.http(), "GET", "/metrics").body); };

  {
    auto rec =
        test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "gate", clip.string(), "--fast"},
                          dir.path() / "record.log");
    INFO(rec.output);
    REQUIRE(rec.status == 0);
  }
  test::wait_for_closed_frames(data, 100);
  const auto segments = one("SELECT count(*) FROM segments WHERE state = 'closed'");
  REQUIRE(segments >= 3);  // 4 s in 1-s segments
  REQUIRE(one("SELECT count(*) FROM segments WHERE checksum_crc32c = 0") == 0);
  // Every segment copied and verified before anything is damaged.
  REQUIRE(test::eventually([&] { return one("SELECT count(*) FROM segment_copies") == segments; }, 30s));

  // The export while every segment is whole on the volume.
  const std::string path = "/api/v1/cameras/gate/export.mp4?from=-1h&to=@" + std::to_string(now_s() + 3600);
  const auto before = test::http_request(d.http(), "GET", path);
  REQUIRE(before.status == 200);
  REQUIRE(before.body.size() > 10000);
  CHECK(scrape().value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 0);
  // The timeline's runs (start, end, segments) while whole: the one after the repair must match.
  const auto runs = [&] {
    const auto reply = test::http_request(d.http(), "GET", "/api/v1/cameras/gate/timeline?from=-1h");
    REQUIRE(reply.status == 200);
    const auto body = reply.json();
    std::vector<std::array<std::int64_t, 3>> out;
    for (const auto& r : body.at("runs").as_array()) {
      out.push_back({r.at("start_us").to_number<std::int64_t>(), r.at("end_us").to_number<std::int64_t>(),
                     r.at("segments").to_number<std::int64_t>()});
    }
    CHECK(body.at("gaps").as_array().empty());
    return out;
  };
  const auto runs_before = runs();
  REQUIRE(runs_before.size() == 1);

  // The second segment, a byte three quarters into its data (a record's payload or header).
  std::int64_t id = 0;
  off_t at = 0;
  {
    pqxx::nontransaction q(c);
    const auto seg = q.exec1(
        "SELECT s.id, s.data_bytes, e.length_bytes FROM segments s "
        "JOIN segment_extents e ON e.segment_id = s.id AND e.ordinal = 0 "
        "WHERE s.state = 'closed' ORDER BY s.start_us OFFSET 1 LIMIT 1");
    id = seg[0].as<std::int64_t>();
    const auto data_bytes = seg[1].as<std::uint64_t>(), extent_bytes = seg[2].as<std::uint64_t>();
    const std::uint64_t logical = data_bytes * 3 / 4;
    const auto extent =
        q.exec1("SELECT volume_offset_bytes FROM segment_extents WHERE segment_id = " + std::to_string(id) +
                " AND ordinal = " + std::to_string(logical / extent_bytes));
    at = static_cast<off_t>(extent[0].as<std::uint64_t>() + logical % extent_bytes);
  }
  REQUIRE(test::flip_byte(disk, at));

  // Found (a corruption gap, counted), then repaired from the copy.
  const bool repaired = test::eventually(
      [&] {
        return scrape().value("vigil_scrub_repaired_segments_total", {{"disk", disk}}) == 1;
      },
      30s);
  if (!repaired) FAIL("the damaged segment was not repaired; vigild said:\n" << d.output());
  CHECK(scrape().value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 1);
  const std::string seg = std::to_string(id);
  CHECK_THAT(d.output(), Catch::Matchers::ContainsSubstring("msg=\"scrub found a damaged segment\" segment=" + seg));
  CHECK_THAT(d.output(), Catch::Matchers::ContainsSubstring("scrub repaired a damaged segment"));
  CHECK_THAT(d.output(), Catch::Matchers::ContainsSubstring("gaps_removed=1"));
  // The timeline has no hole: the gap is gone, the segment is read from its copy.
  CHECK(one("SELECT count(*) FROM gaps") == 0);
  CHECK(one("SELECT count(*) FROM segments WHERE id = " + seg + " AND state = 'archived'") == 1);
  CHECK(one("SELECT count(*) FROM segment_extents WHERE segment_id = " + seg) == 0);
  CHECK(one("SELECT count(*) FROM segments WHERE state = 'closed'") == segments - 1);
  {
    // One run over the same segments, no gap. (Its end may have moved later: a segment the
    // recording node still held in memory at the first look is the catalog's row now.)
    const auto runs_after = runs();
    REQUIRE(runs_after.size() == 1);
    CHECK(runs_after[0][0] == runs_before[0][0]);
    CHECK(runs_after[0][1] >= runs_before[0][1]);
    CHECK(runs_after[0][2] == runs_before[0][2]);
  }

  // The export of the same range: the same bytes as before the damage (built again, not cached).
  const auto after = test::http_request(d.http(), "GET", path);
  INFO(after.head);
  REQUIRE(after.status == 200);
  CHECK(after.header("ETag") != before.header("ETag"));
  CHECK(after.body.size() == before.body.size());
  CHECK((after.body == before.body));

  // Later epochs verify the intact segments again and find nothing more.
  const double seen = scrape().value("vigil_scrub_segments_total", {{"disk", disk}}).value_or(0);
  REQUIRE(test::eventually(
      [&] {
        return scrape().value("vigil_scrub_segments_total", {{"disk", disk}}) >= seen + (segments - 1);
      },
      20s));
  const auto m = scrape();
  CHECK(m.value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 1);
  CHECK(m.value("vigil_scrub_repaired_segments_total", {{"disk", disk}}) == 1);
  CHECK(one("SELECT count(*) FROM gaps") == 0);
}
