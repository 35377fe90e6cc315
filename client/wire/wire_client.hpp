#pragma once
// A blocking wire-protocol client for the `vigil` CLI: one TCP connection to vigild,
// frames encoded and decoded by proto/frame_codec. "tls://HOST:PORT" connects over TLS and
// verifies the server's certificate and name against VIGIL_TLS_CA (a PEM file) or the system's
// trusted CAs. Errors: throws (CLI layer policy);
// a server Error frame becomes a ServerError carrying its code.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/frame_codec.hpp"
#include "proto/vigil.pb.h"

namespace vigil::client {

struct ServerError : std::runtime_error {
  ServerError(proto::ErrorCode c, const std::string& message, std::uint64_t related = 0, std::uint64_t request = 0)
      : std::runtime_error(message), code(c), related_sequence(related), request_id(request) {}
  proto::ErrorCode code;
  std::uint64_t related_sequence;  // the media packet an error refers to (RATE_EXCEEDED)
  std::uint64_t request_id;        // the QueryRequest it refuses
};

struct Received {
  proto::Envelope msg;
  std::vector<std::byte> payload;  // media packets only
};

class WireClient {
 public:
  // Connects to "HOST:PORT"; every later read or write fails after TIMEOUT without progress.
  WireClient(const std::string& host_port, std::chrono::milliseconds timeout);

  void send(const proto::Envelope& msg, std::span<const std::byte> payload = {});
  // Batching: queue() adds a frame to the outgoing batch, flush() writes everything queued in
  // one (gather) write. A burst of media packets then costs the server one wake-up, not one per
  // packet, and the video is not copied on the way: PAYLOAD is sent from where it is, so it must
  // stay as it is until flush() (a recorder's unacknowledged window keeps it longer anyway).
  void queue(const proto::Envelope& msg, std::span<const std::byte> payload = {});
  void flush();
  Received receive();  // throws ServerError for an Error frame
  // What has already arrived, without waiting: nullopt when nothing complete is there yet.
  std::optional<Received> try_receive();
  proto::HelloReply hello(const std::string& client_name, const std::string& token);
  // The socket, for a client that half-closes (shutdown of its sending side) to end a recording.
  int native_handle() { return socket_.native_handle(); }
  // Ends recording STREAM_ID: EndRecord (over plain TCP or TLS alike); then read until closed.
  void end_recording(std::uint64_t stream_id);
  bool tls() const noexcept { return tls_ != nullptr; }

 private:
  std::optional<Received> receive_frame(bool wait);
  bool readable_now();

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  proto::FrameDecoder decoder_;
  std::string out_;  // the queued frames' headers (length prefix and Envelope), back to back
  struct Queued {
    std::size_t header_end = 0;          // in out_: this frame's header ends here
    std::span<const std::byte> payload;  // the caller's, sent after it
  };
  std::vector<Queued> queued_;
};

}  // namespace vigil::client
