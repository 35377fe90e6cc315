#pragma once
// For the media fuzz targets: the input as what a recorder declared at open-record and then
// sent. Layout (tests/fuzz/corpus/make_corpus.py writes seeds in it):
//   u8 codec (an index into kCodecs)  u8 flags  i16 width  i16 height
//   u16 extradata bytes (mod 2048), the extradata
//   then frames, each: u8 flags (bit 0: keyframe)  i16 pts step (ms)  i8 dts before pts (ms)
//                      u16 payload bytes, the payload
// Everything past the end of the input reads as zero; at most kMaxFrames frames.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/media_writer.hpp"
#include "tests/fuzz/record_ops.hpp"

namespace vigil::fuzz {

// What recorders send (H.264, H.265, AAC), plus names a hostile recorder could declare: a
// decoder-only format, a raw one, and one FFmpeg does not know.
inline const char* const kCodecs[] = {"h264", "hevc", "aac", "mjpeg", "rawvideo", "no_such_codec"};
inline constexpr std::size_t kMaxFrames = 64;

struct MediaInput {
  media::CodecInfo codec;
  std::uint8_t flags = 0;
  struct Packet {
    std::int64_t pts_us = 0, dts_us = 0, duration_us = 0;
    bool keyframe = false;
    std::vector<std::byte> payload;
  };
  std::vector<Packet> packets;
};

inline MediaInput read_media_input(const std::uint8_t* data, std::size_t size, std::int64_t origin_us) {
  Input in(data, size);
  MediaInput m;
  m.codec.codec_name = kCodecs[in.u8() % std::size(kCodecs)];
  m.flags = in.u8();
  m.codec.width = static_cast<std::int16_t>(in.u16());
  m.codec.height = static_cast<std::int16_t>(in.u16());
  const auto extra = in.bytes(in.u16() % 2048u);
  m.codec.extradata.assign(reinterpret_cast<const char*>(extra.data()), extra.size());
  std::int64_t pts = origin_us;
  while (!in.empty() && m.packets.size() < kMaxFrames) {
    MediaInput::Packet p;
    const std::uint8_t f = in.u8();
    p.keyframe = f & 1;
    pts += std::int64_t{static_cast<std::int16_t>(in.u16())} * 1000;
    p.pts_us = pts;
    p.dts_us = pts - std::int64_t{static_cast<std::int8_t>(in.u8())} * 1000;
    p.duration_us = 40'000;
    const auto payload = in.bytes(in.u16());
    p.payload.assign(payload.begin(), payload.end());
    m.packets.push_back(std::move(p));
  }
  return m;
}

}  // namespace vigil::fuzz
