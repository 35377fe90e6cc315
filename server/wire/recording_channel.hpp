#pragma once
// One session's recording (docs/protocol.md, "Recording"), the counterpart of PlaybackChannel:
// opens it through the RecordingService (admitted or refused), hands each MediaPacket to it
// (policed: a refused packet is answered with an Error naming its sequence, so the recorder
// resends from there), and says which DurableAck is due — the newest durable sequence, once.
// This is where a recording is acknowledged: an ack leaves only for what the disk's IO thread
// reported durable. When the disk fails, the recording stops where it was durable: failure()
// names the first sequence that is not (Error IO_ERROR), and the session ends so the recorder
// resends from there in a new stream. Thread: the session's thread (the IO thread only stores the durable sequence
// and calls notify). Errors: protocol answers (Admit, Refuse, Error), never throws.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "proto/vigil.pb.h"
#include "server/recording/recording_service.hpp"

namespace vigil::server {

class RecordingChannel {
 public:
  RecordingChannel(RecordingService& service, std::function<void()> notify)
      : service_(service), notify_(std::move(notify)) {}
  RecordingChannel(const RecordingChannel&) = delete;
  RecordingChannel& operator=(const RecordingChannel&) = delete;

  bool active() const noexcept { return recording_ != nullptr; }
  // Admit, Refuse, or Error (one recording per session).
  boost::asio::awaitable<proto::Envelope> open(const proto::OpenRecord& request);
  // Nothing when PACKET was accepted or the recording has failed (failed(); the session's writer
  // sends failure()), else the Error to send back (with its sequence).
  std::optional<proto::Envelope> packet(const proto::MediaPacket& packet, std::span<const std::byte> payload);
  // A MediaLoss of this session's recording: a gap (RecordingService::media_loss). Nothing, or
  // the Error to send back (INVALID_ARGUMENT, related_sequence 0) when it is not a valid report.
  std::optional<proto::Envelope> media_loss(const proto::MediaLoss& loss);
  // Whether END ends this session's recording.
  bool ends(const proto::EndRecord& end) const noexcept;
  // The DurableAck due now: the newest durable sequence, if not acknowledged yet.
  std::optional<proto::Envelope> next_ack();
  // Whether the recording's disk failed (the session must end once failure() is sent).
  bool failed() const noexcept;
  // The Error that ends a failed recording, once: IO_ERROR, related_sequence = last durable + 1.
  // Call after next_ack(), so the last DurableAck goes before it.
  std::optional<proto::Envelope> failure();
  // Ends the recording, if any: its last packets get time to become durable (the session's
  // writer keeps sending acks meanwhile). ENDING: how the session ended.
  boost::asio::awaitable<void> close(RecordingService::Ending ending);

 private:
  RecordingService& service_;
  std::function<void()> notify_;
  std::shared_ptr<RecordingService::Recording> recording_;
  std::uint64_t acked_ = 0;  // the last sequence a DurableAck was queued for
  bool failure_sent_ = false;
};

}  // namespace vigil::server
