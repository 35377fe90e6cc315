#pragma once
// The proxy's wire-protocol connection to one vigild (docs/protocol.md) over an Asio coroutine:
// connect (TLS for a tls:// node, its certificate verified), Hello with a token, then frames in both directions (OpenPlayback, Control out;
// PlaybackStarted, Refuse, MediaPacket, PlaybackEnd, Error in). One read and one write may be
// outstanding at once (a Control is sent while the playback's frames are being read).
// Thread: the proxy's io_context thread. Errors: none thrown; failures come back as the
// ProxyReply a viewer should get (502 unreachable or lost, 504 too slow, 401/403 token refused).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "client/proxy/proxy_reply.hpp"
#include "client/proxy/proxy_upstream.hpp"
#include "proto/frame_codec.hpp"

namespace vigil::client {

class WireConnection : public std::enable_shared_from_this<WireConnection> {
 public:
  // Made with std::make_shared (writes keep it alive).
  explicit WireConnection(const boost::asio::any_io_executor& ex) : socket_(ex) {}

  // Connects to NODE and says Hello with TOKEN, all within TIMEOUT. nullopt: ready for requests.
  boost::asio::awaitable<std::optional<ProxyReply>> open(const UpstreamNode& node, const std::string& token,
                                                         std::chrono::milliseconds timeout);
  // Queues MSG and writes the queue unless a write is already running (which then writes it).
  void send(const proto::Envelope& msg);
  // The next frame; its payload stays valid until the next call. nullopt: the connection is gone
  // (closed, reset, or a frame that does not decode); failure() says why, as a 502.
  boost::asio::awaitable<std::optional<proto::Frame>> receive();
  void close();
  const ProxyReply& failure() const { return failure_; }

 private:
  // SELF keeps the connection alive until the write is done.
  static boost::asio::awaitable<void> write_queue(std::shared_ptr<WireConnection> self);

  boost::asio::ip::tcp::socket socket_;
  // A tls:// node: every read and write goes through this (one of each may be outstanding).
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  proto::FrameDecoder decoder_;
  std::string node_name_;
  std::deque<std::string> out_;  // frames waiting to be written
  bool writing_ = false;
  ProxyReply failure_;
};

// The viewer's answer to a wire Error frame (401 unauthenticated, 403 permission, 503 unavailable,
// 404 not found, 400 invalid, else 502).
ProxyReply reply_for_error(const proto::Error& e);

}  // namespace vigil::client
