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
  if (p.extradata_bytes > kMaxExtradataBytes) {
    return "extradata of " + std::to_string(p.extradata_bytes) + " bytes is more than the limit of " +
           std::to_string(kMaxExtradataBytes) + " bytes";
  }
  if (is_video_codec(p.codec)) {
    if (p.width < 1 || p.width > kMaxPictureDimension || p.height < 1 || p.height > kMaxPictureDimension) {
      return "picture size " + std::to_string(p.width) + "x" + std::to_string(p.height) +
             " is outside the limits (width and height 1.." + std::to_string(kMaxPictureDimension) + ")";
    }
  } else if (p.width != 0 || p.height != 0) {
    return "an audio codec has no picture size (width and height must be 0)";
  }
  if (p.time_base_num < 1 || p.time_base_den < 1 || p.time_base_num > p.time_base_den ||
      p.time_base_den > kMaxTimeBaseDen) {
    return "time base " + std::to_string(p.time_base_num) + "/" + std::to_string(p.time_base_den) +
           " is outside the limits (a tick of 1 ns to 1 s: 1 <= num <= den <= " + std::to_string(kMaxTimeBaseDen) + ")";
  }
  return {};
}

}  // namespace vigil
