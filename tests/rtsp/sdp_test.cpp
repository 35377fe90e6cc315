// The video of a DESCRIBE's SDP (client/rtsp/sdp): GStreamer's RTSP server as it answers
// tests/support/rtsp_camera.py, an H.265 camera as MediaMTX and FFmpeg describe one, and the
// ways cameras get it slightly wrong (case, missing padding, session-level bandwidth, audio
// first, a second video section).
#include "client/rtsp/sdp.hpp"

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

using namespace vigil::client::rtsp;

namespace {

// GStreamer 1.22's answer to DESCRIBE rtsp://127.0.0.1:18655/cam1 (tests/support/rtsp_camera.py).
constexpr std::string_view kGstreamerSdp =
    "v=0\r\n"
    "o=- 11906990701599319299 1 IN IP4 127.0.0.1\r\n"
    "s=Session streamed with GStreamer\r\n"
    "i=rtsp-server\r\n"
    "t=0 0\r\n"
    "a=tool:GStreamer\r\n"
    "a=type:broadcast\r\n"
    "a=control:*\r\n"
    "a=range:npt=now-\r\n"
    "m=video 0 RTP/AVP 96\r\n"
    "c=IN IP4 0.0.0.0\r\n"
    "b=AS:2097\r\n"
    "a=rtpmap:96 H264/90000\r\n"
    "a=framerate:25\r\n"
    "a=fmtp:96 "
    "packetization-mode=1;sprop-parameter-sets=Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwGUeLF1,aM48gA==;profile-level-id=42c015;"
    "level-asymmetry-allowed=1\r\n"
    "a=control:stream=0\r\n"
    "a=ts-refclk:local\r\n"
    "a=mediaclk:sender\r\n"
    "a=ssrc:2378589124 cname:user1207271035@host-b62a66e6\r\n";

// An H.265 camera as MediaMTX describes it (absolute control URL, audio first, \n line ends),
// with the parameter sets FFmpeg 5.1's libx265 wrote for a 64x48 stream, listed PPS first.
constexpr std::string_view kH265Sdp =
    "v=0\n"
    "o=- 0 0 IN IP4 127.0.0.1\n"
    "s=Stream\n"
    "c=IN IP4 0.0.0.0\n"
    "t=0 0\n"
    "b=AS:9000\n"
    "m=audio 0 RTP/AVP 97\n"
    "a=control:rtsp://127.0.0.1:8554/cam/trackID=0\n"
    "a=rtpmap:97 mpeg4-generic/48000/2\n"
    "a=fmtp:97 streamtype=5; profile-level-id=1; mode=AAC-hbr; sizelength=13; indexlength=3; indexdeltalength=3; "
    "config=1190\n"
    "m=video 0 RTP/AVP 96\n"
    "b=TIAS:4100000\n"
    "a=control:rtsp://127.0.0.1:8554/cam/trackID=1\n"
    "a=rtpmap:96 H265/90000\n"
    "a=fmtp:96 sprop-pps=RAHBcxgxCJA=; sprop-vps=QAEMAf//BAgAAAMAnggAAAMAAB6VmAk=; "
    "sprop-sps=QgEBBAgAAAMAnggAAAMAAB6QBBBiyys1yZXgLcCAgAEAAAMAAQAAAwAFCA==\n";

std::vector<std::uint8_t> bytes(std::initializer_list<int> list) {
  std::vector<std::uint8_t> v;
  for (const int b : list) v.push_back(static_cast<std::uint8_t>(b));
  return v;
}

}  // namespace

TEST_CASE("sdp: GStreamer's H.264 camera", "[rtsp][sdp]") {
  std::string why;
  const auto v = parse_sdp_video(kGstreamerSdp, why);
  REQUIRE(v.has_value());
  CHECK(v->codec == VideoCodec::h264);
  CHECK(v->payload_type == 96);
  CHECK(v->clock_rate_hz == 90000);
  CHECK(v->control == "stream=0");  // the media's, not the session's "*"
  CHECK(v->bandwidth_bps == 2'097'000);
  const auto expected = bytes({0,    0,    0,    1,    0x67, 0x42, 0xc0, 0x15, 0xda, 0x05, 0x07, 0xec, 0x05,
                               0xa8, 0x30, 0x30, 0x35, 0x28, 0x00, 0x00, 0x03, 0x00, 0x08, 0x00, 0x00, 0x03,
                               0x01, 0x94, 0x78, 0xb1, 0x75, 0,    0,    0,    1,    0x68, 0xce, 0x3c, 0x80});
  CHECK(v->parameter_sets == expected);
}

TEST_CASE("sdp: an H.265 camera, audio first, parameter sets in VPS, SPS, PPS order", "[rtsp][sdp]") {
  std::string why;
  const auto v = parse_sdp_video(kH265Sdp, why);
  REQUIRE(v.has_value());
  CHECK(v->codec == VideoCodec::h265);
  CHECK(v->payload_type == 96);
  CHECK(v->clock_rate_hz == 90000);
  CHECK(v->control == "rtsp://127.0.0.1:8554/cam/trackID=1");
  CHECK(v->bandwidth_bps == 4'100'000);  // the media's TIAS, not the session's AS
  const auto& ps = v->parameter_sets;
  REQUIRE(ps.size() == 4 + 23 + 4 + 43 + 4 + 8);
  const auto start_code = bytes({0, 0, 0, 1});
  CHECK(std::vector<std::uint8_t>(ps.begin(), ps.begin() + 4) == start_code);
  CHECK(ps[4] == 0x40);  // VPS (type 32)
  CHECK(ps[4 + 22] == 0x09);
  CHECK(std::vector<std::uint8_t>(ps.begin() + 27, ps.begin() + 31) == start_code);
  CHECK(ps[31] == 0x42);  // SPS (type 33)
  CHECK(ps[31 + 42] == 0x08);
  CHECK(std::vector<std::uint8_t>(ps.begin() + 74, ps.begin() + 78) == start_code);
  CHECK(std::vector<std::uint8_t>(ps.begin() + 78, ps.end()) ==
        bytes({0x44, 0x01, 0xc1, 0x73, 0x18, 0x31, 0x08, 0x90}));
}

