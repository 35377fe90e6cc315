#include "tests/support/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <cctype>

namespace asio = boost::asio;

namespace vigil::test {
namespace {
std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

HttpResult http_exchange(const std::string& host_port, const std::string& raw) {
  const auto colon = host_port.rfind(':');
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address(host_port.substr(0, colon)),
                static_cast<unsigned short>(std::stoi(host_port.substr(colon + 1)))});
  boost::system::error_code ec;
  // A server may answer and close before it has read everything (a body it refuses): what it
  // said is still read below.
  asio::write(sock, asio::buffer(raw), ec);
  std::string resp;
  asio::read(sock, asio::dynamic_buffer(resp), ec);  // until the server closes
  HttpResult out;
  if (resp.rfind("HTTP/1.1 ", 0) == 0 && resp.size() >= 12) out.status = std::stoi(resp.substr(9, 3));
  const auto split = resp.find("\r\n\r\n");
  out.head = resp.substr(0, split);
  if (split != std::string::npos) out.body = resp.substr(split + 4);
  if (out.header("Transfer-Encoding") == "chunked") {
    // The chunks joined; a body cut short (no last, empty chunk) is marked incomplete.
    std::string joined;
    std::size_t at = 0;
    out.chunks = 0;
    for (;;) {
      const auto eol = out.body.find("\r\n", at);
      if (eol == std::string::npos) break;
      const std::size_t n = std::stoul(out.body.substr(at, eol - at), nullptr, 16);
      if (n == 0) {
        out.chunked_complete = true;
        break;
      }
      if (eol + 2 + n > out.body.size()) break;
      joined += out.body.substr(eol + 2, n);
      ++out.chunks;
      at = eol + 2 + n + 2;
    }
    out.body = std::move(joined);
  }
  return out;
}

HttpResult http_request_without_token(const std::string& host_port, const std::string& method,
                                      const std::string& target, const std::string& raw_extra_headers,
                                      const std::string& body) {
  return http_exchange(host_port, method + " " + target + " HTTP/1.1\r\nHost: " + host_port +
                                      "\r\nConnection: close\r\n" + raw_extra_headers + "\r\n" + body);
}

HttpResult http_request(const std::string& host_port, const std::string& method, const std::string& target,
                        const std::string& raw_extra_headers, const std::string& body) {
  const std::string t = token();
  if (t.empty() || lower(raw_extra_headers).find("authorization:") != std::string::npos) {
    return http_request_without_token(host_port, method, target, raw_extra_headers, body);
  }
  return http_request_without_token(host_port, method, target,
                                    "Authorization: Bearer " + t + "\r\n" + raw_extra_headers, body);
}

HttpResult HttpApi::call(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& content_type) const {
  std::string headers;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    headers = "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return http_request(host, method, target, headers, body);
}

std::string HttpResult::header(const std::string& name) const {
  const std::string h = lower(head), key = "\r\n" + lower(name) + ":";
  const auto at = h.find(key);
  if (at == std::string::npos) return {};
  auto begin = at + key.size();
  const auto end = head.find("\r\n", begin);
  while (begin < head.size() && head[begin] == ' ') ++begin;
  return head.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

boost::json::value HttpResult::json() const { return boost::json::parse(body); }

}  // namespace vigil::test
