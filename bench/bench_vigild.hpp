#pragma once
// A vigild started by a benchmark (`vigil bench ingest`, `vigil bench query`): the binary beside
// `vigil`, on a data directory of the bench's own, ephemeral ports read from
// DATA/run/endpoints.json, its output in a log file; stopped (SIGTERM, then waited for) on
// destruction. Errors: exceptions (tool layer).
#include <filesystem>
#include <string>
#include <vector>

namespace vigil::bench {

// A bench's scratch directory, BASE/NAME-PID: created now, removed with everything in it
// when the bench ends (its vigild, declared after it, stops first).
class ScratchDir {
 public:
  ScratchDir(const std::filesystem::path& base, const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Starts ARGV[0] with ARGV[1..], stdout and stderr appended to LOG; returns its pid.
int spawn_logged(const std::vector<std::string>& argv, const std::filesystem::path& log);

class BenchVigild {
 public:
  // vigild --data DATA --listen 127.0.0.1:0 --http-port 0 EXTRA...; waits (up to 60 s) until it listens.
  BenchVigild(const std::filesystem::path& data, const std::vector<std::string>& extra,
              const std::filesystem::path& log);
  ~BenchVigild();
  BenchVigild(const BenchVigild&) = delete;
  BenchVigild& operator=(const BenchVigild&) = delete;

  int pid() const noexcept { return pid_; }
  const std::string& wire() const noexcept { return wire_; }    // HOST:PORT
  const std::string& http() const noexcept { return http_; }    // HOST:PORT
  const std::string& token() const noexcept { return token_; }  // its admin token (DATA/admin.token)
  // SIGKILL, waited for: a crash (its embedded PostgreSQL is left to the next start to recover).
  void kill_now();
  // libpq conninfo of its embedded PostgreSQL.
  std::string conninfo() const;

 private:
  std::filesystem::path data_;
  int pid_ = 0;
  std::string wire_, http_, token_;
};

// CPU seconds (user + system) and resident bytes of process PID, from /proc.
double cpu_seconds_of(int pid);
double rss_bytes_of(int pid);

}  // namespace vigil::bench
