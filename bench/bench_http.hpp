#pragma once
// The benches' HTTP client: one keep-alive HTTP/1.1 connection to a vigild (the way a UI or a
// player asks repeatedly), timing each exchange to its first body byte and to its end. Every
// request a bench sends goes through BenchHttp::get, which adds the headers vigild expects —
// `Authorization: Bearer TOKEN` when the bench's data directory holds admin.token.
// Thread: one per BenchHttp. Errors: exceptions (transport errors; the status is returned).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <filesystem>
#include <string>

namespace vigil::bench {

struct HttpTiming {
  int status = 0;
  std::string body;
  double ttfb_ms = 0;   // request written → first body byte received (the whole exchange if no body)
  double total_ms = 0;  // request written → last body byte received
};

class BenchHttp {
 public:
  // HOST_PORT: vigild's HTTP address. DATA: its data directory (admin.token is read from it now,
  // if vigild wrote one); empty: no token.
  explicit BenchHttp(const std::string& host_port, const std::filesystem::path& data = {});

  // GET TARGET on the kept-alive connection (reconnecting once if vigild closed it).
  HttpTiming get(const std::string& target);
  // METHOD ("POST", "DELETE", ...) TARGET with JSON_BODY (none if empty), the same way.
  HttpTiming send(const std::string& method, const std::string& target, const std::string& json_body = {});

 private:
  HttpTiming exchange(const std::string& target, const std::string& method = "GET", const std::string& json_body = {});
  void connect();

  std::string host_, port_, token_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace vigil::bench
