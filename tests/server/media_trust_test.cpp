// The media trust boundary (common/media_limits.hpp), on a real vigild: an open-record outside the
// limits is refused with the limit named; a recording of garbage (an allowed codec, random
// extradata and random payloads, sent through the wire client) is answered 4xx by every media
// route that would hand it to FFmpeg — export, HLS playlist, init and media segment, thumbnail —
// never 500, and vigild stays up and records afterwards.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>
#include <random>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

// The refusal of an open-record of NAME whose codec parameters EDIT changes.
template <class Edit>
proto::Refuse refused_open(test::VigildProcess& d, const std::string& name, Edit edit) {
  client::WireClient c(d.wire(), 20s);
  c.hello("media trust test", test::token());
  auto open = test::open_record(name, 2'000'000);
  edit(*open.mutable_open_record()->mutable_codec());
  c.send(open);
  auto reply = c.receive();
  REQUIRE(reply.msg.has_refuse());
  CHECK(reply.msg.refuse().reason_code() == proto::REFUSE_REASON_INVALID_REQUEST);
  return reply.msg.refuse();
}

std::vector<std::byte> random_bytes(std::mt19937& rng, std::size_t n) {
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng() & 0xff);
  return b;
}

// Records FRAMES packets of random bytes as camera NAME, codec h264 with EXTRADATA, every 25th a
// keyframe; returns once every packet is acknowledged durable and the recording has ended.
void record_garbage(test::VigildProcess& d, const std::string& name, const std::string& extradata, std::mt19937& rng,
                    std::uint64_t frames) {
  client::WireClient c(d.wire(), 20s);
  c.hello("media trust test", test::token());
  auto open = test::open_record(name, 2'000'000);
  open.mutable_open_record()->mutable_codec()->set_extradata(extradata);
  c.send(open);
  auto reply = c.receive();
  REQUIRE(reply.msg.has_admit());
  const auto stream = reply.msg.admit().stream_id();
  for (std::uint64_t seq = 1; seq <= frames; ++seq) {
    auto [p, unused] = test::media_packet(stream, seq, seq, 1, seq % 25 == 1);
    auto payload = random_bytes(rng, 100 + rng() % 400);  // well within the rate of a cycle, sent at once
    p.mutable_media_packet()->set_payload_bytes(static_cast<std::uint32_t>(payload.size()));
    c.send(p, payload);
  }
  std::uint64_t acked = 0;
  while (acked < frames) {
    auto m = c.receive();
    if (m.msg.has_durable_ack()) acked = std::max<std::uint64_t>(acked, m.msg.durable_ack().last_sequence());
  }
  c.end_recording(stream);
}

// "@SECONDS": an absolute time the query parser takes.
std::string at_s(std::int64_t s) { return "%40" + std::to_string(s); }

}  // namespace

