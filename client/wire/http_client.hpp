#pragma once
// A blocking HTTP/1.1 client of vigild's HTTP API for the `vigil` commands that administer it
// (camera, token): one kept-alive connection, JSON in and out, the bearer token on every request.
// "https://HOST:PORT" speaks HTTPS, verifying vigild's certificate and name (client/wire/tls_client).
// Thread: one per HttpClient. Errors: throws VigildUnreachable when no connection can be made
// (vigild down, wrong address), std::runtime_error for a connection lost mid-exchange; an HTTP
// error status is returned, not thrown.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <memory>
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
  // ADDRESS: vigild's HTTP address ("127.0.0.1:8080", "[::1]:8080", "http://HOST:PORT", or
  // "https://HOST:PORT" for a vigild started with --http-tls-cert). TOKEN: sent as
  // "Authorization: Bearer TOKEN" unless empty. Every exchange fails after TIMEOUT. CA_FILE: the
  // PEM certificate(s) trusted for https:// (empty: VIGIL_TLS_CA, else the system's).
  HttpClient(const std::string& address, std::string token, std::chrono::milliseconds timeout,
             const std::string& ca_file = {});

  // METHOD TARGET with JSON_BODY (none when empty), on the kept-alive connection (reconnecting
  // once if vigild closed it while idle).
  HttpAnswer request(boost::beast::http::verb method, const std::string& target, const std::string& json_body = {});

 private:
  void connect();
  HttpAnswer exchange(boost::beast::http::verb method, const std::string& target, const std::string& json_body);
  template <class Stream>
  HttpAnswer exchange_on(Stream& stream, boost::beast::http::verb method, const std::string& target,
                         const std::string& json_body);

  std::string host_, port_, token_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_;
  std::shared_ptr<boost::asio::ssl::context> tls_context_;                    // null: plain HTTP
  std::unique_ptr<boost::asio::ssl::stream<boost::beast::tcp_stream&>> tls_;  // one per connection
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace vigil::client
