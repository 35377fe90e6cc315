// vigild closes a recording's segment by time as well as by size (--segment-max): 4 s of media
// recorded with --segment-max 1 lands in several closed segments of one to two seconds each
// (each ends where the next can begin with a keyframe: docs/format.md), one run
// without a hole, every frame in the catalog. Against a server that rotates by size only, the whole
// recording is one segment and the test fails.
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <pqxx/pqxx>

#include "tests/support/eventually.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"

using namespace vigil;
using namespace std::chrono_literals;

TEST_CASE("a recording's segments close at --segment-max seconds of media", "[vigild][segment]") {
  test::RecordingRig rig({"--segment-max", "1"});
  auto& d = *rig.vigild;
  INFO(d.output());
  // 100 script frames at 25 fps: 4 s of media.
  const auto rec = test::record_acked(d, "gate", 100, 20);
  pqxx::connection c(rig.catalog());
  const auto closed_frames = [&] {
    return pqxx::nontransaction(c)
        .exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1 AND state = 'closed'",
                      static_cast<std::int64_t>(rec.stream))[0]
        .as<std::int64_t>();
  };
  REQUIRE(test::eventually([&] { return closed_frames() == 100; }, 20s));
  pqxx::nontransaction q(c);
  const auto rows =
      q.exec_params("SELECT start_us, end_us, frame_count FROM segments WHERE stream_id = $1 ORDER BY start_us",
                    static_cast<std::int64_t>(rec.stream));
  CHECK(rows.size() >= 2);
  std::int64_t frames = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto start = rows[i][0].as<std::int64_t>(), end = rows[i][1].as<std::int64_t>();
    // From a second on, at a keyframe (a GOP here), or at twice --segment-max: never the whole recording.
    CHECK(end - start < 2'500'000);
    if (i > 0) CHECK(start == rows[i - 1][1].as<std::int64_t>());  // one run without a hole
    frames += rows[i][2].as<std::int64_t>();
  }
  CHECK(frames == 100);
}
