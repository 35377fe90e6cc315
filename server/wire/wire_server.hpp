#pragma once
// The wire-protocol front end: accepts TCP connections (optionally TLS: --tls-cert/--tls-key) and
// runs one WireSession per connection (wire_session.hpp; docs/protocol.md). Thread: network io_context only; sessions never touch a
// disk or the database directly. A framing error gets one Error frame, then the connection
// is closed; nothing a peer sends can crash the server.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "server/net/listener.hpp"

namespace vigil::server {

class Authenticator;

class RecordingService;
class PlaybackService;
class CatalogPool;
class DiskSet;

struct WireOptions {
  std::size_t max_payload_bytes = 16u << 20;
  // A connection must have said hello (and finished its TLS handshake) this long after it was
  // accepted: an absolute deadline, so a peer trickling bytes cannot hold a connection.
  std::chrono::seconds hello_timeout{10};
  // A session that neither records nor plays back and sends nothing for this long is closed: an
  // abandoned or hostile client must not hold a connection (and its memory) for ever. Zero: never.
  std::chrono::seconds idle_timeout{60};
  // A recording that receives nothing for this long ends as stalled (its share released, a
  // source_stalled gap); zero: never.
  std::chrono::milliseconds stall_timeout{5000};
  RecordingService* recording = nullptr;           // null: recordings are refused as unsupported
  PlaybackService* playback = nullptr;             // null: playbacks are refused as unsupported
  CatalogPool* catalog = nullptr;                  // null: queries are refused as unsupported
  DiskSet* disks = nullptr;                        // the timeline's fresher segments; null: the catalog's alone
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain TCP; else every connection is TLS
  NetworkThreads* sessions = nullptr;              // the threads sessions run on; null: the listener's io_context
  Authenticator* auth = nullptr;                   // null: no tokens checked (unit rigs); else hello's token decides
  ConnectionLimits connections;                    // over them: an Error frame (plain TCP) and closed
};

class WireServer {
 public:
  WireServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, WireOptions options);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
  void start() { listener_.start(); }
  void stop() { listener_.stop(); }

 private:
  // Accepts one connection (and its TLS handshake), then runs its WireSession.
  boost::asio::awaitable<void> session(boost::asio::ip::tcp::socket socket);

  WireOptions options_;
  std::atomic<std::uint64_t> next_session_id_{1};
  Listener listener_;
};

}  // namespace vigil::server
