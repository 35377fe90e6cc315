#pragma once
// Runs the real vigild binary for integration tests, on a data directory of the test's own,
// on ephemeral ports (port 0) discovered through DIR/run/endpoints.json.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/child_process.hpp"
#include "tests/support/http_client.hpp"

namespace vigil::test {

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
