#pragma once
// A TCP listener shared by every front end (wire protocol, HTTP): accepts until stopped and
// runs one session coroutine per connection, so all front ends have the same shape.
// Limits: at most ConnectionLimits' open connections in all and from one client address; a
// connection over either is told why (the front end's refusal: an HTTP 503, a wire Error),
// then closed, and never reaches a session. Every socket is close-on-exec (Asio's accept does
// not set it): a child vigild starts never holds a client's connection.
// Thread: accepts on the main io_context; sessions run on a NetworkThreads context when one
// is given (each on one thread), else on a strand of the main io_context. The counts are
// shared with the sessions' threads (under a mutex).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace vigil::server {

class NetworkThreads;

struct ConnectionLimits {
  std::size_t max_connections = 4096;  // open at once on this listener
  std::size_t max_per_address = 256;   // open at once from one client address
};

class Listener {
 public:
  using SessionFn = std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket)>;
  // The bytes a refused connection is sent before it is closed (WHY says which limit); empty:
  // none (a TLS listener cannot say anything before its handshake).
  using RefusalFn = std::function<std::string(const std::string& why)>;

  // Binds ENDPOINT now (throws if the address is in use); NAME is used in log lines.
  Listener(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, std::string name,
           SessionFn session, NetworkThreads* sessions = nullptr, ConnectionLimits limits = {}, RefusalFn refusal = {});
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  void start();  // begins accepting
  void stop();   // closes the acceptor; open sessions end on their own

  struct Counts;  // open connections, in all and per address

 private:
  boost::asio::awaitable<void> accept_loop();
  // Says why (if the front end has words for it) and closes; bounded in time and in number.
  void refuse(boost::asio::ip::tcp::socket socket, boost::asio::io_context& ctx, const std::string& why);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string name_;
  SessionFn session_;
  NetworkThreads* sessions_;
  ConnectionLimits limits_;
  RefusalFn refusal_;
  std::shared_ptr<Counts> counts_;  // shared with the sessions, which may end after the listener stops
  std::chrono::steady_clock::time_point last_refusal_log_{};
  std::size_t refused_unlogged_ = 0;
};

}  // namespace vigil::server