TEST_CASE("open-record outside the media limits is refused, naming the limit", "[wire][media][trust]") {
  test::RecordingRig rig;
  auto& d = *rig.vigild;
  auto r = refused_open(d, "vp9-cam", [](proto::CodecParameters& c) { c.set_codec_name("vp9"); });
  CHECK_THAT(r.reason(), ContainsSubstring("codec 'vp9' is not allowed"));
  CHECK_THAT(r.reason(), ContainsSubstring("h264, hevc"));
  r = refused_open(d, "big-extradata", [](proto::CodecParameters& c) { c.set_extradata(std::string(40'000, 'x')); });
  CHECK_THAT(r.reason(), ContainsSubstring("extradata of 40000 bytes"));
  CHECK_THAT(r.reason(), ContainsSubstring("limit of 32768 bytes"));
  r = refused_open(d, "random-extradata", [](proto::CodecParameters& c) { c.set_extradata("\x01random bytes"); });
  CHECK_THAT(r.reason(), ContainsSubstring("extradata is not H.264 parameter sets"));
  r = refused_open(d, "no-width", [](proto::CodecParameters& c) { c.set_width(0); });
  CHECK_THAT(r.reason(), ContainsSubstring("picture size 0x360"));
  CHECK_THAT(r.reason(), ContainsSubstring("1..8192"));
  r = refused_open(d, "wide", [](proto::CodecParameters& c) { c.set_width(100'000); });
  CHECK_THAT(r.reason(), ContainsSubstring("picture size 100000x360"));
  r = refused_open(d, "slow-clock", [](proto::CodecParameters& c) {
    c.set_time_base_num(90'000);
    c.set_time_base_den(1);
  });
  CHECK_THAT(r.reason(), ContainsSubstring("time base 90000/1"));
  // An audio codec of the list is no picture: it declares none.
  r = refused_open(d, "audio", [](proto::CodecParameters& c) { c.set_codec_name("aac"); });
  CHECK_THAT(r.reason(), ContainsSubstring("audio codec has no picture size"));

  // Nothing refused was recorded; the same camera within the limits is admitted.
  client::WireClient c(d.wire(), 20s);
  CHECK(test::open_admitted(c, "vp9-cam", 2'000'000) > 0);
}

TEST_CASE("a garbage recording: export, HLS and thumbnail answer 4xx and vigild stays up",
          "[http][media][trust][ffmpeg]") {
  test::RecordingRig rig;
  std::mt19937 rng(20);  // fixed: the same garbage every run
  const auto t0 = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  // An avcC whose structure holds (what open-record checks) around a random SPS and PPS.
  std::string avcc = {1, 100, 0, 40, char(0xff), char(0xe1), 0, 33, 0x67};
  for (int i = 0; i < 32; ++i) avcc += static_cast<char>(rng());
  avcc += std::string{1, 0, 9, 0x68};
  for (int i = 0; i < 8; ++i) avcc += static_cast<char>(rng());
  for (const std::string camera : {"garbage", "old-garbage", "old-vp9"}) {
    record_garbage(*rig.vigild, camera, avcc, rng, 60);
  }
  REQUIRE(test::eventually([&] {  // the segments closed in the catalog (the batcher's delay)
    pqxx::connection conn(rig.catalog());
    pqxx::work tx(conn);
    return tx.exec1("SELECT count(*) FROM segments WHERE state = 'closed'")[0].as<long>() >= 3;
  }));
  {
    // Recordings from before the limits (or a volume from elsewhere): what the catalog says of
    // them is what open-record would refuse now — random extradata, a codec not on the list.
    pqxx::connection conn(rig.catalog());
    pqxx::work tx(conn);
    const auto random = random_bytes(rng, 300);
    tx.exec_params("UPDATE streams SET extradata = $1 WHERE camera_id = (SELECT id FROM cameras WHERE name = $2)",
                   pqxx::binarystring(reinterpret_cast<const unsigned char*>(random.data()), random.size()),
                   std::string("old-garbage"));
    tx.exec_params("UPDATE streams SET codec = 'vp9' WHERE camera_id = (SELECT id FROM cameras WHERE name = $1)",
                   std::string("old-vp9"));
    tx.commit();
  }
  // Restarted: what readers see of these recordings is the catalog's (no fresh segments held).
  rig.vigild->stop();
  rig.vigild.reset();
  rig.vigild =
      std::make_unique<test::VigildProcess>(rig.dir.path() / "data",
                                            std::vector<std::string>{"--volume", (rig.dir.path() / "vol").string(),
                                                                     "--profile", (rig.dir.path() / "wd.json").string(),
                                                                     "--cycle-ms", "200", "--model-check-cycles", "0"});
  REQUIRE(rig.vigild->wait_ready());
  auto& d = *rig.vigild;

  const std::string range = "from=" + at_s(t0.count() - 60) + "&to=" + at_s(t0.count() + 600);
  // Status 0: not answered (vigild went away); what it logged is shown below.
  auto get = [&](const std::string& target) {
    try {
      return test::http_request(d.http(), "GET", target);
    } catch (const std::exception& e) {
      return test::HttpResult{.status = 0, .head = e.what(), .body = {}};
    }
  };
  // Recorded and planned: the export stops being 404 once the segment is readable.
  REQUIRE(test::eventually([&] { return get("/api/v1/cameras/garbage/export.mp4?" + range).status != 404; }));
  const std::int64_t from_us = (t0.count() - 60) * 1'000'000;
  for (const std::string camera : {"garbage", "old-garbage", "old-vp9"}) {
    const std::string base = "/api/v1/cameras/" + camera + "/";
    std::vector<std::pair<std::string, test::HttpResult>> answers;
    answers.emplace_back("export", get(base + "export.mp4?" + range));
    answers.emplace_back("keyframe export", get(base + "export.mp4?keyframes=1&" + range));
    answers.emplace_back("thumbnail", get(base + "thumbnail.jpg?at=" + at_s(t0.count() + 600)));
    answers.emplace_back("playlist", get(base + "hls.m3u8?" + range));
    // The playlist's segments, whether or not it was answered (HLS URLs are the server's own).
    answers.emplace_back("init", get(base + "hls/init.mp4?t0=" + std::to_string(from_us) +
                                     "&t1=" + std::to_string(from_us + 600'000'000)));
    answers.emplace_back("segment", get(base + "hls/seg.m4s?o=" + std::to_string(from_us) + "&t0=" +
                                        std::to_string(from_us) + "&t1=" + std::to_string(from_us + 600'000'000)));
    for (const auto& [what, r] : answers) {
      INFO(camera << " " << what << ": " << r.head << (r.status == 200 ? "" : r.body.substr(0, 300)));
      CHECK(r.status != 0);  // answered at all: vigild did not go away
      CHECK(r.status < 500);
      if (camera != "garbage") {
        // Checked again when read: nothing of it reaches FFmpeg.
        CHECK(r.status == 422);
        CHECK(r.body.find("outside the media limits") != std::string::npos);
      } else if (what == "thumbnail") {
        // Remuxing copies the recorded bytes unread (an export of garbage is garbage); decoding
        // parses them, and the decoder finds no picture.
        CHECK(r.status == 422);
        CHECK(r.body.find("cannot be processed") != std::string::npos);
      }
    }
  }
  const auto vp9 = get("/api/v1/cameras/old-vp9/export.mp4?" + range);
  CHECK(vp9.body.find("codec 'vp9' is not allowed") != std::string::npos);
  const auto old = get("/api/v1/cameras/old-garbage/thumbnail.jpg?at=" + at_s(t0.count() + 600));
  CHECK(old.body.find("extradata is not H.264 parameter sets") != std::string::npos);

  // vigild is up and records.
  const auto out = d.output();
  INFO(out.substr(out.size() > 4000 ? out.size() - 4000 : 0));
  REQUIRE(get("/healthz").status == 200);
  client::WireClient c(d.wire(), 20s);
  const auto stream = test::open_admitted(c, "after", 2'000'000);
  auto [p, payload] = test::media_packet(stream, 1, 1);
  c.send(p, payload);
  bool acked = false;
  while (!acked) acked = c.receive().msg.has_durable_ack();
  CHECK(out.find("msg=\"HTTP request failed\"") == std::string::npos);
}
