#pragma once
// A `vigil proxy` process for the proxy tests: on a free loopback port (--listen 127.0.0.1:0),
// found through its --address-file, with ARGS after those (--upstream, --wire, ...); SIGTERM when
// destroyed. Errors: Catch2 assertions.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/child_process.hpp"
#include "tests/support/vigild_process.hpp"

namespace vigil::test {

class ProxyProcess {
 public:
  ProxyProcess(const std::filesystem::path& dir, std::vector<std::string> args);
  ~ProxyProcess() { stop(); }
  ProxyProcess(const ProxyProcess&) = delete;
  ProxyProcess& operator=(const ProxyProcess&) = delete;

  const std::string& address() const { return address_; }
  std::string log() const;  // the tail of its output
  int stop();               // SIGTERM and wait (bounded); the wait status

 private:
  ChildProcess child_;
  std::filesystem::path log_;
  std::string address_;
};

// GET TARGET from HOST_PORT with TOKEN as the bearer (none when empty).
HttpResult get_as(const std::string& host_port, const std::string& target, const std::string& token);
// The sum of metric NAME's samples matching LABELS in HOST_PORT's /metrics (which must parse).
double metric(const std::string& host_port, const std::string& name,
              const std::map<std::string, std::string>& labels = {});
// The URI lines of an HLS playlist (the init segment's included), relative to the playlist.
std::vector<std::string> playlist_uris(const std::string& m3u8);

}  // namespace vigil::test
