#pragma once
// The embedded default catalog: a private PostgreSQL cluster under DIR/pg that vigild
// initialises (initdb) on first start, runs as its child on a unix socket inside DIR only,
// and stops on exit. It is real PostgreSQL, not a mock.
//
// Layout:  DIR/pg/data        the cluster (owned by the cluster user)
//          DIR/pg/run         its unix socket directory (mode 0700)
//          DIR/pg/postgres.log
//          DIR/pg/initialized marker written once initdb and CREATE DATABASE succeeded
//
// PostgreSQL refuses to run as root: when vigild is root, the cluster runs as an
// unprivileged system user (created if missing) and DIR/pg is chowned to it.
//
// Supervised (supervise()): a thread of its own notices a postmaster that died (killed, crashed,
// out of memory) within half a second, says so at error level with the last lines of its log, and
// starts it again — backing off 1 s, 2 s, ... 30 s between failed attempts — so the catalog comes
// back by itself (docs/catalog.md, "When the catalog is down"). A postmaster that thread started
// is tied to it (PDEATHSIG): stop() ends the thread first, which stops such a postmaster with an
// immediate shutdown (PostgreSQL replays its WAL at the next start).
// Thread: start()/stop()/supervise() from the main thread (see child_process.hpp on PDEATHSIG);
// running()/postmaster_pid()/restarts() from any. Errors: start-up code, throws
// std::runtime_error with a one-line cause; the supervisor logs and retries.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "common/child_process.hpp"

namespace vigil::server {

struct EmbeddedPostgresOptions {
  std::filesystem::path data_dir;         // vigild's --data DIR
  std::string run_as_user = "vigil";      // used only when running as root
  std::filesystem::path pg_bin_dir;       // empty = newest /usr/lib/postgresql/*/bin
  int port = 5432;                        // names the socket file; TCP only if tcp_listen
  std::optional<std::string> tcp_listen;  // e.g. "127.0.0.1" to also listen on TCP
  bool fsync = true;                      // tests turn it off for speed
  std::string database = "vigil";
  std::chrono::seconds start_timeout{60};
};

class EmbeddedPostgres {
 public:
  explicit EmbeddedPostgres(EmbeddedPostgresOptions options);
  ~EmbeddedPostgres();  // stop()s
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  // initdb if needed, clear a stale or orphaned postmaster, start, wait until ready.
  void start();
  // Fast shutdown (SIGINT); SIGKILL if the postmaster has not exited within the stop grace.
  // Idempotent, noexcept.
  void stop() noexcept;
  // How long stop() waits for a fast shutdown (30 s unless set). A server that does not answer
  // (hung, or stopped) gets a short one: PostgreSQL recovers from SIGKILL at its next start.
  void set_stop_grace(std::chrono::milliseconds grace) noexcept { stop_grace_ = grace; }

  // After start(): restart the postmaster whenever it dies, until stop().
  void supervise();
  int restarts() const noexcept { return restarts_.load(); }

  bool running() noexcept {
    std::lock_guard lock(mu_);
    return postmaster_.running();
  }
  pid_t postmaster_pid() const noexcept {
    std::lock_guard lock(mu_);
    return postmaster_.pid();
  }
  // libpq connection string for DATABASE (default: options.database) over the unix socket.
  std::string conninfo(const std::string& database = {}) const;
  const std::filesystem::path& cluster_dir() const noexcept { return data_path_; }
  const std::filesystem::path& log_path() const noexcept { return log_path_; }
  const std::string& superuser() const noexcept { return superuser_; }

  // Newest installed PostgreSQL server binaries (throws if none is installed).
  static std::filesystem::path find_pg_bin_dir();

 private:
  void prepare_directories();
  void init_cluster();
  void clear_previous_postmaster();
  void spawn_postmaster();
  void wait_until_ready(const std::stop_token& stop = {});
  void run_supervisor(std::stop_token stop);
  void create_database_if_missing();

  EmbeddedPostgresOptions options_;
  std::filesystem::path pg_root_, data_path_, socket_dir_, log_path_, marker_path_;
  std::optional<RunAs> run_as_;
  std::string superuser_ = "vigil";
  mutable std::mutex mu_;  // postmaster_, between the supervisor and the other callers
  ChildProcess postmaster_;
  std::chrono::milliseconds stop_grace_{30'000};
  std::atomic<int> restarts_{0};
  std::jthread supervisor_;
};

}  // namespace vigil::server
