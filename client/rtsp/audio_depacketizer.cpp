#include "client/rtsp/audio_depacketizer.hpp"

#include <algorithm>

namespace vigil::client::rtsp {
namespace {

constexpr std::size_t kRtpHeaderBytes = 12;
constexpr int kAuHeaderBits = 16;  // sizelength 13 + indexlength (or indexdeltalength) 3

struct RtpPacket {
  bool marker = false;
  int payload_type = 0;
  std::uint16_t sequence = 0;
  std::uint32_t timestamp = 0, ssrc = 0;
  std::span<const std::uint8_t> payload;
};

// RFC 3550 §5.1: the fixed header, CSRCs, the extension and padding; false when it does not hold.
bool parse_rtp(std::span<const std::uint8_t> b, RtpPacket& p) {
  if (b.size() < kRtpHeaderBytes || (b[0] >> 6) != 2) return false;
  const bool padding = (b[0] & 0x20) != 0, extension = (b[0] & 0x10) != 0;
  std::size_t at = kRtpHeaderBytes + 4 * std::size_t{b[0] & 0x0fu};
  p.marker = (b[1] & 0x80) != 0;
  p.payload_type = b[1] & 0x7f;
  p.sequence = static_cast<std::uint16_t>((b[2] << 8) | b[3]);
  p.timestamp = (std::uint32_t{b[4]} << 24) | (std::uint32_t{b[5]} << 16) | (std::uint32_t{b[6]} << 8) | b[7];
  p.ssrc = (std::uint32_t{b[8]} << 24) | (std::uint32_t{b[9]} << 16) | (std::uint32_t{b[10]} << 8) | b[11];
  if (extension) {
    if (b.size() < at + 4) return false;
    at += 4 + 4 * ((std::size_t{b[at + 2]} << 8) | b[at + 3]);
  }
  std::size_t end = b.size();
  if (padding) {
    if (end == 0 || b[end - 1] == 0 || b[end - 1] > end) return false;
    end -= b[end - 1];
  }
  if (at > end) return false;
  p.payload = b.subspan(at, end - at);
  return true;
}

}  // namespace

const char* ffmpeg_name(AudioCodec codec) noexcept {
  switch (codec) {
    case AudioCodec::aac: return "aac";
    case AudioCodec::pcm_mulaw: return "pcm_mulaw";
    case AudioCodec::pcm_alaw: return "pcm_alaw";
    case AudioCodec::opus: return "opus";
  }
  return "";
}

std::int64_t opus_packet_samples(std::span<const std::uint8_t> packet) noexcept {
  if (packet.empty()) return 0;
  const int config = packet[0] >> 3;
  // Frame sizes in 48 kHz samples: SILK 10/20/40/60 ms, hybrid 10/20 ms, CELT 2.5/5/10/20 ms.
  std::int64_t frame = 0;
  if (config < 12) {
    constexpr std::int64_t silk[] = {480, 960, 1920, 2880};
    frame = silk[config % 4];
  } else if (config < 16) {
    frame = config % 2 == 0 ? 480 : 960;
  } else {
    constexpr std::int64_t celt[] = {120, 240, 480, 960};
    frame = celt[config % 4];
  }
  std::int64_t frames = 1;
  switch (packet[0] & 3) {
    case 0: frames = 1; break;
    case 1:
    case 2: frames = 2; break;
    default:
      if (packet.size() < 2) return 0;
      frames = packet[1] & 0x3f;
  }
  return frame * frames;
}

AudioDepacketizer::AudioDepacketizer(AudioCodec codec, int payload_type, int channels)
    : codec_(codec), payload_type_(payload_type), channels_(channels > 0 ? channels : 1) {}

void AudioDepacketizer::push(std::span<const std::uint8_t> rtp, std::vector<AudioFrame>& out) {
  RtpPacket p;
  if (!parse_rtp(rtp, p)) {
    ++malformed_;
    return;
  }
  if (p.payload_type != payload_type_) return;
  const bool same_sender = started_ && p.ssrc == last_ssrc_;
  const auto step = static_cast<std::int16_t>(static_cast<std::uint16_t>(p.sequence - last_sequence_));
  if (same_sender && step <= 0 && step > -kMaxMisorder) return;  // a duplicate or a late packet: already past it
  if (same_sender && step > 0) {
    if (step > 1) {
      const auto missing = static_cast<std::uint64_t>(step - 1);
      lost_ += missing;
      lost_since_out_ += missing;
      fragment_open_ = false;  // a fragment run with a hole cannot be completed
    }
    const auto delta = static_cast<std::int32_t>(p.timestamp - last_timestamp32_);
    // A later packet with an earlier time: the sender's clock started over (its encoder
    // restarted). Its frames go on from the end of the last one handed out.
    last_timestamp_ = delta >= 0 || !emitted_ ? last_timestamp_ + delta : emitted_end_;
  } else {
    // The first packet, a new SSRC or a jump far back: the sender (re)started. Its clock goes on
    // from the end of the last frame handed out, so the frames handed out never go back.
    last_timestamp_ = emitted_ ? emitted_end_ : p.timestamp;
    fragment_open_ = false;
  }
  started_ = true;
  last_ssrc_ = p.ssrc;
  last_sequence_ = p.sequence;
  last_timestamp32_ = p.timestamp;
  switch (codec_) {
    case AudioCodec::aac: handle_aac(p.payload, p.marker, out); break;
    case AudioCodec::pcm_mulaw:
    case AudioCodec::pcm_alaw:
      if (p.payload.empty()) return;
      emit(p.payload, last_timestamp_, static_cast<std::int64_t>(p.payload.size()) / channels_, out);
      break;
    case AudioCodec::opus:
      if (p.payload.empty()) return;
      emit(p.payload, last_timestamp_, opus_packet_samples(p.payload), out);
      break;
  }
}

// RFC 3640 §3.2: AU-headers-length (bits), the AU headers, then the AUs in order. An AU larger
// than the packet comes in fragments, one packet each with a single AU header carrying the whole
// AU's size; the marker bit ends it.
void AudioDepacketizer::handle_aac(std::span<const std::uint8_t> payload, bool marker, std::vector<AudioFrame>& out) {
  if (payload.size() < 2) {
    ++malformed_;
    fragment_open_ = false;
    return;
  }
  const std::size_t header_bits = (std::size_t{payload[0]} << 8) | payload[1];
  const std::size_t header_bytes = (header_bits + 7) / 8;
  if (header_bits == 0 || header_bits % kAuHeaderBits != 0 || 2 + header_bytes > payload.size()) {
    ++malformed_;
    fragment_open_ = false;
    return;
  }
  const std::size_t units = header_bits / kAuHeaderBits;
  auto data = payload.subspan(2 + header_bytes);
  const auto au_size = [&](std::size_t i) {
    return static_cast<std::size_t>(((payload[2 + 2 * i] << 8) | payload[3 + 2 * i]) >> 3);
  };
  if (units == 1 && (fragment_open_ || au_size(0) > data.size())) {
    const std::size_t size = au_size(0);
    if (!fragment_open_ || fragment_size_ != size || fragment_timestamp_ != last_timestamp_) {
      // A new fragment run (a stale one, without its end, is dropped).
      fragment_open_ = true;
      fragment_size_ = size;
      fragment_timestamp_ = last_timestamp_;
      fragment_.clear();
    }
    if (fragment_size_ > kMaxAudioFrameBytes || fragment_.size() + data.size() > fragment_size_) {
      ++malformed_;
      fragment_open_ = false;
      return;
    }
    fragment_.insert(fragment_.end(), data.begin(), data.end());
    if (!marker) return;
    fragment_open_ = false;
    if (fragment_.size() == fragment_size_) {
      emit(fragment_, fragment_timestamp_, kAacFrameSamples, out);
    } else {
      ++malformed_;
    }
    return;
  }
  fragment_open_ = false;
  std::size_t sum = 0;
  for (std::size_t i = 0; i < units; ++i) sum += au_size(i);
  if (sum > data.size()) {
    ++malformed_;
    return;
  }
  // Index deltas of 0 (consecutive AUs, as every sender writes): AU i is i frames after the first.
  for (std::size_t i = 0; i < units; ++i) {
    const std::size_t size = au_size(i);
    if (size > 0) {
      emit(data.first(size), last_timestamp_ + static_cast<std::int64_t>(i) * kAacFrameSamples, kAacFrameSamples, out);
    }
    data = data.subspan(size);
  }
}

void AudioDepacketizer::emit(std::span<const std::uint8_t> data, std::int64_t timestamp, std::int64_t duration,
                             std::vector<AudioFrame>& out) {
  // Too large, or a timestamp not after the last frame's (a sender whose clock went back without
  // a restart): not a frame the recorder can store in order.
  if (data.size() > kMaxAudioFrameBytes || (emitted_ && timestamp <= emitted_timestamp_)) {
    ++malformed_;
    return;
  }
  emitted_ = true;
  emitted_timestamp_ = timestamp;
  emitted_end_ = timestamp + std::max<std::int64_t>(duration, 1);
  AudioFrame f;
  f.data.assign(data.begin(), data.end());
  f.timestamp = timestamp;
  f.duration = duration;
  f.frames_lost_before = lost_since_out_;
  lost_since_out_ = 0;
  out.push_back(std::move(f));
}

}  // namespace vigil::client::rtsp
