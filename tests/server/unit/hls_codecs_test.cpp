// The CODECS strings of a master playlist (RFC 6381), from the parameters a recording keeps: H.264
// from avcC or an Annex B SPS, H.265 from hvcC (ISO/IEC 14496-15 Annex E: profile, bit-reversed
// compatibility flags, tier and level, constraint bytes without trailing zeros), AAC's audio
// object type; nothing where the parameters are in band or the codec has no MP4 form.
#include <catch2/catch_test_macros.hpp>
#include <string>

#include "server/media/hls_codecs.hpp"

using vigil::media::CodecInfo;
using vigil::server::rfc6381_codec;

namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

// An hvcC's first 13 bytes (the rest is not read): version 1, profile byte, compatibility flags,
// six constraint bytes, level_idc.
std::string hvcc(int profile_byte, std::uint32_t compat, std::initializer_list<int> constraint, int level) {
  std::string s = bytes({1, profile_byte});
  for (int i = 3; i >= 0; --i) s += static_cast<char>((compat >> (8 * i)) & 0xff);
  for (int c : constraint) s += static_cast<char>(c);
  s += static_cast<char>(level);
  return s;
}

}  // namespace

TEST_CASE("H.264's codec string comes from its avcC or its Annex B SPS", "[hls][unit]") {
  CHECK(rfc6381_codec({.codec_name = "h264", .extradata = bytes({1, 0x64, 0x00, 0x1f, 0xff, 0xe1})}) == "avc1.64001F");
  CHECK(rfc6381_codec({.codec_name = "h264", .extradata = bytes({0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1e, 0x95})}) ==
        "avc1.42C01E");
  CHECK(rfc6381_codec({.codec_name = "h264"}).empty());  // parameter sets in band: not known
}

TEST_CASE("H.265's codec string follows ISO/IEC 14496-15 Annex E", "[hls][unit]") {
  // Main: compatibility flags 1 and 2 (0x60000000, reversed 0x6), level 3.1 (93), constraint 0xB0.
  CHECK(rfc6381_codec({.codec_name = "hevc", .extradata = hvcc(0x01, 0x60000000, {0xb0, 0, 0, 0, 0, 0}, 93)}) ==
        "hvc1.1.6.L93.B0");
  // Main 10, high tier, level 4 (120), two constraint bytes.
  CHECK(rfc6381_codec({.codec_name = "hevc", .extradata = hvcc(0x22, 0x20000000, {0x90, 0x08, 0, 0, 0, 0}, 120)}) ==
        "hvc1.2.4.H120.90.08");
  CHECK(rfc6381_codec({.codec_name = "hevc", .extradata = bytes({0, 0, 0, 1, 0x40})}).empty());  // not hvcC
}

TEST_CASE("AAC's codec string names its audio object type; G.711 has none", "[hls][unit]") {
  CHECK(rfc6381_codec({.codec_name = "aac", .extradata = bytes({0x11, 0x90})}) == "mp4a.40.2");  // LC, 48 kHz
  CHECK(rfc6381_codec({.codec_name = "aac", .extradata = bytes({0x2b, 0x92, 0x08, 0x00})}) == "mp4a.40.5");  // HE
  CHECK(rfc6381_codec({.codec_name = "aac", .extradata = bytes({0xf8, 0x40})}) == "mp4a.40.34");  // escaped: 32 + 2
  CHECK(rfc6381_codec({.codec_name = "pcm_mulaw"}).empty());
}
