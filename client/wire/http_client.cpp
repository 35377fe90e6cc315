#include "client/wire/http_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include "common/tls_context.hpp"

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace vigil::client {

HttpClient::HttpClient(const std::string& address, std::string token, std::chrono::milliseconds timeout,
                       const std::string& ca_file)
    : token_(std::move(token)), timeout_(timeout), stream_(io_) {
  std::string host_port = address;
  if (host_port.starts_with("https://")) {
    host_port = host_port.substr(8);
    tls_context_ = make_client_tls_context(ca_file);
  } else if (host_port.starts_with("http://")) {
    host_port = host_port.substr(7);
  }
  while (host_port.ends_with("/")) host_port.pop_back();
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
  tls_.reset();
  try {
    asio::ip::tcp::resolver resolver(io_);
    stream_.expires_after(timeout_);
    stream_.connect(resolver.resolve(host_, port_));
  } catch (const boost::system::system_error& e) {
    throw VigildUnreachable("cannot connect to vigild's HTTP API at " + host_ + ":" + port_ + ": " +
                            e.code().message());
  }
  if (tls_context_) {
    tls_ = std::make_unique<asio::ssl::stream<boost::beast::tcp_stream&>>(stream_, *tls_context_);
    verify_server_name(tls_->native_handle(), host_);
    boost::system::error_code ec;
    tls_->handshake(asio::ssl::stream_base::client, ec);
    if (ec) {
      // Not worth a retry: the certificate is not trusted, or the port does not speak HTTPS.
      throw VigildUnreachable("TLS handshake with vigild's HTTP API at https://" + host_ + ":" + port_ +
                              " failed: " + ec.message() + " (is --tls-ca the CA of its --http-tls-cert?)");
    }
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
  if (tls_) return exchange_on(*tls_, method, target, json_body);
  return exchange_on(stream_, method, target, json_body);
}

template <class Stream>
HttpAnswer HttpClient::exchange_on(Stream& stream, http::verb method, const std::string& target,
                                   const std::string& json_body) {
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
  http::write(stream, req);
  http::response<http::string_body> res;
  http::read(stream, buffer_, res);
  if (!res.keep_alive()) connected_ = false;
  return {static_cast<int>(res.result_int()), std::move(res.body())};
}

}  // namespace vigil::client
