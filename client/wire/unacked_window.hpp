#pragma once
// A recorder's unacked window (`vigil record`, the benches' replay): every media packet read from
// the input and not yet acknowledged by vigild as durable, in order. A packet leaves only when a
// durable acknowledgement covers it, so nothing read is lost when vigild goes away: a new stream
// (after a reconnect) renumbers what is left from 1 and sends it all again. When vigild refuses a
// packet for exceeding the admitted rate it also drops what followed it, so sending resumes from
// the first refused packet. A new stream starts at a keyframe: the acknowledged packets of the GOP
// being sent (from its keyframe) are kept too, and resent first after a reconnect, so the new
// stream plays back on its own (a stream that began inside a GOP would have frames no player can
// decode, and playback serves a segment from its first keyframe). Those packets are then stored
// twice, once in each stream: at most a GOP (and at most kMaxGopHeadPackets) more.
// Pure bookkeeping: no sockets, no clock. Thread: the recorder's. Errors: none thrown; REQUIRES
// below are the caller's to keep.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "proto/vigil.pb.h"

namespace vigil::client {

struct PendingPacket {
  proto::Envelope env;  // a media_packet
  std::vector<std::byte> payload;
};

class UnackedWindow {
 public:
  // A packet read from the input: it gets the next sequence of the current stream.
  // REQUIRES: PACKET.env holds a media_packet.
  void push(PendingPacket packet);
  // vigild says every packet of this stream up to LAST_SEQUENCE is durable.
  void acknowledge(std::uint64_t last_sequence);
  // A new stream STREAM_ID (after a reconnect): what is left — from the current GOP's keyframe —
  // is numbered from 1 and unsent.
  void renumber(std::uint64_t stream_id);
  // vigild refused FIRST_REFUSED and dropped what came after: all of it is unsent again.
  void resend_from(std::uint64_t first_refused);

  // The packets not yet sent, in order; mark_sent() once they are written.
  std::vector<const PendingPacket*> unsent() const;
  void mark_sent() { sent_upto_ = next_sequence_ - 1; }

  bool empty() const { return packets_.empty(); }
  std::size_t size() const { return packets_.size(); }
  std::size_t gop_head_size() const { return gop_head_.size(); }  // acknowledged, kept for a new stream
  // The packet a new stream would start with (renumber()): the GOP head's keyframe, else the oldest
  // unacknowledged packet; null when there is neither. Its capture time is the new stream's start.
  const PendingPacket* next_stream_first() const {
    return !gop_head_.empty() ? &gop_head_.front() : packets_.empty() ? nullptr : &packets_.front();
  }
  // Of the unacknowledged packets: what the recorder's window cap bounds. The GOP head is apart (at
  // most a GOP more): counting it would let a long GOP fill the cap with packets no acknowledgement
  // ever frees, and the recorder would stop reading.
  std::size_t payload_bytes() const { return payload_bytes_; }
  std::size_t gop_head_bytes() const { return gop_head_bytes_; }
  const PendingPacket& front() const { return packets_.front(); }  // REQUIRES: !empty()
  bool all_sent() const { return sent_upto_ + 1 >= next_sequence_; }
  std::uint64_t last_sent() const { return sent_upto_; }
  std::uint64_t acked() const { return acked_; }                        // the last sequence acknowledged in this stream
  std::uint64_t acked_total() const { return acked_before_ + acked_; }  // over every stream
  std::uint64_t stream_id() const { return stream_id_; }

 private:
  static constexpr std::size_t kMaxGopHeadPackets = 1024;  // a GOP longer than this is not kept

  std::deque<PendingPacket> packets_;
  // Acknowledged packets of the GOP being sent, from its keyframe (empty when the GOP was longer
  // than kMaxGopHeadPackets, or before the first keyframe).
  std::deque<PendingPacket> gop_head_;
  std::size_t gop_head_bytes_ = 0;
  std::uint64_t stream_id_ = 0;
  std::uint64_t first_sequence_ = 1;  // of packets_.front()
  std::uint64_t next_sequence_ = 1;
  std::uint64_t sent_upto_ = 0;
  std::uint64_t acked_ = 0;
  std::uint64_t acked_before_ = 0;  // acknowledged in earlier streams
  std::size_t payload_bytes_ = 0;
};

}  // namespace vigil::client
