#pragma once
// A blocking HTTP/1.1 client of vigild's HTTP API for the `vigil` commands that administer it
// (camera, token): one kept-alive connection, JSON in and out, the bearer token on every request.
// Thread: one per HttpClient. Errors: throws VigildUnreachable when no connection can be made
// (vigild down, wrong address), std::runtime_error for a connection lost mid-exchange; an HTTP
// error status is returned, not thrown.
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <stdexcept>
#include <string>

namespace vigil::client {

struct VigildUnreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HttpAnswer {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  // HOST_PORT: vigild's HTTP address ("127.0.0.1:8080", "[::1]:8080"). TOKEN: sent as
  // "Authorization: Bearer TOKEN" unless empty. Every exchange fails after TIMEOUT.
  HttpClient(const std::string& host_port, std::string token, std::chrono::milliseconds timeout);

  // METHOD TARGET with JSON_BODY (none when empty), on the kept-alive connection (reconnecting
  // once if vigild closed it while idle).
  HttpAnswer request(boost::beast::http::verb method, const std::string& target, const std::string& json_body = {});

 private:
  void connect();
  HttpAnswer exchange(boost::beast::http::verb method, const std::string& target, const std::string& json_body);

  std::string host_, port_, token_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace vigil::client
