#include "server/media/hls_codecs.hpp"

#include <cstdint>
#include <cstdio>
#include <string_view>

namespace vigil::server {
namespace {

std::uint8_t byte_at(std::string_view b, std::size_t i) { return static_cast<std::uint8_t>(b[i]); }

std::string hex2(unsigned v) {
  char buf[4];
  std::snprintf(buf, sizeof buf, "%02X", v & 0xffu);
  return buf;
}

// avc1.PPCCLL: profile_idc, the constraint flags byte and level_idc, which avcC copies from the
// SPS (its bytes 1-3) and an SPS NAL unit holds right after its header.
std::string avc1(std::string_view x) {
  if (x.size() >= 4 && byte_at(x, 0) == 1)
    return "avc1." + hex2(byte_at(x, 1)) + hex2(byte_at(x, 2)) + hex2(byte_at(x, 3));
  // Annex B: the first SPS (NAL type 7) after a start code.
  for (std::size_t i = 0; i + 6 < x.size(); ++i) {
    if (byte_at(x, i) == 0 && byte_at(x, i + 1) == 0 && byte_at(x, i + 2) == 1 && (byte_at(x, i + 3) & 0x1f) == 7) {
      return "avc1." + hex2(byte_at(x, i + 4)) + hex2(byte_at(x, i + 5)) + hex2(byte_at(x, i + 6));
    }
  }
  return {};
}

// hvc1.[A|B|C]PROFILE.COMPAT.{L|H}LEVEL.C1[.C2…] from hvcC (ISO/IEC 14496-15 E.3): the profile
// space as a letter (none for 0), profile_idc in decimal, the 32 compatibility flags bit-reversed in
// hex without leading zeros, the tier and level_idc, the six constraint bytes in hex with the
// trailing zero bytes left out.
std::string hvc1(std::string_view x) {
  if (x.size() < 13 || byte_at(x, 0) != 1) return {};
  const unsigned space = byte_at(x, 1) >> 6, tier = (byte_at(x, 1) >> 5) & 1, profile = byte_at(x, 1) & 0x1f;
  std::uint32_t compat = 0;
  for (int i = 0; i < 4; ++i) compat = (compat << 8) | byte_at(x, 2 + static_cast<std::size_t>(i));
  std::uint32_t reversed = 0;
  for (int i = 0; i < 32; ++i) reversed |= ((compat >> i) & 1u) << (31 - i);
  char compat_hex[12];
  std::snprintf(compat_hex, sizeof compat_hex, "%X", reversed);
  std::string s = "hvc1.";
  if (space > 0) s += static_cast<char>('A' + space - 1);
  s += std::to_string(profile) + "." + compat_hex + "." + (tier ? "H" : "L") + std::to_string(byte_at(x, 12));
  std::size_t last = 6;  // constraint bytes 6..11; at least the first is written
  for (std::size_t i = 11; i > 6; --i) {
    if (byte_at(x, i) != 0) {
      last = i;
      break;
    }
  }
  for (std::size_t i = 6; i <= last; ++i) s += "." + hex2(byte_at(x, i));
  return s;
}

// mp4a.40.AOT: MPEG-4 audio (object type indication 0x40) and the AudioSpecificConfig's audio
// object type (5 bits; 31 escapes to 32 + the next 6). 2 is AAC-LC.
std::string mp4a(std::string_view asc) {
  if (asc.empty()) return "mp4a.40.2";  // no config: AAC-LC, what cameras send
  unsigned aot = byte_at(asc, 0) >> 3;
  if (aot == 31) {
    if (asc.size() < 2) return {};
    aot = 32 + (((byte_at(asc, 0) & 0x07u) << 3) | (byte_at(asc, 1) >> 5));
  }
  return "mp4a.40." + std::to_string(aot);
}

}  // namespace

std::string rfc6381_codec(const media::CodecInfo& codec) {
  if (codec.codec_name == "h264") return avc1(codec.extradata);
  if (codec.codec_name == "hevc") return hvc1(codec.extradata);
  if (codec.codec_name == "aac") return mp4a(codec.extradata);
  if (codec.codec_name == "opus") return "Opus";
  return {};
}

}  // namespace vigil::server
