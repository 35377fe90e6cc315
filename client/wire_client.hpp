#pragma once
// A blocking wire-protocol client for the `vigil` CLI: one TCP connection to vigild,
// frames encoded and decoded by proto/frame_codec. Errors: throws (CLI layer policy);
// a server Error frame becomes a ServerError carrying its code.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/frame_codec.hpp"
#include "proto/vigil.pb.h"

namespace vigil::client {

struct ServerError : std::runtime_error {
  ServerError(proto::ErrorCode c, const std::string& message, std::uint64_t related = 0)
      : std::runtime_error(message), code(c), related_sequence(related) {}
  proto::ErrorCode code;
  std::uint64_t related_sequence;  // the media packet an error refers to (RATE_EXCEEDED)
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
  Received receive();  // throws ServerError for an Error frame
  proto::HelloReply hello(const std::string& client_name, const std::string& token);
  // The socket, for a client that half-closes (shutdown of its sending side) to end a recording.
  int native_handle() { return socket_.native_handle(); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  proto::FrameDecoder decoder_;
  std::string out_;
};

}  // namespace vigil::client
