// A camera's tracks over the wire (docs/protocol.md, "Tracks"): OpenRecord.role/media_kind are
// validated (empty: main video; another word refused), a camera's sub stream is recorded over its
// own session beside its main video, and each is its own track everywhere: a playback plans one
// track (OpenPlayback.role), the timeline lists the sub stream apart (a StreamTimeline named
// CAMERA/sub on the wire, `substream` over HTTP),
// and a reconnect gaps only its own track's previous stream.
#include <sys/socket.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/recording_rig.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Records FRAMES script frames of camera NAME's track ROLE over one session (as record_script
// does), every one acknowledged, its first frame captured at FIRST_WALL_US (0: now); returns the
// stream id.
std::uint64_t record_track(test::RecordingRig& rig, const std::string& name, const std::string& role,
                           std::uint64_t frames, std::int64_t first_wall_us = 0) {
  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("track recorder", test::token());
  auto open = test::open_record(name, 64'000'000);
  open.mutable_open_record()->set_role(role);
  open.mutable_open_record()->set_first_wall_us(first_wall_us);
  c.send(open);
  auto a = c.receive();
  INFO(a.msg.DebugString());
  REQUIRE(a.msg.has_admit());
  const auto stream = a.msg.admit().stream_id();
  for (std::uint64_t seq = 1; seq <= frames; ++seq) {
    auto [p, payload] = test::media_packet(stream, seq, stream);
    c.send(p, payload);
  }
  ::shutdown(c.native_handle(), SHUT_WR);
  std::uint64_t acked = 0;
  try {
    for (;;) {
      auto r = c.receive();
      if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
    }
  } catch (const std::exception&) {}
  REQUIRE(acked == frames);
  // Until its segments' rows are committed (the batcher's bounded delay).
  pqxx::connection db(rig.catalog());
  REQUIRE(test::eventually([&] {
    pqxx::nontransaction q(db);
    return q.exec_params1(
                "SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1 AND "
                "state = 'closed'",
                static_cast<std::int64_t>(stream))[0]
               .as<std::uint64_t>() == frames;
  }));
  return stream;
}

// The refusal OpenRecord with ROLE and MEDIA_KIND gets.
proto::Refuse refused_open(test::RecordingRig& rig, const std::string& role, const std::string& media_kind) {
  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("track recorder", test::token());
  auto open = test::open_record("gate", 1'000'000);
  open.mutable_open_record()->set_role(role);
  open.mutable_open_record()->set_media_kind(media_kind);
  c.send(open);
  auto r = c.receive();
  REQUIRE(r.msg.has_refuse());
  return r.msg.refuse();
}

// Packets a playback of camera NAME's track ROLE delivers (every one, at 8x), or its refusal.
struct Played {
  std::optional<proto::Refuse> refused;
  proto::CodecParameters codec;
  std::size_t packets = 0;
};
Played play(test::RecordingRig& rig, const std::string& name, const std::string& role) {
  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("track viewer", test::token());
  proto::Envelope e;
  auto* o = e.mutable_open_playback();
  o->set_stream_name(name);
  o->set_role(role);
  o->set_start_us(now_us() - 3'600'000'000);
  o->set_end_us(now_us() + 1);
  o->set_rate(8);
  c.send(e);
  Played out;
  auto first = c.receive();
  if (first.msg.has_refuse()) {
    out.refused = first.msg.refuse();
    return out;
  }
  REQUIRE(first.msg.has_playback_started());
  out.codec = first.msg.playback_started().codec();
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_playback_end()) break;
    if (r.msg.has_media_packet()) ++out.packets;
  }
  return out;
}

}  // namespace

