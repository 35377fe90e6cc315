#pragma once
// RTP payloads of a camera's audio back into the codec's own frames, as the recorder sends them
// (docs/protocol.md, "Pulled cameras"): RFC 3640 AAC in mode AAC-hbr (16-bit AU headers:
// sizelength=13, indexlength=3, indexdeltalength=3), one frame per access unit, fragmented ones
// reassembled; RFC 3551 G.711 (PCMU, PCMA), one frame per packet; RFC 7587 Opus, one Opus
// packet per RTP payload. Nothing is decoded.
// A gap in sequence numbers is counted, and the next frame says how many packets went before it
// (frames_lost_before: the recorder reports that hole as a source_loss gap); an AAC fragment run
// it hit is dropped. Duplicates and packets up to kMaxMisorder sequence numbers old are ignored;
// further back, a new SSRC, or a timestamp going back is a restart of the sender (no loss counted;
// its clock goes on from the last frame's end). A frame whose timestamp is still not after the
// last one's is dropped as malformed: the frames handed out always go forward.
// Thread: one owner. Errors: none thrown; malformed packets are counted and skipped.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vigil::client::rtsp {

enum class AudioCodec { aac, pcm_mulaw, pcm_alaw, opus };

// FFmpeg's name of CODEC (what vigild stores: common/media_limits.hpp).
const char* ffmpeg_name(AudioCodec codec) noexcept;

struct AudioFrame {
  std::vector<std::uint8_t> data;        // one AAC access unit, G.711 samples, or one Opus packet
  std::int64_t timestamp = 0;            // RTP timestamp unwrapped to 64 bits (the stream's clock rate)
  std::int64_t duration = 0;             // in clock ticks (0: unknown)
  std::uint64_t frames_lost_before = 0;  // RTP packets lost since the frame handed out before this
};

// An AAC access unit (and a reassembled fragment run) larger than this is dropped: an AAC frame
// holds at most 6144 bits per channel, 8 channels fit in 6 KiB.
inline constexpr std::size_t kMaxAudioFrameBytes = 64 * 1024;
// Samples in an AAC frame (AAC-LC, HE-AAC's core): the time step between the AUs of one packet.
inline constexpr std::int64_t kAacFrameSamples = 1024;

class AudioDepacketizer {
 public:
  static constexpr int kMaxMisorder = 100;

  // CHANNELS: for G.711's duration (samples per channel); 1 when unknown.
  AudioDepacketizer(AudioCodec codec, int payload_type, int channels = 1);
  // One RTP packet (header included). Frames completed by it are appended to OUT.
  void push(std::span<const std::uint8_t> rtp, std::vector<AudioFrame>& out);
  std::uint64_t malformed_packets() const { return malformed_; }
  std::uint64_t lost_packets() const { return lost_; }

 private:
  void handle_aac(std::span<const std::uint8_t> payload, bool marker, std::vector<AudioFrame>& out);
  void emit(std::span<const std::uint8_t> data, std::int64_t timestamp, std::int64_t duration,
            std::vector<AudioFrame>& out);

  AudioCodec codec_;
  int payload_type_, channels_;
  bool started_ = false;
  std::uint16_t last_sequence_ = 0;
  std::uint32_t last_ssrc_ = 0, last_timestamp32_ = 0;
  std::int64_t last_timestamp_ = 0;
  // An AAC access unit arriving in fragments: its size and what has come of it.
  bool fragment_open_ = false;
  std::size_t fragment_size_ = 0;
  std::int64_t fragment_timestamp_ = 0;
  std::vector<std::uint8_t> fragment_;
  // The last frame handed out: timestamps only go forward.
  bool emitted_ = false;
  std::int64_t emitted_timestamp_ = 0, emitted_end_ = 0;
  std::uint64_t malformed_ = 0, lost_ = 0, lost_since_out_ = 0;
};

// The samples (at 48 kHz) of one Opus packet from its TOC byte and frame count (RFC 6716 §3.1);
// 0 when it cannot be read.
std::int64_t opus_packet_samples(std::span<const std::uint8_t> packet) noexcept;

}  // namespace vigil::client::rtsp
