#pragma once
// The media trust boundary: what a recorder may declare of a stream when it opens a recording
// (codec, extradata, picture size, time base), written once and checked on both sides — by
// vigild when a recording opens (refused, with the limit named) and by every media route before
// recorded bytes reach FFmpeg (export, HLS, thumbnails: 422), so recordings written before a
// rule existed, or a volume from elsewhere, are checked again when read.
// Payloads are bounded apart from this: --max-frame-bytes on the wire (HelloReply).
// Thread: pure code, any thread. Errors: values (the reason a stream is outside the limits).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

// FFmpeg codec names that vigild stores and hands to its muxers and its decoder: the video
// codecs cameras send, and the audio codecs a camera's second track carries.
inline constexpr std::array<std::string_view, 2> kVideoCodecs{"h264", "hevc"};
inline constexpr std::array<std::string_view, 4> kAudioCodecs{"aac", "pcm_mulaw", "pcm_alaw", "opus"};

// avcC/hvcC with every parameter set a camera sends fits in a few hundred bytes. Half of the
// 64 KiB that a wire frame's header (proto::kMaxHeaderBytes) and a segment's stream description
// (storage::kMaxCodecParametersBytes) hold: the description in every segment always keeps it.
inline constexpr std::size_t kMaxExtradataBytes = 32u << 10;
// Width and height, each (8K is 7680 × 4320).
inline constexpr std::int64_t kMaxPictureDimension = 8192;
// What a decoder may allocate for one picture (AVCodecContext::max_pixels).
inline constexpr std::int64_t kMaxPicturePixels = kMaxPictureDimension * kMaxPictureDimension;
// A time base's tick: at least 1 ns, at most 1 s (1/90000 and 1001/30000 are the usual ones).
inline constexpr std::int64_t kMaxTimeBaseDen = 1'000'000'000;
// Audio: G.711's 8 kHz to studio 96 kHz; mono to 7.1.
inline constexpr std::int64_t kMinSampleRate = 8000, kMaxSampleRate = 96000;
inline constexpr std::int64_t kMaxChannels = 8;
// An AAC AudioSpecificConfig is a few bytes (a program config element, a few dozen more); an
// Opus head at most 19 + 2 + 255 (a channel mapping table for 255 channels).
inline constexpr std::size_t kMaxAudioExtradataBytes = 1024;

struct MediaParameters {
  std::string_view codec{};  // FFmpeg's name
  std::string_view extradata{};
  std::int64_t width = 0, height = 0;
  std::int64_t time_base_num = 1, time_base_den = 1'000'000;
  // Audio: checked where given (open-record gives them, proto's 0 when a recorder leaves them
  // out; the catalog keeps none, so media routes give none). A video codec must give none or 0.
  std::optional<std::int64_t> sample_rate{}, channels{};
};

bool is_video_codec(std::string_view codec) noexcept;
bool is_allowed_codec(std::string_view codec) noexcept;

// Why P is outside the limits, naming the limit ("codec 'vp9' is not allowed (h264, hevc, …)",
// "extradata of 40000 bytes is more than the limit of 32768"); empty when it is within them.
// Video codecs need a picture size in 1..kMaxPictureDimension; audio codecs have none (0 × 0),
// a sample rate in kMinSampleRate..kMaxSampleRate and 1..kMaxChannels channels (where given), and
// extradata of at most kMaxAudioExtradataBytes (none for G.711, which has no configuration).
// A video codec's extradata is its parameter sets, whose structure is checked (FFmpeg's muxer
// copies them unread into every export): none (sent in band), avcC/hvcC whose lengths hold
// within it and name an SPS and a PPS, or Annex B NAL units with an SPS and a PPS.
std::string media_limits_breach(const MediaParameters& p);

}  // namespace vigil
