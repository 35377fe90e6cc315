#include "client/wire/unacked_window.hpp"

#include <algorithm>

namespace vigil::client {

void UnackedWindow::push(PendingPacket packet) {
  auto* m = packet.env.mutable_media_packet();
  m->set_stream_id(stream_id_);
  m->set_sequence(next_sequence_++);
  payload_bytes_ += packet.payload.size();
  packets_.push_back(std::move(packet));
}

void UnackedWindow::acknowledge(std::uint64_t last_sequence) {
  acked_ = std::max(acked_, last_sequence);
  while (!packets_.empty() && first_sequence_ <= acked_) {
    PendingPacket& p = packets_.front();
    payload_bytes_ -= p.payload.size();
    if (p.env.media_packet().keyframe()) {
      gop_head_.clear();
      gop_head_bytes_ = 0;
    }
    if ((p.env.media_packet().keyframe() || !gop_head_.empty()) && gop_head_.size() < kMaxGopHeadPackets) {
      gop_head_bytes_ += p.payload.size();
      gop_head_.push_back(std::move(p));
    } else {
      gop_head_.clear();  // no keyframe yet, or a GOP too long to keep: the new stream starts where it can
      gop_head_bytes_ = 0;
    }
    packets_.pop_front();
    ++first_sequence_;
  }
}

void UnackedWindow::renumber(std::uint64_t stream_id) {
  // The GOP's acknowledged head goes first again: counted once, when the new stream acknowledges it.
  acked_before_ += acked_ - gop_head_.size();
  acked_ = 0;
  payload_bytes_ += gop_head_bytes_;
  gop_head_bytes_ = 0;
  while (!gop_head_.empty()) {
    packets_.push_front(std::move(gop_head_.back()));
    gop_head_.pop_back();
  }
  stream_id_ = stream_id;
  first_sequence_ = 1;
  next_sequence_ = 1;
  for (auto& p : packets_) {
    p.env.mutable_media_packet()->set_stream_id(stream_id);
    p.env.mutable_media_packet()->set_sequence(next_sequence_++);
  }
  sent_upto_ = 0;
}

void UnackedWindow::resend_from(std::uint64_t first_refused) {
  // What was acknowledged meanwhile is gone: resending starts at the oldest packet still held.
  sent_upto_ = std::min(sent_upto_, std::max(first_refused, first_sequence_) - 1);
}

std::vector<const PendingPacket*> UnackedWindow::unsent() const {
  std::vector<const PendingPacket*> out;
  for (std::uint64_t seq = std::max(sent_upto_ + 1, first_sequence_); seq < next_sequence_; ++seq) {
    out.push_back(&packets_[seq - first_sequence_]);
  }
  return out;
}

}  // namespace vigil::client
