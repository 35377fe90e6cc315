#include "common/media_limits.hpp"

#include <algorithm>

namespace vigil {
namespace {

std::string codec_list() {
  std::string s;
  for (auto c : kVideoCodecs) s += (s.empty() ? "" : ", ") + std::string(c);
  for (auto c : kAudioCodecs) s += ", " + std::string(c);
  return s;
}

std::size_t be16(std::string_view b, std::size_t at) {
  return (static_cast<std::size_t>(static_cast<unsigned char>(b[at])) << 8) | static_cast<unsigned char>(b[at + 1]);
}

// The NAL unit type of a unit whose header starts with byte B.
int nal_type(bool hevc, unsigned char b) { return hevc ? (b >> 1) & 0x3f : b & 0x1f; }

struct ParameterSets {
  bool sps = false, pps = false;
  void saw(bool hevc, int type) {
    sps = sps || type == (hevc ? 33 : 7);
    pps = pps || type == (hevc ? 34 : 8);
  }
};

// avcC (ISO/IEC 14496-15 5.3.3): version 1, lengthSize, SPS count and the SPSs, PPS count and
// the PPSs, each unit length-prefixed (16 bits); what follows (High profiles' extension) is not read.
bool avcc_ok(std::string_view b) {
  if (b.size() < 7) return false;
  ParameterSets seen;
  std::size_t at = 5;
  for (int list = 0; list < 2; ++list) {
    if (at >= b.size()) return false;
    const std::size_t count = list == 0 ? static_cast<unsigned char>(b[at]) & 0x1f : static_cast<unsigned char>(b[at]);
    ++at;
    for (std::size_t i = 0; i < count; ++i) {
      if (b.size() - at < 2) return false;
      const auto n = be16(b, at);
      at += 2;
      if (n == 0 || n > b.size() - at) return false;
      seen.saw(false, nal_type(false, static_cast<unsigned char>(b[at])));
      at += n;
    }
  }
  return seen.sps && seen.pps;
}

// hvcC (ISO/IEC 14496-15 8.3.3): 22 bytes of configuration, then arrays of length-prefixed units.
bool hvcc_ok(std::string_view b) {
  if (b.size() < 23) return false;
  ParameterSets seen;
  const std::size_t arrays = static_cast<unsigned char>(b[22]);
  std::size_t at = 23;
  for (std::size_t a = 0; a < arrays; ++a) {
    if (b.size() - at < 3) return false;
    const auto count = be16(b, at + 1);
    at += 3;
    for (std::size_t i = 0; i < count; ++i) {
      if (b.size() - at < 2) return false;
      const auto n = be16(b, at);
      at += 2;
      if (n < 2 || n > b.size() - at) return false;
      seen.saw(true, nal_type(true, static_cast<unsigned char>(b[at])));
      at += n;
    }
  }
  return at == b.size() && seen.sps && seen.pps;
}

// Annex B: starts with a start code; the units after each start code include an SPS and a PPS.
bool annex_b_ok(bool hevc, std::string_view b) {
  if (!(b.starts_with(std::string_view("\0\0\1", 3)) || b.starts_with(std::string_view("\0\0\0\1", 4)))) return false;
  ParameterSets seen;
  for (std::size_t at = b.find(std::string_view("\0\0\1", 3)); at != std::string_view::npos;
       at = b.find(std::string_view("\0\0\1", 3), at + 3)) {
    if (at + 3 < b.size()) seen.saw(hevc, nal_type(hevc, static_cast<unsigned char>(b[at + 3])));
  }
  return seen.sps && seen.pps;
}

bool parameter_sets_ok(std::string_view codec, std::string_view b) {
  if (b.empty()) return true;  // in band
  const bool hevc = codec == "hevc";
  if (static_cast<unsigned char>(b[0]) == 1) return hevc ? hvcc_ok(b) : avcc_ok(b);
  return annex_b_ok(hevc, b);
}

std::string audio_breach(const MediaParameters& p) {
  if (p.width != 0 || p.height != 0) return "an audio codec has no picture size (width and height must be 0)";
  if (p.sample_rate && (*p.sample_rate < kMinSampleRate || *p.sample_rate > kMaxSampleRate)) {
    return "sample rate " + std::to_string(*p.sample_rate) + " Hz is outside the limits (" +
           std::to_string(kMinSampleRate) + ".." + std::to_string(kMaxSampleRate) + " Hz)";
  }
  if (p.channels && (*p.channels < 1 || *p.channels > kMaxChannels)) {
    return std::to_string(*p.channels) + " channels is outside the limits (1.." + std::to_string(kMaxChannels) + ")";
  }
  if (p.extradata.size() > kMaxAudioExtradataBytes) {
    return "audio extradata of " + std::to_string(p.extradata.size()) + " bytes is more than the limit of " +
           std::to_string(kMaxAudioExtradataBytes) + " bytes";
  }
  if ((p.codec == "pcm_mulaw" || p.codec == "pcm_alaw") && !p.extradata.empty()) {
    return "G.711 (" + std::string(p.codec) + ") has no extradata";
  }
  return {};
}

}  // namespace

bool is_video_codec(std::string_view codec) noexcept {
  return std::find(kVideoCodecs.begin(), kVideoCodecs.end(), codec) != kVideoCodecs.end();
}

bool is_allowed_codec(std::string_view codec) noexcept {
  return is_video_codec(codec) || std::find(kAudioCodecs.begin(), kAudioCodecs.end(), codec) != kAudioCodecs.end();
}

std::string media_limits_breach(const MediaParameters& p) {
  if (!is_allowed_codec(p.codec)) {
    // The name is the recorder's text: shown only as far as it is short and printable.
    std::string shown(p.codec.substr(0, 32));
    for (auto& ch : shown) {
      if (ch < 0x20 || ch > 0x7e) ch = '?';
    }
    return "codec '" + shown + "' is not allowed (allowed: " + codec_list() + ")";
  }
  if (p.extradata.size() > kMaxExtradataBytes) {
    return "extradata of " + std::to_string(p.extradata.size()) + " bytes is more than the limit of " +
           std::to_string(kMaxExtradataBytes) + " bytes";
  }
  if (is_video_codec(p.codec)) {
    if (p.width < 1 || p.width > kMaxPictureDimension || p.height < 1 || p.height > kMaxPictureDimension) {
      return "picture size " + std::to_string(p.width) + "x" + std::to_string(p.height) +
             " is outside the limits (width and height 1.." + std::to_string(kMaxPictureDimension) + ")";
    }
    if (!parameter_sets_ok(p.codec, p.extradata)) {
      return std::string("extradata is not ") + (p.codec == "hevc" ? "H.265" : "H.264") + " parameter sets (none, " +
             (p.codec == "hevc" ? "hvcC" : "avcC") + ", or Annex B units with an SPS and a PPS)";
    }
    if (p.sample_rate.value_or(0) != 0 || p.channels.value_or(0) != 0) {
      return "a video codec has no sample rate or channels (they must be 0)";
    }
  } else if (auto breach = audio_breach(p); !breach.empty()) {
    return breach;
  }
  if (p.time_base_num < 1 || p.time_base_den < 1 || p.time_base_num > p.time_base_den ||
      p.time_base_den > kMaxTimeBaseDen) {
    return "time base " + std::to_string(p.time_base_num) + "/" + std::to_string(p.time_base_den) +
           " is outside the limits (a tick of 1 ns to 1 s: 1 <= num <= den <= " + std::to_string(kMaxTimeBaseDen) + ")";
  }
  return {};
}

}  // namespace vigil
