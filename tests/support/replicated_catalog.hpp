#pragma once
// PostgreSQL's own high availability in miniature, for the catalog failover tests
// (docs/catalog.md, "PostgreSQL high availability"): a primary and a streaming-replication
// standby made from it with pg_basebackup -R, both real clusters listening on TCP 127.0.0.1,
// replicating synchronously (synchronous_standby_names on the primary), so a commit the primary
// acknowledged is on the standby too. Kill the primary, promote the standby: what Patroni does,
// without Patroni. When the tests run as root both clusters run as the same unprivileged user
// (EmbeddedPostgres's), which pg_basebackup and pg_ctl run as too.
// Errors: throws std::runtime_error (with the tool's output) when a step fails.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "server/app/embedded_postgres.hpp"
#include "tests/support/temp_dir.hpp"

namespace vigil::test {

class ReplicatedCatalog {
 public:
  // Starts the primary, makes the standby and waits until it replicates synchronously.
  ReplicatedCatalog();
  ~ReplicatedCatalog();
  ReplicatedCatalog(const ReplicatedCatalog&) = delete;
  ReplicatedCatalog& operator=(const ReplicatedCatalog&) = delete;

  int primary_port() const noexcept { return primary_port_; }
  int standby_port() const noexcept { return standby_port_; }
  // libpq conninfo over TCP of the catalog database on PORT (no target_session_attrs).
  std::string tcp(int port) const;
  // Over the unix socket, for the test's own queries: the first primary's and the standby's.
  std::string primary_local() const { return primary_->conninfo(); }
  std::string standby_local() const { return standby_->conninfo(); }

  // SIGKILL of every process of the primary (postmaster and backends), as a crashed host.
  void kill_primary();
  // pg_ctl promote -w on the standby: it takes writes when this returns.
  void promote_standby();

 private:
  void run_tool(std::vector<std::string> argv, const std::string& what);

  TempDir dir_;
  std::optional<RunAs> run_as_;
  int primary_port_ = 0, standby_port_ = 0;
  std::unique_ptr<server::EmbeddedPostgres> primary_, standby_;
};

// A TCP port on 127.0.0.1 that nothing listens on now.
int free_tcp_port();

}  // namespace vigil::test
