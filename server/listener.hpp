#pragma once
// A TCP listener shared by every front end (wire protocol, HTTP): accepts until stopped and
// runs one session coroutine per connection, so all front ends have the same shape.
// Thread: network io_context only.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

namespace vigil::server {

class Listener {
 public:
  using SessionFn = std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket)>;

  // Binds ENDPOINT now (throws if the address is in use); NAME is used in log lines.
  Listener(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, std::string name,
           SessionFn session);
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  void start();  // begins accepting
  void stop();   // closes the acceptor; open sessions end on their own

 private:
  boost::asio::awaitable<void> accept_loop();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string name_;
  SessionFn session_;
};

}  // namespace vigil::server