TEST_CASE("a camera's sub stream is a track of its own: recorded, played, listed and gapped apart", "[vigild][track]") {
  test::RecordingRig rig;
  // Unknown words are refused, naming the field.
  auto bad_role = refused_open(rig, "third", "");
  CHECK(bad_role.reason_code() == proto::REFUSE_REASON_INVALID_REQUEST);
  CHECK_THAT(bad_role.reason(), ContainsSubstring("role must be"));
  auto bad_kind = refused_open(rig, "", "text");
  CHECK(bad_kind.reason_code() == proto::REFUSE_REASON_INVALID_REQUEST);
  CHECK_THAT(bad_kind.reason(), ContainsSubstring("media_kind must be"));

  // Captured a minute ago (the admin token may backdate): each session's end is in the past, so
  // a reconnect now leaves a hole whatever the machine's speed.
  const std::int64_t t0 = now_us() - 60'000'000;
  const auto main_stream = record_track(rig, "gate", "", 100, t0);               // [t0, t0 + 4 s)
  const auto sub_stream = record_track(rig, "gate", "sub", 50, t0 + 1'000'000);  // [t0 + 1 s, t0 + 3 s)
  record_track(rig, "dock", "main", 25, t0);
  pqxx::connection db(rig.catalog());
  auto scalar = [&](const std::string& sql) {
    pqxx::nontransaction q(db);
    auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
  };
  CHECK(scalar("SELECT role || '/' || media_kind FROM streams WHERE id = " + std::to_string(main_stream)) ==
        "main/video");
  CHECK(scalar("SELECT role || '/' || media_kind FROM streams WHERE id = " + std::to_string(sub_stream)) ==
        "sub/video");
  // Both ended cleanly; the sub session's opening made no gap in the main one's.
  CHECK(scalar("SELECT count(*) FROM gaps") == "0");

  // Each track plays its own frames; a camera without a sub stream says so.
  const auto main = play(rig, "gate", "main");
  INFO((main.refused ? main.refused->reason() : std::string("played")));
  CHECK(main.packets == 100);
  CHECK(play(rig, "gate", "").packets == 100);
  const auto sub = play(rig, "gate", "sub");
  INFO((sub.refused ? sub.refused->reason() : std::string("played")));
  CHECK_FALSE(sub.refused.has_value());
  CHECK(sub.packets == 50);
  CHECK(sub.codec.codec_name() == "h264");
  const auto none = play(rig, "dock", "sub");
  REQUIRE(none.refused.has_value());
  CHECK(none.refused->reason_code() == proto::REFUSE_REASON_NO_SUCH_STREAM);
  CHECK_THAT(none.refused->reason(), ContainsSubstring("has no sub video stream"));
  const auto bad = play(rig, "gate", "third");
  REQUIRE(bad.refused.has_value());
  CHECK(bad.refused->reason_code() == proto::REFUSE_REASON_INVALID_REQUEST);

  // The timeline: gate's runs are its main video's (4 s), its sub stream's apart (2 s); dock has none.
  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("track query", test::token());
  proto::Envelope q;
  auto* qr = q.mutable_query_request();
  qr->set_request_id(1);
  qr->set_kind(proto::QUERY_KIND_TIMELINE);
  qr->set_from_us(now_us() - 3'600'000'000);
  qr->set_to_us(now_us() + 60'000'000);
  c.send(q);
  auto answer = c.receive();
  REQUIRE(answer.msg.has_query_response());
  // dock, gate, then gate's sub stream named by its track label; dock has none.
  const auto& timelines = answer.msg.query_response().timelines();
  REQUIRE(timelines.size() == 3);
  CHECK(timelines[0].stream_name() == "dock");
  const auto& gate = timelines[1];
  REQUIRE(gate.stream_name() == "gate");
  REQUIRE(gate.runs_size() == 1);
  CHECK(gate.runs(0).to_us() - gate.runs(0).from_us() >= 3'900'000);
  const auto& gate_sub = timelines[2];
  CHECK(gate_sub.stream_name() == "gate/sub");
  REQUIRE(gate_sub.runs_size() == 1);
  const auto sub_run_us = gate_sub.runs(0).to_us() - gate_sub.runs(0).from_us();
  CHECK(sub_run_us >= 1'900'000);
  CHECK(sub_run_us <= 2'100'000);
  auto http = test::http_request(rig.vigild->http(), "GET", "/api/v1/cameras/gate/timeline?from=-1h");
  REQUIRE(http.status == 200);
  CHECK(http.json().at("substream").at("runs").as_array().size() == 1);

  // The sub stream reconnects: a gap on its previous stream, none on the main one. Then the main
  // one reconnects: its hole is a gap on its own previous stream (not on the sub stream, the
  // camera's newest), from its own last frame.
  record_track(rig, "gate", "sub", 25);
  CHECK(scalar("SELECT count(*) FROM gaps WHERE stream_id = " + std::to_string(sub_stream)) == "1");
  CHECK(scalar("SELECT count(*) FROM gaps WHERE stream_id = " + std::to_string(main_stream)) == "0");
  record_track(rig, "gate", "main", 25);
  CHECK(scalar("SELECT count(*) FROM gaps WHERE stream_id = " + std::to_string(sub_stream)) == "1");
  CHECK(scalar("SELECT reason FROM gaps WHERE stream_id = " + std::to_string(main_stream)) == "source_lost");
  const auto main_gap_from = scalar("SELECT start_us FROM gaps WHERE stream_id = " + std::to_string(main_stream));
  REQUIRE(!main_gap_from.empty());
  CHECK(std::stoll(main_gap_from) >= t0 + 3'900'000);  // the main stream's end, not the sub stream's
  CHECK(std::stoll(main_gap_from) <= t0 + 4'100'000);
}
