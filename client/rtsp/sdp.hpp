#pragma once
// The video of an RTSP DESCRIBE's SDP (RFC 8866, RFC 6184 and RFC 7798 fmtp): the first m=video
// section whose rtpmap is H264 or H265 (either case); and its audio (RFC 3640, RFC 3551, RFC 7587).
// Thread: any. Errors: nullopt with WHY set ("no H.264 or H.265 video in the SDP", ...).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/rtsp/audio_depacketizer.hpp"
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

struct SdpAudio {
  AudioCodec codec = AudioCodec::pcm_mulaw;
  int payload_type = 0;
  int clock_rate_hz = 8000;  // the RTP clock: the sample rate (Opus: always 48000)
  int channels = 1;          // the rtpmap's channel count (1 when it gives none)
  std::string control;
  std::int64_t bandwidth_bps = 0;    // the section's b=AS / b=TIAS; 0: none
  std::vector<std::uint8_t> config;  // AAC: its AudioSpecificConfig (fmtp config=, hex)
};

// The first m=audio section's first format this session reads: MPEG4-GENERIC in mode AAC-hbr
// with sizelength=13, indexlength=3 and a config; PCMU and PCMA (static payload types 0 and 8 need
// no rtpmap; 8000 Hz); OPUS at 48000 Hz. nullopt when there is none: SKIPPED then names what the
// audio section offered ("MPEG4-GENERIC (mode AAC-lbr)", "G726-32"), empty when it has no audio.
std::optional<SdpAudio> parse_sdp_audio(std::string_view sdp, std::string& skipped);

}  // namespace vigil::client::rtsp
