#include "client/cli/rate_policy.hpp"

#include <algorithm>

namespace vigil::client {

bool GopMeter::packet(std::optional<double> at_s, double bytes, bool keyframe) noexcept {
  if (done_) return true;
  if (at_s && !first_s_) first_s_ = at_s;
  if (keyframe && at_s) {
    if (keyframe_s_ && *at_s > *keyframe_s_) {
      // The second keyframe closes the first GOP: [first keyframe, this one).
      gop_span_s_ = *at_s - *keyframe_s_;
      whole_gop_ = true;
      done_ = true;
      return true;
    }
    if (!keyframe_s_) keyframe_s_ = at_s;
  }
  all_bytes_ += bytes;
  if (keyframe_s_) gop_bytes_ += bytes;
  if (at_s && first_s_) all_span_s_ = std::max(all_span_s_, *at_s - *first_s_);
  if (all_span_s_ >= max_span_s_) done_ = true;
  return done_;
}

DeclaredRate declared_rate(const RateEvidence& e) {
  if (e.override_bps > 0) return {std::max(kMinRateBps, e.override_bps), "override"};
  if (e.advertised_bps > 0) return {std::max(kMinRateBps, e.advertised_bps * kAdvertisedMargin), "advertised"};
  if (!e.measured) return {kMinRateBps, "measured window"};
  const auto& m = *e.measured;
  // A window shorter than half a second (a tiny input) would overstate the rate of its one frame.
  const double bps = m.bytes() * 8 / std::max(m.span_s(), 0.5);
  if (m.whole_gop()) return {std::max(kMinRateBps, bps * kMeasuredGopMargin), "measured GOP"};
  return {std::max(kMinRateBps, bps * kMeasuredSpanMargin), "measured window"};
}

double declared_audio_rate_bps(std::string_view codec, double bit_rate, int sample_rate, int channels) {
  double media_bps = bit_rate > 0 ? bit_rate : kAudioUnknownBps;
  if (codec == "pcm_mulaw" || codec == "pcm_alaw") {
    // 8 bits a sample: exact, whatever the container claims.
    media_bps = 8.0 * (sample_rate > 0 ? sample_rate : 8000) * (channels > 0 ? channels : 1);
  }
  const double header_bps = kAudioPacketsPerS * kAudioRecordHeaderBytes * 8;
  return std::max(kMinRateBps, (media_bps + header_bps) * kAdvertisedMargin);
}

}  // namespace vigil::client
