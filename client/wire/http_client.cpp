#include "client/wire/http_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace vigil::client {

HttpClient::HttpClient(const std::string& host_port, std::string token, std::chrono::milliseconds timeout)
    : token_(std::move(token)), timeout_(timeout), stream_(io_) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 == host_port.size()) {
    throw std::invalid_argument("vigild's HTTP address must be HOST:PORT, not '" + host_port + "'");
  }
  host_ = host_port.substr(0, colon);
  if (host_.size() > 2 && host_.front() == '[' && host_.back() == ']') host_ = host_.substr(1, host_.size() - 2);
  port_ = host_port.substr(colon + 1);
  connect();
}

void HttpClient::connect() {
  boost::beast::error_code ignored;
  stream_.socket().close(ignored);
  buffer_.clear();
  connected_ = false;
  try {
    asio::ip::tcp::resolver resolver(io_);
    stream_.expires_after(timeout_);
    stream_.connect(resolver.resolve(host_, port_));
  } catch (const boost::system::system_error& e) {
    throw VigildUnreachable("cannot connect to vigild's HTTP API at " + host_ + ":" + port_ + ": " +
                            e.code().message());
  }
  connected_ = true;
}

HttpAnswer HttpClient::request(http::verb method, const std::string& target, const std::string& json_body) {
  if (!connected_) connect();
  try {
    return exchange(method, target, json_body);
  } catch (const boost::system::system_error&) {
    connect();  // vigild closed the idle connection: once more on a new one
  }
  try {
    return exchange(method, target, json_body);
  } catch (const boost::system::system_error& e) {
    connected_ = false;
    throw std::runtime_error("vigild's HTTP API did not answer " + target + ": " + e.code().message());
  }
}

HttpAnswer HttpClient::exchange(http::verb method, const std::string& target, const std::string& json_body) {
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, host_);
  req.set(http::field::user_agent, "vigil-cli");
  req.set(http::field::accept, "application/json");
  if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
  if (!json_body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = json_body;
  }
  req.prepare_payload();
  stream_.expires_after(timeout_);
  http::write(stream_, req);
  http::response<http::string_body> res;
  http::read(stream_, buffer_, res);
  if (!res.keep_alive()) connected_ = false;
  return {static_cast<int>(res.result_int()), std::move(res.body())};
}

}  // namespace vigil::client
