#include "bench/bench_http.hpp"

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <fstream>

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace vigil::bench {
namespace {
double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

BenchHttp::BenchHttp(const std::string& host_port, const std::filesystem::path& data) : socket_(io_) {
  const auto colon = host_port.rfind(':');
  host_ = host_port.substr(0, colon);
  port_ = host_port.substr(colon + 1);
  if (!data.empty()) {
    std::ifstream in(data / "admin.token");
    std::getline(in, token_);
    while (!token_.empty() && (token_.back() == '\r' || token_.back() == ' ')) token_.pop_back();
  }
  connect();
}

void BenchHttp::connect() {
  boost::system::error_code ignored;
  socket_.close(ignored);
  buffer_.clear();
  asio::ip::tcp::resolver r(io_);
  asio::connect(socket_, r.resolve(host_, port_));
}

HttpTiming BenchHttp::get(const std::string& target) {
  try {
    return exchange(target);
  } catch (const boost::system::system_error&) {
    connect();  // vigild closed the idle connection: once more on a new one
    return exchange(target);
  }
}

HttpTiming BenchHttp::send(const std::string& method, const std::string& target, const std::string& json_body) {
  try {
    return exchange(target, method, json_body);
  } catch (const boost::system::system_error&) {
    connect();
    return exchange(target, method, json_body);
  }
}

HttpTiming BenchHttp::exchange(const std::string& target, const std::string& method, const std::string& json_body) {
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  if (!json_body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = json_body;
  }
  req.prepare_payload();
  req.set(http::field::host, host_);
  req.set(http::field::user_agent, "vigil-bench");
  if (!token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
  HttpTiming t;
  const auto t0 = std::chrono::steady_clock::now();
  http::write(socket_, req);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  http::read_header(socket_, buffer_, parser);
  t.status = static_cast<int>(parser.get().result_int());
  char chunk[64 * 1024];
  bool first = true;
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    boost::system::error_code ec;
    http::read_some(socket_, buffer_, parser, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    const std::size_t got = sizeof chunk - parser.get().body().size;
    if (got > 0 && first) {
      t.ttfb_ms = ms_since(t0);
      first = false;
    }
    t.body.append(chunk, got);
  }
  t.total_ms = ms_since(t0);
  if (first) t.ttfb_ms = t.total_ms;
  if (!parser.keep_alive()) connect();
  return t;
}

}  // namespace vigil::bench
