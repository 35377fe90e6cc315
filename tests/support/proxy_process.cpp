#include "tests/support/proxy_process.hpp"

#include <signal.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/prometheus_text.hpp"

namespace vigil::test {

ProxyProcess::ProxyProcess(const std::filesystem::path& dir, std::vector<std::string> args) {
  const auto file = dir / "proxy.address";
  std::filesystem::remove(file);
  SpawnOptions s;
  s.argv = {VIGIL_CLI_PATH, "proxy", "--listen", "127.0.0.1:0", "--address-file", file.string()};
  for (auto& a : args) s.argv.push_back(std::move(a));
  s.output_file = log_ = dir / "proxy.log";
  s.new_session = false;
  child_ = ChildProcess::spawn(s);
  // Bounded: the proxy writes the file once it listens, or exits.
  for (int i = 0; i < 500 && address_.empty() && child_.running(); ++i) {
    std::ifstream(file) >> address_;
    if (address_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(!address_.empty());
}

std::string ProxyProcess::log() const { return tail_of_file(log_, 40); }

int ProxyProcess::stop() { return child_.terminate(SIGTERM, std::chrono::seconds(10)); }

HttpResult get_as(const std::string& host_port, const std::string& target, const std::string& token) {
  return http_request_without_token(host_port, "GET", target,
                                    token.empty() ? std::string() : "Authorization: Bearer " + token + "\r\n");
}

double metric(const std::string& host_port, const std::string& name, const std::map<std::string, std::string>& labels) {
  const auto text = http_request_without_token(host_port, "GET", "/metrics");
  REQUIRE(text.status == 200);
  const auto parsed = parse_prometheus_text(text.body);
  INFO(text.body);
  REQUIRE(parsed.errors.empty());
  return parsed.sum(name, labels);
}

std::vector<std::string> playlist_uris(const std::string& m3u8) {
  std::vector<std::string> out;
  const auto map = m3u8.find("#EXT-X-MAP:URI=\"");
  if (map != std::string::npos) out.push_back(m3u8.substr(map + 16, m3u8.find('"', map + 16) - map - 16));
  std::size_t at = 0;
  while (at < m3u8.size()) {
    const auto end = std::min(m3u8.find('\n', at), m3u8.size());
    const auto line = m3u8.substr(at, end - at);
    if (!line.empty() && line[0] != '#') out.push_back(line);
    at = end + 1;
  }
  return out;
}

}  // namespace vigil::test
