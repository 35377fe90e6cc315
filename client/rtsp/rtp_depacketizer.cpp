#include "client/rtsp/rtp_depacketizer.hpp"

#include <array>
#include <utility>

namespace vigil::client::rtsp {
namespace {

constexpr std::array<std::uint8_t, 4> kStartCode{0, 0, 0, 1};
constexpr std::size_t kRtpHeaderBytes = 12;
// A dropped unit's buffer above this is given back rather than kept for the next one.
constexpr std::size_t kKeptCapacityBytes = std::size_t{1} << 20;

std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// The NAL units of an aggregation packet's body (STAP-A, AP): 16-bit size, then the unit. True
// if the whole body is such units, each at least MIN_NAL_BYTES long, with nothing left over.
bool aggregation_valid(std::span<const std::uint8_t> body, std::size_t min_nal_bytes) {
  if (body.empty()) return false;
  while (!body.empty()) {
    if (body.size() < 2) return false;
    const std::size_t nal_bytes = be16(body.data());
    body = body.subspan(2);
    if (nal_bytes < min_nal_bytes || nal_bytes > body.size()) return false;
    body = body.subspan(nal_bytes);
  }
  return true;
}

}  // namespace

RtpDepacketizer::RtpDepacketizer(VideoCodec codec, int payload_type) : codec_(codec), payload_type_(payload_type) {}

void RtpDepacketizer::push(std::span<const std::uint8_t> rtp, std::vector<AccessUnit>& out) {
  // The fixed header and what follows it (RFC 3550 §5.1, §5.3.1).
  if (rtp.size() < kRtpHeaderBytes || (rtp[0] >> 6) != 2) {
    ++malformed_;
    return;
  }
  const bool padding = (rtp[0] & 0x20) != 0;
  const bool extension = (rtp[0] & 0x10) != 0;
  const std::size_t csrc_count = rtp[0] & 0x0f;
  const bool marker = (rtp[1] & 0x80) != 0;
  const int payload_type = rtp[1] & 0x7f;
  const std::uint16_t sequence = be16(&rtp[2]);
  const std::uint32_t timestamp32 = be32(&rtp[4]);
  const std::uint32_t ssrc = be32(&rtp[8]);
  std::size_t begin = kRtpHeaderBytes + 4 * csrc_count;
  std::size_t end = rtp.size();
  if (begin > end) {
    ++malformed_;
    return;
  }
  if (extension) {
    if (end - begin < 4) {
      ++malformed_;
      return;
    }
    const std::size_t extension_bytes = std::size_t{be16(&rtp[begin + 2])} * 4;
    begin += 4;
    if (end - begin < extension_bytes) {
      ++malformed_;
      return;
    }
    begin += extension_bytes;
  }
  if (padding) {
    const std::size_t padding_bytes = rtp[end - 1];
    if (padding_bytes == 0 || padding_bytes > end - begin) {
      ++malformed_;
      return;
    }
    end -= padding_bytes;
  }
  if (payload_type != payload_type_) return;

  // Sequence: a gap, a restart, or a packet already seen (or given up on).
  bool discontinuity = false;
  std::int64_t timestamp = timestamp32;
  if (started_) {
    const auto ahead = static_cast<std::int16_t>(static_cast<std::uint16_t>(sequence - last_sequence_));
    if (ssrc != last_ssrc_) {
      discontinuity = true;
    } else if (ahead <= 0 && ahead >= -kMaxMisorder) {
      return;  // a duplicate, or late: its access unit was already handed out or dropped
    } else if (ahead > 1) {
      lost_ += static_cast<std::uint64_t>(ahead - 1);
      discontinuity = true;
    } else if (ahead < 0) {
      // Far behind: the sender restarted its sequence, or a stray packet. Taken as a restart
      // when the next packet follows it (RFC 3550 §A.1's probation), else ignored as late.
      if (!restart_pending_ || sequence != restart_sequence_) {
        restart_pending_ = true;
        restart_sequence_ = static_cast<std::uint16_t>(sequence + 1);
        return;
      }
      discontinuity = true;
    }
    restart_pending_ = false;
    // Unwrapped relative to the last packet: the nearer of the two ways around the 32-bit circle.
    timestamp = last_timestamp_ + static_cast<std::int32_t>(timestamp32 - last_timestamp32_);
  }
  started_ = true;
  last_sequence_ = sequence;
  last_ssrc_ = ssrc;
  last_timestamp32_ = timestamp32;
  last_timestamp_ = timestamp;

  // Packets were lost: the unit in progress misses some, and so may the one this packet is in
  // (its first packets may have been among them).
  if (discontinuity && unit_open_) unit_broken_ = true;
  if (unit_open_ && timestamp != unit_timestamp_) {
    if (unit_picture_ || unit_broken_ || fragment_open_) {
      finish_unit(out);
    } else {
      unit_timestamp_ = timestamp;  // parameter sets / SEI only: they go with the next picture
    }
  }
  if (!unit_open_) {
    unit_open_ = true;
    unit_timestamp_ = timestamp;
  }
  if (discontinuity) unit_broken_ = true;
  handle_payload(rtp.subspan(begin, end - begin));
  if (marker) finish_unit(out);
}

void RtpDepacketizer::handle_payload(std::span<const std::uint8_t> payload) {
  if (payload.empty()) {
    ++malformed_;  // nothing in it, so nothing lost
    return;
  }
  if (codec_ == VideoCodec::h264) {
    handle_h264(payload);
  } else {
    handle_h265(payload);
  }
}

// RFC 6184 §5.6–5.8, non-interleaved mode: single NAL units, STAP-A, FU-A.
void RtpDepacketizer::handle_h264(std::span<const std::uint8_t> payload) {
  const int type = payload[0] & 0x1f;
  if (type >= 1 && type <= 23) {
    if (fragment_open_) unit_broken_ = true;  // the fragmented unit never ended
    fragment_open_ = false;
    append_nal({}, payload);
  } else if (type == 24) {
    append_aggregation(payload.subspan(1), 1);
  } else if (type == 28) {
    if (payload.size() < 2) {
      ++malformed_;
      unit_broken_ = true;
      return;
    }
    const std::uint8_t fu_header = payload[1];
    // The NAL header: F and NRI from the FU indicator, the type from the FU header.
    const std::array<std::uint8_t, 1> header{static_cast<std::uint8_t>((payload[0] & 0xe0) | (fu_header & 0x1f))};
    append_fragment(header, payload.subspan(2), fu_header);
  } else if (type == 25 || type == 26 || type == 27 || type == 29) {
    ++malformed_;  // STAP-B, MTAP16, MTAP24, FU-B: interleaved mode, which we never ask for
    unit_broken_ = true;
  } else {
    ++malformed_;  // 0, 30, 31: undefined, no NAL unit of ours in it
  }
}

// RFC 7798 §4.4: single NAL units, aggregation packets (48) and fragmentation units (49),
// without DONL fields (sprop-max-don-diff 0).
void RtpDepacketizer::handle_h265(std::span<const std::uint8_t> payload) {
  if (payload.size() < 2) {
    ++malformed_;
    unit_broken_ = true;
    return;
  }
  const int type = (payload[0] >> 1) & 0x3f;
  if (type <= 47) {
    if (fragment_open_) unit_broken_ = true;
    fragment_open_ = false;
    append_nal({}, payload);
  } else if (type == 48) {
    append_aggregation(payload.subspan(2), 2);
  } else if (type == 49) {
    if (payload.size() < 3) {
      ++malformed_;
      unit_broken_ = true;
      return;
    }
    const std::uint8_t fu_header = payload[2];
    // The payload header with its type replaced by the FU header's (F and layer id kept), then
    // the second byte (layer id, temporal id) as it is.
    const std::array<std::uint8_t, 2> header{static_cast<std::uint8_t>((payload[0] & 0x81) | ((fu_header & 0x3f) << 1)),
                                             payload[1]};
    append_fragment(header, payload.subspan(3), fu_header);
  } else if (type == 50) {
    ++malformed_;  // PACI: not supported; its NAL unit is lost
    unit_broken_ = true;
  } else {
    ++malformed_;  // 51..63: undefined
  }
}

// An aggregation packet's body (after its payload header): 16-bit size, NAL unit, ...; each NAL
// unit at least MIN_NAL_BYTES (its header).
void RtpDepacketizer::append_aggregation(std::span<const std::uint8_t> body, std::size_t min_nal_bytes) {
  if (fragment_open_) unit_broken_ = true;  // the fragmented unit never ended
  fragment_open_ = false;
  if (!aggregation_valid(body, min_nal_bytes)) {
    ++malformed_;
    unit_broken_ = true;
    return;
  }
  while (!body.empty()) {
    const std::size_t nal_bytes = be16(body.data());
    append_nal({}, body.subspan(2, nal_bytes));
    body = body.subspan(2 + nal_bytes);
  }
}

// A fragmentation unit (H.264 FU-A, H.265 FU): HEADER is the NAL header it rebuilds, BYTES what
// follows the FU header, whose start (0x80) and end (0x40) bits are the same in both codecs.
void RtpDepacketizer::append_fragment(std::span<const std::uint8_t> header, std::span<const std::uint8_t> bytes,
                                      std::uint8_t fu_header) {
  if ((fu_header & 0x80) != 0) {
    if (fragment_open_) unit_broken_ = true;  // the previous one never ended
    append_nal(header, bytes);
    fragment_open_ = true;
  } else if (!fragment_open_) {
    unit_broken_ = true;  // a middle or end without its start
    return;
  } else {
    append_bytes(bytes);
  }
  if ((fu_header & 0x40) != 0) fragment_open_ = false;
}

void RtpDepacketizer::append_nal(std::span<const std::uint8_t> header, std::span<const std::uint8_t> body) {
  const auto first = header.empty() ? (body.empty() ? std::uint8_t{0} : body[0]) : header[0];
  note_nal_type(codec_ == VideoCodec::h264 ? (first & 0x1f) : ((first >> 1) & 0x3f));
  append_bytes(kStartCode);
  append_bytes(header);
  append_bytes(body);
}

void RtpDepacketizer::append_bytes(std::span<const std::uint8_t> bytes) {
  if (unit_broken_) {
    // Dropped when it ends: nothing more is kept (and what was kept is given back at once).
    if (!unit_.empty()) std::vector<std::uint8_t>().swap(unit_);
    return;
  }
  if (bytes.size() > kMaxAccessUnitBytes - unit_.size()) {
    unit_broken_ = true;
    std::vector<std::uint8_t>().swap(unit_);
    return;
  }
  unit_.insert(unit_.end(), bytes.begin(), bytes.end());
}

void RtpDepacketizer::note_nal_type(int type) {
  if (codec_ == VideoCodec::h264) {
    if (type >= 1 && type <= 5) unit_picture_ = true;
    if (type == 5) unit_keyframe_ = true;
  } else {
    if (type <= 31) unit_picture_ = true;
    if (type >= 16 && type <= 23) unit_keyframe_ = true;
  }
}

void RtpDepacketizer::finish_unit(std::vector<AccessUnit>& out) {
  if (!unit_open_) return;
  if (fragment_open_) unit_broken_ = true;  // ended inside a fragmented NAL unit
  if (!unit_broken_ && !unit_picture_) {
    // Parameter sets or SEI alone: kept for the next picture (or forgotten if empty).
    if (unit_.empty()) unit_open_ = false;
    return;
  }
  if (unit_broken_ || (wait_keyframe_ && !unit_keyframe_)) {
    ++dropped_units_;
    ++dropped_since_out_;
    wait_keyframe_ = true;
    if (unit_.capacity() > kKeptCapacityBytes) {
      std::vector<std::uint8_t>().swap(unit_);
    } else {
      unit_.clear();
    }
  } else {
    if (unit_keyframe_) wait_keyframe_ = false;
    out.push_back(AccessUnit{.annexb = std::move(unit_),
                             .timestamp = unit_timestamp_,
                             .keyframe = unit_keyframe_,
                             .units_lost_before = dropped_since_out_});
    unit_ = {};
    dropped_since_out_ = 0;
  }
  unit_open_ = unit_broken_ = unit_keyframe_ = unit_picture_ = fragment_open_ = false;
}

}  // namespace vigil::client::rtsp
