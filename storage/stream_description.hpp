#pragma once
// What a stream is, written into the header of each of its segments (the segment header's codec
// parameters, docs/format.md "Stream description"), so that a volume explains itself: the
// catalog's cameras and streams can be rebuilt from the volumes alone (`vigil catalog rebuild`).
// A small versioned encoding of tagged fields: a reader skips the tags it does not know, so a
// later version can add fields without breaking older readers.
// Thread: pure code, any thread. Errors: values (corruption for bytes that do not decode,
// unsupported for a newer major version); decoding never reads outside its input.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace vigil::storage {

inline constexpr std::uint16_t kStreamDescriptionVersion = 1;

struct StreamDescription {
  std::string camera;                  // the camera's name, as the catalog spells it
  std::string role = "main";           // main or sub
  std::string media_kind = "video";    // video or audio
  std::string codec;                   // FFmpeg codec name: h264, hevc, ...
  std::vector<std::byte> extradata;    // FFmpeg's extradata (avcC/hvcC, SPS/PPS): needed to remux
  std::int64_t width = 0, height = 0;  // 0: unknown or not video
  // The source's time base. Records on the volume always carry wall-clock microseconds; this is
  // what the recorder declared, kept for remuxing at the source's resolution.
  std::int64_t time_base_num = 1, time_base_den = 1'000'000;
  std::int64_t declared_rate_bps = 0;
  std::int64_t admitted_rate_bps = 0;
  std::int64_t started_at_us = 0;  // when the stream opened (wall clock)
  // Audio: what the codec config may leave unsaid (G.711, RTP's Opus), kept so that a rebuilt
  // catalog has it; 0: unknown or video (and then not written).
  std::int64_t sample_rate_hz = 0, channels = 0;

  bool operator==(const StreamDescription&) const = default;
};

// The encoding of D. Never larger than kMaxCodecParametersBytes (volume_layout.hpp): extradata
// that would not fit is left out (the reader sees none, and the segment is still described).
std::vector<std::byte> encode_stream_description(const StreamDescription& d);
// BYTES as written by encode_stream_description. corruption: not a description, truncated, a
// field of the wrong size, a repeated field, or no camera or codec; unsupported: a newer version.
Result<StreamDescription> decode_stream_description(std::span<const std::byte> bytes) noexcept;

}  // namespace vigil::storage
