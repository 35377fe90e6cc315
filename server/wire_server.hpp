#pragma once
// The wire-protocol front end: accepts TCP connections and runs one session coroutine per
// connection (docs/protocol.md). Thread: network io_context only; sessions never touch a
// disk or the database directly. A framing error gets one Error frame, then the connection
// is closed; nothing a peer sends can crash the server.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>

#include "server/listener.hpp"

namespace vigil::server {

class RecordingService;
class PlaybackService;

struct WireOptions {
  std::size_t max_payload_bytes = 16u << 20;
  std::chrono::seconds hello_timeout{10};  // a connection must say hello this soon
  RecordingService* recording = nullptr;    // null: recordings are refused as unsupported
  PlaybackService* playback = nullptr;      // null: playbacks are refused as unsupported
};

class WireServer {
 public:
  WireServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, WireOptions options);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
  void start() { listener_.start(); }
  void stop() { listener_.stop(); }

 private:
  boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket socket);

  WireOptions options_;
  std::atomic<std::uint64_t> next_session_id_{1};
  Listener listener_;
};

}  // namespace vigil::server
