#include "tests/support/temp_cluster.hpp"

#include <unistd.h>

#include <pqxx/pqxx>

namespace vigil::test {

TempCluster::TempCluster() : dir_("vigil-pg") {
  server::EmbeddedPostgresOptions opts;
  opts.data_dir = dir_.path();
  opts.fsync = false;
  pg_ = std::make_unique<server::EmbeddedPostgres>(opts);
  pg_->start();
}

TempCluster::~TempCluster() { pg_->stop(); }

std::string TempCluster::create_database(std::string_view hint) {
  std::string name;
  for (char c : hint) name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_');
  name = "t" + std::to_string(::getpid()) + "_" + std::to_string(++counter_) + "_" + name.substr(0, 40);
  pqxx::connection conn(conninfo());
  pqxx::nontransaction tx(conn);
  tx.exec0("CREATE DATABASE " + tx.quote_name(name));
  return pg_->conninfo(name);
}

TempCluster& shared_cluster() {
  static TempCluster cluster;
  return cluster;
}

}  // namespace vigil::test
