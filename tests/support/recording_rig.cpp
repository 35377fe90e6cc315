#include "tests/support/recording_rig.hpp"

#include <catch2/catch_test_macros.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "tests/support/media_fixture.hpp"
#include "tests/support/script_frames.hpp"

namespace vigil::test {

proto::Envelope open_record(const std::string& name, std::uint64_t rate_bps) {
  proto::Envelope e;
  auto* o = e.mutable_open_record();
  o->set_stream_name(name);
  o->mutable_codec()->set_codec_name("h264");
  o->mutable_codec()->set_time_base_num(1);
  o->mutable_codec()->set_time_base_den(90000);
  // A picture size within the media limits (common/media_limits.hpp); script frames are not decoded.
  o->mutable_codec()->set_width(640);
  o->mutable_codec()->set_height(360);
  o->set_declared_average_rate_bps(rate_bps);
  o->set_declared_peak_rate_bps(rate_bps);
  return e;
}

std::uint64_t open_admitted(client::WireClient& c, const std::string& name, std::uint64_t rate_bps) {
  c.hello("vigil tests", token());
  c.send(open_record(name, rate_bps));
  auto reply = c.receive();
  REQUIRE(reply.msg.has_admit());
  return reply.msg.admit().stream_id();
}

std::uint64_t largest_new_rate(const VigildProcess& d) {
  client::WireClient c(d.wire(), std::chrono::seconds(30));
  c.hello("vigil tests", d.token());
  c.send(open_record("probe", 10'000'000'000ULL));
  const auto reply = c.receive();
  REQUIRE(reply.msg.has_refuse());
  return reply.msg.refuse().largest_rate_bps();
}

std::pair<proto::Envelope, std::vector<std::byte>> media_packet(std::uint64_t stream_id, std::uint64_t seq,
                                                                std::uint64_t frame_stream) {
  return media_packet(stream_id, seq, seq, frame_stream, seq % 25 == 1);
}

std::pair<proto::Envelope, std::vector<std::byte>> media_packet(std::uint64_t stream_id, std::uint64_t seq,
                                                                std::uint64_t frame, std::uint64_t frame_stream,
                                                                bool keyframe) {
  auto f = script_frame(frame, frame_stream);
  proto::Envelope p;
  auto* m = p.mutable_media_packet();
  m->set_stream_id(stream_id);
  m->set_sequence(seq);
  m->set_pts(static_cast<std::int64_t>(seq) * 3600);
  m->set_has_pts(true);
  m->set_dts(static_cast<std::int64_t>(seq) * 3600);
  m->set_has_dts(true);
  m->set_duration(3600);
  m->set_keyframe(keyframe);
  m->set_payload_bytes(static_cast<std::uint32_t>(f.payload.size()));
  return {std::move(p), std::move(f.payload)};
}

RecordingRig::RecordingRig(std::vector<std::string> extra) {
  make_sim_profile(dir.path());
  std::vector<std::string> args{"--volume",
                                (dir.path() / "vol").string(),
                                "--volume-size",
                                std::to_string(256 << 20),
                                "--extent-bytes",
                                std::to_string(4 << 20),
                                "--profile",
                                (dir.path() / "wd.json").string(),
                                "--cycle-ms",
                                "200",
                                "--model-check-cycles",
                                "0"};
  // EXTRA's "--option value" pairs replace the defaults above, or are added.
  for (std::size_t i = 0; i + 1 < extra.size(); i += 2) {
    const auto at = std::find(args.begin(), args.end(), extra[i]);
    if (at != args.end()) *(at + 1) = extra[i + 1];
    else args.insert(args.end(), {extra[i], extra[i + 1]});
  }
  vigild = std::make_unique<VigildProcess>(dir.path() / "data", std::move(args));
  REQUIRE(vigild->wait_ready());
}

std::string RecordingRig::catalog() const {
  return "host=" + (dir.path() / "data" / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
}

std::uint64_t record_script(RecordingRig& rig, const std::string& name, std::uint64_t frames,
                            std::uint64_t restart_at) {
  client::WireClient c(rig.vigild->wire(), std::chrono::seconds(20));
  c.hello("script recorder", token());
  c.send(open_record(name, 64'000'000));
  auto a = c.receive();
  REQUIRE(a.msg.has_admit());
  const auto stream = a.msg.admit().stream_id();
  for (std::uint64_t seq = 1; seq <= frames; ++seq) {
    auto [p, payload] = media_packet(stream, seq, stream);
    if (restart_at && seq >= restart_at) {
      p.mutable_media_packet()->set_pts(static_cast<std::int64_t>(seq - restart_at) * 3600);
      p.mutable_media_packet()->set_dts(static_cast<std::int64_t>(seq - restart_at) * 3600);
    }
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
  pqxx::connection conn(rig.catalog());
  std::uint64_t stored = 0;
  for (int i = 0; i < 100 && stored < frames; ++i) {
    pqxx::nontransaction q(conn);
    stored =
        q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1 AND state = 'closed'",
                       static_cast<std::int64_t>(stream))[0]
            .as<std::uint64_t>();
    if (stored < frames) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the batcher's bounded delay
  }
  REQUIRE(stored == frames);
  return stream;
}

}  // namespace vigil::test
