// A recorder that stops sending without closing its connection (SIGSTOP, a hung camera) no longer
// keeps its disk share: after --stall-timeout without a byte vigild ends the recording as
// 'stalled', releases its share, and the hole from its last frame is a source_stalled gap that
// the camera's next recording continues. A recorder that keeps sending is never ended.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <thread>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

std::string stream_state(pqxx::connection& conn, std::uint64_t stream) {
  pqxx::nontransaction q(conn);
  return q.exec_params1("SELECT state FROM streams WHERE id = $1", static_cast<std::int64_t>(stream))[0]
      .as<std::string>();
}

// Streams admitted on vigild's one disk, as GET /api/v1/disks shows them.
std::int64_t admitted_streams(const test::VigildProcess& d) {
  const auto r = test::http_request(d.http(), "GET", "/api/v1/disks");
  REQUIRE(r.status == 200);
  const auto disks = boost::json::parse(r.body).at("disks").as_array();
  REQUIRE(disks.size() == 1);
  return disks[0].at("admitted").at("count").to_number<std::int64_t>();
}

}  // namespace

TEST_CASE("a stalled recorder's recording ends: share released, state stalled, a source_stalled gap",
          "[vigild][recording][stall]") {
  test::RecordingRig rig({"--stall-timeout", "1"});
  auto& d = *rig.vigild;
  pqxx::connection conn(rig.catalog());

  client::WireClient c(d.wire(), 30s);
  const auto stream = test::open_admitted(c, "porch", 2'000'000);
  test::PacedSender sender(c, stream);
  // 10 frames (0.4 s of video, sent at once): the stall is detected after their media time ends.
  sender.send_until(10, 10);
  CHECK(admitted_streams(d) == 1);

  // The recorder goes quiet with its connection open.
  INFO(d.output());
  REQUIRE(test::eventually([&] { return stream_state(conn, stream) == "stalled"; }, 30s));
  CHECK(admitted_streams(d) == 0);
  CHECK(d.output().find("recording source stalled") != std::string::npos);
  {
    pqxx::nontransaction q(conn);
    const auto gaps = q.exec_params1(
        "SELECT count(*), COALESCE(min(end_us - start_us), 0) FROM gaps "
        "WHERE stream_id = $1 AND reason = 'source_stalled'",
        static_cast<std::int64_t>(stream));
    CHECK(gaps[0].as<int>() == 1);
    // From the last frame's end (0.4 s after the first) to at least a timeout after the last byte.
    CHECK(gaps[1].as<std::int64_t>() >= 600'000);
    // Everything acknowledged before the stall is recorded.
    const auto frames = q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1",
                                       static_cast<std::int64_t>(stream))[0]
                            .as<std::uint64_t>();
    CHECK(frames == 10);
  }

  // The camera comes back: a new stream, and the stalled hole continues up to it.
  client::WireClient again(d.wire(), 30s);
  test::open_admitted(again, "porch", 2'000'000);
  pqxx::nontransaction q(conn);
  CHECK(q.exec_params1("SELECT count(*) FROM gaps WHERE stream_id = $1 AND reason = 'source_stalled'",
                       static_cast<std::int64_t>(stream))[0]
            .as<int>() == 2);
}

TEST_CASE("a recorder that keeps sending is not taken for stalled", "[vigild][recording][stall]") {
  test::RecordingRig rig({"--stall-timeout", "2"});
  auto& d = *rig.vigild;
  client::WireClient c(d.wire(), 30s);
  const auto stream = test::open_admitted(c, "lobby", 2'000'000);
  // A camera that sends a burst every 300 ms, for longer than the stall timeout: the recording stays.
  test::PacedSender sender(c, stream);
  for (std::uint64_t last = 10; last <= 100; last += 10) {
    sender.send_until(last, 10);
    std::this_thread::sleep_for(300ms);  // the simulated camera's pace, well inside the 2 s timeout
  }
  sender.finish();
  CHECK(sender.counts().acked == 100);
  pqxx::connection conn(rig.catalog());
  REQUIRE(test::eventually([&] { return stream_state(conn, stream) != "recording"; }, 30s));
  CHECK(stream_state(conn, stream) == "stopped");
  CHECK(d.output().find("recording source stalled") == std::string::npos);
}
