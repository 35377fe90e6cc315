#pragma once
// A TCP listener shared by every front end (wire protocol, HTTP): accepts until stopped and
// runs one session coroutine per connection, so all front ends have the same shape.
// Thread: accepts on the main io_context; sessions run on a NetworkThreads context when one
// is given (each on one thread), else on a strand of the main io_context.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

namespace vigil::server {

class NetworkThreads;

class Listener {
 public:
  using SessionFn = std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket)>;

  // Binds ENDPOINT now (throws if the address is in use); NAME is used in log lines.
  Listener(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, std::string name,
           SessionFn session, NetworkThreads* sessions = nullptr);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  void start();  // begins accepting
  void stop();   // closes the acceptor; open sessions end on their own

 private:
  boost::asio::awaitable<void> accept_loop();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string name_;
  SessionFn session_;
  NetworkThreads* sessions_;
};

}  // namespace vigil::server
