#include "server/wire/recording_channel.hpp"

#include "proto/frame_codec.hpp"

namespace asio = boost::asio;

namespace vigil::server {

asio::awaitable<proto::Envelope> RecordingChannel::open(const proto::OpenRecord& request) {
  if (recording_) co_return proto::make_error(errc::invalid_argument, "this session already records a stream");
  std::shared_ptr<RecordingService::Recording> opened;
  auto r = co_await service_.open(request, notify_, opened);
  proto::Envelope reply;
  if (auto* a = std::get_if<proto::Admit>(&r)) *reply.mutable_admit() = *a;
  else *reply.mutable_refuse() = std::get<proto::Refuse>(r);
  recording_ = std::move(opened);
  co_return reply;
}

std::optional<proto::Envelope> RecordingChannel::packet(const proto::MediaPacket& m,
                                                        std::span<const std::byte> payload) {
  Result<void> r = errc::invalid_argument;
  if (recording_ && m.stream_id() == recording_->stream_id) r = service_.packet(*recording_, m, payload);
  if (r) return std::nullopt;
  // Not this packet's fault: the recording has ended. The writer sends failure() after the last ack.
  if (r.error() == errc::io_error) return std::nullopt;
  // Policing and bad packets are told to the sender, packet by packet; nothing silent.
  const auto code = static_cast<errc>(r.error().value());
  auto err =
      proto::make_error(code, code == errc::rate_exceeded ? "packet refused: more than the admitted rate in this cycle"
                              : code == errc::frame_exceeds_buffer
                                  ? "packet refused: larger than the stream's cycle buffer "
                                    "(buffer_bytes); re-open at a higher declared rate"
                                  : "packet refused: no such stream, or sequence out of order");
  err.mutable_error()->set_related_sequence(m.sequence());
  return err;
}

std::optional<proto::Envelope> RecordingChannel::media_loss(const proto::MediaLoss& loss) {
  if (recording_ && loss.stream_id() == recording_->stream_id && service_.media_loss(*recording_, loss)) {
    return std::nullopt;
  }
  return proto::make_error(errc::invalid_argument,
                           "media-loss refused: no such stream, an unknown reason, or an empty or over-long span");
}

bool RecordingChannel::ends(const proto::EndRecord& end) const noexcept {
  return recording_ && end.stream_id() == recording_->stream_id;
}

std::optional<proto::Envelope> RecordingChannel::next_ack() {
  if (!recording_) return std::nullopt;
  const auto durable = recording_->durable.load(std::memory_order_acquire);
  if (durable <= acked_) return std::nullopt;
  proto::Envelope ack;
  ack.mutable_durable_ack()->set_stream_id(recording_->stream_id);
  ack.mutable_durable_ack()->set_last_sequence(durable);
  acked_ = durable;
  return ack;
}

bool RecordingChannel::failed() const noexcept {
  return recording_ && recording_->failed.load(std::memory_order_acquire);
}

std::optional<proto::Envelope> RecordingChannel::failure() {
  if (!failed() || failure_sent_) return std::nullopt;
  failure_sent_ = true;
  const auto durable = recording_->durable.load(std::memory_order_acquire);
  auto err =
      proto::make_error(errc::io_error, "the disk failed to store the recording: packets up to " +
                                            std::to_string(durable) + " are durable; resend the rest in a new stream");
  err.mutable_error()->set_related_sequence(durable + 1);
  return err;
}

asio::awaitable<void> RecordingChannel::close(RecordingService::Ending ending) {
  if (recording_) co_await service_.close(recording_, ending);
}

}  // namespace vigil::server
