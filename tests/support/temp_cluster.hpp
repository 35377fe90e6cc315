#pragma once
// A throwaway real PostgreSQL cluster for integration tests, made with the same
// EmbeddedPostgres code vigild uses (fsync off: tests never survive a power cut).
#include <memory>
#include <string>
#include <string_view>

#include "server/app/embedded_postgres.hpp"
#include "tests/support/temp_dir.hpp"

namespace vigil::test {

class TempCluster {
 public:
  TempCluster();
  ~TempCluster();
  std::string conninfo() const { return pg_->conninfo("postgres"); }
  // A new empty database with a unique name derived from HINT; returns its conninfo.
  std::string create_database(std::string_view hint);
  server::EmbeddedPostgres& postgres() { return *pg_; }

 private:
  TempDir dir_;
  std::unique_ptr<server::EmbeddedPostgres> pg_;
  int counter_ = 0;
};

// One cluster per test process, started on first use (initdb costs ~0.5 s).
TempCluster& shared_cluster();

}  // namespace vigil::test
