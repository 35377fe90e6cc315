// A recording session against a real vigild over loopback: hello, open-record admitted with
// its cycle and buffer sizes, packets in (a sender that overruns its admitted rate is refused
// packet by packet with RATE_EXCEEDED and sends those again later, like the client-side
// buffer of the Xtream proxy), durable acknowledgements out, and after the client closes its
// side every packet is acknowledged and the stream's segments are in the catalog. A rate that
// does not fit is refused with the largest rate that would.
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>
#include <memory>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

using test::media_packet;
using test::open_record;
using Rig = test::RecordingRig;

TEST_CASE("a recording session is admitted, acknowledged and lands in the catalog", "[vigild][recording]") {
  Rig rig;
  auto& d = *rig.vigild;
  client::WireClient c(d.wire(), 20s);
  c.hello("recording test", vigil::test::token());
  c.send(open_record("door-cam", 2'000'000));
  auto admitted = c.receive();
  INFO(d.output());
  REQUIRE(admitted.msg.has_admit());
  const auto& a = admitted.msg.admit();
  CHECK(a.cycle_us() == 200'000);
  CHECK(a.buffer_bytes() >= 50'000);  // T·BR = 0.2 s × 250 kB/s
  CHECK(a.chunk_bytes() > 0);
  const auto stream = a.stream_id();

  // Send 120 packets (~0.4 MB, several cycles' worth) in bursts of 40 — more than one 50 kB
  // cycle holds, so the server polices. Like the Xtream client proxy, the sender keeps what was
  // not acknowledged and resends from the first refused packet once a cycle has taken data.
  const std::uint64_t total = 120;
  test::PacedSender sender(c, stream);
  sender.send_until(total, 40);
  CHECK(sender.counts().bursts_refused > 0);  // 120 packets of up to 6 kB do not fit in one 50 kB cycle
  // Done: close the sending side and read acknowledgements to the end.
  sender.finish();
  CHECK(sender.counts().acked == total);

  // The catalog gets the stream's segments through the batcher (bounded delay).
  pqxx::connection conn(rig.catalog());
  std::uint64_t frames = 0;
  std::string state;
  for (int i = 0; i < 100; ++i) {
    pqxx::nontransaction q(conn);
    frames = q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1",
                            static_cast<std::int64_t>(stream))[0]
                 .as<std::uint64_t>();
    state = q.exec_params1("SELECT state FROM streams WHERE id = $1", static_cast<std::int64_t>(stream))[0]
                .as<std::string>();
    if (frames == total && state == "stopped") break;
    std::this_thread::sleep_for(100ms);  // polling a bounded wait for the batcher, not timing
  }
  CHECK(frames == total);
  CHECK(state == "stopped");

  // A rate the disk cannot take is refused, with the largest that would fit.
  client::WireClient c2(d.wire(), 20s);
  c2.hello("recording test", vigil::test::token());
  c2.send(open_record("huge-cam", 10'000'000'000));
  auto refusal = c2.receive();
  REQUIRE(refusal.msg.has_refuse());
  CHECK(refusal.msg.refuse().reason_code() == proto::REFUSE_REASON_DISK_FULL_LOAD);
  CHECK(refusal.msg.refuse().largest_rate_bps() > 0);
  CHECK(refusal.msg.refuse().largest_rate_bps() < 10'000'000'000);
  CHECK_THAT(refusal.msg.refuse().reason(), ContainsSubstring("largest rate that fits"));
  REQUIRE(d.stop(SIGTERM) == 0);
}

TEST_CASE("recording sessions: bad packets are refused one by one, a vanished client ends its stream",
          "[vigild][recording]") {
  Rig rig;
  auto& d = *rig.vigild;
  std::uint64_t stream = 0, acked = 0;
  {
    client::WireClient c(d.wire(), 20s);
    c.hello("bad client", vigil::test::token());
    c.send(open_record("gate", 2'000'000));
    auto a = c.receive();
    REQUIRE(a.msg.has_admit());
    stream = a.msg.admit().stream_id();
    auto packet = [&](std::uint64_t id, std::uint64_t seq) {
      auto [p, payload] = media_packet(id, seq, stream);
      c.send(p, payload);
    };
    auto expect_error = [&](proto::ErrorCode code, std::uint64_t seq) {
      try {
        c.receive();
        FAIL("expected an error");
      } catch (const client::ServerError& e) {
        CHECK(e.code == code);
        CHECK(e.related_sequence == seq);
      }
    };
    packet(stream + 100, 1);  // another stream's id
    expect_error(proto::ERROR_CODE_INVALID_ARGUMENT, 1);
    packet(stream, 5);  // out of order: 1 is expected
    expect_error(proto::ERROR_CODE_INVALID_ARGUMENT, 5);
    c.send(open_record("gate-2", 1'000'000));  // one recording per session
    try {
      c.receive();
      FAIL("expected an error");
    } catch (const client::ServerError& e) {
      CHECK(e.code == proto::ERROR_CODE_INVALID_ARGUMENT);
    }
    // The session survived all that: record 10 packets and see them acknowledged.
    for (std::uint64_t seq = 1; seq <= 10; ++seq) packet(stream, seq);
    while (acked < 10) {
      auto r = c.receive();
      if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
    }
    packet(stream, 11);  // then the client vanishes without a word
  }
  // The stream is ended by the server; what was acknowledged is in the catalog.
  pqxx::connection conn(rig.catalog());
  std::string state;
  std::uint64_t frames = 0;
  for (int i = 0; i < 100; ++i) {
    pqxx::nontransaction q(conn);
    state = q.exec_params1("SELECT state FROM streams WHERE id = $1", static_cast<std::int64_t>(stream))[0]
                .as<std::string>();
    frames = q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1",
                            static_cast<std::int64_t>(stream))[0]
                 .as<std::uint64_t>();
    if (state != "recording" && frames >= acked) break;
    std::this_thread::sleep_for(100ms);  // bounded wait for the batcher
  }
  CHECK(state != "recording");
  CHECK(frames >= acked);

  // The camera records again: a new stream, and the hole in between is a gap with its reason.
  {
    client::WireClient c(d.wire(), 20s);
    c.hello("back again", vigil::test::token());
    c.send(open_record("gate", 2'000'000));
    auto a = c.receive();
    REQUIRE(a.msg.has_admit());
    CHECK(a.msg.admit().stream_id() != stream);
  }
  pqxx::nontransaction q(conn);
  auto gap = q.exec_params("SELECT reason, detail, end_us > start_us FROM gaps WHERE stream_id = $1",
                           static_cast<std::int64_t>(stream));
  REQUIRE(gap.size() == 1);
  CHECK(gap[0][0].as<std::string>() == "source_lost");
  CHECK_THAT(gap[0][1].as<std::string>(), ContainsSubstring("continues in a new stream"));
  CHECK(gap[0][2].as<bool>());
  REQUIRE(d.stop(SIGTERM) == 0);
}