TEST_CASE("sdp: session-level bandwidth, codec name in any case, no fmtp", "[rtsp][sdp]") {
  std::string why;
  const auto v =
      parse_sdp_video("v=0\r\nb=AS:512\r\nm=video 0 RTP/AVP 98\r\na=rtpmap:98 h265/90000\r\na=control:track1\r\n", why);
  REQUIRE(v.has_value());
  CHECK(v->codec == VideoCodec::h265);
  CHECK(v->payload_type == 98);
  CHECK(v->bandwidth_bps == 512'000);
  CHECK(v->control == "track1");
  CHECK(v->parameter_sets.empty());
}

TEST_CASE("sdp: the first video section with H.264 or H.265 wins; the m= line's order within it", "[rtsp][sdp]") {
  std::string why;
  const auto v = parse_sdp_video(
      "v=0\n"
      "m=video 0 RTP/AVP 100\na=rtpmap:100 VP8/90000\na=control:vp8\n"
      "m=video 0 RTP/AVP 97 96\na=rtpmap:96 H264/90000\na=rtpmap:97 H265/90000\n"
      "a=fmtp:96 sprop-parameter-sets=Z0I=\na=fmtp:97 sprop-sps=QgE=\na=control:second\n"
      "m=video 0 RTP/AVP 99\na=rtpmap:99 H264/90000\na=control:third\n",
      why);
  REQUIRE(v.has_value());
  CHECK(v->codec == VideoCodec::h265);
  CHECK(v->payload_type == 97);
  CHECK(v->control == "second");
  CHECK(v->parameter_sets == bytes({0, 0, 0, 1, 0x42, 0x01}));  // PT 97's fmtp only
}

TEST_CASE("sdp: base64 padding: optional, but never wrong; bad entries are left out", "[rtsp][sdp]") {
  std::string why;
  auto sets = [&](std::string_view value) {
    const std::string sdp =
        "v=0\nm=video 0 RTP/AVP 96\na=rtpmap:96 H264/90000\na=fmtp:96 sprop-parameter-sets=" + std::string(value) +
        "\n";
    const auto v = parse_sdp_video(sdp, why);
    REQUIRE(v.has_value());
    return v->parameter_sets;
  };
  CHECK(sets("aM48gA==") == bytes({0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80}));
  CHECK(sets("aM48gA") == bytes({0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80}));    // padding left out
  CHECK(sets("Z0LA") == bytes({0, 0, 0, 1, 0x67, 0x42, 0xc0}));            // no padding needed
  CHECK(sets("Z0LAFQ==") == bytes({0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x15}));  // two padding characters
  CHECK(sets("aM48gA=,Z0I=").size() == 4 + 2);                             // too little padding: only Z0I= kept
  CHECK(sets("Z0LA=").empty());                                            // padding where none is needed
  CHECK(sets("aM48g").empty());                                            // 5 sextets: not whole bytes
  CHECK(sets("aM==48gA").empty());                                         // padding inside
  CHECK(sets("aM4-gA==").empty());                                         // URL-safe alphabet
  CHECK(sets(",,").empty());
  CHECK(sets("").empty());
}

TEST_CASE("sdp: no usable video is an error with a reason", "[rtsp][sdp]") {
  std::string why;
  CHECK_FALSE(parse_sdp_video("", why).has_value());
  CHECK(why == "no H.264 or H.265 video in the SDP");
  why.clear();
  CHECK_FALSE(parse_sdp_video("v=0\r\nm=audio 0 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n", why).has_value());
  CHECK(why == "no H.264 or H.265 video in the SDP");
  why.clear();
  // An H.264 rtpmap in an audio section, and one before any m= line, are not video.
  CHECK_FALSE(parse_sdp_video("a=rtpmap:96 H264/90000\nm=audio 0 RTP/AVP 96\na=rtpmap:96 H264/90000\n", why));
  CHECK(why == "no H.264 or H.265 video in the SDP");
  why.clear();
  CHECK_FALSE(parse_sdp_video("m=video 0 RTP/AVP 96\na=rtpmap:96 H264/0\n", why).has_value());
  CHECK(why.find("bad clock rate") != std::string::npos);
  CHECK_FALSE(parse_sdp_video("m=video 0 RTP/AVP 96\na=rtpmap:96 H264\n", why).has_value());
  CHECK_FALSE(parse_sdp_video("m=video 0 RTP/AVP 96\na=rtpmap:96 H264/99999999999999999999\n", why).has_value());
}

TEST_CASE("sdp: hostile numbers are bounded", "[rtsp][sdp]") {
  std::string why;
  const auto v = parse_sdp_video(
      "b=AS:99999999999999999999\nm=video 0 RTP/AVP 300 96\nb=TIAS:-5\na=rtpmap:300 H264/90000\n"
      "a=rtpmap:96 H264/90000\n",
      why);
  REQUIRE(v.has_value());
  CHECK(v->payload_type == 96);  // 300 is no payload type
  CHECK(v->bandwidth_bps == 0);
}
