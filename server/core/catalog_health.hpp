#pragma once
// Is the catalog reachable? A thread of its own asks PostgreSQL every second (its own connection,
// libpq's non-blocking calls, a deadline on every probe), so /healthz answers at once whatever the
// database does: a stopped or overloaded server, a partition. A probe that has not answered
// within its deadline counts as down, and its connection is dropped so the next one starts clean;
// so does a server that refuses writes (a standby), and the next probe connects again (with
// target_session_attrs=read-write, libpq then finds the primary after a catalog failover).
// Thread: status() from any thread. Errors: none (a failed probe is a status).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace vigil::server {

class CatalogHealth {
 public:
  struct Status {
    bool ok = false;
    int schema_version = 0;  // when ok
    std::string error;       // when not: one line
    std::chrono::steady_clock::time_point checked_at{};
  };

  // Probes CONNINFO once now (so the first /healthz has an answer), then every INTERVAL.
  explicit CatalogHealth(std::string conninfo, std::chrono::milliseconds interval = std::chrono::seconds(1),
                         std::chrono::milliseconds deadline = std::chrono::seconds(2));
  ~CatalogHealth();  // stops the thread (a probe in progress ends at its deadline at the latest)
  CatalogHealth(const CatalogHealth&) = delete;
  CatalogHealth& operator=(const CatalogHealth&) = delete;

  Status status() const;

 private:
  void probe();
  void run(std::stop_token stop);

  std::string conninfo_;
  std::chrono::milliseconds interval_, deadline_;
  void* conn_ = nullptr;  // PGconn*, used by the probing thread only
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  Status status_;  // guarded by mu_
  std::jthread thread_;
};

}  // namespace vigil::server
