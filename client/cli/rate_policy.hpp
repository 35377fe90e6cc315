#pragma once
// The rate `vigil record` declares to admission for its input (docs/admission.md, "The declared
// rate of a pulled camera"): what is known, best first — the operator's rate (--rate, the camera
// row's declared_rate_bps) as given; the camera's advertised bitrate (SDP b=AS, which libavformat
// puts in the stream's bit_rate; a file's average) with a margin; else one whole GOP measured from
// the input's first keyframe to its second (at most kMeasureMaxS of media, so start-up stays
// fast), with a margin. A declared rate that turns out low is corrected by re-admission at the
// measured rate once vigild sees the stream policed (docs/admission.md, "Re-admission at the
// measured rate"); the recorder's drops count as offered for it.
// Pure: no IO, no clock. Thread: any. Errors: none.
#include <cstdint>
#include <optional>
#include <string_view>

namespace vigil::client {

inline constexpr double kMeasureMaxS = 3.0;         // media read ahead at most to measure a GOP
inline constexpr double kMinRateBps = 64e3;         // a declared rate is at least this
inline constexpr double kAdvertisedMargin = 1.3;    // record headers, and a camera above its own figure
inline constexpr double kMeasuredGopMargin = 1.3;   // record headers, and VBR: GOPs larger than the first
inline constexpr double kMeasuredSpanMargin = 1.5;  // no whole GOP seen: the window is all we know

// Measures one GOP from packets fed in order: from the first keyframe up to (not including) the
// second, or, with no second keyframe within kMeasureMaxS (MAX_SPAN_S) of media, everything read.
class GopMeter {
 public:
  explicit GopMeter(double max_span_s = kMeasureMaxS) : max_span_s_(max_span_s) {}

  // A packet at media time AT_S (seconds; nullopt: it had no timestamp) of BYTES. Returns
  // whether the measurement is done (this packet is not part of it when it closed the GOP).
  bool packet(std::optional<double> at_s, double bytes, bool keyframe) noexcept;
  bool done() const noexcept { return done_; }

  double bytes() const noexcept { return whole_gop_ ? gop_bytes_ : all_bytes_; }
  double span_s() const noexcept { return whole_gop_ ? gop_span_s_ : all_span_s_; }
  bool whole_gop() const noexcept { return whole_gop_; }

 private:
  double max_span_s_;
  std::optional<double> first_s_, keyframe_s_;
  double all_bytes_ = 0, all_span_s_ = 0, gop_bytes_ = 0, gop_span_s_ = 0;
  bool whole_gop_ = false, done_ = false;
};

struct RateEvidence {
  double override_bps = 0;             // the operator's (0: none)
  double advertised_bps = 0;           // the input's own figure (0: unknown)
  std::optional<GopMeter> measured{};  // read ahead, when neither is known
};

struct DeclaredRate {
  double bps = 0;
  std::string_view basis{};  // "override", "advertised", "measured GOP", "measured window"
};

DeclaredRate declared_rate(const RateEvidence& evidence);

// A camera's audio stream (audio_track.hpp): its codec's rate — the encoder's figure (BIT_RATE,
// 0: unknown), G.711's 8 bits a sample, else kAudioUnknownBps — plus the record header of up to
// kAudioPacketsPerS packets a second (the short frames of RTP audio make that header a large
// share), with kAdvertisedMargin. SAMPLE_RATE and CHANNELS: 0 when unknown.
inline constexpr double kAudioUnknownBps = 320e3;  // AAC and Opus at their usual ceilings
inline constexpr double kAudioPacketsPerS = 100;   // 10 ms frames, the shortest cameras send
inline constexpr double kAudioRecordHeaderBytes = 56;
double declared_audio_rate_bps(std::string_view codec, double bit_rate, int sample_rate, int channels);

}  // namespace vigil::client
