// The audio of a DESCRIBE's SDP (client/rtsp/sdp, parse_sdp_audio): AAC (RFC 3640 mpeg4-generic
// in mode AAC-hbr), G.711 by static payload type or rtpmap (RFC 3551), Opus (RFC 7587), and what
// is named and left out (other codecs, other AAC modes).
#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

#include "client/rtsp/sdp.hpp"

using namespace vigil::client::rtsp;

namespace {

// GStreamer's answer for a camera of H.264 and AAC (rtpmp4gpay), trimmed to its media sections.
constexpr std::string_view kAacSdp =
    "v=0\r\n"
    "o=- 1 1 IN IP4 127.0.0.1\r\n"
    "s=Session streamed with GStreamer\r\n"
    "t=0 0\r\n"
    "a=control:*\r\n"
    "m=video 0 RTP/AVP 96\r\n"
    "a=rtpmap:96 H264/90000\r\n"
    "a=control:stream=0\r\n"
    "m=audio 0 RTP/AVP 97\r\n"
    "b=AS:128\r\n"
    "a=rtpmap:97 MPEG4-GENERIC/44100/2\r\n"
    "a=fmtp:97 streamtype=5;profilelevelid=2;mode=AAC-hbr;config=1210;sizelength=13;indexlength=3;"
    "indexdeltalength=3\r\n"
    "a=control:stream=1\r\n";

std::optional<SdpAudio> parse(std::string_view sdp, std::string& skipped) { return parse_sdp_audio(sdp, skipped); }

}  // namespace

TEST_CASE("AAC-hbr: clock rate, channels, its AudioSpecificConfig and control", "[rtsp][sdp][audio]") {
  std::string skipped;
  const auto a = parse(kAacSdp, skipped);
  REQUIRE(a);
  CHECK(a->codec == AudioCodec::aac);
  CHECK(a->payload_type == 97);
  CHECK(a->clock_rate_hz == 44100);
  CHECK(a->channels == 2);
  CHECK(a->config == std::vector<std::uint8_t>{0x12, 0x10});
  CHECK(a->control == "stream=1");
  CHECK(a->bandwidth_bps == 128000);
  // The video is still read from the same SDP.
  std::string why;
  CHECK(parse_sdp_video(kAacSdp, why));
}

TEST_CASE("G.711 by static payload type needs no rtpmap; PCMA by name", "[rtsp][sdp][audio]") {
  std::string skipped;
  auto a = parse("m=video 0 RTP/AVP 96\na=rtpmap:96 H264/90000\nm=audio 0 RTP/AVP 0\na=control:trackID=2\n", skipped);
  REQUIRE(a);
  CHECK(a->codec == AudioCodec::pcm_mulaw);
  CHECK(a->payload_type == 0);
  CHECK(a->clock_rate_hz == 8000);
  CHECK(a->channels == 1);
  CHECK(a->control == "trackID=2");
  a = parse("m=audio 0 RTP/AVP 8\n", skipped);
  REQUIRE(a);
  CHECK(a->codec == AudioCodec::pcm_alaw);
  a = parse("m=audio 0 RTP/AVP 98\na=rtpmap:98 pcma/8000\n", skipped);
  REQUIRE(a);
  CHECK(a->codec == AudioCodec::pcm_alaw);
  CHECK(a->payload_type == 98);
}

TEST_CASE("Opus at 48 kHz, stereo as RFC 7587 writes its rtpmap", "[rtsp][sdp][audio]") {
  std::string skipped;
  const auto a = parse("m=audio 0 RTP/AVP 111\na=rtpmap:111 OPUS/48000/2\na=fmtp:111 sprop-stereo=0\n", skipped);
  REQUIRE(a);
  CHECK(a->codec == AudioCodec::opus);
  CHECK(a->clock_rate_hz == 48000);
  CHECK(a->channels == 2);
  CHECK(a->config.empty());
}

TEST_CASE("The first format this session reads wins, in the m= line's order", "[rtsp][sdp][audio]") {
  std::string skipped;
  const auto a = parse("m=audio 0 RTP/AVP 100 0 8\na=rtpmap:100 G726-32/8000\n", skipped);
  REQUIRE(a);
  CHECK(a->codec == AudioCodec::pcm_mulaw);
}

TEST_CASE("Audio this session does not read is named, not taken", "[rtsp][sdp][audio]") {
  std::string skipped;
  CHECK_FALSE(parse("m=audio 0 RTP/AVP 100\na=rtpmap:100 G726-32/8000\n", skipped));
  CHECK(skipped == "G726-32/8000");
  // AAC in another mode (low bitrate: 6-bit sizes), and AAC-hbr without its config.
  CHECK_FALSE(
      parse("m=audio 0 RTP/AVP 97\na=rtpmap:97 mpeg4-generic/16000/1\n"
            "a=fmtp:97 mode=AAC-lbr;sizelength=6;indexlength=2;config=1408\n",
            skipped));
  CHECK(skipped.starts_with("MPEG4-GENERIC (mode AAC-lbr"));
  CHECK_FALSE(
      parse("m=audio 0 RTP/AVP 97\na=rtpmap:97 mpeg4-generic/16000/1\na=fmtp:97 mode=AAC-hbr;sizelength=13;"
            "indexlength=3;config=14g8\n",
            skipped));
  CHECK(skipped.starts_with("MPEG4-GENERIC"));
  // Opus must run at 48 kHz (RFC 7587 §7); G.711 at 8 kHz.
  CHECK_FALSE(parse("m=audio 0 RTP/AVP 111\na=rtpmap:111 opus/16000/2\n", skipped));
  CHECK_FALSE(parse("m=audio 0 RTP/AVP 98\na=rtpmap:98 PCMU/16000\n", skipped));
  CHECK(skipped == "PCMU/16000");
}

TEST_CASE("No audio section: nothing skipped", "[rtsp][sdp][audio]") {
  std::string skipped = "stale";
  CHECK_FALSE(parse("m=video 0 RTP/AVP 96\na=rtpmap:96 H264/90000\n", skipped));
  CHECK(skipped.empty());
}

TEST_CASE("A later audio section is read when the first offers nothing readable", "[rtsp][sdp][audio]") {
  std::string skipped;
  const auto a =
      parse("m=audio 0 RTP/AVP 100\na=rtpmap:100 G726-32/8000\nm=audio 0 RTP/AVP 0\na=control:a2\n", skipped);
  REQUIRE(a);
  CHECK(a->control == "a2");
}
