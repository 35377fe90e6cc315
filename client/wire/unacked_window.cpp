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
    payload_bytes_ -= packets_.front().payload.size();
    packets_.pop_front();
    ++first_sequence_;
  }
}

void UnackedWindow::renumber(std::uint64_t stream_id) {
  acked_before_ += acked_;
  acked_ = 0;
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
