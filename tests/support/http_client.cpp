#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cctype>

#include "tests/support/vigild_process.hpp"

namespace asio = boost::asio;

namespace vigil::test {

// Raw HTTP/1.1 over a socket, so tests can also send requests a proper client never would.
HttpResult http_request_without_token(const std::string& host_port, const std::string& method,
                                      const std::string& target, const std::string& raw_extra_headers) {
  auto colon = host_port.rfind(':');
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address(host_port.substr(0, colon)),
                static_cast<unsigned short>(std::stoi(host_port.substr(colon + 1)))});
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: " + host_port + "\r\nConnection: close\r\n" +
                    raw_extra_headers + "\r\n";
  asio::write(sock, asio::buffer(req));
  std::string resp;
  boost::system::error_code ec;
  asio::read(sock, asio::dynamic_buffer(resp), ec);  // until the server closes
  HttpResult out;
  if (resp.rfind("HTTP/1.1 ", 0) == 0 && resp.size() >= 12) out.status = std::stoi(resp.substr(9, 3));
  auto body = resp.find("\r\n\r\n");
  if (body != std::string::npos) {
    out.head = resp.substr(0, body);
    out.body = resp.substr(body + 4);
  }
  return out;
}

HttpResult http_request(const std::string& host_port, const std::string& method, const std::string& target,
                        const std::string& raw_extra_headers) {
  std::string lower = raw_extra_headers;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string t = token();
  if (t.empty() || lower.find("authorization:") != std::string::npos) {
    return http_request_without_token(host_port, method, target, raw_extra_headers);
  }
  return http_request_without_token(host_port, method, target, "Authorization: Bearer " + t + "\r\n" + raw_extra_headers);
}

std::string HttpResult::header(const std::string& name) const {
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string h = lower(head), key = "\r\n" + lower(name) + ":";
  const auto at = h.find(key);
  if (at == std::string::npos) return {};
  auto begin = at + key.size();
  const auto end = head.find("\r\n", begin);
  while (begin < head.size() && head[begin] == ' ') ++begin;
  return head.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace vigil::test
