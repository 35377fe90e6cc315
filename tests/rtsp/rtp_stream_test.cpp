// Real cameras' packets (tests/rtsp/data, written by make_fixtures.py). FFmpeg's RTP muxer:
// H.264 and H.265 streams at 64x48 (10 frames, a keyframe every 5) and the RTP packets and SDP
// FFmpeg made of them (STAP-A, FU-A, AP and FU packets among them): the SDP's parameter sets
// and the depacketized access units must give back the elementary stream's NAL units, in
// order. And the integration tests' GStreamer camera, as captured over RTSP.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "client/rtsp/rtp_depacketizer.hpp"
#include "client/rtsp/sdp.hpp"
#include "tests/rtsp/rtsp_fixtures.hpp"

using namespace vigil::client::rtsp;

namespace {

using vigil::test::rtsp_fixtures::Bytes;
using vigil::test::rtsp_fixtures::read_file;

// The NAL units of an Annex B stream (3- or 4-byte start codes).
std::vector<Bytes> nal_units(const Bytes& b) {
  std::vector<Bytes> out;
  std::size_t start = std::string::npos;
  for (std::size_t i = 0; i + 3 <= b.size(); ++i) {
    if (b[i] != 0 || b[i + 1] != 0 || b[i + 2] != 1) continue;
    if (start != std::string::npos)
      out.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(start), b.begin() + static_cast<std::ptrdiff_t>(i));
    start = i + 3;
    i += 2;
  }
  if (start != std::string::npos) out.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(start), b.end());
  // A 4-byte start code's first zero ends the NAL unit before it; no NAL unit ends in a zero byte.
  for (auto& n : out) {
    while (!n.empty() && n.back() == 0) n.pop_back();
  }
  return out;
}

struct Case {
  const char* name;
  VideoCodec codec;
  std::size_t parameter_sets;  // in the SDP
};

}  // namespace

TEST_CASE("rtp stream: FFmpeg's packets of an H.264 and an H.265 stream give back its NAL units", "[rtsp][rtp]") {
  for (const Case c : {Case{"h264", VideoCodec::h264, 2}, Case{"h265", VideoCodec::h265, 3}}) {
    CAPTURE(c.name);
    const Bytes es = read_file(std::string(c.name) + ".es");
    const auto es_nals = nal_units(es);
    REQUIRE(es_nals.size() >= 10);

    const Bytes sdp_bytes = read_file(std::string(c.name) + ".sdp");
    std::string why;
    const auto sdp = parse_sdp_video(std::string(sdp_bytes.begin(), sdp_bytes.end()), why);
    REQUIRE(sdp.has_value());
    CHECK(sdp->codec == c.codec);
    CHECK(sdp->payload_type == 96);
    CHECK(sdp->clock_rate_hz == 90000);
    // The SDP's parameter sets are the stream's first ones (FFmpeg took them from it).
    const auto sets = nal_units(sdp->parameter_sets);
    REQUIRE(sets.size() == c.parameter_sets);
    for (std::size_t i = 0; i < sets.size(); ++i) {
      CHECK(std::find(es_nals.begin(), es_nals.end(), sets[i]) != es_nals.end());
    }

    const Bytes rtp = read_file(std::string(c.name) + ".rtp");
    RtpDepacketizer d(c.codec, sdp->payload_type);
    std::vector<AccessUnit> out;
    const auto packets = vigil::test::rtsp_fixtures::packets(rtp);
    for (const auto& p : packets) d.push(p, out);
    CHECK(packets.size() > 20);
    CHECK(d.malformed_packets() == 0);
    CHECK(d.lost_packets() == 0);
    CHECK(d.dropped_units() == 0);
    REQUIRE(out.size() == 10);
    std::vector<Bytes> got;
    for (std::size_t i = 0; i < out.size(); ++i) {
      CAPTURE(i);
      CHECK(out[i].keyframe == (i % 5 == 0));
      CHECK(out[i].timestamp - out[0].timestamp == static_cast<std::int64_t>(i) * 3600);  // 25 fps at 90 kHz
      REQUIRE(out[i].annexb.size() >= 4);
      CHECK(Bytes(out[i].annexb.begin(), out[i].annexb.begin() + 4) == Bytes{0, 0, 0, 1});
      for (auto& n : nal_units(out[i].annexb)) got.push_back(std::move(n));
    }
    CHECK(got == es_nals);
  }
}

TEST_CASE("rtp stream: 2 s of the GStreamer camera over RTSP, from its first packet", "[rtsp][rtp]") {
  // tests/support/rtsp_camera.py at 100 kbit/s: every access unit starts with an access unit
  // delimiter, keyframes carry SPS, PPS and SEI, slices come single or in FU-A.
  const Bytes sdp_bytes = read_file("gstreamer.sdp");
  std::string why;
  const auto sdp = parse_sdp_video(std::string(sdp_bytes.begin(), sdp_bytes.end()), why);
  REQUIRE(sdp.has_value());
  CHECK(sdp->codec == VideoCodec::h264);
  CHECK(sdp->control == "stream=0");
  CHECK(sdp->bandwidth_bps == 102'000);
  const auto sets = nal_units(sdp->parameter_sets);
  REQUIRE(sets.size() == 2);

  const Bytes rtp = read_file("gstreamer.rtp");
  RtpDepacketizer d(VideoCodec::h264, sdp->payload_type);
  std::vector<AccessUnit> out;
  for (const auto& p : vigil::test::rtsp_fixtures::packets(rtp)) d.push(p, out);
  CHECK(d.malformed_packets() == 0);
  CHECK(d.lost_packets() == 0);
  CHECK(d.dropped_units() == 0);
  REQUIRE(out.size() == 50);
  for (std::size_t i = 0; i < out.size(); ++i) {
    CAPTURE(i);
    CHECK(out[i].keyframe == (i % 25 == 0));
    CHECK(out[i].timestamp - out[0].timestamp == static_cast<std::int64_t>(i) * 3600);
    const auto nals = nal_units(out[i].annexb);
    REQUIRE(nals.size() >= 2);
    CHECK((nals[0][0] & 0x1f) == 9);  // access unit delimiter
    if (out[i].keyframe) {
      // The in-band SPS and PPS are the SDP's.
      CHECK(nals[1] == sets[0]);
      CHECK(nals[2] == sets[1]);
    }
    for (std::size_t k = 1; k < nals.size(); ++k) {
      const int type = nals[k][0] & 0x1f;
      CHECK((type == 7 || type == 8 || type == 6 || type == (out[i].keyframe ? 5 : 1)));
    }
  }
}
