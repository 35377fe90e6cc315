// The integrity scrubber on a running vigild: a recording lands in several closed segments, each
// verified by the scrubber without a finding; then one byte inside a closed segment's record is
// flipped on the volume file, and within an epoch (shortened with the hidden --scrub-epoch-ms)
// it becomes a 'corruption' gap on that stream over the damaged records' time, a log line naming
// segment and volume, and vigil_scrub_corrupt_segments_total — and the intact segments stay
// unflagged. Against a vigild without a scrubber (or one that stores no segment checksum) no gap
// ever appears and the test fails.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>
#include <pqxx/pqxx>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"

using namespace vigil;
using namespace std::chrono_literals;

TEST_CASE("the scrubber turns a flipped byte in a closed segment into a corruption gap", "[vigild][scrub]") {
  test::RecordingRig rig({"--segment-max", "1", "--scrub-epoch-ms", "300"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto rec = test::record_acked(d, "gate", 150, 20);  // 6 s of media: segments of 1 to 2 s
  pqxx::connection c(rig.catalog());
  const auto one = [&](const std::string& sql) { return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>(); };
  const std::string stream = std::to_string(rec.stream);
  REQUIRE(test::eventually(
      [&] {
        return one("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed' AND stream_id = " +
                   stream) == 150;
      },
      20s));
  // Every closed segment carries its checksum.
  CHECK(one("SELECT count(*) FROM segments WHERE stream_id = " + stream + " AND checksum_crc32c = 0") == 0);
  const auto closed = one("SELECT count(*) FROM segments WHERE state = 'closed' AND stream_id = " + stream);
  REQUIRE(closed >= 3);

  const std::string disk = std::filesystem::absolute(rig.dir.path() / "vol").string();
  const auto scrape = [&] { return test::parse_prometheus_text(test::http_request(d.http(), "GET", "/metrics").body); };
  // A whole epoch over the intact segments: nothing found.
  REQUIRE(test::eventually(
      [&] {
        return scrape().value("vigil_scrub_segments_total", {{"disk", disk}}) >= closed;
      },
      20s));
  CHECK(scrape().value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 0);
  CHECK(one("SELECT count(*) FROM gaps WHERE reason = 'corruption'") == 0);

  // The second segment, a byte three quarters into its data (a record's payload or header).
  std::int64_t id = 0, start_us = 0, end_us = 0;
  off_t at = 0;
  {
    pqxx::nontransaction q(c);  // closed before `one` opens its own on the same connection
    const auto seg = q.exec1(
        "SELECT s.id, s.start_us, s.end_us, s.data_bytes, e.length_bytes FROM segments s "
        "JOIN segment_extents e ON e.segment_id = s.id AND e.ordinal = 0 "
        "WHERE s.stream_id = " +
        stream + " AND s.state = 'closed' ORDER BY s.start_us OFFSET 1 LIMIT 1");
    id = seg[0].as<std::int64_t>();
    start_us = seg[1].as<std::int64_t>();
    end_us = seg[2].as<std::int64_t>();
    const auto data_bytes = seg[3].as<std::uint64_t>(), extent_bytes = seg[4].as<std::uint64_t>();
    const std::uint64_t logical = data_bytes * 3 / 4;
    const auto extent =
        q.exec1("SELECT volume_offset_bytes FROM segment_extents WHERE segment_id = " + std::to_string(id) +
                " AND ordinal = " + std::to_string(logical / extent_bytes));
    at = static_cast<off_t>(extent[0].as<std::uint64_t>() + logical % extent_bytes);
  }
  REQUIRE(test::flip_byte(disk, at));

  REQUIRE(test::eventually([&] { return one("SELECT count(*) FROM gaps WHERE reason = 'corruption'") >= 1; }, 30s));
  const auto gap =
      pqxx::nontransaction(c).exec1("SELECT stream_id, start_us, end_us, detail FROM gaps WHERE reason = 'corruption'");
  CHECK(gap[0].as<std::int64_t>() == static_cast<std::int64_t>(rec.stream));
  // Inside the damaged segment, and only the damaged records' time, not the whole segment.
  CHECK(gap[1].as<std::int64_t>() >= start_us);
  CHECK(gap[2].as<std::int64_t>() <= end_us);
  CHECK(gap[2].as<std::int64_t>() > gap[1].as<std::int64_t>());
  CHECK(gap[2].as<std::int64_t>() - gap[1].as<std::int64_t>() < end_us - start_us);
  CHECK_THAT(gap[3].as<std::string>(), Catch::Matchers::ContainsSubstring("segment " + std::to_string(id)));
  REQUIRE(test::eventually(
      [&] {
        return scrape().value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 1;
      },
      10s));
  // Later epochs find it again but record it once; the intact segments are never flagged.
  const double seen = scrape().value("vigil_scrub_segments_total", {{"disk", disk}}).value_or(0);
  REQUIRE(test::eventually(
      [&] {
        return scrape().value("vigil_scrub_segments_total", {{"disk", disk}}) >= seen + closed;
      },
      20s));
  CHECK(one("SELECT count(*) FROM gaps WHERE reason = 'corruption'") == 1);
  CHECK(scrape().value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 1);
  CHECK_THAT(d.output(), Catch::Matchers::ContainsSubstring("scrub found a damaged segment"));
}

// Promotion of overdue reads (docs/scrubber.md): with an epoch of 1 ms every segment's slot has
// ended before its read starts, so each read is registered promoted — interactive requests within
// the interactive share instead of the cycles' slack — and still verifies every segment without a
// finding. vigil_scrub_promoted_total counts them; a scrubber that never promotes fails this.
TEST_CASE("scrub reads past their slot in the epoch are promoted and still verify", "[vigild][scrub]") {
  test::RecordingRig rig({"--segment-max", "1", "--scrub-epoch-ms", "1"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto rec = test::record_acked(d, "yard", 75, 25);  // 3 s of media
  pqxx::connection c(rig.catalog());
  const auto one = [&](const std::string& sql) { return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>(); };
  const std::string stream = std::to_string(rec.stream);
  REQUIRE(test::eventually(
      [&] {
        return one("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed' AND stream_id = " +
                   stream) == 75;
      },
      20s));
  const auto closed = one("SELECT count(*) FROM segments WHERE state = 'closed' AND stream_id = " + stream);
  REQUIRE(closed >= 2);
  const std::string disk = std::filesystem::absolute(rig.dir.path() / "vol").string();
  const auto scrape = [&] { return test::parse_prometheus_text(test::http_request(d.http(), "GET", "/metrics").body); };
  REQUIRE(test::eventually(
      [&] {
        const auto m = scrape();
        return m.value("vigil_scrub_segments_total", {{"disk", disk}}) >= closed &&
               m.value("vigil_scrub_promoted_total", {{"disk", disk}}) >= closed;
      },
      20s));
  const auto m = scrape();
  // Every read was overdue from the start: as many promoted as read (a read in flight may be counted
  // promoted before it is counted verified).
  CHECK(m.value("vigil_scrub_promoted_total", {{"disk", disk}}) >=
        m.value("vigil_scrub_segments_total", {{"disk", disk}}));
  CHECK(m.value("vigil_scrub_corrupt_segments_total", {{"disk", disk}}) == 0);
  CHECK(one("SELECT count(*) FROM gaps WHERE reason = 'corruption'") == 0);
  CHECK(test::eventually([&] { return d.output().find("were promoted to interactive requests") != std::string::npos; },
                         20s));
}
