#pragma once
// Runs the real vigild binary for integration tests, on a data directory of the test's own,
// on ephemeral ports (port 0) discovered through DIR/run/endpoints.json.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/child_process.hpp"

namespace vigil::test {

struct HttpResult {
  int status = 0;
  std::string head;  // the status line and header fields, as received
  std::string body;
  // The value of header NAME (case-insensitive), or "" if absent.
  std::string header(const std::string& name) const;
};

// A blocking HTTP/1.1 request on loopback (test side only). It carries the token of the last
// vigild started (token(), "Authorization: Bearer …") unless RAW_EXTRA_HEADERS has an
// Authorization field of its own; http_request_without_token sends none.
HttpResult http_request(const std::string& host_port, const std::string& method, const std::string& target,
                        const std::string& raw_extra_headers = {});
HttpResult http_request_without_token(const std::string& host_port, const std::string& method,
                                      const std::string& target, const std::string& raw_extra_headers = {});

// The admin token of the last vigild a test started (VIGIL_TOKEN, which the `vigil` processes a
// test runs inherit); empty before any.
std::string token();

class VigildProcess {
 public:
  // Starts vigild with --data DATA_DIR --listen 127.0.0.1:0 --http-port 0 plus EXTRA_ARGS.
  VigildProcess(const std::filesystem::path& data_dir, std::vector<std::string> extra_args = {});
  ~VigildProcess();

  // Waits (bounded) until endpoints.json appears; false if vigild exited or the deadline passed.
  // Then reads DATA/admin.token and exports it as VIGIL_TOKEN for the `vigil` processes the
  // test runs and for http_request.
  bool wait_ready(std::chrono::seconds limit = std::chrono::seconds(60));
  const std::string& token() const { return token_; }
  const std::string& wire() const { return wire_; }
  const std::string& http() const { return http_; }
  pid_t pid() const { return child_.pid(); }
  ChildProcess& child() { return child_; }
  std::string output() const;  // vigild's stderr+stdout so far

  int stop(int sig = 15);  // signal and wait (bounded); returns the wait status

 private:
  std::filesystem::path data_dir_, log_path_;
  ChildProcess child_;
  std::string wire_, http_, token_;
};

// Runs PROGRAM with ARGS to completion, its stdout+stderr going to LOG.
struct ExitResult {
  int status = -1;     // exit code, or 128 + signal
  std::string output;  // the last lines of LOG
};
ExitResult run_to_exit(const std::string& program, std::vector<std::string> args, const std::filesystem::path& log);

// Pids of live postgres processes whose working directory is under DIR.
std::vector<pid_t> postgres_processes_under(const std::filesystem::path& dir);

}  // namespace vigil::test
