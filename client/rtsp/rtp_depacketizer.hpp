#pragma once
// RTP payloads of one video stream (RFC 6184 H.264, RFC 7798 H.265) back into access units in
// Annex B (4-byte start codes), as the recorder sends them. An access unit ends at the RTP
// marker bit or when the RTP timestamp changes. A gap in sequence numbers (or a fragment that
// cannot be completed) loses the access unit it hit, and every later one up to the next
// keyframe: what is handed out stays decodable. The next unit handed out says how many were
// dropped before it (units_lost_before), and the recorder reports exactly that hole, from the
// last unit handed out to it, as a source_loss gap.
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
  // Access units dropped since the one handed out before this (a loss): the media between the two
  // was sent and is not here. Units whose packets were all lost are not counted (never seen).
  std::uint64_t units_lost_before = 0;
};

// Larger access units are dropped (counted in dropped_units): no camera sends one, and a hostile
// peer must not make us buffer without end.
inline constexpr std::size_t kMaxAccessUnitBytes = std::size_t{16} << 20;

// Rules beyond the RFCs' (docs/protocol.md, "Pulled cameras"):
// - Packets of another payload type are ignored (not counted). Duplicates and packets up to
//   kMaxMisorder sequence numbers old are ignored. A jump further back is a restart of the
//   sender once the next packet follows it (a lone stray packet is ignored); that, or a new
//   SSRC, is a discontinuity like a gap, with no packets counted as lost.
// - An access unit without a picture (only parameter sets or SEI, which some cameras end with
//   the marker bit) is not handed out alone: it is kept at the front of the next one.
// - Malformed packets whose header cannot be read are counted and skipped (if one was ours, the
//   next packet shows the gap); a malformed or unsupported payload (STAP-B, MTAP, FU-B, PACI,
//   bad aggregation lengths) breaks the access unit it belongs to, like a gap.
// - The first access units are handed out whatever they are; waiting for a keyframe starts at
//   the first loss.
class RtpDepacketizer {
 public:
  static constexpr int kMaxMisorder = 100;

  RtpDepacketizer(VideoCodec codec, int payload_type);
  // One RTP packet (header included). Access units completed by it are appended to OUT.
  void push(std::span<const std::uint8_t> rtp, std::vector<AccessUnit>& out);
  std::uint64_t malformed_packets() const { return malformed_; }
  std::uint64_t lost_packets() const { return lost_; }            // sequence numbers never seen
  std::uint64_t dropped_units() const { return dropped_units_; }  // access units not handed out

 private:
  void handle_payload(std::span<const std::uint8_t> payload);
  void handle_h264(std::span<const std::uint8_t> payload);
  void handle_h265(std::span<const std::uint8_t> payload);
  // Appends 00 00 00 01 and NAL (its header rebuilt from HEADER where given, for fragments).
  void append_aggregation(std::span<const std::uint8_t> body, std::size_t min_nal_bytes);
  void append_fragment(std::span<const std::uint8_t> header, std::span<const std::uint8_t> bytes,
                       std::uint8_t fu_header);
  void append_nal(std::span<const std::uint8_t> header, std::span<const std::uint8_t> body);
  void append_bytes(std::span<const std::uint8_t> bytes);
  void note_nal_type(int type);
  // The access unit in progress is complete: handed out, kept as a prefix, or dropped.
  void finish_unit(std::vector<AccessUnit>& out);

  VideoCodec codec_;
  int payload_type_;
  // Sequence numbers and timestamps of the last packet taken.
  bool started_ = false;
  std::uint16_t last_sequence_ = 0;
  bool restart_pending_ = false;  // a packet far behind was seen: restart if this one follows it
  std::uint16_t restart_sequence_ = 0;
  std::uint32_t last_ssrc_ = 0;
  std::uint32_t last_timestamp32_ = 0;
  std::int64_t last_timestamp_ = 0;
  // The access unit in progress.
  bool unit_open_ = false;      // a packet of it was taken
  bool unit_broken_ = false;    // lost or unreadable data: it is dropped when it ends
  bool unit_keyframe_ = false;  // holds an IDR / IRAP NAL
  bool unit_picture_ = false;   // holds a VCL NAL (else it is only a prefix of the next)
  bool fragment_open_ = false;  // inside a FU-A / FU whose end has not come
  std::int64_t unit_timestamp_ = 0;
  std::vector<std::uint8_t> unit_;
  bool wait_keyframe_ = false;  // a loss: access units are dropped up to the next keyframe
  std::uint64_t malformed_ = 0, lost_ = 0, dropped_units_ = 0;
  std::uint64_t dropped_since_out_ = 0;  // dropped since the last unit handed out
};

}  // namespace vigil::client::rtsp
