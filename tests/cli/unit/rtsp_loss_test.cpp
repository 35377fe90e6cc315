// Nothing lost silently on the buffered RTSP path: when RTP packets of a camera are lost, the
// depacketizer drops the access units it cannot complete up to the next keyframe, and the
// recorder's reader (client/cli/live_reader.hpp) reports exactly that hole — from the end of the
// last frame handed out to the first one after it — as a source_loss, however short it is (the
// timestamp detector alone needs over 8 frames and 0.5 s). A real camera's RTP (tests/rtsp/data)
// from a scripted camera on loopback, read by InputDemuxer as vigil record and the ingest
// workers read it.
#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli/input_demuxer.hpp"
#include "client/cli/live_reader.hpp"
#include "client/rtsp/rtp_depacketizer.hpp"
#include "tests/rtsp/scripted_camera.hpp"

using namespace vigil;
using namespace vigil::client;
using namespace vigil::test::scripted_camera;
using vigil::test::rtsp_fixtures::packets;

namespace {

// The fixture's packets without the one at index SKIP, and the access units the depacketizer makes
// of them (what the reader must hand out, each with what was dropped before it).
struct LossyStream {
  std::vector<Bytes> rtp;
  std::vector<rtsp::AccessUnit> units;
};

LossyStream without_packet(const std::vector<Bytes>& all, std::size_t skip) {
  LossyStream s;
  rtsp::RtpDepacketizer d(rtsp::VideoCodec::h264, 96);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i == skip) continue;
    s.rtp.push_back(all[i]);
    d.push(all[i], s.units);
  }
  return s;
}

}  // namespace

TEST_CASE("a camera's lost RTP packets are a source_loss from the last frame kept to the next",
          "[record][gaps][rtsp]") {
  const auto all = packets(read_file("gstreamer.rtp"));
  REQUIRE(all.size() > 20);
  // The first packet from the middle on whose loss drops frames before a later keyframe is handed out.
  LossyStream lossy;
  std::size_t after = 0;  // the unit handed out after the hole
  for (std::size_t skip = all.size() / 3; skip < all.size() && after == 0; ++skip) {
    lossy = without_packet(all, skip);
    for (std::size_t u = 1; u < lossy.units.size(); ++u) {
      if (lossy.units[u].units_lost_before > 0) {
        after = u;
        break;
      }
    }
  }
  REQUIRE(after > 0);
  const auto& before_hole = lossy.units[after - 1];
  const auto& after_hole = lossy.units[after];
  const std::int64_t first_ts = lossy.units[0].timestamp;

  // The camera answers PLAY with its media right behind the reply, on channel 4 (Camera's Transport).
  Camera c;
  std::string media;
  for (const auto& p : lossy.rtp) media += interleaved(4, p);
  std::unique_ptr<ScriptedCamera> cam;
  const auto answer = script(c, [&] { return cam->url(); });
  cam = std::make_unique<ScriptedCamera>([&](const std::string& method, const RtspMessage& r) {
    auto reply_bytes = answer(method, r);
    if (method == "PLAY") reply_bytes += media;
    return reply_bytes;
  });

  const std::atomic<bool> stop{false};
  std::ostringstream log;
  InputDemuxer input(cam->url(), stop, log);
  REQUIRE(std::string(input.reader()) == "rtsp");
  LiveReader reader(input, std::size_t{64} << 20, /*live=*/true);
  std::vector<std::int64_t> delivered;
  while (delivered.size() < lossy.units.size()) {
    auto p = reader.next();
    REQUIRE(p);
    delivered.push_back(p->pts);
  }
  for (std::size_t u = 0; u < lossy.units.size(); ++u) {
    INFO(u);
    CHECK(delivered[u] == lossy.units[u].timestamp - first_ts);
  }

  const auto losses = reader.take_losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].reason == Loss::Reason::source_loss);
  CHECK(losses[0].from_ts == before_hole.timestamp - first_ts + 1);  // right after the last frame kept
  CHECK(losses[0].to_ts == after_hole.timestamp - first_ts);
  CHECK(losses[0].packets >= after_hole.units_lost_before);
  cam->close_connection();
}
