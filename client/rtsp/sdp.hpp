#pragma once
// The video of an RTSP DESCRIBE's SDP (RFC 8866, RFC 6184 and RFC 7798 fmtp): the first m=video
// section whose rtpmap is H264 or H265 (either case).
// Thread: any. Errors: nullopt with WHY set ("no H.264 or H.265 video in the SDP", ...).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/rtsp/rtp_depacketizer.hpp"

namespace vigil::client::rtsp {

struct SdpVideo {
  VideoCodec codec = VideoCodec::h264;
  int payload_type = 0;
  int clock_rate_hz = 90000;
  std::string control;             // a=control of the media section ("" if absent; may be absolute)
  std::int64_t bandwidth_bps = 0;  // b=AS (kbit/s) or b=TIAS (bit/s) of the section, else the session's; 0: none
  std::vector<std::uint8_t> parameter_sets;  // sprop-parameter-sets (H.264) or sprop-vps/sps/pps (H.265), Annex B
};

std::optional<SdpVideo> parse_sdp_video(std::string_view sdp, std::string& why);

}  // namespace vigil::client::rtsp
