// Recording comes first, on a real vigild (admission/playback_share.hpp, docs/admission.md
// "Playback share"): the simulated WD400BB's profile, 1 s cycles, --playback-share 0.25.
//  - A flood of 64x playbacks: those beyond the playbacks' share are refused with that reason;
//    then exactly as many recordings are admitted as fit on their own (the next one is refused),
//    the newest playbacks are ended with a clear reason to make room, and no IO misses a deadline.
//  - A paused playback releases its share after --playback-pause-release and is re-admitted on
//    resume, continuing at the next frame; a resume the disk cannot take is an Error (the
//    playback stays paused) and succeeds once there is room again.
// Every figure compared is decided by the profile and the recorded bytes, not by the machine.
#include <sys/socket.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <pqxx/pqxx>
#include <sstream>

#include "admission/admission.hpp"
#include "admission/profile.hpp"
#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

// The recording played back: one frame a second (a keyframe every 5), 250 s of media, so a 64x
// playback of it costs the disk little and a 1x playback lasts longer than the test.
constexpr std::uint64_t kFrames = 250;
constexpr std::int64_t kTicks = 90'000;  // 1 s at 90 kHz
constexpr std::uint64_t kRecordingBps = 8'000'000;

std::vector<std::string> rig_args(const char* pause_release_s) {
  return {"--cycle-ms", "1000", "--playback-share", "0.25", "--playback-pause-release", pause_release_s,
          // Fifteen 8 Mbit/s recordings would want a reserve larger than the test volume.
          "--retention-reserve", "0"};
}

std::pair<proto::Envelope, std::vector<std::byte>> slow_packet(std::uint64_t stream, std::uint64_t seq) {
  auto [p, payload] = test::media_packet(stream, seq, seq, stream, seq % 5 == 1);
  auto* m = p.mutable_media_packet();
  m->set_pts(static_cast<std::int64_t>(seq) * kTicks);
  m->set_dts(static_cast<std::int64_t>(seq) * kTicks);
  m->set_duration(kTicks);
  return {std::move(p), std::move(payload)};
}

// Records NAME (declared 16 Mbit/s: every frame fits one cycle, no policing) until every frame is
// durable and in a closed segment in the catalog.
void record(test::RecordingRig& rig, const std::string& name) {
  client::WireClient c(rig.vigild->wire(), 20s);
  const auto stream = test::open_admitted(c, name, 16'000'000);
  for (std::uint64_t seq = 1; seq <= kFrames; ++seq) {
    auto [p, payload] = slow_packet(stream, seq);
    c.send(p, payload);
  }
  ::shutdown(c.native_handle(), SHUT_WR);
  std::uint64_t acked = 0;
  std::string why;
  try {
    for (;;) {
      auto r = c.receive();
      if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
    }
  } catch (const std::exception& e) {
    why = e.what();  // the end of the session
  }
  INFO(why);
  INFO(rig.vigild->output());
  REQUIRE(acked == kFrames);
  pqxx::connection conn(rig.catalog());
  REQUIRE(test::eventually([&] {
    pqxx::nontransaction q(conn);
    return q.exec_params1(
                "SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1 AND state = 'closed'",
                static_cast<std::int64_t>(stream))[0]
               .as<std::uint64_t>() == kFrames;
  }));
}

test::PromText scrape(test::RecordingRig& rig) {
  const auto r = test::http_request(rig.vigild->http(), "GET", "/metrics");
  REQUIRE(r.status == 200);
  return test::parse_prometheus_text(r.body);
}

double released(test::RecordingRig& rig, const char* why) {
  return scrape(rig).sum("vigil_disk_playback_released_total", {{"reason", why}});
}

double share_in_use(test::RecordingRig& rig) { return scrape(rig).sum("vigil_disk_playback_share_in_use_ratio"); }

proto::Envelope control(std::uint64_t id, proto::ControlOp op) {
  proto::Envelope e;
  e.mutable_control()->set_stream_id(id);
  e.mutable_control()->set_op(op);
  return e;
}

struct Viewer {
  std::unique_ptr<client::WireClient> c;
  std::uint64_t id = 0;  // 0: refused
  proto::Refuse refused;
};

// A viewer asking for all of NAME at SPEED.
Viewer open_viewer(test::RecordingRig& rig, const std::string& name, double speed) {
  Viewer v;
  v.c = std::make_unique<client::WireClient>(rig.vigild->wire(), 20s);
  v.c->hello("playback share test viewer", test::token());
  proto::Envelope e;
  auto* o = e.mutable_open_playback();
  o->set_stream_name(name);
  o->set_start_us(0);
  o->set_end_us(std::numeric_limits<std::int64_t>::max() / 2);
  o->set_rate(speed);
  v.c->send(e);
  auto r = v.c->receive();
  if (r.msg.has_playback_started()) v.id = r.msg.playback_started().stream_id();
  else if (r.msg.has_refuse()) v.refused = r.msg.refuse();
  else FAIL("neither PlaybackStarted nor Refuse");
  return v;
}

