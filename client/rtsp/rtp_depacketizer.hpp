#pragma once
// RTP payloads of one video stream (RFC 6184 H.264, RFC 7798 H.265) back into access units in
// Annex B (4-byte start codes), as the recorder sends them. An access unit ends at the RTP
// marker bit or when the RTP timestamp changes. A gap in sequence numbers (or a fragment that
// cannot be completed) loses the access unit it hit, and every later one up to the next
// keyframe: what is handed out stays decodable, and the hole in timestamps is what the
// recorder's source-gap detector reports as source_loss.
// Thread: one owner. Errors: none thrown; malformed packets are counted and skipped.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace vigil::client::rtsp {

enum class VideoCodec { h264, h265 };

struct AccessUnit {
  std::vector<std::uint8_t> annexb;  // NAL units, each after 00 00 00 01
  std::int64_t timestamp = 0;        // RTP timestamp unwrapped to 64 bits (the stream's clock rate)
  bool keyframe = false;             // holds an IDR (H.264 type 5) or an IRAP picture (H.265 types 16..23)
};

class RtpDepacketizer {
 public:
  RtpDepacketizer(VideoCodec codec, int payload_type);
  // One RTP packet (header included). Access units completed by it are appended to OUT.
  void push(std::span<const std::uint8_t> rtp, std::vector<AccessUnit>& out);
  std::uint64_t malformed_packets() const { return malformed_; }
  std::uint64_t lost_packets() const { return lost_; }  // sequence numbers never seen
  std::uint64_t dropped_units() const { return dropped_units_; }  // access units not handed out

 private:
  // ... (implementation's state)
  std::uint64_t malformed_ = 0, lost_ = 0, dropped_units_ = 0;
};

}  // namespace vigil::client::rtsp