// Sends a ping and reads up to its pong: what came before it (media packets, a PlaybackEnd).
std::vector<proto::Envelope> barrier(client::WireClient& c, std::uint64_t nonce) {
  proto::Envelope ping;
  ping.mutable_ping()->set_nonce(nonce);
  c.send(ping);
  std::vector<proto::Envelope> before;
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_pong() && r.msg.pong().nonce() == nonce) return before;
    before.push_back(r.msg);
  }
}

std::optional<std::int64_t> last_pts(const std::vector<proto::Envelope>& msgs) {
  std::optional<std::int64_t> last;
  for (const auto& m : msgs) {
    if (m.has_media_packet()) last = m.media_packet().pts();
  }
  return last;
}

}  // namespace

TEST_CASE("a flood of 64x playbacks never costs a recording its admission", "[vigild][playback][admission]") {
  test::RecordingRig rig(rig_args("600"));
  record(rig, "vault");

  // The flood: every viewer asks for a 64x playback and pauses it at once (a paused playback
  // keeps its share for --playback-pause-release, 600 s here: they hold the share for the test).
  std::vector<Viewer> playing;
  std::size_t refused = 0;
  for (int i = 0; i < 30; ++i) {
    auto v = open_viewer(rig, "vault", 64.0);
    if (v.id) {
      v.c->send(control(v.id, proto::CONTROL_OP_PAUSE));
      playing.push_back(std::move(v));
      continue;
    }
    ++refused;
    INFO(v.refused.reason());
    CHECK(v.refused.reason_code() == proto::REFUSE_REASON_DISK_FULL_LOAD);
    CHECK_THAT(v.refused.reason(), ContainsSubstring("playbacks' share of the disk is full"));
  }
  INFO("playbacks admitted " << playing.size() << ", refused " << refused);
  REQUIRE(playing.size() >= 2);
  REQUIRE(refused == 30 - playing.size());
  {
    const auto m = scrape(rig);
    CHECK(m.sum("vigil_disk_admission_decisions_total", {{"kind", "playback"}, {"decision", "refused"}}) == refused);
    CHECK(m.sum("vigil_disk_admission_decisions_total", {{"kind", "playback"}, {"decision", "admitted"}}) ==
          playing.size());
    const double in_use = m.sum("vigil_disk_playback_share_in_use_ratio");
    CHECK(in_use > 0);
    CHECK(in_use <= m.sum("vigil_disk_playback_share_ratio") + 1e-9);
    CHECK(m.sum("vigil_disk_playback_share_ratio") == 0.25 * 0.9);
  }

  // Then the recordings: exactly as many 8 Mbit/s streams as fit on this disk on their own.
  std::ifstream in(rig.dir.path() / "wd.json");
  std::stringstream text;
  text << in.rdbuf();
  const admission::AdmissionController alone(admission::profile_from_json(boost::json::parse(text.str())),
                                             {.policy = admission::Policy::conservative, .cycle_s = 1, .r_rt = 0.9});
  const std::size_t fit = alone.max_streams({.write = true, .peak_rate = Rate::from_bps(kRecordingBps)});
  INFO("recordings that fit alone: " << fit);
  REQUIRE(fit >= 2);
  std::vector<std::unique_ptr<client::WireClient>> recorders;
  std::vector<std::uint64_t> streams;
  for (std::size_t i = 0; i < fit; ++i) {
    recorders.push_back(std::make_unique<client::WireClient>(rig.vigild->wire(), 20s));
    INFO("recording " << i + 1);
    streams.push_back(test::open_admitted(*recorders.back(), "cam-" + std::to_string(i), kRecordingBps));
  }
  {
    client::WireClient one_more(rig.vigild->wire(), 20s);
    one_more.hello("playback share test", test::token());
    one_more.send(test::open_record("cam-extra", kRecordingBps));
    const auto r = one_more.receive();
    REQUIRE(r.msg.has_refuse());
    CHECK_THAT(r.msg.refuse().reason(), ContainsSubstring("(recordings alone)"));
  }

  // The newest playbacks gave way, each told why; the others still hold their share.
  const auto ended = static_cast<std::size_t>(released(rig, "preempted"));
  INFO("playbacks ended for recordings: " << ended);
  CHECK(ended >= 1);
  REQUIRE(ended <= playing.size());
  for (std::size_t i = 0; i < playing.size(); ++i) {
    auto& v = playing[i];
    if (i + ended >= playing.size()) {
      for (;;) {
        auto r = v.c->receive();
        if (!r.msg.has_playback_end()) continue;  // packets sent before the pause took effect
        CHECK(r.msg.playback_end().failed());
        CHECK_THAT(r.msg.playback_end().reason(), ContainsSubstring("a recording needed this disk's time"));
        break;
      }
    } else {
      for (const auto& m : barrier(*v.c, 1)) CHECK_FALSE(m.has_playback_end());
    }
  }

  // Every recording records: ten frames each, all durable, and no stream IO missed its cycle.
  for (std::size_t i = 0; i < recorders.size(); ++i) {
    for (std::uint64_t seq = 1; seq <= 10; ++seq) {
      auto [p, payload] = test::media_packet(streams[i], seq, streams[i]);
      recorders[i]->send(p, payload);
    }
    ::shutdown(recorders[i]->native_handle(), SHUT_WR);
  }
  for (auto& r : recorders) {
    std::uint64_t acked = 0;
    try {
      for (;;) {
        auto m = r->receive();
        if (m.msg.has_durable_ack()) acked = m.msg.durable_ack().last_sequence();
      }
    } catch (const std::exception&) {}
    CHECK(acked == 10);
  }
  INFO(rig.vigild->output());
  CHECK(scrape(rig).sum("vigil_disk_deadline_misses_total") == 0);
}

TEST_CASE("a paused playback releases its share and is re-admitted on resume, or told why not",
          "[vigild][playback][admission]") {
  test::RecordingRig rig(rig_args("1"));
  record(rig, "vault");

  auto a = open_viewer(rig, "vault", 1.0);
  REQUIRE(a.id);
  CHECK(share_in_use(rig) > 0);
  std::optional<std::int64_t> last;
  while (!last) {
    auto r = a.c->receive();
    if (r.msg.has_media_packet()) last = r.msg.media_packet().pts();
  }
  a.c->send(control(a.id, proto::CONTROL_OP_PAUSE));
  if (auto more = last_pts(barrier(*a.c, 1))) last = more;
  // Paused for --playback-pause-release (1 s): the share is given back.
  REQUIRE(test::eventually([&] { return released(rig, "paused") == 1; }, 30s));
  CHECK(share_in_use(rig) == 0);

  // Resumed: admitted again, and it continues at the next frame (one second later in the media).
  a.c->send(control(a.id, proto::CONTROL_OP_RESUME));
  auto r = a.c->receive();
  REQUIRE(r.msg.has_playback_started());
  CHECK(r.msg.playback_started().stream_id() == a.id);
  r = a.c->receive();
  REQUIRE(r.msg.has_media_packet());
  CHECK(r.msg.media_packet().pts() == *last + 1'000'000);
  last = r.msg.media_packet().pts();
  CHECK(share_in_use(rig) > 0);

  // Paused and released again; meanwhile other viewers fill the playbacks' share (1x: they play
  // for minutes, so the share stays full while the test runs).
  a.c->send(control(a.id, proto::CONTROL_OP_PAUSE));
  if (auto more = last_pts(barrier(*a.c, 2))) last = more;
  REQUIRE(test::eventually([&] { return released(rig, "paused") == 2; }, 30s));
  std::vector<Viewer> others;
  for (;;) {
    auto v = open_viewer(rig, "vault", 1.0);
    if (!v.id) break;
    others.push_back(std::move(v));
    REQUIRE(others.size() < 100);
  }
  REQUIRE(!others.empty());

  // The resume cannot be admitted: an Error that says why, and the playback stays paused.
  a.c->send(control(a.id, proto::CONTROL_OP_RESUME));
  try {
    (void)a.c->receive();
    FAIL("the resume was not refused");
  } catch (const client::ServerError& e) {
    CHECK(e.code == proto::ERROR_CODE_ADMISSION_REFUSED);
    CHECK_THAT(e.what(), ContainsSubstring("resume refused"));
    CHECK_THAT(e.what(), ContainsSubstring("playbacks' share of the disk is full"));
  }
  CHECK(barrier(*a.c, 3).empty());  // still paused: nothing sent

  // One viewer leaves: the resume is admitted and the playback continues where it was.
  const double before = share_in_use(rig);
  others.pop_back();
  REQUIRE(test::eventually([&] { return share_in_use(rig) < before; }, 30s));
  a.c->send(control(a.id, proto::CONTROL_OP_RESUME));
  r = a.c->receive();
  REQUIRE(r.msg.has_playback_started());
  r = a.c->receive();
  REQUIRE(r.msg.has_media_packet());
  CHECK(r.msg.media_packet().pts() == *last + 1'000'000);
}
